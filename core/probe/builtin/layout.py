"""Built-in layout discovery: dump files, rank/proc dirs, step dirs, multi-step roots."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from probe.errors import InputError
from probe.hookspecs import hookimpl
from probe.model import CompareRequest, PairPlan

log = logging.getLogger("probe")

RANK_DIR = re.compile(r"^rank(0|[1-9][0-9]*)?$")
PROC_DIR = re.compile(r"^proc[0-9]+$")
STEP_DIR = re.compile(r"^step([0-9]+)$")
DUMP_FILES = ("dump.json", "debug.json")


def _dump_file_in(directory: Path) -> Path | None:
    for name in DUMP_FILES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def _stem_for(path: Path, suffix: str = "") -> str:
    prefix = "debug_compare_result" if path.name.endswith("debug.json") else "compare_result"
    return f"{prefix}{suffix}"


def _rank_dirs(step_dir: Path) -> dict[str, Path]:
    """``{dir name: path}`` of rank dirs, else of the proc dirs, of one step dir."""
    children = [p for p in step_dir.iterdir() if p.is_dir()]
    ranks = {p.name: p for p in children if RANK_DIR.match(p.name)}
    if ranks:
        return ranks
    return {p.name: p for p in children if PROC_DIR.match(p.name)}


def _rank_sort_key(name: str) -> tuple[int, int]:
    digits = name.lstrip("rankproc")
    return (0, -1) if not digits else (1, int(digits))


def plan_step(target: Path, golden: Path, subdir: str = "") -> list[PairPlan]:
    """Jobs for one step dir pair: ranks paired by id, a lone proc dir paired with its peer."""
    t_ranks, g_ranks = _rank_dirs(target), _rank_dirs(golden)
    if not t_ranks:
        raise InputError("holds no rank*/proc* dump directories and no dump.json", target)
    if not g_ranks:
        raise InputError("holds no rank*/proc* dump directories and no dump.json", golden)
    label_prefix = f"{subdir}/" if subdir else ""
    t_is_proc = all(PROC_DIR.match(n) for n in t_ranks)
    g_is_proc = all(PROC_DIR.match(n) for n in g_ranks)
    pairs: list[tuple[str, Path, Path]] = []
    if t_is_proc or g_is_proc:
        # proc<pid> names differ between runs: pair them only when each side has exactly one.
        if len(t_ranks) != 1 or len(g_ranks) != 1:
            side = target if len(t_ranks) != 1 else golden
            raise InputError("holds several proc* directories; pass the dump.json files to compare", side)
        (t_name, t_dir), (_, g_dir) = next(iter(t_ranks.items())), next(iter(g_ranks.items()))
        pairs.append((t_name, t_dir, g_dir))
    else:
        common = sorted(set(t_ranks) & set(g_ranks), key=_rank_sort_key)
        only_t = sorted(set(t_ranks) - set(g_ranks), key=_rank_sort_key)
        only_g = sorted(set(g_ranks) - set(t_ranks), key=_rank_sort_key)
        if not common:
            raise InputError(
                f"rank folders do not pair: target has {', '.join(sorted(t_ranks, key=_rank_sort_key))}, "
                f"golden has {', '.join(sorted(g_ranks, key=_rank_sort_key))}",
                target,
            )
        if only_t:
            log.warning("ranks only in the target dump, not compared: %s", ", ".join(only_t))
        if only_g:
            log.warning("ranks only in the golden dump, not compared: %s", ", ".join(only_g))
        pairs.extend((name, t_ranks[name], g_ranks[name]) for name in common)
    jobs = []
    for name, t_dir, g_dir in pairs:
        t_file = _dump_file_in(t_dir)
        g_file = _dump_file_in(g_dir)
        if t_file is None:
            raise InputError("has no dump.json or debug.json", t_dir)
        if g_file is None:
            raise InputError("has no dump.json or debug.json", g_dir)
        digits = name[4:] if name.startswith("rank") else ""
        jobs.append(
            PairPlan(
                label=f"{label_prefix}{name}",
                target=t_file,
                golden=g_file,
                output_stem=_stem_for(t_file, f"_{name}"),
                output_subdir=subdir,
                rank=int(digits) if digits else None,
                step=int(subdir[4:]) if STEP_DIR.match(subdir) else None,
            )
        )
    return jobs


def parse_number_list(value: object, option: str) -> set[int] | None:
    """``--rank``/``--step`` values: ``"0,2"``, ``3`` or ``[1, 2]`` -> a set; ``None``/empty -> no filter."""
    if value is None or value == "":
        return None
    items = value if isinstance(value, (list, tuple, set)) else str(value).split(",")
    numbers: set[int] = set()
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        if not text.isdigit():
            raise InputError(f"--{option} takes comma-separated numbers, got {text!r}")
        numbers.add(int(text))
    return numbers or None


def select_jobs(jobs: list[PairPlan], request: CompareRequest) -> list[PairPlan]:
    """Keep the plans of the ranks / steps asked for with ``--rank`` / ``--step``."""
    ranks = parse_number_list(request.options.get("rank"), "rank")
    steps = parse_number_list(request.options.get("step"), "step")
    if ranks is None and steps is None:
        return jobs
    kept = []
    for job in jobs:
        if ranks is not None and job.rank not in ranks:
            continue
        if steps is not None and job.step is not None and job.step not in steps:
            continue
        kept.append(job)
    if not kept:
        raise InputError(_nothing_selected(jobs, ranks, steps), request.target)
    return kept


def _nothing_selected(jobs: list[PairPlan], ranks: set[int] | None, steps: set[int] | None) -> str:
    """The one-line error for a --rank/--step filter that keeps nothing: what was asked, what was found."""
    asked = " ".join(f"--{name} {','.join(map(str, sorted(values)))}"
                     for name, values in (("rank", ranks), ("step", steps)) if values is not None)
    found = sorted({(job.output_subdir.rsplit("/", 1)[-1] or "-") + "/" + job.label.rsplit("/", 1)[-1]
                    for job in jobs})
    shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
    hint = ""
    if ranks is not None and jobs and all(job.rank is None for job in jobs):
        hint = "; proc*/rank folders carry no rank id, leave out --rank"
    return f"no rank/step of this dump matches {asked}: found {shown}{hint}"


def plan_default(request: CompareRequest) -> list[PairPlan]:
    """Plan jobs for the layouts msProbe users know; one-line errors otherwise."""
    target, golden = request.target, request.golden
    for path in (target, golden):
        if not path.exists():
            raise InputError("does not exist", path)
    if target.is_file() != golden.is_file():
        raise InputError(f"target and golden must both be files or both be directories (golden: {golden})", target)
    if target.is_file():
        kinds = {p.name.endswith("debug.json") for p in (target, golden)}
        if len(kinds) != 1:
            raise InputError(f"target and golden must both be dump.json or both debug.json (golden: {golden})", target)
        return [PairPlan(target.name, target, golden, _stem_for(target))]
    # a directory that holds the dump file itself
    t_file, g_file = _dump_file_in(target), _dump_file_in(golden)
    if t_file and g_file:
        return [PairPlan(target.name, t_file, g_file, _stem_for(t_file))]
    # a multi-step root: step*/rank*/
    t_steps = {p.name: p for p in target.iterdir() if p.is_dir() and STEP_DIR.match(p.name)}
    if t_steps:
        g_steps = {p.name: p for p in golden.iterdir() if p.is_dir() and STEP_DIR.match(p.name)}
        common = sorted(set(t_steps) & set(g_steps), key=lambda n: int(n[4:]))
        if not common:
            raise InputError(f"step folders do not pair with the golden dump's ({golden})", target)
        missing = sorted(set(t_steps) ^ set(g_steps))
        if missing:
            log.warning("steps on one side only, not compared: %s", ", ".join(missing))
        jobs: list[PairPlan] = []
        for step in common:
            jobs.extend(plan_step(t_steps[step], g_steps[step], subdir=step))
        return jobs
    return plan_step(target, golden)


@hookimpl(trylast=True)
def probe_plan_compare(request: CompareRequest) -> list[PairPlan]:
    return select_jobs(plan_default(request), request)
