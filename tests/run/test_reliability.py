"""Nothing lost, nothing half-written: kills at random points, concurrent readers and writers."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

import warehouse
from warehouse.store.snapshots import RUN_ID
from warehouse.store.storage import Store

pytestmark = pytest.mark.slow

N_FILES = 150


def tree_file(root, i: int):
    d = root / f"experiments/x/steering/c/t{i % 5}/instruct/response__5/steering/responses/residual/probe"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"L{i}_c1.0_2026-01-01_00-00-00.json"


def write_file(path, version: str, i: int = 0):
    rows = [{"prompt": f"q{k}", "response": f"{version}:{i}:{k}" + " pad" * 40, "trait_score": float(k),
             "coherence_score": 50.0} for k in range(20)]
    path.write_text(json.dumps(rows))


def write_tree(root, version: str):
    """Steering arrays whose rows say which version of their file they come from."""
    for i in range(N_FILES):
        write_file(tree_file(root, i), version, i)


def state(root) -> dict[str, set[str]]:
    """Per source file, the versions its responses come from."""
    con = warehouse.connect(root)
    try:
        out: dict[str, set[str]] = {}
        for path, response in con.execute("SELECT source_path, response FROM responses").fetchall():
            out.setdefault(path, set()).add(response.split(":")[0])
        # the other tables agree with the responses (evaluations are written with them)
        n_resp = con.execute("SELECT count(*) FROM responses").fetchone()[0]
        n_eval = con.execute("SELECT count(*) FROM evaluations").fetchone()[0]
        n_src = con.execute("SELECT count(*) FROM sources").fetchone()[0]
        assert n_eval == 2 * n_resp and n_src == len(out)
        return out
    finally:
        con.close()


def ingest_cmd(src, root, *extra):
    return [sys.executable, "-m", "warehouse.cli", "ingest", str(src), "--root", str(root), "--quiet", *extra]


def test_killed_ingests_leave_old_or_new_state_never_a_mix(tmp_path):
    src, root = tmp_path / "src", tmp_path / "wh"
    write_tree(src, "v1")
    t0 = time.monotonic()
    subprocess.run(ingest_cmd(src, root, "--jobs", "1"), check=True)
    duration = time.monotonic() - t0
    paths = [tree_file(src, i) for i in range(N_FILES)]
    warehouse_has = {str(p): "v1" for p in paths}  # the last committed version of each file
    on_disk = dict(warehouse_has)
    rng = random.Random(1234)
    committed = 0
    for attempt in range(20):
        label = f"v{attempt + 2}"
        for i in rng.sample(range(N_FILES), N_FILES // 2):
            write_file(paths[i], label, i)
            on_disk[str(paths[i])] = label
        proc = subprocess.Popen(ingest_cmd(src, root, "--jobs", rng.choice(["1", "2"])))
        if attempt % 4 == 3:  # killed once its snapshot is written: a kill after the commit, however slow the machine
            before = len(Store(root).snapshots())
            while proc.poll() is None and len(Store(root).snapshots()) == before:
                time.sleep(0.01)
        else:
            time.sleep(rng.uniform(0.02, duration * 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        st = state(root)  # the warehouse opens and answers after every kill
        assert all(len(v) == 1 for v in st.values()), "a file's rows come from one version"
        got = {p: next(iter(v)) for p, v in st.items()}
        assert got in (warehouse_has, on_disk), "the warehouse holds the old run or the new one, never a mix"
        if got == on_disk and on_disk != warehouse_has:
            committed += 1
            warehouse_has = dict(on_disk)
    assert 0 < committed < 20, committed  # the kills landed both before and after commits
    subprocess.run(ingest_cmd(src, root), check=True)  # re-running completes the work
    assert {p: next(iter(v)) for p, v in state(root).items()} == on_disk
    known = {r.run_id for r in Store(root).snapshots()}
    dead = [p for p in root.rglob("*.parquet") if RUN_ID.match(p.name).group() not in known]
    assert dead == []  # dead runs' files were collected


def test_readers_during_an_ingest_see_one_consistent_state(tmp_path):
    src, root = tmp_path / "src", tmp_path / "wh"
    write_tree(src, "v1")
    subprocess.run(ingest_cmd(src, root, "--jobs", "1"), check=True)
    write_tree(src, "v2")
    proc = subprocess.Popen(ingest_cmd(src, root, "--jobs", "1"))
    seen = set()
    while proc.poll() is None:
        st = state(root)
        versions = set().union(*st.values())
        assert len(versions) == 1, versions  # the whole warehouse is one snapshot
        seen |= versions
    assert proc.returncode == 0
    seen |= set().union(*state(root).values())
    assert seen >= {"v2"}


def test_two_ingests_into_one_root_are_serialized(tmp_path):
    """Synchronised on the lock itself, not on time: the test holds it while two ingests start."""
    a, b, root = tmp_path / "a", tmp_path / "b", tmp_path / "wh"
    write_tree(a, "a")
    write_tree(b, "b")
    with Store(root).lock():  # this test is the writer now
        refused = subprocess.run(ingest_cmd(b, root, "--no-wait"), capture_output=True, text=True)
        assert refused.returncode == 4 and f"is being written by pid {os.getpid()}" in refused.stderr
        waiting = [subprocess.Popen(ingest_cmd(src, root, "--jobs", "1"), stderr=subprocess.PIPE, text=True)
                   for src in (a, b)]
        for proc in waiting:  # each says it waits: it found the lock taken (reading stderr blocks until it does)
            assert any("waiting for" in line for line in iter(proc.stderr.readline, "")), "it never waited"
    # released: one takes the lock, the other waits for it again, and neither loses the other's rows
    for proc in waiting:
        _, err = proc.communicate()
        assert proc.returncode == 0, err
    st = state(root)
    assert len(st) == 2 * N_FILES
    assert {next(iter(v)) for v in st.values()} == {"a", "b"}
    assert Store(root).snapshot_numbers() == [1, 2]  # two commits, one after the other


# --- the worker pool dies with the ingest; Ctrl-C stops at once and cleanly ----------------------


def _proc_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, start time) of every process, from /proc."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
            out[int(entry)] = (int(fields[1]), fields[0], fields[19])
    return out


def _descendants(pid: int) -> dict[int, str]:
    """Live descendants of ``pid``: pid -> start time (so a reused pid is not mistaken for one of them)."""
    table, found, todo = _proc_table(), {}, [pid]
    while todo:
        parent = todo.pop()
        for p, (ppid, state, start) in table.items():
            if ppid == parent and p not in found and state != "Z":
                found[p] = start
                todo.append(p)
    return found


def _alive(procs: dict[int, str]) -> dict[int, str]:
    table = _proc_table()
    return {p: s for p, s in procs.items() if p in table and table[p][2] == s and table[p][1] != "Z"}


def _big_tree(src, n=3000):
    pad = " pad" * 60
    for i in range(n):
        d = src / f"experiments/x/steering/c/t{i % 7}/instruct/response__5/steering/responses/residual/probe"
        d.mkdir(parents=True, exist_ok=True)
        rows = [{"prompt": f"q{k}", "response": f"{i}:{k}{pad}", "trait_score": 1.0, "coherence_score": 2.0} for k in range(20)]
        (d / f"L{i}_c1.0_2026-01-01_00-00-00.json").write_text(json.dumps(rows))


def _start_with_workers(cmd, deadline_s=120.0):
    """Start an ingest and return (process, its descendants) once its pool has a worker.

    One, not ``--jobs``: the ingest process maps the first batch itself, and the pool starts a
    second worker only when a batch comes while the first is busy; on a fast machine small
    batches can all go to one worker."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline and proc.poll() is None:
        procs = _descendants(proc.pid)
        # resource tracker + forkserver + a worker forked by the forkserver
        if len(procs) >= 3:
            return proc, procs
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    with proc.stderr:
        pytest.fail(f"the ingest ended (or never started a worker) before it could be stopped: {proc.stderr.read()}")


def _wait_gone(procs, deadline_s=30.0) -> dict[int, str]:
    deadline = time.monotonic() + deadline_s
    while (left := _alive(procs)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _kill_leftovers(procs):
    for p in _alive(procs):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_killed_ingest_takes_its_worker_pool_with_it(tmp_path):
    src, root = tmp_path / "src", tmp_path / "wh"
    _big_tree(src)
    proc, procs = _start_with_workers(ingest_cmd(src, root, "--jobs", "2"))
    try:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        left = _wait_gone(procs)
        assert not left, f"processes of the killed ingest still running: {left}"
    finally:
        _kill_leftovers(procs)
        proc.stderr.close()
    subprocess.run(ingest_cmd(src, root), check=True)  # the next run does the work and collects the dead one's files
    assert warehouse.connect(root).execute("SELECT count(*) FROM responses").fetchone()[0] == 3000 * 20


@pytest.mark.parametrize("root_state", ["existing warehouse", "new root"])
def test_ctrl_c_stops_the_ingest_and_its_workers_and_keeps_nothing_of_the_run(tmp_path, root_state):
    src, root = tmp_path / "src", tmp_path / "wh"
    _big_tree(src, 20)
    if root_state == "existing warehouse":
        subprocess.run(ingest_cmd(src, root), check=True)
        before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != "lock"}
    _big_tree(src)  # 2,980 more files
    proc, procs = _start_with_workers(ingest_cmd(src, root, "--jobs", "2"))
    try:
        proc.send_signal(signal.SIGINT)  # to the ingest alone: it must stop its workers itself
        _out, err = proc.communicate(timeout=20)
        assert proc.returncode == 130, err
        assert not _wait_gone(procs), "the workers outlived the interrupted ingest"
    finally:
        _kill_leftovers(procs)
    lines = err.splitlines()
    assert len(lines) == 1, err  # one line, no traceback
    if root_state == "existing warehouse":
        assert lines[0] == "interrupted: the warehouse is as it was before this run, nothing of the run was kept"
        after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != "lock"}
        assert after == before  # no part, rewrite or catalog of the run left, the manifest untouched
    else:
        assert lines[0] == f"interrupted: nothing was written, there is no warehouse at {root}"
        assert not root.exists()
