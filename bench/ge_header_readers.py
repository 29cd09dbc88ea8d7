#!/usr/bin/env python3
"""Time the GE dump header reader (``protobuf`` library, upb backend) on many small files.

GE dump files start with a protobuf ``DumpData`` header (schema in
``probe_torchair/dump_proto.py``). This bench writes ``--files`` GE dump files shaped like a
transformer layer's ops (2-4 inputs, 1-2 outputs, 2-4-D shapes, an attr, a workspace) with
the tests' independent hand encoder, then times ``gedump.read_header`` (open, checks,
decode) and the decode alone. Run it on an older commit to compare readers (the figures
against the former hand-written wire reader are in docs/performance.md). Nothing here runs
in CI.

    python bench/ge_header_readers.py --files 5000 --repeat 5
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import torchair_ge_writer as w  # noqa: E402

from google.protobuf.internal import api_implementation  # noqa: E402

from probe_torchair import gedump  # noqa: E402
from probe_torchair.dump_proto import parse_dump_data  # noqa: E402


def write_files(root: Path, count: int) -> list[Path]:
    """``count`` GE dump files of transformer-like ops, with an attr and a workspace each."""
    rng = np.random.default_rng(0)
    paths = []
    token = root / "20240125031118" / "0" / "ge_default_1" / "1" / "0"
    token.mkdir(parents=True)
    for i in range(count):
        dims = [int(d) for d in rng.integers(1, 8, size=int(rng.integers(2, 5)))]
        arrays_in = [rng.standard_normal(dims).astype(np.float16) for _ in range(int(rng.integers(2, 5)))]
        arrays_out = [rng.standard_normal(dims).astype(np.float16) for _ in range(int(rng.integers(1, 3)))]
        body = b"".join(w.field_bytes(4, w.plain(a).message(True)) for a in arrays_in)
        body += b"".join(w.field_bytes(3, w.plain(a).message(False)) for a in arrays_out)
        body += w.field_bytes(7, w.field_bytes(1, b"_fusion_info") + w.field_bytes(2, b'{"slice": [0, 1]}'))
        body += w.field_bytes(8, w.field_varint(3, 0))
        header = (w.field_bytes(1, b"2.0") + w.field_varint(2, 1706596912161941 + i) + body
                  + w.field_bytes(6, f"MatMul_{i}".encode()))
        payload = b"".join(a.tobytes() for a in arrays_in + arrays_out)
        path = token / f"MatMul.MatMul_{i}.1.2.{1706596912161941 + i}"
        path.write_bytes(struct.pack("<Q", len(header)) + header + payload)
        paths.append(path)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="probe-ge-bench-"))
    try:
        paths = write_files(root, args.files)
        blobs = []
        for path in paths:
            data = path.read_bytes()
            (length,) = struct.unpack_from("<Q", data, 0)
            blobs.append(data[8:8 + length])
        stages = {
            "read_header (open, checks, decode)": (paths, gedump.read_header),
            "decoding only": (blobs, parse_dump_data),
        }
        print(f"{args.files} GE dump files, median of {args.repeat} (protobuf backend: {api_implementation.Type()})")
        print("| stage | all files | per file |")
        print("|---|---|---|")
        for name, (items, func) in stages.items():
            runs = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                for item in items:
                    func(item)
                runs.append(time.perf_counter() - start)
            t = statistics.median(runs)
            print(f"| {name} | {t * 1000:.0f} ms | {t / args.files * 1e6:.1f} µs |")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
