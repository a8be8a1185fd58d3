"""Timing and peak memory of a command and all its child processes.

Peak RSS is sampled (every 20 ms) as the sum over the process tree, so a run that
uses a pool of workers is charged for all of them at once; CPU time is summed over
the tree the same way (each process's last sample).
"""

from __future__ import annotations

import os
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


_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process so far."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return None


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
    cpu_seconds: float = 0.0  # summed over the process tree (processes shorter than a sample are missed)


def run(cmd: list[str], env: dict | None = None) -> Run:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    peak = 0
    cpu: dict[int, float] = {}
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            pids = _tree(proc.pid)
            peak = max(peak, sum(_rss_kb(p) for p in pids))
            for p in pids:
                c = _cpu_s(p)
                if c is not None:
                    cpu[p] = max(cpu.get(p, 0.0), c)
            time.sleep(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t0 = time.monotonic()
    t.start()
    _, err = proc.communicate()
    seconds = time.monotonic() - t0
    done.set()
    t.join()
    return Run(seconds, peak / 1024, proc.returncode, err, sum(cpu.values()))


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
