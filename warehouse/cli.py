"""The ``warehouse`` command. Every command is a thin wrapper over the public function of its name.

``warehouse ingest PATH --root wh --max-record-mb 8`` calls ``warehouse.ingest(PATH, "wh",
max_record_mb=8)``: an option and the parameter it fills have the same name (``--no-wait``
fills ``wait=False``), and the function checks the values (``warehouse.checks``), so the
command line and Python accept and refuse the same things. Only ``--quiet`` (no progress
bar: ``progress=False``, and no summary, which the function returns) and ``sql -f FILE``
(the query read from a file) are the command line's own (``tests/test_parity.py``).

stdout carries data only (query results, stats); progress, summaries and errors
go to stderr. A fault ends in one line on stderr saying what state things are in, and
the exit code of its kind (``warehouse.errors``: ``EXIT_*`` and each error's ``exit_code``).

Start-up imports nothing heavy at module level: everything a command needs is
imported inside ``main``, where a Ctrl-C is caught like anywhere else.
"""

from __future__ import annotations

import os
import sys

from warehouse import __version__
from warehouse.checks import ENGINES, SQL_FORMATS, STATS_FORMATS
from warehouse.errors import EXIT_INTERRUPTED, EXIT_OK, UsageError, WarehouseError
from warehouse.run.maintenance import HISTORY_FORMATS, RETENTION_HOURS

INGEST_EXAMPLES = """\
examples:
  warehouse ingest experiments/ --root wh
  warehouse ingest data/conversations.jsonl --root wh --format NAME --strict   # NAME: see --format
  warehouse ingest experiments/ --root wh --prune      # also drop rows of deleted files
  warehouse ingest /shared/experiments/ --root /shared/wh --engine spark --spark-master spark://head:7077
"""

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

TOKENIZE_EXAMPLES = """\
examples:
  warehouse tokenize --root wh --tokenizer ~/models/gemma-2-2b-it
  warehouse tokenize --root wh --tokenizer google/gemma-2-2b-it   # from the local Hugging Face cache (HF_HOME)
  warehouse ingest experiments/ --root wh --tokenizer ~/models/gemma-2-2b-it   # the same, while ingesting
"""

EXPORT_EXAMPLES = """\
examples:
  warehouse export --root wh --where "experiment = 'demo' AND prompt_set = 'general/baseline'" --format parquet --out subset/
  warehouse export --root wh --where "run_kind = 'steered' AND coherence_score > 70" --format jsonl --out steered.jsonl
  warehouse export --root wh --where "response IS NOT NULL" --format openai_chat --out train.jsonl
  warehouse export --root wh --where "source_format = 'NAME'" --format NAME --out export_tree/   # back to the source

formats: parquet, jsonl, csv, openai_chat (any responses, whatever format they came from)
back to a source format: {back}
  (the installed formats that write their own shape; `warehouse ingest` reads the output back as that format)
(the --where predicate is SQL on the responses view: warehouse sql "DESCRIBE responses" lists its columns)
"""


def _export_epilog() -> str:
    """EXPORT_EXAMPLES with the installed formats that export back to their own shape. Knowing which
    do means loading the formats (not their exporters): done for ``export --help`` only."""
    from warehouse.formatkit.registry import Registry, _load

    back = sorted(name for name, ref in Registry.installed().refs if type(_load(name, ref)).exporter is not None)
    return EXPORT_EXAMPLES.format(back=", ".join(back) or "none installed")

STATS_EXAMPLES = """\
examples:
  warehouse stats --root wh
  warehouse stats --root wh --files --format json
"""


MAIN_EXAMPLES = """\
examples:
  warehouse ingest experiments/ --root wh
  warehouse sql "SELECT experiment, count(*) FROM responses GROUP BY ALL" --root wh
  warehouse export --root wh --where "experiment = 'demo'" --format jsonl --out demo.jsonl
  warehouse stats --root wh
  warehouse view --root wh

run `warehouse COMMAND --help` for the options and examples of each command
"""

def _formats() -> list[str]:
    """The installed formats' names, read from the installed metadata: no format is imported."""
    from warehouse.formatkit.registry import Registry

    return Registry.installed().names()


HISTORY_EXAMPLES = """\
examples:
  warehouse history --root wh
  warehouse history --root wh --format json
  warehouse sql "SELECT count(*) FROM responses" --root wh --as-of 3   # as snapshot 3 was
"""

VIEW_EXAMPLES = """\
examples:
  warehouse view --root wh
  warehouse view --root wh --where "response_id IN (SELECT response_id FROM annotations)" --port 8765 --no-browser
  warehouse view --root wh --where "trait = 'pv_natural/sycophancy'" --out sycophancy.html
  warehouse view --root wh --where "source_format = 'NAME'" --out all.html --limit 2000

Pages: the list (sortable, paged), one response (/responses/ID: text with its annotation spans,
conversation, tokens, sentences, per-token values, evaluations, provenance), compare, spans by
category. The server listens on 127.0.0.1 only and only reads. docs/viewer.md
"""

COMPACT_EXAMPLES = """\
examples:
  warehouse compact --root wh
  warehouse compact --root wh --retention-hours 0    # keep only what the latest snapshots need
"""


def _root(p, help: str = "warehouse directory or s3:// URL") -> None:
    """``--root`` and the ``--storage-option`` that goes with an s3:// root: the same on every command."""
    p.add_argument("--root", required=True, help=help)
    _storage_option(p)


def _storage_option(p, what: str = "an s3:// --root") -> None:
    """``--storage-option KEY=VALUE``: the same option on every command (parsed by ``access.canonical``)."""
    p.add_argument("--storage-option", dest="storage_options", action="append", metavar="KEY=VALUE",
                   help=f"for {what}: aws_region, aws_endpoint_url, aws_access_key_id, ... (repeatable; "
                        "overrides the AWS_* environment; see docs/storage.md)")


def build_parser(format_names: bool = True):
    """The command line. ``format_names=False`` leaves the format names out of ``ingest --help``,
    so commands other than ingest start without reading the installed packages' metadata."""
    import argparse  # here, not at the top: a Ctrl-C while it loads is caught by main
    import textwrap

    class Command(argparse.ArgumentParser):
        """The parser of one command. An unknown option is reported with this command's usage (argparse
        hands a command's leftovers to the top level, whose usage names none of its options); an epilog
        given as a function is made only when the help is shown."""

        def parse_known_args(self, args=None, namespace=None):
            namespace, extras = super().parse_known_args(args, namespace)
            if extras:
                self.error(f"unrecognized arguments: {' '.join(extras)}")
            return namespace, extras

        def format_help(self) -> str:
            if callable(self.epilog):
                self.epilog = self.epilog()
            return super().format_help()

    parser = argparse.ArgumentParser(
        prog="warehouse",
        description="A columnar warehouse for LLM response data: ingest JSON files into Parquet, query them with SQL.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=MAIN_EXAMPLES,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Command)

    p = sub.add_parser(
        "ingest",
        help="read files and directories into the warehouse",
        description=textwrap.dedent(
            """\
            Walk PATHs (recursively), detect each file's format, and add its records to the
            warehouse at --root (created when missing). Unchanged files are skipped; a changed
            file replaces its own rows. Records that cannot be ingested go to the quarantine
            table with the reason. Progress and a summary go to stderr.
            """
        ),
        epilog=INGEST_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or directories to ingest")
    p.add_argument("--root", required=True, help="warehouse directory or s3:// URL (created when missing)")
    p.add_argument("--format", metavar="NAME",
                   help="read every file as this format" + (": " + ", ".join(_formats()) if format_names else ""))
    p.add_argument("--strict", action="store_true", help="stop at the first bad record (file:locator: stage: message), exit 3, change nothing")
    p.add_argument("--prune", action="store_true", help="remove the rows of catalogued files under PATHs that no longer exist")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: one per core)")
    p.add_argument("--no-wait", dest="wait", action="store_false", help="fail (exit 4) instead of waiting when another ingest holds the warehouse (the default is to wait)")
    p.add_argument("--max-record-mb", type=float, default=64.0, help="largest single record read, in MB (default 64); larger ones are quarantined")
    tok = p.add_mutually_exclusive_group()
    tok.add_argument("--tokenizer", metavar="DIR|MODEL",
                     help="local tokenizer directory (transformers), or a model id found in the local Hugging Face "
                          "cache (never downloaded), for token ranges of responses without stored tokens; remembered "
                          "for later runs (without one: each response's own model, when the cache holds it)")
    tok.add_argument("--no-tokenizer", dest="tokenizer", action="store_const", const=False,
                     help="forget the tokenizer remembered from an earlier run (token ranges it gave are dropped)")
    p.add_argument("--engine", default="local", choices=ENGINES,
                   help="where the files are read: local (this machine's cores, the default) or spark (Spark tasks; docs/spark.md)")
    p.add_argument("--spark-master", metavar="URL",
                   help="with --engine spark: the Spark master (spark://host:7077, local[4], ...); default: the session's own. "
                        "Spark's own log is kept out of sight: WAREHOUSE_SPARK_LOG=FILE appends it to FILE")
    _storage_option(p, "s3:// PATHs and --root")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary on stderr")

    t = sub.add_parser(
        "tokenize",
        help="add token ranges to an existing warehouse with a local tokenizer",
        description=(
            "Re-read the annotation files of the warehouse with a tokenizer loaded from a local directory "
            "or found by its model id in the local Hugging Face cache (transformers; nothing is downloaded), "
            "so spans in responses without stored tokens get token ranges. Only the files "
            "that need it are read again; the tokenizer is remembered for later ingests."
        ),
        epilog=TOKENIZE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _root(t)
    t.add_argument("--tokenizer", required=True, metavar="DIR|MODEL",
                   help="local tokenizer directory, or a model id found in the local Hugging Face cache")
    t.add_argument("--jobs", type=int, default=None, help="worker processes (default: one per core)")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary on stderr")

    q = sub.add_parser(
        "sql",
        help="run a SQL query on the warehouse views",
        description=(
            "Run SQL (DuckDB dialect) on the warehouse views and print the result of its last statement on stdout. "
            "The query is the SQL argument, a file (-f FILE), or stdin (SQL or FILE given as -). "
            "Ctrl-C stops a running query at once."
        ),
        epilog=SQL_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    q.add_argument("query", metavar="SQL", nargs="?", help="the query; - reads it from stdin")
    q.add_argument("-f", "--file", metavar="FILE", help="read the query from FILE (- for stdin)")
    _root(q)
    q.add_argument("--format", default="table", choices=SQL_FORMATS, help="output format (default: table)")
    q.add_argument("--max-rows", type=int, default=40, metavar="N",
                   help="rows the table format shows (default 40; 0 for all); the other formats print every row")
    q.add_argument("--max-width", type=int, default=None, metavar="N",
                   help="characters per line of the table format (default: the terminal's width, or 120 when stdout "
                        "is not a terminal; 0: no limit); longer values are cut, columns that do not fit left out")
    q.add_argument("--as-of", type=int, default=None, metavar="N",
                   help="read warehouse snapshot N (`warehouse history` lists them; default: the latest)")

    e = sub.add_parser(
        "export",
        help="export a filtered subset, as Parquet, JSONL, CSV, chat messages or a source format",
        description=(
            "Export the responses matching --where (a SQL predicate on the responses view), with their turns, "
            "sentences, annotations and evaluations, to --out. The output is written under a temporary name and "
            "renamed into place, so a failed or interrupted (Ctrl-C) export leaves nothing behind. A progress bar "
            "(percentage, time left) goes to stderr on a terminal."
        ),
        epilog=_export_epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _root(e)
    e.add_argument("--where", default=None,
                   help="one SQL expression on responses; subqueries may read the warehouse's views, nothing else "
                        "(default: every response)")
    e.add_argument("--format", required=True, metavar="FMT", help="output format (see below)")
    e.add_argument("--out", required=True,
                   help="output file, or directory for the formats that write one (parquet, some source formats); "
                        "a local path, also for an s3:// --root")
    e.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    e.add_argument("--memory-limit", default="1GB", metavar="SIZE",
                   help="DuckDB's memory for the export; beyond it, it spills to disk beside --out (default: 1GB)")
    e.add_argument("--as-of", type=int, default=None, metavar="N",
                   help="export from warehouse snapshot N (`warehouse history` lists them; default: the latest)")
    e.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary on stderr")

    s = sub.add_parser(
        "stats",
        help="rows per table and records per format and file",
        description=(
            "Print rows per table, and files and records (seen = ingested + quarantined) per format. "
            "Files with quarantined records are listed; --files lists every file."
        ),
        epilog=STATS_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _root(s)
    s.add_argument("--format", default="table", choices=STATS_FORMATS, help="output format (default: table)")
    s.add_argument("--files", action="store_true", help="list every file, not only those with quarantined records")

    h = sub.add_parser(
        "history",
        help="the warehouse snapshots: what each ingest or compact did",
        description=(
            "List the warehouse snapshots, oldest first: number (what --as-of takes), time, operation, files "
            "ingested / replaced / pruned, rows added and removed, and whether it is still readable (no: compact "
            "deleted files it reads). --format json prints one JSON array, one object per snapshot (rows per "
            "table, each table's Delta version, readable true or false)."
        ),
        epilog=HISTORY_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _root(h)
    h.add_argument("--format", default="table", choices=HISTORY_FORMATS, help="output format (default: table)")

    v = sub.add_parser(
        "view",
        help="look at responses in a browser: text with its spans, tokens, scores; or write them to one HTML file",
        description=(
            "Serve the responses matching --where on 127.0.0.1 (a free port unless --port), print the URL on "
            "stderr and open a browser (unless --no-browser), until Ctrl-C. With --out, write one self-contained "
            "HTML file of them instead (the first --limit)."
        ),
        epilog=VIEW_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _root(v)
    v.add_argument("--where", default=None,
                   help="one SQL expression on responses, as for export (default: every response)")
    v.add_argument("--as-of", type=int, default=None, metavar="N",
                   help="view warehouse snapshot N (`warehouse history` lists them; default: the latest)")
    v.add_argument("--port", type=int, default=None, metavar="N", help="serve on this port (default: a free one)")
    v.add_argument("--no-browser", dest="browser", action="store_false", help="do not open a browser")
    v.add_argument("--out", default=None, metavar="FILE.html",
                   help="write one self-contained HTML file (no network needed to open it) instead of serving")
    v.add_argument("--limit", type=int, default=None, metavar="N",
                   help="with --out: the most responses the file holds (default 500; more are said on stderr)")

    c = sub.add_parser(
        "compact",
        help="merge small files and delete files replaced long ago",
        description=(
            "Merge each table's small files (Delta optimize; the rows do not change) and delete the files "
            "replaced more than --retention-hours ago (Delta vacuum), then commit a new snapshot (none when "
            "there was nothing to merge or delete). Snapshots "
            "older than the retention may no longer be readable (--as-of says so). Waits for a running ingest."
        ),
        epilog=COMPACT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _root(c)
    c.add_argument("--retention-hours", type=int, default=RETENTION_HOURS, metavar="H",
                   help=f"delete files replaced more than H hours ago (default {RETENTION_HOURS:g}: 7 days)")
    c.add_argument("--no-wait", dest="wait", action="store_false", help="fail (exit 4) instead of waiting for a running ingest")
    c.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    return parser


def cmd_ingest(args) -> int:
    import warehouse

    summary = warehouse.ingest(
        args.paths,
        args.root,
        format=args.format,
        strict=args.strict,
        jobs=args.jobs,
        prune=args.prune,
        wait=args.wait,
        max_record_mb=args.max_record_mb,
        tokenizer=args.tokenizer,
        progress=not args.quiet,
        engine=args.engine,
        spark_master=args.spark_master,
        storage_options=args.storage_options,
    )
    if not args.quiet:
        print(summary.text(), file=sys.stderr)
    return EXIT_OK


def cmd_tokenize(args) -> int:
    import warehouse

    summary = warehouse.tokenize(args.root, args.tokenizer, jobs=args.jobs, progress=not args.quiet,
                                 storage_options=args.storage_options)
    if not args.quiet:
        print(summary.text(), file=sys.stderr)
    return EXIT_OK


def cmd_sql(args) -> int:
    import warehouse

    warehouse.sql(args.root, _query_text(args), format=args.format, max_rows=args.max_rows, max_width=args.max_width,
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


def cmd_export(args) -> int:
    import warehouse

    summary = warehouse.export(args.root, args.where, args.format, args.out,
                               overwrite=args.overwrite, memory_limit=args.memory_limit, progress=not args.quiet,
                               as_of=args.as_of, storage_options=args.storage_options)
    if not args.quiet:
        print(summary.text(), file=sys.stderr)
    return EXIT_OK


def cmd_stats(args) -> int:
    import warehouse

    warehouse.stats(args.root, files=args.files, format=args.format, storage_options=args.storage_options)
    return EXIT_OK


def cmd_history(args) -> int:
    import warehouse

    warehouse.history(args.root, format=args.format, storage_options=args.storage_options)
    return EXIT_OK


def cmd_compact(args) -> int:
    import warehouse

    summary = warehouse.compact(args.root, retention_hours=args.retention_hours, wait=args.wait,
                                progress=not args.quiet, storage_options=args.storage_options)
    if not args.quiet:
        print(summary.text(), file=sys.stderr)
    return EXIT_OK


def cmd_view(args) -> int:
    import warehouse
    from warehouse.interrupt import SigintGuard

    with SigintGuard():  # making the selection's list is a DuckDB query: Ctrl-C stops it at once
        view = warehouse.view(args.root, args.where, as_of=args.as_of, port=args.port, browser=args.browser,
                              out=args.out, limit=args.limit, storage_options=args.storage_options)
    if args.out is None:
        view.serve()  # until Ctrl-C (uvicorn's own handler: it stops serving, then raises KeyboardInterrupt)
    else:
        print(view.text(), file=sys.stderr)
    return EXIT_OK


COMMANDS = {"ingest": cmd_ingest, "sql": cmd_sql, "export": cmd_export, "stats": cmd_stats, "tokenize": cmd_tokenize,
            "history": cmd_history, "compact": cmd_compact, "view": cmd_view}
#: commands whose DuckDB queries a Ctrl-C interrupts at once (see warehouse.interrupt)
QUERYING = ("sql", "export", "stats", "history")


def main(argv: list[str] | None = None) -> int:
    from warehouse.interrupt import LateInterrupts

    late, own = LateInterrupts.active()  # (``script``'s, when it runs the command)
    try:
        return _main(argv, late)
    finally:
        if own:
            late.end()


def _main(argv: list[str] | None, late) -> int:
    args = None
    # deltalake's and obstore's errors carry a Rust backtrace when RUST_BACKTRACE is set (some machines set it
    # for all): the library's own variable, which wins over it, turns that off for this command's processes
    os.environ.setdefault("RUST_LIB_BACKTRACE", "0")
    try:
        words = sys.argv[1:] if argv is None else argv
        if words and words[0] == "ingest":
            from warehouse.run.process_settings import for_ingest_command

            for_ingest_command()  # this command's processes are ours: before pyarrow and numpy load
        args = build_parser(format_names=bool(words) and words[0] == "ingest").parse_args(argv)
        if args.command not in QUERYING:
            code = COMMANDS[args.command](args)
        else:
            from warehouse.interrupt import SigintGuard

            with SigintGuard():
                code = COMMANDS[args.command](args)
        late.done(finished(args))  # nothing is left to stop: a Ctrl-C from here on says so (a commit said it first)
        if late.interrupted():
            print(late.line, file=sys.stderr)
            return EXIT_INTERRUPTED
        return code
    except WarehouseError as e:
        from warehouse.remote import redact  # every message hides its secrets already; this line is the last look

        print(f"error: {redact(str(e))}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:  # the runner's Interrupted says what state it left; a plain one does not
        print(str(e) or interrupted(args), file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `warehouse sql ... | head`: the reader has all it wants
        # stdout's buffer cannot be flushed any more: point it at /dev/null so exit stays quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def interrupted(args) -> str:
    """The one line a Ctrl-C leaves: what was stopped, and the state it left."""
    command = getattr(args, "command", None)
    if command is None:
        return "interrupted before the command started; nothing was changed"
    if command in ("sql", "stats"):
        return "interrupted: the query was stopped; the warehouse is unchanged"
    if command == "view":
        if getattr(args, "out", None):
            return f"interrupted: {os.path.abspath(args.out)} was not written; the warehouse is unchanged"
        return "interrupted: the viewer was stopped; the warehouse is unchanged"
    if command == "export":
        return f"interrupted: the export was stopped and its partial output removed; {os.path.abspath(args.out)} was not written"
    return "interrupted; the warehouse is unchanged by the unfinished run"


def finished(args) -> str:
    """The one line a Ctrl-C leaves once the command's work is done (an ingest or compact that committed
    says its own: ``commit.COMMITTED``)."""
    if args.command in ("ingest", "tokenize"):
        return "interrupted after the run had ended: it had nothing to commit; the warehouse is unchanged"
    if args.command == "compact":
        return "interrupted after compact had ended: there was nothing to compact; the warehouse is unchanged"
    if args.command == "export":
        return f"interrupted after the export had finished: {os.path.abspath(args.out)} is complete"
    return "interrupted after the command had finished: its output is complete; the warehouse is unchanged"


def script() -> None:
    """The console script ``warehouse`` (and ``python -m warehouse.cli``): ``main``, then the process
    ends without tearing its interpreter down. Once the command has written and closed all it
    writes, what is left of it is freeing every module and object one by one (pyarrow, numpy,
    DuckDB, the formats, a run's catalog): ~0.1 s of a core after an ingest, which the user waits
    for. The exit handlers still run first (logging, multiprocessing, pyarrow's S3), and the
    standard streams are flushed; ``main`` called from Python keeps the interpreter's normal end."""
    import atexit

    from warehouse.interrupt import LateInterrupts

    late, _ = LateInterrupts.active()  # held to the end: a Ctrl-C in the exit handlers is recorded too
    code = main()
    try:
        atexit._run_exitfuncs()  # (what the interpreter's end would run first, in the same order)
        sys.stdout.flush()
        if code == EXIT_OK and late.interrupted(last=True):
            print(late.line, file=sys.stderr)
            code = EXIT_INTERRUPTED
        sys.stderr.flush()
    except BrokenPipeError:  # `warehouse sql ... | head`: what was left for the reader goes nowhere
        pass
    os._exit(0 if code is None else code)


if __name__ == "__main__":
    script()
