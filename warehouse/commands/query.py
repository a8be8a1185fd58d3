"""``warehouse sql``, ``stats`` and ``history``: the commands that print what the warehouse holds."""

from __future__ import annotations

import sys

from warehouse.checks import HISTORY_FORMATS, SQL_FORMATS, STATS_FORMATS
from warehouse.commands.options import as_of, command, printed_format, root
from warehouse.errors import EXIT_OK, UsageError

SQL_DESCRIPTION = (
    "Run SQL (DuckDB dialect) on the warehouse views and print the result of its last statement on stdout. "
    "The query is the SQL argument, a file (-f FILE), or stdin (SQL or FILE given as -). "
    "Ctrl-C stops a running query at once."
)

SQL_EXAMPLES = """\
examples:
  warehouse sql "SELECT experiment, prompt_set, count(*) FROM responses GROUP BY ALL" --root wh
  warehouse sql "SELECT prompt_id, response FROM responses WHERE prompt_set = 'general/baseline'" --root wh --format json
  warehouse sql "SELECT * FROM quarantine" --root wh --format csv > quarantine.csv
  warehouse sql -f report.sql --root wh                 # the query from a file
  echo "SELECT count(*) FROM turns" | warehouse sql - --root wh   # or from stdin

The table format shows the first --max-rows rows (default 40) and how many there
are; csv, json and jsonl print every row. json and jsonl write each value as
DuckDB's to_json does (nested lists and structs, JSON columns as JSON, intervals,
blobs and times as text; NaN and infinities as null); csv and table as DuckDB's
text, with nested values as JSON.

every table is a view (docs/tables.md lists them with their columns), and more are derived
from them: warehouse sql "SHOW TABLES" --root wh lists every view
"""

STATS_DESCRIPTION = (
    "Print rows per table, and files and records (seen = ingested + quarantined) per format. "
    "Files with quarantined records are listed; --files lists every file."
)

STATS_EXAMPLES = """\
examples:
  warehouse stats --root wh
  warehouse stats --root wh --files --format json
"""

HISTORY_DESCRIPTION = (
    "List the warehouse snapshots, oldest first: number (what --as-of takes), time, operation, files "
    "ingested / replaced / pruned, rows added and removed, and whether it is still readable (no: compact "
    "deleted files it reads). --format json prints one JSON array, one object per snapshot (rows per "
    "table, each table's Delta version, readable true or false)."
)

HISTORY_EXAMPLES = """\
examples:
  warehouse history --root wh
  warehouse history --root wh --format json
  warehouse sql "SELECT count(*) FROM responses" --root wh --as-of 3   # as snapshot 3 was
"""


def add_sql(sub) -> None:
    """The ``sql`` command's arguments and help."""
    q = command(sub, "sql", help="run a SQL query on the warehouse views",
                description=SQL_DESCRIPTION, epilog=SQL_EXAMPLES)
    q.add_argument("query", metavar="SQL", nargs="?", help="the query; - reads it from stdin")
    q.add_argument("-f", "--file", metavar="FILE", help="read the query from FILE (- for stdin)")
    root(q)
    printed_format(q, SQL_FORMATS)
    q.add_argument("--max-rows", type=int, default=40, metavar="N",
                   help="rows the table format shows (default 40; 0 for all); the other formats print every row")
    q.add_argument("--max-width", type=int, default=None, metavar="N",
                   help="characters per line of the table format (default: the terminal's width, or 120 when stdout "
                        "is not a terminal; 0: no limit); longer values are cut, columns that do not fit left out")
    as_of(q, "read")


def add_stats(sub) -> None:
    """The ``stats`` command's arguments and help."""
    s = command(sub, "stats", help="rows per table and records per format and file",
                description=STATS_DESCRIPTION, epilog=STATS_EXAMPLES)
    root(s)
    printed_format(s, STATS_FORMATS)
    s.add_argument("--files", action="store_true", help="list every file, not only those with quarantined records")


def add_history(sub) -> None:
    """The ``history`` command's arguments and help."""
    h = command(sub, "history", help="the warehouse snapshots: what each ingest or compact did",
                description=HISTORY_DESCRIPTION, epilog=HISTORY_EXAMPLES)
    root(h)
    printed_format(h, HISTORY_FORMATS)


def cmd_sql(args) -> int:
    import warehouse

    warehouse.sql(args.root, _query_text(args), output_format=args.format, max_rows=args.max_rows, max_width=args.max_width,
                  as_of=args.as_of, storage_options=args.storage_options)
    return EXIT_OK


def _query_text(args) -> str:
    """The query: the SQL argument, or -f FILE, or stdin for ``-``."""
    if (args.query is None) == (args.file is None):
        raise UsageError("give the query as SQL, or -f FILE (- for stdin), not both" if args.query else
                         "no query: give SQL, or -f FILE, or - to read it from stdin")
    source = args.file if args.file is not None else args.query
    if args.file is None and source != "-":
        return source
    if source == "-":
        text = sys.stdin.read()
    else:
        try:
            with open(source, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"-f {source}: {getattr(e, 'strerror', None) or e}") from None
    if not text.strip():
        raise UsageError(f"{'stdin' if source == '-' else source}: no SQL in it")
    return text


def cmd_stats(args) -> int:
    import warehouse

    warehouse.stats(args.root, files=args.files, output_format=args.format, storage_options=args.storage_options)
    return EXIT_OK


def cmd_history(args) -> int:
    import warehouse

    warehouse.history(args.root, output_format=args.format, storage_options=args.storage_options)
    return EXIT_OK
