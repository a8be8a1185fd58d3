"""The DuckDB statements the read side makes: views bound when a query first reads them (``create_view``),
string literals (``quote``), and DuckDB's error class (``duckdb_errors``), with duckdb imported only then.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a statement runs: every ingest imports the read side, few need duckdb
    import duckdb

def quote(s: str) -> str:
    """``s`` as a SQL string literal."""
    return "'" + s.replace("'", "''") + "'"


#: ``CREATE [OR REPLACE] VIEW name`` at the start of a statement (after comments), before its ``AS``
_CREATE_VIEW = re.compile(r"\A((?:\s|--[^\n]*\n)*CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+[\w.]+)(\s+AS\b)", re.IGNORECASE)


#: whether this DuckDB takes ``WITH (DEFER_BINDING)`` (None: not tried yet)
_can_defer: bool | None = None


def create_view(con: duckdb.DuckDBPyConnection, statement: str) -> None:
    """Run ``statement``, a CREATE VIEW, with the view bound when a query first reads it rather than now.

    DuckDB binds a view when it is made (works out its columns, reads the footers of the files under
    it), and again whenever a query reads it; binding every view of the warehouse when a connection
    opened was most of the time a small query took from a cold process, for views the query never
    read. A view whose binding finds damage (``create_raw_views``) is not made this way. A DuckDB that
    does not know DEFER_BINDING binds it now, as before."""
    global _can_defer
    deferred, n = _CREATE_VIEW.subn(r"\1 WITH (DEFER_BINDING)\2", statement, count=1)
    if n and _can_defer is not False:
        import duckdb

        try:
            con.execute(deferred)
            _can_defer = True
            return
        except duckdb.ParserException:
            if _can_defer:  # it took the option before: the statement itself is wrong, as DuckDB says
                raise
            _can_defer = False
    con.execute(statement)


def binds_when_made() -> bool:
    """Whether this DuckDB has been found not to take ``WITH (DEFER_BINDING)``: its views are bound as made."""
    return _can_defer is False


def duckdb_errors():
    import duckdb

    return duckdb.Error
