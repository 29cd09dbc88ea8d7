"""What diagnosis keeps of one compared rank: one small :class:`NodeFacts` per dump entry.

The facts are made where the job ran (an analyzer digest), so only a few numbers per entry
travel between processes. Everything is read from the in-memory
:class:`probe.result.CompareResult`: the dump's Max/Min/Mean/Norm for every mode (tensor dumps
carry them too), plus the relative Euclidean distance when tensors were compared.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

from probe.formats.msprobe.dtypes import TORCH_PREFIX
from probe.jsonio import read_json
from probe.modes.common import canonical_dtype
from probe.result import CompareResult, RowResult

FLOAT_DTYPES = frozenset({"float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
                          "hifloat8", "float8"})
"""Canonical dtype names whose rows carry rounding noise."""

_STEP_DIR = re.compile(r"^step(\d+)$")
_INDEX_TAIL = re.compile(r"\.\d+$")
EUC_DIST = 1
"""Index of ``EucDist`` in tensor mode's metrics."""


@dataclass(slots=True)
class NodeFacts:
    """How one entry of one rank differs from the golden run (a few numbers, picklable)."""

    entry: str
    order: int
    kind: str
    """``api``, ``module`` or ``parameters_grad``."""
    op: str
    """The op type shared by calls of the same kind (``Functional.linear``, ``Module.Linear``)."""
    backward: bool = False
    in_dev: float = 0.0
    out_dev: float = 0.0
    param_dev: float = 0.0
    leaf_dev: float = 0.0
    """Largest deviation of a tensor input no earlier entry produced (a parameter, buffer or data)."""
    worst_in: str = ""
    worst_out: str = ""
    worst_param: str = ""
    worst_leaf: str = ""
    nan_in: bool = False
    nan_out: bool = False
    argument: str = ""
    """A non-tensor argument (or an input's type/shape) that differs, as a short text."""
    unmatched: int = 0
    matched: int = 0
    width: int = 1
    """Largest last dimension of a tensor input: the length of the reductions the call may do."""
    dtype: str = ""
    """Lowest float precision among the compared rows of either side (``bfloat16``...)."""
    exact: bool = True
    """Every compared statistic is bit-identical."""
    module: str = ""
    """The enclosing module call (from construct.json), if known."""


@dataclass
class RankFacts:
    """Facts of every entry of one rank of one step (the diagnosis digest of a job)."""

    rank: int
    step: int
    label: str
    nodes: list[NodeFacts] = field(default_factory=list)
    golden_only: int = 0
    mode: str = "statistics"


def _float(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _bad(value: float | None) -> bool:
    return value is not None and not math.isfinite(value)


def stats_deviation(t: tuple[Any, ...], g: tuple[Any, ...]) -> tuple[float, bool, bool]:
    """``(deviation, target non-finite, golden non-finite)`` of two Max/Min/Mean/Norm tuples.

    The deviation is scale-aware: the change of Norm relative to the golden Norm and the
    changes of Max, Min and Mean relative to the golden value range, so a tensor whose mean
    is near zero does not look broken.
    """
    tvals = [_float(v) for v in t]
    gvals = [_float(v) for v in g]
    t_bad = any(_bad(v) for v in tvals)
    g_bad = any(_bad(v) for v in gvals)
    if t_bad or g_bad:
        # a statistic non-finite on one side only is an infinite deviation; one non-finite on
        # both sides alike (a -inf mask) says nothing, the others are compared as usual
        for a, b in zip(tvals, gvals):
            if _bad(a) != _bad(b) or (_bad(a) and _bad(b) and str(a) != str(b)):
                return math.inf, t_bad, g_bad
        tvals = [None if _bad(v) else v for v in tvals]
        gvals = [None if _bad(v) else v for v in gvals]
    tmax, tmin, tmean, tnorm = tvals
    gmax, gmin, gmean, gnorm = gvals
    dev = 0.0
    scale = max((abs(v) for v in (tmax, tmin, gmax, gmin) if v is not None), default=0.0)
    if scale > 0:
        for a, b in ((tmax, gmax), (tmin, gmin), (tmean, gmean)):
            if a is not None and b is not None:
                dev = max(dev, abs(a - b) / scale)
    if tnorm is not None and gnorm is not None:
        scale = max(abs(gnorm), abs(tnorm))
        if scale > 0:
            dev = max(dev, abs(tnorm - gnorm) / scale)
    return dev, t_bad, g_bad


def _is_tensor(row: Any) -> bool:
    dtype = row.dtype
    return dtype.startswith(TORCH_PREFIX) or canonical_dtype(dtype) in FLOAT_DTYPES or dtype[:1].isupper() and dtype in (
        "Int32", "Int64", "Bool", "UInt8", "Int8", "Int16")


def _fingerprint(row: Any) -> tuple[float, float] | None:
    """Max and Min of a tensor: unchanged by views, transposes and casts, so an input that
    shows an earlier output's pair was (almost surely) produced by that call."""
    high, low = _float(row.stats[0]), _float(row.stats[1])
    if high is None or low is None or high == low:
        return None
    return high, low


def _last_dim(shape: str) -> int:
    """The last dimension of a display shape ``"[2, 6, 24]"`` (1 when there is none)."""
    tail = shape.rsplit(",", 1)[-1].strip(" []()")
    return int(tail) if tail.isdigit() else 1


def op_of(entry: str, kind: str) -> str:
    """The op type of an entry: ``Functional.linear.3.forward`` -> ``Functional.linear``;
    ``Module.layers.0.mlp.SwiGLU.forward.0`` -> ``Module.SwiGLU``."""
    parts = entry.split(".")
    if kind == "api":
        return ".".join(parts[:2])
    for marker in ("forward", "backward", "parameters_grad"):
        if marker in parts:
            i = parts.index(marker)
            return f"{parts[0]}.{parts[i - 1]}" if i >= 2 else parts[0]
    return parts[0]


def _kind(entry: str) -> str:
    if ".parameters_grad" in entry:
        return "parameters_grad"
    if entry.startswith(("Module.", "Cell.")):
        return "module"
    return "api"


def step_of(path: Path | None) -> int:
    """The step number of a dump file from its ``step<N>`` folder (0 when there is none)."""
    if path is None:
        return 0
    for part in reversed(Path(path).parts[:-1]):
        match = _STEP_DIR.match(part)
        if match:
            return int(match.group(1))
    return 0


def load_parents(dump_file: Path | None) -> dict[str, str]:
    """``{entry: enclosing module call}`` from ``construct.json`` beside the dump (empty if absent or bad)."""
    if dump_file is None:
        return {}
    path = Path(dump_file).parent / "construct.json"
    try:
        if not path.is_file() or path.stat().st_size > (256 << 20):
            return {}
        doc = read_json(path)
    except Exception:  # noqa: BLE001 - construct.json only improves labels; a bad one is ignored
        return {}
    if not isinstance(doc, dict):
        return {}
    return {k: v for k, v in doc.items() if isinstance(k, str) and isinstance(v, str)}


def _row_dev(record: RowResult, tensor_mode: bool) -> tuple[float, bool, bool]:
    t, g = record.pair.target, record.pair.golden
    dev, t_bad, g_bad = stats_deviation(t.stats, g.stats)
    if t.shape != g.shape:  # a structure difference: no precision deviation between different shapes
        return 0.0, t_bad, g_bad
    if tensor_mode and not t_bad and not g_bad:
        dist = _float(record.metrics[EUC_DIST]) if len(record.metrics) > EUC_DIST else None
        gnorm = _float(g.stats[3])
        if dist is not None and gnorm and math.isfinite(dist):
            dev = max(dev, dist / max(abs(gnorm), 1e-30))
    return dev, t_bad, g_bad


_PRECISION_ORDER = ("float8", "float8_e4m3fn", "float8_e5m2", "hifloat8", "bfloat16", "float16", "float32", "float64")


def lower_dtype(a: str, b: str) -> str:
    """The less precise of two canonical float dtypes ('' counts as unknown)."""
    if not a:
        return b
    if not b:
        return a
    ia = _PRECISION_ORDER.index(a) if a in _PRECISION_ORDER else len(_PRECISION_ORDER)
    ib = _PRECISION_ORDER.index(b) if b in _PRECISION_ORDER else len(_PRECISION_ORDER)
    return a if ia <= ib else b


def node_facts(entry: str, order: int, records: list[RowResult], tensor_mode: bool, produced: set,
               backward: bool) -> NodeFacts:
    """The facts of one entry; ``produced`` holds the fingerprints of earlier outputs (updated here)."""
    kind = _kind(entry)
    facts = NodeFacts(entry=entry, order=order, kind=kind, op=op_of(entry, kind),
                      backward=backward or kind == "parameters_grad" or ".backward" in entry)
    outputs = []
    for record in records:
        t, g = record.pair.target, record.pair.golden
        state = t.state
        if g is None:
            facts.unmatched += 1
            if state != "output" and not facts.argument:
                facts.argument = f"{t.name} has no golden counterpart"
            continue
        facts.matched += 1
        tensor = _is_tensor(t)
        if tensor:
            dt, dg = canonical_dtype(t.dtype), canonical_dtype(g.dtype)
            if dt in FLOAT_DTYPES or dg in FLOAT_DTYPES:
                facts.dtype = lower_dtype(facts.dtype, lower_dtype(dt if dt in FLOAT_DTYPES else "",
                                                                  dg if dg in FLOAT_DTYPES else ""))
        if not tensor or not _is_tensor(g):
            if _is_tensor(g) != tensor or [str(v) for v in t.stats] != [str(v) for v in g.stats]:
                facts.exact = False
                if state != "output" and not facts.argument:
                    facts.argument = f"{t.name} is {_short(t.stats[0])} instead of {_short(g.stats[0])}"
            continue
        if t.shape != g.shape and state != "output" and not facts.argument:
            facts.argument = f"{t.name} has shape {t.shape} instead of {g.shape}"
        if t.stats != g.stats:
            facts.exact = False
        dev, t_bad, g_bad = _row_dev(record, tensor_mode)
        nan = t_bad and not g_bad
        if state == "output":
            facts.nan_out = facts.nan_out or nan
            if dev > facts.out_dev or not facts.worst_out:
                facts.out_dev, facts.worst_out = dev, t.name
            outputs.append(t)
        elif state == "parameters":
            if dev > facts.param_dev or not facts.worst_param:
                facts.param_dev, facts.worst_param = dev, t.name
        elif state == "input":
            facts.width = max(facts.width, _last_dim(t.shape))
            facts.nan_in = facts.nan_in or nan
            if dev > facts.in_dev or not facts.worst_in:
                facts.in_dev, facts.worst_in = dev, t.name
            if kind == "api" and not backward:
                fp = _fingerprint(t)
                if fp is not None and fp not in produced and dev > facts.leaf_dev:
                    facts.leaf_dev, facts.worst_leaf = dev, t.name
    for t in outputs:
        fp = _fingerprint(t)
        if fp is not None:
            produced.add(fp)
    return facts


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def rank_facts(result: CompareResult) -> RankFacts:
    """Facts of every entry of one compared rank, in dump order."""
    rank = result.rank if result.rank is not None else 0
    path = result.target.path if result.target is not None else None
    out = RankFacts(rank=rank, step=step_of(path), label=result.label, golden_only=result.golden_only,
                    mode=result.mode.name)
    tensor_mode = result.mode.name == "tensor"
    parents = load_parents(path)
    produced: set = set()
    backward = False
    for order, (entry, group) in enumerate(groupby(result.records, key=lambda r: r.pair.target.entry)):
        if not backward and (".backward" in entry or ".parameters_grad" in entry):
            backward = True  # what runs after the first backward entry runs in the backward pass
        facts = node_facts(entry, order, list(group), tensor_mode, produced, backward)
        facts.module = parents.get(entry, "")
        out.nodes.append(facts)
    return out
