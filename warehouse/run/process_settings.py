"""Allocator, thread and collector settings of the ingest's own processes (issue 20, part F), and
pyarrow's lookout for pandas, which they do without (``pyarrow_without_pandas``, stop 26).

An ingest allocates and frees the same few hundred MB over and over: every piece is read,
parsed into Arrow arrays, written and dropped, and the next piece needs the same memory
again. The allocators' defaults give freed memory back to the kernel soon (mimalloc 10 ms
after, glibc every block over its threshold), and what is needed again is faulted in and
zeroed anew (page faults, ``clear_page_erms``: 15% of the CPU of a 1 GB ingest was the
kernel's, most of it the first touch of each process's memory, which stays); and numpy's
OpenBLAS starts a thread per core in every process that imports numpy, threads that spin
waiting for matrix work this program never gives them.

These settings belong to the processes an ingest starts or owns: the ``warehouse ingest``
command's process (``for_ingest_command``, called before it imports pyarrow or numpy), and the
pool's forkserver with the workers it forks (``environment``, around the forkserver's start).
``import warehouse`` changes nothing: a notebook's own process keeps its allocators as they were.
A variable already in the environment is left as it is (so each setting can be measured alone,
``bench/settings.py``: figures in bench/README.md, issue 20, part F).
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: glibc malloc: freed blocks stay in the heap instead of going back to the kernel. Python's
#: ``bytes`` of a file's chunk (the pass over a large file, a worker's small files) are malloc'd:
#: by default a block over 128 KB is a fresh mmap, faulted in and zeroed page by page, and
#: unmapped when freed, until glibc's dynamic threshold has grown past that size (never past
#: 32 MB), and the heap's top is trimmed past twice that. 20,000 inference files: 110k -> 101k
#: minor faults (bench/settings.py; figures in bench/README.md, issue 20, part F).
MMAP_THRESHOLD = 1 << 30
TRIM_THRESHOLD = (1 << 31) - 1  # mallopt takes an int
#: mimalloc (Arrow's default pool): freed pages are purged (given back) this many ms after they
#: are freed instead of 10, so a worker's next piece finds the last one's pages (1 GB of JSONL
#: conversations: 180k -> 172k minor faults). Not -1 (never): that keeps every worker's highest
#: use to the end and makes ``release_unused`` a no-op (the ingest process keeps its first
#: batch's ~120 MB while the workers run: the peak RSS rose past 1 GB at 300 MB).
PURGE_DELAY_MS = 1000

#: what the processes read from their environment when they start (or import the library)
ENV = {
    "MIMALLOC_PURGE_DELAY": str(PURGE_DELAY_MS),
    "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD),
    "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD),
    # numpy's OpenBLAS: one thread, the caller's. This program makes no matrix work (numpy
    # only scans bytes), and every extra thread spun in every process that imported numpy
    # (``blas_thread_server``: 1.6% of a 1 GB ingest's CPU, 2.6% of 20,000 files'; this alone:
    # 5.00 -> 4.67 CPU-s on 20,000 files). Read when numpy is imported, so it must be set
    # before. (Not OMP_NUM_THREADS: Arrow sizes its own thread pool by it.)
    "OPENBLAS_NUM_THREADS": "1",
}

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h>

#: Python's cyclic collector in a process that maps records (a worker, the ingest process's own
#: batch; ``pool``) and in the ingest command's process: they allocate millions of short-lived
#: dicts and lists that hold no cycles, and the walk and plan keep tens of thousands of objects
#: alive, which the default threshold (700) traverses again and again. Workers: ~7% of the time
#: of ingesting 10k inference files at 700, no collection at all at these. The ingest command's
#: process, 20,000 inference files: 207 collections, 0.08 CPU-s -> 4, 0.05.
GC_THRESHOLDS = (50_000, 20, 100)


def missing() -> dict[str, str]:
    """The settings the environment does not set already (the user's own win)."""
    return {k: v for k, v in ENV.items() if k not in os.environ}


def for_ingest_command() -> None:
    """Settings for the ``warehouse ingest`` command's own process, and through its environment
    for the forkserver and workers it starts. Call before pyarrow and numpy are imported: both
    read theirs when they load. glibc read its variables when this process started, so they
    are applied through ``mallopt`` here too. The collector's thresholds too (``GC_THRESHOLDS``), and
    pyarrow's pandas lookout (``pyarrow_without_pandas``)."""
    todo = missing()
    os.environ.update(todo)
    gc.set_threshold(*GC_THRESHOLDS)
    if "MALLOC_MMAP_THRESHOLD_" in todo:
        _mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    if "MALLOC_TRIM_THRESHOLD_" in todo:
        _mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    pyarrow_without_pandas()


def pyarrow_without_pandas() -> None:
    """Make pyarrow settle now that this process has no pandas for it to look out for.

    pyarrow decides that once per process, on the first Arrow array or scalar it makes from
    Python objects (``pa.array``, ``pa.scalar``, ``from_pylist``: every batch makes some), by
    importing pandas where it is installed, to tell pandas objects apart from the rest: 0.15 to
    0.22 CPU-s in each process that makes one (the ingest command's, which maps the first batch,
    and the forkserver, which used to import pandas for its workers: 6% of the CPU of a 300 MB
    JSONL ingest, bench/README.md). The ingest's own processes hand pyarrow no pandas object.
    pyarrow's conversions to and from pandas (``to_pandas``, ``Table.from_pandas``) import pandas
    when they are called, as before, so a format of a plugin that uses pandas still can.

    For the ingest's own processes only (``for_ingest_command``, ``warehouse.run.forkserver_start``
    in the forkserver): a no-op where pandas is imported already (a user's process), and where
    pyarrow has decided already."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    sys.meta_path.insert(0, _NO_PANDAS)  # ``import pandas`` raises ImportError: pyarrow notes "none"
    try:
        pa.array(["a"])  # (inferring the type: pyarrow's C++ side looks for pandas once too)
    finally:
        sys.meta_path.remove(_NO_PANDAS)


class _NoPandas:
    """A finder that says pandas is not there (``sys.meta_path``; only while pyarrow looks)."""

    @staticmethod
    def find_spec(name: str, path=None, target=None):
        if name == "pandas":
            raise ModuleNotFoundError("pandas is not looked for here", name=name)
        return None  # (the next finder's turn)


_NO_PANDAS = _NoPandas()


@contextmanager
def environment() -> Iterator[None]:
    """The settings in this process's environment while a process that inherits it is started
    (the pool's forkserver), then the environment as it was: a library user's process keeps
    its own."""
    todo = missing()
    os.environ.update(todo)
    try:
        yield
    finally:
        for k in todo:
            os.environ.pop(k, None)


def _mallopt(param: int, value: int) -> bool:
    """glibc's ``mallopt``; False where the C library has none (musl, macOS)."""
    try:
        return bool(ctypes.CDLL(None).mallopt(param, value))
    except (OSError, AttributeError):
        return False
