"""The pass over one large JSONL file, alone: wall and CPU seconds of the ingest process's share of an ingest (issue 36).

    python bench/pass_over.py FILE [--runs 5]

``pieces.FileScan.chunks`` drawn to the end, as the engine's feeder draws it (every piece cut, its lines
counted, the file hashed), with no worker running beside it: on a machine with cores to spare, this wall
is the least an ingest of FILE can take, however many workers parse the pieces. Prints the median and
the least of --runs runs, of the checkout whose ``warehouse`` this Python imports (run it with each
checkout's Python to compare).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from warehouse.run.pieces import CHUNK_BYTES, FileScan
from warehouse.run.worker import WorkItem


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    size = os.path.getsize(a.file)
    walls, cpus = [], []
    for _ in range(a.runs):
        scan = FileScan(WorkItem(os.path.abspath(a.file)), "afterimage", CHUNK_BYTES, size)
        t, c = time.perf_counter(), time.process_time()
        pieces = sum(1 for _ in scan.chunks())
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    print(f"| {size / 1e9:.2f} GB, {pieces} pieces | wall {statistics.median(walls):.3f} s (least {min(walls):.3f}) "
          f"| CPU {statistics.median(cpus):.3f} s | sha256 {scan.sha256[:12]} |")


if __name__ == "__main__":
    main()
