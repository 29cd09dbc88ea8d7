"""``-lm [FILE]``: layer mapping (placeholder)."""

from __future__ import annotations

from probe.model import KeyMap, MatchContext


class LayerMapper:
    name = "layer_mapping"
    priority = 12

    def build(self, ctx: MatchContext) -> KeyMap | None:
        return None
