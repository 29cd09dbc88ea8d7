"""The tensor metric paths give, bit for bit, what the straightforward numpy code gives."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis", reason="the property tests need hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from probe.errors import InputError  # noqa: E402
from probe.modes import tensor_metrics as tm  # noqa: E402
from probe.modes import tensor as tm_mode  # noqa: E402
from probe.modes.tensor import _Side, resolve_tensor_file  # noqa: E402

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))


def _reference_float32(n: np.ndarray, b: np.ndarray, messages: list[str]) -> tuple[Any, ...] | None:
    """The float32 path as it was before its buffers were reused (fresh arrays every step)."""
    n64 = n.astype(np.float64)
    b64 = b.astype(np.float64)
    nn = tm._dot(n64, n64)
    bb = tm._dot(b64, b64)
    if not (np.isfinite(nn) and np.isfinite(bb)):
        return None
    if n.size <= 1:
        cos: Any = tm.UNSUPPORTED
    else:
        norm_n, norm_b = float(np.sqrt(nn)), float(np.sqrt(bb))
        if norm_n <= tm.EPS64 and norm_b <= tm.EPS64:
            cos = 1.0
        elif norm_n <= tm.EPS64:
            messages.append(tm.MSG_COS_NPU_ZERO)
            cos = tm.NAN_TEXT
        elif norm_b <= tm.EPS64:
            messages.append(tm.MSG_COS_BENCH_ZERO)
            cos = tm.NAN_TEXT
        else:
            value = tm._dot(n64, b64) / (norm_n * norm_b)
            if np.isnan(value):
                cos = tm.NAN_TEXT
            else:
                value = round(value, 12)
                cos = round(value, 6) if value > 0.9999 else value
    diff = n64 - b64
    euc = float(np.sqrt(tm._dot(diff, diff)))
    max_abs = tm._round(max(float(diff.max()), -float(diff.min())))
    n, b = n.astype(np.float32), b.astype(np.float32)
    rel = tm.relative_errors(n, b) if (b == 0).any() else np.abs((n - b) / b)
    max_rel = tm._round(float(rel.max()))
    one = tm._round(float(np.count_nonzero(rel < 0.001)) / rel.size)
    five = tm._round(float(np.count_nonzero(rel < 0.005)) / rel.size)
    return (cos, euc, max_abs, max_rel, one, five)


def _same(a: Any, b: Any) -> bool:
    """Equal, and of one type (the report prints ``repr``): NaN equals NaN."""
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(type(x) is type(y) and (x == y or x != x and y != y) for x, y in zip(a, b))


def _pairs(dtype: Any) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    def build(args: tuple[int, int, float, int]) -> tuple[np.ndarray, np.ndarray]:
        size, seed, noise, zeros = args
        rng = np.random.default_rng(seed)
        n = (rng.standard_normal(size) * 10.0 ** rng.integers(-3, 4)).astype(dtype)
        b = (n.astype(np.float64) + noise * rng.standard_normal(size)).astype(dtype)
        if zeros:
            b[rng.integers(0, size, zeros)] = 0
        return n, b

    sizes = st.sampled_from([1, 2, 3, 7, 8, 9, 17, 1000, 4097, 65536, 70001])
    return st.tuples(sizes, st.integers(0, 2**32 - 1), st.sampled_from([0.0, 1e-6, 1e-3, 1.0]),
                     st.sampled_from([0, 0, 1, 5])).map(build)


@SETTINGS
@given(_pairs(np.float32) | _pairs(np.float16))
def test_float_path_equals_fresh_arrays(pair: tuple[np.ndarray, np.ndarray]) -> None:
    n, b = pair
    got_messages: list[str] = []
    want_messages: list[str] = []
    got = tm._compare_float32(n, b, got_messages)
    assert _same(got, _reference_float32(n, b, want_messages))
    assert got_messages == want_messages


def test_reused_buffers_do_not_leak_between_sizes() -> None:
    rng = np.random.default_rng(1)
    big = rng.standard_normal(5000).astype(np.float32)
    small = rng.standard_normal(10).astype(np.float32)
    first = tm._compare_float32(small, small + 1, [])
    tm._compare_float32(big, big * 2, [])
    assert tm._compare_float32(small, small + 1, []) == first


def test_tensors_past_the_reuse_limit_get_fresh_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tm, "REUSE_ELEMENTS", 16)
    rng = np.random.default_rng(2)
    n = rng.standard_normal(100).astype(np.float32)
    b = n + np.float32(0.01)
    assert _same(tm._compare_float32(n, b, []), _reference_float32(n, b, []))


def _general_with_blas(n: np.ndarray, b: np.ndarray) -> tuple[Any, ...]:
    """The general path's metrics computed with ``np.dot`` (BLAS), as before."""
    monkey = tm._exact_sums
    tm._exact_sums = lambda *args: False
    try:
        return tm.compare_arrays(n, b)
    finally:
        tm._exact_sums = monkey


def _integer_pair(dtype: str, size: int, rng: np.random.Generator, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Two random ``dtype`` arrays of ``size`` values within ``[-top, top]``."""
    if dtype == "bool":
        return rng.random(size) < 0.5, rng.random(size) < 0.5
    info = np.iinfo(dtype)
    low, high = max(info.min, -top), min(info.max, top)
    return (rng.integers(low, high, size, dtype=dtype, endpoint=True),
            rng.integers(low, high, size, dtype=dtype, endpoint=True))


@SETTINGS
@given(st.sampled_from(["bool", "int8", "int32", "int64", "uint8"]), st.integers(2, 30000),
       st.integers(0, 2**32 - 1), st.sampled_from([1, 100, 10**6, 2**40]))
def test_integer_tensors_use_exact_sums(dtype: str, size: int, seed: int, top: int) -> None:
    n, b = _integer_pair(dtype, size, np.random.default_rng(seed), top)
    got = tm.compare_arrays(n, b)
    want = _general_with_blas(n, b)
    assert got[1] == want[1] and _same(got[0], want[0])


def _relative_errors_by_where(n: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``relative_errors`` as first written (fresh arrays from ``np.where`` at every step)."""
    if not (np.issubdtype(n.dtype, np.floating) and np.issubdtype(b.dtype, np.floating)):
        n = n.astype(np.float64) if not np.issubdtype(n.dtype, np.floating) else n
        b = b.astype(np.float64) if not np.issubdtype(b.dtype, np.floating) else b
    dtype = np.result_type(n, b, np.float32)
    n, b = n.astype(dtype, copy=False), b.astype(dtype, copy=False)
    zero = b == 0
    if zero.any():
        eps = np.finfo(dtype).eps
        n, b = np.where(zero, n + eps, n), np.where(zero, b + eps, b)
    return np.abs((n - b) / b)


@SETTINGS
@given(st.sampled_from(["int64", "int8", "bool", "float16", "float32", "float64"]),
       st.sampled_from(["int64", "float32", "float64"]), st.integers(1, 3000), st.integers(0, 2**32 - 1),
       st.sampled_from([0.0, 0.1, 0.5]))
def test_relative_errors_equal_the_where_formula(left: str, right: str, size: int, seed: int, zeros: float) -> None:
    rng = np.random.default_rng(seed)
    n = (rng.standard_normal(size) * 100).astype(left)
    b = (rng.standard_normal(size) * 100).astype(right)
    b[rng.random(size) < zeros] = 0
    n_before, b_before = n.copy(), b.copy()
    with np.errstate(all="ignore"):
        got, want = tm.relative_errors(n, b), _relative_errors_by_where(n, b)
    assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(n, n_before) and np.array_equal(b, b_before)  # the inputs are left alone


@SETTINGS
@given(st.sampled_from(["bool", "int8", "uint8", "int32", "int64", "uint64"]), st.integers(1, 20000),
       st.integers(0, 2**32 - 1), st.sampled_from([1, 100, 10**6, 2**40, 2**62]), st.sampled_from([0.0, 0.01, 0.5]))
def test_integer_path_equals_the_general_path(dtype: str, size: int, seed: int, top: int, zeros: float) -> None:
    rng = np.random.default_rng(seed)
    n, b = _integer_pair(dtype, size, rng, top)
    if dtype != "bool":
        b[rng.random(size) < zeros] = 0
        if seed % 3 == 0:
            b[: size // 2] = n[: size // 2]  # equal halves: zero errors, exact cosines
    got_messages: list[str] = []
    want_messages: list[str] = []
    with np.errstate(all="ignore"):
        got = tm._compare_integers(n, b, got_messages)
        want = tm._compare_general(n, b, want_messages)
    assert _same(got, want) and got_messages == want_messages
    assert _same(tm.compare_arrays(n, b)[0], want)


@pytest.mark.parametrize("n, b", [([0, 0, 0], [0, 0, 0]), ([0, 0, 0], [1, 2, 3]), ([1, 2, 3], [0, 0, 0]),
                                  ([5], [7]), ([2**62, -(2**62), 3], [2**62, 0, -3])])
def test_integer_path_edges_equal_the_general_path(n: list[int], b: list[int]) -> None:
    left, right = np.array(n, dtype=np.int64), np.array(b, dtype=np.int64)
    got_messages: list[str] = []
    want_messages: list[str] = []
    with np.errstate(all="ignore"):
        assert _same(tm._compare_integers(left, right, got_messages), tm._compare_general(left, right, want_messages))
    assert got_messages == want_messages


def test_large_integers_keep_blas_sums() -> None:
    n = np.array([2**40, 3, 2**41], dtype=np.int64)
    n64 = n.astype(np.float64)
    assert not tm._exact_sums(n, n, n64, n64)
    small = np.array([1, 2, 3], dtype=np.int64)
    assert tm._exact_sums(small, small, small.astype(np.float64), small.astype(np.float64))
    floats = small.astype(np.float64)
    assert not tm._exact_sums(floats, floats, floats, floats)


def _resolve_by_walk(tensor_dir: Path, data_name: str) -> Path:
    """How tensor files were found before the plain-name shortcut (every component resolved)."""
    candidate = (tensor_dir / data_name).resolve()
    if os.path.isabs(data_name) or tensor_dir.resolve() not in candidate.parents:
        raise InputError(f"data_name {data_name!r} points outside its dump directory", tensor_dir)
    return candidate


def _outcome(func: Any, *args: Any) -> Any:
    try:
        return str(func(*args))
    except (InputError, ValueError, OSError) as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("name", ["x.pt", "missing.pt", "out.pt", "in.pt", "loop.pt", "..", ".", "sub/y.pt",
                                  "../x.pt", "sub/../x.pt", "sub", "a\\b.pt", " x.pt", "x.pt/", "/etc/passwd"])
def test_plain_names_resolve_as_before(tmp_path: Path, name: str) -> None:
    base = tmp_path / "real"
    tensors = base / "dump_tensor_data"
    (tensors / "sub").mkdir(parents=True)
    (tensors / "x.pt").write_bytes(b"x")
    (tensors / "sub" / "y.pt").write_bytes(b"y")
    (tmp_path / "secret.pt").write_bytes(b"s")
    (tensors / "out.pt").symlink_to(tmp_path / "secret.pt")
    (tensors / "in.pt").symlink_to(tensors / "x.pt")
    (tensors / "loop.pt").symlink_to(tensors / "loop.pt")
    (tmp_path / "link").symlink_to(base)  # the dump directory reached through a link
    for directory in (tensors, tmp_path / "link" / "dump_tensor_data"):
        if name == "loop.pt":  # the walk crashed on a link loop; now a one-line input error
            with pytest.raises(InputError, match="cannot be resolved"):
                resolve_tensor_file(directory, name)
            continue
        want = _outcome(_resolve_by_walk, directory, name)
        assert _outcome(resolve_tensor_file, directory, name) == want
        assert _outcome(resolve_tensor_file, directory, name, directory.resolve()) == want
        assert _outcome(_Side(directory).file, name) == want  # the tensor mode's own path strings
        listed = _Side(directory, expected=tm_mode.LIST_MIN_FILES)
        for _ in range(tm_mode.LIST_MIN_FILES + 1):  # files found one by one, then the directory is listed
            listed.entry("x.pt")
        assert listed._kinds is not None
        assert _outcome(listed.file, name) == want


def test_a_listed_directory_answers_as_lstat_does(tmp_path: Path) -> None:
    """Every kind of entry (files, links to files, to directories, dangling links, FIFOs,
    directories, missing names) is found through the listing as one ``lstat`` finds it."""
    tensors = tmp_path / "dump_tensor_data"
    (tensors / "sub").mkdir(parents=True)
    for i in range(70):
        (tensors / f"t{i}.pt").write_bytes(b"x")
    (tmp_path / "outside.pt").write_bytes(b"o")
    (tensors / "to_outside.pt").symlink_to(tmp_path / "outside.pt")
    (tensors / "to_inside.pt").symlink_to(tensors / "t1.pt")
    (tensors / "to_dir").symlink_to(tensors / "sub")
    (tensors / "dangling.pt").symlink_to(tensors / "nothing.pt")
    os.mkfifo(tensors / "fifo.pt")
    names = sorted(os.listdir(tensors)) + ["missing.pt", "sub/x.pt", "..", "."]
    plain = _Side(tensors)
    listed = _Side(tensors, expected=len(names))
    for i in range(tm_mode.LIST_MIN_FILES + 1):
        assert listed._kinds is None
        assert listed.entry(f"t{i}.pt") == plain.entry(f"t{i}.pt")
    assert listed._kinds is not None  # listed at the lookup after the first chunk's files were found
    for name in names:
        assert _outcome(listed.entry, name) == _outcome(plain.entry, name), name


def test_a_directory_too_large_for_its_files_is_not_listed(tmp_path: Path) -> None:
    def side_after_a_chunk(expected: int) -> _Side:
        side = _Side(tmp_path, expected=expected)
        for i in range(tm_mode.LIST_MIN_FILES + 1):
            side.entry(f"t{i}.pt")
        return side

    for i in range(300):
        (tmp_path / f"t{i}.pt").write_bytes(b"x")
    assert side_after_a_chunk(tm_mode.LIST_MIN_FILES)._kinds is not None  # room for 4 * 64 + 64 = 320 entries
    assert side_after_a_chunk(tm_mode.LIST_MIN_FILES - 1)._kinds is None  # too few files asked for
    for i in range(300, 400):
        (tmp_path / f"t{i}.pt").write_bytes(b"x")
    side = side_after_a_chunk(tm_mode.LIST_MIN_FILES)  # 400 entries: more than 320
    assert side._kinds is None and side.entry("t399.pt") == (str(tmp_path.resolve() / "t399.pt"), True)


def _zip_members(data: bytes) -> dict[str, tuple[int, int, int]] | None:
    """The central directory as the zipfile module reads it."""
    import io
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return {i.filename: (i.compress_type, i.file_size, i.header_offset) for i in archive.infolist()}
    except (zipfile.BadZipFile, ValueError, EOFError, OSError):
        return None


@SETTINGS
@given(st.sampled_from(["", "a comment", "PK\x05\x06"]), st.integers(1, 5), st.booleans())
def test_pt_directory_parser_agrees_with_zipfile(comment: str, members: int, deflate: bool) -> None:
    import io
    import zipfile

    from probe_pytorch.ptzip import _members

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as archive:
        for i in range(members):
            archive.writestr(f"t/data/{i}", b"x" * (i * 7))
        archive.comment = comment.encode()
    data = out.getvalue()
    parsed = _members(np.frombuffer(data, dtype=np.uint8), 0)
    if parsed is not None:
        assert parsed == _zip_members(data)
    assert parsed is not None or comment


@SETTINGS
@given(st.binary(max_size=300), st.integers(0, 400))
def test_pt_directory_parser_survives_damage(noise: bytes, at: int) -> None:
    import io
    import zipfile

    from probe_pytorch.ptzip import _members

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("t/data.pkl", b"p" * 20)
        archive.writestr("t/data/0", b"d" * 40)
    data = out.getvalue()
    data = data[: at % len(data)] + noise + data[at % len(data) + len(noise) // 2 :]
    parsed = _members(np.frombuffer(data, dtype=np.uint8), 0)  # a dict or None, never an exception
    assert parsed is None or isinstance(parsed, dict)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_zeros_in_the_bench_tensor_take_the_eps_rule(dtype: Any) -> None:
    n = np.array([0.0, 1.0, 0.0, -2.5, 3.0, 1e-8, 0.0, 7.0, 1.0], dtype=dtype)
    b = np.array([0.0, 0.0, 1.0, -2.5, 0.0, 0.0, -0.0, 7.5, 1.0], dtype=dtype)
    assert _same(tm._compare_float32(n, b, []), _reference_float32(n, b, []))
    big = np.tile(n, 5000)
    assert _same(tm._compare_float32(big, np.tile(b, 5000), []), _reference_float32(big, np.tile(b, 5000), []))


@pytest.mark.parametrize("count, expected, workers", [(2004, 2004, 2), (100, 2004, 2), (300, 128, 2), (0, 50, 4), (7, 7, 1)])
def test_task_chunks_keep_order_and_shrink_at_the_end(count: int, expected: int, workers: int) -> None:
    from probe.modes.tensor import CHUNK, MIN_CHUNK, _chunks

    chunks = list(_chunks(iter(range(count)), expected, workers))
    assert [x for chunk in chunks for x in chunk] == list(range(count))
    assert all(1 <= len(chunk) <= CHUNK for chunk in chunks)
    assert all(len(chunk) >= MIN_CHUNK for chunk in chunks[:-1])
    sizes = [len(chunk) for chunk in chunks[:-1]]
    assert sizes == sorted(sizes, reverse=True)  # large chunks first, small ones last


@SETTINGS
@given(st.text(alphabet="/.ab\\ -", max_size=14))
def test_task_paths_equal_their_plain_parse(text: str) -> None:
    from probe.modes.tensor import _path

    assert _path(text) == Path(text) and str(_path(text)) == str(Path(text))


def test_tasks_mark_only_regular_files_as_checked(tmp_path: Path) -> None:
    """A task says "regular" only when the lstat saw a regular file that is not a link, so a
    loader is never handed a FIFO, a directory or a missing file without the check."""
    tensors = tmp_path / "dump_tensor_data"
    tensors.mkdir()
    (tensors / "x.pt").write_bytes(b"x")
    (tensors / "dir.pt").mkdir()
    (tensors / "in.pt").symlink_to(tensors / "x.pt")
    os.mkfifo(tensors / "fifo.pt")
    side = _Side(tensors)
    root = str(tensors.resolve())
    assert side.entry("x.pt") == (os.path.join(root, "x.pt"), True)
    for name in ("dir.pt", "fifo.pt", "missing.pt", "in.pt"):
        path, regular = side.entry(name)
        assert not regular and path == side.file(name), name


def test_unchecked_tasks_still_refuse_what_is_not_a_regular_file(tmp_path: Path) -> None:
    from probe.modes.tensor import _compute_one
    from probe.plugins import default_host

    loaders = default_host().tensor_loaders.as_dict()
    os.mkfifo(tmp_path / "fifo.pt")
    (tmp_path / "dir.pt").mkdir()
    for name in ("fifo.pt", "dir.pt", "missing.pt"):
        path = str(tmp_path / name)
        metrics, messages, problem = _compute_one((path, path, 8, 8, False), loaders, [])
        assert problem and "tensor file does not exist" in problem and metrics[0] == tm.UNSUPPORTED, name


def test_open_regular_stat_gives_the_opened_files_stat(tmp_path: Path) -> None:
    import fcntl

    from probe.jsonio import open_regular, open_regular_stat

    path = tmp_path / "t.bin"
    path.write_bytes(b"12345")
    for blocking in (True, False):
        fd, info = open_regular_stat(path, "tensor file", blocking)
        try:
            assert info.st_size == 5 and os.path.samestat(info, os.fstat(fd))
            assert bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK) is not blocking
            assert os.pread(fd, 10, 1) == b"2345"
        finally:
            os.close(fd)
    fd = open_regular(path)
    assert not fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK
    os.close(fd)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputError, match="not a regular file"):
        open_regular_stat(tmp_path / "fifo", "tensor file", False)


@SETTINGS
@given(st.sampled_from([np.float32, np.float16]), st.integers(0, 2**32 - 1), st.integers(1, 300),
       st.sampled_from(["zeros", "both zero", "tiny", "huge", "plain", "nan", "inf"]))
def test_relative_errors_without_a_zero_scan_equal_the_eps_rule(dtype: Any, seed: int, size: int, kind: str) -> None:
    """The zero scan of b runs only when the largest relative error is inf or NaN; zeros,
    0 / 0, overflowing quotients and plain data all give what the eps rule gives."""
    rng = np.random.default_rng(seed)
    n = rng.standard_normal(size).astype(dtype)
    b = (n.astype(np.float64) * (1 + 0.01 * rng.standard_normal(size))).astype(dtype)
    at = rng.integers(0, size, max(1, size // 7))
    if kind in ("zeros", "both zero"):
        b[at] = 0
        if kind == "both zero":
            n[at] = 0
    elif kind == "tiny":
        b[at] = np.finfo(dtype).tiny if dtype == np.float32 else np.float16(6e-8)
        n[at] = np.finfo(dtype).max
    elif kind == "huge":
        n[at], b[at] = np.finfo(dtype).max, -np.finfo(dtype).max
    elif kind in ("nan", "inf"):  # left to the general path, whatever else b holds
        n[at[:1]] = np.nan if kind == "nan" else np.inf
        b[at[1:]] = 0
    with np.errstate(over="ignore"):
        got = tm._compare_float32(n, b, [])
        want = _reference_float32(n, b, [])
    assert _same(got, want)
