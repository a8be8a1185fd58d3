"""Ingest throughput from and into a local S3 API server beside local disk: the same corpus, the same run.

    python bench/remote.py afterimage --mb 200        # one large JSONL object (pieces, ranged reads)
    python bench/remote.py inference --files 5000     # many small objects (one HEAD + GET each)

Four ways per run: local disk -> local root, bucket -> local root, local disk -> a root in
the bucket, bucket -> a root in the bucket; then the bucket again into its local root,
unchanged (listing only). The server is moto's server mode (the test extra ``s3``),
started and stopped here, in a process of its own; it keeps the objects in memory and
answers from Python, so it is far slower than S3 or MinIO: the figures bound what the
warehouse adds, not what a real store gives. Each row is the median of --runs runs into
fresh warehouses: wall time, CPU time of the ingest's processes (not moto's), peak RSS.
Markdown to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests.s3server
sys.path.insert(0, str(HERE))  # before the repository: bench/ingest.py, not the folder ingest/
from tests.s3server import S3Server  # noqa: E402

from ingest import corpus, records_of, size_of  # noqa: E402
from measure import Run, median_of, run, say  # noqa: E402


def upload(server: S3Server, local: Path, bucket: str) -> None:
    fs = server.filesystem()
    fs.create_dir(bucket)
    for p in sorted(local.rglob("*")):
        if p.is_file() and p.name != ".complete":
            with fs.open_output_stream(f"{bucket}/{p.relative_to(local).as_posix()}") as f, open(p, "rb") as src:
                shutil.copyfileobj(src, f, 8 << 20)


def ingest(src: str, root: str, jobs: int | None, env: dict) -> Run:
    cmd = [sys.executable, "-m", "warehouse.cli", "ingest", src, "--root", root]
    r = run(cmd + (["--jobs", str(jobs)] if jobs else []), env=env)
    if r.returncode:
        raise SystemExit(f"ingest {src} --root {root} failed:\n{r.stderr}")
    return r


def row(name: str, nbytes: int, r: Run) -> str:
    mb = nbytes / 1e6
    recs = records_of(r.stderr)
    return (f"| {name} | {mb:,.0f} MB, {recs:,} records | {r.seconds:.2f} s | {r.cpu_seconds:.2f} s | "
            f"{mb / r.seconds:.1f} MB/s | {recs / r.seconds:,.0f} rec/s | {r.peak_rss_mb:.0f} MB |")


WAYS = ("local disk -> local root", "bucket -> local root", "local disk -> root in the bucket",
        "bucket -> root in the bucket")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["afterimage", "inference"])
    ap.add_argument("--mb", type=float, default=200.0)
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "warehouse-bench"))
    args = ap.parse_args()
    base = Path(args.corpus)
    src, _ = corpus(args.kind, args, base)
    nbytes = size_of(src)
    work = base / f"remote-{args.kind}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    server = S3Server.start(str(work / "moto.log"))
    try:
        say(f"uploading {nbytes / 1e6:,.0f} MB to the local S3 server ...")
        upload(server, src, "bench")
        server.filesystem().create_dir("bench-wh")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | server.env()
        runs: dict[str, list[Run]] = {way: [] for way in (*WAYS, "again")}
        for i in range(args.runs):
            say(f"  run {i + 1}/{args.runs}: {', '.join(WAYS)}, then the bucket again (unchanged)")
            local_root, remote_local_root = str(work / f"local{i}"), str(work / f"remote{i}")
            runs[WAYS[0]].append(ingest(str(src), local_root, args.jobs, env))
            runs[WAYS[1]].append(ingest("s3://bench", remote_local_root, args.jobs, env))
            runs[WAYS[2]].append(ingest(str(src), f"s3://bench-wh/local{i}", args.jobs, env))
            runs[WAYS[3]].append(ingest("s3://bench", f"s3://bench-wh/remote{i}", args.jobs, env))
            runs["again"].append(ingest("s3://bench", remote_local_root, args.jobs, env))
            shutil.rmtree(local_root)
            shutil.rmtree(remote_local_root)
    finally:
        server.stop()
    print(f"\n{args.kind}: {nbytes / 1e6:,.0f} MB, median of {args.runs} runs\n")
    print("| source -> root | size | wall | CPU | MB/s | records/s | peak RSS |\n|---|---|---|---|---|---|---|")
    for way in WAYS:
        print(row(way, nbytes, median_of(runs[way])))
    r = median_of(runs["again"])
    print(f"| the bucket again, unchanged | listing only | {r.seconds:.2f} s | {r.cpu_seconds:.2f} s | | | "
          f"{r.peak_rss_mb:.0f} MB |")


if __name__ == "__main__":
    main()
