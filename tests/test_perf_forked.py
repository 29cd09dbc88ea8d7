"""Work done on the second core (forked children) must give exactly what serial work gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from probe import dumps, runtime
from probe import exporters
from probe.dumps import load_dump, load_pair, pack_dump, unpack_dump
from probe.errors import InputError
from probe.pipeline import compare
from probe.formats.msprobe.reader import MsprobeJsonReader

READER = MsprobeJsonReader()

CASES = Path(__file__).parent / "data" / "pytorch"
ROW_ATTRS = ("name", "entry", "state", "dtype", "shape", "stats", "requires_grad", "md5", "data_name", "extra", "key")

needs_fork = pytest.mark.skipif(not runtime.allowed(), reason="forking is not available here")


def _fail(path: str) -> None:
    raise InputError("is broken", Path(path))


def test_forked_call_returns_its_value() -> None:
    assert runtime.start(sorted, [3, 1, 2]).result() == [1, 2, 3]


def test_forked_error_is_raised_in_the_parent() -> None:
    task = runtime.start(_fail, "x.json")
    with pytest.raises(InputError, match="x.json: is broken"):
        task.result()


def test_without_fork_the_call_runs_when_asked(monkeypatch) -> None:
    monkeypatch.setenv("PROBE_FORK", "0")
    assert not runtime.allowed()
    calls = []
    task = runtime.start(calls.append, 1)
    assert calls == []
    task.result()
    assert calls == [1]


def _rows(dump) -> list[tuple]:
    return [tuple(getattr(row, a) for a in ROW_ATTRS) for row in dump.rows]


@pytest.mark.parametrize("case", ["stat_mix_tfm", "md5_mix_tfm"])
def test_packed_dump_round_trips(case: str) -> None:
    path = CASES / case / "golden" / "step0" / "rank0" / "dump.json"
    dump = load_dump(path, READER, with_stack=False)
    back = unpack_dump(pack_dump(dump))
    assert _rows(back) == _rows(dump)
    assert (back.info, back.has_md5, back.rows.has_md5, back.entry_count, back.skipped_entries) == (
        dump.info, dump.has_md5, dump.rows.has_md5, dump.entry_count, dump.skipped_entries)
    assert [row.key for row in back.rows] == [row.key for row in dump.rows]  # keyed by the reader
    assert back.rows.keyed and dump.rows.keyed


def test_unpacked_golden_shares_the_targets_names() -> None:
    target = load_dump(CASES / "stat_mix_tfm" / "target" / "step0" / "rank0" / "dump.json", READER)
    dump = load_dump(CASES / "stat_mix_tfm" / "golden" / "step0" / "rank0" / "dump.json", READER, with_stack=False)
    back = unpack_dump(pack_dump(dump), target)
    assert _rows(back) == _rows(dump)
    own = {id(getattr(row, a)) for row in target.rows for a in ("name", "entry")}
    names = {row.name for row in target.rows}
    shared = [row for row in back.rows if row.name in names]
    assert shared and all(id(row.name) in own and id(row.entry) in own for row in shared)
    assert all(row.key is row.name for row in shared if row.key == row.name)


@needs_fork
def test_golden_read_in_a_child_equals_serial_read(monkeypatch) -> None:
    monkeypatch.setattr(dumps, "FORK_MIN_BYTES", 0)
    rank = CASES / "stat_mix_tfm" / "{}" / "step0" / "rank0" / "dump.json"
    target, golden = load_pair(Path(str(rank).format("target")), Path(str(rank).format("golden")), READER, READER)
    assert _rows(target) == _rows(load_dump(Path(str(rank).format("target")), READER))
    assert _rows(golden) == _rows(load_dump(Path(str(rank).format("golden")), READER, with_stack=False))


@needs_fork
def test_golden_error_from_the_child_names_the_file(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(dumps, "FORK_MIN_BYTES", 0)
    bad = tmp_path / "dump.json"
    bad.write_text('{"task": "statistics", "data": []}')
    target = CASES / "stat_mix_tfm" / "target" / "step0" / "rank0" / "dump.json"
    with pytest.raises(InputError, match="'data' is not an object") as info:
        load_pair(target, bad, READER, READER)
    assert info.value.path == str(bad)


@needs_fork
@pytest.mark.parametrize("case", ["stat_mix_tfm", "md5_mix_tfm"])
def test_csv_written_by_two_processes_equals_serial_csv(case: str, monkeypatch, tmp_path: Path) -> None:
    side = CASES / case / "{}" / "step0"
    args = (str(side).format("target"), str(side).format("golden"))
    monkeypatch.setenv("PROBE_FORK", "0")
    serial = compare(*args, tmp_path / "serial", analyze=False).files
    monkeypatch.setenv("PROBE_FORK", "1")
    monkeypatch.setattr(exporters, "SPLIT_MIN_ROWS", 1)
    monkeypatch.setattr(dumps, "FORK_MIN_BYTES", 0)
    split = compare(*args, tmp_path / "split", analyze=False).files
    assert len(serial) == len(split) == 1
    assert split[0].read_bytes() == serial[0].read_bytes()
    assert [p.name for p in (tmp_path / "split").iterdir()] == [split[0].name]  # no temporary file left


def _sleep_then_fail() -> None:
    import time

    time.sleep(30)
    raise AssertionError("not reached")


@needs_fork
def test_cancel_stops_the_child_at_once() -> None:
    import time

    task = runtime.start(_sleep_then_fail)
    start = time.monotonic()
    task.cancel()
    assert time.monotonic() - start < 5


@needs_fork
def test_cancel_after_a_failed_result_does_nothing() -> None:
    task = runtime.start(_fail, "y.json")
    with pytest.raises(InputError):
        task.result()
    task.cancel()  # the child is reaped: no signal, no error


def _allowed_in_child(queue) -> None:
    queue.put(runtime.allowed())


def test_a_multiprocessing_child_does_not_fork() -> None:
    """``allowed`` reads multiprocessing only where it is imported; a child it started still says no."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_allowed_in_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=60) is False
    finally:
        child.join(60)
