"""The public plugin API: everything a plugin (built-in, bundled or third-party) may import.

A plugin module imports only from here (``from probe.api import hookimpl, PairPlan``, or
``import probe.api as probe``); internal modules may move between releases, this module's
names stay. It re-exports:

* the hook marker ``hookimpl`` (specs: :mod:`probe.hookspecs`);
* the Protocols a registered object satisfies (:mod:`probe.interfaces`);
* the plain data types that flow between stages (:mod:`probe.model`, :mod:`probe.result`);
* the errors to raise on bad input, and helpers plugins need (atomic writing, JSON/YAML
  reading, the default planner, report cell helpers, tensor metrics).

Helpers that need numpy (``compare_arrays``, ``METRIC_NAMES``...) are loaded on first use,
so that importing a plugin (and ``probe --help``) stays fast.
"""

from __future__ import annotations

from typing import Any

from probe.builtin.layout import parse_number_list, plan_default
from probe.builtin.layout import select_jobs as select_plans
from probe.builtin.mappers import read_name_mapping
from probe.errors import InputError, PluginError, ProbeError
from probe.hookspecs import hookimpl
from probe.interfaces import (
    OPTIONAL_MEMBERS,
    Analyzer,
    Command,
    DumpReader,
    Exporter,
    GraphRules,
    Mapper,
    MetricMode,
    NameNormalizer,
    Pairer,
    PartialSums,
    Registries,
    TensorLoader,
    TensorMetric,
)
from probe.io import atomic_write
from probe.jsonio import csv_rows, open_regular, open_regular_stat, read_json, read_yaml
from probe.judge import judge_records, precision_index, worst
from probe.match import golden_key_lookup
from probe.model import (
    ERROR,
    NA,
    PASS,
    VERDICT_RANK,
    WARNING,
    CompareRequest,
    DumpInfo,
    FlatDump,
    KeyMap,
    MatchContext,
    ModeContext,
    Pair,
    Pairing,
    PairPlan,
    Row,
    Summary,
)
from probe.modes import common as report_cells
from probe.result import UNMATCHED, CompareResult, CompareRun, RowResult

_LAZY = {
    "compare_arrays": ("probe.modes.tensor_metrics", "compare_arrays"),
    "METRIC_NAMES": ("probe.modes.tensor_metrics", "METRIC_NAMES"),
    "SHAPE_UNMATCHED": ("probe.modes.tensor_metrics", "SHAPE_UNMATCHED"),
    "UNSUPPORTED": ("probe.modes.tensor_metrics", "UNSUPPORTED"),
    "load_tensor": ("probe.modes.tensor", "load_tensor"),
    "parallel_map": ("probe.runtime", "parallel_map"),
}
"""Names loaded on first use (they import numpy or process pools)."""

__all__ = [
    "ERROR", "NA", "OPTIONAL_MEMBERS", "PASS", "UNMATCHED", "VERDICT_RANK", "WARNING",
    "Analyzer", "Command", "CompareRequest", "CompareResult", "CompareRun", "DumpInfo", "DumpReader",
    "Exporter", "FlatDump", "GraphRules", "InputError", "KeyMap", "Mapper", "MatchContext", "MetricMode", "ModeContext",
    "NameNormalizer", "Pair", "PairPlan", "Pairer", "Pairing", "PartialSums", "PluginError", "ProbeError", "Registries",
    "Row", "RowResult", "Summary", "TensorLoader", "TensorMetric",
    "atomic_write", "csv_rows", "golden_key_lookup", "open_regular", "open_regular_stat", "hookimpl", "judge_records",
    "parse_number_list", "plan_default",
    "precision_index", "read_json", "read_name_mapping", "read_yaml", "report_cells", "select_plans", "worst",
]
"""Names ``from probe.api import *`` gives; the numpy-backed names of :data:`_LAZY` are
imported by name (``from probe.api import compare_arrays``)."""


def __getattr__(name: str) -> Any:
    """Load the numpy-backed helpers of :data:`_LAZY` on first use."""
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'probe.api' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value
