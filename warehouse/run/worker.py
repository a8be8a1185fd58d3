"""Ingesting one batch of files: the part of a run that runs in parallel, and what to do with each file.

A batch (``BatchSpec``) is a list of files (``WorkItem``) and the run's settings; its
result (``BatchResult``) is the catalog rows of its files and the Parquet files it
wrote, which the runner commits. Batches are run by an engine (``pool.py``).

``BatchIngest`` decides, file by file: catalogued with a reason and never opened (a
format knows it holds no records), read from its path alone, passed over (not JSON, claimed
by no format, not named), unreadable, unchanged (its bytes are the catalogued ones: not parsed), empty,
unrecognised (no format claims it), or read: through the format's fast path, or
record by record. What it reads goes to the batch's ``RecordSink`` (``sink.py``), which
maps, validates, writes and quarantines.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from warehouse import urlpaths
from warehouse.errors import RecordError, StrictFailure, StrictStop, UsageError
from warehouse.filesystems import FileSystems, Reachable
from warehouse.formatkit.dependencies import DependsOn
from warehouse.formatkit.ingestor import JSON_SUFFIXES, Ingestor
from warehouse.formatkit.readers import BOM, RAW_LIMIT
from warehouse.formatkit.records import Record
from warehouse.formatkit.registry import Registry
from warehouse.formatkit.source import SourceFile
from warehouse.run.encodings import what_it_is
from warehouse.run.sink import Counts, RecordSink
from warehouse.store.delta import Part
from warehouse.store.storage import Store

ProgressFn = Callable[[int, int], None]  # (files done, bytes done) increments

#: whole .json files a format's document path takes, gathered before they are mapped together
#: (their bytes stay in memory until then: 1024 inference files are ~8 MB)
DOCUMENTS_AT_ONCE = 1024


@dataclass
class WorkItem:
    path: str
    previous_sha256: str | None = None  # catalogued digest: equal bytes mean "unchanged"
    explicit: bool = False  # named on the command line: never passed over silently
    #: a piece of a large JSONL file: (start byte, end byte, first line), its format detected by the runner
    chunk: tuple[int, int, int] | None = None
    source_format: str | None = None
    tree: str | None = None  # the PATH it was found under; None: the file's directory


@dataclass
class BatchSpec:
    run_id: str
    batch_no: int
    root: str
    items: list[WorkItem]
    registry: Registry  # the formats of the run: each worker loads them from it, by name
    forced_format: str | None = None
    strict: bool = False
    max_record_bytes: int = 64 * 1024 * 1024
    options: dict = field(default_factory=dict)  # run options ingestors may ask for (src.option)
    fast_paths: bool = True  # ingestors' vectorized paths; off only to check them against the record path
    #: how to reach sources given as URLs and a remote root (``FileSystems``); never stored, never shown
    storage_options: dict = field(default_factory=dict, repr=False)


@dataclass
class BatchResult:
    batch_no: int
    parts: dict[str, Part] = field(default_factory=dict)  # table -> the file written (path relative to the root)
    sources: list[dict] = field(default_factory=list)  # catalog rows of changed / new files
    unchanged: list[tuple[str, int]] = field(default_factory=list)  # (path, mtime_ns): same bytes
    strict_failure: StrictFailure | None = None
    records_ingested: int = 0
    records_quarantined: int = 0
    bytes_read: int = 0
    ignored: int = 0  # walked files of a non-JSON kind that no format claims (vectors .pt, a zip of another tool, ...)
    piece_of: str | None = None  # the large file this batch ingested a piece of


def detect(path: str, head: bytes, ingestors: Sequence[Ingestor]) -> Ingestor | None:
    """The first ingestor that claims the file. ``head`` is given without a UTF-8 BOM."""
    name = path.lower()
    head = head.removeprefix(BOM)
    for ing in ingestors:
        if name.endswith(ing.suffixes) and ing.sniff(path, head):
            return ing
    return None


@dataclass(slots=True)
class _Document:
    """A whole file the format's document path took (closed, its bytes kept): it waits for the
    others of its group."""

    path: str
    ingestor: Ingestor
    src: SourceFile


class BatchIngest:
    def __init__(self, spec: BatchSpec, progress: ProgressFn | None = None, filesystems: FileSystems | None = None):
        """``filesystems``: the run's, when the batch runs in its process (what the walk listed answers the
        stats); a worker process makes its own from the spec's storage options."""
        self.spec = spec
        self.filesystems = filesystems or FileSystems.for_path(spec.root, spec.storage_options)
        self.ingestors = spec.registry.ingestors()  # in detection order
        self.by_name = {i.name: i for i in self.ingestors}
        self.path_only = [i for i in self.ingestors if not i.reads_content]
        self.ingestors = [i for i in self.ingestors if i.reads_content]
        #: the kinds of file the formats that read content declare: looked at, and passed over when none claims one
        self.content_suffixes = tuple(sorted({s for i in self.ingestors for s in i.suffixes}))
        self.progress = progress or (lambda files, nbytes: None)
        self.sink = RecordSink(Store(spec.root, self.filesystems), spec.run_id, spec.batch_no, strict=spec.strict)
        self.result = BatchResult(spec.batch_no)
        self.now = dt.datetime.now(dt.timezone.utc)
        self._documents: list[_Document] = []  # taken by a format's document path, not mapped yet

    # --- entry point ----------------------------------------------------------

    def run(self) -> BatchResult:
        try:
            for item in self.spec.items:
                self._file(item)
            self._map_documents()
            self.sink.flush()
        except StrictStop as stop:
            self.result.strict_failure = stop.failure
            self.sink.discard()
            return self._counted()
        except BaseException:
            self.sink.discard()
            raise
        self.result.parts = self.sink.close()
        return self._counted()

    def _counted(self) -> BatchResult:
        self.result.sources = self.sink.sources
        self.result.records_ingested = self.sink.records_ingested
        self.result.records_quarantined = self.sink.records_quarantined
        return self.result

    # --- one file ---------------------------------------------------------------

    def _file(self, item: WorkItem) -> None:
        spec = self.spec
        path = item.path
        counts = Counts()
        if item.chunk is None and self._not_records(item, counts):
            return
        # JSON files, and files named on the command line, are always read: one no format claims is
        # quarantined. A file of another kind is read when a format declares its suffix (a container
        # it reads), and passed over, as a tensor file is, when no format claims its content.
        looked_at = item.explicit or path.lower().endswith(JSON_SUFFIXES)
        if not spec.forced_format:
            by_path = next((i for i in self.path_only if path.lower().endswith(i.suffixes) and i.sniff(path, b"")), None)
            if by_path is not None:
                self._path_only(item, by_path, counts)
                return
            if not looked_at and not path.lower().endswith(self.content_suffixes):
                self._passed_over(0)
                return
        elif not self.by_name[spec.forced_format].reads_content:
            self._path_only(item, self.by_name[spec.forced_format], counts)
            return
        try:
            src = SourceFile(path, max_record_bytes=spec.max_record_bytes, options=spec.options, chunk=item.chunk,
                             tree=item.tree, filesystems=self.filesystems)
        except OSError as e:
            self._unreadable(path, e, counts)
            return
        self.sink.note_tree(path, src.tree)
        if item.chunk is not None:
            with src:
                self._chunk(item, src, counts)
            return
        with src:
            self.result.bytes_read += src.size
            if item.previous_sha256 and _digest(src, path) == item.previous_sha256:
                self.result.unchanged.append((path, src.mtime_ns))
                self.progress(1, src.size)
                return
            if not spec.forced_format and looked_at and src.size <= len(src.head) and not src.head.removeprefix(BOM).strip():
                self._empty(path, src, counts)
                return
            if spec.forced_format:
                ingestor = self.by_name[spec.forced_format]
            else:
                ingestor = detect(Reachable(path, self.filesystems), src.head, self.ingestors)
            if ingestor is None and not looked_at:
                self._passed_over(src.size)
                return
            not_text = what_it_is(src.head)
            if not_text is not None and not _a_container_of(ingestor, path, src.head, spec.forced_format):
                # compressed, or UTF-16: no format reads it, and none should try
                self.sink.quarantine(path, spec.forced_format, Record("", raw=src.head[:RAW_LIMIT], raw_size=src.size),
                                     RecordError(not_text, stage="decode"), counts)
                self._catalog(path, spec.forced_format, src.sha256(), src.size, src.mtime_ns, counts, "unrecognised",
                              src.dependencies, src.tree)
                self.progress(1, src.size)
                return
            fmt = ingestor.name if ingestor else None
            if ingestor is None:
                tried = ", ".join(i.name for i in self.ingestors)
                self.sink.quarantine(
                    path, None, Record("", raw=src.head[:RAW_LIMIT], raw_size=src.size),
                    RecordError(
                        f"no format recognised this file (tried: {tried}); "
                        "pass --format NAME to read it as one of them",
                        stage="detect",
                    ),
                    counts,
                )
                status = "unrecognised"
            elif self._document(path, ingestor, src):
                self.progress(1, src.size)
                return  # catalogued once its group is mapped
            else:
                self._map_documents()  # the files before it keep their place in the tables
                status = "ingested" if self._fast(path, ingestor, src, counts) else self._records(path, ingestor, src, counts)
            self._catalog(path, fmt, src.sha256(), src.size, src.mtime_ns, counts, status, src.dependencies, src.tree)
            self.progress(1, src.size)

    def _passed_over(self, nbytes: int) -> None:
        """A walked file of a kind that is not JSON, which no format claims: not a source."""
        self.result.ignored += 1
        self.progress(1, nbytes)

    def _not_records(self, item: WorkItem, counts: Counts) -> bool:
        """A file its format knows holds no records: catalogued with the reason, never opened."""
        candidates = [self.by_name[self.spec.forced_format]] if self.spec.forced_format else self.by_name.values()
        for ingestor in candidates:
            reason = ingestor.not_records(item.path)
            if reason:
                break
        else:
            return False
        try:
            size, mtime_ns = self.filesystems.size_and_mtime(item.path)
        except OSError as e:
            self._unreadable(item.path, e, counts)
            return True
        self._catalog(item.path, ingestor.name, None, size, mtime_ns, counts, "not_records",
                      tree=_tree_of(item), reason=reason)
        self.progress(1, 0)
        return True

    def _chunk(self, item: WorkItem, src: SourceFile, counts: Counts) -> None:
        """A piece of a large JSONL file: its rows, and a partial catalog row the runner merges."""
        ingestor = self.by_name[item.source_format]
        self.result.piece_of = item.path
        self.result.bytes_read += src.size
        if not self._fast(item.path, ingestor, src, counts):
            self._records(item.path, ingestor, src, counts)
        self._catalog(item.path, ingestor.name, None, src.size, src.mtime_ns, counts, "ingested", src.dependencies,
                      src.tree, chunk=item.chunk)
        self.progress(0, src.size)

    def _fast(self, path: str, ingestor: Ingestor, src: SourceFile, counts: Counts) -> bool:
        """Try the ingestor's vectorized path on a JSONL file or piece; False when it declines."""
        if not (self.spec.fast_paths and src.whole and path.lower().endswith(".jsonl")):
            return False
        if not ingestor.fast_path:
            return False
        result = ingestor.fast_lines(src.buffer(), path, src.first_line)
        if result is None or not self.sink.tables(result.tables, result.records, counts, result.validated):
            return False
        # The lines the fast path left alone go through the record path, one at a time.
        for line_number, line in result.rest:
            self._records(path, ingestor, SourceFile.of_lines(src, line, line_number), counts)
        return True

    def _document(self, path: str, ingestor: Ingestor, src: SourceFile) -> bool:
        """Gather a whole .json file for its format's document path; False when the format does not take it."""
        if not (self.spec.fast_paths and ingestor.fast_documents_path and src.whole and path.lower().endswith(".json")):
            return False
        if not ingestor.fast_document(path, src.head.removeprefix(BOM), src.data()):
            return False
        if self._documents and self._documents[0].ingestor is not ingestor:
            self._map_documents()
        self._documents.append(_Document(path, ingestor, src))
        if len(self._documents) >= DOCUMENTS_AT_ONCE:
            self._map_documents()
        return True

    def _map_documents(self) -> None:
        """Map the gathered files together and catalog them; the files the format leaves (or all,
        when its tables are refused) go through ``records``/``map``: mapped or quarantined exactly."""
        docs, self._documents = self._documents, []
        if not docs:
            return
        ingestor = docs[0].ingestor
        result = ingestor.fast_documents([(d.path, d.src.data()) for d in docs])
        kept = result is not None and self.sink.tables(result.tables, result.records, Counts(), result.validated)
        left = set(result.rest) if kept else set(range(len(docs)))
        for i, d in enumerate(docs):
            counts, src = Counts(), d.src
            if i in left:
                status = self._records(d.path, ingestor, src, counts)
            else:
                counts.seen = counts.ingested = 1
                status = "ingested"
            self._catalog(d.path, ingestor.name, src.sha256(), src.size, src.mtime_ns, counts, status,
                          src.dependencies, src.tree)

    def _records(self, path: str, ingestor: Ingestor, src: SourceFile, counts: Counts) -> str:
        """Feed the file's records through; a failing reader loses no count and stops no run."""
        last = ""
        try:
            for record in ingestor.records(src):
                last = record.locator
                self.sink.record(path, ingestor, record, counts)
        except (StrictStop, UsageError):  # a tool the run was given failed: no fault of the file
            raise
        except OSError as e:
            self.sink.quarantine(path, ingestor.name, Record(""), RecordError(f"read failed: {e}", stage="read"), counts)
            return "unreadable"
        except RecordError as e:  # the reader met a file it may not read (ReferenceRefused): say so, keep the bytes
            where = f"after {last}: " if last else ""
            err = RecordError(f"{where}{e.message}; the rest of the file was not read", stage=e.stage)
            rest = Record("") if last else Record("", raw=src.head[:RAW_LIMIT], raw_size=src.size)
            self.sink.quarantine(path, ingestor.name, rest, err, counts)
        except Exception as e:  # a bug in the reader: the rest of the file counts as one quarantined record
            where = f"after {last}" if last else "at the start"
            err = RecordError(
                f"internal error in the {ingestor.name} reader {where} ({type(e).__name__}: {e}); "
                "the rest of the file was not read; please report it",
                stage="read",
            )
            self.sink.quarantine(path, ingestor.name, Record(""), err, counts)
        return "ingested"

    def _empty(self, path: str, src: SourceFile, counts: Counts) -> None:
        """An empty (or blank) file: no format to detect. JSONL with no lines holds no
        record; a .json file must hold a document, so it is one bad record."""
        status = "empty"
        if not path.lower().endswith(".jsonl"):
            self.sink.quarantine(path, None, Record("", raw=b"", raw_size=src.size),
                                 RecordError("empty file: expected a JSON document", stage="decode"), counts)
            status = "ingested"
        self._catalog(path, None, src.sha256(), src.size, src.mtime_ns, counts, status, tree=src.tree)
        self.progress(1, src.size)

    def _path_only(self, item: WorkItem, ingestor: Ingestor, counts: Counts) -> None:
        """A source read from its path and stat alone: the file is never opened."""
        path = item.path
        try:
            size, mtime_ns = self.filesystems.size_and_mtime(path)
        except OSError as e:
            self._unreadable(path, e, counts)
            return
        self.sink.record(path, ingestor, Record("", {"size": size, "mtime_ns": mtime_ns}), counts)
        self._catalog(path, ingestor.name, None, size, mtime_ns, counts, "ingested", tree=_tree_of(item))
        self.progress(1, 0)

    def _unreadable(self, path: str, e: OSError, counts: Counts) -> None:
        msg = "permission denied (check the file's permissions)" if isinstance(e, PermissionError) else (e.strerror or str(e))
        self.unreachable(path, msg, counts)

    def unreachable(self, path: str, message: str, counts: Counts | None = None) -> None:
        """Catalog a file or directory that could not be opened, with a quarantine row saying why."""
        counts = counts or Counts()
        try:
            self.sink.quarantine(path, None, Record(""), RecordError(f"cannot read: {message}", stage="read"), counts)
        except StrictStop as stop:
            self.result.strict_failure = stop.failure
            return
        self._catalog(path, None, None, None, None, counts, "unreadable")
        self.progress(1, 0)

    def _catalog(self, path, fmt, sha, size, mtime_ns, counts: Counts, status: str, dependencies=(),
                 tree: str | None = None, reason: str | None = None, chunk: tuple[int, int, int] | None = None) -> None:
        """The file's ``sources`` row (a piece's carries its ``chunk``: the runner merges those)."""
        row = {
            "source_path": path,
            "source_tree": tree,
            "source_format": fmt,
            "sha256": sha,
            "size_bytes": size,
            "mtime_ns": mtime_ns,
            "status": status,
            "reason": reason,
            "depends_on": DependsOn.of(dependencies).to_json(),
            "ingest_run": self.spec.run_id,
            "ingested_at": self.now,
        }
        if chunk is not None:
            row["chunk"] = chunk
        self.sink.source(row, counts)  # the counts are final only after the pending records are flushed


def _tree_of(item: WorkItem) -> str:
    return urlpaths.normpath(item.tree) if item.tree else os.path.dirname(item.path)


def _digest(src: SourceFile, path: str) -> str:
    """SHA-256 of the file. Whole files are hashed already; a streamed file gets
    its own pass, so an unchanged large file is never parsed."""
    if src.whole:
        return src.sha256()
    h = hashlib.sha256()
    left = src.size  # the bytes the file had when opened, as the parse will read
    f, _size, _mtime_ns = src.filesystems.open(path)
    with f:
        while left > 0 and (chunk := f.read(min(1 << 20, left))):
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


def _a_container_of(ingestor: Ingestor | None, path: str, head: bytes, forced: str | None) -> bool:
    """Whether a file whose first bytes are not text is a container its format reads (an archive of a
    suffix the format declares): then the format reads it, or says why it is not one of its own."""
    if ingestor is None:
        return False
    declared = tuple(s for s in ingestor.suffixes if s not in JSON_SUFFIXES)
    return bool(declared) and path.lower().endswith(declared) and (forced is not None or ingestor.sniff(path, head))
