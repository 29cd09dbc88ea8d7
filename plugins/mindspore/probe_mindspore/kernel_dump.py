"""MindSpore native (kernel-level) dumps: find the data directories, parse file names.

Layouts (``<root>`` is what ``-tp``/``-gp`` point at):

* KBK (O0/O1): ``<root>/rank_<R>/<Net>/<graph id>/<iteration>/*.npy|statistic.csv``;
* GE style:   ``<root>/<timestamp>/<device>/<Net>/<graph id>/<iteration>/...``;
* O2 / adump: ``<root>/rank_<R>/<timestamp>/step_<S>/...`` (documented, not found by msProbe);
* a root that is itself ``rank_<R>`` or below it.

The step is the leaf directory's name (``5`` or ``step_5``); the rank comes from the nearest
``rank_<R>`` / ``rank<R>`` ancestor, else from the device directory of the GE layout.
"""

from __future__ import annotations


import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from probe.api import InputError, csv_rows

log = logging.getLogger("probe")

MAX_DEPTH = 400
_RANK = re.compile(r"^rank_?(\d+)$")
_STEP = re.compile(r"^(?:step_?)?(\d+)$")
_INT = re.compile(r"^\d+$")
NPY_NAME = re.compile(
    r"^(?P<op_type>[^.]+)\.(?P<op_name>.+?)\.(?P<task>\d+)\.(?P<stream>\d+)\.(?P<ts>\d+)"
    r"\.(?P<io>input|output)\.(?P<slot>\d+)(?:\.(?P<fmt>[^.]+))?(?:\.(?P<dtype>[^.]+))?\.npy$"
)
STATISTIC_FILE = "statistic.csv"
MAPPING_FILE = "mapping.csv"


@dataclass
class KernelDir:
    """One data directory with the (rank, step) it belongs to."""

    path: Path
    rank: int
    step: int
    graph: str

    @property
    def kind(self) -> str:
        """``npy`` when the directory holds .npy files, else ``statistic`` (or ``empty``)."""
        if any(self.path.glob("*.npy")):
            return "npy"
        if (self.path / STATISTIC_FILE).is_file():
            return "statistic"
        return "empty"


@dataclass
class KernelLayout:
    """Data directories of one dump root grouped by ``(rank, step)``."""

    root: Path
    groups: dict[tuple[int, int], list[KernelDir]] = field(default_factory=dict)
    ignored: list[Path] = field(default_factory=list)

    def describe(self) -> str:
        """``rank 0 step 0: rank_0/Net/0/0; ...`` for messages."""
        parts = []
        for (rank, step), dirs in sorted(self.groups.items()):
            names = ", ".join(str(d.path.relative_to(self.root)) for d in dirs)
            parts.append(f"rank {rank} step {step}: {names}")
        return "; ".join(parts) or "no kernel data directories"


def _data_dirs(root: Path) -> list[Path]:
    """Directories under ``root`` (itself included) that hold .npy files or statistic.csv."""
    found = []
    stack = [(root, 0)]
    while stack:
        directory, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InputError(f"is nested deeper than {MAX_DEPTH} levels", directory)
        try:
            children = sorted(directory.iterdir())
        except OSError as exc:
            raise InputError(f"cannot be listed ({exc.strerror})", directory) from None
        has_data = False
        for child in children:
            if child.is_dir():
                if not child.name.startswith("."):
                    stack.append((child, depth + 1))
            elif child.suffix == ".npy" or child.name == STATISTIC_FILE:
                has_data = True
        if has_data:
            found.append(directory)
    return sorted(found)


def locate(directory: Path, root: Path) -> tuple[int, int, str] | None:
    """``(rank, step, graph)`` of a data directory, or ``None`` when the path says nothing."""
    step_match = _STEP.match(directory.name)
    if step_match is None:
        return None
    step = int(step_match.group(1))
    rel = directory.relative_to(root).parts
    chain = [root.name, *rel]
    rank = None
    for part in reversed(chain[:-1]):
        match = _RANK.match(part)
        if match:
            rank = int(match.group(1))
            break
    if rank is None:
        # GE style: <timestamp>/<device>/<Net>/<graph>/<iteration>
        if len(chain) >= 4 and _INT.match(chain[-4]):
            rank = int(chain[-4])
        else:
            rank = 0
    # <Net>/<graph id>/<iteration>: ops of different graphs never pair with each other
    graph = chain[-2] if _INT.match(directory.name) and len(chain) >= 2 and _INT.match(chain[-2]) else ""
    return rank, step, graph


def discover(root: Path) -> KernelLayout:
    """Find every kernel data directory under ``root``."""
    if not root.is_dir():
        raise InputError("is not a directory (kernel dumps are compared by directory)", root)
    layout = KernelLayout(root)
    for directory in _data_dirs(root):
        where = locate(directory, root)
        if where is None:
            layout.ignored.append(directory)
            continue
        rank, step, graph = where
        layout.groups.setdefault((rank, step), []).append(KernelDir(directory, rank, step, graph))
    return layout


def looks_like_kernel_dump(path: Path, max_depth: int = 7) -> bool:
    """Cheap check: no dump.json in the top levels, and a kernel .npy or statistic.csv below."""
    if not path.is_dir():
        return False
    level = [path]
    for depth in range(max_depth + 1):
        nxt = []
        for directory in level:
            try:
                children = list(directory.iterdir())
            except OSError:
                continue
            for child in children:
                if child.name in ("dump.json", "debug.json") and depth <= 3:
                    return False
                if child.name == STATISTIC_FILE or (child.suffix == ".npy" and NPY_NAME.match(child.name)):
                    return True
            nxt.extend(c for c in children if c.is_dir() and not c.name.startswith("."))
        level = nxt
    return False


@dataclass(frozen=True)
class KernelTensor:
    """One kernel dump item (an .npy file or a statistic.csv row)."""

    display: str
    """NPU/Bench Name: the file path (npy) or ``OpName.TaskId.IO.Slot`` (statistic)."""
    key: str
    """Pairing key: ``graph/OpName.IO.Slot`` (task and stream ids left out)."""
    order: str
    """Sort key of the report, msProbe's ``OpName.TaskId.IO.Slot``."""
    timestamp: int
    path: Path | None = None
    dtype: str = ""
    shape: str = ""
    stats: tuple = ()
    source: str = ""


def read_mapping_csv(directory: Path) -> dict[str, str]:
    """``mapping.csv`` of a directory: stored (hashed) file name -> original file name."""
    path = directory / MAPPING_FILE
    if not path.is_file():
        return {}
    mapping = {}
    for index, row in enumerate(csv_rows(path)):
        if index == 0 or len(row) < 2:
            continue
        mapping[Path(row[0].strip()).name] = Path(row[1].strip()).name
    return mapping


def npy_items(directory: KernelDir) -> list[KernelTensor]:
    """Every parsable .npy file of a directory (hashed names resolved through mapping.csv)."""
    names = read_mapping_csv(directory.path)
    items = []
    skipped = 0
    for path in sorted(directory.path.glob("*.npy")):
        match = NPY_NAME.match(names.get(path.name, path.name))
        if match is None:
            skipped += 1
            continue
        op, task, io, slot = match["op_name"], match["task"], match["io"], match["slot"]
        items.append(KernelTensor(
            display=str(path.resolve()),
            key=f"{directory.graph}/{op}.{io}.{slot}",
            order=f"{op}.{task}.{io}.{slot}",
            timestamp=int(match["ts"]),
            path=path,
        ))
    if skipped:
        log.warning("%s: %d .npy file(s) with names that are not kernel dump names were skipped", directory.path, skipped)
    return items


_STAT_HEADERS = {
    "op_name": "Op Name", "task": "Task ID", "ts": "Timestamp", "io": "IO", "slot": "Slot",
    "dtype": "Data Type", "shape": "Shape", "max": "Max Value", "min": "Min Value",
    "mean": "Avg Value", "norm": "L2Norm Value",
}
_STAT_POSITIONS = {"op_name": 1, "task": 2, "ts": 4, "io": 5, "slot": 6}


def _stat_value(text: str) -> float:
    text = text.strip()
    if text in ("null", "False", ""):
        return 0.0
    if text == "True":
        return 1.0
    try:
        return float(text)
    except ValueError:
        return float("nan")


def statistic_items(directory: KernelDir) -> list[KernelTensor]:
    """Rows of a directory's statistic.csv (columns found by header name)."""
    path = directory.path / STATISTIC_FILE
    rows = list(csv_rows(path))
    if not rows:
        raise InputError("is empty", path)
    header = [h.strip() for h in rows[0]]
    where = {}
    for field_name, title in _STAT_HEADERS.items():
        if title in header:
            where[field_name] = header.index(title)
        elif field_name in _STAT_POSITIONS:
            where[field_name] = _STAT_POSITIONS[field_name]
    missing = [t for f, t in _STAT_HEADERS.items() if f not in where]
    if missing:
        log.warning("%s: no %s column; those statistics are shown as nan", path, ", ".join(missing))
    items = []
    for line, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) <= max(where.values()):
            raise InputError(f"line {line} has {len(row)} fields, fewer than the header needs", path)
        op, task, io, slot = (row[where[k]].strip() for k in ("op_name", "task", "io", "slot"))
        try:
            ts = int(row[where["ts"]])
        except ValueError:
            raise InputError(f"line {line}: Timestamp {row[where['ts']]!r} is not an integer", path) from None
        stats = tuple(
            _stat_value(row[where[k]]) if k in where else float("nan") for k in ("max", "min", "mean", "norm")
        )
        display = f"{op}.{task}.{io}.{slot}"
        items.append(KernelTensor(
            display=display,
            key=f"{directory.graph}/{op}.{io}.{slot}",
            order=display,
            timestamp=ts,
            dtype=row[where["dtype"]].strip() if "dtype" in where else "",
            shape=row[where["shape"]].strip() if "shape" in where else "",
            stats=stats,
            source=str(path.resolve()),
        ))
    return items


def pair_items(target: list[KernelTensor], golden: list[KernelTensor]) -> list[tuple[KernelTensor | None, KernelTensor | None]]:
    """Outer join on (key, local index by timestamp), sorted as msProbe sorts its report."""

    def index(items: list[KernelTensor]) -> dict[tuple[str, int], KernelTensor]:
        by_key: dict[str, list[KernelTensor]] = {}
        for item in items:
            by_key.setdefault(item.key, []).append(item)
        out = {}
        for key, group in by_key.items():
            for local, item in enumerate(sorted(group, key=lambda i: i.timestamp)):
                out[(key, local)] = item
        return out

    t_index, g_index = index(target), index(golden)
    keys = set(t_index) | set(g_index)

    def sort_key(k: tuple[str, int]) -> tuple[str, int, str]:
        item = t_index.get(k) or g_index[k]
        return (item.order, k[1], k[0])

    return [(t_index.get(k), g_index.get(k)) for k in sorted(keys, key=sort_key)]
