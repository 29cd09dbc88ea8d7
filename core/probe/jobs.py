"""A compare request and the jobs it is split into (one per rank / step / kernel dir)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from probe.plugins import Host
    from probe.result import CompareResult


@dataclass
class CompareRequest:
    """Everything ``probe compare`` was asked to do, as plain data.

    ``options`` holds every compare option by its ``dest`` name, including those added by
    plugins through ``probe_add_compare_options`` (e.g. ``fuzzy_match``, ``data_mapping``,
    ``rank``, ``step``).
    """

    target: Path
    golden: Path
    output_dir: Path | None = None
    framework: str | None = None
    formats: tuple[str, ...] = ("csv",)
    jobs: int = 1
    options: dict[str, Any] = field(default_factory=dict)

    def option(self, name: str, default: Any = None) -> Any:
        """An option value, or ``default`` when it was not given."""
        value = self.options.get(name)
        return default if value is None else value


@runtime_checkable
class CompareJob(Protocol):
    """One independent unit of comparison; must be picklable (it may run in a worker)."""

    label: str
    """Short name shown in progress bars and logs (``rank0``, ``step1/rank3``, ``dump.json``)."""

    output_stem: str
    """File name without timestamp and suffix, e.g. ``compare_result_rank0``."""

    output_subdir: str
    """Sub-folder of the output dir for this job's files (``""`` for none)."""

    def run(self, host: Host, request: CompareRequest, progress: Any = None) -> CompareResult:
        """Compare and return the result; ``progress`` is a callable taking an advance count."""


@dataclass
class DumpPairJob:
    """Compare one target dump file with one golden dump file (the built-in job)."""

    label: str
    target_file: Path
    golden_file: Path
    output_stem: str
    output_subdir: str = ""
    rank: int | None = None

    def run(self, host: Host, request: CompareRequest, progress: Any = None) -> CompareResult:
        from probe.pipeline import compare_dump_pair

        return compare_dump_pair(self, host, request, progress)
