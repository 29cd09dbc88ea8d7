"""The version of probe (kept in step with ``pyproject.toml``)."""

__version__ = "0.1.0"
