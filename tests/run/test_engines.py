"""Engines run batches (``warehouse/run/pool.py``): the same specs give the same results on every engine,
results come back as batches finish, and closing the engine stops it at once.

A toy format makes the workers' behaviour controllable: a ``*.hang.json`` file blocks its
worker until the worker is stopped, a ``*.die.json`` file kills its worker process.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import Future
from contextlib import closing

import pyarrow.parquet as pq
import pytest

import warehouse
from warehouse.errors import WarehouseError, WorkerLost
from warehouse.formatkit.ingestor import Ingestor
from warehouse.formatkit.readers import json_document_records
from warehouse.formatkit.registry import Registry
from warehouse.run.pool import Inline, ProcessPool, _Feeder
from warehouse.run.worker import BatchSpec, WorkItem

from ..conftest import FIXTURES, write_json


class Toy(Ingestor):
    name = "toy"
    description = "test format: one response per file; .hang.json blocks, .die.json kills its process"
    suffixes = (".json",)

    def sniff(self, path, head):
        return True

    def records(self, src):
        if src.path.endswith(".hang.json"):
            # Until the process is stopped. In short waits: a signal sent to the process may land on any
            # of its threads, and Python runs the handler only when the main thread next looks, which a
            # wait without end never does (a real batch is Python code and C calls of a moment: it looks).
            # Bounded, so a stop that never comes fails the test instead of hanging the suite.
            for _ in range(6000):  # 5 minutes
                time.sleep(0.05)
            raise RuntimeError("a .hang.json batch was never stopped")
        if src.path.endswith(".die.json"):
            os.kill(os.getpid(), signal.SIGKILL)
        return json_document_records(src)

    def map(self, record, ctx):
        return {"responses": [{"prompt": record.value["prompt"], "response": "r"}]}


TOY = Registry.of({"toy": "tests.run.test_engines:Toy"})

#: set by a ``.hang.json`` file read in the ingest process itself (a worker's copy is its own)
HANGING_HERE = threading.Event()


class Here(Toy):
    name = "here"
    description = "test format: the response is the id of the process that mapped the record"

    def records(self, src):
        if src.path.endswith(".hang.json"):
            HANGING_HERE.set()
        return super().records(src)

    def map(self, record, ctx):
        return {"responses": [{"prompt": record.value["prompt"], "response": str(os.getpid())}]}


HERE = Registry.of({"here": "tests.run.test_engines:Here"})


def _specs(root, batches, registry=None, run_id="20260101T000000000Z-0000"):
    return [
        BatchSpec(run_id=run_id, batch_no=n, root=str(root), items=[WorkItem(str(p)) for p in paths],
                  registry=registry or Registry.installed())
        for n, paths in enumerate(batches, start=1)
    ]


def _nan_is_nan(v):
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, dict):
        return {k: _nan_is_nan(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_nan_is_nan(x) for x in v]
    return v


def _outcome(result, root):
    """A batch's result without what differs between roots: its files' rows instead of their paths."""
    rows = {t: _nan_is_nan(pq.read_table(os.path.join(root, part.path)).to_pylist()) for t, part in result.parts.items()}
    sources = [{k: v for k, v in s.items() if k != "ingested_at"} for s in result.sources]
    return (result.batch_no, rows, sources, result.records_ingested, result.records_quarantined,
            result.bytes_read, result.ignored)


def test_every_engine_gives_the_same_results_for_the_same_batches(tmp_path):
    files = sorted(p for p in (FIXTURES / "trait_interp").rglob("*.json"))
    assert len(files) >= 6
    batches = [files[i::3] for i in range(3)]
    outcomes = []
    for engine in (Inline(), ProcessPool(2)):
        root = tmp_path / type(engine).__name__
        with closing(engine.run(_specs(root, batches), lambda files, nbytes: None)) as running:
            results = list(running)
        assert sorted(r.batch_no for r in results) == [1, 2, 3]  # in any order: as they finish
        outcomes.append(sorted((_outcome(r, root) for r in results), key=lambda o: o[0]))
    assert outcomes[0] == outcomes[1]
    assert sum(o[3] for o in outcomes[0]) > 0


def _noting(specs, drawn: list[int]):
    """``specs``, each batch's number noted in ``drawn`` as it is drawn."""
    for spec in specs:
        drawn.append(spec.batch_no)
        yield spec


def test_closing_the_process_pool_stops_a_batch_still_running(tmp_path):
    """One batch finishes, the others never would: closing the engine returns, its workers are gone."""
    ok = write_json(tmp_path / "src" / "a.json", {"prompt": "p"})
    hang = write_json(tmp_path / "src" / "b.hang.json", {"prompt": "p"})
    drawn = []
    # the first batch (mapped by this process) ends, every other hangs: no slot of the pool ever frees
    specs = _noting(_specs(tmp_path / "wh", [[ok]] + [[hang]] * 9, TOY), drawn)
    outcome = {}

    def run():
        running = ProcessPool(2).run(specs, lambda files, nbytes: None)
        outcome["first"] = next(running)
        running.close()  # stop: the hanging batch is abandoned
        outcome["children"] = multiprocessing.active_children()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(240)  # a guard against a hang, not a measure: stopping takes well under a second
    assert not t.is_alive(), "closing the engine did not stop the batch still running"
    assert outcome["first"].batch_no == 1 and outcome["first"].records_ingested == 1
    assert outcome["children"] == []
    # batches are drawn as workers can take them, not all up front: the first, two queued or running
    # per worker (``widen``) and the one drawn ahead, however fast the machine
    assert len(drawn) <= 1 + 2 * 2 + 1 < 10


def test_inline_draws_the_next_batch_only_when_asked(tmp_path):
    ok = write_json(tmp_path / "src" / "a.json", {"prompt": "p"})
    drawn = []
    specs = _noting(_specs(tmp_path / "wh", [[ok]] * 3, TOY), drawn)
    with closing(Inline().run(specs, lambda files, nbytes: None)) as running:
        first = next(running)
    assert first.batch_no == 1 and drawn == [1]


def test_a_worker_that_dies_is_one_message_and_the_run_leaves_nothing(tmp_path, monkeypatch):
    from warehouse.run import batches
    monkeypatch.setattr(batches, "INLINE_MAX_FILES", 0)  # the process pool, even for three files
    monkeypatch.setattr(batches, "INLINE_MAX_BYTES", 0)
    monkeypatch.setattr(batches, "MIN_BATCH_FILES", 1)  # a batch each: the ingest process maps the first (a.json)
    monkeypatch.setattr(batches, "MIN_BATCH_BYTES", 1)
    src = tmp_path / "src"
    for name in ("a.json", "b.die.json", "c.json"):
        write_json(src / name, {"prompt": "p"})
    with pytest.raises(WarehouseError, match="an ingest worker process died") as e:
        warehouse.ingest([str(src)], str(tmp_path / "wh"), registry=TOY, jobs=2, progress=False)
    assert "there is no warehouse at" in str(e.value)
    assert not (tmp_path / "wh").exists()


def test_a_stop_ends_even_when_a_worker_died_half_way_through_sending_its_result():
    """The lifeline stops the workers at once, maybe half-way through sending a result: the pool's own
    thread then waited for the rest of that message for ever, and the stop with it (a Ctrl-C that never
    returned, 2 times in 18 on 100,000 files). ``_no_result_half_sent`` ends that wait."""
    import struct
    from concurrent.futures import ProcessPoolExecutor

    from warehouse.run.pool import _no_result_half_sent

    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver"))
    assert pool.submit(int, "1").result(timeout=120) == 1  # a worker up, and the pool's thread reading results
    # what a worker that died while sending leaves in the pipe: a message's length, and a part of it
    pool._result_queue._writer._send(struct.pack("!i", 1 << 20) + b"x" * 100)
    for process in list(pool._processes.values()):
        process.kill()  # as the lifeline's os._exit
    _no_result_half_sent(pool)
    stopping = threading.Thread(target=pool.shutdown, kwargs={"wait": True, "cancel_futures": True}, daemon=True)
    stopping.start()
    stopping.join(120)  # a guard against a hang, not a measure
    hung = stopping.is_alive()
    if hung:  # the rest of the message, so that the pool's thread ends and this process can exit
        pool._result_queue._writer._send(b"x" * ((1 << 20) - 100))
    assert not hung, "the stop waits for the rest of a result nobody will send"


def test_the_process_pool_says_a_worker_died_as_worker_lost(tmp_path):
    ok = write_json(tmp_path / "src" / "a.json", {"prompt": "p"})
    die = write_json(tmp_path / "src" / "x.die.json", {"prompt": "p"})
    with pytest.raises(WorkerLost):  # (the first batch is the ingest process's own: the second, a worker's)
        with closing(ProcessPool(2).run(_specs(tmp_path / "wh", [[ok], [die]], TOY), lambda f, b: None)) as running:
            list(running)


def test_the_forkserver_imports_the_worker_and_the_runs_formats_once_for_every_worker():
    """Workers are forked with these loaded, instead of each importing pyarrow and the formats."""
    from warehouse.run.pool import preload_modules

    assert preload_modules(TOY) == ["warehouse.run.forkserver_start", "__main__", "warehouse.run.worker", "tests.run.test_engines"]
    installed = preload_modules(Registry.installed())
    assert "warehouse.run.worker" in installed and all(m in installed for m in ("warehouse.formats.afterimage",
                                                                              "warehouse.formats.trait_interp"))
    # the fast paths, which loading a format no longer imports (the run's process does not need them)
    assert {"warehouse.formats.afterimage.fast", "warehouse.formats.trait_interp.fast"} <= set(installed)


def test_the_forkserver_starts_during_the_walk_only_when_the_run_will_use_a_pool(tmp_path, monkeypatch):
    """It starts once the walk has found more than a small run's files, so its imports overlap the
    rest of the walk; a small run, an unchanged one or --jobs 1 never starts it."""
    import warehouse.run.batches as batches
    import warehouse.run.runner as runner

    monkeypatch.setattr(batches, "INLINE_MAX_FILES", 3)
    started, engines = [], []
    monkeypatch.setattr(runner, "start_forkserver", lambda registry: started.append(registry))
    real_inline, real_pool = batches.Inline, batches.ProcessPool
    monkeypatch.setattr(batches, "Inline", lambda filesystems: engines.append("inline") or real_inline(filesystems))
    monkeypatch.setattr(batches, "ProcessPool",
                        lambda jobs, filesystems: engines.append("pool") or real_pool(jobs, filesystems))
    src = tmp_path / "src"
    for i in range(3):
        write_json(src / f"small/{i}.json", {"prompt": f"p{i}", "response": "r"})
    warehouse.ingest(src / "small", root=tmp_path / "wh1", jobs=2, progress=False)
    assert (started, engines) == ([], ["inline"])
    for i in range(6):
        write_json(src / f"big/{i}.json", {"prompt": f"p{i}", "response": "r"})
    warehouse.ingest(src / "big", root=tmp_path / "wh2", jobs=1, progress=False)
    assert (started, engines) == ([], ["inline", "inline"])
    summary = warehouse.ingest(src / "big", root=tmp_path / "wh3", jobs=2, progress=False)
    assert (len(started), engines) == (1, ["inline", "inline", "pool"]) and summary.records_ingested == 6
    warehouse.ingest(src / "big", root=tmp_path / "wh3", jobs=2, progress=False)  # unchanged: nothing to read
    assert (len(started), engines) == (1, ["inline", "inline", "pool"])


class _HandedOut:
    """Stands in for the ProcessPoolExecutor a ``_Feeder`` hands batches to: records what it is given;
    a batch ends when the test says."""

    def __init__(self):
        self.given: list = []
        self.futures: list[Future] = []

    def submit(self, fn, *args):
        self.given.append((fn.__name__, *(a.batch_no for a in args)))
        self.futures.append(Future())
        return self.futures[-1]


def test_the_feeder_draws_its_next_batch_and_starts_the_spare_workers_before_a_slot_frees(tmp_path):
    """Between one batch's end and the next one's start nothing should be left to do: the next batch
    is drawn (for a large file, the pass finds its piece) while the slots are full, and the pool's
    other workers are started with the first batch, not when the ingest process's batch ends."""
    ok = write_json(tmp_path / "src" / "a.json", {"prompt": "p"})
    drawn = []
    pool = _HandedOut()
    feeder = _Feeder(pool, _noting(_specs(tmp_path / "wh", [[ok]] * 3, TOY), drawn), 1, spare=1)
    feeder.start()
    try:
        guard = time.monotonic() + 60  # a guard against a hang, not a measure
        while len(drawn) < 2 and time.monotonic() < guard:
            time.sleep(0.01)
        time.sleep(0.05)  # (had the feeder drawn more, it would have by now)
        assert drawn == [1, 2], "the next batch is drawn while the one slot is taken"
        assert pool.given == [("run_batch_in_worker", 1), ("_started",)]
        pool.futures[0].set_result(None)  # batch 1 ends: its slot goes to batch 2
        while len(drawn) < 3 and time.monotonic() < guard:
            time.sleep(0.01)
        assert pool.given[2:] == [("run_batch_in_worker", 2)] and drawn == [1, 2, 3]
    finally:
        feeder.stop()
    assert pool.given[3:] == []  # stopped: batch 3, drawn, is not handed out


def test_the_ingest_process_maps_the_first_batch_itself_while_the_pool_starts(tmp_path):
    """The pool's workers come up only once the forkserver has imported pyarrow and the formats: the
    ingest process, which has them loaded, maps the first batch meanwhile; the workers the others."""
    files = [write_json(tmp_path / "src" / f"{i}.json", {"prompt": f"p{i}"}) for i in range(4)]
    root = tmp_path / "wh"
    with closing(ProcessPool(2).run(_specs(root, [[f] for f in files], HERE), lambda f, b: None)) as running:
        results = sorted(running, key=lambda r: r.batch_no)
    mapped_by = [pq.read_table(root / r.parts["responses"].path)["response"].to_pylist() for r in results]
    assert mapped_by[0] == [str(os.getpid())]
    assert all(m != [str(os.getpid())] for m in mapped_by[1:]), mapped_by  # the workers', not this process's
    assert [r.records_ingested for r in results] == [1, 1, 1, 1]


def test_ctrl_c_while_the_ingest_process_maps_its_own_batch_stops_the_run_and_leaves_nothing(tmp_path, monkeypatch):
    from warehouse.errors import Interrupted
    from warehouse.run import batches

    monkeypatch.setattr(batches, "INLINE_MAX_FILES", 0)  # the process pool, a batch per file
    monkeypatch.setattr(batches, "INLINE_MAX_BYTES", 0)
    monkeypatch.setattr(batches, "MIN_BATCH_FILES", 1)
    monkeypatch.setattr(batches, "MIN_BATCH_BYTES", 1)
    src, root = tmp_path / "src", tmp_path / "wh"
    for name in ("a.hang.json", "b.json", "c.json", "d.json"):  # a.hang.json: the first batch, never ends
        write_json(src / name, {"prompt": "p"})
    HANGING_HERE.clear()
    seen = []

    def ctrl_c():
        seen.append(HANGING_HERE.wait(120))  # a guard against a hang, not a measure
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c, daemon=True).start()
    with pytest.raises(Interrupted) as e:
        warehouse.ingest([str(src)], str(root), registry=HERE, jobs=2, progress=False)
    assert seen == [True]  # the batch that hung was this process's own
    assert str(e.value) == f"interrupted: nothing was written, there is no warehouse at {root}"
    assert not root.exists()
    assert multiprocessing.active_children() == []  # the pool's workers are gone


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_batches_this_process_maps_reach_storage_as_the_run_does(tmp_path, monkeypatch, jobs):
    """Inline's batches, and the one a pool's process maps itself, take the run's FileSystems (its clients,
    what its walk listed), not one of their own per batch."""
    import warehouse.run.pool as pool
    import warehouse.run.runner as runner

    made, given = [], []
    real_fs, real_init = runner.FileSystems, pool.BatchIngest.__init__
    monkeypatch.setattr(runner, "FileSystems", lambda *a, **k: made.append(real_fs(*a, **k)) or made[-1])

    def init(self, spec, progress=None, filesystems=None):
        given.append(filesystems)
        real_init(self, spec, progress, filesystems)

    monkeypatch.setattr(pool.BatchIngest, "__init__", init)
    monkeypatch.setattr("warehouse.run.batches.INLINE_MAX_FILES", 0)  # a pool even for a few files
    for i in range(6):
        write_json(tmp_path / "src" / f"{i}.json", [{"prompt": f"p{i}", "response": "r"}])
    summary = warehouse.ingest(tmp_path / "src", tmp_path / "wh", jobs=jobs, progress=False)
    assert summary.records_ingested == 6
    assert len(made) == 1 and given and all(f is made[0] for f in given)
