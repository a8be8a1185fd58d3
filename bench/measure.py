"""Timing, CPU time and peak memory of a command and all its child processes.

Peak RSS is sampled (every 20 ms) as the sum over the process tree, so a run that
uses a pool of workers is charged for all of them at once. CPU time (user + system)
counts every process of the tree too: this process is made a *child subreaper*
(Linux), so a worker or forkserver that outlives its parent is reparented here and
reaped, and its CPU lands in ``RUSAGE_CHILDREN`` instead of being lost to init.
On a shared machine CPU time is steadier than wall time.
"""

from __future__ import annotations

import ctypes
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass
class Run:
    seconds: float
    peak_rss_mb: float
    returncode: int
    stderr: str
    cpu_seconds: float = float("nan")


_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


_SUBREAPER = _become_subreaper()


def _reap_orphans(timeout: float = 5.0) -> None:
    """Wait for the processes of the tree that outlived the command (reparented here; a
    forkserver exits once its parent has), for ``timeout`` seconds at most."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd: list[str], env: dict | None = None, cwd: str | None = None) -> Run:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    peak = 0
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, sum(_rss_kb(p) for p in _tree(proc.pid)))
            time.sleep(0.02)

    t = threading.Thread(target=sample, daemon=True)
    cpu0 = _children_cpu()
    t0 = time.monotonic()
    t.start()
    _, err = proc.communicate()
    seconds = time.monotonic() - t0
    done.set()
    t.join()
    _reap_orphans()
    cpu = _children_cpu() - cpu0 if _SUBREAPER else float("nan")
    return Run(seconds, peak / 1024, proc.returncode, err, cpu)


def settle(corpus: str | os.PathLike, memory_bytes: int = 4 << 30) -> None:
    """Put the machine in the same state before each measured run, so that no contender pays
    for another's leftovers or for the time since it last ran (issue 20, bench/README.md).

    Two things this VM does made the same command's CPU time move by a quarter between runs:
    its kernel drops a file's page-cache pages ~30 s after they were last read (DAMON
    ``pageout``), so whoever reads the corpus first pays ~1 CPU-s per GiB to read it back; and
    the host takes back guest memory that stayed free as long, so a process's first touch of
    a page costs between 0.5 and 2.3 CPU-s per GiB depending on what ran before it. Reading
    the corpus, then touching and freeing ``memory_bytes`` (more than any contender's peak),
    makes both the cheap case for every contender alike. Untimed."""
    import mmap

    for root, _dirs, files in os.walk(corpus):
        for name in files:
            with open(os.path.join(root, name), "rb", buffering=0) as f:
                while f.read(8 << 20):
                    pass
    block = bytes(64 << 20)
    m = mmap.mmap(-1, memory_bytes)
    try:
        for off in range(0, memory_bytes, len(block)):
            m[off:off + len(block)] = block[:memory_bytes - off]
    finally:
        m.close()


def median_of(runs: list[Run]) -> Run:
    return Run(
        statistics.median(r.seconds for r in runs),
        statistics.median(r.peak_rss_mb for r in runs),
        max(r.returncode for r in runs),
        runs[-1].stderr,
        statistics.median(r.cpu_seconds for r in runs),
    )


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cpu(f, repeat: int) -> float:
    """The least CPU (user + system of this process) of ``repeat`` calls of ``f``: the figure a
    stage costs when nothing else gets in its way (bench/hotpath.py, bench/smallfiles.py)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()  # finer than os.times()
        f()
        best = min(best, time.process_time() - t)
    return best


def stage_table(stages, repeat: int, call: str, per: str, scale: float, ms: str = ".1f", digits: str = ".2f") -> None:
    """Print each ``(label, f)`` of ``stages`` as a Markdown row: its CPU per ``call`` and per ``per``
    (CPU times ``scale``), measured by ``cpu``."""
    print(f"| stage | CPU per {call} | CPU-s per {per} |")
    print("|---|---|---|")
    for label, f in stages:
        s = cpu(f, repeat)
        print(f"| {label} | {s * 1000:{ms}} ms | {s * scale:{digits}} |", flush=True)
