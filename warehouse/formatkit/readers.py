"""Reading source files into records, with bounded memory: JSON documents and JSONL lines.

A file read whole (``SourceFile.whole``) is parsed with one ``orjson.loads``; a larger
one is streamed: JSONL line by line, a JSON array element by element (ijson). A single
record larger than ``max_record_bytes`` is quarantined with a message naming the
option that raises the limit, never loaded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson

from warehouse.errors import RecordError
from warehouse.formatkit.opening import CHUNK
from warehouse.formatkit.records import Record
from warehouse.formatkit.source import SourceFile

BOM = b"\xef\xbb\xbf"
RAW_LIMIT = 64 * 1024  # bytes of a bad record kept in quarantine.raw


# --- decoding ------------------------------------------------------------------


def decode_json(b: bytes) -> Any:
    """Parse one JSON document; raise RecordError(stage="decode") saying what is wrong."""
    try:
        return orjson.loads(b)
    except orjson.JSONDecodeError as e:
        orjson_error = e
    try:
        b.decode("utf-8")
    except UnicodeDecodeError as u:
        raise RecordError(
            f"invalid UTF-8 at byte {u.start}: the source must be UTF-8 "
            f"(re-encode it, e.g. `iconv -f latin1 -t utf-8`)",
            stage="decode",
        ) from None
    if b"NaN" in b or b"Infinity" in b:
        # Python's json module writes NaN/Infinity for float scores (research code
        # does); they are not JSON, but the values are real, so read them.
        try:
            value = json.loads(b)
            orjson.dumps(value)  # rejects lone surrogates the stdlib let through
            return value
        except (ValueError, orjson.JSONEncodeError):
            pass
    raise RecordError(f"invalid JSON: {orjson_error}", stage="decode")


def _raw(b: bytes) -> tuple[bytes, int]:
    return b[:RAW_LIMIT], len(b)


# --- whole-document files (.json) ---------------------------------------------


def json_document_records(src: SourceFile) -> Iterator[Record]:
    """Records of a .json file: each element of a top-level array, else the whole object."""
    if src.whole:
        data = src.data()
        if data.startswith(BOM):
            data = data[len(BOM) :]
        if not data.strip():
            yield Record("", error=RecordError("empty file: expected a JSON document", stage="decode"), raw=b"", raw_size=0)
            return
        try:
            value = decode_json(data)
        except RecordError as e:
            raw, size = _raw(data)
            yield Record("", error=e, raw=raw, raw_size=size)
            return
        if isinstance(value, list):
            for i, element in enumerate(value):
                yield Record(f"[{i}]", element, index=i)
        else:
            yield Record("", value)
        return
    yield from _stream_array(src)


def _too_big(src: SourceFile, why: str = "") -> Record:
    """The quarantined record of a file over the size limit that cannot be read in pieces."""
    return Record(
        "",
        error=RecordError(
            f"file is {src.size} bytes, over the {src.max_record_bytes}-byte record limit{why}; "
            "raise --max-record-mb to read it",
            stage="read",
        ),
        raw=src.head[:RAW_LIMIT],
        raw_size=src.size,
    )


def json_whole_record(src: SourceFile) -> Record:
    """The whole .json file as one record (for files whose meaning is the whole document)."""
    if not src.whole:
        return _too_big(src)
    data = src.data()
    if data.startswith(BOM):
        data = data[len(BOM) :]
    if not data.strip():
        return Record("", error=RecordError("empty file: expected a JSON document", stage="decode"), raw=b"", raw_size=0)
    try:
        return Record("", decode_json(data))
    except RecordError as e:
        raw, size = _raw(data)
        return Record("", error=e, raw=raw, raw_size=size)


def _stream_array(src: SourceFile) -> Iterator[Record]:
    import ijson  # imported here: only large files need it

    first = src.head.lstrip(BOM).lstrip()[:1]
    if first != b"[":
        yield _too_big(src, ", and is a single JSON object (only arrays are streamed)")
        return
    stream = src.stream()
    if src.head.startswith(BOM):
        stream.read(len(BOM))
    done = 0  # elements read
    try:
        for element in ijson.items(stream, "item", use_float=True):
            yield Record(f"[{done}]", element, index=done)
            done += 1
    except (ijson.JSONError, ijson.IncompleteJSONError, UnicodeDecodeError) as e:
        reason = e.args[0] if e.args else e
        reason = reason.decode("utf-8", "backslashreplace") if isinstance(reason, bytes) else str(reason)
        if isinstance(e, UnicodeDecodeError) or "UTF8" in reason:  # yajl's "invalid bytes in UTF8 string"
            message = (f"invalid UTF-8 in element [{done}] of a streamed array: the source must be UTF-8 "
                       f"(re-encode it, e.g. `iconv -f latin1 -t utf-8`); the rest of the file was not read")
        else:
            after = f"after element {done - 1}" if done else "before its first element"
            message = f"invalid JSON in a streamed array {after}: {reason.splitlines()[0]}; the rest of the file was not read"
        yield Record(f"[{done}:]" if done else "", error=RecordError(message, stage="decode"), raw=b"", raw_size=0)


# --- line files (.jsonl) ---------------------------------------------------------


def jsonl_records(src: SourceFile) -> Iterator[Record]:
    """Records of a JSONL file: one per non-blank line; locator = 1-based line number."""
    for lineno, line, size in iter_lines(src):
        locator = str(lineno)
        if line is None:
            yield Record(
                locator,
                index=lineno - 1,
                error=RecordError(
                    f"line is {size} bytes, over the {src.max_record_bytes}-byte record limit; "
                    "raise --max-record-mb to read it",
                    stage="read",
                ),
                raw=b"",
                raw_size=size,
            )
            continue
        if lineno == 1 and line.startswith(BOM):
            line = line[len(BOM) :]
        if not line.strip():
            continue
        try:
            value = decode_json(line)
        except RecordError as e:
            raw, size = _raw(line)
            yield Record(locator, index=lineno - 1, error=e, raw=raw, raw_size=size)
            continue
        yield Record(locator, value, index=lineno - 1, raw=line)


def iter_lines(src: SourceFile) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, line bytes or None when over the limit, line size)."""
    first = getattr(src, "first_line", 1)
    if src.whole:
        data = src.data()
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        for n, line in enumerate(lines, first):
            yield n, line, len(line)
        return
    limit = src.max_record_bytes
    stream = src.stream()
    n = first - 1
    pending = bytearray()
    skipping = False  # inside a line already over the limit
    skipped = 0
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                part = chunk[start:]
                if skipping:
                    skipped += len(part)
                else:
                    pending += part
                    if len(pending) > limit:
                        skipping, skipped = True, len(pending)
                        pending = bytearray()
                break
            part = chunk[start:nl]
            n += 1
            if skipping:
                yield n, None, skipped + len(part)
                skipping, skipped = False, 0
            elif len(pending) + len(part) > limit:
                yield n, None, len(pending) + len(part)
                pending = bytearray()
            else:
                pending += part
                yield n, bytes(pending), len(pending)
                pending = bytearray()
            start = nl + 1
    if skipping:
        yield n + 1, None, skipped
    elif pending:
        yield n + 1, bytes(pending), len(pending)
