"""Registers the msProbe JSON dump reader and its framework detection (:mod:`probe.formats.msprobe`)."""

from __future__ import annotations

from probe.formats.msprobe.reader import MsprobeJsonReader, detect_framework
from probe.hookspecs import hookimpl
from probe.registry import Registry


@hookimpl(trylast=True)
def probe_register_readers(register: Registry) -> None:
    register.add(MsprobeJsonReader.name, MsprobeJsonReader())


@hookimpl(trylast=True)
def probe_detect_framework(path: str) -> str | None:
    """Read the ``framework`` key near the top of a dump.json (or the rank dirs below ``path``)."""
    return detect_framework(path)
