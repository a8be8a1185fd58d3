"""Rows built from several files come out the same whichever file is met first (catalog dependencies).

A toy format makes the mechanism visible: ``X.main.json`` holds a prompt, its
sibling ``X.side.json`` (optional) the response, and the ``greeting`` run option
is prepended. The main file depends on the side file and on the option.
"""

from __future__ import annotations

import os
import time

import orjson

from warehouse.formatkit.ingestor import Ingestor
from warehouse.formatkit.readers import json_document_records
from warehouse.formatkit.records import RecordContext
from warehouse.formatkit.registry import Registry

from ..conftest import write_json


class Pair(Ingestor):
    name = "pair"
    description = "test format: X.main.json + X.side.json"
    suffixes = (".main.json", ".side.json")

    def sniff(self, path, head):
        return True

    def records(self, src):
        if src.path.endswith(".side.json"):
            return iter(())  # read with its main file
        side = src.read_dependency(src.path.replace(".main.json", ".side.json"))
        greeting = src.option("greeting") or ""
        for r in json_document_records(src):
            r.envelope = {"side": orjson.loads(side) if side else None, "greeting": greeting}
            yield r

    def map(self, record, ctx: RecordContext):
        env = record.envelope
        return {"responses": [{"prompt": env["greeting"] + record.value["prompt"],
                               "response": (env["side"] or {}).get("response")}]}


REF = Registry.of({"pair": "tests.formatkit.test_dependencies:Pair"})


def rows(wh):
    return wh.rows("SELECT prompt, response FROM responses ORDER BY prompt")


def bump(path):
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))


def test_side_file_met_after_main_file(wh, tmp_path):
    main = write_json(tmp_path / "d" / "x.main.json", {"prompt": "p"})
    wh.ingest(main, registry=REF)
    assert rows(wh) == [{"prompt": "p", "response": None}]
    side = write_json(tmp_path / "d" / "x.side.json", {"response": "r"})
    s = wh.ingest(side, registry=REF)  # only the side file is named; its dependent follows
    assert s.files_ingested == 2
    assert rows(wh) == [{"prompt": "p", "response": "r"}]


def test_side_file_met_first(wh, tmp_path):
    write_json(tmp_path / "d" / "x.side.json", {"response": "r"})
    wh.ingest(tmp_path / "d" / "x.side.json", registry=REF)
    write_json(tmp_path / "d" / "x.main.json", {"prompt": "p"})
    wh.ingest(tmp_path / "d", registry=REF)
    assert rows(wh) == [{"prompt": "p", "response": "r"}]


def test_a_changed_or_removed_side_file_rebuilds_the_main_rows(wh, tmp_path):
    write_json(tmp_path / "d" / "x.main.json", {"prompt": "p"})
    side = write_json(tmp_path / "d" / "x.side.json", {"response": "r1"})
    wh.ingest(tmp_path / "d", registry=REF)
    write_json(side, {"response": "r2"})
    bump(side)
    wh.ingest(tmp_path / "d", registry=REF)
    assert rows(wh) == [{"prompt": "p", "response": "r2"}]
    side.unlink()
    wh.ingest(tmp_path / "d", registry=REF, prune=True)
    assert rows(wh) == [{"prompt": "p", "response": None}]
    again = wh.ingest(tmp_path / "d", registry=REF)
    assert again.files_unchanged == 1 and not again.committed


def test_an_option_is_remembered_and_a_new_value_rebuilds(wh, tmp_path):
    write_json(tmp_path / "d" / "x.main.json", {"prompt": "p"})
    wh.ingest(tmp_path / "d", registry=REF)
    wh.ingest(tmp_path / "d", registry=REF, options={"greeting": "hi "})
    assert rows(wh) == [{"prompt": "hi p", "response": None}]
    s = wh.ingest(tmp_path / "d", registry=REF)  # remembered: nothing to redo
    assert s.files_unchanged == 1 and rows(wh) == [{"prompt": "hi p", "response": None}]
    wh.ingest(tmp_path / "d", registry=REF, options={"greeting": "yo "})
    assert rows(wh) == [{"prompt": "yo p", "response": None}]
    deps = orjson.loads(wh.one("SELECT depends_on FROM sources WHERE source_path LIKE '%main.json'"))
    assert deps == [
        {"path": str(tmp_path / "d" / "x.side.json"), "size": None, "mtime_ns": None, "sha256": None},
        {"option": "greeting", "value": "yo "},
    ]


# --- one type for depends_on: the JSON on disk as it always was -------------------------------

#: every shape the column has ever held, as the worker wrote it before ``DependsOn`` existed
STORED = [
    '[{"path":"/d/x.side.json","size":12,"mtime_ns":1700000000000000000,"sha256":"ab"}]',  # a file read
    '[{"path":"/d/x.side.json","size":null,"mtime_ns":null,"sha256":null}]',  # absent (or unreadable)
    '[{"path":"/d/big.json","size":null,"mtime_ns":1700000000000000001,"sha256":null}]',  # over the limit
    '[{"path":"/d/dir","size":null,"mtime_ns":5,"sha256":null,"dir":true}]',  # a directory listed
    '[{"option":"tokenizer","value":"/tok"},{"option":"greeting","value":null}]',  # run options
    '[{"path":"/outside/r","refused":"/d"}]',  # a reference refused outside the tree
]


def test_depends_on_reads_and_writes_every_stored_shape_byte_for_byte():
    from warehouse.formatkit.dependencies import DependsOn

    for text in STORED:
        assert DependsOn.from_json(text).to_json() == text
    assert DependsOn.from_json(None).to_json() is None and not DependsOn.from_json(None)
    kinds = [d.kind for text in STORED for d in DependsOn.from_json(text)]
    assert kinds == ["file", "file", "file", "dir", "option", "option", "refused"]


def test_the_samples_catalog_reads_back_as_it_was_written(samples_wh):
    """The bundled samples' warehouse (annotation targets, a download's siblings): every catalog
    row's depends_on, read as the type and written again, is the text that was stored."""
    from warehouse.formatkit.dependencies import DependsOn

    stored = [r["d"] for r in samples_wh.rows("SELECT depends_on::VARCHAR AS d FROM sources WHERE depends_on IS NOT NULL")]
    assert stored
    assert [DependsOn.from_json(t).to_json() for t in stored] == stored


def test_tokenize_finds_the_sources_that_asked_for_the_option_whatever_its_value():
    from warehouse.formatkit.dependencies import Dependency, DependsOn
    from warehouse.run.catalog import Catalog

    def row(*deps):
        return {"depends_on": DependsOn.of(deps).to_json()}

    catalog = Catalog({
        "/none": row(Dependency.option("tokenizer", None)),  # asked, none given then
        "/given": row(Dependency.file("/t.json", 1, 2, "ab"), Dependency.option("tokenizer", "/tok")),
        "/other": row(Dependency.option("greeting", "tokenizer")),
        "/named": row(Dependency.file("/tokenizer/x.json", 1, 2, "ab")),
        "/plain": {"depends_on": None},
    })
    assert catalog.asking_for("tokenizer") == ["/none", "/given"]


def test_only_the_dependencies_module_reads_the_json_of_depends_on():
    """depends_on was parsed in three places and matched by substring in a fourth; now one type reads it."""
    import ast

    from ..conftest import REPO

    keys = {"refused", "option", "dir"}  # keys only a dependency's JSON object has
    found = []
    for path in sorted((REPO / "warehouse").rglob("*.py")):
        if path.name == "dependencies.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            key = None
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                key = node.slice.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
                if node.func.attr == "get" and isinstance(node.args[0], ast.Constant):
                    key = node.args[0].value
                if node.func.attr == "loads" and "depends_on" in ast.unparse(node.args[0]):
                    found.append(f"{path.name}:{node.lineno}: parses depends_on itself")
            elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant):
                key = node.left.value
                if isinstance(key, str) and '"option"' in key:
                    found.append(f"{path.name}:{node.lineno}: matches depends_on by text")
            if key in keys:
                found.append(f"{path.name}:{node.lineno}: reads a dependency's key {key!r}")
    assert not found, "use warehouse.formatkit.dependencies.DependsOn:\n" + "\n".join(found)
