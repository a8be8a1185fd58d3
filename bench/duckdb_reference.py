"""DuckDB doing the warehouse's work, in SQL alone: the fair reference for ingest speed.

    python bench/duckdb_reference.py afterimage 'DIR/*.jsonl' OUT_DIR [--read once|each] [--threads N]
    python bench/duckdb_reference.py copy 'DIR/**/*.json' OUT_DIR

``afterimage`` reads the AfterImage JSONL (with the same explicit schema the
warehouse's fast path parses against) and writes, as zstd Parquet (level 1, as the
warehouse writes):

* ``responses``: one row per line, a hash id per record (of the file and the line's
  ordinal), the last assistant message and the last user message before it, the
  metadata fields, the texts, the final score;
* ``turns``: one row per message, with its index, the record's id and a locator;
* ``evaluations``: one row per criterion score, the grade and the final score.

``--read once`` (default) parses the JSON once into a temporary table and writes the
three tables from it; ``--read each`` lets each COPY read the files again (less
memory, three parses). ``copy`` is the plain ``COPY (SELECT * FROM read_json(...))``
a user would type for the inference files (one table, nothing flattened).

Run by bench/versus.py beside the warehouse, each in its own process, so time and
memory are measured from outside the same way for both.
"""

from __future__ import annotations

import argparse
import os

import duckdb

_MESSAGE = "STRUCT(role VARCHAR, content VARCHAR, reasoning_content VARCHAR)"
_CRITERION = "STRUCT(score DOUBLE, feedback VARCHAR)"
CRITERIA = ("coherence", "factuality", "grounding", "helpfulness", "relevance")
COLUMNS = {
    "conversations": f"{_MESSAGE}[]",
    "metadata": ("STRUCT(context_id VARCHAR, context_ids VARCHAR[], persona_name VARCHAR, "
                 "persona_generation_depth BIGINT, instruction_index BIGINT, batch_id VARCHAR, session_id VARCHAR)"),
    "instruction_context": "VARCHAR",
    "response_context": "VARCHAR",
    "persona": "VARCHAR",
    "evaluation": "STRUCT(" + ", ".join(f"{c} {_CRITERION}" for c in CRITERIA) + ", overall_grade VARCHAR)",
    "final_score": "DOUBLE",
}
PARQUET = "(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1)"


def _read(glob: str) -> str:
    cols = "{" + ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items()) + "}"
    # the record's ordinal in its file: what the warehouse's locator (the line number) says
    return f"""
        SELECT *, row_number() OVER (PARTITION BY filename) AS line,
               hash(filename, line) AS id
        FROM read_json('{glob}', format='newline_delimited', columns={cols}, filename=true)"""


def _responses(src: str) -> str:
    return f"""
        WITH s AS (
            SELECT *, list_max(list_transform(conversations,
                                              lambda m, i: CASE WHEN m.role = 'assistant' THEN i END)) AS answer
            FROM ({src}))
        SELECT printf('%016x', id) AS response_id, printf('%016x', id) AS record_id, 'afterimage' AS source_format,
               filename AS source_path, CAST(line AS VARCHAR) AS source_locator, line - 1 AS record_index,
               0::INTEGER AS candidate_index,
               conversations[list_max(list_transform(conversations,
                   lambda m, i: CASE WHEN m.role = 'user' AND (answer IS NULL OR i < answer) THEN i END))].content AS prompt,
               conversations[answer].content AS response,
               persona, instruction_context, response_context,
               metadata.context_id, metadata.context_ids, metadata.persona_name, metadata.persona_generation_depth,
               metadata.instruction_index, metadata.batch_id, metadata.session_id, final_score
        FROM s"""


def _turns(src: str) -> str:
    return f"""
        SELECT response_id, record_id, turn_index, role, content, reasoning_content, source_path,
               line || '.conversations[' || turn_index || ']' AS source_locator
        FROM (SELECT printf('%016x', id) AS response_id, printf('%016x', id) AS record_id,
                     (generate_subscripts(conversations, 1) - 1)::INTEGER AS turn_index,
                     unnest(conversations, recursive := true), filename AS source_path, line
              FROM ({src}))"""


def _evaluations(src: str) -> str:
    parts = [f"{{'criterion': '{c}', 'score': evaluation.{c}.score, 'label': NULL::VARCHAR, "
             f"'feedback': evaluation.{c}.feedback}}" for c in CRITERIA]
    parts.append("{'criterion': 'overall_grade', 'score': NULL::DOUBLE, 'label': evaluation.overall_grade, "
                 "'feedback': NULL::VARCHAR}")
    parts.append("{'criterion': 'final_score', 'score': final_score, 'label': NULL::VARCHAR, 'feedback': NULL::VARCHAR}")
    return f"""
        SELECT printf('%016x', id) AS response_id, printf('%016x', id) AS record_id, filename AS source_path,
               line || '.evaluation.' || e.criterion AS source_locator, e.*,
               CASE WHEN e.score IS NULL THEN NULL WHEN e.score > 1 THEN '0-100' ELSE '0-1' END AS score_scale
        FROM (SELECT *, unnest([{", ".join(parts)}]) AS e FROM ({src}) WHERE evaluation IS NOT NULL)"""


def afterimage(glob: str, out: str, read: str) -> None:
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order=false")
    src = _read(glob)
    if read == "once":
        con.execute(f"CREATE TEMP TABLE src AS {src}")
        src = "SELECT * FROM src"
    for name, sql in (("responses", _responses), ("turns", _turns), ("evaluations", _evaluations)):
        con.execute(f"COPY ({sql(src)}) TO '{os.path.join(out, name + '.parquet')}' {PARQUET}")


def copy(glob: str, out: str) -> None:
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order=false")
    con.execute(f"COPY (SELECT * FROM read_json('{glob}')) TO '{os.path.join(out, 'copy.parquet')}' (FORMAT parquet)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["afterimage", "copy"])
    ap.add_argument("glob")
    ap.add_argument("out")
    ap.add_argument("--read", choices=["once", "each"], default="once")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.kind == "afterimage":
        afterimage(a.glob, a.out, a.read)
    else:
        copy(a.glob, a.out)


if __name__ == "__main__":
    main()
