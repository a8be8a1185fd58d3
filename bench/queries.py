"""Query latency on a warehouse of 1M responses (path-derived fields, text, span annotations).

    python bench/queries.py [--responses 1000000] [--runs 5]

Builds (once, under --corpus) steering arrays of 100 responses over 5 experiments
and 20 prompt sets, a fifth of them with span annotations, and ingests them.
Each query runs --runs times on one connection, its result fetched as an Arrow
table; the table gives the first run and the median of the others, with the rows
returned. Progress on stderr.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import say  # noqa: E402

QUERIES = [
    ("filter by experiment and prompt set",
     "SELECT response_id, trait, layers, coefficients FROM responses WHERE experiment = 'bench3' AND prompt_set = 'set8'"),
    ("same filter, with the prompt and response texts",
     "SELECT response_id, prompt, response FROM responses WHERE experiment = 'bench3' AND prompt_set = 'set8'"),
    ("count by experiment and prompt set",
     "SELECT experiment, prompt_set, count(*) FROM responses GROUP BY ALL"),
    ("substring search in response",
     "SELECT response_id, response FROM responses WHERE contains(response, 'misace')"),
    ("substring search, case-insensitive",
     "SELECT count(*) FROM responses WHERE response ILIKE '%misace%'"),
    ("spans of one category joined to their responses",
     "SELECT a.span, a.char_start, a.char_end, r.experiment, r.prompt_set, r.response "
     "FROM annotations a JOIN responses r USING (response_id) WHERE a.category = 'flattery'"),
    ("annotated_spans view, one category",
     "SELECT span_text, experiment, prompt_set FROM annotated_spans WHERE category = 'hedging'"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--responses", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5, help="runs per query (at least 2: the first, and the median of the rest)")
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "warehouse-bench"))
    a = ap.parse_args()
    a.runs = max(a.runs, 2)
    base = Path(a.corpus)
    src, root = base / f"queries-{a.responses}", base / f"queries-{a.responses}-wh"
    if not (src / ".complete").exists():
        say(f"writing {a.responses:,} steering responses under {src} ...")
        subprocess.run([sys.executable, str(Path(__file__).parent / "corpora.py"), "steering", "--responses",
                        str(a.responses), "--annotate", "0.2", "--out", str(src)], check=True)
        (src / ".complete").touch()
    if not (root / ".warehouse" / "snapshots").is_dir():
        say(f"ingesting into {root} ...")
        t = time.monotonic()
        subprocess.run([sys.executable, "-m", "warehouse.cli", "ingest", str(src), "--root", str(root)], check=True)
        say(f"ingested in {time.monotonic() - t:.1f} s")
    import warehouse
    import warehouse.store.readable

    con = warehouse.connect(root)
    n = con.execute("SELECT count(*) FROM responses").fetchall()[0][0]
    spans = con.execute("SELECT count(*) FROM annotations").fetchall()[0][0]
    files = sum(len(v) for v in warehouse.store.readable.snapshot_files(root).values())
    print(f"{n:,} responses, {spans:,} annotations, {files} Parquet files, DuckDB threads = {os.cpu_count()}\n")
    print("| query | rows | first run | median of the next |\n|---|---|---|---|")
    for name, sql in QUERIES:
        times = []
        for _ in range(a.runs):
            t = time.perf_counter()
            rows = con.sql(sql).to_arrow_table()  # as a notebook reads it (Arrow, polars)
            times.append(time.perf_counter() - t)
        print(f"| {name} | {rows.num_rows:,} | {times[0] * 1000:.0f} ms | {statistics.median(times[1:]) * 1000:.0f} ms |", flush=True)


if __name__ == "__main__":
    main()
