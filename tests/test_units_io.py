"""Atomic output files: content lands only on success, with normal permissions."""

from __future__ import annotations

import os
import stat

import pytest

from probe.io import atomic_path, atomic_write, open_temp, temp_file


@pytest.fixture()
def umask_027():
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_atomic_write_honours_umask(tmp_path, umask_027):
    out = tmp_path / "report.csv"
    with atomic_write(out, "w") as handle:
        handle.write("a,b\n")
    assert out.read_text() == "a,b\n"
    assert _mode(out) == 0o640  # 0666 minus umask 027, not mkstemp's 0600


def test_atomic_path_honours_default_umask(tmp_path):
    old = os.umask(0o022)
    try:
        out = tmp_path / "report.xlsx"
        with atomic_path(out) as tmp:
            tmp.write_bytes(b"x")
        assert _mode(out) == 0o644
    finally:
        os.umask(old)


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    out = tmp_path / "report.csv"
    with pytest.raises(RuntimeError):
        with atomic_write(out, "w") as handle:
            handle.write("partial")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_temporaries_are_opened_without_truncating(tmp_path, monkeypatch):
    """A temporary is new and empty: opened without O_TRUNC, which makes ext4 write it back at close."""
    tmp = temp_file(tmp_path / "report.csv")
    tmp.write_bytes(b"abc")
    with open_temp(tmp, "wb") as handle:
        handle.write(b"X")
    assert tmp.read_bytes() == b"Xbc"
    flags: list[int] = []
    real = os.open
    monkeypatch.setattr(os, "open", lambda path, flag, *rest: flags.append(flag) or real(path, flag, *rest))
    out = atomic_write(tmp_path / "x.csv", "w", encoding="utf-8")
    with out as handle:
        handle.write("a")
    assert flags[-1] & os.O_WRONLY and not flags[-1] & os.O_TRUNC
    assert (tmp_path / "x.csv").read_text() == "a"


def test_claim_without_hard_links_reserves_the_name(tmp_path, monkeypatch):
    """On a file system without hard links a name is reserved with O_EXCL; nothing is replaced."""
    import errno
    import os

    from probe.io import claim

    def no_links(src, dst):
        raise OSError(errno.EPERM, "hard links not supported", str(dst))

    monkeypatch.setattr(os, "link", no_links)
    taken = tmp_path / "report.csv"
    taken.write_text("old")
    tmp = tmp_path / ".probe-tmp.report.csv"
    tmp.write_text("new")
    got = claim(tmp, taken)
    assert got == tmp_path / "report_1.csv" and got.read_text() == "new"
    assert taken.read_text() == "old" and not tmp.exists()


def test_safe_csv_writer_never_writes_a_bare_cr_or_a_formula():
    """Every CSV of probe goes through one writer that makes cells safe itself."""
    import csv
    import io

    from probe.cells import SafeCsvWriter

    out = io.StringIO()
    SafeCsvWriter(out).writerows([["a\rb", "=HYPERLINK(1)", 1.5], ["\t=cmd", "-1.5", None]])
    text = out.getvalue()
    assert "\r" not in text
    rows = list(csv.reader(io.StringIO(text)))
    assert rows == [["a\nb", "'=HYPERLINK(1)", "1.5"], ["'\t=cmd", "-1.5", ""]]


def test_a_full_disk_is_told_from_os_and_sqlite3_errors():
    """sqlite3 is not imported at start-up; its "disk is full" still reads as no space."""
    import errno
    import sqlite3

    from probe.io import no_space

    assert no_space(OSError(errno.ENOSPC, "full"))
    assert no_space(sqlite3.OperationalError("database or disk is full"))
    assert not no_space(sqlite3.OperationalError("locked"))
    assert not no_space(ValueError("disk is full"))
