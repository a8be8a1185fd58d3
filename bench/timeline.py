"""The timeline of one ingest: when each phase and each batch starts and ends, in which process (issue 20).

    python bench/timeline.py ingest /tmp/speed-bench/afterimage-300mb --root /tmp/r --quiet

Runs ``warehouse ingest`` with timers wrapped around the phases (imports, loading the formats,
the catalog, walk, plan, the pass over a large file, each batch in whichever process maps it,
the commit and its Delta commits) and prints, to stderr, one line per event (``TL seconds pid
event``; a phase's end line gives its wall and CPU seconds in the ingest process), then a summary: when the
first batch started, the stretch of batches, and the serial stretches around it (the time
before the first batch, the time from the last batch's end to the commit's end), and how
many batches ran at once on average while batches ran (the cores used). Run it twice on the
same corpus and root to see an unchanged re-ingest's phases. Run it from outside a checkout
whose ``warehouse`` is not the one measured.
"""

from __future__ import annotations

import os
import sys
import time

T0 = float(os.environ.setdefault("TL_T0", repr(time.time())))  # the forkserver and workers inherit it
EVENTS: list[tuple[float, int, str]] = []


def log(msg: str) -> None:
    t = time.time() - T0
    EVENTS.append((t, os.getpid(), msg))
    sys.stderr.write(f"TL {t:7.3f} pid={os.getpid()} {msg}\n")


import warehouse.run.worker as _worker  # noqa: E402  (in workers too: the forkserver imports this module)

_run = _worker.BatchIngest.run


def _batch(self):
    log(f"batch {self.spec.batch_no} start")
    try:
        return _run(self)
    finally:
        log(f"batch {self.spec.batch_no} end")


_worker.BatchIngest.run = _batch


def wrap(obj, name: str, label: str | None = None) -> None:
    """Log the start and end of ``obj.name``; its end line gives its wall and this process's CPU seconds."""
    f = getattr(obj, name)

    def timed(*a, **k):
        log(f"{label or name} start")
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return f(*a, **k)
        finally:
            log(f"{label or name} end (wall {time.perf_counter() - wall:.3f} s, cpu {time.process_time() - cpu:.3f} s)")

    setattr(obj, name, timed)


def summary() -> None:
    """The serial stretches and the concurrency of the batches, from the batch lines of every process."""
    batches = [(t, msg) for t, _pid, msg in ALL if msg.startswith("batch ")]
    if not batches:
        return
    starts = [t for t, m in batches if m.endswith("start")]
    ends = [t for t, m in batches if m.endswith("end")]
    first, last = min(starts), max(ends)
    busy = sum(ends) - sum(starts)  # batch-seconds
    commit_end = max((t for t, _p, m in ALL if m.startswith("commit end")), default=last)
    sys.stderr.write(
        f"TL summary: first batch at {first:.3f} s; batches {first:.3f}-{last:.3f} s, {busy / (last - first):.2f} "
        f"at once on average; last batch end to commit end {commit_end - last:.3f} s; "
        f"CPU of the ingest process {_cpu():.2f} s\n")


def _cpu() -> float:
    import resource

    a = resource.getrusage(resource.RUSAGE_SELF)  # (the workers are the forkserver's children, not ours)
    return a.ru_utime + a.ru_stime


ALL: list[tuple[float, int, str]] = []

if __name__ == "__main__":
    import atexit
    import tempfile

    import warehouse.cli  # noqa: F401  (its imports are the process's start-up)

    log(f"imports of warehouse.cli done (cpu {time.process_time():.3f} s)")
    import warehouse.formatkit.registry as registry
    import warehouse.run.catalog as catalog
    import warehouse.run.commit as commit
    import warehouse.run.pieces as pieces
    import warehouse.run.runner as runner
    import warehouse.store.delta as delta

    log(f"imports of warehouse.run.runner done (cpu {time.process_time():.3f} s)")
    import warehouse.run.work as work

    for name in ("start_forkserver", "open_for_writing", "_paths_ahead", "run_batches",
                 "merge_pieces", "commit"):
        wrap(runner, name)
    wrap(work.Walk, "finish", "walk's finish")
    _found = work.Walk.found

    def found(self):  # (a generator: the walk's start and end, not its making)
        log("walk start")
        yield from _found(self)
        log("walk end")

    work.Walk.found = found
    wrap(registry.Registry, "ingestors", "loading the formats")
    wrap(catalog.Catalog, "load", "catalog")
    wrap(commit, "commit_plan")
    wrap(delta, "commit_table")
    _chunks = pieces.FileScan.chunks

    def chunks(self):
        log("pass start")
        for piece in _chunks(self):
            log("pass: a piece")
            yield piece
        log("pass end")

    pieces.FileScan.chunks = chunks
    # the workers' lines: each process appends its own to a file named by the run's T0
    shared = os.path.join(tempfile.gettempdir(), f"timeline-{os.environ['TL_T0']}.txt")
    os.environ["TL_FILE"] = shared

    def end():
        log("exit")
        ALL.extend(EVENTS)
        if os.path.exists(shared):
            with open(shared) as f:
                for line in f:
                    t, pid, msg = line.rstrip("\n").split(" ", 2)
                    ALL.append((float(t), int(pid), msg))
            os.remove(shared)
        summary()

    atexit.register(end)
    from warehouse.cli import main

    sys.exit(main(sys.argv[1:]))
elif os.environ.get("TL_FILE"):  # a worker (or the forkserver): its batch lines go to the shared file
    _log = log

    def log(msg: str) -> None:  # noqa: F811
        _log(msg)
        with open(os.environ["TL_FILE"], "a") as f:
            t, pid, m = EVENTS[-1]
            f.write(f"{t} {pid} {m}\n")
