"""The warehouse against DuckDB doing the same work, interleaved in one run (issue 20).

    python bench/versus.py afterimage --mb 300 1000 --runs 3
    python bench/versus.py inference --files 20000 100000 --runs 3
    python bench/versus.py reingest --files 20000 100000 --runs 3
    python bench/versus.py reingest --files 20000 --changed 200 --runs 3
    python bench/versus.py afterimage --mb 300 --warehouse before=/tmp/before/.venv/bin/python --warehouse after=python

Each round runs every contender once, one after another, in an order that rotates
from round to round (so a change in the machine's load falls on all of them alike);
each figure is the median of --runs rounds. Before each run the machine is put in the same
state (``measure.settle``: the corpus read into the page cache, 4 GiB of memory touched and
freed), so no contender pays for the one before it or for the time since the corpus was last
read; ``--as-is`` leaves the machine as the last run left it (the measurements of stops 22-25).
Contenders:

* each ``--warehouse LABEL=PYTHON`` (default: this Python), ``PYTHON -m warehouse.cli
  ingest CORPUS --root FRESH``: several let one run compare two checkouts (before/after),
  each installed in a venv of its own with the same dependencies (pyarrow imports pandas on
  its first ``pa.array`` when pandas is installed: ~0.2 CPU-s per process);
* afterimage: ``duckdb_reference.py afterimage`` (the same three tables, in SQL alone,
  the fair peer) and ``duckdb_reference.py copy`` (the plain COPY of one table);
* inference: ``duckdb_reference.py copy`` (the plain glob COPY);
* reingest: no DuckDB; each warehouse ingests once (timed as "first"), then the
  unchanged corpus again, then (``--changed N``) the corpus with N of its files changed
  (a line end appended: the same records, other bytes, so each file's rows are replaced;
  the files are put back after the round).

Wall time, CPU time (user + system of the whole process tree) and peak RSS (summed
over the process tree) beside each: the machine is shared, and CPU time moves less
with other load than wall time does. Markdown to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import ingest as ingest_bench  # noqa: E402  (bench/ingest.py: the corpora)
from measure import Run, median_of, run, say, settle  # noqa: E402

REFERENCE = str(HERE / "duckdb_reference.py")


def contenders(kind: str, glob: str, src: Path, warehouses: list[tuple[str, str]]) -> list[tuple[str, callable]]:
    """(label, command for a fresh output directory) of everything measured for ``kind``."""
    out = []
    for label, python in warehouses:
        out.append((f"warehouse {label}", lambda d, py=python: [py, "-m", "warehouse.cli", "ingest", str(src),
                                                                 "--root", str(d / "wh"), "--quiet"]))
    if kind == "afterimage":
        out.append(("duckdb same work", lambda d: [sys.executable, REFERENCE, "afterimage", glob, str(d)]))
    out.append(("duckdb plain COPY", lambda d: [sys.executable, REFERENCE, "copy", glob, str(d)]))
    return out


def measure(kind: str, src: Path, glob: str, runs: int, warehouses, work: Path, settled: bool = True) -> dict[str, Run]:
    todo = contenders(kind, glob, src, warehouses)
    results: dict[str, list[Run]] = {label: [] for label, _ in todo}
    for i in range(runs):
        k = i % len(todo)
        for label, cmd in todo[k:] + todo[:k]:
            d = work / f"{label.replace(' ', '-')}-{i}"
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
            say(f"  round {i + 1}/{runs}: {label}")
            if settled:
                settle(src)
            # in the output directory: `python -m` puts the working directory first on sys.path,
            # and a checkout there would shadow the `warehouse` of the Python being measured
            r = run(cmd(d), cwd=str(d))
            if r.returncode:
                raise SystemExit(f"{label} failed:\n{r.stderr}")
            results[label].append(r)
            shutil.rmtree(d, ignore_errors=True)
    return {label: median_of(rs) for label, rs in results.items()}


def changed_files(src: Path, n: int) -> list[Path]:
    """``n`` of the corpus's files, spread evenly over it (the same ones every round)."""
    files = sorted(src.rglob("*.json"))
    return files[::max(1, len(files) // n)][:n] if n else []


def measure_reingest(src: Path, runs: int, warehouses, work: Path, settled: bool = True,
                     changed: int = 0) -> dict[str, Run]:
    results: dict[str, list[Run]] = {}
    to_change = changed_files(src, changed)
    for i in range(runs):
        k = i % len(warehouses)
        for label, python in warehouses[k:] + warehouses[:k]:
            root = work / f"{label}-{i}"
            shutil.rmtree(root, ignore_errors=True)
            cmd = [python, "-m", "warehouse.cli", "ingest", str(src), "--root", str(root), "--quiet"]
            say(f"  round {i + 1}/{runs}: warehouse {label}, first and unchanged")
            if settled:
                settle(src)
            first = run(cmd, cwd=str(work))
            if settled:
                settle(src)
            again = run(cmd, cwd=str(work))
            if first.returncode or again.returncode:
                raise SystemExit(f"{label} failed:\n{first.stderr}{again.stderr}")
            results.setdefault(f"warehouse {label} first", []).append(first)
            results.setdefault(f"warehouse {label} unchanged", []).append(again)
            if to_change:
                originals = {p: p.read_bytes() for p in to_change}
                try:
                    for p in to_change:
                        p.write_bytes(originals[p] + b"\n")
                    if settled:
                        settle(src)
                    some = run(cmd, cwd=str(work))
                finally:
                    for p, data in originals.items():
                        p.write_bytes(data)
                if some.returncode:
                    raise SystemExit(f"{label} failed:\n{some.stderr}")
                results.setdefault(f"warehouse {label} {len(to_change)} changed", []).append(some)
            shutil.rmtree(root, ignore_errors=True)
    return {label: median_of(rs) for label, rs in results.items()}


def table(name: str, nbytes: int, results: dict[str, Run], reference: str | None) -> None:
    print(f"\n{name} ({nbytes / 1e6:,.0f} MB)\n")
    print("| contender | wall | CPU (user+sys) | peak RSS | wall / reference | CPU / reference |")
    print("|---|---|---|---|---|---|")
    ref = results.get(reference) if reference else None
    for label, r in results.items():
        ratio = f"{r.seconds / ref.seconds:.2f}" if ref else "-"
        cpu_ratio = f"{r.cpu_seconds / ref.cpu_seconds:.2f}" if ref and ref.cpu_seconds else "-"
        print(f"| {label} | {r.seconds:.2f} s | {r.cpu_seconds:.2f} s | {r.peak_rss_mb:,.0f} MB | {ratio} | {cpu_ratio} |",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["afterimage", "inference", "reingest"])
    ap.add_argument("--mb", type=float, nargs="*", default=[300.0, 1000.0])
    ap.add_argument("--files", type=int, nargs="*", default=[20_000, 100_000])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warehouse", action="append", default=[], metavar="LABEL=PYTHON",
                    help="a warehouse to measure: a label and the Python whose `warehouse` it is (repeatable)")
    ap.add_argument("--changed", type=int, default=0, metavar="N",
                    help="reingest: then N of the files changed (their rows replaced)")
    ap.add_argument("--as-is", action="store_true",
                    help="measure each run in whatever state the last one left the machine (no measure.settle)")
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "warehouse-bench"))
    a = ap.parse_args()
    warehouses = [tuple(w.split("=", 1)) for w in a.warehouse] or [("now", sys.executable)]
    base = Path(a.corpus)
    work = Path(tempfile.mkdtemp(prefix="versus-"))
    try:
        sizes = a.mb if a.kind == "afterimage" else a.files
        for size in sizes:
            spec = argparse.Namespace(mb=size, files=int(size))
            src, glob = ingest_bench.corpus("afterimage" if a.kind == "afterimage" else "inference", spec, base)
            nbytes = ingest_bench.size_of(src)
            if a.kind == "reingest":
                results = measure_reingest(src, a.runs, warehouses, work, not a.as_is, a.changed)
                then = f"unchanged, then {a.changed:,} changed" if a.changed else "unchanged"
                table(f"{int(size):,} inference files: first ingest, then {then}", nbytes, results,
                      f"warehouse {warehouses[0][0]} first")
                continue
            results = measure(a.kind, src, glob, a.runs, warehouses, work, not a.as_is)
            what = f"AfterImage JSONL {size:g} MB" if a.kind == "afterimage" else f"{int(size):,} inference files"
            table(what, nbytes, results, "duckdb same work" if a.kind == "afterimage" else "duckdb plain COPY")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
