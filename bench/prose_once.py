"""What keeping AfterImage's conversation text in one place would cost the queries (issue 20).

    python bench/prose_once.py --root WH [--runs 5]

``responses.prompt`` and ``responses.response`` repeat two messages of ``turns.content``. Storing
them once (in ``turns``) and deriving them in the ``responses`` view is the one lever left for
AfterImage ingest speed (bench/README.md, stop 28). This measures the other side of that trade,
on a warehouse already ingested from AfterImage JSONL (``WH``): the same responses written two
ways as zstd Parquet under ``--out``, with the text (as now) and without it but with the turn
indexes of the prompt and the answer, and each query below run on both (the second through a
view that joins ``turns`` twice). Both layouts are checked to give the same texts first.
Markdown to stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import say  # noqa: E402

PARQUET = "(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE 12288)"
QUERIES = [
    ("one persona, no text", "SELECT response_id, batch_id FROM {r} WHERE persona_name = $persona"),
    ("one persona, with the texts", "SELECT response_id, prompt, response FROM {r} WHERE persona_name = $persona"),
    ("substring search in response", "SELECT response_id, response FROM {r} WHERE contains(response, $word)"),
    ("count, case-insensitive search", "SELECT count(*) FROM {r} WHERE response ILIKE '%' || $word || '%'"),
    ("every text's length", "SELECT sum(length(prompt)), sum(length(response)) FROM {r}"),
]


def write_layouts(root: str, out: Path) -> None:
    import warehouse

    con = warehouse.connect(root)
    say(f"writing both layouts under {out} ...")
    con.execute(f"COPY (SELECT response_id, role, turn_index, content FROM turns) TO '{out}/turns.parquet' {PARQUET}")
    con.execute(f"COPY (SELECT response_id, persona_name, batch_id, prompt, response FROM responses) "
                f"TO '{out}/stored.parquet' {PARQUET}")
    # the exchange as ingest/afterimage/fast.py picks it: the last assistant message, and the last
    # user message before it (or the last user message when there is no answer)
    con.execute(f"""COPY (
        WITH answer AS (SELECT response_id, max(turn_index) FILTER (role = 'assistant') AS response_turn
                        FROM turns GROUP BY ALL),
             exchange AS (SELECT t.response_id, a.response_turn,
                                 max(t.turn_index) FILTER (t.role = 'user' AND (a.response_turn IS NULL
                                                           OR t.turn_index < a.response_turn)) AS prompt_turn
                          FROM turns t JOIN answer a USING (response_id) GROUP BY ALL)
        SELECT r.response_id, r.persona_name, r.batch_id, e.prompt_turn, e.response_turn
        FROM responses r LEFT JOIN exchange e USING (response_id)) TO '{out}/derived.parquet' {PARQUET}""")
    con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, help="a warehouse ingested from AfterImage JSONL")
    ap.add_argument("--out", help="where the two layouts are written (default: a folder under the system's temp)")
    ap.add_argument("--runs", type=int, default=5, help="runs per query after a first (warm-up) run")
    a = ap.parse_args()
    a.runs = max(a.runs, 1)
    out = Path(a.out or tempfile.mkdtemp(prefix="prose-once-"))
    out.mkdir(parents=True, exist_ok=True)
    if not (out / "derived.parquet").exists():
        write_layouts(a.root, out)
    import duckdb

    con = duckdb.connect()
    con.execute(f"CREATE VIEW turns AS SELECT * FROM '{out}/turns.parquet'")
    con.execute(f"CREATE VIEW stored AS SELECT * FROM '{out}/stored.parquet'")
    con.execute(f"""CREATE VIEW derived AS
        SELECT r.response_id, r.persona_name, r.batch_id, p.content AS prompt, a.content AS response
        FROM '{out}/derived.parquet' r
        LEFT JOIN turns p ON p.response_id = r.response_id AND p.turn_index = r.prompt_turn
        LEFT JOIN turns a ON a.response_id = r.response_id AND a.turn_index = r.response_turn""")
    differ = con.sql("SELECT count(*) FROM stored s JOIN derived d USING (response_id) "
                     "WHERE s.prompt IS DISTINCT FROM d.prompt OR s.response IS DISTINCT FROM d.response").fetchall()[0][0]
    if differ:
        sys.exit(f"the two layouts differ in {differ:,} responses: not comparable")
    persona = con.sql("SELECT persona_name FROM stored GROUP BY ALL ORDER BY count(*), persona_name LIMIT 1 OFFSET 3").fetchall()[0][0]
    first = con.sql("SELECT response FROM stored WHERE response IS NOT NULL ORDER BY response_id LIMIT 1").fetchall()[0][0]
    word = next(w.strip(".,!?") for w in first.split() if len(w.strip(".,!?")) >= 6)  # a rarer word than "a"
    n = con.sql("SELECT count(*) FROM stored").fetchall()[0][0]
    print(f"{n:,} responses; persona {persona!r}, word {word!r}; DuckDB threads = {os.cpu_count()}\n")
    print("| query | rows | text stored (median) | text derived from turns (median) | derived / stored |\n|---|---|---|---|---|")
    for name, sql in QUERIES:
        params = {k: v for k, v in (("persona", persona), ("word", word)) if "$" + k in sql}
        medians = []
        for view in ("stored", "derived"):
            times = []
            for _ in range(a.runs + 1):
                t = time.perf_counter()
                rows = con.sql(sql.format(r=view), params=params).to_arrow_table()
                times.append(time.perf_counter() - t)
            medians.append(statistics.median(times[1:]))
        print(f"| {name} | {rows.num_rows:,} | {medians[0] * 1000:.0f} ms | {medians[1] * 1000:.0f} ms | "
              f"{medians[1] / medians[0]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
