"""A produced .vis.db loads in TensorBoard with the tb-graph-ascend plugin (real HTTP endpoints)."""

from __future__ import annotations

import importlib.util
from importlib import metadata
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from graph_helpers import run

pytestmark = pytest.mark.slow


def _missing() -> str | None:
    try:
        found = importlib.util.find_spec("tensorboard") is not None
    except ImportError:
        found = False
    if not found:
        return "tensorboard not installed (pip install -r tests/requirements-graph.txt)"
    try:
        metadata.distribution("tb-graph-ascend")
    except metadata.PackageNotFoundError:
        return "tb-graph-ascend not installed (pip install -r tests/requirements-graph.txt)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _call(base: str, endpoint: str, body: dict | None = None, query: str = "", post: bool = True):
    data = json.dumps(body).encode() if body is not None else (b"" if post else None)
    request = urllib.request.Request(f"{base}/{endpoint}{query}", data=data, method="POST" if post else "GET",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        raw = response.read().decode()
    try:
        answer = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    if isinstance(answer, dict) and "Method Not Allowed" in str(answer.get("error", "")):
        # plugin releases differ on GET/POST for some endpoints: retry with the other method
        return _call(base, endpoint, body if post else None, query, post=not post) if body is None else answer
    return answer


@pytest.fixture()
def tensorboard(tmp_path):
    reason = _missing()
    if reason:
        pytest.skip(reason)
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    port = _free_port()
    log = open(tmp_path / "tensorboard.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/data/plugin/graph_ascend"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/data/plugins_listing", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.close()
                    pytest.fail("tensorboard did not start: " + (tmp_path / "tensorboard.log").read_text()[-2000:])
                time.sleep(0.3)
        yield logdir, base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _load(base: str, run_name: str, tag: str, side_types: tuple[str, ...]) -> dict:
    meta_dir = _call(base, "load_meta_dir")
    assert "data" in meta_dir, meta_dir
    assert meta_dir["data"][run_name] == {"type": "db", "tags": [tag]}
    loaded = _call(base, "loadGraphData", query=f"?run={run_name}&tag={tag}&type=db&lang=en", post=False)
    # the plugin answers {"success": true}; some releases hand the dict to werkzeug as an
    # iterable, which sends its keys: "success"
    assert loaded == {"success": True} or loaded == "success", loaded
    meta = {"run": run_name, "tag": tag, "type": "db", "lang": "en", "microStep": -1, "rank": 0, "step": 0}
    config = _call(base, "loadGraphConfigInfo", {"metaData": meta})
    assert config["success"] is True, config
    roots = {}
    for side in side_types:
        expanded = _call(base, "changeNodeExpandState", {"metaData": meta, "nodeInfo": {"nodeName": "root", "nodeType": side}})
        assert expanded["success"] is True, expanded
        roots[side] = expanded["data"]
    return {"config": config["data"], "roots": roots, "meta": meta}


def test_compare_db_loads_in_tensorboard(tensorboard, tmp_path):
    logdir, base = tensorboard
    result = run(tmp_path / "out", "stat_target", "stat_golden", overflow_check=True)
    run_dir = logdir / "compare_run"
    run_dir.mkdir()
    shutil.copy(result.db, run_dir / result.db.name)
    tag = result.db.name[: -len(".vis.db")]
    loaded = _load(base, "compare_run", tag, ("NPU", "Bench"))
    config = loaded["config"]
    assert config["isSingleGraph"] is False
    assert config["task"] == "summary"
    assert config["ranks"] == [0] and config["steps"] == [0]
    npu = loaded["roots"]["NPU"]
    names = {node["name"].split("___", 1)[-1] for node in npu.values()}
    assert "DefaultModel" in names and "Module.conv.Conv2d.backward.0" in names
    # expanding a module through the plugin returns its children laid out
    expanded = _call(base, "changeNodeExpandState", {
        "metaData": loaded["meta"], "nodeInfo": {"nodeName": "Module.conv.Conv2d.backward.0", "nodeType": "NPU"}})
    assert expanded["success"] is True
    child_names = {node["name"].split("___", 1)[-1] for node in expanded["data"].values()}
    assert "Functional.conv2d.0.backward" in child_names
    conv = next(n for n in expanded["data"].values() if n["name"].endswith("Functional.conv2d.0.backward"))
    assert conv["precisionIndex"] == 0.5


def test_build_db_loads_in_tensorboard(tensorboard, tmp_path):
    logdir, base = tensorboard
    result = run(tmp_path / "out", "stat_target")
    run_dir = logdir / "build_run"
    run_dir.mkdir()
    shutil.copy(result.db, run_dir / result.db.name)
    loaded = _load(base, "build_run", result.db.name[: -len(".vis.db")], ("NPU",))
    assert loaded["config"]["isSingleGraph"] is True
    assert any(n["name"].endswith("DefaultModel") for n in loaded["roots"]["NPU"].values())
