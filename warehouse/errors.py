"""Every exception the warehouse raises on purpose, in one place.

Two kinds: a ``WarehouseError`` reaches the user (the CLI prints it on one line and
exits with its ``exit_code``); the others are signals between the warehouse's own
parts (a record to quarantine, a worker that died, a refused conditional put) that
are caught inside it and become a quarantine row or a ``WarehouseError``.
Each carries structured attributes besides its message, so callers (the CLI,
tests, notebooks) can act on them without parsing text.
"""

from __future__ import annotations

from dataclasses import dataclass

# The exit codes of the `warehouse` command (docs/cli.md#exit-codes): each error below says its own.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_STRICT = 3
EXIT_LOCKED = 4
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C killed


def where(path: str, locator: str) -> str:
    """``file[3].messages[1]``, ``file:12`` or ``file``: how messages name a place."""
    if not locator:
        return path
    if locator[0] in "[.":
        return path + locator
    return f"{path}:{locator}"


@dataclass
class StrictFailure:
    """The first bad record ``--strict`` met: where, at which stage, and why."""

    path: str
    locator: str
    stage: str
    message: str


class WarehouseError(Exception):
    """Base class: a problem the user can fix. The CLI prints it and exits non-zero."""

    exit_code = EXIT_ERROR


class UsageError(WarehouseError):
    """Bad arguments: unknown format, missing path, bad option value."""

    exit_code = EXIT_USAGE


class StrictModeError(WarehouseError):
    """`--strict` met a bad record; the warehouse was left as it was before the run."""

    exit_code = EXIT_STRICT

    def __init__(self, path: str, locator: str, stage: str, message: str):
        super().__init__(f"{where(path, locator)}: {stage}: {message}")
        self.path = path
        self.locator = locator
        self.stage = stage
        self.message = message


class LockedError(WarehouseError):
    """Another ingest holds the warehouse lock and `--no-wait` said not to wait for it."""

    exit_code = EXIT_LOCKED


class LeaseLost(LockedError):
    """This run no longer holds the root: its lease on a remote root was taken over (it was not renewed in
    time), or a local lock file was deleted or replaced under it. The run stops before its next commit
    step, and repairs nothing (the root may be another writer's now: the next run repairs)."""


class StorageError(WarehouseError):
    """The warehouse root is missing, unreadable or not a warehouse."""


class NotASnapshot(StorageError):
    """A file among the warehouse snapshots (``.warehouse/snapshots/N.json``) that is no snapshot: not
    JSON, or JSON of another shape (damaged, or written by hand or by something else)."""

    def __init__(self, path: str, number: int, what: str, remedy: str = ""):
        super().__init__(f"{path}: damaged warehouse snapshot: {what}" + (f"; {remedy}" if remedy else ""))
        self.path = path
        self.number = number
        self.what = what


class DamagedTable(StorageError):
    """A table of the warehouse whose Delta log or data files are damaged or gone; the message names the
    table, the file and what to do. The other tables stay readable."""

    def __init__(self, message: str, *, table: str, path: str = ""):
        super().__init__(message)
        self.table = table
        self.path = path


class ObjectStoreError(WarehouseError):
    """Object storage refused or could not be reached (no such bucket, bad credentials, wrong
    endpoint, no permission); the message names the bucket and key and says what to check."""

    def __init__(self, message: str, *, bucket: str = "", key: str = ""):
        super().__init__(message)
        self.bucket = bucket
        self.key = key


class QueryError(WarehouseError):
    """DuckDB rejected a query; the message lists the available columns."""


class ExportError(WarehouseError):
    """An export could not finish (e.g. out of memory); nothing was written."""


class FormatError(WarehouseError):
    """An installed format is broken: it fails to load, or declares what it may not
    (a column that clashes with another's, a table that exists already)."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped an ingest, which cleaned up first; the message says what state the
    warehouse is in. A KeyboardInterrupt still (``except Exception`` does not catch it)."""

    exit_code = EXIT_INTERRUPTED


# --- signals between the warehouse's parts: caught inside it, never shown as they are ----------------

#: the stages a record passes; a quarantine row names the one that failed
STAGES = ("read", "decode", "detect", "map", "validate")


class RecordError(Exception):
    """A record that cannot be ingested. The record sink quarantines it whole.

    ``stage`` is one of STAGES; ``sub_locator`` narrows the place inside the
    record (``.messages[1]``), appended to the record's own locator.
    """

    def __init__(self, message: str, *, stage: str = "map", sub_locator: str = ""):
        super().__init__(message)
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}")
        self.message = message
        self.stage = stage
        self.sub_locator = sub_locator


class ReferenceRefused(RecordError):
    """A file another file's rows depend on that may not or cannot be read."""

    def __init__(self, message: str):
        super().__init__(message, stage="read")


class ValueMismatch(Exception):
    """A value that does not fit its column's declared type; the message says what the column takes
    (``RowValidator`` turns it into a RecordError naming the column and the value)."""


class InvalidBatch(ValueError):
    """A batch Arrow's full validation refuses (e.g. a string that is not UTF-8); nothing of it was kept."""


class StrictStop(Exception):
    """Raised by ``RecordSink.quarantine`` under ``--strict``: the batch stops at its first bad record."""

    def __init__(self, failure: StrictFailure):
        self.failure = failure


class WorkerLost(Exception):
    """A worker died under a batch (killed from outside, or out of memory)."""


class Superseded(Exception):
    """A conditional update refused: the object is not the version it was read as (another writer changed it)."""


class NotFound(Exception):
    """A viewer page of something the selection does not hold (an unknown response id, category)."""


def first_line(e: BaseException) -> str:
    """The first line of a library's error, for a one-line message: deltalake's and obstore's errors may
    carry a Rust backtrace on the lines after it (``RUST_BACKTRACE=1``), and DuckDB's a caret diagram."""
    text = str(e).strip()
    return text.splitlines()[0].strip() if text else type(e).__name__
