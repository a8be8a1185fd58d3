"""Export against hostile input and a bad day: --where that is more than a predicate, planted links,
--out in the warehouse, a quote in --out, a full disk, a killed export's leftovers."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap

import pytest

import warehouse
from warehouse import exports
from warehouse.errors import ExportError, QueryError, UsageError
from warehouse.exports import where as where_mod
from warehouse.exports.workspace import Workspace

from ..conftest import REPO, export_out


@pytest.fixture(scope="module")
def sw(samples_wh):
    return samples_wh


def export(sw, out, where=None, fmt="jsonl", **options):
    return warehouse.export(sw.root, where, fmt, out, progress=False, **options)


def count(sw, where):
    return sw.one(f"SELECT count(*) FROM responses WHERE {where}")


# --- --where is one expression over the views -------------------------------------------------------


def test_a_where_that_closes_the_statement_writes_nothing(sw, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(QueryError) as e:
        export(sw, tmp_path / "o.jsonl", "1=1); COPY (SELECT 'pwned' AS x) TO 'pwn.csv'; SELECT (1")
    assert "it ends the query and adds 2 more statement(s); --where is one expression" in str(e.value)
    assert list(tmp_path.iterdir()) == []  # no pwn.csv, no output


@pytest.mark.parametrize("predicate, says", [
    ("response_id IN (SELECT content FROM read_text('/etc/passwd'))", "table function read_text()"),
    ("EXISTS (SELECT * FROM read_csv('/etc/passwd'))", "table function read_csv()"),
    ("EXISTS (SELECT * FROM glob('/*'))", "table function glob()"),
    ("EXISTS (SELECT * FROM query('SELECT 1'))", "table function query()"),
    ("EXISTS (SELECT * FROM raw.responses)", "it reads 'raw.responses', which is not a view of the warehouse"),
    ("EXISTS (SELECT * FROM duckdb_settings())", "table function duckdb_settings()"),
    ("true) UNION SELECT 'x', ('y'", "it changes the query around it"),
    ("true) ORDER BY (1", "it changes the query around it"),
    ("true) LIMIT (1", "it changes the query around it"),
    ("true) GROUP BY ALL HAVING (true", "it changes the query around it"),
    # a WITH's names count only where it is in scope: not in a sibling subquery, not in its own body
    ('EXISTS (WITH "/x/secret.csv" AS (SELECT 1) SELECT 1) OR EXISTS (SELECT * FROM "/x/secret.csv")',
     "it reads '/x/secret.csv', which is not a view of the warehouse"),
    ('EXISTS (WITH "/x/secret.csv" AS (SELECT * FROM "/x/secret.csv") SELECT * FROM "/x/secret.csv")',
     "it reads '/x/secret.csv', which is not a view of the warehouse"),
    ('EXISTS (WITH RECURSIVE "/x/secret.csv" AS (SELECT * FROM "/x/secret.csv") SELECT 1)',
     "it reads '/x/secret.csv', which is not a view of the warehouse"),
    ('EXISTS (WITH b AS (SELECT * FROM "/x/secret.csv"), "/x/secret.csv" AS (SELECT 1) SELECT * FROM b)',
     "it reads '/x/secret.csv', which is not a view of the warehouse"),
])
def test_a_where_may_read_only_the_warehouse_views(sw, tmp_path, predicate, says):
    with pytest.raises(QueryError) as e:
        export(sw, tmp_path / "o.jsonl", predicate)
    assert says in str(e.value)
    assert "columns of responses you can filter on:" in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_the_sandbox_holds_even_if_the_parse_let_something_through(sw, tmp_path, monkeypatch):
    """The connection itself can read only the warehouse's data files and write none."""
    monkeypatch.setattr(exports, "selection_sql", lambda con, where: where_mod.SELECTION.format(where=where))
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    with pytest.raises(QueryError, match="Permission Error"):
        export(sw, tmp_path / "o.jsonl", f"response_id IN (SELECT content FROM read_text('{secret}'))")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(QueryError, match="Permission Error"):
        export(sw, tmp_path / "o.jsonl", "1=1); COPY (SELECT 'pwned' AS x) TO 'pwn.csv'; SELECT (1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.txt"]


@pytest.mark.parametrize("predicate", [
    "prompt_set = 'general/baseline'",                                       # a path-derived field
    "experiment IS NOT NULL AND pipeline IN ('inference', 'steering')",      # an IN list
    "layers[1] = 10 OR list_contains(coefficients, 4.0)",                    # lists
    "extra->>'uid' IS NOT NULL OR response LIKE '%the%'",                    # JSON ->> and LIKE
    "response_id IN (SELECT response_id FROM evaluations WHERE criterion = 'overall_grade')",  # a subquery on a view
    "record_id IN (WITH g AS (SELECT record_id FROM turns WHERE role = 'user') SELECT record_id FROM g)",
    "record_id IN (WITH g AS (SELECT record_id FROM turns), h AS (SELECT * FROM G) SELECT record_id FROM h)",
    "record_index IN (WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 9) SELECT n FROM t)",
    "source_format = 'scale' -- a comment",
])
def test_ordinary_predicates_still_work(sw, tmp_path, predicate):
    s = export(sw, tmp_path / "o.jsonl", predicate)
    assert s.selected == count(sw, predicate.split(" --")[0]) > 0


# --- where the output goes ------------------------------------------------------------------------------


def test_a_planted_link_at_the_temporary_name_is_never_followed(sw, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out" / "o.jsonl"
    out.parent.mkdir()
    planted = out.parent / f".o.jsonl.tmp-{os.getpid()}"
    planted.symlink_to(victim)
    (out.parent / f".o.jsonl.export-{os.getpid()}-abcd").symlink_to(tmp_path)  # a link named like a workspace
    export(sw, out)
    assert victim.read_text() == "precious"
    assert out.is_file() and not out.is_symlink()
    assert planted.is_symlink() and (out.parent / f".o.jsonl.export-{os.getpid()}-abcd").is_symlink()  # not ours: untouched


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_link_at_out_is_replaced_not_followed(sw, tmp_path, fmt):
    victim = tmp_path / "victim"
    victim.mkdir() if fmt == "parquet" else victim.write_text("precious")
    out = tmp_path / "o"
    out.symlink_to(victim)
    export(sw, out, fmt=fmt, overwrite=True) if fmt == "parquet" else export(sw, out, fmt=fmt)
    assert not out.is_symlink()
    assert (victim.read_text() == "precious") if fmt == "jsonl" else (list(victim.iterdir()) == [])


def test_out_inside_the_warehouse_or_holding_it_is_refused(sw, tmp_path):
    before = sorted(str(p) for p in sw.root.rglob("*"))
    for out, fmt, says in [
        (sw.root / "x.jsonl", "jsonl", "is inside the warehouse root"),
        (sw.root / "data" / "responses", "parquet", "is inside the warehouse root"),
        (sw.root, "parquet", "is the warehouse root"),
        (sw.root.parent, "parquet", "holds the warehouse root"),
    ]:
        with pytest.raises(UsageError, match=says):
            export(sw, out, fmt=fmt, overwrite=True)
    link = tmp_path / "link"
    link.symlink_to(sw.root)
    with pytest.raises(UsageError, match="is inside the warehouse root"):
        export(sw, link / "x.jsonl")
    assert sorted(str(p) for p in sw.root.rglob("*")) == before


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "trait_interp"])
def test_a_quote_in_out_is_just_a_character(sw, tmp_path, fmt):
    out = tmp_path / "q'dir" / "it's out"
    s = export(sw, out, fmt=fmt)
    assert s.written > 0 and out.exists()
    assert sorted(p.name for p in out.parent.iterdir()) == ["it's out"]


def test_a_long_out_name_fits_its_workspace(sw, tmp_path):
    out = tmp_path / ("\U0001d4b3" * 62 + ".jsonl")  # 254 bytes: the workspace's name must not grow past 255
    assert export(sw, out, "source_format = 'scale'").written > 0
    assert [p.name for p in tmp_path.iterdir()] == [out.name]


# --- faults ---------------------------------------------------------------------------------------------


def test_a_full_disk_is_a_message_and_leaves_nothing(sw, tmp_path, monkeypatch):
    from warehouse.exports import generic

    def full(ctx):
        with open(ctx.out, "wb") as f:
            f.write(b"half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), ctx.out)

    monkeypatch.setattr(generic, "write_jsonl", full)
    fmt = exports.ExportFormat("jsonl", "x", False, full)
    out = tmp_path / "new" / "o.jsonl"
    with pytest.raises(ExportError) as e:
        exports.export(str(sw.root), None, "jsonl", str(out), extra_formats=[fmt], progress=False)
    assert str(e.value) == (f"export to {out}: could not write: No space left on device; free some space there, "
                            "or write --out to another device. Nothing was written.")
    assert list(tmp_path.iterdir()) == []  # not even the folder it made for --out


def test_a_full_disk_under_a_source_format_export_is_a_message(sw, tmp_path, monkeypatch, capsys):
    """trait-interp's exporter writes many files; the disk fills when one is closed (its last bytes flushed).
    Its writer then closed the file again, and the export ended in a ValueError traceback."""
    import io

    from warehouse import cli
    from warehouse.formats.trait_interp.export import jsonout

    class FullDisk(io.StringIO):
        def close(self):
            if not self.closed:
                super().close()
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(jsonout, "open", lambda *a, **k: FullDisk(), raising=False)
    out = tmp_path / "tree"
    code = cli.main(["export", "--root", str(sw.root), "--format", "trait_interp", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and err == (f"error: export to {out}: could not write: No space left on device; free some space "
                                 "there, or write --out to another device. Nothing was written.\n")
    assert list(tmp_path.iterdir()) == []


def test_an_out_folder_that_cannot_be_made_is_a_message(sw, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ExportError, match=r"could not write: Not a directory\. Nothing was written\.$"):
        export(sw, tmp_path / "file" / "sub" / "o.jsonl")
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


def _limited(max_bytes: int):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), like a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))
    return apply


@pytest.mark.parametrize("fmt, memory", [("jsonl", "1GB"), ("parquet", "1GB"), ("jsonl", "30MB")])
def test_a_device_that_fills_up_gives_a_message_not_a_traceback(sw, tmp_path, fmt, memory):
    """A real process whose files may not grow past 20 kB (300 kB when DuckDB must spill to disk)."""
    out = tmp_path / "out"
    cli = "import sys; from warehouse.cli import main; sys.exit(main(sys.argv[1:]))"
    p = subprocess.run(
        [sys.executable, "-c", cli, "export", "--root", str(sw.root), "--format", fmt, "--out", str(out),
         "--memory-limit", memory, "--quiet"],
        preexec_fn=_limited(20_000 if memory == "1GB" else 300_000), capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stderr
    assert p.stderr.startswith(f"error: export to {out}: ") and "Traceback" not in p.stderr
    assert "File too large" in p.stderr or "Out of Memory" in p.stderr
    assert list(tmp_path.iterdir()) == []


KILLED = textwrap.dedent("""
    import os, signal, sys
    from warehouse import exports
    from warehouse.exports.generic import write_jsonl

    def dies(ctx):
        write_jsonl(ctx)
        os.kill(os.getpid(), signal.SIGKILL)  # killed once its output and DuckDB's spill folder exist

    fmt = exports.ExportFormat("jsonl", "x", False, dies)
    exports.export(sys.argv[1], None, "jsonl", sys.argv[2], extra_formats=[fmt], progress=False)
""")


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_later_export_cleans_up_after_a_killed_one(sw, tmp_path):
    out = tmp_path / "o.jsonl"
    p = subprocess.run([sys.executable, "-c", KILLED, str(sw.root), str(out)], capture_output=True, timeout=300)
    assert p.returncode == -signal.SIGKILL
    left = [x.name for x in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".o.jsonl.export-") and (tmp_path / left[0] / "spill").is_dir()
    # leftovers of the exports before workspaces: a temporary and a spill folder of processes that are gone
    dead = _dead_pid()
    (tmp_path / f".o.jsonl.tmp-{dead}").write_text("half")
    (tmp_path / ".export-spill-abcd1234").mkdir()
    (tmp_path / ".export-spill-abcd1234" / f"duckdb_temp_{dead}_0_owner").write_text("")
    running = Workspace(str(tmp_path / "other.jsonl"), directory=False)  # a live export: its lock is held
    try:
        export(sw, out)
        assert sorted(x.name for x in tmp_path.iterdir()) == sorted(["o.jsonl", os.path.basename(running.path)])
    finally:
        running.discard()
    assert [x.name for x in tmp_path.iterdir()] == ["o.jsonl"]


# --- deterministic output ---------------------------------------------------------------------------------

FORMATS = ["parquet", "jsonl", "csv", "openai_chat", "trait_interp", "afterimage", "scale", "dataloop", "hf_chat"]


def _contents(out) -> dict[str, bytes]:
    if out.is_file():
        return {"": out.read_bytes()}
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def shuffled(sw, tmp_path_factory):
    """The samples warehouse with the rows of every Parquet file in another order (and small row
    groups): the same data, as another ingest (workers finishing in another order) may store it."""
    import random
    import shutil

    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("shuffled") / "wh"
    shutil.copytree(sw.root, root)
    rnd = random.Random(7)
    for f in sorted(root.rglob("*.parquet")):
        table = pq.read_table(f)
        order = list(range(table.num_rows))
        rnd.shuffle(order)
        pq.write_table(table.take(order), f, row_group_size=7)
    return root


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_same_export_gives_the_same_bytes(sw, shuffled, tmp_path, fmt):
    a, b = export_out(tmp_path / "a", fmt), export_out(tmp_path / "b", fmt)
    export(sw, a, fmt=fmt)
    warehouse.export(shuffled, None, fmt, b, progress=False)
    assert _contents(a) == _contents(b)


def test_the_order_keys_tell_every_row_apart(sw):
    """The premise of the total order: no two rows of a table share its declared order (``Table.order``),
    nor two rows of one response's list (``Parent.order``, after its link)."""
    from warehouse.exports import kit
    from warehouse.formatkit.declared import TABLES

    for table in ("responses", *kit.children(), "sources"):
        key = ", ".join(TABLES[table].order)
        assert sw.one(f"SELECT count(*) FROM (SELECT {key} FROM {table} GROUP BY ALL HAVING count(*) > 1)") == 0, table
    for table in kit.children():
        parent = TABLES[table].parent
        key = ", ".join((*parent.by, *parent.order))
        assert sw.one(f"SELECT count(*) FROM (SELECT {key} FROM {table} GROUP BY ALL HAVING count(*) > 1)") == 0, table


# --- deep values ------------------------------------------------------------------------------------------

DATALOOP = REPO / "tests" / "fixtures" / "dataloop" / "download" / "66f0a1b2c3d4e5f601234567" / "train"


def _deep(depth: int):
    value = "bottom"
    for i in range(depth):
        value = {"k": value} if i % 2 else [value]
    return value


def _write(path, value, lines=False):
    from warehouse.exports.jsontext import deep_recursion

    path.parent.mkdir(parents=True, exist_ok=True)
    with deep_recursion():
        path.write_text("\n".join(json.dumps(v) for v in value) + "\n" if lines else json.dumps(value))


def _deep_tree(root, fmt: str, depth: int):
    """One record of ``fmt`` holding a value nested ``depth`` deep where the mapping keeps it whole."""
    v = _deep(depth)
    if fmt == "trait_interp":
        _write(root / "experiments/e/inference/instruct/responses/general/x/1.json", {"prompt": "p", "response": "r", "deep": v})
    elif fmt == "afterimage":
        _write(root / "conversations.jsonl", [{"conversations": [{"role": "user", "content": "q"},
                                                                 {"role": "assistant", "content": "a"}],
                                               "metadata": {"deep": v}}], lines=True)
    elif fmt == "scale":
        _write(root / "turn.json", {"id": "t1", "messages": [
            {"role": "user", "content": {"text": "q"}, "annotations": []},
            {"role": "assistant", "content": {"text": "a"}, "source_id": "m",
             "annotations": [{"id": "an1", "key": "k", "type": "json", "value": v}]}]})
    else:
        item = json.loads((DATALOOP / "json" / "capitals.json").read_text())
        item["annotations"][0]["metadata"]["deep"] = v
        _write(root / "ds" / "json" / "capitals.json", item)
        _write(root / "ds" / "items" / "capitals.json", json.loads((DATALOOP / "items" / "capitals.json").read_text()))


def _deep_json(w) -> list:
    """Every JSON value the warehouse holds for the record, parsed (to compare before and after)."""
    from warehouse.exports.jsontext import loads

    texts = [r["v"] for r in w.rows(
        "SELECT CAST(extra AS VARCHAR) AS v FROM responses UNION ALL SELECT CAST(extra AS VARCHAR) FROM turns "
        "UNION ALL SELECT CAST(value AS VARCHAR) FROM annotations UNION ALL SELECT CAST(metadata AS VARCHAR) FROM annotations "
        "UNION ALL SELECT CAST(extra AS VARCHAR) FROM annotations") if r["v"] is not None]
    return sorted((loads(t) for t in texts), key=lambda x: len(repr(x)))


# orjson writes 254 levels; past about 330 (Python's recursion limit over the three frames a level of
# the trait-interp writer takes) recursive writers fail too. The ingest keeps values up to about 900
# levels deep (the Dataloop mapping gives up at about 500).
@pytest.mark.parametrize("fmt, depth", [("trait_interp", 300), ("trait_interp", 700), ("afterimage", 300),
                                        ("afterimage", 700), ("scale", 300), ("scale", 700), ("dataloop", 300)])
def test_every_exporter_writes_a_deep_value_and_it_comes_back(tmp_path, fmt, depth):
    from ..conftest import Warehouse

    _deep_tree(tmp_path / "src", fmt, depth)
    a = Warehouse(tmp_path / "a")
    a.ingest(tmp_path / "src")
    n = a.one("SELECT count(*) FROM responses")
    assert a.rows("SELECT error FROM quarantine") == [] and n >= 1
    names = {"afterimage": "out.jsonl", "scale": "out.json", "jsonl": "out.jsonl", "openai_chat": "chat.jsonl"}
    for out_fmt in FORMATS:
        s = warehouse.export(a.root, None, out_fmt, tmp_path / out_fmt / names.get(out_fmt, "out"), progress=False)
        assert s.written == n, out_fmt
    b = Warehouse(tmp_path / "b")
    b.ingest(tmp_path / fmt / names.get(fmt, "out"))
    assert b.rows("SELECT error FROM quarantine") == []
    assert _deep_json(b) == _deep_json(a)


# --- file names from data -----------------------------------------------------------------------------------

HOSTILE_FILENAMES = [
    "/plain/ok.json",
    "/.hidden.json",                       # a hidden file: the ingest skips it
    "/ok/..hidden/x.json",                 # a hidden folder
    "/nul\x00byte.json",                   # no file system takes a NUL
    "/" + "long" * 70 + ".json",           # a part over 255 bytes
    "/" + "d/" * 3000 + "deep.json",       # 3,000 folders: past PATH_MAX
]


def _dataloop_items(root, filenames):
    """One Dataloop item (the capitals prompt and its two answers) per filename, as a download."""
    item = json.loads((DATALOOP / "json" / "capitals.json").read_text())
    document = (DATALOOP / "items" / "capitals.json").read_text()
    for i, filename in enumerate(filenames):
        it = json.loads(json.dumps(item))
        it["id"] = f"66f0b0000000000000000{i:03d}"
        it["filename"], it["name"] = filename, filename.rsplit("/", 1)[-1]
        for a in it["annotations"]:
            a["itemId"] = it["id"]
            a["id"] = a["id"][:-3] + f"{i:03d}"
        _write(root / "json" / f"item{i}.json", it)
        _write(root / "items" / f"item{i}.json", json.loads(document))


def test_file_names_from_data_are_written_so_that_they_come_back(tmp_path):
    from ..conftest import Warehouse

    _dataloop_items(tmp_path / "src" / "ds", HOSTILE_FILENAMES)
    a = Warehouse(tmp_path / "a")
    a.ingest(tmp_path / "src")
    n = a.one("SELECT count(*) FROM responses")
    assert n == 2 * len(HOSTILE_FILENAMES) and a.rows("SELECT error FROM quarantine") == []
    for fmt in ("dataloop", "trait_interp"):
        s = warehouse.export(a.root, None, fmt, tmp_path / fmt, progress=False)
        assert s.written == n, fmt
        b = Warehouse(tmp_path / f"b-{fmt}")
        b.ingest(tmp_path / fmt)
        assert b.one("SELECT count(*) FROM responses") == n, fmt
        assert b.rows("SELECT error FROM quarantine") == [], fmt
        if fmt == "dataloop":  # the item keeps its own filename, whatever the file is called
            assert sorted(r["f"] for r in b.rows("SELECT DISTINCT item_filename AS f FROM responses")) == sorted(HOSTILE_FILENAMES)
    names = [p.relative_to(tmp_path / "dataloop" / "items") for p in (tmp_path / "dataloop" / "items").rglob("*.json")]
    assert all(not part.startswith(".") and len(part.encode()) <= 255 for p in names for part in p.parts)


def test_the_name_rule():
    from warehouse.exports.names import PART_MAX, safe_parts, safe_path

    assert safe_path("/a/./b/../.c/..d/e.json") == "a/b/_c/_.d/e.json"
    assert safe_path("x\x00y.json") == "x_y.json"
    long = safe_parts("é" * 300 + ".json")[0]
    assert len(long.encode()) <= PART_MAX and long.endswith(".json") and long.startswith("é" * 10)
    assert safe_parts("é" * 300 + ".json") != safe_parts("é" * 301 + ".json")  # long names stay apart
    deep = safe_parts("d/" * 3000 + "x.json")
    assert len(deep) <= 66 and deep[-1] == "x.json" and sum(len(p) + 1 for p in deep) <= 1024
    # siblings stay siblings
    assert safe_parts("d/" * 3000 + "x.json")[:-1] == safe_parts("d/" * 3000 + "x_annotations.json")[:-1]
    assert safe_parts("../../..") == []


def test_trait_interp_paths_are_written_so_that_they_come_back(tmp_path):
    """A response file in a hidden folder (ingested by naming it) and a file of another format whose
    name is long enough that the '.json' the export appends passes 255 bytes."""
    from ..conftest import Warehouse

    hidden = tmp_path / "src/experiments/e/inference/instruct/responses/.drafts/1.json"
    _write(hidden, {"prompt": "p", "response": "r"})
    long_name = tmp_path / "src" / ("c" * 248 + ".jsonl")
    _write(long_name, [{"conversations": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
                        "metadata": {}}], lines=True)
    a = Warehouse(tmp_path / "a")
    a.ingest(hidden, long_name)
    assert a.one("SELECT count(*) FROM responses") == 2
    s = warehouse.export(a.root, None, "trait_interp", tmp_path / "out", progress=False)
    assert s.written == 2
    b = Warehouse(tmp_path / "b")
    b.ingest(tmp_path / "out")
    assert b.rows("SELECT prompt_set, response FROM responses ORDER BY response") == [
        {"prompt_set": None, "response": "a"}, {"prompt_set": "_drafts", "response": "r"}]
