"""Running compare jobs on a distributed engine (``--executor dask``), beyond one machine.

probe has no scheduler of its own: jobs (one per rank / step) are handed to an existing
dask cluster, each worker runs the same :func:`probe.pipeline.run_job` as a local worker
process would and writes its report files itself, so the output directory must be on a
file system every worker sees. Install with ``pip install probe[dask]``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

from probe.errors import InputError

EXECUTORS = ("process", "dask")


def dask_outcomes(jobs: Sequence[Any], request: Any, keep: bool, address: str | None) -> Iterator[Any]:
    """Run ``jobs`` on a dask cluster and yield their outcomes in job order.

    ``address`` is the scheduler (``tcp://host:8786``); without one, ``DASK_SCHEDULER_ADDRESS``
    is used, and failing that a local cluster of ``request.jobs`` worker processes.
    """
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise InputError("--executor dask needs dask: pip install 'probe[dask]'") from None
    from probe.pipeline import run_job_in_worker

    address = address or os.environ.get("DASK_SCHEDULER_ADDRESS")
    cluster = None
    if address:
        client = Client(address)
    else:
        cluster = LocalCluster(n_workers=max(1, request.jobs), threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        futures = [client.submit(run_job_in_worker, job, request, keep, pure=False) for job in jobs]
        for future in futures:
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
