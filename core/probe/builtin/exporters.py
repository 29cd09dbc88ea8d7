"""Registers the built-in exporters (CSV, xlsx, JSON); the classes live in :mod:`probe.exporters`
(with their streaming seam in :mod:`probe.export_stream`)."""

from __future__ import annotations

from probe.hookspecs import hookimpl


@hookimpl(trylast=True)
def probe_register_exporters(register) -> None:
    from probe.export_stream import StreamingCsvExporter, StreamingJsonExporter, StreamingXlsxExporter

    register.add("csv", StreamingCsvExporter())
    register.add("xlsx", StreamingXlsxExporter())
    register.add("json", StreamingJsonExporter())
