"""probe: compare two neural-network dumps and find the operator that went wrong.

``import probe`` never imports a deep-learning framework (nor numpy). ``probe.compare`` and
``probe.diagnose`` are the Python entry points; every name of the public plugin API
(:mod:`probe.api`) is also available here (``from probe import hookimpl, PairPlan``).
"""

from __future__ import annotations

from probe.api import *  # noqa: F403 - the public plugin API, re-exported
from probe.api import __all__ as _api_names
from probe.diagnosis import diagnose
from probe.pipeline import compare
from probe.version import __version__

__all__ = ["compare", "diagnose", "__version__", *_api_names]
