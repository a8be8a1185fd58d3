"""A snapshot's views, made once and copied into every connection that reads it.

DuckDB parses every ``CREATE VIEW`` a connection runs, and each statement has a fixed cost on top: the
fifty-odd views of a warehouse were the largest part of what a small query from a cold process spent
beyond DuckDB's own start (bench/README.md). A DuckDB database file holding the same views is attached
and copied into the connection (``COPY FROM DATABASE``) in a fraction of that, the views as they were
made (not bound: a view is bound when a query reads it).

The file is named by a digest of the statements themselves (and the DuckDB version that wrote it), so
it holds exactly the views those statements make: a snapshot, a read schema or a DuckDB of its own gets
its own file. It is used only for a local snapshot in which nothing is damaged (``views.open_snapshot``);
a file that cannot be read, is not this user's, or is open to others' writes (it or its folder) is passed over, and the
statements are run. The files live beside the read schema's (``read_schema.cache_dir``), the most
recently used ``KEEP`` of them kept.
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

from warehouse.formatkit.read_schema import cache_dir, make_cache_dir, owned
from warehouse.reading.statements import binds_when_made, create_view, duckdb_errors, quote

if TYPE_CHECKING:
    import duckdb

#: how many snapshots' view files are kept (each some hundreds of KB)
KEEP = 64

#: the name the file is attached under, for the copy
ATTACHED = "_warehouse_views"


def make_views(con: duckdb.DuckDBPyConnection, statements: list[str]) -> None:
    """Run ``statements`` (each a CREATE VIEW, in order) on ``con``: copied from their file when there is one,
    else run one by one, and their file written for the next connection."""
    path = view_file(statements)
    if binds_when_made():  # a DuckDB without DEFER_BINDING: its views are bound as they are made, so made here
        path = None
    elif _copied(con, path):
        return
    for statement in statements:
        create_view(con, statement)
    if path is not None:
        _write(path, statements)


def view_file(statements: list[str]) -> str:
    import duckdb

    digest = hashlib.sha256("\0".join([duckdb.__version__, *statements]).encode()).hexdigest()[:32]
    return os.path.join(cache_dir(), f"views-{digest}.duckdb")


def _copied(con: duckdb.DuckDBPyConnection, path: str) -> bool:
    """Whether the views of the file at ``path`` are now ``con``'s (False: there is no such file, or it cannot
    be used; what a copy cut short made, the statements then make again, each creating or replacing its view)."""
    if not owned(path):  # (nor is there one)
        return False
    try:
        con.execute(f"ATTACH {quote(path)} AS {ATTACHED} (READ_ONLY)")
    except duckdb_errors():  # not a DuckDB file, or of another version: the statements are run
        return False
    try:
        con.execute(f"COPY FROM DATABASE {ATTACHED} TO memory")
    except duckdb_errors():  # (a view a copy cut short made is made again: every statement creates or replaces)
        return False
    finally:
        con.execute(f"DETACH DATABASE IF EXISTS {ATTACHED}")
    try:
        os.utime(path)  # recently used: kept by ``_prune``
    except OSError:
        pass
    return True


def _write(path: str, statements: list[str]) -> None:
    """The file of ``statements``, whole or not at all; not being able to write it is not an error."""
    import shutil
    import tempfile

    import duckdb

    folder = None
    try:
        make_cache_dir(path)
        # made in a folder of its own that no one else can enter (a shared cache folder could hold anything at a
        # name known in advance), then moved into place whole
        folder = tempfile.mkdtemp(prefix=".views-", dir=os.path.dirname(path))
        tmp = os.path.join(folder, "views.duckdb")
        made = duckdb.connect(tmp)
        try:
            made.execute("CREATE SCHEMA raw")
            for statement in statements:
                create_view(made, statement)
        finally:
            made.close()  # (written through: a closed file needs no log beside it)
        os.chmod(tmp, 0o644)  # this user's alone to write, whatever the umask (``owned``)
        os.replace(tmp, path)
    except (OSError, duckdb.Error):
        return
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    _prune(os.path.dirname(path))


def _prune(folder: str) -> None:
    """Keep the ``KEEP`` most recently used view files of ``folder``."""
    try:
        files = [e for e in os.scandir(folder) if e.name.startswith("views-") and e.name.endswith(".duckdb")]
        files.sort(key=lambda e: e.stat().st_mtime_ns, reverse=True)
        for entry in files[KEEP:]:
            os.unlink(entry.path)
    except OSError:  # another process pruned it first
        pass
