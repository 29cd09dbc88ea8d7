"""probe hooks of the PyTorch plugin (thin: torch is imported only to read a tensor)."""

from __future__ import annotations

from probe.api import hookimpl
from probe_pytorch.graph_rules import MegatronGraphRules


@hookimpl
def probe_register_tensor_loaders(register) -> None:
    from probe_pytorch.tensors import load_pt

    register.add(".pt", load_pt)


@hookimpl
def probe_register_graph_rules(register) -> None:
    register.add("pytorch-megatron", MegatronGraphRules())
