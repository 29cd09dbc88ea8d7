"""Built-in plugin: ``--auto-match`` (compare option and mapper) and ``probe match``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from probe.errors import InputError
from probe.hookspecs import hookimpl
from probe.interfaces import Command
from probe.model import KeyMap, MatchContext

AUTO_MATCH_HELP = ("pair rows whose names differ from the module tree, call order, shapes and statistics "
                   "(mapping files still win); unsure rows stay N/A")

MATCH_EPILOG = """examples:
  probe match -tp target/step0/rank0/dump.json -gp golden/step0/rank0/dump.json -o out
  probe match -tp ms/step0/rank0 -gp pt/step0/rank0 -o out        # rank directories
  probe compare -tp ... -gp ... -dm out/mapping_20260101120000.yaml  # reuse (after review)
  probe compare -tp ... -gp ... --auto-match                          # match and compare at once
"""


def add_auto_match_option(parser: argparse.ArgumentParser) -> None:
    """``--auto-match`` (dest ``auto_match``) on a command's parser."""
    parser.add_argument("--auto-match", dest="auto_match", action="store_true", default=None, help=AUTO_MATCH_HELP)


def dump_file(path: str, what: str) -> Path:
    """A dump.json given directly or as the rank directory that holds it."""
    candidate = Path(path)
    if candidate.is_dir():
        candidate = candidate / "dump.json"
    if not candidate.is_file():
        raise InputError(f"{what} dump not found (give a dump.json or a rank directory holding one)", path)
    return candidate


def add_match_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-tp", "--target_path", required=True, metavar="TARGET", help="target dump.json or its directory")
    parser.add_argument("-gp", "--golden_path", required=True, metavar="GOLDEN", help="golden dump.json or its directory")
    parser.add_argument("-o", "--output_path", default="./output", metavar="DIR", help="output directory (default ./output)")


def run_match_command(args: argparse.Namespace, host: Any) -> int:
    """``probe match``: pair the rows of two dumps and write the mapping files."""
    from rich.console import Console

    from probe.automatch.mapper import load_and_match
    from probe.automatch.report import write_match_files
    from probe.io import prepare_output_dir, timestamp

    target = dump_file(args.target_path, "target")
    golden = dump_file(args.golden_path, "golden")
    directory = prepare_output_dir(Path(args.output_path))
    console = Console(stderr=True)
    with console.status("matching rows"):
        result = load_and_match(target, golden, host)
    files = write_match_files(result, directory, timestamp())
    paired = sum(1 for r in result.rows if r.golden is not None)
    review = sum(1 for r in result.rows if r.golden is not None and r.needs_review)
    print(f"{paired} of {len(result.rows)} target rows paired ({review} to review); "
          f"{len(result.rows) - paired} without a partner")
    for path in files:
        print(f"wrote {path}")
    return 0


@hookimpl
def probe_add_compare_options(parser: argparse.ArgumentParser) -> None:
    add_auto_match_option(parser)


class AutoMatchMapper:
    """Pairs rows from the dumps' structure and data (see :mod:`probe.automatch.matcher`).

    The matcher is imported when ``--auto-match`` asks for it, not by every compare that
    registers this mapper (a plain compare never builds it).
    """

    name = "auto_match"
    priority = 90

    def build(self, ctx: MatchContext) -> KeyMap | None:
        if not ctx.options.get("auto_match"):
            return None
        from probe.automatch.mapper import auto_match_key_map

        return auto_match_key_map(ctx)


@hookimpl
def probe_register_mappers(register) -> None:
    register.add(AutoMatchMapper.name, AutoMatchMapper())


@hookimpl
def probe_register_commands(register) -> None:
    register.add("match", Command(
        name="match",
        help="pair the rows of two dumps whose names differ; write a -dm mapping for review",
        description=("Pair target and golden rows from the module tree, call order, op kinds, shapes, dtypes and "
                     "statistics. Writes mapping_{ts}.yaml (-dm format, confidence as comments) and "
                     "match_{ts}.json ([{target, golden, confidence, why}])."),
        add_arguments=add_match_arguments,
        run=run_match_command,
        epilog=MATCH_EPILOG,
    ))
