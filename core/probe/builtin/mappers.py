"""Built-in mapper (data mapping ``-dm FILE``) and pairers (exact, fuzzy).

MindSpore's cell mapping (``-cm``) lives in the MindSpore plugin.

Mappers work on keys whose backward call indices are already renumbered on both sides, so
the backward rows of an op called several times pair with their own counterparts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from probe.errors import InputError
from probe.hookspecs import hookimpl
from probe.jsonio import read_yaml
from probe.match import ExactPairer, FuzzyPairer, golden_key_lookup
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


@hookimpl(trylast=True)
def probe_register_pairers(register) -> None:
    register.add(ExactPairer.name, ExactPairer())
    register.add(FuzzyPairer.name, FuzzyPairer())


@hookimpl(trylast=True)
def probe_register_mappers(register) -> None:
    register.add(DataMapper.name, DataMapper())
