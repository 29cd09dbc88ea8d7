"""Each stage alone: plain data in, plain data out (``probe.stages``, ``probe.judge``, ``probe.runtime``)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from probe import judge, runtime, stages
from probe.errors import InputError
from probe.model import KeyMap, PairPlan
from probe.plugins import Host
from probe.result import UNMATCHED

CASE = Path(__file__).parent / "data" / "pytorch" / "fuzzy_match_tfm"
TARGET = CASE / "target" / "step0" / "rank0" / "dump.json"
GOLDEN = CASE / "golden" / "step0" / "rank0" / "dump.json"


@pytest.fixture(scope="module")
def registries() -> Host:
    return Host()


def _read(registries):
    return stages.read(PairPlan("t", TARGET, GOLDEN), registries)


def test_read_gives_rows_and_the_target_stack(registries) -> None:
    target, golden = _read(registries)
    assert target.rows and golden.rows
    assert target.info.reader == "msprobe-json" and target.stack is not None and golden.stack is None


def test_read_by_name_and_unknown_names(registries, tmp_path: Path) -> None:
    assert stages.pick_reader(TARGET, registries, "msprobe-json").name == "msprobe-json"
    with pytest.raises(InputError, match="unknown reader 'nope'"):
        stages.pick_reader(TARGET, registries, "nope")
    with pytest.raises(InputError, match="not a dump file any reader understands"):
        stages.pick_reader(tmp_path / "x.bin", registries)


def _dump(path: str, names: list[str]):
    from probe.model import DumpInfo, FlatDump, Row

    rows = [Row(n, n.rsplit(".output", 1)[0], "output", "torch.float32", "[2]", (1.0, 0.0, 0.5, 1.0), "False",
                None, "-1") for n in names]
    return FlatDump(DumpInfo(Path(path), "pytorch", "statistics"), rows)


def test_pair_exact_and_fuzzy(registries) -> None:
    target = ["Functional.relu.3.forward.output.0", "Functional.gelu.0.forward.output.0"]
    golden = ["Functional.relu.5.forward.output.0", "Functional.gelu.0.forward.output.0"]
    exact = stages.pair(_dump("t", target), _dump("g", golden), registries, {})
    fuzzy = stages.pair(_dump("t", target), _dump("g", golden), registries, {"fuzzy_match": True})
    assert [p.golden is not None for p in exact.pairs] == [False, True] and exact.golden_only == 1
    assert [p.golden.name for p in fuzzy.pairs] == golden and fuzzy.golden_only == 0
    assert [p.fuzzy for p in fuzzy.pairs] == [True, False]


def test_pair_reads_real_dumps(registries) -> None:
    target, golden = _read(registries)
    pairing = stages.pair(target, golden, registries, {})
    assert len(pairing.pairs) >= len(target.rows) and any(p.golden is not None for p in pairing.pairs)


def test_pairer_choice(registries) -> None:
    assert stages.choose_pairer(registries, {}, None).name == "exact"
    assert stages.choose_pairer(registries, {"fuzzy_match": True}, None).name == "fuzzy"
    data_map = KeyMap(target_key=lambda row: None, left_join=True)
    assert stages.choose_pairer(registries, {"fuzzy_match": True}, data_map).name == "exact"
    assert stages.choose_pairer(registries, {}, None, ("fuzzy",)).name == "fuzzy"


def test_composed_key_maps_first_answer_wins() -> None:
    first = KeyMap(target_key=lambda row: "a" if row == 1 else None)
    second = KeyMap(target_key=lambda row: "b", left_join=True, renumber_target=False)
    both = stages.compose_key_maps([first, second])
    assert (both.target_key(1), both.target_key(2)) == ("a", "b")
    assert both.left_join and not both.renumber_target
    assert stages.compose_key_maps([]) is None


def test_mode_choice_and_its_errors(registries) -> None:
    target, golden = _read(registries)
    assert stages.choose_mode(registries, target, golden, None).name == "statistics"
    golden.info = golden.info.__class__(**{**golden.info.__dict__, "task": "tensor"})
    with pytest.raises(InputError, match="dump tasks differ"):
        stages.choose_mode(registries, target, golden, None)


def test_measure_judge_export(registries, tmp_path: Path) -> None:
    target, golden = _read(registries)
    result = stages.compare_dumps(target, golden, registries, {"fuzzy_match": True}, "t")
    verdicts = {r.verdict for r in result.records}
    assert verdicts <= {"pass", "warning", "error", UNMATCHED} and "pass" in verdicts
    assert result.records[0].extra_value("stack") is not None
    from probe.model import CompareRequest

    request = CompareRequest(TARGET, GOLDEN, output_dir=tmp_path, formats=("csv", "json"))
    files = stages.export(result, registries, request, "20260101000000")
    assert sorted(p.suffix for p in files) == [".csv", ".json"]


def test_judge_worst_and_precision() -> None:
    assert judge.worst([]) == "pass"
    assert judge.worst(["pass", UNMATCHED, "warning"]) == "warning"
    assert judge.precision_index(["pass", "error"]) == 1.0
    assert judge.precision_index(["warning"]) == 0.5


def _double(chunk: list[int], factor: int) -> list[int]:
    return [x * factor for x in chunk]


def _fail_on_three(chunk: list[int]) -> list[int]:
    if 3 in chunk:
        raise ValueError("three")
    return chunk


def test_runtime_parallel_map_raises_a_worker_error() -> None:
    with pytest.raises(ValueError, match="three"):
        list(runtime.parallel_map(_fail_on_three, [[1], [2], [3], [4]], workers=2))
    with pytest.raises(ValueError, match="three"):
        list(runtime.parallel_map(_fail_on_three, iter([[1], [3], [5]]), workers=2))


def test_runtime_keeps_order_serial_and_in_processes() -> None:
    chunks = [[1, 2], [3], [4, 5, 6]]
    assert list(runtime.parallel_map(_double, chunks, 2, workers=1)) == [[2, 4], [6], [8, 10, 12]]
    assert list(runtime.parallel_map(_double, chunks, 3, workers=2)) == [[3, 6], [9], [12, 15, 18]]
    made: list[int] = []

    def lazily() -> Any:  # an iterator: chunks made while the workers already run
        for chunk in chunks:
            made.append(len(chunk))
            yield chunk

    assert list(runtime.parallel_map(_double, lazily(), 4, workers=2)) == [[4, 8], [12], [16, 20, 24]]
    assert made == [2, 1, 3]
    assert list(runtime.parallel_map(_double, iter(chunks), 1, workers=1)) == chunks
    assert list(runtime.parallel_map(_double, iter([]), 1, workers=2)) == []
    assert list(runtime.run_each(_double, chunks, 10, workers=2)) == [[10, 20], [30], [40, 50, 60]]
    local = list(runtime.run_each(_double, chunks, 1, local=lambda chunk: ["here"]))
    assert local == [["here"]] * 3
    with pytest.raises(InputError, match="unknown executor"):
        list(runtime.run_each(_double, chunks, 1, executor="ray"))


def test_gc_off_restores_the_collector() -> None:
    assert gc.isenabled()
    with runtime.gc_off():
        assert not gc.isenabled()
    assert gc.isenabled()
