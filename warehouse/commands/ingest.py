"""``warehouse ingest`` and ``warehouse tokenize``: the commands that read files into the warehouse."""

from __future__ import annotations

import sys
import textwrap

from warehouse.checks import ENGINES
from warehouse.commands.options import command, jobs, quiet, root, storage_option
from warehouse.errors import EXIT_OK

INGEST_DESCRIPTION = textwrap.dedent(
    """\
    Walk PATHs (recursively), detect each file's format, and add its records to the
    warehouse at --root (created when missing). Unchanged files are skipped; a changed
    file replaces its own rows. Records that cannot be ingested go to the quarantine
    table with the reason. Progress and a summary go to stderr.
    """
)

INGEST_EXAMPLES = """\
examples:
  warehouse ingest experiments/ --root wh
  warehouse ingest data/conversations.jsonl --root wh --format NAME --strict   # NAME: see --format
  warehouse ingest experiments/ --root wh --prune      # also drop rows of deleted files
  warehouse ingest /shared/experiments/ --root /shared/wh --engine spark --spark-master spark://head:7077
"""

TOKENIZE_DESCRIPTION = (
    "Re-read the annotation files of the warehouse with a tokenizer loaded from a local directory "
    "or found by its model id in the local Hugging Face cache (transformers; nothing is downloaded), "
    "so spans in responses without stored tokens get token ranges. Only the files "
    "that need it are read again; the tokenizer is remembered for later ingests."
)

TOKENIZE_EXAMPLES = """\
examples:
  warehouse tokenize --root wh --tokenizer ~/models/gemma-2-2b-it
  warehouse tokenize --root wh --tokenizer google/gemma-2-2b-it   # from the local Hugging Face cache (HF_HOME)
  warehouse ingest experiments/ --root wh --tokenizer ~/models/gemma-2-2b-it   # the same, while ingesting
"""


def formats() -> list[str]:
    """The installed formats' names, read from the installed metadata: no format is imported."""
    from warehouse.formatkit.registry import Registry

    return Registry.installed().names()


def add_ingest(sub, format_names: bool = True) -> None:
    """The ``ingest`` command's arguments and help."""
    p = command(sub, "ingest", help="read files and directories into the warehouse",
                description=INGEST_DESCRIPTION, epilog=INGEST_EXAMPLES)
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or directories to ingest")
    p.add_argument("--root", required=True, help="warehouse directory or s3:// URL (created when missing)")
    p.add_argument("--format", metavar="NAME",
                   help="read every file as this format" + (": " + ", ".join(formats()) if format_names else ""))
    p.add_argument("--strict", action="store_true", help="stop at the first bad record (file:locator: stage: message), exit 3, change nothing")
    p.add_argument("--prune", action="store_true", help="remove the rows of catalogued files under PATHs that no longer exist")
    jobs(p)
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
    storage_option(p, "s3:// PATHs and --root")
    quiet(p)


def add_tokenize(sub) -> None:
    """The ``tokenize`` command's arguments and help."""
    t = command(sub, "tokenize", help="add token ranges to an existing warehouse with a local tokenizer",
                description=TOKENIZE_DESCRIPTION, epilog=TOKENIZE_EXAMPLES)
    root(t)
    t.add_argument("--tokenizer", required=True, metavar="DIR|MODEL",
                   help="local tokenizer directory, or a model id found in the local Hugging Face cache")
    jobs(t)
    quiet(t)


def cmd_ingest(args) -> int:
    import warehouse

    summary = warehouse.ingest(
        args.paths,
        args.root,
        source_format=args.format,
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
