"""Diagnosis: which call first went wrong, judged against the noise floor of the dtypes.

``probe diagnose`` / ``probe.diagnose(...)`` compare two dumps and rank suspects; every
``probe compare`` writes the same ``diagnosis_{ts}.json`` beside its reports.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from probe.diagnosis.analyzer import DiagnosisAnalyzer
from probe.diagnosis.report import DIVERGENT, IDENTICAL, NOISE, Diagnosis, Suspect
from probe.errors import InputError, ProbeError
from probe.model import CompareRequest
from probe.pipeline import run_compare

__all__ = ["DIVERGENT", "IDENTICAL", "NOISE", "Diagnosis", "Suspect", "diagnose"]


def diagnose(target: str | os.PathLike, golden: str | os.PathLike, output: str | os.PathLike | None = None,
             *, framework: str | None = None, formats: Sequence[str] = ("csv",), jobs: int = 1,
             host: Any = None, **options: Any) -> Diagnosis:
    """Compare two dumps and diagnose them; returns a :class:`Diagnosis`.

    ``output`` is a directory for the compare reports and ``diagnosis_{ts}.json`` (nothing
    is written when it is ``None``). ``options`` are compare options by their CLI ``dest``
    names (``fuzzy_match=True``, ``data_mapping="map.yaml"``...). Raises
    :class:`probe.errors.ProbeError` subclasses on bad input.
    """
    request = CompareRequest(
        target=Path(target), golden=Path(golden), output_dir=Path(output) if output is not None else None,
        framework=framework, formats=tuple(formats), jobs=jobs,
        options={**options, "compare_only": True, "diff_analyze": False, "quiet_diagnosis": True},
    )
    run = run_compare(request, host=host, keep=False)
    if run.errors and len(run.errors) == len(run.outcomes):
        exc = ProbeError(run.errors[0].error)
        exc.exit_code = run.errors[0].exit_code
        raise exc
    analysis = run.analysis(DiagnosisAnalyzer.name)
    if analysis is None or analysis.data is None:
        raise InputError("nothing to diagnose (no compared rows)", target)
    return analysis.data
