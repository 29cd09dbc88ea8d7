"""API names of msProbe dumps that compare rules single out (both dumpers' spellings).

msProbe names an entry ``<Category>.<api>.<call>.<direction>`` (``Torch.empty.0.forward``,
``Distributed.all_reduce.1.forward``, ``MintDistributed.send.0.forward``); these tables say
which categories are communication and which APIs carry no data flow.
"""

from __future__ import annotations

COMM_PREFIXES = ("Distributed.", "MintDistributed.", "Communication.")
"""Entry prefixes of communication ops (PyTorch, MindSpore mint, MindSpore communication)."""

IGNORED_OPS = ("Torch.empty", "Torch.fill", "Tensor.__setitem__")
"""Entries whose contents are not data flow (uninitialised buffers, fills)."""

IGNORED_OUTPUTS = {"npu_fusion_attention": frozenset({4, 5})}
"""Output indices that never count as data, per API (random seeds / offsets)."""

NON_TENSOR_DTYPES = frozenset({"N/A", "torch.Size", "slice", "ellipsis", "torch.ProcessGroup"})
"""dtype cells of rows that hold no tensor (besides ``<class ...>`` scalars)."""

MINDSPORE_PREFIXES = ("Mint.", "MintFunctional.", "Cell.", "Primitive.", "Jit.")
"""Entry names only MindSpore dumps have."""

CONSTRUCT_MICRO_STEP_KEY = "megatron_micro_step_number"
"""Key of construct.json that, when present, turns every value into ``[parent, micro step]``."""

TENSOR_TYPES = {"mindspore": "mindspore.Tensor"}
"""``type`` msProbe writes for a tensor leaf, by framework (others: :data:`DEFAULT_TENSOR_TYPE`)."""
DEFAULT_TENSOR_TYPE = "torch.Tensor"


def tensor_type(framework: str) -> str:
    """The ``type`` of a tensor leaf in a dump of ``framework``."""
    return TENSOR_TYPES.get(framework, DEFAULT_TENSOR_TYPE)

API_PREFIXES = (
    "Tensor.", "Torch.", "Functional.", "NPU.", "VF.", "Distributed.", "Aten.", "Mint.",
    "Primitive.", "Jit.", "MintFunctional.", "MindSpeed.",
)
"""Entry-name categories of API calls (the rest are modules / cells), both dumpers."""


def backward_stem(entry: str) -> tuple[str, bool] | None:
    """The stem (name minus its last two components) of a backward call's entry name, and
    whether its call index comes before ``backward`` (an API: ``X.api.N.backward``) rather
    than after it (a module: ``Module.path.Class.backward.N``); ``None`` for other names."""
    if "backward" not in entry:  # most entries: no need to look closer
        return None
    parts = entry.rsplit(".", 2)
    if len(parts) < 3:  # fewer than three components
        return None
    stem, second, last = parts
    if last == "backward":
        return stem, True
    if second == "backward":
        return stem, False
    return None


def renumbered(stem: str, api: bool, ordinal: int) -> str:
    """A backward entry name (see :func:`backward_stem`) with call index ``ordinal``."""
    return f"{stem}.{ordinal}.backward" if api else f"{stem}.backward.{ordinal}"
