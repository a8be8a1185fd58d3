"""Every exception the warehouse raises on purpose, in one place.

Each carries structured attributes besides its message, so callers (the CLI,
tests, notebooks) can act on them without parsing text.
"""

from __future__ import annotations


class WarehouseError(Exception):
    """Base class: a problem the user can fix. The CLI prints it and exits non-zero."""

    exit_code = 1


class UsageError(WarehouseError):
    """Bad arguments: unknown format, missing path, bad option value."""

    exit_code = 2


class StrictModeError(WarehouseError):
    """`--strict` met a bad record; the warehouse was left as it was before the run."""

    exit_code = 3

    def __init__(self, path: str, locator: str, stage: str, message: str):
        from .records import where

        super().__init__(f"{where(path, locator)}: {stage}: {message}")
        self.path = path
        self.locator = locator
        self.stage = stage
        self.message = message


class LockedError(WarehouseError):
    """Another ingest holds the warehouse lock and `--no-wait` said not to wait for it."""

    exit_code = 4


class StorageError(WarehouseError):
    """The warehouse root is missing, unreadable or not a warehouse."""


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

    exit_code = 130
