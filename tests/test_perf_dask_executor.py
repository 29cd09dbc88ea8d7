"""``--executor dask``: rank jobs run on a dask cluster and give the same reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from probe.pipeline import compare

DUMPS = Path(__file__).parent / "data" / "pytorch" / "multirank_cnn"


def _rows(run) -> dict[str, list[dict]]:
    return {r.label: r.as_dicts() for r in run.results}


def test_dask_local_cluster_gives_the_same_results_as_local_processes(tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    local = compare(DUMPS / "target", DUMPS / "golden", tmp_path / "local", jobs=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = compare(DUMPS / "target", DUMPS / "golden", tmp_path / "dask", jobs=2,
                         executor="dask", scheduler=cluster.scheduler_address)
    assert len(remote) == len(local) > 1  # one job per rank
    assert _rows(remote) == _rows(local)
    written = sorted(p.name.rsplit("_", 1)[0] for p in (tmp_path / "dask").rglob("*.csv"))
    assert written == sorted(p.name.rsplit("_", 1)[0] for p in (tmp_path / "local").rglob("*.csv"))
    assert len(written) == len(local)


def test_unknown_executor_is_refused(tmp_path: Path) -> None:
    from probe.errors import InputError

    with pytest.raises(InputError, match="unknown executor"):
        compare(DUMPS / "target", DUMPS / "golden", tmp_path, executor="slurm")


TENSOR = Path(__file__).parent / "data" / "pytorch" / "tensor_mix_cnn"


def test_one_rank_split_by_row_ranges_over_a_dask_cluster_writes_the_same_bytes(tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    target = next((TENSOR / "target").rglob("dump.json"))
    golden = TENSOR / "golden" / target.relative_to(TENSOR / "target")
    serial = compare(target, golden, tmp_path / "serial", jobs=1, analyze=False)
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream:
            split = compare(target, golden, tmp_path / "dask", jobs=3, analyze=False,
                            executor="dask", scheduler=cluster.scheduler_address)
    assert len(split) == 1 and len(serial[0]) > 20
    ranges = [task for task in stream.data if "compute_chunk" in task["key"]]
    assert len(ranges) >= 3  # one rank, several row ranges
    assert len({task["worker"] for task in ranges}) >= 2  # on more than one worker
    (serial_csv,) = (tmp_path / "serial").rglob("*.csv")
    (split_csv,) = (tmp_path / "dask").rglob("*.csv")
    assert split_csv.read_bytes() == serial_csv.read_bytes()
