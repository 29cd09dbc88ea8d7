"""Registers the built-in exporters (CSV, xlsx, JSON); the classes live in :mod:`probe.exporters`."""

from __future__ import annotations

from probe.hookspecs import hookimpl


@hookimpl(trylast=True)
def probe_register_exporters(register) -> None:
    from probe.exporters import CsvExporter, JsonExporter, XlsxExporter

    register.add("csv", CsvExporter())
    register.add("xlsx", XlsxExporter())
    register.add("json", JsonExporter())
