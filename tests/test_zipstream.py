"""The streamed zip writer: archives that ``zipfile`` reads back, with zlib or ISA-L deflating."""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import pytest

import probe.zipstream as zipstream
from probe.zipstream import ZipStream

_DEFLATERS = [zlib]
try:
    from isal import isal_zlib

    _DEFLATERS.append(isal_zlib)
except ImportError:  # the optional wheel is absent
    pass


@pytest.mark.parametrize("deflater", _DEFLATERS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("level", [0, 1, 6])
def test_members_read_back(tmp_path: Path, monkeypatch, deflater, level: int) -> None:
    monkeypatch.setattr(zipstream, "_deflate", deflater)
    big = [bytes(range(256)) * 4000, b"<row>" * 100_000, b""]
    path = tmp_path / "a.zip"
    with ZipStream(path, level) as archive:
        archive.add("small.xml", b"<a/>")
        with archive.member("big.xml") as out:
            for chunk in big:
                out.write(chunk)
    with zipfile.ZipFile(path) as book:
        assert book.testzip() is None  # every CRC checks
        assert book.read("small.xml") == b"<a/>"
        assert book.read("big.xml") == b"".join(big)
