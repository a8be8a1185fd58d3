"""Splitting OpenAI files into records, and joining a batch's results to their requests by ``custom_id``.

A record is a line of a ``.jsonl`` file (locator = line number), or a ``.json`` file's chat
completion (an array's element, ``[3]``, or the whole file). A batch's input and output are two
files (three with OpenAI's error file) that name no one another, so each batch file looks at the
``.jsonl`` files beside it, in the same folder, for batch files of the other kind (their first bytes,
``SourceFile.peek_dependency``), and reads those whole (``read_dependency``): each is a dependency,
and a change to one re-ingests the other. The join, the same seen from either side:

* an output line **joins** its request when it succeeded (a chat completion: ``detect.succeeded``)
  and exactly one input line in the folder holds its ``custom_id`` (a ``custom_id`` is unique
  in one batch only: two batches in one folder may reuse ``request-1``);
* an input line so joined gives no rows of its own: its prompt is in its result's rows. Every other
  input line (no result beside it, a failed one, an ambiguous id) gives its prompt, response NULL.

Only files that are read whole (up to ``--max-record-mb``) join; a larger one is ingested alone, and
the file beside it says so in one quarantined record (whole-file locator). A joined record's raw text is its output
line, then its request's line, so a joined result that cannot be mapped loses neither.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import orjson

from warehouse.formatkit.readers import BOM, json_document_records, jsonl_records
from warehouse.formatkit.records import Record, RecordError
from warehouse.formatkit.source import SourceFile

from ..heads import is_json_lines
from .detect import INPUT, OUTPUT, kind_of, kind_of_head, succeeded

#: envelope keys: the request an output line joined, and an input line answered beside it
REQUEST, REQUEST_PATH, REQUEST_LINE, ANSWERED = "request", "request_path", "request_line", "answered"


def batch_records(src: SourceFile) -> Iterator[Record]:
    head = src.head.removeprefix(BOM)
    lines = src.path.lower().endswith(".jsonl") or is_json_lines(head)
    documents = jsonl_records(src) if lines else json_document_records(src)
    kind = kind_of_head(head) if src.path.lower().endswith(".jsonl") else None
    if kind not in (INPUT, OUTPUT):
        yield from documents
        return
    partner = INPUT if kind == OUTPUT else OUTPUT
    # an input's lines are joined only when no other input beside it holds their custom_id: it reads both kinds
    folder = _Folder.beside(src, (INPUT,) if kind == OUTPUT else (INPUT, OUTPUT), read=src.whole)
    if not src.whole:
        if folder.found(partner):
            yield _not_joined(f"{os.path.basename(src.path)} is {src.size:,} bytes, over the {src.max_record_bytes:,}-byte "
                              "record limit: its lines are ingested alone, not joined to the batch files beside it; "
                              "raise --max-record-mb to join them")
        yield from documents
        return
    for path in folder.refused.get(partner, ()):
        yield _not_joined(f"{os.path.basename(path)}, beside this file, is over the {src.max_record_bytes:,}-byte record "
                          "limit or unreadable: its lines and this file's were ingested alone, not joined; raise "
                          "--max-record-mb to join them")
    if kind == OUTPUT:
        yield from _results(documents, folder)
    else:
        yield from _requests(documents, src, folder)


def _results(documents: Iterator[Record], folder: "_Folder") -> Iterator[Record]:
    requests = folder.requests()
    for doc in documents:
        custom_id = doc.value.get("custom_id") if isinstance(doc.value, dict) else None
        found = requests.get(custom_id) if isinstance(custom_id, str) else None
        if doc.error is None and kind_of(doc.value) == OUTPUT and found is not None and len(found) == 1 and succeeded(doc.value):
            path, number, line = found[0]
            yield Record(doc.locator, doc.value, index=doc.index, raw=(doc.raw or b"") + b"\n" + line,
                         envelope={REQUEST: orjson.loads(line), REQUEST_PATH: path, REQUEST_LINE: number})
        else:
            yield doc


def _requests(documents: Iterator[Record], src: SourceFile, folder: "_Folder") -> Iterator[Record]:
    held = Counter(_ids(src.data()))
    for ids in folder.requests().items():
        held[ids[0]] += len(ids[1])
    answered = folder.answered()
    for doc in documents:
        custom_id = doc.value.get("custom_id") if isinstance(doc.value, dict) else None
        if (doc.error is None and kind_of(doc.value) == INPUT and isinstance(custom_id, str)
                and held[custom_id] == 1 and custom_id in answered):
            doc.envelope = {ANSWERED: answered[custom_id]}
        yield doc


@dataclass
class _Folder:
    """The batch files of one kind beside a file, read whole: ``(path, [(line number, bytes), ...])``."""

    files: list[tuple[str, list[tuple[int, bytes]]]] = field(default_factory=list)
    #: by kind, the files found beside it and not read whole (over the limit, unreadable, or not asked: ``read``)
    refused: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def beside(cls, src: SourceFile, kinds: tuple[str, ...], read: bool = True) -> "_Folder":
        out = cls()
        folder = os.path.dirname(src.path)
        for name in src.list_dependency_dir(folder):
            path = f"{folder}/{name}"
            if name.startswith(".") or not name.lower().endswith(".jsonl") or path == src.path:
                continue
            kind = None
            try:
                head = src.peek_dependency(path)
                kind = kind_of_head(head.removeprefix(BOM)) if head is not None else None
                if kind not in kinds:
                    continue
                data = src.read_dependency(path) if read else None
            except RecordError:  # ReferenceRefused: over the limit, unreadable (recorded as a dependency)
                data = None
            if data is not None:
                out.files.append((path, _lines(data)))
            elif kind in kinds:
                out.refused.setdefault(kind, []).append(path)
        return out

    def found(self, kind: str) -> bool:
        """Whether a file of ``kind`` lies beside it (read or not)."""
        return bool(self.refused.get(kind)) or any(kind_of_head(lines[0][1]) == kind for _p, lines in self.files if lines)

    def requests(self) -> dict[str, list[tuple[str, int, bytes]]]:
        """Each ``custom_id`` of the input files: the lines that hold it ``(path, line number, bytes)``."""
        found: dict[str, list[tuple[str, int, bytes]]] = {}
        for path, lines in self.files:
            for number, line in lines:
                value = _value(line)
                if kind_of(value) == INPUT and isinstance(value["custom_id"], str):
                    found.setdefault(value["custom_id"], []).append((path, number, line))
        return found

    def answered(self) -> dict[str, str]:
        """Each ``custom_id`` a result of the output files answers, with the file of its first result."""
        out: dict[str, str] = {}
        for path, lines in self.files:
            for _number, line in lines:
                value = _value(line)
                if kind_of(value) == OUTPUT and succeeded(value):
                    out.setdefault(value["custom_id"], path)
        return out


def _lines(data: bytes) -> list[tuple[int, bytes]]:
    """The non-blank lines of a file with their numbers (1-based), a BOM taken off the first."""
    out = []
    for n, line in enumerate(data.removeprefix(BOM).split(b"\n"), 1):
        if line.strip():
            out.append((n, line))
    return out


def _value(line: bytes):
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


def _ids(data: bytes) -> Iterator[str]:
    """The ``custom_id`` of each input line of a file."""
    for _number, line in _lines(data):
        value = _value(line)
        if kind_of(value) == INPUT and isinstance(value["custom_id"], str):
            yield value["custom_id"]


def _not_joined(message: str) -> Record:
    return Record("", error=RecordError(message, stage="read"), raw=b"", raw_size=0)
