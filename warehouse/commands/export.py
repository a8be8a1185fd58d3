"""``warehouse export``: a filtered subset written to a file or directory."""

from __future__ import annotations

import sys

from warehouse.commands.options import as_of, command, quiet, root, where
from warehouse.errors import EXIT_OK

EXPORT_DESCRIPTION = (
    "Export the responses matching --where (a SQL predicate on the responses view), with their turns, "
    "sentences, annotations and evaluations, to --out. The output is written under a temporary name and "
    "renamed into place, so a failed or interrupted (Ctrl-C) export leaves nothing behind. A progress bar "
    "(percentage, time left) goes to stderr on a terminal."
)

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


def export_epilog() -> str:
    """EXPORT_EXAMPLES with the installed formats that export back to their own shape. Knowing which
    do means loading the formats (not their exporters): done for ``export --help`` only."""
    from warehouse.formatkit.registry import Registry, _load

    back = sorted(name for name, ref in Registry.installed().refs if type(_load(name, ref)).exporter is not None)
    return EXPORT_EXAMPLES.format(back=", ".join(back) or "none installed")


def add_export(sub) -> None:
    """The ``export`` command's arguments and help."""
    e = command(sub, "export", help="export a filtered subset, as Parquet, JSONL, CSV, chat messages or a source format",
                description=EXPORT_DESCRIPTION, epilog=export_epilog)
    root(e)
    where(e, "; subqueries may read the warehouse's views, nothing else")
    e.add_argument("--format", required=True, metavar="FMT", help="output format (see below)")
    e.add_argument("--out", required=True,
                   help="output file, or directory for the formats that write one (parquet, some source formats); "
                        "a local path, also for an s3:// --root")
    e.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    e.add_argument("--memory-limit", default="1GB", metavar="SIZE",
                   help="DuckDB's memory for the export; beyond it, it spills to disk beside --out (default: 1GB)")
    as_of(e, "export from")
    quiet(e)


def cmd_export(args) -> int:
    import warehouse

    summary = warehouse.export(args.root, args.where, args.format, args.out,
                               overwrite=args.overwrite, memory_limit=args.memory_limit, progress=not args.quiet,
                               as_of=args.as_of, storage_options=args.storage_options)
    if not args.quiet:
        print(summary.text(), file=sys.stderr)
    return EXIT_OK
