"""Automatic matching of rows whose names differ (``--auto-match``, ``probe match``)."""
