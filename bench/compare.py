"""Ingest with two checkouts of the warehouse, alternately, on the same corpus: before / after a change.

    git worktree add /tmp/old d705fa7          # the checkout to compare with
    python bench/compare.py afterimage --mb 1000 --before /tmp/old --runs 4
    python bench/compare.py inference --files 100000 --before /tmp/old --runs 4
    python bench/compare.py reingest --files 100000 --before /tmp/old --runs 4

Each run is `python -m warehouse.cli ingest` with PYTHONPATH at the checkout (the
"after" side is the installed one), into a fresh root (``reingest``: into one root
ingested once, untimed, per side). Runs alternate (before, after, after, before, ...)
so a machine whose load drifts charges both sides alike. Prints wall time, CPU time
summed over the process tree, and peak RSS per run, and the medians: on a shared
machine compare the CPU times.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ingest import corpus
from measure import run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["afterimage", "inference", "reingest"])
    ap.add_argument("--before", required=True, help="a checkout of the warehouse to compare with")
    ap.add_argument("--mb", type=float, default=1000.0)
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "warehouse-bench"))
    a = ap.parse_args()
    before = Path(a.before).resolve()
    if not (before / "warehouse" / "formats").exists():  # as an installed package maps it
        (before / "warehouse" / "formats").symlink_to("../ingest")
    src, _ = corpus(a.kind, a, Path(a.corpus))
    sides = {"before": {**os.environ, "PYTHONPATH": str(before)},
             "after": {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}}
    work = Path(tempfile.mkdtemp(prefix="compare-"))
    results: dict[str, list] = {"before": [], "after": []}
    print("| run | side | wall | CPU | peak RSS |\n|---|---|---|---|---|")
    try:
        for i in range(a.runs):
            order = ("before", "after") if i % 2 == 0 else ("after", "before")
            for side in order:
                root = work / side
                cmd = [sys.executable, "-m", "warehouse.cli", "ingest", str(src), "--root", str(root)]
                if a.kind != "reingest":
                    shutil.rmtree(root, ignore_errors=True)
                elif not root.exists():
                    subprocess.run([*cmd, "--quiet"], env=sides[side], check=True)
                r = run(cmd, env=sides[side])
                if r.returncode:
                    raise SystemExit(f"{side} failed:\n{r.stderr}")
                results[side].append(r)
                print(f"| {i + 1} | {side} | {r.seconds:.2f} s | {r.cpu_seconds:.2f} s | {r.peak_rss_mb:.0f} MB |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n| side | median wall | median CPU | max peak RSS |\n|---|---|---|---|")
    for side, rs in results.items():
        print(f"| {side} | {statistics.median(r.seconds for r in rs):.2f} s | "
              f"{statistics.median(r.cpu_seconds for r in rs):.2f} s | {max(r.peak_rss_mb for r in rs):.0f} MB |")


if __name__ == "__main__":
    main()
