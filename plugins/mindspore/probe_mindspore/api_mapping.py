"""``-am [FILE]``: API mapping between a MindSpore target and a PyTorch golden dump.

The built-in table (:mod:`probe_mindspore.api_table`) renames APIs; a user file overrides
the APIs it lists and may remap argument / output / parameter indices. Two file shapes are
accepted: a list of items (what msProbe reads) and a single item at top level (what its
documentation shows); ``ms_output``/``pt_output`` may also be spelled ``ms_outputs``/``pt_outputs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probe.api import InputError
from probe.api import read_yaml
from probe.api import FlatDump, KeyMap, MatchContext, Row

# section name of a row -> the YAML list suffix
SECTIONS = ("args", "output", "parameters", "parameters_grad")
_KEYS = {"ms_api", "pt_api"} | {f"{side}_{s}" for side in ("ms", "pt") for s in SECTIONS} | {"ms_outputs", "pt_outputs"}
# which index list applies to a row, by (direction, row state); backward inputs are the
# gradients of the forward outputs and backward outputs the gradients of the forward inputs
_SECTION_OF = {
    ("forward", "input"): "args",
    ("forward", "parameters"): "parameters",
    ("forward", "output"): "output",
    ("backward", "input"): "output",
    ("backward", "output"): "args",
    ("parameters_grad", "parameters_grad"): "parameters_grad",
}
UNPAIRED = " (index not in the API mapping)"


@dataclass
class ApiRule:
    """One item of the user file: the golden API and index maps per section."""

    ms_api: str
    pt_api: str
    maps: dict[str, dict[str, str]] = field(default_factory=dict)
    lists: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)


def _index_list(value: Any, key: str, path: Path) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{key} must be a list of indices", path)
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, float, str)):
            raise InputError(f"{key} holds {item!r}, not an index", path)
        if isinstance(item, int) and item < 0:
            raise InputError(f"{key} holds the negative index {item}", path)
        out.append(str(item))
    if len(set(out)) != len(out):
        raise InputError(f"{key} lists an index twice", path)
    return out


def _parse_item(item: Any, where: str, path: Path) -> ApiRule:
    if not isinstance(item, dict):
        raise InputError(f"{where} must be a mapping with ms_api and pt_api", path)
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        raise InputError(f"{where} has unknown key {unknown[0]!r} (known: ms_api, pt_api, ms_args, pt_args, "
                         "ms_output, pt_output, ms_parameters, pt_parameters, ms_parameters_grad, pt_parameters_grad)",
                         path)
    for side in ("ms", "pt"):
        if f"{side}_output" in item and f"{side}_outputs" in item:
            raise InputError(f"{where} has both {side}_output and {side}_outputs", path)
    apis = []
    for key in ("ms_api", "pt_api"):
        value = item.get(key)
        if not isinstance(value, str) or value.count(".") != 1 or not all(value.split(".")):
            raise InputError(f"{where}: {key} must be '<prefix>.<api>' (e.g. Functional.add), got {value!r}", path)
        apis.append(value)
    rule = ApiRule(apis[0], apis[1])
    for section in SECTIONS:
        ms_key, pt_key = f"ms_{section}", f"pt_{section}"
        ms_raw = item.get(ms_key, item.get(f"{ms_key}s") if section == "output" else None)
        pt_raw = item.get(pt_key, item.get(f"{pt_key}s") if section == "output" else None)
        ms_list = _index_list(ms_raw, f"{rule.ms_api}: {ms_key}", path)
        pt_list = _index_list(pt_raw, f"{rule.ms_api}: {pt_key}", path)
        if len(ms_list) != len(pt_list):
            raise InputError(
                f"{rule.ms_api}: {ms_key} and {pt_key} differ in length ({len(ms_list)} vs {len(pt_list)})", path
            )
        if ms_raw is not None or pt_raw is not None:
            rule.maps[section] = dict(zip(ms_list, pt_list))
            rule.lists[section] = (ms_list, pt_list)
    return rule


def read_api_mapping(path: str | Path) -> dict[str, ApiRule]:
    """Parse a user API-mapping file into ``{ms_api: rule}``; one-line errors otherwise."""
    path = Path(path)
    doc = read_yaml(path)
    if doc is None:
        return {}
    if isinstance(doc, dict):
        items, label = [doc], "the mapping"
    elif isinstance(doc, list):
        items, label = doc, "item"
    else:
        raise InputError("must be a list of {ms_api, pt_api, ...} items", path)
    rules: dict[str, ApiRule] = {}
    for index, item in enumerate(items):
        where = label if label == "the mapping" else f"item {index + 1}"
        rule = _parse_item(item, where, path)
        if rule.ms_api in rules:
            raise InputError(f"ms_api {rule.ms_api!r} is listed twice", path)
        rules[rule.ms_api] = rule
    return rules


def row_api(name: str) -> str:
    """``{prefix}.{api}``: the first two parts of a row or entry name."""
    return ".".join(name.split(".", 2)[:2])


def _direction(entry: str) -> str:
    parts = entry.rsplit(".", 2)
    for part in reversed(parts[-2:]):
        if part in ("forward", "backward", "parameters_grad"):
            return part
    return ""


def _suffix(row: Row) -> tuple[str, str] | None:
    """``(section prefix, index suffix)`` of a row: ``(".input.", "0")`` for ``E.input.0``."""
    tail = row.name[len(row.entry):] if row.name.startswith(row.entry) else ""
    if row.state == "parameters_grad":
        return (".", tail[1:]) if tail.startswith(".") else None
    prefix = f".{row.state}."
    return (prefix, tail[len(prefix):]) if tail.startswith(prefix) else None


def _forward_suffixes(dump: FlatDump, api: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for row in dump.rows:
        if _direction(row.entry) != "forward" or row_api(row.entry) != api:
            continue
        section = _SECTION_OF.get(("forward", row.state))
        split = _suffix(row)
        if section and split:
            found.setdefault(section, set()).add(split[1])
    return found


def check_indices(rules: dict[str, ApiRule], target: FlatDump, golden: FlatDump, path: Path) -> None:
    """Refuse an index that no forward row of the API has (a typo would silently unpair rows)."""
    for rule in rules.values():
        for dump, api, side in ((target, rule.ms_api, 0), (golden, rule.pt_api, 1)):
            found = _forward_suffixes(dump, api)
            if not found:
                continue  # API absent from this dump: the rule simply does not apply
            for section, lists in rule.lists.items():
                if section == "parameters_grad":
                    continue
                have = found.get(section, set())
                for index in lists[side]:
                    if index not in have:
                        key = f"{'ms' if side == 0 else 'pt'}_{section}"
                        listed = ", ".join(sorted(have)) or "none"
                        raise InputError(
                            f"{rule.ms_api}: {key} index {index} is out of range for {api} "
                            f"(its forward {section} rows are: {listed})", path
                        )


def rule_key(rule: ApiRule, row: Row) -> str:
    """The golden key of a target row of ``rule.ms_api`` (renumbered call index kept)."""
    tail = row.name[len(row.entry):] if row.name.startswith(row.entry) else ""
    key_entry = row.key[: len(row.key) - len(tail)] if tail and row.key.endswith(tail) else row.key
    parts = key_entry.split(".", 2)
    new_entry = rule.pt_api + (f".{parts[2]}" if len(parts) > 2 else "")
    section = _SECTION_OF.get((_direction(row.entry), row.state))
    split = _suffix(row)
    if section is None or split is None or section not in rule.maps:
        return new_entry + tail
    prefix, index = split
    mapped = rule.maps[section].get(index)
    if mapped is None:
        return new_entry + tail + UNPAIRED
    return f"{new_entry}{prefix}{mapped}"


class ApiMapper:
    """``-am FILE``: rows of the APIs a user file lists get that file's golden keys."""

    name = "api_mapping"
    priority = 15

    def build(self, ctx: MatchContext) -> KeyMap | None:
        option = ctx.options.get("api_mapping")
        if not option:
            return None
        t_fw, g_fw = ctx.target.info.framework, ctx.golden.info.framework
        tables = [
            n for n in ctx.normalizers
            if getattr(n, "option", None) == "api_mapping" and n.applies(t_fw, g_fw)
        ]
        if not tables:
            raise InputError(f"-am: no API table maps {t_fw} APIs to {g_fw} APIs", ctx.target.info.path)
        if option is True:
            return None
        path = Path(option)
        rules = read_api_mapping(path)
        check_indices(rules, ctx.target, ctx.golden, path)
        golden_apis = {row_api(row.entry) for row in ctx.golden.rows}
        rules = {api: rule for api, rule in rules.items() if rule.pt_api in golden_apis}

        def target_key(row: Row) -> str | None:
            rule = rules.get(row_api(row.entry))
            return None if rule is None else rule_key(rule, row)

        return KeyMap(target_key=target_key)
