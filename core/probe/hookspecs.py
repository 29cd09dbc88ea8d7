"""Every hook of probe, documented in one place.

Two shapes only:

* **registration hooks** (``probe_register_*``, ``probe_add_compare_options``) are called
  once at start-up with a typed register object; plugins add named objects to it and a
  duplicate name is an error naming both plugins;
* **decision hooks** (``firstresult=True``) return the first non-``None`` answer; the
  built-in default of each is registered ``trylast`` so any plugin can override it.

No hook is ever called per row or per tensor: hooks hand back objects (readers, loaders,
pairers, modes, exporters, analyzers) and the hot loops call those directly. The objects'
contracts are the Protocols of :mod:`probe.interfaces`; the order in which the pipeline
uses them is described there.

Hooks evolve by adding keyword arguments; always call them by keyword.
"""

from __future__ import annotations

import argparse
import pluggy

from probe.model import CompareRequest, PairPlan
from probe.registry import Registry

PROJECT = "probe"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# --------------------------------------------------------------------------------------
# registration hooks
# --------------------------------------------------------------------------------------


@hookspec
def probe_register_readers(register: Registry) -> None:
    """Register dump readers (:class:`probe.interfaces.DumpReader`) keyed by name.

    Called once at start-up. A reader recognises a dump (``sniff``) and reads it into plain
    rows in file order (``load``). The built-in reader ``msprobe-json`` handles msProbe's
    ``dump.json`` / ``debug.json``; a plan may name its reader, otherwise readers are tried
    in registration order, plugins first.
    """


@hookspec
def probe_register_tensor_loaders(register: Registry) -> None:
    """Register tensor-file loaders keyed by file suffix (``".pt"``, ``".npy"``...).

    Called once at start-up. Each value is a :data:`probe.interfaces.TensorLoader`: a callable
    ``load(path) -> numpy.ndarray`` that must never execute code from the file (no
    unpickling). The core ships ``.npy``; the PyTorch plugin adds ``.pt``.
    """


@hookspec
def probe_register_normalizers(register: Registry) -> None:
    """Register name normalizers (:class:`probe.interfaces.NameNormalizer`).

    Called once at start-up. A normalizer turns a framework-specific row name into a
    canonical one before matching (e.g. MindSpore ``Cell.`` to ``Module.``). It declares
    which (target framework, golden framework) pairs it applies to.
    """


@hookspec
def probe_register_mappers(register: Registry) -> None:
    """Register mappers (:class:`probe.interfaces.Mapper`): api / cell / layer / data mapping.

    Called once at start-up. A mapper is activated by a compare option (e.g. ``-dm FILE``)
    and, once built for a job, rewrites the matching key of target rows so that they pair
    with golden rows of other names.
    """


@hookspec
def probe_register_pairers(register: Registry) -> None:
    """Register pairers (:class:`probe.interfaces.Pairer`) keyed by name.

    Called once at start-up. A pairer turns two read and normalized dumps into pairs plus
    the unmatched rows of both sides. Built-ins: ``exact`` (the default) and ``fuzzy``
    (``-fm``). A pairer with an ``option`` attribute is used when that compare option is set
    (e.g. ``auto_match``); a :class:`probe.model.PairPlan` may name its pairers explicitly.
    """


@hookspec
def probe_register_modes(register: Registry) -> None:
    """Register metric modes (:class:`probe.interfaces.MetricMode`).

    Called once at start-up. A mode owns its metric columns, the per-pair computation and
    the Result rules. Built-ins: ``statistics``, ``tensor``, ``md5``. A mode is chosen by
    the dump's task (``MetricMode.accepts``) or explicitly with ``--metric-mode NAME``.
    """


@hookspec
def probe_register_tensor_metrics(register: Registry) -> None:
    """Register extra tensor-mode metric columns (:class:`probe.interfaces.TensorMetric`).

    Called once at start-up. Each metric adds one column after the six built-in tensor
    metrics (msProbe's "custom algorithm" columns); a metric that raises yields
    ``unsupported`` for that row.
    """


@hookspec
def probe_register_exporters(register: Registry) -> None:
    """Register exporters (:class:`probe.interfaces.Exporter`) keyed by format name.

    Called once at start-up. Built-ins: ``csv``, ``xlsx``, ``json``. ``--format a,b`` picks
    several; the core writes each file atomically (the exporter writes a temporary path that
    the core renames into place).
    """


@hookspec
def probe_register_commands(register: Registry) -> None:
    """Register CLI sub-commands (:class:`probe.interfaces.Command`).

    Called once when the command line is built. Built-ins: ``compare``, ``plugins``; plugins
    add e.g. ``merge_result`` or ``graph_visualize``. A command may list ``aliases``.
    """


@hookspec
def probe_register_analyzers(register: Registry) -> None:
    """Register post-compare analyzers (:class:`probe.interfaces.Analyzer`).

    Called once at start-up. After every job of a compare has run, each analyzer whose
    ``enabled(request)`` is true gets the in-memory results (first-divergence analysis,
    advisor, collective consistency...); nothing is re-read from written files. An analyzer
    with a ``digest(request, result)`` method summarises each result where its job ran and
    receives the digests instead, so results need not travel between processes.
    """


@hookspec
def probe_register_graph_rules(register: Registry) -> None:
    """Register framework knowledge the graph builder and parallel merge apply
    (:class:`probe.interfaces.GraphRules`; every member optional).

    Called once at start-up. ``is_recompute_stack(frames)`` says whether a forward module
    call's stack shows activation recomputation (the call then moves under the backward of the
    original call's parent); ``partial_sum_outputs(name, kind, outputs)`` names the output rows
    of a node that hold partial sums over the tensor-parallel ranks (PyTorch/Megatron: matmuls,
    ``RowParallelLinear`` forward, ``ColumnParallelLinear`` backward). The core knows none of
    these itself; probe-pytorch registers them.
    """


@hookspec
def probe_add_compare_options(parser: argparse.ArgumentParser) -> None:
    """Add options to ``probe compare`` (e.g. ``-am``; ``--rank``/``--step`` are core options).

    Called once when the ``compare`` parser is built. Options land in
    ``CompareRequest.options`` under their ``dest`` names, so plugin code reads them from
    there; use ``default=None`` so that an option that was not given is recognisable.
    """


# --------------------------------------------------------------------------------------
# decision hooks
# --------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def probe_plan_compare(request: CompareRequest) -> list[PairPlan] | None:
    """Split a compare request into independent pairs of sources, as data.

    Called once per ``probe compare``. Stops at the first non-``None`` result. Each
    :class:`probe.model.PairPlan` names its two sources, the reader(s), pairer(s) and mode to
    use (or ``None`` for the defaults), its output name, label, rank and step; the pipeline
    runs every plan through the same stages. The built-in implementation (``trylast``)
    understands dump files, ``rank*``/``proc*`` step dirs and multi-step roots, and keeps
    the ranks / steps asked for with ``--rank`` / ``--step``. A plugin returns plans for
    layouts it owns (MindSpore kernel dumps, TorchAir GE dumps, ...). Raise
    :class:`probe.errors.InputError` for input it recognises but cannot use.
    """


@hookspec(firstresult=True)
def probe_detect_framework(path: str) -> str | None:
    """Name the framework of the dump at ``path`` when ``--framework`` was not given.

    Called once per compare on the target path. Stops at the first non-``None`` result.
    The built-in implementation (``trylast``) reads the ``framework`` key of dump.json.
    """
