"""A snapshot's views are made once and copied into every connection that reads it
(warehouse/reading/view_cache.py): the copy is the views the statements make, and a file that cannot be
trusted or used, or a snapshot with something damaged, makes the views from the statements."""

from __future__ import annotations

from pathlib import Path

import pytest

import warehouse
from warehouse.errors import DamagedTable
from warehouse.reading import view_cache

from ..conftest import FIXTURES

VIEWS = "SELECT database_name, schema_name, view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY ALL"


@pytest.fixture
def root(tmp_path) -> Path:
    root = tmp_path / "wh"
    warehouse.ingest([FIXTURES / "afterimage", FIXTURES / "scale"], root, progress=False)
    return root


@pytest.fixture
def statements_run(monkeypatch, tmp_path) -> list[str]:
    """The statements ``make_views`` runs itself (none when it copies them), with a cache folder of the test's own."""
    monkeypatch.setenv("WAREHOUSE_CACHE_DIR", str(tmp_path / "cache"))
    ran: list[str] = []
    create = view_cache.create_view

    def counted(con, statement):
        ran.append(statement)
        return create(con, statement)

    monkeypatch.setattr(view_cache, "create_view", counted)
    return ran


def opened(root: Path) -> tuple[list, int]:
    con = warehouse.connect(root)
    try:
        return con.execute(VIEWS).fetchall(), con.execute("SELECT count(*) FROM responses").fetchone()[0]
    finally:
        con.close()


def test_a_second_connection_copies_the_views_the_statements_made(root, statements_run, tmp_path):
    first, n = opened(root)
    made = len(statements_run)
    assert made > 40 and n > 0
    assert len(list((tmp_path / "cache").glob("views-*.duckdb"))) == 1
    statements_run.clear()
    second, again = opened(root)
    assert statements_run == []  # copied
    assert second == first and again == n  # every view, raw and public, as the statements made it
    assert {db for db, *_ in second} == {"memory"}  # in the connection's own database: SHOW TABLES, CREATE TABLE
    con = warehouse.connect(root)
    con.execute("CREATE TABLE mine AS SELECT count(*) AS n FROM turns")
    assert con.execute("SELECT n FROM mine").fetchone()[0] > 0
    assert "responses" in {r[0] for r in con.execute("SHOW TABLES").fetchall()}


@pytest.mark.parametrize("spoil", ["open to others", "its folder open to others", "not a database"])
def test_a_file_that_cannot_be_trusted_or_used_is_passed_over(root, statements_run, tmp_path, spoil):
    want, _ = opened(root)
    (path,) = (tmp_path / "cache").glob("views-*.duckdb")
    if spoil == "open to others":
        path.chmod(0o666)
    elif spoil == "its folder open to others":  # another user could swap the file for one of theirs
        path.parent.chmod(0o777)
    else:
        path.write_bytes(b"not a database at all" * 100)
        path.chmod(0o644)
    statements_run.clear()
    got, _ = opened(root)
    assert got == want and len(statements_run) > 40  # made from the statements


def test_a_damaged_table_is_told_even_when_its_snapshot_was_cached(root, statements_run):
    opened(root)  # sound: its views' file written
    data = sorted((root / "responses").glob("*.parquet"))[0]
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])  # cut short: no footer
    con = warehouse.connect(root)
    with pytest.raises(Exception) as e:
        con.execute("SELECT count(*) FROM responses").fetchall()
    assert "table responses is damaged" in str(e.value)
    assert con.execute("SELECT count(*) FROM turns").fetchone()[0] > 0  # what does not read it works
    with pytest.raises(DamagedTable, match="table responses is damaged"):
        warehouse.sql(root, "SELECT count(*) FROM responses", output_format="json")
