"""The read schema a connection is opened with comes from a cache checked against the installed code
(warehouse/formatkit/read_schema.py): a small query from a cold process then imports neither pyarrow nor
any format, and a change to the installation (a format's code edited, a format installed or removed) is
seen at once, never an out-of-date set of views.

Every process here runs with a cache folder of the test's own (``WAREHOUSE_CACHE_DIR``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import warehouse
from warehouse.formatkit import read_schema as rs
from warehouse.formatkit.registry import GROUP

from ..conftest import FIXTURES

#: a cold process's query: its answer, the views it made and what it imported, as JSON on stdout
PROBE = textwrap.dedent("""
    import io, json, sys
    import warehouse
    out = io.StringIO()
    warehouse.sql(sys.argv[1], "SELECT source_format, count(*) AS n FROM responses GROUP BY ALL ORDER BY 1",
                  output_format="json", out=out)
    con = warehouse.connect(sys.argv[1])
    views = con.execute("SELECT schema_name, view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY 1, 2").fetchall()
    print(json.dumps({"answer": json.loads(out.getvalue()), "views": views,
                      "imported": sorted(m for m in sys.modules if m in ("pyarrow", "numpy", "polars", "deltalake")
                                         or m.startswith("warehouse.formats."))}))
""")


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wh")
    warehouse.ingest([FIXTURES / "afterimage", FIXTURES / "scale"], root, progress=False)
    return root


def probe(root: Path, cache: Path, site: Path | None = None) -> dict:
    env = {**os.environ, "WAREHOUSE_CACHE_DIR": str(cache)}
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True, text=True, env=env,
                          cwd=root.parent, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_cold_query_reads_the_cached_schema_and_imports_neither_pyarrow_nor_a_format(root, tmp_path):
    cache = tmp_path / "cache"
    first = probe(root, cache)
    assert any(m.startswith("warehouse.formats.") for m in first["imported"])  # no cache yet: made, and written
    assert len(list(cache.glob("read-schema-*.json"))) == 1
    second = probe(root, cache)
    assert second["imported"] == []
    assert second["answer"] == first["answer"] and {r["source_format"] for r in first["answer"]} == {"afterimage", "scale"}
    assert second["views"] == first["views"]  # every view, raw and public, made the same from the cache


def test_the_cached_schema_is_the_declarations(tmp_path, monkeypatch):
    monkeypatch.setenv("WAREHOUSE_CACHE_DIR", str(tmp_path))
    made = rs.made()
    rs._write(rs.cache_file(), made)
    assert rs._cached(rs.cache_file()) == made
    assert [t.name for t in made.tables] == list(warehouse.TABLES)
    responses = dict((t.name, t) for t in made.tables)["responses"]
    assert ("extra", "JSON", True) in responses.columns


def test_a_damaged_unwritable_or_open_to_others_cache_is_made_again(root, tmp_path):
    cache = tmp_path / "cache"
    want = probe(root, cache)
    (written,) = cache.glob("read-schema-*.json")
    written.write_text('{"layout": 1, "tables": [')  # cut short
    again = probe(root, cache)
    assert again["answer"] == want["answer"] and again["views"] == want["views"]
    assert json.loads(written.read_text())["layout"] == rs.LAYOUT  # written whole again
    written.chmod(0o666)  # others could have changed it: not read, made again (written anew, as this user's only)
    assert probe(root, cache)["imported"] != []
    assert written.stat().st_mode & 0o022 == 0
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")  # the cache folder cannot be made: the schema is made on every open
    assert probe(root, blocked / "cache")["answer"] == want["answer"]


WIDGETS = '''
from warehouse.formatkit.ingestor import Ingestor
from warehouse.tables import STR, C


class {cls}(Ingestor):
    name = "{name}"
    description = "a test format that reads nothing"
    suffixes = (".{name}",)
    columns = {{"responses": (C("{name}_note", STR, "a column of its own"),)}}
    views = ({views},)

    def sniff(self, path, head):
        return False

    def records(self, src):
        return iter(())

    def map(self, record, ctx):
        return {{}}
'''


def install(site: Path, name: str, views: list[str]) -> None:
    """A format ``name`` installed in ``site`` as pip would: its package and its distribution's metadata."""
    (site / f"{name}_format").mkdir(exist_ok=True)
    statements = ", ".join(repr(f"CREATE OR REPLACE VIEW {v} AS SELECT 1 AS one") for v in views)
    (site / f"{name}_format" / "__init__.py").write_text(WIDGETS.format(cls=name.title(), name=name, views=statements))
    info = site / f"{name}_format-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-format\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{name} = {name}_format:{name.title()}\n")


def names(got: dict) -> set[str]:
    return {view for _, view, _ in got["views"]}


def test_a_change_to_the_installed_formats_is_seen_at_once(root, tmp_path):
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    install(site, "widgets", ["widget_a"])
    first = probe(root, cache, site)
    assert "widget_a" in names(first)
    assert probe(root, cache, site)["imported"] == []  # cached
    # its code edited in place: a view added
    install(site, "widgets", ["widget_a", "widget_b"])
    edited = probe(root, cache, site)
    assert {"widget_a", "widget_b"} <= names(edited)
    # another format installed beside it
    install(site, "gadgets", ["gadget_a"])
    assert {"widget_a", "widget_b", "gadget_a"} <= names(probe(root, cache, site))
    # one removed
    for path in sorted((site / "gadgets_format-1.0.dist-info").iterdir()):
        path.unlink()
    (site / "gadgets_format-1.0.dist-info").rmdir()
    removed = probe(root, cache, site)
    assert "gadget_a" not in names(removed) and "widget_b" in names(removed)
    assert probe(root, cache, site)["imported"] == []
    # the same installation without that folder on its path: its own cache, no widgets
    assert not {"widget_a", "widget_b"} & names(probe(root, cache))
    assert "widget_a" in names(probe(root, cache, site))
