"""The ``warehouse`` command. Every command is a thin wrapper over the public function of its name.

``warehouse ingest PATH --root wh --max-record-mb 8`` calls ``warehouse.ingest(PATH, "wh",
max_record_mb=8)``: an option and the parameter it fills have the same name (``--no-wait``
fills ``wait=False``), and the function checks the values (``warehouse.checks``), so the
command line and Python accept and refuse the same things. Only ``--quiet`` (no progress
bar: ``progress=False``, and no summary, which the function returns) and ``sql -f FILE``
(the query read from a file) are the command line's own (``tests/commands/test_parity.py``).

stdout carries data only (query results, stats); progress, summaries and errors
go to stderr. A fault ends in one line on stderr saying what state things are in, and
the exit code of its kind (``warehouse.errors``: ``EXIT_*`` and each error's ``exit_code``).

Start-up imports nothing heavy at module level: everything a command needs is
imported inside ``main``, where a Ctrl-C is caught like anywhere else.

Each group of commands' arguments, help and handler is a module of ``warehouse/commands/``; this
module puts them together, runs one, and turns what ends it into one line and an exit code.
"""

from __future__ import annotations

import os
import sys

from warehouse import __version__
from warehouse.errors import EXIT_INTERRUPTED, EXIT_OK, WarehouseError

MAIN_EXAMPLES = """\
examples:
  warehouse ingest experiments/ --root wh
  warehouse sql "SELECT experiment, count(*) FROM responses GROUP BY ALL" --root wh
  warehouse export --root wh --where "experiment = 'demo'" --format jsonl --out demo.jsonl
  warehouse stats --root wh
  warehouse view --root wh

run `warehouse COMMAND --help` for the options and examples of each command
"""


#: every command, in the order ``warehouse --help`` lists them: (module of ``warehouse/commands/``, its ``add_`` function)
COMMANDS = {
    "ingest": ("ingest", "add_ingest"), "tokenize": ("ingest", "add_tokenize"), "sql": ("query", "add_sql"),
    "export": ("export", "add_export"), "stats": ("query", "add_stats"), "history": ("query", "add_history"),
    "view": ("view", "add_view"), "compact": ("compact", "add_compact"),
}


def build_parser(format_names: bool = True, only: str | None = None):
    """The command line. ``format_names=False`` leaves the format names out of ``ingest --help``,
    so commands other than ingest start without reading the installed packages' metadata. ``only``:
    that command alone (the one being run), so starting it imports no other command's module."""
    import argparse  # here, not at the top: a Ctrl-C while it loads is caught by main
    import importlib

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

    for name, (module, add) in COMMANDS.items():
        if only is None or name == only:
            adding = getattr(importlib.import_module(f"warehouse.commands.{module}"), add)
            adding(sub, format_names) if name == "ingest" else adding(sub)
    return parser


def handler(command: str):
    """The function that runs ``command`` (its arguments parsed): ``cmd_<command>`` of its group's module."""
    import importlib

    return getattr(importlib.import_module(f"warehouse.commands.{COMMANDS[command][0]}"), f"cmd_{command}")


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
        command = words[0] if words and words[0] in COMMANDS else None
        args = build_parser(format_names=command == "ingest", only=command).parse_args(argv)
        if args.command not in QUERYING:
            code = handler(args.command)(args)
        else:
            from warehouse.interrupt import SigintGuard

            with SigintGuard():
                code = handler(args.command)(args)
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
