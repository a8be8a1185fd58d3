"""A small query from a cold process: the warehouse against plain DuckDB over the same Parquet files (issue 36).

    python bench/cold_query.py --runs 5
    python bench/cold_query.py --files 5000 --runs 5 --warehouse before=/tmp/before/bin/python --warehouse after=python
    python bench/cold_query.py --split 50 --runs 5 ...   # also a root ingested in 50 runs

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
files (bench/corpora.py), both made once under --corpus and reused; with ``--split K``, also the
first 10,000 of those files ingested in K runs (as data that came a little at a time: K files per
table), on which the point query is on ``response_id`` (its ``path_fields`` folder holds each run's
file, of which the views read the last). The roots are made by the first ``--warehouse``; with
``--own-roots``, each ``--warehouse`` makes and reads its own, under ``--corpus/LABEL`` (a change to what
an ingest writes), and plain DuckDB reads the first one's.

A notebook's next query (``--warm``): in one process, the query run ``WARM_REPEAT`` times on one
connection after a first, plain DuckDB's (``duckdb.connect().sql``) against ``warehouse.connect``'s;
the median per query. Every process runs with
bytecode caching on (``PYTHONPYCACHEPREFIX`` under --corpus), as an installed package has it, and
each command runs once untimed before the rounds. Markdown to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import os
import shutil
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


def inference_root(files: int, base: Path, python: str, env: dict, at: Path | None = None) -> Path:
    src = base / f"inference-{files}"
    if not (src / ".complete").exists():
        say(f"writing {files:,} inference files under {src} ...")
        subprocess.run([sys.executable, str(HERE / "corpora.py"), "inference", "--files", str(files),
                        "--out", str(src)], check=True)
        (src / ".complete").touch()
    return ingested(src, (at or base) / f"inference-{files}-wh", python, env)


def split_root(files: int, runs: int, base: Path, python: str, env: dict, at: Path | None = None) -> Path:
    """The first 10,000 of the ``files`` inference files ingested in ``runs`` runs, one slice each."""
    src = base / f"inference-{files}"
    root = (at or base) / f"inference-10000-in-{runs}-runs-wh"
    if not (root / ".complete").exists():
        shutil.rmtree(root, ignore_errors=True)
        paths = sorted(str(p) for p in src.rglob("*.json"))[:10_000]
        step = -(-len(paths) // runs)
        for i in range(0, len(paths), step):
            say(f"ingesting {root}: run {i // step + 1}/{runs} ...")
            subprocess.run([python, "-m", "warehouse.cli", "ingest", *paths[i:i + step], "--root", str(root), "--quiet"],
                           check=True, env=env, cwd=str(root.parent))
        (root / ".complete").touch()
    return root


def one_response_id(root: Path) -> str:
    import duckdb

    return duckdb.sql(f"SELECT min(response_id) FROM '{root}/responses/*.parquet'").fetchall()[0][0]


#: how many times ``--warm`` runs a query on one connection (after a first, untimed)
WARM_REPEAT = 20
WARM = """import statistics, time
{open}
con.sql({sql!r}).fetchall()
times = []
for _ in range({repeat}):
    t = time.perf_counter()
    con.sql({sql!r}).fetchall()
    times.append(time.perf_counter() - t)
print(statistics.median(times))
"""


def warm(roots: dict[str, Path], warehouses, env: dict, query: str, plain: str) -> list[tuple[str, float]]:
    """The median time of a query on an open connection, in each contender's process."""
    first = roots[warehouses[0][0]]
    cwd = str(first.parent)
    contenders = [("duckdb over the files", sys.executable, "import duckdb; con = duckdb.connect()",
                   plain.format(root=first))]
    contenders += [(f"`connect` {label}", python, f"import warehouse; con = warehouse.connect({str(roots[label])!r})",
                    query) for label, python in warehouses]
    out = []
    for label, python, opening, sql in contenders:
        proc = subprocess.run([python, "-c", WARM.format(open=opening, sql=sql, repeat=WARM_REPEAT)],
                              capture_output=True, text=True, env=env, cwd=cwd)
        if proc.returncode:
            raise SystemExit(f"{label} failed:\n{proc.stderr}")
        out.append((label, float(proc.stdout.split()[-1])))
    return out


def warm_table(name: str, results: list[tuple[str, float]]) -> None:
    plain = results[0][1]
    print(f"\n{name}\n")
    print("| connection | per query (median) | / duckdb |")
    print("|---|---|---|")
    for label, seconds in results:
        print(f"| {label} | {1000 * seconds:.1f} ms | {seconds / plain:.2f} |", flush=True)


def commands(roots: dict[str, Path], warehouses: list[tuple[str, str]], query: str,
             plain: str) -> list[tuple[str, list[str]]]:
    """Plain DuckDB over the first warehouse's root, and each warehouse's commands over its own (``roots``)."""
    out = [("duckdb over the files",
            [sys.executable, "-c", PLAIN.format(sql=plain.format(root=roots[warehouses[0][0]]))])]
    for label, python in warehouses:
        root = roots[label]
        out.append((f"`warehouse sql` {label}", [python, "-m", "warehouse.cli", "sql", query, "--root", str(root)]))
        out.append((f"`connect` + query {label}", [python, "-c", CONNECT.format(root=str(root), sql=query)]))
    return out


def measure(roots: dict[str, Path], warehouses, runs: int, env: dict, query: str,
            plain: str) -> list[tuple[str, float, float]]:
    cmds = commands(roots, warehouses, query, plain)
    cwd = str(roots[warehouses[0][0]].parent)  # not a checkout: `-c` and `-m` put the working directory first on sys.path
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
    ap.add_argument("--split", type=int, default=0, metavar="K", help="also a root of 10,000 files ingested in K runs")
    ap.add_argument("--warm", action="store_true", help="also a notebook's next query on an open connection")
    ap.add_argument("--own-roots", action="store_true",
                    help="each --warehouse reads roots it ingested itself (under --corpus/LABEL): a change to what is "
                         "written; plain DuckDB reads the first one's")
    ap.add_argument("--warehouse", action="append", default=[], metavar="LABEL=PYTHON",
                    help="a Python whose environment has the warehouse to measure (several: compared in one run)")
    args = ap.parse_args()
    base = Path(args.corpus)
    base.mkdir(parents=True, exist_ok=True)
    warehouses = [tuple(w.split("=", 1)) for w in args.warehouse] or [("", sys.executable)]
    env = environment(base)
    # each warehouse's folder of roots: its own (--own-roots), else the first one's, shared
    makers = warehouses if args.own_roots else warehouses[:1]
    at = {label: (base / label if args.own_roots else base) for label, _ in warehouses}

    def each(make) -> dict[str, Path]:
        made = {label: make(python, at[label]) for label, python in makers}
        return {label: made.get(label, made[makers[0][0]]) for label, _ in warehouses}

    for label, _ in makers:
        at[label].mkdir(parents=True, exist_ok=True)
    roots = [("the bundled samples", each(lambda python, where: ingested(SAMPLES, where / "samples-wh", python, env))),
             (f"{args.files:,} inference files",
              each(lambda python, where: inference_root(args.files, base, python, env, where)))]
    queries = [QUERIES, QUERIES]
    if args.split:
        split = each(lambda python, where: split_root(args.files, args.split, base, python, env, where))
        rid = one_response_id(split[warehouses[0][0]])  # (the same files ingested: the same ids in every root)
        roots.append((f"10,000 inference files ingested in {args.split} runs", split))
        queries.append([QUERIES[0], ("point query on response_id", f"SELECT response FROM responses WHERE response_id = '{rid}'",
                                     f"SELECT response FROM '{{root}}/responses/*.parquet' WHERE response_id = '{rid}'")])
    for (name, root), asked in zip(roots, queries):
        for label, query, plain in asked:
            say(f"{name}, {label}: {', '.join(sorted(set(map(str, root.values()))))}")
            table(f"{name}, {label} (`{query}`, median of {args.runs})",
                  measure(root, warehouses, args.runs, env, query, plain))
            if args.warm:
                warm_table(f"{name}, {label}: a notebook's next query (median of {WARM_REPEAT} on one connection)",
                           warm(root, warehouses, env, query, plain))


if __name__ == "__main__":
    main()
