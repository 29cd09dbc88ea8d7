"""Terminal front-end of a compare: progress bars, the summary table, the exit code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from probe.errors import InputError
from probe.model import CompareRequest, Summary
from probe.pipeline import run_compare
from probe.result import CompareRun, JobOutcome

err_console = Console(stderr=True)


class _Unseen:
    """The progress bar where stderr is not a terminal: shows nothing (rich.progress is not imported)."""

    def __enter__(self) -> _Unseen:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: float | None = None) -> int:
        return 0

    def advance(self, task: int, advance: float = 1) -> None:
        return None

    def update(self, task: int, total: float | None = None) -> None:
        return None


def _progress() -> Any:
    if not err_console.is_terminal:
        return _Unseen()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=True,
    )


def run_with_console(request: CompareRequest, host: Any, fail_on: str = "never") -> int:
    """Run a compare with a progress bar, print the summary and the analyses, return the exit code."""
    tensor_log = bool(request.options.get("tensor_log"))
    with _progress() as progress:
        jobs_task = progress.add_task("jobs", total=None)

        def factory(label: str, total: int) -> Callable[[int], None]:
            task = progress.add_task(label.strip() or "compare", total=total)
            return lambda n: progress.advance(task, n)

        def done(outcome: JobOutcome) -> None:
            progress.advance(jobs_task, 1)

        def planned(count: int) -> None:
            progress.update(jobs_task, total=count)

        run = run_compare(request, host, keep=tensor_log, progress=factory, on_outcome=done, on_plan=planned)
    if tensor_log:
        print_tensor_log(run.outcomes)
    code = report(run.outcomes, request, fail_on)
    render_analyses(run)
    return code


def render_analyses(run: CompareRun) -> None:
    """Print what every analysis shows, in order (text soft-wrapped, panels as drawn)."""
    text = Console(highlight=False, soft_wrap=True, emoji=False)
    boxes = Console(highlight=False, emoji=False)
    for analysis in run.analyses:
        for item in analysis.shown:
            (text if isinstance(item, (str, Text)) else boxes).print(item)


def print_tensor_log(outcomes: list[JobOutcome]) -> None:
    """One line per row: name, every metric and the messages (``-tensor_log``)."""
    for outcome in outcomes:
        result = outcome.result
        if result is None or result.mode.name != "tensor":
            continue
        names = result.columns[8:14]
        for record in result.records:
            metrics = ", ".join(f"{n} {v}" for n, v in zip(names, record.metrics))
            print(f"[{record.name}] Compare result: {metrics}, {' '.join(record.notes + record.messages)}")


def report(outcomes: list[JobOutcome], request: CompareRequest, fail_on: str) -> int:
    """Print the summary table and errors; return 0, 1 (gated by ``fail_on``) or 2 (bad input)."""
    total = Summary()
    files = []
    problems: list[str] = []
    failed = [o for o in outcomes if o.error]
    for outcome in outcomes:
        total.add(outcome.summary)
        problems.extend(outcome.problems)
    for outcome in outcomes:
        files.extend(outcome.summary.files)
    out = Console(highlight=False, soft_wrap=True, emoji=False)  # a ":name:" in a path or an entry stays as it is
    if total.rows:
        table = Table(title="probe compare", show_header=True)
        table.add_column("job")
        for column in ("rows", "pass", "warning", "error", "not compared", "unmatched", "golden only"):
            table.add_column(column, justify="right")
        shown = [(o.label, o.summary) for o in outcomes if not o.error]
        if len(shown) > 1:
            shown.append(("total", total))
        for label, s in shown:
            table.add_row(
                label, str(s.rows), str(s.passed), f"[yellow]{s.warnings}[/yellow]",
                f"[red]{s.errors}[/red]", str(s.not_compared), str(s.unmatched), str(s.golden_only),
            )
        out.print(table)
        if total.first_error:
            job = total.first_error_job
            where = f" ({job})" if job and not job.endswith(".json") else ""
            out.print(f"first error: [bold]{total.first_error}[/bold]{where} [dim](first row over msProbe's "
                      f"thresholds; the diagnosis below ranks the suspects)[/dim]")
        for path in files:
            out.print(f"report: {path}")
    for outcome in failed:
        err_console.print(f"probe: error: {outcome.label}: {outcome.error}", highlight=False, soft_wrap=True)
    if problems:
        err_console.print(
            f"probe: error: {len(problems)} tensor file(s) could not be read; first: {problems[0]}",
            highlight=False, soft_wrap=True,
        )
    if failed or problems:
        return max([o.exit_code for o in failed] + [InputError.exit_code if problems else 0])
    if not total.rows:
        err_console.print("probe: error: nothing was compared (no rows in the dumps)", highlight=False)
        return InputError.exit_code
    return fail_on_code(total, fail_on)


def fail_on_code(total: Summary, fail_on: str) -> int:
    """``--fail-on``: 1 (with one line saying why) when rows are at least that bad, or not compared."""
    if fail_on == "never":
        return 0
    reasons = [f"{total.errors} error row(s)"] if total.errors else []
    if fail_on == "warning" and total.warnings:
        reasons.append(f"{total.warnings} warning row(s)")
    if total.not_compared:
        reasons.append(f"{total.not_compared} row(s) not compared")
    if not reasons:
        return 0
    err_console.print(f"probe: --fail-on {fail_on}: exit 1 because of {', '.join(reasons)}",
                      highlight=False, soft_wrap=True)
    return 1
