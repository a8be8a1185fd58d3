"""Where each exported file goes, decided in SQL over the whole selection before anything is written.

* Files in an ``experiments/`` tree keep their path below its last ``experiments/``
  segment: ``<out>/experiments/{the same relative path}``, so every field derived
  from the path (experiment, prompt set, prompt id, trait, run, ...) comes back.
* Other files (trait-interp files outside such a tree, and the files of other
  formats wherever they are) go to ``<out>/other/{their path below the deepest
  directory they all share}``; a file of another format that is not ``.json``
  gets ``.json`` appended (``conversations.jsonl`` -> ``conversations.jsonl.json``).
* Annotation files and ``metadata.json`` files follow the same rule, so they stay
  the siblings of the response files they describe.
* Every path then follows the export's rule for names (``kit.safe_path``):
  a hidden part gets ``_`` for its dot, a part too long is shortened, so the
  ingest reads back every file the export writes.

The plan is the format's own: temp tables on the export's connection, made before the
selection is staged with the export kit (``warehouse.exports.kit``), which joins it:

``layout_out(response_id, source_path, out_path, out_index, single, native)``
    each response to write, its file and its position in it (arrays are
    compacted: positions follow the selection);
``layout_files(source_path, kind, out_path)``
    every trait-interp file to write: responses, annotations, metadata.
"""

from __future__ import annotations

import os

import duckdb

from warehouse.errors import UsageError
from warehouse.exports import kit

#: a trait-interp file in an experiments tree keeps its place below the tree's last experiments/ segment
IN_TREE = "(kind <> 'foreign' AND regexp_matches(source_path, '(?:^|/)experiments/'))"
#: (?s): a folder's name may hold a newline, which RE2's '.' does not match without it
TREE_REL = "regexp_extract(source_path, '(?s)^(?:.*/)?experiments/(.*)$', 1)"

ROWS_SQL = """
CREATE OR REPLACE TEMP TABLE layout_rows AS
SELECT r.response_id, r.source_path, r.source_format, r.source_locator, r.record_index, r.candidate_index,
       r.source_format = 'trait_interp' AS native
FROM responses AS r
WHERE r.response_id IN (SELECT response_id FROM selected)
  AND (r.source_format = 'trait_interp' OR (r.prompt IS NOT NULL AND r.response IS NOT NULL))
"""

FILES_SQL = """
CREATE OR REPLACE TEMP TABLE layout_sources AS
SELECT DISTINCT source_path, CASE WHEN native THEN 'responses' ELSE 'foreign' END AS kind FROM layout_rows
UNION ALL
SELECT DISTINCT a.source_path, 'annotations' AS kind FROM annotations AS a
WHERE a.response_id IN (SELECT response_id FROM layout_rows WHERE native)
  AND a.source_path IN (SELECT source_path FROM annotation_sets)
UNION ALL
SELECT g.source_path, 'metadata' FROM generation_metadata AS g
WHERE g.responses_dir IN (SELECT DISTINCT regexp_replace(source_path, '/[^/]*$', '') FROM layout_rows WHERE native)
"""

OUT_SQL = """
CREATE OR REPLACE TEMP TABLE layout_files AS
SELECT source_path, kind,
       CASE WHEN {in_tree} THEN 'experiments/' || {tree_rel}
            ELSE 'other/' || substr(source_path, {cut})
                 || CASE WHEN kind = 'foreign' AND NOT suffix(source_path, '.json') THEN '.json' ELSE '' END
       END AS out_path
FROM layout_sources
"""

RESPONSES_OUT_SQL = """
CREATE OR REPLACE TEMP TABLE layout_out AS
SELECT r.response_id, r.source_path, f.out_path, r.native,
       r.native AND r.source_locator = '' AS single,
       row_number() OVER (PARTITION BY r.source_path
                          ORDER BY r.record_index, r.candidate_index, r.source_locator, r.response_id) - 1
           AS out_index
FROM layout_rows AS r JOIN layout_files AS f ON f.source_path = r.source_path AND f.kind IN ('responses', 'foreign')
"""


def plan(con: duckdb.DuckDBPyConnection) -> None:
    """Make ``layout_out`` and ``layout_files``; raise UsageError when two files would land on one path."""
    con.execute(ROWS_SQL)
    con.execute(FILES_SQL)
    low, high = con.execute(
        f"SELECT min(source_path), max(source_path) FROM layout_sources WHERE NOT {IN_TREE}"
    ).fetchall()[0]
    shared = os.path.commonprefix([low, high]) if low is not None else ""
    shared = shared[: shared.rfind("/") + 1]
    con.execute(OUT_SQL.format(in_tree=IN_TREE, tree_rel=TREE_REL, cut=len(shared) + 1))
    _safe_names(con)
    clash = con.execute(
        "SELECT out_path, min(source_path), max(source_path) FROM layout_files GROUP BY out_path "
        "HAVING count(*) > 1 ORDER BY out_path LIMIT 1"
    ).fetchall()
    if clash:
        out, a, b = clash[0]
        raise UsageError(
            f"cannot export as trait_interp: {a} and {b} would both be written to {out} "
            f"(two experiments trees with the same layout); select one tree with --where, "
            f"e.g. \"source_path LIKE '{tree_root(a)}%'\""
        )
    con.execute(RESPONSES_OUT_SQL)


def _safe_names(con: duckdb.DuckDBPyConnection) -> None:
    """Paths as the export can write them and the ingest reads them back (``kit.safe_path``:
    no hidden parts, none too long, none too deep); usually every path is already so."""
    changed = [(safe, source, kind) for source, kind, out in con.execute("SELECT source_path, kind, out_path FROM layout_files").fetchall()
               if (safe := kit.safe_path(out)) != out]
    if changed:
        con.executemany("UPDATE layout_files SET out_path = ? WHERE source_path = ? AND kind = ?", changed)


def tree_root(path: str) -> str:
    """The directory holding a path's last ``experiments/`` segment, with its slash."""
    i = path.rfind("/experiments/")
    return path[: i + 1] if i >= 0 else os.path.dirname(path) + "/"
