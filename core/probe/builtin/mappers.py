"""Built-in mappers (data mapping ``-dm FILE``, cell mapping ``-cm [FILE]``) and pairers (exact, fuzzy).

Mappers work on keys whose backward call indices are already renumbered on both sides, so
the backward rows of an op called several times pair with their own counterparts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from probe.errors import InputError
from probe.hookspecs import hookimpl
from probe.jsonio import read_yaml
from probe.match import ExactPairer, FuzzyPairer
from probe.model import FlatDump, KeyMap, MatchContext, Row


def read_name_mapping(path: str | Path, what: str) -> dict[str, str]:
    """A YAML file of ``{name: name}`` pairs; one-line errors for anything else."""
    doc = read_yaml(path)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise InputError(f"{what} must be a mapping of name: name pairs", path)
    mapping: dict[str, str] = {}
    for key, value in doc.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InputError(f"{what} entry {key!r} must map a name to a name", path)
        mapping[key] = value
    return mapping


def golden_key_lookup(golden: FlatDump) -> Callable[[str], str]:
    """Turn a golden row *name* into that row's matching key (call indices renumbered).

    Mapping files name golden rows as they appear in the dump; matching uses keys. The
    table is built on first use, after the pipeline has assigned the keys.
    """
    table: dict[str, str] = {}

    def lookup(name: str) -> str:
        if not table:
            table.update((row.name, row.key) for row in golden.rows)
        return table.get(name, name)

    return lookup


class DataMapper:
    """``-dm FILE``: full row names of the target mapped to golden row names.

    Listed target rows meet the golden row of the given name; other rows keep their own key.
    """

    name = "data_mapping"
    priority = 10

    def build(self, ctx: MatchContext) -> KeyMap | None:
        path = ctx.options.get("data_mapping")
        if not path:
            return None
        mapping = read_name_mapping(path, "data mapping")
        to_key = golden_key_lookup(ctx.golden)

        def target_key(row: Row) -> str | None:
            golden_name = mapping.get(row.name)
            return None if golden_name is None else to_key(golden_name)

        return KeyMap(target_key=target_key, left_join=True)


_DIRECTION = re.compile(r"\.(forward|backward|parameters_grad)(\.|$)")


def cell_key(name: str, mapping: dict[str, str]) -> str | None:
    """Rewrite ``{module_path}.{Class}`` of a row name with ``mapping`` (``Cell`` -> ``Module``)."""
    if not _DIRECTION.search(name):
        return None
    name = name.replace("Cell", "Module", 1)
    first_dot = name.find(".")
    match = _DIRECTION.search(name)
    if first_dot < 0 or match is None:
        return name
    fragment = name[first_dot + 1 : match.start()]
    if fragment in mapping:
        fragment = mapping[fragment]
    else:
        for key, value in mapping.items():
            if key in fragment:
                fragment = fragment.replace(key, value, 1)
    return name[: first_dot + 1] + fragment + name[match.start():]


class CellMapper:
    """``-cm [FILE]``: module path/class fragments (and ``Cell`` -> ``Module``)."""

    name = "cell_mapping"
    priority = 20

    def build(self, ctx: MatchContext) -> KeyMap | None:
        option = ctx.options.get("cell_mapping")
        if not option:
            return None
        mapping = read_name_mapping(option, "cell mapping") if isinstance(option, str) else {}

        def target_key(row: Row) -> str | None:
            key = cell_key(row.key, mapping)
            if key is None:
                return "N/A"
            return None if key == row.key else key

        return KeyMap(target_key=target_key)


@hookimpl(trylast=True)
def probe_register_pairers(register) -> None:
    register.add(ExactPairer.name, ExactPairer())
    register.add(FuzzyPairer.name, FuzzyPairer())


@hookimpl(trylast=True)
def probe_register_mappers(register) -> None:
    register.add(CellMapper.name, CellMapper())
    register.add(DataMapper.name, DataMapper())
