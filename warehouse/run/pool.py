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
  formats itself cost ~0.5 s of CPU per worker, per run. Until the first worker is up,
  the ingest process maps the first batch itself: it has all of that loaded already.

Another engine (on a cluster) only has to meet the same contract: take the specs
(they pickle), run ``BatchIngest(spec, progress).run()`` wherever it likes, and give
back the results; the writers put each batch's files under the run's own names.
``warehouse.spark.engine.SparkEngine`` does so on Spark (``--engine spark``).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import queue as queue_mod
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Protocol

from warehouse.errors import WorkerLost
from warehouse.filesystems import FileSystems
from warehouse.formatkit.registry import Registry
from warehouse.run import process_settings
from warehouse.run.worker import BatchIngest, BatchResult, BatchSpec, ProgressFn


class Engine(Protocol):
    #: batches it runs at once: the runner plans about four batches per worker
    workers: int

    def run(self, specs: Iterable[BatchSpec], progress: ProgressFn) -> Iterator[BatchResult]:
        """Run ``specs`` (a lazy iterable: it may read files while it is drawn from) and yield each
        result as its batch finishes. ``progress(files, bytes)`` is called (from any thread) as
        work is done. Closing the iterator stops every batch still running at once."""
        ...


class Inline:
    """Batches run in this process, one after another (with the run's ``filesystems``, when given: its
    clients and what its walk listed)."""

    workers = 1

    def __init__(self, filesystems: FileSystems | None = None):
        self.filesystems = filesystems

    def run(self, specs: Iterable[BatchSpec], progress: ProgressFn) -> Iterator[BatchResult]:
        for spec in specs:
            yield BatchIngest(spec, progress, self.filesystems).run()


class ProcessPool:
    """Batches run in ``workers`` processes (forkserver), a few queued per worker.

    Workers ignore SIGINT and hold the reading end of a *lifeline* pipe whose writing end
    only this process has: closing it (stop, Ctrl-C, an error) or dying (even by SIGKILL,
    the kernel closes it) makes every worker exit at once.
    """

    def __init__(self, workers: int, filesystems: FileSystems | None = None):
        self.workers = workers
        self.filesystems = filesystems  # the run's: for the batch this process maps itself (``_here``)

    def run(self, specs: Iterable[BatchSpec], progress: ProgressFn) -> Iterator[BatchResult]:
        specs = iter(specs)
        first = next(specs, None)
        if first is None:
            return
        ctx = multiprocessing.get_context("forkserver")
        start_forkserver(first.registry)  # (running already when the runner warmed it up: then nothing)
        queue = ctx.Queue()
        stop = threading.Event()

        def drain():
            while True:
                try:
                    item = queue.get(timeout=0.1)
                except Exception:  # nothing came (or a worker stopped half-way wrote half a message)
                    if stop.is_set():
                        return
                    continue
                if item is None:  # put once the workers ended their batches: all their progress came before
                    return
                progress(*item)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        # The lifeline: workers hold its reading end, only this process its writing end.
        lifeline, keep_alive = ctx.Pipe(duplex=False)
        pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_init_worker,
                                   initargs=(queue, lifeline))
        # The pool's first worker comes up only once the forkserver has imported what workers need
        # (~0.35 s of one core, more on a busy machine): this process has all of that loaded, so it
        # maps the first batch itself meanwhile instead of waiting with a core idle, as one of the
        # run's ``workers``: the feeder hands the pool one batch fewer than it has workers meanwhile
        # (no more processes mapping at once than there are workers, nor their memory), then the rest.
        feeder = _Feeder(pool, specs, self.workers - 1, spare=self.workers - 1)
        finished = False
        try:
            feeder.start()
            result = _here(first, progress, self.filesystems)
            feeder.widen(self.workers * 2)  # from now on the workers have the cores, a few batches queued each
            yield result
            yield from feeder.results()
            finished = True
        except BrokenProcessPool:
            raise WorkerLost() from None
        finally:
            if not finished:
                # Stopped (--strict met a bad record), Ctrl-C or an error: stop the workers now
                # rather than wait for their batches; the caller deletes what they wrote.
                keep_alive.close()
            feeder.stop()
            if not finished:
                _no_result_half_sent(pool)
            pool.shutdown(wait=True, cancel_futures=True)
            keep_alive.close()
            lifeline.close()
            if finished:  # (a worker stopped may have died holding the queue's lock: no put then)
                queue.put(None)  # the reader ends now, not at its next timeout
            stop.set()
            reader.join()
            queue.close()


class _Feeder(threading.Thread):
    """Hands batches to the pool as its workers can take them (``limit`` queued or running at once, then
    ``widen``'s), in a thread of its own: the pool's first ``submit`` waits for the forkserver to come up,
    while the ingest process maps the first batch. ``specs`` is lazy: drawing from it reads files (the
    pieces of a large file are found as the pass over it goes on), here, alongside that first batch."""

    _END = object()

    def __init__(self, pool: ProcessPoolExecutor, specs: Iterator[BatchSpec], limit: int, spare: int = 0):
        super().__init__(daemon=True, name="feeder")
        self.pool, self.specs = pool, specs
        self.spare = spare
        self.slots = threading.Semaphore(limit)
        self.limit = limit
        self.done: "queue_mod.SimpleQueue" = queue_mod.SimpleQueue()  # finished futures, then _END
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self.submitted = 0

    def run(self) -> None:
        try:
            # The next batch is drawn before a slot frees, not after: drawing may wait for the pass
            # over a large file to find its piece (hash and count ~32 MB), which then happens while
            # the batches run instead of between one batch's end and the next one's start.
            spec = next(self.specs, None)
            while spec is not None:
                self.slots.acquire()
                if self.stopping.is_set():
                    break
                future = self.pool.submit(run_batch_in_worker, spec)  # the first waits for the forkserver
                self.submitted += 1
                future.add_done_callback(self._finished)
                if self.submitted == 1:
                    self._start_spare_workers()
                spec = None if self.stopping.is_set() else next(self.specs, None)
        except BaseException as e:  # a file the pass could not read, a pool already broken: the run's error
            self.error = e
        finally:
            self.done.put(self._END)

    def _start_spare_workers(self) -> None:
        """The pool's other workers, started now, while the ingest process maps its batch.

        ProcessPoolExecutor starts a worker only when a batch is handed to it and none is idle: the
        second would come up only once the ingest process's batch ends and ``widen`` hands out more,
        leaving a core idle while it starts (~0.1 s: bench/timeline.py). A no-op per spare worker
        starts them now; they wait, mapping nothing, until ``widen``. A run that gives the pool no batch
        never gets here; one that gives it a single batch starts a worker it does not need (a fork of
        the forkserver, which has everything imported: a few ms)."""
        for _ in range(self.spare):
            self.pool.submit(_started)

    def widen(self, limit: int) -> None:
        """From now on up to ``limit`` batches queued or running at once."""
        if limit > self.limit:
            self.slots.release(limit - self.limit)
            self.limit = limit

    def _finished(self, future) -> None:
        self.slots.release()
        self.done.put(future)

    def results(self) -> Iterator[BatchResult]:
        """The pool's results as its batches finish; the feeder's error, if it met one."""
        received, fed = 0, False
        while not fed or received < self.submitted:
            try:
                # In short waits: Ctrl-C may land on any thread, and Python runs its handler only when
                # the main thread next looks, which a wait without end would put off to the next batch.
                item = self.done.get(timeout=0.2)
            except queue_mod.Empty:
                continue
            if item is self._END:
                fed = True
                if self.error is not None:
                    raise self.error
                continue
            received += 1
            yield item.result()

    def stop(self) -> None:
        """No more batches handed out; returns once the thread is over (a ``submit`` waiting for the
        forkserver to come up, or a read of the pass, ends first: nothing longer)."""
        self.stopping.set()
        self.slots.release()
        if self.ident is not None:
            self.join()


#: how long a stop waits for the workers the lifeline stopped to be gone (they exit at once: a guard)
STOP_WAIT_S = 10.0


def _no_result_half_sent(pool: ProcessPoolExecutor) -> None:
    """After the lifeline stopped the workers: a worker may have died half-way through sending a result,
    and the pool's own thread then waits for the rest of that message for ever, and ``shutdown`` with it
    (a Ctrl-C that never returned). Once the workers are gone, this process's writing end of the pipe
    they sent results through is closed: that wait ends (end of file), the pool counts itself broken and
    shuts down. (ProcessPoolExecutor keeps that end open for the workers it may yet start; none starts
    after a stop.)"""
    for process in list((pool._processes or {}).values()):
        process.join(STOP_WAIT_S)
    pool._result_queue._writer.close()


def _here(spec: BatchSpec, progress: ProgressFn, filesystems: FileSystems | None = None) -> BatchResult:
    """A batch mapped by the ingest process itself, with a worker's collector settings (``_init_worker``)."""
    threshold = gc.get_threshold()
    gc.set_threshold(*process_settings.GC_THRESHOLDS)
    try:
        return BatchIngest(spec, progress, filesystems).run()
    finally:
        gc.set_threshold(*threshold)
        # The batch's Arrow memory back to the system (the allocator keeps it, ~120 MB for a 32 MB
        # piece): this process lives on beside the workers, and the run's peak is theirs and its own.
        import pyarrow as pa

        pa.default_memory_pool().release_unused()


def preload_modules(registry: Registry) -> list[str]:
    """What the forkserver imports before it forks any worker: the worker, the run's formats and the
    modules their fast paths use (``Ingestor.worker_modules``). The formats were loaded in this
    process already (detection needs them all), so importing them again cannot fail where this
    process did not; ``__main__`` is multiprocessing's default. First of all
    ``warehouse.run.forkserver_start``: pyarrow would import pandas (when installed) on a process's
    first ``pa.array``, which every worker makes, and the forkserver tore its interpreter down when told
    to stop."""
    formats = sorted({ref.partition(":")[0] for _name, ref in registry.refs})
    fast = sorted({m for ingestor in registry.ingestors() for m in ingestor.worker_modules})
    return ["warehouse.run.forkserver_start", "__main__", "warehouse.run.worker", *formats, *fast]


def start_forkserver(registry: Registry) -> None:
    """Start the forkserver now: it imports what workers need (``preload_modules``) in a process
    of its own while the run goes on walking and planning, instead of after. Call it once the
    run is known to need a ``ProcessPool``; later pools of this process reuse it."""
    from multiprocessing import forkserver

    # The preload takes effect when the forkserver starts (once per process; later runs reuse it),
    # and so does its environment: the forkserver and every worker forked from it get the
    # allocator and thread settings of ``process_settings`` (this process's own stay as they are).
    multiprocessing.get_context("forkserver").set_forkserver_preload(preload_modules(registry))
    with process_settings.environment():
        forkserver.ensure_running()


# --- in a worker process ---------------------------------------------------------

_progress_queue = None


def _started() -> None:
    """Nothing: what ``_Feeder`` hands the pool to start a worker before its batches need it."""


def _init_worker(queue, lifeline=None) -> None:
    global _progress_queue
    _progress_queue = queue
    # The ingest process decides when to stop: Ctrl-C at a terminal reaches every process
    # of the group, and a worker must not half-finish a batch on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if lifeline is not None:
        threading.Thread(target=_exit_with_parent, args=(lifeline,), daemon=True, name="lifeline").start()
    # (its allocators' settings came with the forkserver's environment: ``start_forkserver``)
    gc.set_threshold(*process_settings.GC_THRESHOLDS)


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
