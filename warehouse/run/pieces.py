"""Large JSONL files in pieces: cut at line ends while hashed, ingested in parallel, catalogued as one.

A JSONL file over ``CHUNK_BYTES`` of a format whose lines stand alone
(``Ingestor.line_records``) is read once by the ingest process: the pass hashes it
and hands out line-aligned pieces as it finds them, so workers start on the first
pieces before the file has been read to the end. Each piece is a batch of its own;
its catalog row is partial (it carries ``chunk``), and ``merge_pieces`` folds the
rows of a file's pieces into the file's one row once the pass knows its digest.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Iterator, Sequence

from warehouse.filesystems import FileSystems, Reachable
from warehouse.formatkit.dependencies import DependsOn
from warehouse.formatkit.ingestor import Ingestor
from warehouse.formatkit.linescan import count_lines
from warehouse.run.worker import BatchResult, WorkItem, detect
from warehouse.store import remote_root
from warehouse.store.storage import Store

#: JSONL files larger than this are split into pieces of about this size, ingested in parallel
CHUNK_BYTES = 32 * 1024 * 1024
#: bytes read at a time by the pass (one ranged request each on object storage)
READ_BYTES = 8 << 20
#: blocks read but not yet hashed, at most (the pass waits for the hash beyond them)
HASH_AHEAD = 4


class _Digest:
    """The SHA-256 of the blocks given it, in order, worked out on a thread of its own.

    The pass is what the ingest process does while the workers parse: hashing took more of it than
    reading, cutting and counting lines together (bench/README.md). ``hashlib`` lets go of the GIL
    while it hashes a block, so on a thread the hash runs on a core of its own beside the rest of the pass.
    """

    def __init__(self):
        self._h = hashlib.sha256()
        self._error: BaseException | None = None
        self._blocks: queue.Queue[bytes | None] = queue.Queue(maxsize=HASH_AHEAD)
        self._thread = threading.Thread(target=self._run, name="pass-sha256", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (block := self._blocks.get()) is not None:
            if self._error is None:  # (after an error the blocks are still taken: the pass never waits for ever)
                try:
                    self._h.update(block)
                except BaseException as e:  # told by ``finish``, on the pass's thread
                    self._error = e

    def add(self, block: bytes) -> None:
        self._blocks.put(block)

    def finish(self) -> str:
        """The digest of every block given (once the thread has hashed them and ended)."""
        if self._thread.is_alive():
            self._blocks.put(None)
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._h.hexdigest()


class FileScan:
    """One pass over a large JSONL file: its SHA-256, and line-aligned pieces as they are found.

    The pieces are handed out while the pass goes on, so workers start before the
    file has been read to the end; the digest is known once the pass is over.
    """

    def __init__(self, item: WorkItem, ingestor_name: str, chunk_bytes: int, size: int,
                 filesystems: FileSystems | None = None):
        self.filesystems = filesystems or FileSystems.for_path(item.path)
        self.item, self.source_format, self.chunk_bytes, self.item_size = item, ingestor_name, chunk_bytes, size
        self.sha256: str | None = None
        self.size = self.mtime_ns = 0

    def chunks(self) -> Iterator[WorkItem]:
        digest = _Digest()
        start = pos = 0
        line = 1  # number of the first line of the piece being gathered
        lines_in_piece = 0
        # Each block is hashed on the digest's thread as it is read, and line-counted here in the regions
        # the cuts make of it (in file order, they are the file). Until the first piece is handed out,
        # its blocks are only searched for its end: their regions are counted when this generator is
        # drawn from again (by the engine's feeder, alongside the first batch), so the first batch
        # starts sooner: the first piece's number of lines is needed by the second piece only.
        waiting: list[tuple[bytes, int, int | None]] | None = []

        def region(block: bytes, lo: int, hi: int | None = None) -> int:
            if waiting is not None:
                waiting.append((block, lo, hi))
                return 0
            return count_lines(block, lo, hi)

        complete = False
        try:
            f, self.size, self.mtime_ns = self.filesystems.open(self.item.path)
            with f:
                while block := f.read(READ_BYTES):
                    digest.add(block)
                    block_start, pos = pos, pos + len(block)
                    done = 0  # bytes of the block whose line ends are counted
                    while pos - start >= (want := self.piece_bytes(start)):
                        # cut after the last line end before the piece's wanted end (else the first after
                        # it): the piece holds whole lines
                        limit = max(start + want - block_start, done)
                        nl = block.rfind(b"\n", done, limit)
                        if nl < 0:
                            nl = block.find(b"\n", limit)
                        if nl < 0:
                            break  # no line end in the rest of the block: read on
                        lines_in_piece += region(block, done, nl + 1)
                        done = nl + 1
                        end = block_start + done
                        yield WorkItem(self.item.path, source_format=self.source_format, chunk=(start, end, line),
                                       tree=self.item.tree)
                        if waiting is not None:  # the first piece is out: catch up with it
                            lines_in_piece += sum(count_lines(*r) for r in waiting)
                            waiting = None  # (its blocks freed: the next reads reuse their memory)
                        line += lines_in_piece
                        lines_in_piece = 0
                        start = end
                    lines_in_piece += region(block, done)
                if pos > start:
                    yield WorkItem(self.item.path, source_format=self.source_format, chunk=(start, pos, line),
                                   tree=self.item.tree)
            complete = True
        finally:  # (a pass cut short, by --strict or Ctrl-C, ends its thread too, and knows no digest)
            sha256 = digest.finish()
        self.sha256 = sha256 if complete else None

    def piece_bytes(self, start: int) -> int:
        """The size of the piece that starts at byte ``start``: ``chunk_bytes``, but half of what
        is left of the file once that is less, down to ``chunk_bytes / 4``. The last pieces are
        smaller, so the workers end together instead of one of them alone ending a whole piece
        (with two workers and 32 MB pieces, that tail left a core idle for ~0.2 s)."""
        left = self.item_size - start
        want = max(min(self.chunk_bytes, left // 2), self.chunk_bytes // 4, 1)
        return left if left - want < self.chunk_bytes // 8 else want  # no sliver of a last piece


def split_large_files(items: list[WorkItem], sizes: list[int], ingestors: Sequence[Ingestor],
                      filesystems: FileSystems, chunk_bytes: int | None = None,
                      ) -> tuple[list[WorkItem], list[int], list[FileScan]]:
    """Large JSONL files of line-based formats become FileScans; the rest stay whole (``filesystems``: the run's)."""
    chunk_bytes = CHUNK_BYTES if chunk_bytes is None else chunk_bytes
    whole, whole_sizes, scans = [], [], []
    for item, size in zip(items, sizes):
        if size > chunk_bytes and item.path.lower().endswith(".jsonl"):
            try:
                f, _size, _mtime_ns = filesystems.open(item.path)
                with f:
                    head = f.read(64 * 1024)
            except OSError:
                head = None
            ingestor = detect(Reachable(item.path, filesystems), head, ingestors) if head is not None else None
            if ingestor is not None and ingestor.line_records:
                scans.append(FileScan(item, ingestor.name, chunk_bytes, size, filesystems))
                continue
        whole.append(item)
        whole_sizes.append(size)
    return whole, whole_sizes, scans


def merge_pieces(results: list[BatchResult], scans: list[FileScan], store: Store) -> BatchResult:
    """One catalog row per large file from the rows of its pieces (or 'unchanged' when its bytes are).

    ``store``: the warehouse the pieces' files (``Part.path``, relative to its root) were written into."""
    merged = BatchResult(batch_no=0)
    by_path = {s.item.path: s for s in scans}
    pieces: dict[str, list[dict]] = {}
    for r in results:
        keep = []
        for row in r.sources:
            (pieces.setdefault(row["source_path"], []) if "chunk" in row else keep).append(row)
        r.sources = keep
    for path, rows in pieces.items():
        scan = by_path[path]
        if scan.item.previous_sha256 and scan.sha256 == scan.item.previous_sha256:
            # The same bytes as catalogued (only the mtime moved): keep the old rows.
            for r in results:
                if r.piece_of == path:
                    for part in r.parts.values():
                        remote_root.delete(store.filesystems, store.abspath(part.path))  # a local root or a URL alike
                    r.parts, r.records_ingested, r.records_quarantined = {}, 0, 0
            merged.unchanged.append((path, scan.mtime_ns))
            continue
        deps = DependsOn()
        for row in rows:
            deps = deps.merged(DependsOn.from_json(row["depends_on"]))
        row = dict(rows[0])
        row.pop("chunk")
        row.update(
            sha256=scan.sha256, size_bytes=scan.size, mtime_ns=scan.mtime_ns,
            records=sum(r["records"] for r in rows),
            records_ingested=sum(r["records_ingested"] for r in rows),
            records_quarantined=sum(r["records_quarantined"] for r in rows),
            depends_on=deps.to_json(),
        )
        merged.sources.append(row)
    return merged
