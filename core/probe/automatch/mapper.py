"""``--auto-match``: a mapper that pairs target rows with golden rows of other names.

It is the last mapper in priority order, so mapping files given on the command line
(``-dm``, ``-cm``, ...) decide the rows they name and automatic pairs fill in the rest.
A row automatic matching leaves unpaired gets a key no golden row has: it shows ``N/A``
instead of being paired by name with what may be the wrong call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probe.builtin.mappers import golden_key_lookup
from probe.dumps import load_pair
from probe.errors import InputError
from probe.stages import pick_reader
from probe.model import FlatDump, KeyMap, MatchContext, Row

if TYPE_CHECKING:
    from probe.automatch.matcher import MatchResult

log = logging.getLogger("probe")

NO_PARTNER = "\x00automatch:none"
"""The key of target rows automatic matching left unpaired (no golden row has it)."""


def api_renamer(normalizers: Iterable[Any], target: FlatDump, golden: FlatDump) -> Callable[[str], str] | None:
    """A function mapping a target API name to the golden framework's spelling.

    Uses the name normalizers registered for this framework pair (e.g. MindSpore's API
    table), whether or not their option was given: they only say which APIs are the same op.
    """
    if target.info.framework == golden.info.framework:
        return None
    tables = [n for n in normalizers if n.applies(target.info.framework, golden.info.framework)]
    if not tables:
        return None

    def rename(api: str) -> str:
        key = api + ".0.forward"
        for table in tables:
            key = table.normalize(key, "target")
        return key[: -len(".0.forward")] if key.endswith(".0.forward") else api

    return rename


def match_dumps(target: FlatDump, golden: FlatDump, normalizers: Iterable[Any] = ()) -> MatchResult:
    """Run automatic matching on two flattened dumps; returns a :class:`MatchResult`.

    ``normalizers``: the registered name normalizers (API tables tell which APIs of two
    frameworks are the same op).
    """
    from probe.automatch.matcher import auto_match  # not at start-up: only --auto-match matches

    trees = (module_tree(target), module_tree(golden))
    return auto_match(target.rows, golden.rows, api_renamer(normalizers, target, golden), trees)


def module_tree(dump: FlatDump) -> dict[str, str | None] | None:
    """construct.json beside the dump (``{call: parent module call}``), ``None`` when absent.

    A construct.json that cannot be used is named in a warning and left out: matching then
    goes without the module tree.
    """
    from probe.graph.build import read_construct

    path = dump.info.path.parent / "construct.json"
    if not path.is_file():
        return None
    try:
        return read_construct(path)[0]
    except InputError as exc:
        log.warning("automatic matching without the module tree: %s", exc)
        return None


def load_and_match(target_path: Path, golden_path: Path, registries: Any) -> MatchResult:
    """Read two dump files with the registered readers and match them."""
    target, golden = load_pair(target_path, golden_path, pick_reader(target_path, registries),
                               pick_reader(golden_path, registries))
    return match_dumps(target, golden, registries.normalizers.values())


def auto_match_key_map(ctx: MatchContext) -> KeyMap:
    """The key map of ``--auto-match``: target rows keyed by the golden rows they were
    matched with (:data:`NO_PARTNER` for rows left without one)."""
    result = match_dumps(ctx.target, ctx.golden, ctx.normalizers)
    mapping = result.row_map()
    to_key = golden_key_lookup(ctx.golden)

    def target_key(row: Row) -> str | None:
        golden_name = mapping.get(row.name)
        return NO_PARTNER if golden_name is None else to_key(golden_name)

    return KeyMap(target_key=target_key)
