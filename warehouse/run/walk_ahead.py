"""The rest of a run's walk, on a thread of its own while the run's first batches go.

A run of many small files used to walk them all before its first batch: for 100,000 files, most of a
second with every worker idle (bench/README.md, the serial share). Once the walk has found enough to
read for a pool (``Walk.pooled``), the runner hands the rest of it to a ``WalkAhead`` and starts the
batches: they are cut from what it finds as it finds it (``batches.cut_batches``), and the large JSONL
files it finds become scans that run after them. Once it is over, ``Walk.finish`` adds what depends on
a change, and ``at_end`` gets the whole ``Work`` (the runner starts path_fields ahead with it).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator

from warehouse.progress import IngestProgress
from warehouse.run.pieces import FileScan
from warehouse.run.work import Walk, Work
from warehouse.run.worker import WorkItem


class WalkAhead:
    _END = object()

    def __init__(self, walk: Walk, found: Iterator[tuple[WorkItem, int]],
                 split: Callable[[WorkItem, int], FileScan | None], bar: IngestProgress,
                 at_end: Callable[[Work], None]):
        self.walk = walk
        #: the large files found, each read in pieces after the batches of whole files (complete once they are cut)
        self.scans: list[FileScan] = []
        self.error: BaseException | None = None
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(found, split, bar, at_end), daemon=True,
                                        name="walk")
        self._thread.start()

    def _run(self, found, split, bar: IngestProgress, at_end) -> None:
        try:
            for item, size in found:
                if self._stopping.is_set():
                    return
                self._put(item, size, split, bar)
            for item, size in self.walk.finish():
                self._put(item, size, split, bar)
            if not self._stopping.is_set():
                at_end(self.walk.work)
        except BaseException as e:  # the run's error, raised where its batches are drawn
            self.error = e
        finally:
            self._queue.put(self._END)

    def _put(self, item: WorkItem, size: int, split, bar: IngestProgress) -> None:
        scan = split(item, size)
        bar.more(1, scan.item_size if scan is not None else size)
        if scan is not None:
            self.scans.append(scan)
        else:
            self._queue.put((item, size))

    def items(self) -> Iterator[tuple[WorkItem, int]]:
        """The files to read whole, as the walk finds them, to its end; then its error, if it met one."""
        while True:
            try:
                # in short waits: Ctrl-C lands on the main thread, which may be the one waiting here
                got = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            if got is self._END:
                if self.error is not None:
                    raise self.error
                return
            yield got

    def known(self) -> tuple[int, int]:
        """How many files to read the walk has found so far, and their bytes."""
        return len(self.walk.work.items), self.walk.nbytes

    def stop(self) -> None:
        """The walk stops at its next file; returns once its thread is over (the run ended: an error,
        Ctrl-C, --strict)."""
        self._stopping.set()
        self._thread.join()
