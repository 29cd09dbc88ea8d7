"""probe: compare two neural-network dumps and find the operator that went wrong.

``import probe`` never imports a deep-learning framework (nor numpy). ``probe.compare``,
``probe.diagnose``, ``probe.compare_many`` (one golden, several targets) and ``probe.diff_reports``
(what changed between two reports) are the Python entry points; every name of the public plugin API
(:mod:`probe.api`) is also available here (``from probe import hookimpl, PairPlan``).
"""

from __future__ import annotations

from typing import Any

from probe.api import *  # noqa: F403 - the public plugin API, re-exported
from probe.api import __all__ as _api_names
from probe.diagnosis import diagnose
from probe.pipeline import compare
from probe.version import __version__

__all__ = ["compare", "compare_many", "diagnose", "diff_reports", "__version__", *_api_names]


def __getattr__(name: str) -> Any:
    """``compare_many`` and ``diff_reports``, imported on first use (a compare does not need them)."""
    if name == "compare_many":
        from probe.regression.nway import compare_many

        return compare_many
    if name == "diff_reports":
        from probe.regression.diff import diff_reports

        return diff_reports
    raise AttributeError(f"module 'probe' has no attribute {name!r}")
