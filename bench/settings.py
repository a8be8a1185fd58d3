"""An ingest under each allocator / thread setting alone, alternated in one run (issue 20, part F).

    python bench/settings.py /tmp/speed-bench/afterimage-1000mb --runs 3 --python /tmp/before/.venv/bin/python
    python bench/settings.py /tmp/speed-bench/inference-20000 --runs 5 --python /tmp/before/.venv/bin/python --shipped .venv/bin/python

Each variant is ``PYTHON -m warehouse.cli ingest CORPUS --root FRESH --quiet`` with some
environment variables set, the ones each library reads when a process starts: run it with a
checkout that does not set them itself (main before part F) as ``--python``: ``none`` is that
checkout as it is, each named variant that one setting alone, ``all`` every one; ``--shipped``
adds a checkout that sets them itself (``warehouse.run.process_settings``), with none of them
set. Rounds rotate the order (a change in the machine's load falls on every variant alike);
figures are medians of ``--runs``.

CPU (user + system) and minor page faults are summed over the process tree (ingest process,
forkserver, workers: ``RUSAGE_CHILDREN``, this process being their subreaper), peak RSS is the
tree's sum sampled every 20 ms (``measure.run``). Markdown to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from warehouse.run.process_settings import ENV  # noqa: E402

from measure import run, say  # noqa: E402

#: each setting alone, as the environment variables its library reads when a process starts
#: (or loads it), with the values ``warehouse.run.process_settings`` gives the ingest's processes
ON = {
    "purge": {k: ENV[k] for k in ("MIMALLOC_PURGE_DELAY",)},
    "glibc": {k: ENV[k] for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")},
    "blas": {k: ENV[k] for k in ("OPENBLAS_NUM_THREADS",)},
}


def variants(names: list[str]) -> dict[str, dict[str, str]]:
    """``none``: the environment as it is; a name: that setting alone; ``all``: every one."""
    out = {}
    for name in names:
        if name == "all":
            out[name] = {k: v for on in ON.values() for k, v in on.items()}
        else:
            out[name] = ON.get(name, {})
    return out


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("corpus")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--python", default=sys.executable, help="the checkout's Python (its venv)")
    p.add_argument("--variants", nargs="+", default=["none", *ON, "all"],
                   choices=["none", *ON, "all"])
    p.add_argument("--shipped", metavar="PYTHON", help="also a checkout that sets them itself (none of them set)")
    args = p.parse_args()
    todo = {name: (args.python, env) for name, env in variants(args.variants).items()}
    if args.shipped:
        todo["shipped"] = (args.shipped, {})
    got: dict[str, list[tuple[float, float, float, int]]] = {k: [] for k in todo}
    for i in range(args.runs):
        order = list(todo)
        order = order[i % len(order):] + order[:i % len(order)]
        for name in order:
            work = Path(tempfile.mkdtemp(prefix="settings-"))
            try:
                python, env = todo[name]
                env = {**os.environ, **env}
                f0 = faults()
                r = run([python, "-m", "warehouse.cli", "ingest", args.corpus, "--root", str(work / "wh"),
                         "--quiet"], env=env, cwd=str(work))
                f = faults() - f0
            finally:
                shutil.rmtree(work, ignore_errors=True)
            if r.returncode != 0:
                say(r.stderr)
                return 1
            got[name].append((r.seconds, r.cpu_seconds, r.peak_rss_mb, f))
            say(f"round {i + 1} {name}: {r.seconds:.2f} s wall, {r.cpu_seconds:.2f} CPU-s, "
                f"{r.peak_rss_mb:.0f} MB peak, {f / 1000:.0f}k faults")
    print(f"{args.corpus}, median of {args.runs}\n")
    print("| variant | wall | CPU | peak RSS | minor faults |")
    print("|---|---|---|---|---|")
    for name, rows in got.items():
        m = [statistics.median(col) for col in zip(*rows)]
        print(f"| {name} | {m[0]:.2f} s | {m[1]:.2f} s | {m[2]:,.0f} MB | {m[3] / 1000:,.0f}k |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
