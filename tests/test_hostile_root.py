"""Nothing the warehouse does reaches outside its root, its inputs or what it was asked to write, however
the root, an input tree or a predicate was prepared (issue 30): links planted in table folders, at the lock
and in input trees; predicates handed to the Python API; the lock file deleted under a running ingest.

Each case is set up as the attacker or the unlucky user would: files, symlinks, a `warehouse` process.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import warehouse
from warehouse.errors import QueryError
from warehouse.exports import where as where_mod

from .conftest import REPO


def run(*args: str, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "warehouse.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


# --- 4. every predicate the Python API takes is one expression over the views, in a sandbox -----------------

STATEMENTS = "true; COPY (SELECT 'x') TO 'x.csv'; SELECT * FROM responses WHERE true"
FILE_READS = [
    "response_id IN (SELECT content FROM read_text('{secret}'))",
    "EXISTS (SELECT * FROM \"{secret}\")",
    "EXISTS (WITH \"{secret}\" AS (SELECT 1) SELECT 1) OR EXISTS (SELECT * FROM \"{secret}\")",
]


def _module(fn):
    return lambda root, view, where: fn(root, view, where=where)


CALLS = {
    "warehouse.read": _module(warehouse.read),
    "warehouse.read_arrow": _module(warehouse.read_arrow),
    "warehouse.scan(...).collect()": lambda root, view, where: warehouse.scan(root, view, where=where).collect(),
    "Warehouse.read": lambda root, view, where: warehouse.open(root).read(view, where=where),
    "Warehouse.read_arrow": lambda root, view, where: warehouse.open(root).read_arrow(view, where=where),
    "Warehouse.scan(...).collect()": lambda root, view, where: warehouse.open(root).scan(view, where=where).collect(),
}


@pytest.mark.parametrize("call", CALLS)
def test_a_where_from_outside_runs_no_statement_and_reads_no_file(samples_wh, tmp_path, monkeypatch, call):
    monkeypatch.chdir(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2\n")
    with pytest.raises(QueryError, match=r"^where .true; COPY"):
        CALLS[call](samples_wh.root, "responses", STATEMENTS)
    assert not (tmp_path / "x.csv").exists()
    for predicate in FILE_READS:
        with pytest.raises(QueryError, match="which reads files or runs SQL|which is not a view of the warehouse"):
            CALLS[call](samples_wh.root, "turns", predicate.format(secret=secret))
    # what a where is for still works, on any view, subqueries over the views included
    predicate = "role = 'user' AND response_id IN (SELECT response_id FROM responses)"
    assert len(CALLS[call](samples_wh.root, "turns", predicate)) == samples_wh.one(
        f"SELECT count(*) FROM turns WHERE {predicate}") > 0


def test_the_api_sandbox_holds_even_if_the_check_let_something_through(samples_wh, tmp_path, monkeypatch):
    """The database a where= runs in reads the warehouse's files and nothing else; Warehouse.sql is not confined."""
    monkeypatch.setattr(where_mod, "predicate_sql", lambda con, select, where, **_: f"{select} WHERE ({where})")
    monkeypatch.chdir(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2\n")
    wh = warehouse.open(samples_wh.root)
    with pytest.raises(Exception, match="Permission Error"):
        wh.read("responses", where=f"response_id IN (SELECT content FROM read_text('{secret}'))")
    with pytest.raises(Exception, match="Permission Error"):
        warehouse.read(samples_wh.root, "responses", where="true) ; COPY (SELECT 'x') TO 'x.csv'; SELECT 1 WHERE (true")
    assert not (tmp_path / "x.csv").exists()
    # the sandbox is the filtered reads' own database: SQL the caller writes runs as before
    assert wh.sql(f"SELECT content FROM read_text('{secret}')").fetchall() == [("hunter2\n",)]
    assert wh.read("responses").height == samples_wh.one("SELECT count(*) FROM responses")
