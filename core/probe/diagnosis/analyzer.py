"""The diagnosis analyzer: facts per rank where the job ran, one ranked diagnosis at the end.

It runs in every ``probe compare`` (and ``probe diagnose``) before the other analyzers and
leaves its :class:`~probe.diagnosis.report.Diagnosis` in ``request.options[DIAGNOSIS_KEY]``
so that ``-da`` and the advisor name the same first suspect.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from probe.diagnosis.facts import RankFacts, RankFactsBuilder, preload_parents, rank_facts
from probe.diagnosis.rank import diagnose_facts
from probe.diagnosis.report import DIVERGENT, Diagnosis
from probe.io import prepare_output_dir, timestamp
from probe.result import Analysis, analysable

DIAGNOSIS_KEY = "_diagnosis"
"""Where the finished diagnosis is left in ``CompareRequest.options`` for later analyzers."""
MAX_LISTED = 5


def diagnosis_of(request: Any) -> Diagnosis | None:
    """The diagnosis of this compare, once the diagnosis analyzer has run (else ``None``)."""
    value = request.options.get(DIAGNOSIS_KEY) if request is not None else None
    return value if isinstance(value, Diagnosis) else None


class DiagnosisAnalyzer:
    """Noise floor and ranked suspects over every rank and step (``diagnosis_{ts}.json``)."""

    name = "diagnosis"

    def enabled(self, request: Any) -> bool:
        return True

    def digest(self, request: Any, result: Any) -> RankFacts | None:
        """The facts of one rank, made where the rank was compared."""
        return rank_facts(result) if analysable(result) else None

    def digest_stream(self, request: Any, result: Any) -> RankFactsBuilder:
        """:meth:`digest` made a window of whole entries at a time (``add``, then ``finish``)."""
        return RankFactsBuilder(result)

    def prefetch(self, dump_file: Path) -> None:
        """Read ahead what :meth:`digest_stream` reads beside ``dump_file`` (construct.json)."""
        preload_parents(dump_file)

    def analyze(self, request: Any, digests: list[RankFacts | None]) -> Analysis:
        facts = [d for d in digests if d is not None]
        if not facts:
            return Analysis(self.name)
        diagnosis = diagnose_facts(facts)
        request.options[DIAGNOSIS_KEY] = diagnosis
        written: list[Path] = []
        if request.output_dir is not None:
            written.append(diagnosis.write(prepare_output_dir(request.output_dir), timestamp()))
            if request.options.get("diagnosis_html") or request.options.get("diagnosis_png"):
                from probe.viewer.chart import write_diagnosis_files  # only for the page or the picture

                diagnosis.pictures = write_diagnosis_files(
                    diagnosis, written[0], html=bool(request.options.get("diagnosis_html")),
                    png=bool(request.options.get("diagnosis_png")), title=f"probe diagnosis - {request.target}")
                written += diagnosis.pictures
        shown = [] if request.options.get("quiet_diagnosis") else diagnosis_lines(diagnosis)
        return Analysis(self.name, written, shown, diagnosis)


class _Lines(list):
    def print(self, item: Any) -> None:
        self.append(item)


def diagnosis_lines(diagnosis: Diagnosis) -> list[Any]:
    """The console lines of a diagnosis (verdict, first suspects, the file), for a console to print."""
    from rich.text import Text

    out = _Lines()
    line = Text("diagnosis: ")
    style = {"identical": "green", "noise": "green", DIVERGENT: "bold red"}.get(diagnosis.verdict, "")
    line.append(diagnosis.verdict, style=style)
    if diagnosis.first is not None:
        line.append(f" ({len(diagnosis.suspects)} suspect(s))")
    out.print(line)
    for position, suspect in enumerate(diagnosis.suspects[:MAX_LISTED], 1):
        head = Text(f"  {position}. ")
        head.append(suspect.node, style="bold red" if position == 1 else "bold")
        head.append(f"  {suspect.kind}, {suspect.where()}, {suspect.direction}")
        out.print(head)
        out.print(Text(f"     {suspect.evidence}", style="dim"))
    if diagnosis.first is None and diagnosis.verdict == "noise":
        out.print(Text("  every difference is within the rounding noise of the dtypes", style="dim"))
    if diagnosis.path is not None:
        out.print(f"diagnosis: {diagnosis.path}")
    for picture in getattr(diagnosis, "pictures", ()):
        out.print(f"diagnosis {'page' if picture.suffix == '.html' else 'picture'}: {picture}")
    return out
