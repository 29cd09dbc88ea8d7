"""API tables: rename target API rows to their golden-framework counterparts (``-am``).

A table is a :class:`probe.model.NameNormalizer` switched on by the ``api_mapping`` option,
so another plugin can register a table for another framework pair through
``probe_register_normalizers`` without touching this package.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from probe.api import InputError
from probe.api import read_yaml

BUILTIN_TABLE = "ms_to_pt_api.yaml"


@dataclass
class ApiTable:
    """Renames ``{prefix}.{api}`` at the head of target keys for one framework pair."""

    name: str
    target_framework: str
    golden_framework: str
    prefixes: dict[str, str] = field(default_factory=dict)
    apis: dict[str, str] = field(default_factory=dict)
    option: str = "api_mapping"
    also_with: tuple[str, ...] = ("layer_mapping",)
    """msProbe applies the built-in table together with a layer mapping (``-lm``) too."""

    def applies(self, target_framework: str, golden_framework: str) -> bool:
        return target_framework == self.target_framework and golden_framework == self.golden_framework

    def translate(self, key: str) -> str:
        """The golden-side key of a target key (unchanged when the table does not know it)."""
        first, dot, rest = key.partition(".")
        if not dot:
            return key
        prefix = self.prefixes.get(first)
        if prefix is not None:
            return f"{prefix}.{rest}"
        api_name, dot2, tail = rest.partition(".")
        mapped = self.apis.get(f"{first}.{api_name}")
        if mapped is None or not dot2:
            return key
        return f"{mapped}.{tail}"

    def normalize(self, key: str, side: str) -> str:
        return self.translate(key) if side == "target" else key


def _str_map(value: Any, what: str, path: Path | str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{what} must be a mapping of name: name pairs", path)
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise InputError(f"{what} entry {key!r} must map a name to a name", path)
    return dict(value)


def load_table(path: Path | str, name: str) -> ApiTable:
    """Read an API table file (``framework``, ``prefixes``, ``apis`` keys)."""
    doc = read_yaml(path)
    if not isinstance(doc, dict):
        raise InputError("must be a mapping with framework, prefixes and apis", path)
    unknown = set(doc) - {"framework", "prefixes", "apis"}
    if unknown:
        raise InputError(f"has unknown key {sorted(unknown)[0]!r} (expected framework, prefixes, apis)", path)
    fw = doc.get("framework")
    if not isinstance(fw, dict) or not isinstance(fw.get("target"), str) or not isinstance(fw.get("golden"), str):
        raise InputError("framework must be {target: NAME, golden: NAME}", path)
    return ApiTable(
        name=name,
        target_framework=fw["target"],
        golden_framework=fw["golden"],
        prefixes=_str_map(doc.get("prefixes"), "prefixes", path),
        apis=_str_map(doc.get("apis"), "apis", path),
    )


class BuiltinTable:
    """The MindSpore -> PyTorch table shipped with this plugin, read from its YAML file the
    first time a name is translated: runs of other framework pairs never parse it."""

    name = "mindspore-to-pytorch-api"
    target_framework = "mindspore"
    golden_framework = "pytorch"
    option = ApiTable.option
    also_with = ApiTable.also_with
    applies = ApiTable.applies

    @functools.cached_property
    def table(self) -> ApiTable:
        with resources.as_file(resources.files("probe_mindspore") / "data" / BUILTIN_TABLE) as path:
            return load_table(path, self.name)

    @property
    def prefixes(self) -> dict[str, str]:
        return self.table.prefixes

    @property
    def apis(self) -> dict[str, str]:
        return self.table.apis

    def translate(self, key: str) -> str:
        return self.table.translate(key)

    def normalize(self, key: str, side: str) -> str:
        return self.table.normalize(key, side)


def builtin_table() -> BuiltinTable:
    """The MindSpore -> PyTorch table shipped with this plugin (read when first used)."""
    return BuiltinTable()
