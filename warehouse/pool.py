"""Running batches: the engine a run hands its batches to, and the two engines of one machine.

An engine runs ``BatchSpec``s (``worker.py``) and yields their ``BatchResult``s as they
finish, in any order. The caller stops it at once by closing the iterator it returned
(``contextlib.closing``; an exception in the caller, Ctrl-C included, must reach that
close too): batches still running are abandoned, and the files they wrote are left to
the caller, which deletes every file of the run (``Store.discard_run``). An engine
never commits: the runner does, once, from the results.

* ``Inline``: in this process, one batch after another (small runs, ``--jobs 1``).
* ``ProcessPool``: a pool of worker processes (forkserver), one per core. The forkserver
  imports the worker's modules and the run's formats once (``preload_modules``), and
  every worker is forked from it with them loaded: each worker importing pyarrow and the
  formats itself cost ~0.5 s of CPU per worker, per run.

Another engine (on a cluster) only has to meet the same contract: take the specs
(they pickle), run ``BatchIngest(spec, progress).run()`` wherever it likes, and give
back the results; the writers put each batch's files under the run's own names.
``warehouse.spark.engine.SparkEngine`` does so on Spark (``--engine spark``).
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Protocol

from .registry import Registry
from .worker import BatchIngest, BatchResult, BatchSpec, ProgressFn


class WorkerLost(Exception):
    """A worker died under a batch (killed from outside, or out of memory)."""


class Engine(Protocol):
    #: batches it runs at once: the runner plans about four batches per worker
    workers: int

    def run(self, specs: Iterable[BatchSpec], progress: ProgressFn) -> Iterator[BatchResult]:
        """Run ``specs`` (a lazy iterable: it may read files while it is drawn from) and yield each
        result as its batch finishes. ``progress(files, bytes)`` is called (from any thread) as
        work is done. Closing the iterator stops every batch still running at once."""
        ...


class Inline:
    """Batches run in this process, one after another."""

    workers = 1

    def run(self, specs: Iterable[BatchSpec], progress: ProgressFn) -> Iterator[BatchResult]:
        for spec in specs:
            yield BatchIngest(spec, progress).run()


class ProcessPool:
    """Batches run in ``workers`` processes (forkserver), a few queued per worker.

    Workers ignore SIGINT and hold the reading end of a *lifeline* pipe whose writing end
    only this process has: closing it (stop, Ctrl-C, an error) or dying (even by SIGKILL,
    the kernel closes it) makes every worker exit at once.
    """

    def __init__(self, workers: int):
        self.workers = workers

    def run(self, specs: Iterable[BatchSpec], progress: ProgressFn) -> Iterator[BatchResult]:
        specs = iter(specs)
        first = next(specs, None)
        if first is None:
            return
        specs = itertools.chain([first], specs)
        ctx = multiprocessing.get_context("forkserver")
        # Takes effect when the forkserver starts (once per process; later runs reuse it).
        ctx.set_forkserver_preload(preload_modules(first.registry))
        queue = ctx.Queue()
        stop = threading.Event()

        def drain():
            while not stop.is_set() or not queue.empty():
                try:
                    files, nbytes = queue.get(timeout=0.1)
                except Exception:
                    continue
                progress(files, nbytes)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        # The lifeline: workers hold its reading end, only this process its writing end.
        lifeline, keep_alive = ctx.Pipe(duplex=False)
        pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_init_worker,
                                   initargs=(queue, lifeline))
        finished = False
        try:
            pending: set = set()
            # Keep a few batches queued per worker: enough to stay busy, few enough that
            # scanning a large file runs alongside the work on its first pieces.
            for spec in specs:
                pending.add(pool.submit(run_batch_in_worker, spec))
                while len(pending) >= self.workers * 2:
                    yield from _finished(pending)
            while pending:
                yield from _finished(pending)
            finished = True
        except BrokenProcessPool:
            raise WorkerLost() from None
        finally:
            if not finished:
                # Stopped (--strict met a bad record), Ctrl-C or an error: stop the workers now
                # rather than wait for their batches; the caller deletes what they wrote.
                keep_alive.close()
            pool.shutdown(wait=True, cancel_futures=True)
            keep_alive.close()
            lifeline.close()
            stop.set()
            reader.join()
            queue.close()


def preload_modules(registry: Registry) -> list[str]:
    """What the forkserver imports before it forks any worker: the worker, the run's formats and the
    modules their fast paths use (``Ingestor.worker_modules``). The formats were loaded in this
    process already (detection needs them all), so importing them again cannot fail where this
    process did not; ``__main__`` is multiprocessing's default. pandas: pyarrow imports it (when
    installed) on a process's first ``pa.array``, which every worker makes: imported once here, not
    in each worker (where it is not installed, the forkserver passes over the ImportError)."""
    formats = sorted({ref.partition(":")[0] for _name, ref in registry.refs})
    fast = sorted({m for ingestor in registry.ingestors() for m in ingestor.worker_modules})
    return ["__main__", "warehouse.worker", *formats, *fast, "pandas"]


def start_forkserver(registry: Registry) -> None:
    """Start the forkserver now: it imports what workers need (``preload_modules``) in a process
    of its own while the run goes on walking and planning, instead of after. Call it once the
    run is known to need a ``ProcessPool``; later pools of this process reuse it."""
    from multiprocessing import forkserver

    multiprocessing.get_context("forkserver").set_forkserver_preload(preload_modules(registry))
    forkserver.ensure_running()


def _finished(pending: set) -> list[BatchResult]:
    """Wait for at least one batch; the results of all that are done, in batch order."""
    done, _ = wait(pending, return_when=FIRST_COMPLETED)
    results = []
    for fut in done:
        pending.discard(fut)
        results.append(fut.result())
    return sorted(results, key=lambda r: r.batch_no)


# --- in a worker process ---------------------------------------------------------

_progress_queue = None


def _init_worker(queue, lifeline=None) -> None:
    global _progress_queue
    _progress_queue = queue
    # The ingest process decides when to stop: Ctrl-C at a terminal reaches every process
    # of the group, and a worker must not half-finish a batch on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if lifeline is not None:
        threading.Thread(target=_exit_with_parent, args=(lifeline,), daemon=True, name="lifeline").start()
    # A worker allocates millions of short-lived dicts and lists that hold no cycles;
    # at the default threshold (700) the cyclic collector runs every few records:
    # ~7% of the time of ingesting 10k inference files.
    gc.set_threshold(50_000, 20, 100)


def _exit_with_parent(lifeline) -> None:
    """Die the moment the ingest process closes the lifeline: on purpose (Ctrl-C, an error
    elsewhere) or by dying, even by SIGKILL, when the kernel closes it. The parts this
    worker was writing are deleted by the ingest process, or by the next run."""
    from multiprocessing.connection import wait as wait_for

    wait_for([lifeline])  # the only other end is the ingest process's: readable means closed
    os._exit(1)


def run_batch_in_worker(spec: BatchSpec) -> BatchResult:
    """Entry point in a pool process: progress goes back through the queue, throttled."""
    pending = [0, 0, time.monotonic()]

    def progress(files: int, nbytes: int) -> None:
        pending[0] += files
        pending[1] += nbytes
        now = time.monotonic()
        if now - pending[2] > 0.2 and _progress_queue is not None:
            _progress_queue.put((pending[0], pending[1]))
            pending[0] = pending[1] = 0
            pending[2] = now

    result = BatchIngest(spec, progress).run()
    if _progress_queue is not None and (pending[0] or pending[1]):
        _progress_queue.put((pending[0], pending[1]))
    return result
