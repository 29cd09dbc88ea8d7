"""probe: compare two neural-network dumps and find the operator that went wrong.

``import probe`` never imports a deep-learning framework.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["compare", "diagnose", "__version__"]


def compare(target: Any, golden: Any, output: Any = None, **options: Any) -> Any:
    """Compare two dumps; see :func:`probe.pipeline.compare` for the options."""
    from probe.pipeline import compare as _compare

    return _compare(target, golden, output, **options)


def diagnose(target: Any, golden: Any, output: Any = None, **options: Any) -> Any:
    """Compare two dumps and rank suspects; see :func:`probe.diagnosis.diagnose`."""
    from probe.diagnosis import diagnose as _diagnose

    return _diagnose(target, golden, output, **options)
