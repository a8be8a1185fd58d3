"""The list's columns made from the texts (previews, lengths, the prompt's key): made after its first page.

Every text of the selection has to be decompressed to make them, which on a million responses costs as
much as the rest of the list together (bench/README.md). So the list (``data.LIST``) is made without
them, and the first page is answered before they are: ``Texts.start`` makes ``_viewer_texts`` (one
row per listed response, keyed by ``response_id``) on a thread of its own once a page has been
answered. Until it is there, a page reads the texts of its own rows from ``responses`` (the rows'
source files narrow the read to the row groups that hold them), and a sort or pairing by a text
column waits for it.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import duckdb

#: the table of the texts' columns (in the connection's in-memory database, seen by every cursor)
TEXTS = "_viewer_texts"


class Texts:
    """``_viewer_texts`` of one Reader: made once, on a thread, and read by its pages."""

    def __init__(self, cursor: Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]],
                 interrupt: Callable[[], None], columns: dict[str, str], chosen: str):
        """``cursor``, ``interrupt``: the Reader's (a cursor of its, and what stops them all); ``columns``:
        name -> SQL over ``r`` (``responses``); ``chosen``: the WHERE clause of the selection over ``r``, or ''."""
        self._cursor = cursor
        self._interrupt = interrupt
        self._stopped = threading.Event()
        self.columns = columns
        self._chosen = chosen
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self._error: BaseException | None = None

    def start(self) -> None:
        """Start making the table (once; later calls do nothing)."""
        with self._lock:
            if self._thread is None and not self._stopped.is_set():
                self._thread = threading.Thread(target=self._make, name="viewer-texts", daemon=True)
                self._thread.start()

    def _make(self) -> None:
        made = ", ".join(f"{sql} AS {name}" for name, sql in self.columns.items())
        try:
            with self._cursor() as c:
                if self._stopped.is_set():  # stopped before its cursor could be interrupted
                    raise KeyboardInterrupt
                c.execute(f"CREATE TABLE {TEXTS} AS SELECT r.response_id, {made} FROM responses AS r {self._chosen}")
        except BaseException as e:  # (KeyboardInterrupt too: the reader was interrupted) told to who waits
            self._error = e
        finally:
            self._done.set()

    @property
    def started(self) -> bool:
        return self._thread is not None

    def ready(self) -> bool:
        """Whether the table is made (a page then joins it)."""
        return self._done.is_set() and self._error is None

    def wait(self) -> None:
        """Until the table is made (starting it); what stopped it is raised."""
        self.start()
        if self._thread is None:  # stopped: the Reader is closed
            raise KeyboardInterrupt
        self._done.wait()
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        """Stop making the table (the Reader is closing): none is started from now, and one being made is
        interrupted; returns when its thread has ended."""
        with self._lock:
            self._stopped.set()
            thread = self._thread
        if thread is not None:
            self._interrupt()
            thread.join()

    def of(self, c: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]], names: list[str]) -> None:
        """Fill in the columns ``names`` of ``rows`` (dicts with ``response_id`` and ``_source_path``), read from
        ``responses`` on cursor ``c``: for a page answered before the table is made."""
        if not rows or not names:
            return
        # the source paths as well as the ids: Parquet statistics skip the row groups of other files
        params = {"paths": sorted({r["_source_path"] for r in rows}), "ids": [r["response_id"] for r in rows]}
        found = {row[0]: row[1:] for row in c.execute(
            f"SELECT r.response_id, {', '.join(self.columns[n] for n in names)} FROM responses AS r "
            "WHERE r.source_path IN (SELECT unnest($paths)) AND r.response_id IN (SELECT unnest($ids))",
            params).fetchall()}
        for r in rows:
            r.update(zip(names, found.get(r["response_id"], (None,) * len(names))))
