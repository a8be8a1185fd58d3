"""Where the CPU of the AfterImage hot path goes: each stage of one piece, in CPU-s per GiB (issue 20).

    python bench/hotpath.py /tmp/speed-bench/afterimage-300mb/conversations_000.jsonl
    python bench/hotpath.py FILE --piece-mb 32 --repeat 5

Takes the first ``--piece-mb`` of FILE (cut at a line end, as ``pieces.FileScan`` cuts) and
times, in this process, each stage a worker runs on it and the ingest process's pass over
it: the minimum over ``--repeat`` runs of the process CPU time (user + system), which moves
less with the machine's load than wall time does. Then the whole piece as a worker ingests
it (``BatchIngest`` on one piece, files written to a temporary root). Markdown to stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow.json as pj
import pyarrow.parquet as pq

from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.linescan import count_lines, line_ends, scan_lines
from warehouse.formatkit.opening import read_piece
from warehouse.formatkit.registry import Registry
from warehouse.formats.afterimage import fast
from warehouse.run.sink import conform
from warehouse.run.worker import BatchIngest, BatchSpec, WorkItem
from warehouse.store.writer import PARQUET_OPTIONS, check_batch, dictionary_columns

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import cpu, stage_table  # noqa: E402


def read_file(path: str):
    """As a worker reads a piece: into Arrow's memory (opening.read_piece)."""
    with open(path, "rb") as f:
        return read_piece(f, os.path.getsize(path))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--piece-mb", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    with open(a.file, "rb") as f:
        data = f.read(a.piece_mb << 20)
    data = data[: data.rfind(b"\n") + 1]
    gib = len(data) / 2**30
    piece = os.path.join(tempfile.mkdtemp(prefix="hotpath-"), "piece.jsonl")
    with open(piece, "wb") as f:
        f.write(data)

    result = fast.fast_lines(data, piece, 1)
    tables = {n: conform(TABLES[n], t) for n, t in result.tables.items()}
    read = pj.ReadOptions(use_threads=False, block_size=len(data))

    def write(name: str):
        t = tables[name]
        pq.write_table(t, io.BytesIO(), use_dictionary=dictionary_columns(t), **PARQUET_OPTIONS)

    stages = [
        ("ingest process: SHA-256", lambda: hashlib.sha256(data).digest()),
        ("ingest process: line count (linescan.count_lines)", lambda: count_lines(data)),
        ("worker: read the piece (opening.read_piece)", lambda: read_file(piece)),
        ("worker: line ends, then an ASCII check (two scans of the piece)",
         lambda: (line_ends(data), int(np.frombuffer(data, np.uint8).max()) < 0x80)),
        ("worker: line ends and ASCII in one scan (linescan.scan_lines, the fast path's)", lambda: scan_lines(data)),
        ("worker: JSON parse (pyarrow, explicit schema)",
         lambda: pj.read_json(io.BytesIO(data), read_options=read, parse_options=fast._PARSE)),
        ("worker: fast path, all of it (parse included)", lambda: fast.fast_lines(data, piece, 1)),
        ("worker: full UTF-8 validation of its tables (skipped when validated)",
         lambda: [check_batch(TABLES[n], t) for n, t in tables.items()]),
        *[(f"worker: Parquet write of {n} ({tables[n].num_rows:,} rows)", lambda n=n: write(n)) for n in tables],
    ]
    print(f"AfterImage piece of {len(data) / 2**20:.1f} MiB ({result.records:,} lines), min of {a.repeat} runs\n")
    stage_table(stages, a.repeat, "piece", "GiB", 1 / gib)

    registry = Registry.installed()
    root = tempfile.mkdtemp(prefix="hotpath-root-")

    def whole():
        shutil.rmtree(root, ignore_errors=True)
        spec = BatchSpec(run_id="bench", batch_no=1, root=root, registry=registry,
                         items=[WorkItem(piece, source_format="afterimage", chunk=(0, len(data), 1))])
        BatchIngest(spec).run()

    whole()  # the first piece of a process pays for first use (allocator pages, kernels)
    s = cpu(whole, a.repeat)
    print(f"| **worker: the whole piece** (BatchIngest: read, fast path, write) | {s * 1000:.1f} ms | {s / gib:.2f} |")
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(os.path.dirname(piece), ignore_errors=True)
    print(f"time: {time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.1f}", file=sys.stderr)


if __name__ == "__main__":
    main()
