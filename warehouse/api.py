"""The warehouse from Python: DuckDB, polars (lazy or eager) and Arrow over the same views.

Verbs say eagerness, as in polars: ``scan`` returns a lazy plan, ``read`` returns
data (``read_arrow`` as Arrow). All three take the same arguments: a view of the
warehouse (``responses``, ``turns``, ``annotated_spans``, ...; ``Warehouse.views``
lists them), optionally filtered (``where``, SQL) and projected (``columns``); each
is a method of ``Warehouse`` and a function of the module taking the root first.
``where`` is held to what ``export --where`` is (one expression over the views, run
in a sandboxed database: ``exports/where.py``); ``sql`` runs any query.

>>> import warehouse
>>> wh = warehouse.open(SAMPLE_ROOT)
>>> wh                                             # its tables and row counts
Warehouse('...', snapshot 1, run ...)
  responses                   227 rows
  turns                       201 rows
  sentence_boundaries          33 rows
  annotations                 138 rows
  evaluations                 550 rows
  sources                      79 rows
  ...
  empty: ..., quarantine, ...
>>> wh.read("responses", where="pipeline = 'steering' AND run_kind = 'baseline'", columns=["prompt", "trait_score"]).shape
(5, 2)
>>> lf = wh.scan("responses")                      # a polars LazyFrame
>>> import polars as pl
>>> (lf.filter(pl.col("prompt_set") == "rm_syco/train_100")
...    .group_by("prompt_note").len().sort("prompt_note").collect()["len"].to_list())
[1, 1, 1, 1, 3, 1]
>>> wh.read_arrow("evaluations", where="criterion = 'overall_grade'").num_rows > 0   # a pyarrow Table
True
>>> wh.scan("turns", where="role = 'user'", columns=["content"]).collect().shape
(94, 1)
>>> wh.sql("SELECT count(*) AS n FROM turns").fetchall()                          # a DuckDB relation
[(201,)]
>>> wh.sql("SELECT count(*) FROM turns WHERE role = ?", ["assistant"]).fetchall()  # with parameters
[(...,)]

Threads: a ``Warehouse`` may be shared by any number of threads. DuckDB runs one
query at a time per connection, so every call here runs on a cursor of its own
(a new connection to the same in-memory database: same views, same snapshot).
Session state therefore lasts one call: ``SET`` and ``CREATE TEMP ...`` through
``sql()`` do not carry over to the next call; ``wh.cursor()`` gives a DuckDB
connection of your own for a session (one thread at a time).

Snapshots: a ``Warehouse`` reads one warehouse snapshot: the latest when opened (or
last refreshed), or ``open(root, as_of=N)`` (``warehouse history`` lists them).
``refresh()`` moves it to the latest; LazyFrames and relations made before keep reading
their own snapshot. Files a later ingest replaced stay until ``warehouse compact``
vacuums them (after ``compact.RETENTION_HOURS`` by default); a snapshot read after that
fails with a ``StorageError`` that says to refresh and which snapshots are readable.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import duckdb

from warehouse.access import StorageOptions
from warehouse.errors import QueryError, StorageError, UsageError
from warehouse.reading.damaged import damage_error
from warehouse.reading.views import Snapshot, cursor, open_snapshot
from warehouse.store.readable import readable_hint

if TYPE_CHECKING:  # polars and pyarrow are imported where used, not at start-up
    import polars as pl
    import pyarrow as pa

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Open:
    """One opened snapshot: the DuckDB database holding its views, and what it reads.

    Everything made from it (relations, LazyFrames) holds this object, so it stays
    usable after the Warehouse moved on (``refresh``) until the last of them is gone.
    """

    def __init__(self, root: str, as_of: int | None = None, storage_options: StorageOptions = None, *,
                 sandboxed: bool = False):
        self.root, self.as_of, self._storage_options = root, as_of, storage_options  # (never shown)
        self.con, self.snapshot = open_snapshot(root, as_of=as_of, storage_options=storage_options)
        self.closed = False
        self._sandboxed: _Open | None = self if sandboxed else None
        self._mutex = threading.Lock()
        if sandboxed:
            from warehouse.exports.where import sandbox
            from warehouse.store.storage import Store

            store = Store(root)
            # as export's: the tables' folders (a remote root's tables are Arrow datasets, no folder at all)
            sandbox(self.con, [] if store.remote else [str(d) for d in store.table_dirs()])

    def cursor(self) -> duckdb.DuckDBPyConnection:
        if self.closed:
            raise UsageError(f"Warehouse({self.snapshot.root!r}) is closed; open it again with warehouse.open()")
        return cursor(self.con, self.snapshot)

    def sandboxed(self) -> _Open:
        """This snapshot in a database of its own that reads the warehouse's files and nothing else, with
        its settings locked (``exports.where.sandbox``): where a predicate from the caller runs. The
        database of ``sql()`` stays unconfined (it runs any SQL by design), so it is a second one,
        opened on first use."""
        with self._mutex:
            if self._sandboxed is None:
                twin = _Open(self.root, self.as_of, self._storage_options, sandboxed=True)
                if twin.snapshot.number != self.snapshot.number:  # an ingest committed since: this one's snapshot
                    twin.close()
                    twin = _Open(self.root, self.snapshot.number, self._storage_options, sandboxed=True)
                self._sandboxed = twin
            return self._sandboxed

    def close(self) -> None:
        self.closed = True
        self.con.close()
        if self._sandboxed is not None and self._sandboxed is not self:
            self._sandboxed.close()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """DuckDB's errors as the warehouse's: a deleted file of this snapshot a StorageError that says
        what to do, a damaged table's view its one line (a DamagedTable), a query DuckDB rejects (a missing
        column, a failed cast) a QueryError with its message.
        An interrupted query stays DuckDB's InterruptException (a kernel's interrupt, not a fault of the query)."""
        try:
            yield
        except duckdb.InterruptException:
            raise
        except duckdb.Error as e:
            damaged = damage_error(e, self.snapshot.root)
            if damaged is not None:
                raise damaged from None
            gone = self.snapshot.missing() if isinstance(e, duckdb.IOException) else []
            if gone:
                raise StorageError(stale_message(self.snapshot, gone)) from e
            raise QueryError(str(e)) from None


def stale_message(snapshot: Snapshot, gone: list[str]) -> str:
    from warehouse.store.storage import Store

    return (
        f"{snapshot.root}: this was opened on warehouse snapshot {snapshot.number} (run {snapshot.run_id}); "
        f"`warehouse compact` has since deleted {len(gone)} of its files "
        f"(e.g. {os.path.relpath(gone[0], snapshot.root)}), replaced by later runs. "
        "Call wh.refresh() (or warehouse.open() again) and make this query or LazyFrame again from it. "
        + readable_hint(Store(snapshot.root))
    )


class Warehouse:
    """One warehouse root and the DuckDB database of its views, safe to share between threads.

    It reads a snapshot: the warehouse as it was when opened; ``refresh()`` moves it to
    the current state. Every call runs on a DuckDB cursor of its own, so threads never
    wait for each other nor see "connection is busy".
    """

    def __init__(self, root: str | os.PathLike, *, as_of: int | None = None, storage_options: StorageOptions = None):
        self.root = os.fspath(root)
        #: how to reach an s3:// root (kept for ``refresh``; never shown)
        self._storage_options = storage_options
        self._open = _Open(self.root, as_of, storage_options)

    # --- what is there --------------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        """What this Warehouse reads: warehouse snapshot number, its run, files."""
        return self._open.snapshot

    @property
    def views(self) -> list[str]:
        """Every view: the declared tables and the derived views (annotated_spans, dpo_pairs, ...)."""
        return self._views(self._open)

    def columns(self, name: str) -> dict[str, str]:
        """Column name -> DuckDB type of a view."""
        o = self._open
        with o.reading():
            return {r[0]: r[1] for r in o.cursor().execute(f"DESCRIBE {self._view(o, name)}").fetchall()}

    def counts(self) -> dict[str, int]:
        """Rows per declared table (responses, turns, ...): cheap, from the Parquet footers."""
        from warehouse.formatkit.read_schema import read_schema

        o = self._open
        with o.reading():
            cur = o.cursor()
            return {t: cur.execute(f"SELECT count(*) FROM raw.{t}").fetchone()[0] for t in read_schema().table_names()}

    # --- queries ------------------------------------------------------------------------

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection of your own on this snapshot, every view defined: for a session
        (``SET``, temporary tables) in one thread. Close it when done."""
        return self._open.cursor()

    def sql(self, query: str, params: Sequence[Any] | dict[str, Any] | None = None) -> duckdb.DuckDBPyRelation | None:
        """Run SQL on the views; a DuckDB relation (``.pl()``, ``.arrow()``, ``.df()``, ``.fetchall()``).

        ``params`` fill ``?`` (a sequence) or ``$name`` (a dict) placeholders. A statement
        without a result (``SET``, ``CREATE VIEW``) returns None, as in DuckDB.
        """
        o = self._open
        with o.reading():
            if params is None:
                return o.cursor().sql(query)
            return o.cursor().sql(query, params=params if isinstance(params, dict) else list(params))

    def scan(self, name: str, *, where: str | None = None, columns: Sequence[str] | None = None) -> pl.LazyFrame:
        """A view as a lazy polars frame, optionally filtered (SQL ``where``) and projected: nothing
        is read until ``.collect()``.

        Each ``collect()`` runs on a cursor of its own (collect from any thread), with
        the frame's filters and column selection pushed down into DuckDB.
        """
        from polars.io.plugins import register_io_source

        o = self._reading(where)
        with o.reading():
            query = self._query(o, name, where, columns)
            schema = o.cursor().sql(query).pl(lazy=True).collect_schema()

        def source(with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None,
                   batch_size: int | None) -> Iterator[pl.DataFrame]:
            # DuckDB's own polars source does the pushdown: hand it what polars pushed to us.
            with o.reading():
                lf = o.cursor().sql(query).pl(lazy=True)
                if with_columns is not None:
                    lf = lf.select(with_columns)
                if predicate is not None:
                    lf = lf.filter(predicate)
                if n_rows is not None:
                    lf = lf.head(n_rows)
                yield from lf.collect_batches(chunk_size=batch_size)

        return register_io_source(source, schema=schema, is_pure=True, explain_name=f"warehouse {name}")

    def read(self, name: str, *, where: str | None = None, columns: Sequence[str] | None = None) -> pl.DataFrame:
        """A view as a polars DataFrame, optionally filtered (SQL ``where``) and projected."""
        o = self._reading(where)
        with o.reading():
            return self._select(o, name, where, columns).pl()

    def read_arrow(self, name: str, *, where: str | None = None, columns: Sequence[str] | None = None) -> pa.Table:
        """A view as a pyarrow Table, optionally filtered (SQL ``where``) and projected."""
        o = self._reading(where)
        with o.reading():
            return self._select(o, name, where, columns).to_arrow_table()

    def arrow(self, name: str, *, where: str | None = None, columns: Sequence[str] | None = None) -> pa.Table:
        """Deprecated: ``read_arrow``, the name the module function has too."""
        import warnings

        warnings.warn("Warehouse.arrow is now Warehouse.read_arrow", DeprecationWarning, stacklevel=2)
        return self.read_arrow(name, where=where, columns=columns)

    def view(self, where: str | None = None, *, limit: int | None = None, port: int | None = None,
             browser: bool = True, out: str | os.PathLike | None = None):
        """This snapshot's responses matching ``where`` in the viewer (``warehouse.view``): shown inline in
        Jupyter and VS Code, ``.serve()``d, or written to ``out``."""
        from warehouse.viewer import view

        return view(self.root, where, as_of=self.snapshot.number, port=port, browser=browser, out=out, limit=limit,
                    storage_options=self._storage_options)

    def refresh(self) -> Warehouse:
        """Move to the current state of the warehouse, to see what was ingested since.

        Relations and LazyFrames made before keep reading the snapshot they were made on.
        """
        self._open = _Open(self.root, None, self._storage_options)  # the old one closes when the last object made from it is gone
        return self

    def close(self) -> None:
        """Close the database: every relation and LazyFrame made from this Warehouse stops working."""
        self._open.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        o = self._open
        head = f"Warehouse({self.root!r}, snapshot {o.snapshot.number}, run {o.snapshot.run_id})"
        if o.closed:
            return head + " closed"
        try:
            counts = self.counts()
        except Exception as e:  # a repr must not raise: say why there are no counts
            return f"{head}\n  ({str(e).splitlines()[0]})"
        width = max(map(len, counts))
        lines = [f"  {t:<{width}}  {n:>10,} row{'s' if n != 1 else ''}" for t, n in counts.items() if n]
        empty = [t for t, n in counts.items() if not n]
        if empty:
            lines.append(f"  empty: {', '.join(empty)}")
        return "\n".join([head, *lines])

    # --- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _views(o: _Open) -> list[str]:
        rows = o.cursor().execute(
            "SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal ORDER BY 1"
        ).fetchall()
        return [r[0] for r in rows]

    def _view(self, o: _Open, name: str) -> str:
        if not _NAME.match(name):
            raise UsageError(f"{name!r} is not a view name; use Warehouse.sql() for queries")
        views = self._views(o)
        if name not in views:
            raise UsageError(f"no view {name!r}; choose one of: {', '.join(views)}")
        return name

    def _reading(self, where: str | None) -> _Open:
        """Where a read runs: the sandboxed database when the caller hands in a predicate (it may come from
        anywhere: a web form, a config file), else the Warehouse's own."""
        return self._open.sandboxed() if _predicate(where) else self._open

    def _select(self, o: _Open, name: str, where: str | None, columns: Sequence[str] | None) -> duckdb.DuckDBPyRelation:
        return o.cursor().sql(self._query(o, name, where, columns))

    def _query(self, o: _Open, name: str, where: str | None, columns: Sequence[str] | None) -> str:
        """``SELECT columns FROM view WHERE where``, the view and the columns checked to exist, and ``where``
        held to what ``export --where`` is (``exports.where.predicate_sql``): one expression over the views."""
        from warehouse.exports import where as predicates

        view = self._view(o, name)
        cols = "*"
        if columns:
            known = [r[0] for r in o.cursor().execute(f"DESCRIBE {view}").fetchall()]
            unknown = [c for c in columns if c not in known]
            if unknown:
                raise UsageError(f"{view} has no column {unknown[0]!r}; its columns: {', '.join(known)}")
            cols = ", ".join(f'"{c}"' for c in columns)
        select = f"SELECT {cols} FROM {view}"
        if not _predicate(where):
            return select
        return predicates.predicate_sql(o.cursor(), select, where, label="where", view=view)


def _predicate(where: str | None) -> bool:
    return bool(where and where.strip())


def open(root: str | os.PathLike, *, as_of: int | None = None, storage_options: StorageOptions = None) -> Warehouse:  # noqa: A001
    """Open the warehouse at ``root`` (as of snapshot ``as_of``, default the latest): a StorageError when
    nothing was ingested there (``ingest`` creates one). ``root`` may be an ``s3://`` URL; ``storage_options``
    (a dict, or ``KEY=VALUE`` strings) add to and override the AWS environment (docs/storage.md)."""
    return Warehouse(root, as_of=as_of, storage_options=storage_options)


def scan(root: str | os.PathLike, name: str, *, where: str | None = None,
         columns: Sequence[str] | None = None) -> pl.LazyFrame:
    """View ``name`` of the warehouse at ``root`` as a lazy polars frame (``Warehouse.scan``)."""
    return _reading(root, where).scan(name, where=where, columns=columns)


def read(root: str | os.PathLike, name: str, *, where: str | None = None,
         columns: Sequence[str] | None = None) -> pl.DataFrame:
    """View ``name`` of the warehouse at ``root`` as a polars DataFrame (``Warehouse.read``)."""
    with _reading(root, where) as wh:
        return wh.read(name, where=where, columns=columns)


def read_arrow(root: str | os.PathLike, name: str, *, where: str | None = None,
               columns: Sequence[str] | None = None) -> pa.Table:
    """View ``name`` of the warehouse at ``root`` as a pyarrow Table (``Warehouse.read_arrow``)."""
    with _reading(root, where) as wh:
        return wh.read_arrow(name, where=where, columns=columns)


def _reading(root: str | os.PathLike, where: str | None) -> Warehouse:
    """The Warehouse a one-call function reads through: with a predicate, only the sandboxed database is
    opened (the call needs no other)."""
    if not _predicate(where):
        return Warehouse(root)
    wh = Warehouse.__new__(Warehouse)
    wh.root, wh._storage_options = os.fspath(root), None
    wh._open = _Open(wh.root, sandboxed=True)
    return wh
