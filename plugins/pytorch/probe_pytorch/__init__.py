"""PyTorch support for probe."""

__version__ = "0.1.0"
