"""A format is a plug-in: a third party's package with one entry point is found, detected, ingested,
queried and listed like the built-in ones, and the core adds its columns, tables and views.

The third party here is installed the way pip installs a distribution: a package and a
``*.dist-info`` folder (METADATA, entry_points.txt) in a directory on the path of the
processes that run ``warehouse``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest

from warehouse.errors import FormatError, UsageError
from warehouse.formatkit.declared import compose
from warehouse.formatkit.ingestor import Ingestor
from warehouse.formatkit.registry import GROUP, Registry
from warehouse.tables import CORE, RECORD_ID, C, Parent, Table

from ..conftest import FIXTURES

PLUGIN = '''
"""Widget logs: a third party's format, one JSONL line per widget."""
from warehouse.formatkit.ingestor import Ingestor
from warehouse.formatkit.readers import jsonl_records
from warehouse.tables import RECORD_ID, STR, C, Parent, Table, provenance


class Widgets(Ingestor):
    name = "widgets"
    description = "widget logs (.jsonl): one widget per line"
    suffixes = (".jsonl",)
    line_records = True
    columns = {"responses": (C("widget_color", STR, "colour of the widget"),)}
    # a widget's parts belong to its whole record; exports join and order them by this declaration
    tables = (Table("widget_parts", grain="one part of a widget", doc="The parts a widget is made of.",
                    columns=(RECORD_ID, C("part", STR, "name of the part"), *provenance()),
                    order=("source_path", "source_locator", "part"),
                    parent=Parent(by=("record_id",), order=("part", "source_path", "source_locator"))),)
    views = ("CREATE OR REPLACE VIEW widget_parts AS SELECT * FROM raw.widget_parts",)

    def sniff(self, path, head):
        return b'"widget"' in head

    def records(self, src):
        return jsonl_records(src)

    def map(self, record, ctx):
        v = record.value
        return {"responses": [{"prompt": v["widget"], "response": v["says"], "widget_color": v["color"]}],
                "widget_parts": [{"part": p} for p in v["parts"]]}
'''


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    """A directory holding the package ``widgets_format`` and its distribution's metadata."""
    site = tmp_path_factory.mktemp("site")
    (site / "widgets_format").mkdir()
    (site / "widgets_format" / "__init__.py").write_text(PLUGIN)
    info = site / "widgets_format-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: widgets-format\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nwidgets = widgets_format:Widgets\n")
    return site


def run(plugin: Path | None, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if plugin is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(plugin), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "warehouse.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def test_a_third_party_format_is_detected_ingested_and_queried(plugin, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    # more files than a run ingests in-process: the pool's workers load the format by name too
    for i in range(401):
        line = {"widget": f"w{i}", "says": "hi", "color": ["red", "blue"][i % 2], "parts": ["bolt", "nut"]}
        (src / f"w{i:03d}.jsonl").write_text(json.dumps(line) + "\n")
    (src / "ti").symlink_to(FIXTURES / "trait_interp")  # the built-in formats still read theirs, in the same run
    root = tmp_path / "wh"
    done = run(plugin, "ingest", str(src), "--root", str(root), "--jobs", "2", "--quiet")
    assert done.returncode == 0, done.stderr
    out = run(plugin, "sql", "SELECT source_format, widget_color, count(*) AS n FROM responses "
                             "WHERE source_format = 'widgets' GROUP BY ALL ORDER BY 2", "--root", str(root), "--format", "json")
    assert json.loads(out.stdout) == [{"source_format": "widgets", "widget_color": "blue", "n": 200},
                                      {"source_format": "widgets", "widget_color": "red", "n": 201}], out.stderr
    out = run(plugin, "sql", "SELECT count(*) AS parts, count(DISTINCT record_id) AS widgets FROM widget_parts",
              "--root", str(root), "--format", "json")
    assert json.loads(out.stdout) == [{"parts": 802, "widgets": 401}], out.stderr
    out = run(plugin, "sql", "SELECT count(*) AS n FROM responses WHERE source_format = 'trait_interp'",
              "--root", str(root), "--format", "json")
    assert json.loads(out.stdout)[0]["n"] > 0, out.stderr


def test_a_third_party_child_table_is_exported_by_its_declared_parent_link(plugin, tmp_path):
    """The exports join a format's own table to the selection by its ``Parent`` declaration, and
    order it by its declared order: parquet carries the parts of the selected widgets only; a format
    with no place for them counts them."""
    import pyarrow.parquet as pq

    src = tmp_path / "src"
    src.mkdir()
    for i, color in enumerate(["red", "blue", "red"]):
        line = {"widget": f"w{i}", "says": "hi", "color": color, "parts": ["nut", "bolt"] + ["gear"] * (i == 2)}
        (src / f"w{i}.jsonl").write_text(json.dumps(line) + "\n")
    root = tmp_path / "wh"
    assert run(plugin, "ingest", str(src), "--root", str(root), "--quiet").returncode == 0
    done = run(plugin, "export", "--root", str(root), "--where", "widget_color = 'red'", "--format", "parquet",
               "--out", str(tmp_path / "red"))
    assert done.returncode == 0, done.stderr
    parts = pq.read_table(tmp_path / "red" / "widget_parts.parquet").to_pylist()
    assert [(os.path.basename(p["source_path"]), p["part"]) for p in parts] == [
        ("w0.jsonl", "bolt"), ("w0.jsonl", "nut"), ("w2.jsonl", "bolt"), ("w2.jsonl", "gear"), ("w2.jsonl", "nut")]
    noted = run(plugin, "export", "--root", str(root), "--where", "widget_color = 'red'", "--format", "jsonl",
                "--out", str(tmp_path / "red.jsonl"))
    assert "jsonl has no place for the selected responses' 5 widget parts" in noted.stderr, noted.stderr


def test_a_table_of_rows_about_responses_declares_its_parent():
    """A table whose rows carry response_id or record_id says how they belong to responses, or exports
    could not carry it: the declaration is refused, saying what to declare."""
    with pytest.raises(ValueError, match=r"table parts: its rows carry response_id or record_id, so it declares"):
        Table("parts", grain="g", doc="d", columns=(RECORD_ID, C("x", pa.string(), "x")))
    with pytest.raises(ValueError, match=r"table parts: parent.order names y, which it has no column for"):
        Table("parts", grain="g", doc="d", columns=(RECORD_ID, C("x", pa.string(), "x")), order=("x",),
              parent=Parent(by=("record_id",), order=("y",)))
    with pytest.raises(ValueError, match=r"Parent.by \('turn_index',\): name one or both of response_id, record_id"):
        Parent(by=("turn_index",), order=())


def test_format_lists_it_and_an_unknown_one_is_answered_with_the_installed_ones(plugin, tmp_path):
    built_in = Registry.installed().names()  # this project's formats: a new one needs no edit here
    with_plugin = ", ".join(sorted([*built_in, "widgets"]))
    helped = run(plugin, "ingest", "--help")
    assert with_plugin in " ".join(helped.stdout.split())
    wrong = run(plugin, "ingest", str(FIXTURES / "trait_interp"), "--root", str(tmp_path / "wh"), "--format", "widget")
    assert (wrong.returncode, wrong.stderr) == (2, f"error: unknown format 'widget'; installed formats: {with_plugin}\n")
    without = run(None, "ingest", str(FIXTURES / "trait_interp"), "--root", str(tmp_path / "wh2"), "--format", "widgets")
    assert without.returncode == 2 and f"installed formats: {', '.join(built_in)}\n" in without.stderr


# --- how what formats declare is merged ---------------------------------------------------------------------


@dataclass
class Declares:
    name: str
    columns: dict = field(default_factory=dict)
    tables: tuple = ()


def _table(name: str) -> Table:
    return Table(name, grain="g", doc="d", columns=(C("x", pa.string(), "x"),))


def test_columns_join_before_provenance_and_alike_declarations_are_one_column():
    a = Declares("a", {"turns": (C("color", pa.string(), "a's"),)})
    b = Declares("b", {"turns": (C("color", pa.string(), "b's"), C("size", pa.int64(), "b's"))}, (_table("b_things"),))
    tables = compose(CORE, [a, b])
    names = tables["turns"].column_names
    assert names[-5:] == ["color", "size", "source_path", "source_locator", "extra"]
    assert tables["turns"].column("color").doc == "a's" and list(tables)[-1] == "b_things"


@pytest.mark.parametrize("formats, message", [
    ([Declares("a", {"turns": (C("role", pa.int64(), "a number"),)})],
     "format 'a' declares turns.role as int64, but it is string already: use that type or another name"),
    ([Declares("a", tables=(_table("t"),)), Declares("b", tables=(_table("t"),))],
     "format 'b' declares the table 't', which format 'a' declares already: choose another name"),
    ([Declares("a", tables=(_table("responses"),))],
     "format 'a' declares the table 'responses', which the core declares already: choose another name"),
    ([Declares("a", {"sources": (C("y", pa.string(), "y"),)})],
     "format 'a' adds columns to 'sources': formats add columns to responses, turns, sentence_boundaries, "
     "annotations, evaluations, token_values only; declare a table of its own (Ingestor.tables) instead"),
])
def test_a_declaration_that_clashes_names_both_sides(formats, message):
    with pytest.raises(FormatError) as e:
        compose(CORE, formats)
    assert str(e.value) == message


def test_the_registry_lists_without_importing_and_loads_on_demand():
    code = textwrap.dedent("""
        import sys
        from warehouse.formatkit.registry import Registry
        r = Registry.installed()
        print(r.names(), sorted(m for m in sys.modules if m.startswith("warehouse.formats")))
        r.load("scale")
        print(sorted(m.split(".")[2] for m in sys.modules if m.count(".") == 2 and m.startswith("warehouse.formats.")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    names = Registry.installed().names()
    assert out[0] == f"{names} []" and {"activations", "afterimage", "dataloop", "scale", "trait_interp"} <= set(names)
    assert "scale" in out[1] and not (set(names) - {"scale"}) & set(eval(out[1]))
    with pytest.raises(UsageError, match=r"^unknown format 'nope'; installed formats: activations, afterimage, "):
        Registry.installed().load("nope")


def test_detection_order_is_declared_on_the_classes():
    ingestors = Registry.installed().ingestors()
    assert ingestors == sorted(ingestors, key=lambda i: (i.priority, i.name))
    assert len({i.priority for i in ingestors}) == len(ingestors), "two built-in formats share a priority"
    for i in ingestors:  # a declared capability is an implemented one
        assert i.fast_path == (type(i).fast_lines is not Ingestor.fast_lines), i.name


def test_the_contract_says_what_each_method_raises():
    for method in ("sniff", "records", "map", "not_records", "fast_lines"):
        assert "Raises:" in getattr(Ingestor, method).__doc__, method
