"""MindSpore support for probe (needs only numpy: MindSpore itself is never imported)."""

__version__ = "0.1.0"
