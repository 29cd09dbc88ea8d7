"""TorchAir support for probe: compare GE dumps with FX dumps or fusion-off GE dumps."""

__version__ = "0.1.0"
