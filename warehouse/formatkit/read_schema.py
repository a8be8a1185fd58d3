"""The read schema: what a reader needs of the declared tables and views, as plain data (each table's columns
with their DuckDB types, each view's SQL), cached per installation so that opening a connection imports
neither pyarrow nor the formats.

The declarations (``declared.TABLES``, ``declared_views.view_statements``) are made by the installed code
alone, so the cache is checked against that code, as Python checks its bytecode against its source. A
cached read schema is used while

* every source file it was made from has the size and mtime it had: the modules of the warehouse and of
  the installed formats' packages, and the files of ``sql/``;
* every folder on ``sys.path`` (but the script's or working folder the interpreter puts first) has the
  mtime it had: installing, upgrading or removing a distribution adds or removes a folder in it;
* the formats this process has listed, when it has, are those it was made with;
* the file and its folder are this user's, and writable by no one else (its views' SQL is run as it is).

Otherwise it is made again from the declarations and written back. In a process that has loaded the
declarations already (an ingest, the viewer), they are used directly. The cache is a file per
installation under ``$WAREHOUSE_CACHE_DIR``, else the user's cache folder; a cache that cannot be read is
made again, one that cannot be written is not an error (the schema is then made on every open).
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from typing import NamedTuple

#: what the cache file's layout is; a file of another is made again
LAYOUT = 1


# (NamedTuples, not dataclasses: a cold process makes these classes, and a dataclass takes ten times as long)
class ReadTable(NamedTuple):
    """A declared table as a reader needs it: its name and its columns, each (name, DuckDB type, JSON or not)."""

    name: str
    columns: tuple[tuple[str, str, bool], ...]


class ReadSchema(NamedTuple):
    tables: tuple[ReadTable, ...]  # every declared table, the core's then the formats' (``declared.TABLES``)
    views: tuple[tuple[str, str], ...]  # (name, statement) of every view, in the order they are made
    path_fields_sql: str  # ``declared_views.path_fields_sql_hash()``
    formats: tuple[tuple[str, str], ...]  # the registry it was made with (``Registry.refs``)

    def table_names(self) -> list[str]:
        return [t.name for t in self.tables]


def read_schema() -> ReadSchema:
    """The read schema of this installation: from the declarations when this process has them, else the cache
    while it is current (module docstring), else made from the declarations and cached."""
    declared = sys.modules.get("warehouse.formatkit.declared")  # (not imported here: it imports pyarrow)
    if declared is not None and declared.TABLES.loaded():
        return made()
    return _installed()


@functools.cache
def _installed() -> ReadSchema:
    """The cached read schema while it is current, else made and cached (once per process, as the installed
    formats are listed once per process)."""
    path = cache_file()
    cached = _cached(path)
    if cached is not None:
        return cached
    schema = made()
    _write(path, schema)
    return schema


def made() -> ReadSchema:
    """The read schema from the declarations (which loads every installed format)."""
    from warehouse.formatkit.declared import TABLES

    return _made(tuple(TABLES.values()))


@functools.lru_cache(maxsize=4)
def _made(tables: tuple) -> ReadSchema:
    """(By the declared tables themselves: a process that declares a table anew, as a newer package would,
    reads it so.)"""
    from warehouse.formatkit.declared_views import path_fields_sql_hash, view_statements
    from warehouse.formatkit.registry import Registry
    from warehouse.tables import duckdb_type

    read = tuple(ReadTable(t.name, tuple((c.name, duckdb_type(c), c.json) for c in t.columns)) for t in tables)
    return ReadSchema(read, tuple(view_statements()), path_fields_sql_hash(), Registry.installed().refs)


def cache_dir() -> str:
    """``$WAREHOUSE_CACHE_DIR``, else the platform's user cache folder (XDG's on Linux). By hand rather than by
    platformdirs, whose import alone would add a sixth to a small query from a cold process (bench/README.md)."""
    given = os.environ.get("WAREHOUSE_CACHE_DIR")
    if given:
        return given
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser(r"~\AppData\Local")
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "response-warehouse")


def _search_path() -> list[str]:
    """The folders distributions are found in: ``sys.path`` without the script's or working folder the
    interpreter puts first (files are made there all the time; formats are installed elsewhere)."""
    return list(sys.path if sys.flags.safe_path else sys.path[1:])


def cache_file() -> str:
    """This installation's cache file: one per interpreter, search path and warehouse package."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    key = hashlib.sha256("\0".join([sys.version, sys.prefix, here, *_search_path()]).encode()).hexdigest()[:20]
    return os.path.join(cache_dir(), f"read-schema-{key}.json")


def _stamp(path: str) -> list | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _sources(formats: tuple[tuple[str, str], ...]) -> list[str]:
    """The files a read schema is made from: the loaded modules of the warehouse and of each installed
    format's top-level package, and the core's view files."""
    from warehouse.formatkit.declared_views import view_files

    packages = {"warehouse"} | {ref.split(":")[0].split(".")[0] for _, ref in formats}
    files = {getattr(m, "__file__", None) for name, m in list(sys.modules.items()) if name.split(".")[0] in packages}
    files |= {str(p) for p in view_files()}
    return sorted(f for f in files if f)


def owned(path: str, st: os.stat_result | None = None) -> bool:
    """Whether the cache file at ``path`` (``st``: its stat, when open) and its folder are this user's and no one
    else's to write: its views' SQL is run as it is, so a file another user could have put, changed or swapped
    (a shared ``$WAREHOUSE_CACHE_DIR``) is not read."""
    if not hasattr(os, "getuid"):  # Windows: the user's own local app data folder
        return True
    try:
        both = (st or os.stat(path), os.stat(os.path.dirname(path)))
    except OSError:
        return False
    return all(s.st_uid == os.getuid() and not s.st_mode & 0o022 for s in both)


def make_cache_dir(path: str) -> None:
    """The folder of the cache file ``path``, made this user's alone (``owned``)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)


def _write(path: str, schema: ReadSchema) -> None:
    import orjson

    doc = {
        "layout": LAYOUT,
        "search_path": [[d, _stamp(d)] for d in _search_path()],
        "sources": [[f, _stamp(f)] for f in _sources(schema.formats)],
        "tables": [[t.name, [list(c) for c in t.columns]] for t in schema.tables],
        "views": [list(v) for v in schema.views],
        "path_fields_sql": schema.path_fields_sql,
        "formats": [list(f) for f in schema.formats],
    }
    import tempfile

    tmp = None
    try:
        make_cache_dir(path)
        # a new file no one else can have put or write (a shared cache folder could hold anything at a name
        # known in advance; ``owned`` reads no other), moved into place whole: a reader never sees half a file
        fd, tmp = tempfile.mkstemp(prefix=".read-schema-", dir=os.path.dirname(path))
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps(doc))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError:  # a read-only or full disk: the schema is made on every open, as before the cache
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _cached(path: str) -> ReadSchema | None:
    """The read schema in ``path`` while it is current; None when there is none, it is damaged or stale."""
    import orjson

    try:
        with open(path, "rb") as f:
            if not owned(path, os.fstat(f.fileno())):
                return None
            doc = orjson.loads(f.read())
        if doc["layout"] != LAYOUT or [d for d, _ in doc["search_path"]] != _search_path():
            return None
        if any(_stamp(p) != stamp for p, stamp in (*doc["search_path"], *doc["sources"])):
            return None
        schema = ReadSchema(
            tables=tuple(ReadTable(n, tuple((c, t, bool(j)) for c, t, j in cols)) for n, cols in doc["tables"]),
            views=tuple((n, s) for n, s in doc["views"]),
            path_fields_sql=doc["path_fields_sql"],
            formats=tuple((n, r) for n, r in doc["formats"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    from warehouse.formatkit.registry import listed

    known = listed()
    if known is not None and known.refs != schema.formats:  # this process lists other formats (a test, an embedding)
        return None
    return schema
