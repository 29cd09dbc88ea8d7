"""Reports of every fixture compare command, kept as digests to catch any byte changed.

``python tests/report_snapshots.py`` (re)writes ``tests/data/report_digests.json``: for every
fixture compare command, the exit code and the SHA-256 of every file written (an xlsx by
its members, whose zip dates are the time of writing). Timestamps in file names are replaced
by ``TS``. ``test_report_snapshots.py`` runs the same commands and compares the digests, so
a report that differs in one byte fails. Run this script on the commit before a change to
see the old files (``--keep DIR``).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

DATA = Path(__file__).parent / "data"
DIGESTS = DATA / "report_digests.json"
ROOT = Path(__file__).resolve().parent.parent
_STAMP = re.compile(r"_\d{14}(?:_\d+)?(?=[._])")


def snapshot_cases() -> Iterator[tuple[Path, str, list[str]]]:
    """``(case dir, label, compare argv)`` for every successful compare of every fixture case."""
    for case in sorted(p for p in (DATA / "pytorch").iterdir() if p.is_dir()):
        meta = json.loads((case / "case.json").read_text())
        for cmd in meta.get("commands", []):
            argv = shlex.split(cmd["command"])
            if argv[1] == "compare" and cmd["exit_code"] == 0 and cmd["outputs"]:
                yield case, cmd["label"], argv[2:]
    for case in sorted(p for p in (DATA / "mindspore").iterdir() if p.is_dir()):
        meta = json.loads((case / "case.json").read_text())
        for cmd in meta["compare"]:
            argv = shlex.split(cmd["command"])[2:]
            yield case, argv[argv.index("-o") + 1].rsplit("/", 1)[-1], argv


def probe_argv(argv: list[str], out: Path) -> list[str]:
    """The fixture command with ``-o out``, one process, and JSON beside CSV/xlsx."""
    argv = list(argv)
    argv[argv.index("-o") + 1] = str(out)
    formats = "xlsx,json" if "--xlsx" in argv else "csv,json"
    argv = [a for a in argv if a != "--xlsx"]
    return ["compare", *argv, "-j", "1", "--format", formats]


def collect(out: Path) -> dict[str, str]:
    """Digest of every file under ``out`` by relative path, timestamps in names replaced by ``TS``.

    A name met twice once normalized (a report and a ``-da`` file written in different seconds,
    or the ``_1`` a writer adds in the same second) is numbered ``#2``... in writing order.
    """
    files: dict[str, str] = {}
    paths = [p for p in out.rglob("*") if p.is_file()]
    keyed = sorted((_STAMP.sub("_TS", p.relative_to(out).as_posix()), p.stat().st_mtime_ns, p.name, p) for p in paths)
    for key, _, _, path in keyed:
        name, count = key, 1
        while name in files:
            count += 1
            name = f"{key}#{count}"
        files[name] = digest(path)
    return files


def portable(data: bytes) -> bytes:
    """``data`` with this checkout's absolute path replaced by ``<repo>`` (kernel reports name
    their files by absolute path, which differs between checkouts)."""
    return data.replace(str(ROOT).encode(), b"<repo>")


def digest(path: Path) -> str:
    """SHA-256 of a file; of an xlsx, of its member names and contents (not the zip dates)."""
    sha = hashlib.sha256()
    if path.suffix == ".xlsx":
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                sha.update(info.filename.encode() + b"\0" + portable(archive.read(info)) + b"\0")
    else:
        sha.update(portable(path.read_bytes()))
    return sha.hexdigest()


def run_all(keep: Path | None = None) -> dict[str, dict[str, str]]:
    """Run every fixture command; ``{case/label: {file: digest, "exit_code": code}}``."""
    import os
    import tempfile

    from probe.cli import main as probe_main

    here = os.getcwd()
    digests: dict[str, dict[str, str]] = {}
    for case, label, argv in snapshot_cases():
        key = f"{case.parent.name}/{case.name}/{label}"
        with tempfile.TemporaryDirectory() as tmp:
            out = keep / key if keep else Path(tmp) / "out"
            os.chdir(case)
            try:
                code = probe_main(probe_argv(argv, out))
            finally:
                os.chdir(here)
            digests[key] = {"exit_code": str(code), **collect(out)}
    return digests


def main(argv: list[str]) -> int:
    keep = Path(argv[argv.index("--keep") + 1]) if "--keep" in argv else None
    DIGESTS.write_text(json.dumps(run_all(keep), indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
