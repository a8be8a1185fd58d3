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

from ..conftest import REPO


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


# --- 1. compact deletes nothing outside the table folders -------------------------------------------------


def _old_files(folder) -> list:
    """Files a vacuum would take for its own: unreferenced, and far older than any retention."""
    (folder / "sub").mkdir(parents=True)
    files = [folder / "notes.txt", folder / "sub" / "deep.parquet", folder / "20200101T000000000Z-dead-b00001.parquet"]
    for f in files:
        f.write_text("precious")
        os.utime(f, (1_577_836_800, 1_577_836_800))  # 2020-01-01
    return files


def test_compact_follows_no_link_out_of_a_table_folder(tmp_path):
    wh = tmp_path / "wh"
    assert run("ingest", str(REPO / "samples"), "--root", str(wh), "--quiet").returncode == 0
    assert run("ingest", str(REPO / "samples" / "scale"), "--root", str(wh), "--quiet").returncode == 0
    data, elsewhere, alone = tmp_path / "data", tmp_path / "elsewhere", tmp_path / "alone.parquet"
    kept = _old_files(data)
    alone.write_text("precious")
    os.utime(alone, (1_577_836_800, 1_577_836_800))
    (wh / "responses" / "link").symlink_to(data)                         # ln -s ~/data ROOT/responses/link
    (wh / "turns" / "part-00002.parquet").symlink_to(alone)  # a link named like a data file
    (wh / "evaluations").rename(elsewhere)                               # a table folder that is itself a link
    (wh / "evaluations").symlink_to(elsewhere)
    kept += _old_files(elsewhere / "stray")
    stray = wh / "annotations" / "20200101T000000000Z-dead-b00003.parquet"  # a file of a dead run, inside: vacuumed
    stray.write_text("old")
    os.utime(stray, (1_577_836_800, 1_577_836_800))
    r = run("compact", "--root", str(wh), "--retention-hours", "0")
    assert r.returncode == 0, r.stderr
    assert all(f.read_text() == "precious" for f in kept) and alone.read_text() == "precious"
    assert (wh / "responses" / "link").is_symlink() and (wh / "turns" / "part-00002.parquet").is_symlink()
    assert not stray.exists()
    assert "3 symbolic links in table folders left alone" in r.stderr and "responses/link" in r.stderr, r.stderr
    # the warehouse reads as before
    assert warehouse.sql(str(wh), "SELECT count(*) FROM responses").fetchall()[0][0] > 0


@pytest.mark.parametrize("leading", ["../../outside.parquet", "..%2F..%2Foutside.parquet"])
def test_a_data_file_a_log_places_outside_its_table_is_never_read(tmp_path, leading):
    """A Delta log edited to list a data file out of its table's folder (here, a copy of the table's own file
    beside the root): readers say the table is damaged, naming the path, and read nothing of it, the other
    tables answer; the next ingest drops the entry unread and reads its sources again; the file is left alone."""
    import json

    src, wh, outside = tmp_path / "src", tmp_path / "wh", tmp_path / "outside.parquet"
    src.mkdir()
    sample = sorted((REPO / "samples" / "afterimage").glob("*.jsonl"))[0]
    (src / sample.name).write_bytes(sample.read_bytes())
    assert run("ingest", str(src), "--root", str(wh), "--quiet").returncode == 0
    want = warehouse.sql(str(wh), "SELECT count(*) FROM responses").fetchall()[0][0]
    (data,) = (wh / "responses").glob("*.parquet")
    kept = data.read_bytes()
    outside.write_bytes(kept)
    data.unlink()
    log = max((wh / "responses" / "_delta_log").glob("*.json"))
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            action["add"]["path"] = leading
    log.write_text("".join(json.dumps(a) + "\n" for a in actions))
    r = run("sql", "SELECT count(*) FROM responses", "--root", str(wh))
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "table responses is damaged" in r.stderr and "outside the table's folder" in r.stderr
    assert warehouse.sql(str(wh), "SELECT count(*) FROM turns").fetchall()[0][0] > 0
    r = run("ingest", str(src), "--root", str(wh))
    assert r.returncode == 0 and "outside the table's folder" in r.stderr, r.stderr
    assert outside.read_bytes() == kept
    if "%" in leading:  # deltalake cannot remove an entry whose path it encodes otherwise: refused still, never read
        assert "outside the table's folder" in run("sql", "SELECT count(*) FROM responses", "--root", str(wh)).stderr
        return
    assert warehouse.sql(str(wh), "SELECT count(*) FROM responses").fetchall()[0][0] == want


# --- 5. a link out of an input tree: its records are read, its bytes are never kept in quarantine -----------


def test_no_byte_of_a_file_outside_the_tree_lands_in_quarantine_but_linked_data_is_ingested(tmp_path):
    home, data, scratch = tmp_path / "home", tmp_path / "data", tmp_path / "scratch"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("[default]\naws_secret_access_key = SECRETSECRET\n")
    (home / "notes.json").write_text('not json SECRET2')
    (data / "items").mkdir(parents=True)
    (data / "items" / "config.json").symlink_to(home / ".aws" / "credentials")  # planted by someone with write access
    claimed = data / "experiments" / "x" / "inference" / "instruct" / "responses" / "p.json"  # a layout a format claims
    claimed.parent.mkdir(parents=True)
    claimed.symlink_to(home / "notes.json")
    # the user's own scratch storage, linked in: its records are the user's data
    responses = scratch / "extraction" / "chirp" / "refusal_v2" / "responses"
    responses.mkdir(parents=True)
    good = (REPO / "samples" / "experiments" / "demo" / "extraction" / "chirp" / "refusal_v2" / "responses" / "pos.json")
    (responses / "pos.json").write_text(good.read_text().rstrip()[:-1] + ', "a bad record"]')
    (data / "experiments" / "demo").symlink_to(scratch)
    # a link inside the tree is the tree's own: its bytes are kept as any file's
    (data / "mine").mkdir()
    (data / "mine" / "odd.json").write_text('{"inside": "kept"}')
    (data / "alias.json").symlink_to(data / "mine" / "odd.json")

    wh = tmp_path / "wh"
    r = run("ingest", str(data), "--root", str(wh))
    assert r.returncode == 0, r.stderr
    rows = warehouse.sql(str(wh), "SELECT source_path, stage, error, raw FROM quarantine ORDER BY 1").fetchall()
    everything = repr(warehouse.sql(str(wh), "SELECT * FROM quarantine").fetchall())
    assert "SECRET" not in everything
    outside = {p: (stage, error, raw) for p, stage, error, raw in rows if "/items/" in p or "/experiments/" in p}
    linked = data / "experiments" / "demo" / responses.relative_to(scratch) / "pos.json"
    assert set(outside) == {str(data / "items" / "config.json"), str(claimed), str(linked)}
    for stage, error, raw in outside.values():
        assert raw is None and f"not kept: the file lies outside {data}" in error, error
    assert outside[str(data / "items" / "config.json")][0] == "detect"
    # the scratch data is ingested under its linked path (never resolved), with its path-derived fields
    got = warehouse.sql(str(wh), "SELECT source_path, experiment, response FROM responses ORDER BY 1, 3").fetchall()
    assert [(e, t) for _, e, t in got] == [("demo", "I can't help with that."), ("demo", "I won't do that.")]
    assert all(p.startswith(str(data / "experiments" / "demo")) for p, _, _ in got)
    inside = [raw for p, _, _, raw in rows if p == str(data / "mine" / "odd.json") or p == str(data / "alias.json")]
    assert inside == ['{"inside": "kept"}']


# --- 3. the lock is never a link, nor anything but a regular file ------------------------------------------

SAMPLE = REPO / "samples" / "afterimage"


@pytest.fixture
def root(tmp_path):
    """A warehouse with one ingest in it."""
    r = run("ingest", str(SAMPLE), "--root", str(tmp_path / "wh"), "--quiet")
    assert r.returncode == 0, r.stderr
    return tmp_path / "wh"


@pytest.mark.parametrize("command", ["ingest", "compact"])
def test_a_link_planted_at_the_lock_is_never_followed(root, tmp_path, command):
    victim, nowhere = tmp_path / "victim.txt", tmp_path / "created-by-the-warehouse"
    victim.write_text("precious")
    lock = root / ".warehouse" / "lock"
    args = ["ingest", str(REPO / "samples" / "scale"), "--root", str(root)] if command == "ingest" else \
        ["compact", "--root", str(root)]
    for target in (victim, nowhere):  # a link to a file, and a dangling one
        lock.unlink()
        lock.symlink_to(target)
        r = run(*args)
        assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
        assert f"error: {lock}: is a symbolic link" in r.stderr and "remove it" in r.stderr
        assert victim.read_text() == "precious" and not nowhere.exists() and lock.is_symlink()
    lock.unlink()
    os.mkfifo(lock)
    r = run(*args)
    assert r.returncode == 1 and f"error: {lock}: is not a regular file" in r.stderr, r.stderr
    lock.unlink()
    assert run(*args).returncode == 0  # the lock removed, as the message says: the command runs


def test_a_link_planted_at_the_state_folder_or_a_snapshot_temporary_is_never_followed(root, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    state = root / ".warehouse"
    # the next snapshot's temporary name (this process's pid: the ingest below runs here)
    (state / "snapshots" / f".2.json.{os.getpid()}.tmp").symlink_to(victim)
    assert warehouse.ingest([str(REPO / "samples" / "scale")], str(root), progress=False).committed
    assert victim.read_text() == "precious" and (state / "snapshots" / "2.json").is_file()
    moved = tmp_path / "elsewhere"
    state.rename(moved)
    state.symlink_to(moved)
    r = run("ingest", str(REPO / "samples" / "dataloop"), "--root", str(root))
    assert r.returncode == 1 and f"error: {state}: is a symbolic link" in r.stderr and r.stderr.count("\n") == 1, r.stderr


# --- 16. a lock file deleted under a running writer --------------------------------------------------------


@pytest.mark.parametrize("when", ["before the commit", "before the snapshot"])
def test_a_lock_file_deleted_under_a_running_ingest_stops_it_before_it_commits(root, monkeypatch, when):
    """Someone deletes .warehouse/lock while an ingest runs, and a second ingest (which then finds no lock)
    commits. The first must not commit over it, nor repair it away, and must say so truly."""
    from warehouse.errors import LockedError
    from warehouse.run import commit

    first, second = REPO / "samples" / "scale", REPO / "samples" / "dataloop"
    before = warehouse.history(root)
    lock = root / ".warehouse" / "lock"

    def second_writer():
        lock.unlink()
        r = run("ingest", str(second), "--root", str(root), "--quiet")
        assert r.returncode == 0, r.stderr

    if when == "before the commit":
        original = commit.commit_plan

        def commit_plan(*args):
            second_writer()
            return original(*args)
        monkeypatch.setattr(commit, "commit_plan", commit_plan)
    else:  # the lock check of the last step passed just before the file went: the snapshot's create finds out
        from warehouse.store.storage import Store

        original = Store.write_snapshot

        def write_snapshot(self, record):
            second_writer()
            return original(self, record)
        monkeypatch.setattr(Store, "write_snapshot", write_snapshot)
    with pytest.raises(LockedError) as e:
        warehouse.ingest([str(first)], str(root), progress=False)
    message = str(e.value)
    assert "\n" not in message and ".tmp" not in message and "as it was before" not in message
    assert ("was deleted or replaced while this run held it" in message if when == "before the commit"
            else "snapshot 2 was committed by another writer" in message), message
    assert "nothing of it" in message and "run again" in message
    monkeypatch.undo()
    # the second writer's snapshot stands, readable, with its rows and none of the first's
    after = warehouse.history(root)
    assert len(after) == len(before) + 1
    formats = {r[0] for r in warehouse.sql(root, "SELECT DISTINCT source_format FROM responses").fetchall()}
    assert "dataloop" in formats and "scale" not in formats
    # and the first, run again, lands beside it
    r = run("ingest", str(first), "--root", str(root), "--quiet")
    assert r.returncode == 0, r.stderr
    formats = {r[0] for r in warehouse.sql(root, "SELECT DISTINCT source_format FROM responses").fetchall()}
    assert {"dataloop", "scale", "afterimage"} <= formats

