"""``-cm [FILE]``: MindSpore Cell rows meet PyTorch Module rows (``Cell`` -> ``Module``, and
module path / class fragments renamed by a YAML file)."""

from __future__ import annotations

import re

from probe.api import KeyMap, MatchContext, Row, read_name_mapping

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
