"""``--where``: one boolean expression over the warehouse's views, and nothing else.

The predicate is SQL text from the user (or from whatever passes it on), placed in
``SELECT response_id, record_id FROM responses WHERE (<where>)``. Two locks keep it
to that:

* **the parse.** DuckDB parses the very text that will run. It must be one
  statement (``1=1); COPY ... TO 'f'; SELECT (1`` is three), with the shape of the
  selection query (``true) UNION SELECT ...`` or ``... ORDER BY`` change it), and
  its expression may read only the warehouse's views: no table functions
  (``read_text``, ``read_csv``, ``glob``, ``query``, ...), no other schemas.
  Subqueries over the views are fine (``response_id IN (SELECT response_id FROM
  evaluations WHERE ...)``), and so are the names a WITH defines, where that WITH
  is in scope (``_reads_outside``): the same name elsewhere is a file to DuckDB.
* **the sandbox.** The export's connection can read the warehouse's data files
  and nothing else, cannot write files (DuckDB still spills to its temporary
  directory), loads no extensions, and its settings are locked, so even an
  expression the parse let through by mistake cannot reach the file system.

The Python API's ``where=`` (``warehouse.read``, ``read_arrow``, ``scan`` and the
``Warehouse`` methods) is held to both as well (``predicate_sql`` over the view asked
for, run in a sandboxed database: ``api.py``). ``warehouse sql`` and ``Warehouse.sql``
run any SQL by design.
"""

from __future__ import annotations

import json
import os
from typing import Any

import duckdb

from warehouse.errors import QueryError

#: the query the export's predicate is the WHERE clause of
SELECT_RESPONSES = "SELECT response_id, record_id FROM responses"
#: the predicate on lines of its own, so a trailing -- comment ends there
SELECTION = SELECT_RESPONSES + " WHERE (\n{where}\n)"


def selection_sql(con: duckdb.DuckDBPyConnection, where: str) -> str:
    """The selection query for ``where``; QueryError when it is not one expression over the views."""
    return predicate_sql(con, SELECT_RESPONSES, where)


def predicate_sql(con: duckdb.DuckDBPyConnection, select: str, where: str, *, label: str = "--where",
                  view: str = "responses") -> str:
    """``select`` (a query on ``view`` without a WHERE) filtered by ``where``: QueryError (naming the
    argument as ``label``) when ``where`` is not one expression over the warehouse's views.
    ``warehouse.read``/``read_arrow``/``scan`` hold their ``where=`` to the same rules (``api.py``)."""
    sql = f"{select} WHERE (\n{where}\n)"
    refused = _Refusal(con, where, label, view)
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as e:
        raise refused(str(e)) from None
    if len(statements) != 1:
        raise refused(f"it ends the query and adds {len(statements) - 1} more statement(s); "
                      f"{label} is one expression (use `warehouse sql` to run statements)")
    node = _parse(con, sql, refused)
    expected = _parse(con, f"{select} WHERE (\ntrue\n)", refused)
    if _shape(node) != _shape(expected):
        raise refused(f"it changes the query around it (UNION, ORDER BY, GROUP BY, LIMIT, ...); "
                      f"{label} is one expression, the WHERE clause of a query on {view}")
    views = {r[0] for r in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal AND NOT temporary"
    ).fetchall()}
    problem = _reads_outside(node["where_clause"], views, label)
    if problem:
        raise refused(problem)
    return sql


def _parse(con, sql: str, refused: "_Refusal") -> dict:
    tree = json.loads(con.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchone()[0])
    if tree.get("error"):
        raise refused(tree.get("error_message") or "DuckDB cannot parse it")
    return tree["statements"][0]["node"]


def _shape(node: dict) -> Any:
    """The query around the WHERE clause, without positions: it must be the selection query's."""
    return _strip({k: v for k, v in node.items() if k != "where_clause"})


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ("query_location", "query_location_length")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _reads_outside(tree: Any, views: set[str], label: str) -> str | None:
    """Why the expression reads something other than the warehouse's views, or None.

    A name a WITH defines stands for its query only where the WITH is in scope, as DuckDB binds it:
    in the query the WITH belongs to, and in the bodies of the CTEs defined after it in the same WITH
    (in its own body only when it is recursive). Anywhere else the same name is a table, or a file
    DuckDB reads (``"/x/secret.csv"``). Names are compared as DuckDB does, case-insensitively.
    """
    views = {v.lower() for v in views}
    stack: list[tuple[Any, frozenset[str]]] = [(tree, frozenset())]  # iterative: a deep expression must not recurse
    while stack:
        value, ctes = stack.pop()
        if isinstance(value, list):
            stack.extend((v, ctes) for v in value)
            continue
        if not isinstance(value, dict):
            continue
        kind = value.get("type")
        if kind == "TABLE_FUNCTION":
            name = (value.get("function") or {}).get("function_name", "?")
            return (f"it calls the table function {name}(), which reads files or runs SQL; "
                    f"{label} may read only the warehouse's views")
        if kind == "BASE_TABLE":
            name, schema, catalog = value.get("table_name"), value.get("schema_name"), value.get("catalog_name")
            if schema or catalog or str(name).lower() not in views | ctes:
                qualified = ".".join(p for p in (catalog, schema, name) if p)
                return (f"it reads {qualified!r}, which is not a view of the warehouse; "
                        f"{label} may read only these: {', '.join(sorted(views))}")
        cte_map = value.get("cte_map")
        entries = cte_map.get("map", []) if isinstance(cte_map, dict) else []
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            name = str(entry.get("key", "")).lower()
            body = entry.get("value")
            stack.append((body, ctes | {name} if _recursive(body, name) else ctes))
            ctes = ctes | {name}
        stack.extend((v, ctes) for k, v in value.items() if k != "cte_map")
    return None


def _recursive(cte: Any, name: str) -> bool:
    """A CTE whose body may read itself: DuckDB's recursive node (a UNION over the CTE's own name)."""
    node = cte.get("query_node") if isinstance(cte, dict) else None
    return isinstance(node, dict) and node.get("type") == "RECURSIVE_CTE_NODE" and str(node.get("cte_name", "")).lower() == name


class _Refusal:
    """The QueryError for a refused predicate: what was given, why not, and the columns to filter on."""

    def __init__(self, con, where: str, label: str, view: str):
        self.con, self.where, self.label, self.view = con, where, label, view

    def __call__(self, why: str) -> QueryError:
        from warehouse.reading.query import columns_hint

        return QueryError(f"{self.label} {self.where!r}: {why}\n\ncolumns of {self.view} you can filter on:\n"
                          f"{columns_hint(self.con, self.view)}")


def sandbox(con: duckdb.DuckDBPyConnection, data_dirs: list[str]) -> None:
    """Confine the connection to reading ``data_dirs`` (the warehouse's Parquet files), and lock it so.

    Call it after every view exists and every setting the export needs is made.
    """
    allowed = sorted({os.path.join(p, "") for d in data_dirs for p in (os.path.abspath(d), os.path.realpath(d))})
    con.execute("SET allowed_directories = ?", [allowed]).fetchall()
    for setting in ("enable_external_access", "autoinstall_known_extensions", "autoload_known_extensions"):
        con.execute(f"SET {setting} = false").fetchall()
    con.execute("SET lock_configuration = true").fetchall()
