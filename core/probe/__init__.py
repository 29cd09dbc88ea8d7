"""probe: compare two neural-network dumps and find the operator that went wrong.

``import probe`` never imports a deep-learning framework.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["compare", "compare_many", "diagnose", "diff_reports", "__version__"]


def compare(target: Any, golden: Any, output: Any = None, **options: Any) -> Any:
    """Compare two dumps; see :func:`probe.pipeline.compare` for the options."""
    from probe.pipeline import compare as _compare

    return _compare(target, golden, output, **options)


def compare_many(golden: Any, targets: Any, labels: Any = None, output: Any = None, **options: Any) -> Any:
    """Compare one golden dump with several targets; see :func:`probe.regression.nway.compare_many`."""
    from probe.regression.nway import compare_many as _compare_many

    return _compare_many(golden, targets, labels, output, **options)


def diff_reports(old: Any, new: Any, output: Any = None, **options: Any) -> Any:
    """Diff two compare reports (or output dirs); see :func:`probe.regression.diff.diff_reports`."""
    from probe.regression.diff import diff_reports as _diff_reports

    return _diff_reports(old, new, output, **options)


def diagnose(target: Any, golden: Any, output: Any = None, **options: Any) -> Any:
    """Compare two dumps and rank suspects; see :func:`probe.diagnosis.diagnose`."""
    from probe.diagnosis import diagnose as _diagnose

    return _diagnose(target, golden, output, **options)
