"""Faults during ingest come out as one-line messages, and leave nothing behind.

Tests run as root here, where file permissions are not enforced: a permission
error is simulated by patching the call that would fail, a root that cannot be
created by putting it under a regular file.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

import warehouse
from warehouse import cli
from warehouse.errors import StrictModeError
from warehouse.store.storage import Store

from ..conftest import write_json, write_text

STEERING = "experiments/x/steering/c/t/instruct/response__5/steering/responses/residual/probe"


def steering_file(root, name="L25_c-10.0_2026-01-23_05-39-08.json", n=3, tag="a"):
    rows = [{"prompt": f"q{i}", "response": f"{tag}{i}", "trait_score": float(i), "coherence_score": 50.0}
            for i in range(n)]
    return write_json(root / STEERING / name, rows)


def chat_line(i: int) -> str:
    return json.dumps({"conversations": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]}) + "\n"


def everything_under(path) -> list[str]:
    """Every file and folder under ``path`` (symlinks listed, not followed)."""
    out = []
    for d, dirs, files in os.walk(path):
        out += [os.path.relpath(os.path.join(d, n), path) for n in dirs + files]
    return sorted(out)


def run_cli(capsys, *argv) -> tuple[int, str]:
    code = cli.main(list(map(str, argv)))
    return code, capsys.readouterr().err


# --- file names that are not UTF-8 -----------------------------------------------------------


def test_a_file_name_that_is_not_utf8_is_quarantined_and_the_rest_ingested(wh, tmp_path):
    tree = tmp_path / "tree"
    write_text(tree / "good.jsonl", chat_line(1))
    bad_file = os.path.join(os.fsencode(tree), b"caf\xe9.jsonl")
    bad_dir = os.path.join(os.fsencode(tree), b"d\xe9j\xe0")
    os.mkdir(bad_dir)
    for f in (bad_file, os.path.join(bad_dir, b"inside.jsonl")):
        with open(f, "w") as out:
            out.write(chat_line(2))
    for _ in range(2):  # the same on every run: no duplicate rows
        s = wh.ingest(tree)
        assert s.files_ingested + s.files_unchanged == 1 and s.files_unreadable == 2
        assert wh.one("SELECT count(*) FROM responses") == 1
        q = wh.rows("SELECT source_path, stage, error FROM quarantine ORDER BY 1")
        assert [r["source_path"] for r in q] == [f"{tree}/caf\\xe9.jsonl", f"{tree}/d\\xe9j\\xe0"]
        assert all(r["stage"] == "read" and "name is not valid UTF-8" in r["error"] and "rename it" in r["error"] for r in q)
        assert "nothing under it was read" in q[1]["error"]
    assert wh.one("SELECT count(*) FROM sources") == 3


# --- roots that cannot be written --------------------------------------------------------------


def test_a_root_that_cannot_be_created_is_a_message(tmp_path, capsys):
    steering_file(tmp_path / "src")
    write_text(tmp_path / "file", "")
    code, err = run_cli(capsys, "ingest", tmp_path / "src", "--root", tmp_path / "file" / "wh", "--quiet")
    assert code == 1
    assert err == (f"error: cannot ingest into {tmp_path}/file/wh: Not a directory: {tmp_path}/file/wh; a part of that "
                   f"path is a file, not a directory: choose another --root (there is no warehouse at {tmp_path}/file/wh)\n")


def test_a_root_under_a_folder_nobody_may_write_is_a_message(tmp_path, capsys, monkeypatch):
    steering_file(tmp_path / "src")
    locked = tmp_path / "locked"
    locked.mkdir()
    real_mkdir = os.mkdir

    def mkdir(path, *a, **k):
        if os.fspath(path).startswith(str(locked)):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_mkdir(path, *a, **k)

    monkeypatch.setattr(os, "mkdir", mkdir)
    code, err = run_cli(capsys, "ingest", tmp_path / "src", "--root", locked / "a" / "wh", "--quiet")
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(f"error: cannot ingest into {locked}/a/wh: Permission denied: {locked}/a")
    assert "choose a --root you may write to, or fix its permissions" in err
    assert everything_under(locked) == []


@pytest.mark.parametrize("command", ["ingest into", "compact"])
def test_a_read_only_warehouse_is_a_message_and_stays_as_it_was(tmp_path, capsys, monkeypatch, command):
    src, root = tmp_path / "src", tmp_path / "wh"
    steering_file(src)
    warehouse.ingest([str(src)], str(root), progress=False)
    before = everything_under(root)
    steering_file(src, "L1_c1.0_2026-01-01_00-00-00.json")
    real_open = os.open

    def read_only(path, flags, *a, **k):
        if os.fspath(path).startswith(str(root)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system", os.fspath(path))
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(os, "open", read_only)
    code, err = run_cli(capsys, *(["ingest", src] if command == "ingest into" else ["compact"]), "--root", root,
                        "--quiet")
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(f"error: cannot {command} {root}: Read-only file system: ")
    assert "the file system is read-only" in err
    assert "(the warehouse is as it was before this run)" in err
    monkeypatch.undo()
    assert everything_under(root) == before


def test_compact_on_a_full_disk_is_a_message_and_the_warehouse_stays_readable(tmp_path, capsys, monkeypatch):
    from warehouse.store import storage
    src, root = tmp_path / "src", tmp_path / "wh"
    for i in range(3):
        steering_file(src / str(i))
        warehouse.ingest([str(src / str(i))], str(root), progress=False)
    rows = warehouse.connect(root).execute("SELECT count(*) FROM responses").fetchone()[0]

    def full(path, data):  # the merged files written, the disk full when the snapshot is
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(storage, "create_if_absent", full)
    code, err = run_cli(capsys, "compact", "--root", root, "--retention-hours", "0", "--quiet")
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(f"error: cannot compact {root}: No space left on device: {root}/.warehouse/snapshots/4.json")
    assert err.endswith("free some space and run again (the warehouse is as it was before this run)\n")
    monkeypatch.undo()
    assert warehouse.connect(root).execute("SELECT count(*) FROM responses").fetchone()[0] == rows
    assert Store(root).snapshot_numbers() == [1, 2, 3]


# --- a full disk -------------------------------------------------------------------------------


def _disk_full_after(monkeypatch, module, name, calls: int):
    """Let ``calls`` writes through, then fail the next ones as a full disk does (a partial file written)."""
    real = getattr(module, name)
    seen = [0]

    def write(*a, **k):
        seen[0] += 1
        if seen[0] <= calls:
            return real(*a, **k)
        where = a[1] if name == "write_table" else a[0].path
        with open(where, "wb") as f:
            f.write(b"PAR1 half a file")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(module, name, write)


@pytest.mark.parametrize("when", ["writing parts", "committing"])
def test_a_full_disk_is_a_message_and_leaves_no_file_of_the_run(tmp_path, capsys, monkeypatch, when):
    import warehouse.run.commit as commit
    from warehouse.store.writer import TableWriter

    src, root = tmp_path / "src", tmp_path / "wh"
    for i in range(3):
        steering_file(src, f"L{i}_c1.0_2026-01-01_00-00-00.json")
    warehouse.ingest([str(src)], str(root), progress=False)
    before = everything_under(root)
    snapshot = Store(root).read_snapshot()
    steering_file(src, "L1_c1.0_2026-01-01_00-00-00.json", tag="new")  # a rewrite, new parts, a new catalog
    if when == "writing parts":
        _disk_full_after(monkeypatch, TableWriter, "_write_row_group", 1)
    else:
        _disk_full_after(monkeypatch, commit.pq, "write_table", 0)
    code, err = run_cli(capsys, "ingest", src, "--root", root, "--quiet", "--jobs", "1")
    assert code == 1 and err.count("\n") == 1
    assert "No space left on device" in err and "free some space and run again" in err
    assert err.endswith("(the warehouse is as it was before this run)\n")
    assert everything_under(root) == before  # no part, rewrite or catalog of the run is left filling the disk
    assert Store(root).read_snapshot() == snapshot


def test_a_failing_worker_stops_the_others_and_their_parts_are_deleted_at_once(tmp_path):
    """In the process pool: one batch fails (its table folder cannot be made); the batches running beside
    it are stopped, and what they wrote is deleted before the run ends, not by the next run."""
    src, root = tmp_path / "src", tmp_path / "wh"
    pad = "x" * 10_000
    # first in path order, a batch of its own: 8 MB of responses, then one record to quarantine
    write_json(src / STEERING / "A0.json", [{"prompt": "q", "response": pad}] * 800 + [17])
    for i in range(16):  # other batches, running beside it
        write_json(src / STEERING / f"L{i}_c1.0_2026-01-01_00-00-00.json", [{"prompt": "q", "response": pad}] * 200)
    root.mkdir(parents=True)
    os.symlink("/sys", root / "quarantine")  # a table folder where no file can be created, even by root
    done = subprocess.run([sys.executable, "-m", "warehouse.cli", "ingest", str(src), "--root", str(root),
                           "--jobs", "2", "--quiet"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"error: cannot ingest into {root}: ") and done.stderr.count("\n") == 1
    assert "Permission denied" in done.stderr and "Traceback" not in done.stderr
    assert everything_under(root) == ["quarantine"]


# --- the root inside the input tree ---------------------------------------------------------------


def test_a_root_reached_through_a_symlink_into_the_input_tree_is_not_ingested(wh, tmp_path):
    tree = tmp_path / "tree"
    steering_file(tree)
    os.symlink(tree, tmp_path / "linkin")
    root = tmp_path / "linkin" / "wh"
    for _ in range(2):
        warehouse.ingest([str(tree)], str(root), progress=False)
    from ..conftest import Warehouse

    w = Warehouse(root)
    assert [r["source_path"] for r in w.rows("SELECT source_path FROM sources")] == [str(tree / STEERING / "L25_c-10.0_2026-01-23_05-39-08.json")]
    assert w.one("SELECT count(*) FROM quarantine") == 0


# --- runs that change nothing leave no trace ----------------------------------------------------


def test_strict_into_a_new_root_leaves_no_trace(tmp_path):
    src = tmp_path / "src"
    write_json(src / STEERING / "L1_c1.0_2026-01-01_00-00-00.json", [{"prompt": "q", "response": "a"}, 17])
    with pytest.raises(StrictModeError):
        warehouse.ingest([str(src)], str(tmp_path / "new" / "wh"), strict=True, progress=False)
    assert not (tmp_path / "new").exists()
    (tmp_path / "mine").mkdir()  # a folder the user made stays, empty as it was
    with pytest.raises(StrictModeError):
        warehouse.ingest([str(src)], str(tmp_path / "mine"), strict=True, progress=False)
    assert everything_under(tmp_path / "mine") == []


def test_a_failed_run_into_a_new_root_leaves_no_trace(tmp_path, monkeypatch):
    import warehouse.run.commit as commit

    steering_file(tmp_path / "src")

    def boom(*a, **k):
        raise RuntimeError("a bug at commit time")

    monkeypatch.setattr(commit, "_path_fields", boom)  # (path_fields may be evaluated ahead: written here)
    with pytest.raises(RuntimeError):
        warehouse.ingest([str(tmp_path / "src")], str(tmp_path / "wh"), progress=False)
    assert not (tmp_path / "wh").exists()


def test_a_run_waiting_for_a_new_root_that_the_first_run_removes_takes_a_fresh_lock(tmp_path, monkeypatch):
    """The first run into a new root fails and removes the root with its lock file while a second
    waits for that lock: the second takes the lock anew (not the removed file's) and ingests."""
    import threading

    import warehouse.run.runner as runner

    bad, good, root = tmp_path / "bad", tmp_path / "good", tmp_path / "wh"
    write_json(bad / STEERING / "L1_c1.0_2026-01-01_00-00-00.json", [17])
    steering_file(good)
    first_inside, second_waiting = threading.Event(), threading.Event()
    real_open, real_say = runner.open_for_writing, runner.say

    def opened(store, say):
        if not first_inside.is_set():
            first_inside.set()
            assert second_waiting.wait(60), "the second run never waited"
        return real_open(store, say)

    def say(msg):
        if msg.startswith("waiting for the ingest holding"):
            second_waiting.set()
        real_say(msg)

    monkeypatch.setattr(runner, "open_for_writing", opened)
    monkeypatch.setattr(runner, "say", say)
    outcome = {}

    def first():
        try:
            warehouse.ingest([str(bad)], str(root), strict=True, progress=False)
        except StrictModeError as e:
            outcome["first"] = e

    t = threading.Thread(target=first)
    t.start()
    assert first_inside.wait(60)
    summary = warehouse.ingest([str(good)], str(root), progress=False)
    t.join(60)
    assert isinstance(outcome.get("first"), StrictModeError)
    assert summary.committed and summary.records_ingested == 3
    assert warehouse.connect(root).execute("SELECT count(*) FROM responses").fetchone()[0] == 3
    assert everything_under(root)[:3] == [".warehouse", ".warehouse/lock", ".warehouse/snapshots"]
