"""The "error along the network" chart: its data (from a diagnosis or a compared graph), the
downsampling that keeps it fast at 200k ops, a self-contained HTML page and a static PNG.

Chart data (what the pages embed) is columnar, one entry per series::

    {"verdict": ..., "suspects": [...], "metric": "...", "modules": [names],
     "series": [{"label", "rank", "step", "total", "order": [...], "error": [...], "floor": [...],
                 "suspect": [...], "node": [...], "module": [...], "backward": [...],
                 "nonfinite": [...], "runs": [[first order, last order, module index], ...]}]}

``error``/``floor`` hold ``None`` where the value is missing; ``nonfinite`` is 1 where the error was
NaN/inf (drawn as a mark at the top of the chart); ``suspect`` is the 1-based suspect number or 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from probe.errors import InputError
from probe.io import atomic_path, atomic_write, unique_path
from probe.viewer.page import render_page

#: points kept per series for drawing (each bucket keeps its highest and lowest error)
DRAW_BUCKETS = 1500
#: module shading is coarsened (shorter module prefixes) until at most this many bands remain
MAX_RUNS = 400
STAT_METRICS = ("NormRelativeErr", "MaxRelativeErr")


def _number(value: Any) -> float | None:
    """A float from a number or a report cell (``"0.12%"`` is 0.0012); None when not a number."""
    kind = type(value)
    if kind is float:
        return value
    if kind is int:
        return float(value)
    if kind is not str:
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    text = value.strip()
    scale = 1.0
    if text.endswith("%"):
        text, scale = text[:-1], 0.01
    try:
        return float(text) * scale
    except ValueError:
        return None


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def key_error(items: Mapping[str, Any]) -> float | None:
    """The key error of one op from its output items: ``1 - Cosine`` in tensor mode, else the
    relative norm error (statistics); the largest over the outputs; None when nothing was compared."""
    worst: float | None = None
    for item in items.values():
        if not isinstance(item, Mapping):
            continue
        cosine = _number(item.get("Cosine"))
        if cosine is not None:
            value: float | None = 1.0 - cosine
        else:
            value = next((v for v in (_number(item.get(k)) for k in STAT_METRICS) if v is not None), None)
        if value is None:
            continue
        value = abs(value)
        if worst is None or math.isnan(value) or (not math.isnan(worst) and value > worst):
            worst = value  # NaN wins: it is the worst
    return worst


def downsample(errors: Sequence[float | None], keep: Iterable[int] = (), buckets: int = DRAW_BUCKETS) -> list[int]:
    """Indices of the points to draw: all of them when few; else, per bucket of consecutive points,
    its highest (every local maximum at drawing resolution) and lowest error, plus ``keep``
    (suspects), the first and the last point."""
    n = len(errors)
    if n <= 2 * buckets:
        return list(range(n))
    import numpy as np

    values = np.array([math.nan if e is None else e for e in errors], dtype=float)  # NaN errors: pass inf
    high = np.where(np.isnan(values), -np.inf, values)
    low = np.where(np.isnan(values), np.inf, values)
    chosen = {0, n - 1, *keep}
    edges = np.linspace(0, n, buckets + 1).astype(int)
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi > lo:
            chosen.add(lo + int(np.argmax(high[lo:hi])))
            chosen.add(lo + int(np.argmin(low[lo:hi])))
    return sorted(i for i in chosen if 0 <= i < n)


def _runs(orders: Sequence[float], modules: Sequence[Any]) -> tuple[list[list], list[str]]:
    """Bands of consecutive ops of one module ([first order, last order, module index]), coarsened
    to shorter module prefixes until there are at most ``MAX_RUNS``."""
    runs: list[list] = []  # [first, last, name]
    for order, module in zip(orders, modules):
        if not module or type(module) is not str:
            continue
        if runs and runs[-1][2] == module:
            runs[-1][1] = order
        else:
            runs.append([order, order, module])
    for depth in (6, 5, 4, 3, 2):
        if len(runs) <= MAX_RUNS:
            break
        merged: list[list] = []
        for first, last, name in runs:
            name = ".".join(name.split(".")[:depth])
            if merged and merged[-1][2] == name:
                merged[-1][1] = last
            else:
                merged.append([first, last, name])
        runs = merged
    names: list[str] = []
    index: dict[str, int] = {}
    for run in runs:
        if run[2] not in index:
            index[run[2]] = len(names)
            names.append(run[2])
        run[2] = index[run[2]]
    return runs, names


def _series(entry: Mapping[str, Any], suspects: Sequence[Mapping[str, Any]], buckets: int) -> dict[str, Any]:
    points = entry.get("points") or []
    if not isinstance(points, list):
        raise InputError("diagnosis series 'points' is not a list")
    points = [p for p in points if type(p) is dict or isinstance(p, Mapping)]
    orders = [_number(p.get("order")) or 0.0 for p in points]
    if any(a > b for a, b in zip(orders, orders[1:])):
        ranked = sorted(range(len(points)), key=orders.__getitem__)
        points, orders = [points[i] for i in ranked], [orders[i] for i in ranked]
    errors = [_number(p.get("error")) for p in points]
    errors = [e if e is None or math.isfinite(e) else math.inf for e in errors]  # NaN/inf: drawn on top
    rank, step = entry.get("rank"), entry.get("step")
    numbered: dict[str, int] = {}
    for k, suspect in enumerate(suspects, 1):
        if suspect.get("rank", rank) == rank and suspect.get("step", step) == step:
            numbered.setdefault(str(suspect.get("node")), k)
    marks = {}
    for i, p in enumerate(points):
        mark = p.get("suspect")
        if type(mark) is not int:
            mark = numbered.get(p.get("node"), 0) if numbered else 0
        if mark:
            marks[i] = mark
    chosen = downsample(errors, marks, buckets)
    runs, module_names = _runs(orders, [p.get("module") for p in points])
    picked = [points[i] for i in chosen]
    return {
        "label": str(entry.get("label") or f"step{step}/rank{rank}"),
        "rank": rank if isinstance(rank, int) else 0,
        "step": step if isinstance(step, int) else 0,
        "total": len(points),
        "order": [orders[i] for i in chosen],
        "error": [None if errors[i] == math.inf else errors[i] for i in chosen],
        "floor": [_finite(_number(p.get("floor"))) for p in picked],
        "suspect": [marks.get(i, 0) for i in chosen],
        "node": [str(p.get("node", "")) for p in picked],
        "module": [str(p.get("module") or "") for p in picked],
        "backward": [int(p.get("direction") == "backward" or ".backward" in str(p.get("node", ""))) for p in picked],
        "nonfinite": [int(errors[i] == math.inf) for i in chosen],
        "runs": runs,
        "runNames": module_names,
    }


def chart_data(diagnosis: Mapping[str, Any], buckets: int = DRAW_BUCKETS, metric: str | None = None) -> dict[str, Any]:
    """The chart's embedded data from a diagnosis dict (the shared diagnosis JSON contract)."""
    if not isinstance(diagnosis, Mapping):
        raise InputError("diagnosis is not a JSON object")
    suspects = [s for s in diagnosis.get("suspects") or [] if isinstance(s, Mapping)]
    series = diagnosis.get("series") or []
    if not isinstance(series, list):
        raise InputError("diagnosis 'series' is not a list")
    data = {
        "verdict": str(diagnosis.get("verdict") or ""),
        "metric": metric or str(diagnosis.get("metric") or "relative output error"),
        "suspects": [
            {"node": str(s.get("node", "")), "rank": s.get("rank", 0), "step": s.get("step", 0),
             "kind": str(s.get("kind", "")), "score": _number(s.get("score")), "evidence": str(s.get("evidence", ""))}
            for s in suspects
        ],
        "series": [_series(entry, suspects, buckets) for entry in series if isinstance(entry, Mapping)],
    }
    data["primary"] = primary(data)
    return data


def primary(data: Mapping[str, Any]) -> int:
    """The series whose noise floor and module bands are drawn: the one of suspect 1, else the first."""
    return next((k for k, s in enumerate(data["series"]) if 1 in s["suspect"]), 0)


def load_diagnosis(path: Path) -> dict[str, Any]:
    """Read a ``diagnosis_*.json`` file; one-line error when it is not a diagnosis."""
    path = Path(path)
    if not path.is_file():
        raise InputError("diagnosis file does not exist", path)
    try:
        doc = orjson.loads(path.read_bytes())
    except (orjson.JSONDecodeError, OSError) as exc:
        raise InputError(f"is not a diagnosis JSON file ({exc})", path) from None
    if not isinstance(doc, dict) or "suspects" not in doc or "verdict" not in doc:
        raise InputError("is not a diagnosis JSON file (no verdict/suspects)", path)
    return doc


def _as_dict(diagnosis: Any) -> Mapping[str, Any]:
    return diagnosis.to_dict() if hasattr(diagnosis, "to_dict") else diagnosis


# ------------------------------------------------------------------ standalone page


def render_diagnosis_html(diagnosis: Any, title: str = "probe diagnosis", data: dict | None = None) -> str:
    """One self-contained page (inline data, script and style; no network) with the chart and the
    suspect list of a diagnosis (``data``: its chart data when already made)."""
    return render_page(
        "diagnosis.html", title, scripts=("common.js", "chart.js", "diagnosis.js"), styles=("chart.css", "diagnosis.css"),
        blobs={"chart-data": data or chart_data(_as_dict(diagnosis))},
    )


def write_diagnosis_html(diagnosis: Any, output: Path, title: str = "probe diagnosis", data: dict | None = None) -> Path:
    """Write the diagnosis page atomically to ``output``."""
    html = render_diagnosis_html(diagnosis, title, data)
    out = atomic_write(Path(output), "w", encoding="utf-8")
    with out as handle:
        handle.write(html)
    return out.path


# ------------------------------------------------------------------ PNG


PALETTE = ("#1f6feb", "#8250df", "#1a7f37", "#bf8700", "#cf222e", "#0a7f8f", "#6e7781", "#e16f24")


def write_png(diagnosis: Any, output: Path, width: float = 12.0, height: float = 4.2, dpi: int = 100,
              data: dict | None = None) -> Path:
    """A static PNG of the chart (needs matplotlib: ``pip install 'probe[png]'``), written atomically."""
    try:
        import matplotlib
    except ImportError:
        raise InputError("--png needs matplotlib (pip install 'probe[png]' or pip install matplotlib)") from None
    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    data = data or chart_data(_as_dict(diagnosis))
    fig = Figure(figsize=(width, height), dpi=dpi)
    ax = fig.add_subplot(1, 1, 1)
    values = [e for s in data["series"] for e in s["error"] + s["floor"] if e is not None and e > 0]
    bottom = max(min(values) / 3, 1e-12) if values else 1e-8
    top = max(values) * 3 if values else 1.0
    first = data["series"][data["primary"]] if data["series"] else None
    if first:
        for k, (lo, hi, _module) in enumerate(first["runs"]):
            if k % 2 == 0:
                ax.axvspan(lo - 0.5, hi + 0.5, color="#eef1f5", lw=0, zorder=0)
        turn = next((o for o, b in zip(first["order"], first["backward"]) if b), None)
        if turn is not None:
            ax.axvline(turn - 0.5, color="#888", lw=0.8, ls="--", zorder=1)
            ax.text(turn, top, " backward", va="top", ha="left", fontsize=8, color="#555")
    for k, series in enumerate(data["series"]):
        color = PALETTE[k % len(PALETTE)]
        xs = [o for o, e in zip(series["order"], series["error"]) if e is not None]
        ys = [max(e, bottom) for e in series["error"] if e is not None]
        floors = [(o, f) for o, f in zip(series["order"], series["floor"]) if f is not None and f > 0]
        if floors and k == data["primary"]:
            fx, fy = zip(*floors)
            ax.fill_between(fx, bottom, fy, step="mid", color="#2da44e", alpha=0.15, lw=0, label="noise floor", zorder=1)
        ax.plot(xs, ys, color=color, lw=1.0, label=series["label"], zorder=2)
        bad = [o for o, b in zip(series["order"], series["nonfinite"]) if b]
        if bad:
            ax.scatter(bad, [top / 1.5] * len(bad), marker="v", color="#cf222e", s=18, zorder=3, label="NaN/inf")
    for k, series in enumerate(data["series"]):
        for o, e, mark, bad in zip(series["order"], series["error"], series["suspect"], series["nonfinite"]):
            if not mark:
                continue
            y = top / 1.5 if bad or e is None else max(e, bottom)
            ax.scatter([o], [y], s=170, color="#cf222e", edgecolor="white", linewidth=1.2, zorder=4)
            ax.annotate(str(mark), (o, y), ha="center", va="center", fontsize=8, color="white", weight="bold", zorder=5)
    ax.set_yscale("log")
    ax.set_ylim(bottom, top)
    ax.set_xlabel("op order (forward, then backward)")
    ax.set_ylabel(data["metric"] if len(data["metric"]) < 40 else "key error")
    suspects = data["suspects"]
    headline = f"verdict: {data['verdict'] or 'n/a'}"
    if suspects:
        headline += f"  -  suspect 1: {suspects[0]['node']} ({suspects[0]['kind']})"
    ax.set_title(headline, fontsize=10, loc="left")
    ax.grid(True, which="major", axis="y", color="#ddd", lw=0.6)
    if data["series"]:
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=min(len(data["series"]) + 1, 6), fontsize=8,
                  frameon=False)
    fig.tight_layout()
    out = atomic_path(Path(output))
    with out as tmp:
        fig.savefig(tmp, format="png")
    return out.path


def write_diagnosis_files(diagnosis: Any, json_path: Path, html: bool = False, png: bool = False,
                          title: str | None = None) -> list[Path]:
    """The page (``--html``) and picture (``--png``) of a written ``diagnosis_{ts}.json``, beside it
    with the same stem (never replacing a file)."""
    json_path = Path(json_path)
    stem = json_path.name[: -len(".json")] if json_path.name.endswith(".json") else json_path.name
    written = []
    data = chart_data(_as_dict(diagnosis))
    if html:
        page = unique_path(json_path.parent, stem, ".html")
        written.append(write_diagnosis_html(diagnosis, page, title or f"probe diagnosis - {stem}", data))
    if png:
        written.append(write_png(diagnosis, unique_path(json_path.parent, stem, ".png"), data=data))
    return written


def require_png() -> None:
    """One-line error, before any work, when ``--png`` cannot be honoured (matplotlib missing)."""
    from importlib.util import find_spec

    if find_spec("matplotlib") is None:
        raise InputError("--png needs matplotlib (pip install 'probe[png]' or pip install matplotlib)")
