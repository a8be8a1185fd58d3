"""The run's batches: how many files each (``plan_batches``), which engine runs them (this process, a process
pool, or an engine plugged in by name), and running them to the end or to --strict's first bad record.
"""

from __future__ import annotations

import importlib
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing
from typing import Protocol

from warehouse.filesystems import FileSystems
from warehouse.progress import IngestProgress
from warehouse.run.pieces import FileScan
from warehouse.run.pool import Engine, Inline, ProcessPool
from warehouse.run.worker import BatchResult, BatchSpec, WorkItem

#: runs smaller than this are ingested in-process (a pool costs more than it saves)
INLINE_MAX_BYTES = 16 * 1024 * 1024


INLINE_MAX_FILES = 400


#: batch size bounds: each batch writes one Parquet file per table
MIN_BATCH_BYTES = 8 * 1024 * 1024


MAX_BATCH_BYTES = 256 * 1024 * 1024


MIN_BATCH_FILES = 2000


class Walking(Protocol):
    """A walk still going on while the batches run (``walk_ahead.WalkAhead``)."""

    #: the large files it found, to read in pieces (all of them once ``items`` is over)
    scans: list[FileScan]

    def items(self) -> Iterator[tuple[WorkItem, int]]:
        """The files to read whole, with their sizes, as the walk finds them."""
        ...

    def known(self) -> tuple[int, int]:
        """How many files to read it has found so far, and their bytes."""
        ...


def run_batches(items: list[WorkItem], sizes: list[int], spec_args: dict, jobs: int | None, bar: IngestProgress,
                 scans: Sequence[FileScan] = (), engine_name: str = "local",
                 spark_master: str | None = None,
                 arrived: Callable[[BatchResult], None] = lambda result: None,
                 filesystems: FileSystems | None = None, walking: Walking | None = None) -> list[BatchResult]:
    """Plan the batches, run them on an engine, and stop it at --strict's first bad record.
    ``arrived`` is called with each result as its batch ends; ``filesystems``: the run's, for the
    batches mapped in this process. ``walking``: the rest of the walk, still going on; its files come
    after ``items`` (the batches cut as it finds them), its large files' scans after ``scans``."""
    if not items and not scans and walking is None:
        return []
    engine = _engine(engine_name, spark_master, jobs, sum(sizes) + sum(s.item_size for s in scans), len(items),
                     filesystems)
    if walking is not None:
        batches: Iterable[list[WorkItem]] = cut_batches(itertools.chain(zip(items, sizes), walking.items()),
                                                        engine.workers, walking.known)
    else:
        batches = plan_batches(items, sizes, engine.workers) if items else []

    def specs() -> Iterator[BatchSpec]:
        n = 0
        for b in batches:
            n += 1
            yield BatchSpec(batch_no=n, items=b, **spec_args)
        for scan in itertools.chain(scans, walking.scans if walking is not None else ()):  # (all found by now)
            for piece in scan.chunks():  # the pieces as the pass over the file finds them
                n += 1
                yield BatchSpec(batch_no=n, items=[piece], **spec_args)

    results: list[BatchResult] = []
    with closing(engine.run(specs(), bar.add)) as running:
        for result in running:
            results.append(result)
            arrived(result)
            if result.strict_failure:
                break  # --strict met a bad record: the run is over, the batches still running with it
    results.sort(key=lambda r: r.batch_no)
    return results


def job_count(jobs: int | None) -> int:
    return max(1, jobs or os.cpu_count() or 1)


def pooled(files: int, nbytes: int) -> bool:
    """Whether this much to read is worth a pool of workers (given more than one job)."""
    return nbytes > INLINE_MAX_BYTES or files > INLINE_MAX_FILES


#: engines that live beside the run, not in it, by their ``--engine`` name: imported when asked for (pyspark
#: is an extra) and by name, as formats are, so the run's room does not depend on the rooms above it
PLUGGED_ENGINES = {"spark": "warehouse.spark.engine:SparkEngine"}


def _engine(name: str, spark_master: str | None, jobs: int | None, total_bytes: int, files: int,
            filesystems: FileSystems | None = None) -> Engine:
    """``spark``: Spark tasks, whatever the size (the user asked for the cluster). ``local``: this
    process for a small run or ``--jobs 1`` (a pool costs more than it saves), else a process pool."""
    if name in PLUGGED_ENGINES:
        module, _, cls = PLUGGED_ENGINES[name].partition(":")
        return getattr(importlib.import_module(module), cls)(spark_master)
    jobs = job_count(jobs)
    return ProcessPool(jobs, filesystems) if jobs > 1 and pooled(files, total_bytes) else Inline(filesystems)


def plan_batches(items: list[WorkItem], sizes: list[int], jobs: int) -> list[list[WorkItem]]:
    """Contiguous groups of files (sorted by path) of about equal bytes.

    Several batches per worker balance the load; each batch writes one Parquet
    file per table, so batches are kept large enough not to litter small files.
    """
    if jobs <= 1:
        return [items]
    total = (len(items), sum(sizes))
    return list(cut_batches(zip(items, sizes), jobs, lambda: total))


def cut_batches(found: Iterable[tuple[WorkItem, int]], jobs: int,
                known: Callable[[], tuple[int, int]]) -> Iterator[list[WorkItem]]:
    """``plan_batches`` of files still being found: each batch is cut by the bounds that what is known
    when it is cut gives (``known()``: how many files there are to read and their bytes, so far). The
    first batches of a run still walking are small, the later ones as ``plan_batches`` would cut them."""
    current: list[WorkItem] = []
    acc = 0
    for item, size in found:
        current.append(item)
        acc += size
        files, nbytes = known()
        target = min(max(nbytes // (jobs * 4), MIN_BATCH_BYTES), MAX_BATCH_BYTES)
        max_files = max(MIN_BATCH_FILES, files // (jobs * 4) + 1)
        if acc >= target or len(current) >= max_files:
            yield current
            current, acc = [], 0
    if current:
        yield current
