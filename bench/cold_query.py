"""A small query from a cold process: the warehouse against plain DuckDB over the same Parquet files (issue 36).

    python bench/cold_query.py --runs 5
    python bench/cold_query.py --files 5000 --runs 5 --warehouse before=/tmp/before/bin/python --warehouse after=python

Each figure is the median of --runs rounds; a round runs every contender once, in an order that
rotates from round to round (so a change in the machine's load falls on all of them alike).
Contenders, on each warehouse root:

* ``duckdb``: ``python -c "import duckdb; print(duckdb.sql(\\"SELECT count(*) FROM 'ROOT/responses/*.parquet'\\").fetchall())"``
  (the issue's command; fetched, as ``duckdb.sql`` alone runs nothing);
  for the point query, the same join of the Parquet files of responses and path_fields the view makes;
* for each ``--warehouse LABEL=PYTHON`` (default: this Python): ``warehouse sql QUERY --root ROOT``
  (``PYTHON -m warehouse.cli``), and ``PYTHON -c "import warehouse; print(warehouse.connect(ROOT).sql(QUERY).fetchall())"``
  (a notebook's first cell).

The roots: the bundled samples ingested, and a warehouse of ``--files`` trait-interp inference
files (bench/corpora.py), both made once under --corpus and reused. Every process runs with
bytecode caching on (``PYTHONPYCACHEPREFIX`` under --corpus), as an installed package has it, and
each command runs once untimed before the rounds. Markdown to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from measure import _reap_orphans, run, say  # noqa: E402

SAMPLES = HERE.parent / "samples"
#: (label, the warehouse's query, plain DuckDB's over the root's files): a count, and a point query on a path field
QUERIES = [
    ("count", "SELECT count(*) FROM responses", "SELECT count(*) FROM '{root}/responses/*.parquet'"),
    ("point query on prompt_id", "SELECT response FROM responses WHERE prompt_id = '1005'",
     "SELECT r.response FROM '{root}/responses/*.parquet' AS r JOIN '{root}/path_fields/*.parquet' AS p "
     "USING (source_path) WHERE p.prompt_id = '1005'"),
]
PLAIN = "import duckdb; print(duckdb.sql({sql!r}).fetchall())"
CONNECT = "import warehouse; print(warehouse.connect({root!r}).sql({sql!r}).fetchall())"


def environment(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
    return env


def ingested(src: Path, root: Path, python: str, env: dict) -> Path:
    """``root`` holding ``src`` ingested (once: reused when it is complete)."""
    if not (root / ".complete").exists():
        say(f"ingesting {src} into {root} ...")
        subprocess.run([python, "-m", "warehouse.cli", "ingest", str(src), "--root", str(root), "--quiet"],
                       check=True, env=env, cwd=str(root.parent))
        (root / ".complete").touch()
    return root


def inference_root(files: int, base: Path, python: str, env: dict) -> Path:
    src = base / f"inference-{files}"
    if not (src / ".complete").exists():
        say(f"writing {files:,} inference files under {src} ...")
        subprocess.run([sys.executable, str(HERE / "corpora.py"), "inference", "--files", str(files),
                        "--out", str(src)], check=True)
        (src / ".complete").touch()
    return ingested(src, base / f"inference-{files}-wh", python, env)


def commands(root: Path, warehouses: list[tuple[str, str]], query: str, plain: str) -> list[tuple[str, list[str]]]:
    out = [("duckdb over the files", [sys.executable, "-c", PLAIN.format(sql=plain.format(root=root))])]
    for label, python in warehouses:
        out.append((f"`warehouse sql` {label}", [python, "-m", "warehouse.cli", "sql", query, "--root", str(root)]))
        out.append((f"`connect` + query {label}", [python, "-c", CONNECT.format(root=str(root), sql=query)]))
    return out


def measure(root: Path, warehouses, runs: int, env: dict, query: str, plain: str) -> list[tuple[str, float, float]]:
    cmds = commands(root, warehouses, query, plain)
    cwd = str(root.parent)  # not a checkout: `-c` and `-m` put the working directory first on sys.path
    for label, cmd in cmds:  # untimed: bytecode written, files in the page cache
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
        if proc.returncode:
            raise SystemExit(f"{label} failed:\n{proc.stderr}")
    _reap_orphans()  # an ingest's pool, reparented here: its CPU is not the first timed run's
    times: dict[str, list[float]] = {label: [] for label, _ in cmds}
    cpus: dict[str, list[float]] = {label: [] for label, _ in cmds}
    for i in range(runs):
        say(f"  round {i + 1}/{runs}")
        for label, cmd in cmds[i % len(cmds):] + cmds[:i % len(cmds)]:
            r = run(cmd, env=env, cwd=cwd)
            if r.returncode:
                raise SystemExit(f"{label} failed:\n{r.stderr}")
            times[label].append(r.seconds)
            cpus[label].append(r.cpu_seconds)
    return [(label, statistics.median(times[label]), statistics.median(cpus[label])) for label, _ in cmds]


def table(name: str, results: list[tuple[str, float, float]]) -> None:
    plain = results[0][1]
    print(f"\n{name}\n")
    print("| command | wall (median) | CPU (median) | / duckdb |")
    print("|---|---|---|---|")
    for label, wall, cpu in results:
        print(f"| {label} | {wall:.3f} s | {cpu:.3f} s | {wall / plain:.2f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=5000, help="inference files of the larger root")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--corpus", default="/tmp/warehouse-bench")
    ap.add_argument("--warehouse", action="append", default=[], metavar="LABEL=PYTHON",
                    help="a Python whose environment has the warehouse to measure (several: compared in one run)")
    args = ap.parse_args()
    base = Path(args.corpus)
    base.mkdir(parents=True, exist_ok=True)
    warehouses = [tuple(w.split("=", 1)) for w in args.warehouse] or [("", sys.executable)]
    env = environment(base)
    roots = [("the bundled samples", ingested(SAMPLES, base / "samples-wh", warehouses[0][1], env)),
             (f"{args.files:,} inference files", inference_root(args.files, base, warehouses[0][1], env))]
    for name, root in roots:
        for label, query, plain in QUERIES:
            say(f"{name}, {label}: {root}")
            table(f"{name}, {label} (`{query}`, median of {args.runs})",
                  measure(root, warehouses, args.runs, env, query, plain))


if __name__ == "__main__":
    main()
