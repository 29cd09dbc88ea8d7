"""A self-contained HTML viewer of ``.vis.db`` graphs (no server, no TensorBoard)."""
