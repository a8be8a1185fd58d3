"""Requests and time to open a warehouse on a local S3 API server (moto, the test extra ``s3``).

    python bench/remote_open.py            # the bundled samples, ingested once into a bucket root
    python bench/remote_open.py --runs 5

Opening (``warehouse.connect``) lists the snapshots, reads the latest and each table's Delta log at
its pinned version: the file lists and the schemas come from the log, so no Parquet footer is read
(before issue 18 part C every data file's footer was fetched to unify the schemas). Prints the
requests by kind, those on data files, and the median seconds; progress on stderr.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests.s3server

from tests.s3server import S3Server  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        s3 = S3Server.start(os.path.join(tmp, "server.log"))
        try:
            os.environ.update(s3.env())
            s3.filesystem().create_dir("bench-open")
            import warehouse

            url = "s3://bench-open/wh"
            print("ingesting the samples into", url, file=sys.stderr)
            warehouse.ingest([str(HERE.parent / "samples")], url, progress=False)
            seconds = []
            for _ in range(args.runs):
                s3.start_recording()
                t = time.monotonic()
                warehouse.connect(url).close()
                seconds.append(time.monotonic() - t)
                recorded = s3.recorded()
            data = [r for r in recorded if r[1].split("?")[0].endswith(".parquet") and "_delta_log" not in r[1]]
            kinds = Counter(m for m, _ in recorded)
            print(f"open: {len(recorded)} requests ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}), "
                  f"{len(data)} on data files; median {statistics.median(seconds):.2f} s over {args.runs} runs")
        finally:
            s3.stop()


if __name__ == "__main__":
    main()
