"""Ingest on Spark (local[N]) beside the process pool, in the same run, and where the time goes.

    python bench/spark.py --files 100000 --mb 1000          # the 100k-file corpus and 1 GB of JSONL
    python bench/spark.py --files 10000 30000 --mb 200      # smaller sizes, to see the driver stay linear

For each corpus, each engine ingests into a fresh warehouse in a child process, timed
from outside (wall time, peak RSS summed over the process tree: Spark's JVM and its
Python workers included) and from inside, by phase:

* ``walk and plan``: the driver walks the paths and compares them with the catalog;
* ``engine start``: the SparkSession (the JVM); the process pool starts its workers lazily,
  inside ``batches``;
* ``batches``: the batches, run by the engine (planning them included);
* ``commit``: the driver makes the run's files live.

The driver's own phases (walk and plan, commit) are also given per 1,000 files: they must
not grow with the corpus. Corpora are made by bench/corpora.py under --corpus and reused.
The table goes to stdout (markdown), progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import corpus as ingest_corpus  # noqa: E402
from measure import run, say  # noqa: E402

HERE = Path(__file__).resolve().parent
PHASES = ("walk and plan", "engine start", "batches", "commit")


def child(engine: str, src: str, root: str, out: str, master: str, jobs: int) -> None:
    """In the child: one ingest with its phases timed, written as one JSON object to ``out``
    (the parent's timer keeps stdout for itself)."""
    import warehouse
    from warehouse.run import batches, runner, work
    phases = dict.fromkeys(PHASES, 0.0)

    def timed(name, f):
        def wrapper(*args, **kwargs):
            t = time.monotonic()
            try:
                return f(*args, **kwargs)
            finally:
                phases[name] += time.monotonic() - t
        return wrapper

    found = work.Walk.found

    def walked(self):  # (a generator: from its first file to its end)
        t = time.monotonic()
        try:
            yield from found(self)
        finally:
            phases["walk and plan"] += time.monotonic() - t

    work.Walk.found = walked
    work.Walk.finish = timed("walk and plan", work.Walk.finish)
    batches._engine = timed("engine start", batches._engine)
    runner.run_batches = timed("batches", runner.run_batches)
    runner.commit = timed("commit", runner.commit)
    options = dict(engine="spark", spark_master=master) if engine == "spark" else dict(jobs=jobs)
    summary = warehouse.ingest([src], root, progress=False, **options)
    phases["batches"] -= phases["engine start"]  # started inside run_batches
    Path(out).write_text(json.dumps({"phases": phases, "files": summary.files_seen, "records": summary.records_ingested,
                                     "quarantined": summary.records_quarantined, "mb": summary.bytes_read / 1e6}))


def corpus(kind: str, size: float, base: Path) -> Path:
    """The corpus directory, named and made as bench/ingest.py makes it."""
    sizes = argparse.Namespace(files=int(size), mb=size)
    return ingest_corpus(kind, sizes, base)[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, nargs="*", default=[100_000], help="inference corpora (files)")
    ap.add_argument("--mb", type=float, nargs="*", default=[1000.0], help="AfterImage JSONL corpora (MB)")
    ap.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    ap.add_argument("--jobs", type=int, default=2, help="process pool workers (default 2: as many as local[2]'s slots)")
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "warehouse-bench"))
    ap.add_argument("--child", nargs=4, metavar=("ENGINE", "SRC", "ROOT", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child, master=args.master, jobs=args.jobs)
        return
    base = Path(args.corpus)
    work = Path(tempfile.mkdtemp(prefix="spark-bench-"))
    print("| corpus | engine | wall | peak RSS | walk and plan | engine start | batches | commit | "
          "driver per 1k files (walk+plan / commit) |")
    print("|---|---|---|---|---|---|---|---|---|")
    try:
        for kind, sizes in (("inference", args.files), ("afterimage", args.mb)):
            for size in sizes:
                src = corpus(kind, size, base)
                for engine in ("local", "spark"):
                    root = work / f"wh-{engine}"
                    shutil.rmtree(root, ignore_errors=True)
                    say(f"{kind} {size:g}: {engine} ...")
                    phases = work / "phases.json"
                    r = run([sys.executable, __file__, "--master", args.master, "--jobs", str(args.jobs),
                             "--child", engine, str(src), str(root), str(phases)])
                    if r.returncode:
                        raise SystemExit(f"{engine} ingest failed:\n{r.stderr}")
                    _row(kind, engine, args, r, json.loads(phases.read_text()))
                    shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _row(kind, engine, args, r, out) -> None:
    p = out["phases"]
    per_k = 1000 / max(out["files"], 1)
    name = f"{kind}: {out['files']:,} files, {out['mb']:,.0f} MB, {out['records']:,} records"
    label = f"pool of {args.jobs}" if engine == "local" else f"Spark {args.master}"
    print(f"| {name} | {label} | {r.seconds:.1f} s | {r.peak_rss_mb:,.0f} MB | {p['walk and plan']:.2f} s | "
          f"{p['engine start']:.2f} s | {p['batches']:.2f} s | {p['commit']:.2f} s | "
          + (f"{p['walk and plan'] * per_k * 1000:.0f} ms / {p['commit'] * per_k * 1000:.0f} ms |" if out["files"] >= 1000
             else "- |"), flush=True)


if __name__ == "__main__":
    main()
