"""What diagnosis keeps of one compared rank: one small :class:`NodeFacts` per dump entry.

The facts are made where the job ran (an analyzer digest), so only a few numbers per entry
travel between processes. Everything is read from the in-memory
:class:`probe.result.CompareResult`: the dump's Max/Min/Mean/Norm for every mode (tensor dumps
carry them too), plus the relative Euclidean distance when tensors were compared.
"""

from __future__ import annotations

import json.decoder
import math
import re
import stat
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from operator import attrgetter
from pathlib import Path
from typing import Any

from probe.diagnosis.factcolumns import LEAF_BIT, FactColumns
from probe.diagnosis.fingerprints import Fingerprints
from probe.diagnosis.parents import ParentMap
from probe.formats.msprobe.dtypes import TORCH_PREFIX
from probe.jsonio import MemberMisplaced, object_parts, read_json
from probe.modes.common import canonical_dtype
from probe.numbers import as_number
from probe.result import CompareResult, RowResult

FLOAT_DTYPES = frozenset({"float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
                          "hifloat8", "float8"})
"""Canonical dtype names whose rows carry rounding noise."""

_INF, _NINF = math.inf, -math.inf
_ENTRY = attrgetter("pair.target.entry")
_STEP_DIR = re.compile(r"^step(\d+)$")
REDUCTION = 4
"""A backward output with this many times fewer elements than its incoming gradient is a reduction."""
TINY = 1e-3
"""A backward reduction whose golden Norm is below this fraction of the incoming gradient's is
about zero by construction (its relative error is meaningless)."""
EUC_DIST = 1
"""Index of ``EucDist`` in tensor mode's metrics."""


_TAILS: dict[str, str] = {}


def _tail(entry: str, name: str) -> str | None:
    """What follows ``entry`` in a row name ``entry.input.0`` (one shared string per tail), or
    ``None`` when ``name`` is not a name inside ``entry``."""
    size = len(entry)
    if not name.startswith(entry) or name[size:size + 1] != ".":
        return None
    return _shared(_TAILS, name[size:])


def _shared(table: dict[str, str], text: str) -> str:
    """One string object for every equal ``text`` (``table`` holds at most 65536 of them)."""
    shared = table.get(text)
    if shared is None:
        if len(table) >= 65536:
            return text
        shared = table[text] = text
    return shared


def _row_name(slot: str, bit: int, doc: str) -> property:
    """A row name kept as its tail after the entry's name when it has one (a shared string)."""

    def get(self: NodeFacts) -> str:
        value = getattr(self, slot)
        return self.entry + value if self.tails & bit else value

    def put(self: NodeFacts, name: str) -> None:
        tail = _tail(self.entry, name) if name else None
        if tail is None:
            setattr(self, slot, name)
            self.tails &= ~bit
        else:
            setattr(self, slot, tail)
            self.tails |= bit

    return property(get, put, doc=doc)


_NAMES = ("worst_in", "worst_out", "worst_param", "worst_leaf", "worst_reduced")
_LEAF_BIT = LEAF_BIT
"""The bit of ``w_leaf`` in :attr:`NodeFacts.tails`."""


@dataclass(slots=True, init=False)
class NodeFacts:
    """How one entry of one rank differs from the golden run (a few numbers, picklable).

    The names of its worst rows are kept as their tails after ``entry`` (``.input.0``), one
    string shared by every entry, so that a digest of millions of entries stays small."""

    entry: str
    order: int
    kind: str
    """``api``, ``module`` or ``parameters_grad``."""
    op: str
    """The op type shared by calls of the same kind (``Functional.linear``, ``Module.Linear``)."""
    backward: bool
    in_dev: float
    out_dev: float
    param_dev: float
    leaf_dev: float
    """Largest deviation of a tensor input no earlier entry produced (a parameter, buffer or data)."""
    nan_in: bool
    nan_out: bool
    argument: str
    """A non-tensor argument (or an input's type/shape) that differs, as a short text."""
    unmatched: int
    matched: int
    reduced_dev: float
    """Backward calls: the worst deviation of outputs far smaller than the incoming gradient
    (weight and bias gradients: sums with heavy cancellation), kept out of ``out_dev``."""
    width: int
    """Largest last dimension of a tensor input: the length of the reductions the call may do."""
    dtype: str
    """Lowest float precision among the compared rows of either side (``bfloat16``...)."""
    exact: bool
    """Every compared statistic is bit-identical."""
    module: str
    """The enclosing module call (from construct.json), if known."""
    w_in: str
    w_out: str
    w_param: str
    w_leaf: str
    w_reduced: str
    tails: int
    """Bit ``i``: ``w_*`` number ``i`` holds a tail after ``entry`` (see :data:`_NAMES`)."""

    worst_in = _row_name("w_in", 1, "The input row that differs most.")
    worst_out = _row_name("w_out", 2, "The output row that differs most.")
    worst_param = _row_name("w_param", 4, "The parameter row that differs most.")
    worst_leaf = _row_name("w_leaf", _LEAF_BIT, "The input row no earlier entry produced that differs most.")
    worst_reduced = _row_name("w_reduced", 16, "The reduction output row that differs most.")

    def __init__(self, entry: str, order: int, kind: str, op: str, backward: bool = False, in_dev: float = 0.0,
                 out_dev: float = 0.0, param_dev: float = 0.0, leaf_dev: float = 0.0, worst_in: str = "",
                 worst_out: str = "", worst_param: str = "", worst_leaf: str = "", nan_in: bool = False,
                 nan_out: bool = False, argument: str = "", unmatched: int = 0, matched: int = 0,
                 reduced_dev: float = 0.0, worst_reduced: str = "", width: int = 1, dtype: str = "",
                 exact: bool = True, module: str = "") -> None:
        self.entry, self.order, self.kind, self.op, self.backward = entry, order, kind, op, backward
        self.in_dev, self.out_dev, self.param_dev, self.leaf_dev = in_dev, out_dev, param_dev, leaf_dev
        self.nan_in, self.nan_out, self.argument, self.unmatched, self.matched = (
            nan_in, nan_out, argument, unmatched, matched)
        self.reduced_dev, self.width, self.dtype, self.exact, self.module = reduced_dev, width, dtype, exact, module
        names = []
        tails, bit, size, table = 0, 1, len(entry), _TAILS
        for name in (worst_in, worst_out, worst_param, worst_leaf, worst_reduced):  # _tail() inline: every entry
            if name and name[size:size + 1] == "." and name.startswith(entry):
                tail = name[size:]
                name = table.get(tail) or _shared(table, tail)
                tails |= bit
            names.append(name)
            bit <<= 1
        self.w_in, self.w_out, self.w_param, self.w_leaf, self.w_reduced = names
        self.tails = tails


@dataclass
class RankFacts:
    """Facts of every entry of one rank of one step (the diagnosis digest of a job)."""

    rank: int
    step: int
    label: str
    nodes: Sequence[NodeFacts] = field(default_factory=list)
    """In dump order (a :class:`~probe.diagnosis.factcolumns.FactColumns` when a builder made them)."""
    golden_only: int = 0
    mode: str = "statistics"


def _bad(value: float | None) -> bool:
    return value is not None and not math.isfinite(value)


def stats_deviation(t: tuple[Any, ...], g: tuple[Any, ...]) -> tuple[float, bool, bool]:
    """``(deviation, target non-finite, golden non-finite)`` of two Max/Min/Mean/Norm tuples.

    The deviation is scale-aware: the change of Norm relative to the golden Norm and the
    changes of Max, Min and Mean relative to the golden value range, so a tensor whose mean
    is near zero does not look broken.
    """
    tmax, tmin, tmean, tnorm = t
    gmax, gmin, gmean, gnorm = g
    try:
        total = tmax + tmin + tmean + tnorm + gmax + gmin + gmean + gnorm
        usual = total - total == 0.0  # eight finite numbers (inf - inf and NaN - NaN are NaN)
    except TypeError:  # None, text
        usual = False
    if usual:
        dev = 0.0
        scale = max(abs(tmax), abs(tmin), abs(gmax), abs(gmin))
        if scale:
            dev = max(abs(tmax - gmax), abs(tmin - gmin), abs(tmean - gmean)) / scale
        scale = max(abs(tnorm), abs(gnorm))
        if scale:
            norm = abs(tnorm - gnorm) / scale
            if norm > dev:
                dev = norm
        return dev, False, False
    tvals = [as_number(v) for v in t]
    gvals = [as_number(v) for v in g]
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


_MS_TENSOR_DTYPES = frozenset({"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Bool"})
_DTYPES: dict[str, tuple[bool, str]] = {}


def dtype_info(dtype: str) -> tuple[bool, str]:
    """``(is a tensor, canonical float dtype or "")`` of a row's dtype text (cached)."""
    info = _DTYPES.get(dtype)
    if info is None:
        canonical = canonical_dtype(dtype)
        floating = canonical if canonical in FLOAT_DTYPES else ""
        info = (dtype.startswith(TORCH_PREFIX) or bool(floating) or dtype in _MS_TENSOR_DTYPES, floating)
        if len(_DTYPES) < 4096:
            _DTYPES[dtype] = info
    return info


def _is_tensor(row: Any) -> bool:
    return dtype_info(row.dtype)[0]


_PAIR = struct.Struct("<2d")
_TRIPLE = struct.Struct("<3d")


def _fingerprint(row: Any) -> bytes | tuple[float | None, ...] | None:
    """Max and Min of a tensor: unchanged by views, transposes and casts, so an input that
    shows an earlier output's pair was (almost surely) produced by that call.

    Packed as the bytes of the floats (``-0.0`` as ``0.0``), which compare as the numbers do
    and cost half a tuple of floats; a NaN (equal to nothing) keeps the tuple."""
    stats = row.stats
    high, low = stats[0], stats[1]
    if type(high) is not float:  # floats (almost every row) need no conversion
        high = as_number(high)
    if type(low) is not float:
        low = as_number(low)
    if high is None or low is None:
        return None
    if high != high or low != low:
        return high, low
    if high == low:  # a constant tensor (or one element): its Norm tells the size apart
        norm = as_number(stats[3])
        if norm is None:
            return _PAIR.pack(high or 0.0, low or 0.0) + b"-"
        if norm != norm:
            return high, low, norm
        return _TRIPLE.pack(high or 0.0, low or 0.0, norm or 0.0)
    return _PAIR.pack(high or 0.0, low or 0.0)  # ``or``: -0.0 packs as 0.0


_NAN = json.decoder.NaN
"""The float every parsed ``NaN`` token is (one object): fingerprints holding it are equal."""


def _portable(fingerprint: tuple[float | None, ...]) -> tuple[float | None, ...]:
    """A fingerprint holding a NaN as it travels between processes, where the shared NaN is ``None``
    (pickling makes every float a new object); :func:`_local` makes it again."""
    return tuple(None if value is _NAN else value for value in fingerprint)


def _local(fingerprint: tuple[float | None, ...]) -> tuple[float | None, ...]:
    return tuple(_NAN if value is None else value for value in fingerprint)


_LAST_DIMS: dict[str, int] = {}
_NUMELS: dict[str, int] = {}


def _numel(shape: str) -> int:
    """Number of elements of a display shape ``"[2, 6, 24]"`` (1 for a scalar; cached)."""
    numel = _NUMELS.get(shape)
    if numel is None:
        numel = 1
        for part in shape.strip(" []()").split(","):
            part = part.strip()
            if part.isdigit():
                numel *= int(part)
        if len(_NUMELS) < 65536:
            _NUMELS[shape] = numel
    return numel


def _last_dim(shape: str) -> int:
    """The last dimension of a display shape ``"[2, 6, 24]"`` (1 when there is none; cached)."""
    last = _LAST_DIMS.get(shape)
    if last is None:
        tail = shape.rsplit(",", 1)[-1].strip(" []()")
        last = int(tail) if tail.isdigit() else 1
        if len(_LAST_DIMS) < 65536:
            _LAST_DIMS[shape] = last
    return last


_OPS: dict[str, str] = {}


def op_of(entry: str, kind: str) -> str:
    """The op type of an entry: ``Functional.linear.3.forward`` -> ``Functional.linear``;
    ``Module.layers.0.mlp.SwiGLU.forward.0`` -> ``Module.SwiGLU`` (one string per op type)."""
    op = _op_of(entry, kind)
    return _OPS.get(op) or _shared(_OPS, op)


def _op_of(entry: str, kind: str) -> str:
    if kind == "api":  # ".".join(entry.split(".")[:2])
        second = entry.find(".", entry.find(".") + 1) if "." in entry else -1
        return entry if second < 0 else entry[:second]
    head, _, last = entry.rpartition(".")
    if last.isdigit():  # the usual call, ``Module.<path>.<Class>.forward.<n>``: no split needed
        path, dot, marker = head.rpartition(".")
        if dot and marker in _MARKERS and "forward" not in path and "backward" not in path \
                and "parameters_grad" not in path:  # the marker's only (so first) component
            first, dot, _ = path.partition(".")
            return f"{first}.{path.rpartition('.')[2]}" if dot else first
    parts = entry.split(".")
    for marker in ("forward", "backward", "parameters_grad"):
        if marker in parts:
            i = parts.index(marker)
            return f"{parts[0]}.{parts[i - 1]}" if i >= 2 else parts[0]
    return parts[0]


_MARKERS = frozenset({"forward", "backward", "parameters_grad"})


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


def load_parents(dump_file: Path | None) -> ParentMap:
    """The enclosing module call of each entry from ``construct.json`` beside the dump (none if absent or bad);
    the one :func:`preload_parents` read, when the file is still the same."""
    if dump_file is None:
        return ParentMap.empty()
    path = Path(dump_file).parent / "construct.json"
    kept = _PRELOADED.pop(path, None)
    if kept is not None and kept[0] == _stamp(path):
        return kept[1]
    return _read_parents(path)


def preload_parents(dump_file: Path) -> None:
    """Read what :func:`load_parents` gives for ``dump_file`` now, while this process would wait anyway
    (the next call takes it, once; only the latest dump's is kept)."""
    path = Path(dump_file).parent / "construct.json"
    _PRELOADED.clear()
    stamp = _stamp(path)
    if stamp is not None:
        _PRELOADED[path] = stamp, _read_parents(path)


_PRELOADED: dict[Path, tuple[tuple[int, int, int], ParentMap]] = {}
"""What :func:`preload_parents` read, by construct.json path, with the file's :func:`_stamp` then."""


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """Identity and version of a regular file (``None`` when it is missing or not one)."""
    try:
        info = path.stat()
    except (OSError, ValueError):
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns) if stat.S_ISREG(info.st_mode) else None


def _read_parents(path: Path) -> ParentMap:
    try:
        if not path.is_file() or path.stat().st_size > (256 << 20):
            return ParentMap.empty()
        try:  # read a piece at a time: about a fifth less CPU than parsing a copy of the whole file
            return ParentMap.of(object_parts(path))
        except MemberMisplaced:  # another layout, or text that does not parse piece by piece
            doc = read_json(path)
            return ParentMap.of([doc]) if isinstance(doc, dict) else ParentMap.empty()
    except Exception:  # noqa: BLE001 - construct.json only improves labels; a bad one is ignored
        return ParentMap.empty()


def _row_dev(record: RowResult, tensor_mode: bool) -> tuple[float, bool, bool]:
    t, g = record.pair.target, record.pair.golden
    dev, t_bad, g_bad = stats_deviation(t.stats, g.stats)
    if t.shape != g.shape:  # a structure difference: no precision deviation between different shapes
        return 0.0, t_bad, g_bad
    if tensor_mode and not t_bad and not g_bad:
        dist = as_number(record.metrics[EUC_DIST]) if len(record.metrics) > EUC_DIST else None
        gnorm = as_number(g.stats[3])
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


def node_facts(entry: str, order: int, records: Iterable[RowResult], tensor_mode: bool, produced: set,
               backward: bool, md5: bool = False, leaf_inputs: list | None = None) -> NodeFacts:
    """The facts of one entry; ``produced`` holds the fingerprints of earlier outputs (updated here).

    With ``md5`` (checksum dumps) a tensor either matches (deviation 0) or not (infinite). With
    ``leaf_inputs``, every input that could be a leaf were fewer outputs produced before (a tensor
    input of a forward call, deviation above 0, its fingerprint not in ``produced``) is appended to it
    as ``(deviation, fingerprint, tail or name, whether a tail)``, in input order (for :func:`_set_leaf`).
    """
    return _restored(_facts_values(entry, order, records, tensor_mode, produced, backward, md5, leaf_inputs))


def _facts_values(entry: str, order: int, records: Iterable[RowResult], tensor_mode: bool, produced: set,
                  backward: bool, md5: bool, leaf_inputs: list | None) -> tuple[Any, ...]:
    """:func:`node_facts` as the slot values of its :class:`NodeFacts` (``module`` empty, see
    :func:`_restored`). The usual row (statistics of finite numbers) is judged inline, as
    :func:`stats_deviation` and :func:`_fingerprint` would: both run only for the others."""
    kind = _kind(entry)
    if kind == "api":  # op_of(), inline
        second = entry.find(".", entry.find(".") + 1) if "." in entry else -1
        op = entry if second < 0 else entry[:second]
    else:
        op = _op_of(entry, kind)
    op = _OPS.get(op) or _shared(_OPS, op)
    backward = backward or kind == "parameters_grad" or ".backward" in entry
    leaves = kind == "api" and not backward
    candidates = leaf_inputs is not None
    in_dev = out_dev = param_dev = leaf_dev = reduced_dev = 0.0
    worst_in = worst_out = worst_param = worst_leaf = worst_reduced = argument = dtype = ""
    in_numel = 0
    in_norm = 0.0
    nan_in = nan_out = False
    exact = True
    width = 1
    matched = unmatched = 0
    outputs: list = []
    dtypes, last_dims, numels, pack = _DTYPES, _LAST_DIMS, _NUMELS, _PAIR.pack
    statistics = not md5 and not tensor_mode
    seen = tensor = t_float = None  # the dtype of the row before (most rows of an entry share it)
    for record in records:
        pair = record.pair
        t = pair.target
        g = pair.golden
        if g is None:
            unmatched += 1
            if t.state != "output" and not argument:
                argument = f"{t.name} has no golden counterpart"
            continue
        matched += 1
        t_dtype = t.dtype
        if t_dtype is not seen:
            tensor, t_float = dtypes.get(t_dtype) or dtype_info(t_dtype)
            if t_float and t_float != dtype:
                dtype = lower_dtype(dtype, t_float) if dtype else t_float
            seen = t_dtype
        g_dtype = g.dtype
        if g_dtype == t_dtype:  # the usual row: the golden dtype adds nothing
            g_tensor = tensor
        else:
            g_tensor, g_float = dtypes.get(g_dtype) or dtype_info(g_dtype)
            if g_float and g_float != dtype:
                dtype = lower_dtype(dtype, g_float)
        ts = t.stats
        gs = g.stats
        if not tensor or not g_tensor:
            if g_tensor != tensor or ts is not gs and list(map(str, ts)) != list(map(str, gs)):  # shared: equal scalars
                exact = False
                if t.state != "output" and not argument and not benign_argument(ts[0], gs[0]):
                    argument = f"{t.name} is {_short(ts[0])} instead of {_short(gs[0])}"
            continue
        shape = t.shape
        if shape != g.shape:  # a structure difference: no precision deviation between different shapes
            if t.state != "output" and not argument:
                argument = f"{t.name} has shape {shape} instead of {g.shape}"
            dev, nan, exact = 0.0, False, False
        elif statistics:
            if ts == gs:
                dev, nan = 0.0, False  # identical statistics (a NaN never compares equal, so it takes the long way)
            else:
                exact = False
                tmax, tmin, tmean, tnorm = ts
                gmax, gmin, gmean, gnorm = gs
                try:
                    total = tmax + tmin + tmean + tnorm + gmax + gmin + gmean + gnorm
                    usual = total - total == 0.0  # eight finite numbers
                except TypeError:  # None, text
                    usual = False
                if usual:  # stats_deviation(ts, gs), inline (abs() and max() as comparisons): half its time
                    nan = False
                    dev = 0.0
                    scale = tmax if tmax >= 0.0 else -tmax  # a -0.0 scale is as false as 0.0
                    other = tmin if tmin >= 0.0 else -tmin
                    if other > scale:
                        scale = other
                    other = gmax if gmax >= 0.0 else -gmax
                    if other > scale:
                        scale = other
                    other = gmin if gmin >= 0.0 else -gmin
                    if other > scale:
                        scale = other
                    if scale:  # a -0.0 below is outdone by the Norm's deviation: the statistics differ
                        dev = tmax - gmax
                        if dev < 0.0:
                            dev = -dev
                        other = tmin - gmin
                        if other < 0.0:
                            other = -other
                        if other > dev:
                            dev = other
                        other = tmean - gmean
                        if other < 0.0:
                            other = -other
                        if other > dev:
                            dev = other
                        dev /= scale
                    scale = tnorm if tnorm >= 0.0 else -tnorm
                    other = gnorm if gnorm >= 0.0 else -gnorm
                    if other > scale:
                        scale = other
                    if scale:
                        other = tnorm - gnorm
                        if other < 0.0:
                            other = -other
                        other /= scale
                        if other > dev:
                            dev = other
                else:
                    dev, t_bad, g_bad = stats_deviation(ts, gs)
                    nan = t_bad and not g_bad
        elif md5:
            nan = False
            if t.md5 == g.md5:
                dev = 0.0
            else:
                dev, exact = _INF, False
        else:
            exact = False
            dev, t_bad, g_bad = _row_dev(record, tensor_mode)
            nan = t_bad and not g_bad
        state = t.state
        if state == "output":
            if nan:
                nan_out = True
            if backward and (numels.get(shape) or _numel(shape)) * REDUCTION < in_numel:
                norm = as_number(gs[3])
                if norm is not None and norm < TINY * in_norm:
                    dev = 0.0  # a sum that cancels to about zero (a bias before a norm layer): no relative error
                if dev > reduced_dev or not worst_reduced:
                    reduced_dev, worst_reduced = dev, t.name
            elif dev > out_dev or not worst_out:
                out_dev, worst_out = dev, t.name
            high = ts[0]
            low = ts[1]
            if high.__class__ is float and low.__class__ is float and high != low and high == high and low == low:
                outputs.append(pack(high or 0.0, low or 0.0))  # _fingerprint(t) of the usual output, inline
            else:
                fp = _fingerprint(t)
                if fp is not None:
                    outputs.append(fp)
        elif state == "input":
            last = last_dims.get(shape) or _last_dim(shape)
            if last > width:
                width = last
            if backward:
                numel = numels.get(shape) or _numel(shape)
                if numel > in_numel:
                    in_numel = numel
                norm = gs[3]
                if norm.__class__ is not float:
                    norm = as_number(norm)
                if norm is not None and norm > in_norm:
                    in_norm = norm
            if nan:
                nan_in = True
            if dev > in_dev or not worst_in:
                in_dev, worst_in = dev, t.name
            if leaves and (dev > leaf_dev or candidates and dev > 0.0):
                high = ts[0]
                low = ts[1]
                if high.__class__ is float and low.__class__ is float and high != low and high == high \
                        and low == low:
                    fp = pack(high or 0.0, low or 0.0)
                else:
                    fp = _fingerprint(t)
                if fp is not None and fp not in produced:
                    if dev > leaf_dev:
                        leaf_dev, worst_leaf = dev, t.name
                    if candidates:
                        tail = _tail(entry, t.name)
                        leaf_inputs.append((dev, fp if fp.__class__ is bytes else _portable(fp),
                                            t.name if tail is None else tail, tail is not None))
        elif state == "parameters":
            if dev > param_dev or not worst_param:
                param_dev, worst_param = dev, t.name
    if outputs:
        produced.update(outputs)
    tails, size, table, first_in = 0, len(entry), _TAILS, worst_in
    if worst_in and worst_in[size:size + 1] == "." and worst_in.startswith(entry):  # _tail() inline
        worst_in = worst_in[size:]
        worst_in = table.get(worst_in) or _shared(table, worst_in)
        tails = 1
    if worst_out and worst_out[size:size + 1] == "." and worst_out.startswith(entry):
        worst_out = worst_out[size:]
        worst_out = table.get(worst_out) or _shared(table, worst_out)
        tails |= 2
    if worst_leaf is first_in and not worst_param and not worst_reduced:  # the usual leaf: the worst input
        worst_leaf = worst_in
        tails |= (tails & 1) << 3
    elif worst_param or worst_leaf or worst_reduced:
        names = [worst_param, worst_leaf, worst_reduced]
        bit = 4
        for i, name in enumerate(names):
            if name and name[size:size + 1] == "." and name.startswith(entry):
                tail = name[size:]
                names[i] = table.get(tail) or _shared(table, tail)
                tails |= bit
            bit <<= 1
        worst_param, worst_leaf, worst_reduced = names
    return (entry, order, kind, op, backward, in_dev, out_dev, param_dev, leaf_dev, nan_in, nan_out, argument,
            unmatched, matched, reduced_dev, width, dtype, exact, "", worst_in, worst_out, worst_param, worst_leaf,
            worst_reduced, tails)


_DEVICE_WORDS = ("npu", "cuda", "cpu", "gpu", "xla", "mps", "device")


def benign_argument(target: Any, golden: Any) -> bool:
    """Whether two differing non-tensor arguments only restate how the runs differ anyway:
    float dtypes (``x.to(torch.bfloat16)`` against ``torch.float32``) or devices."""
    if not isinstance(target, str) or not isinstance(golden, str):
        return False
    if dtype_info(target)[1] and dtype_info(golden)[1]:
        return True
    low_t, low_g = target.lower(), golden.lower()
    return any(w in low_t for w in _DEVICE_WORDS) and any(w in low_g for w in _DEVICE_WORDS)


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def rank_facts(result: CompareResult) -> RankFacts:
    """Facts of every entry of one compared rank, in dump order."""
    builder = RankFactsBuilder(result)
    builder.add(result)
    return builder.finish(result)


class RankFactsBuilder:
    """:func:`rank_facts` over a rank's rows given a window of whole entries at a time.

    ``add`` takes each window's result in order; ``finish`` takes the whole-rank result
    (its rows may be left out) for the golden-only count.

    A window may instead be digested elsewhere, by a copy of the builder made before the first
    window (a forked process): the copy makes the window's :meth:`part` and hears of the windows
    it does not see through :meth:`skip`; this builder then takes the part with :meth:`merge`.
    """

    def __init__(self, result: CompareResult) -> None:
        rank = result.rank if result.rank is not None else 0
        path = result.target.path if result.target is not None else None
        self.nodes = FactColumns(_restored)
        self.facts = RankFacts(rank=rank, step=step_of(path), label=result.label, mode=result.mode.name,
                               nodes=self.nodes)
        self.tensor_mode = result.mode.name == "tensor"
        self.md5 = result.mode.name == "md5"
        self._parents(load_parents(path))
        self.produced = Fingerprints()
        self.backward = False
        self.window_names: Sequence[str] | None = None
        """The target entry names of the window whose part :meth:`merge` takes next (see :meth:`names`)."""

    def _parents(self, parents: ParentMap) -> None:
        self.parents = parents
        self.parent_of = parents.modules_of

    def add(self, result: CompareResult) -> None:
        self.produced.spill()
        rows: list[tuple[Any, ...]] = []
        append, produced, values = rows.append, self.produced, _facts_values
        tensor_mode, md5, backward = self.tensor_mode, self.md5, self.backward
        for order, (entry, group) in enumerate(groupby(result.records, key=_ENTRY)):
            if not backward and (".backward" in entry or ".parameters_grad" in entry):
                backward = True  # what runs after the first backward entry runs in the backward pass
            append(values(entry, order, group, tensor_mode, produced, backward, md5, None))
        self.backward = backward
        self.nodes.extend(rows, self.parent_of)

    def _copy_only(self) -> None:
        """Drop what only :meth:`add` and :meth:`merge` read (the parents): a copy that makes parts and skips
        windows never merges, and a forked process then no longer holds construct.json's entries."""
        if len(self.parents):
            self._parents(ParentMap.empty())

    def skip(self, names: Sequence[str]) -> None:
        """The target entry names of a window another process digests (only whether the backward pass began)."""
        self._copy_only()
        if not self.backward:
            self.backward = any(".backward" in name or ".parameters_grad" in name for name in names)

    def part(self, window: CompareResult) -> WindowFacts:
        """What :meth:`add` would keep of ``window``, made without the earlier windows' outputs (see
        :data:`WindowFacts`); only whether the backward pass began is taken from this builder."""
        self._copy_only()
        start = backward = self.backward
        produced: set = set()
        rows: list[tuple[Any, ...]] = []
        leaves: list[tuple[int, list]] = []
        values = _facts_values
        for order, (entry, group) in enumerate(groupby(window.records, key=_ENTRY)):
            if not backward and (".backward" in entry or ".parameters_grad" in entry):
                backward = True
            inputs: list = []
            rows.append(values(entry, order, group, self.tensor_mode, produced, backward, self.md5, inputs))
            if inputs:
                leaves.append((order, inputs))
        self.backward = backward
        odd = [fp for fp in produced if fp.__class__ is not bytes]
        if odd:
            produced.difference_update(odd)
        return start, backward, rows, produced, [_portable(fp) for fp in odd], leaves

    def names(self, names: Sequence[str]) -> None:
        """The target entry names of the window whose part :meth:`merge` takes next: the facts keep these
        strings (which this process holds anyway) instead of the part's copies of them."""
        self.window_names = names

    def merge(self, part: WindowFacts) -> bool:
        """Add a window's :meth:`part` (windows in order); ``False``, nothing changed, when it assumed
        the backward pass began (or not) where it did not."""
        start, end, rows, produced, odd, leaves = part
        names, self.window_names = self.window_names, None
        if start != self.backward:
            return False
        nodes = self.nodes
        base = len(nodes)
        nodes.extend(rows, self.parent_of, names)
        earlier = self.produced
        earlier.spill()
        for order, inputs in leaves:  # against the outputs of every earlier window, as add() judges them
            leaf = _leaf(inputs, earlier)
            row = rows[order]
            if leaf != (row[_LEAF_DEV], row[_W_LEAF], bool(row[_TAILS_AT] & _LEAF_BIT)):  # else as the part has it
                nodes.set_leaf(base + order, *leaf)
        earlier |= produced
        earlier.update(map(_local, odd))
        self.backward = end
        return True

    def finish(self, result: CompareResult) -> RankFacts:
        self.facts.golden_only = result.golden_only
        return self.facts


WindowFacts = tuple[bool, bool, list[tuple[Any, ...]], set, list[tuple[float | None, ...]], list[tuple[int, list]]]
"""A window's part (:meth:`RankFactsBuilder.part`): whether the backward pass had begun before it and
after it, the slot values of each entry's :class:`NodeFacts` (``order`` counted in the window, no
``module``), the fingerprints of its outputs (those holding a NaN apart, see :func:`_portable`), and
for each forward call the inputs that may be leaves (see :func:`node_facts`), judged again against
the outputs of the windows before."""

_LEAF_DEV, _W_LEAF, _TAILS_AT = (NodeFacts.__slots__.index(name) for name in ("leaf_dev", "w_leaf", "tails"))
"""Where :func:`_facts_values` puts ``leaf_dev``, ``w_leaf`` and ``tails``."""


def _restored(values: tuple[Any, ...], new: Any = object.__new__) -> NodeFacts:
    """The :class:`NodeFacts` whose slot values :func:`_facts_values` gave, in the order of
    ``NodeFacts.__slots__`` (one assignment: 7 times faster than a setter per slot)."""
    f = new(NodeFacts)
    (f.entry, f.order, f.kind, f.op, f.backward, f.in_dev, f.out_dev, f.param_dev, f.leaf_dev, f.nan_in, f.nan_out,
     f.argument, f.unmatched, f.matched, f.reduced_dev, f.width, f.dtype, f.exact, f.module, f.w_in, f.w_out,
     f.w_param, f.w_leaf, f.w_reduced, f.tails) = values
    return f


def _leaf(inputs: list, produced: set) -> tuple[float, str, bool]:
    """``(leaf_dev, worst_leaf, whether a tail)`` of a node from its candidate inputs, as
    :func:`node_facts` chooses them when ``produced`` holds the earlier outputs."""
    dev, name, tail = 0.0, "", False
    for candidate in inputs:
        if candidate[0] > dev:
            fp = candidate[1]
            if fp not in produced if fp.__class__ is bytes else _local(fp) not in produced:
                dev, _, name, tail = candidate
    return dev, name, tail
