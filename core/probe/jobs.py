"""Compatibility names for plugins written before plans became data (use :mod:`probe.api`)."""

from __future__ import annotations

from probe.model import CompareRequest, PairPlan

__all__ = ["CompareRequest", "PairPlan"]
