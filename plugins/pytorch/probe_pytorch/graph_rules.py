"""PyTorch and Megatron knowledge for ``graph_visualize``: activation-recompute stacks and the
tensor-parallel layers whose outputs are partial sums (registered through
``probe_register_graph_rules``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from probe.api import PartialSums

RECOMPUTE_FILE = "torch/utils/checkpoint.py"
AUTOGRAD_FILE = "torch/autograd/function.py"
_BACKWARD_FRAME = re.compile(r"\bin (?:backward|checkpoint_function_backward)\b")
MATMUL_APIS = frozenset({
    "linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "einsum", "npu_linear", "npu_mm_all_reduce_base",
    "npu_matmul_add_fp32", "__matmul__", "dot", "mv",
})
"""APIs whose output is a partial sum when their inputs are split over the TP ranks."""
ROW_PARALLEL, COLUMN_PARALLEL = "RowParallelLinear", "ColumnParallelLinear"


def is_recompute_stack(frames: Sequence[str]) -> bool:
    """Whether a forward call's stack shows activation recomputation: a ``recompute_fn`` frame of
    ``torch/utils/checkpoint.py``, or a ``backward`` / Megatron ``checkpoint_function_backward``
    frame followed within two frames by ``torch/autograd/function.py``."""
    for index, frame in enumerate(frames):
        text = frame.replace("\\", "/")
        if RECOMPUTE_FILE in text and "in recompute_fn" in text:
            return True
        if _BACKWARD_FRAME.search(text):
            if any(AUTOGRAD_FILE in f.replace("\\", "/") for f in frames[index + 1 : index + 3]):
                return True
    return False


class MegatronGraphRules:
    """Recompute stacks of ``torch.utils.checkpoint`` / Megatron, and Megatron TP partial sums."""

    name = "pytorch-megatron"

    def is_recompute_stack(self, frames: Sequence[str]) -> bool:
        return is_recompute_stack(frames)

    def partial_sum_outputs(self, name: str, kind: str, outputs: int) -> PartialSums | None:
        """Matmul outputs, ``RowParallelLinear`` forward outputs and the first output of a
        ``ColumnParallelLinear`` backward (the gradient of its replicated input, summed over
        the ranks even when the dump shows no reduction)."""
        parts = name.split(".")
        if kind == "api":
            api = parts[1] if len(parts) > 1 else ""
            return PartialSums(tuple(range(outputs))) if api.split("_rank")[0] in MATMUL_APIS else None
        if kind != "module" or len(parts) < 3:
            return None
        backward = ".backward" in name
        if parts[-3] == ROW_PARALLEL and not backward:
            return PartialSums(tuple(range(outputs)))
        if parts[-3] == COLUMN_PARALLEL and backward and outputs:
            return PartialSums((0,), unreduced=True)
        return None
