"""Reading source files into records, with bounded memory.

A file is read once: the bytes that are parsed are the bytes that are hashed.
Files up to ``whole_limit`` are read whole (fast path: one ``orjson.loads``);
larger ones are streamed: JSONL line by line, JSON arrays element by element
(ijson). A single record larger than ``max_record_bytes`` is quarantined with
a message naming the option that raises the limit, never loaded.

Only regular files are read (a FIFO would block the run forever, ``/dev/zero``
never ends), and never more than their size said when opened. A file's rows may
depend on other files (``read_dependency``); those paths often come from data,
so they must lie inside the *tree* the file was found under (the PATH given to
``ingest``): a reference outside it is refused, never opened.

A source may be an object (``s3://bucket/key``, see ``remote.py``): it is read the
same way, in ranged reads of a buffer at a time, and its references resolve by
name inside its bucket prefix exactly as a local file's inside its tree.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import stat
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np
import orjson

from warehouse import remote, urlpaths
from warehouse.errors import RecordError, ReferenceRefused
from warehouse.formatkit.dependencies import Dependency
from warehouse.formatkit.records import Record

BOM = b"\xef\xbb\xbf"
HEAD_BYTES = 64 * 1024
RAW_LIMIT = 64 * 1024  # bytes of a bad record kept in quarantine.raw
DEFAULT_MAX_RECORD_BYTES = 64 * 1024 * 1024
CHUNK = 1 << 20


def read_piece(f: BinaryIO, size: int):
    """``size`` bytes of ``f`` from where it stands (fewer at its end), read into memory of Arrow's
    pool: a worker reads a 32 MB piece after another, and Arrow's allocator hands back the pages
    of the last one, while a new ``bytes`` of that size is fresh memory from the kernel, every
    page of it faulted in and zeroed first (0.4 -> 0.2 CPU-s per GiB). ``bytes`` where the file
    cannot read into a buffer (``readinto``)."""
    import pyarrow as pa

    if not hasattr(f, "readinto"):
        return f.read(size)
    buf = pa.allocate_buffer(size)
    view, got = memoryview(buf), 0
    while got < size and (n := f.readinto(view[got:])):
        got += n
    view.release()
    return buf if got == size else buf.slice(0, got)


def open_regular(path: str) -> BinaryIO:
    """Open a regular file for reading, or raise OSError saying why not.

    O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer;
    for a regular file the flag changes nothing.
    """
    extra = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)  # POSIX flags; Windows has no FIFOs to fear
    f = open(path, "rb", opener=lambda p, flags: os.open(p, flags | extra))
    try:
        mode = os.fstat(f.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or socket); only regular files are read")
    except BaseException:
        f.close()
        raise
    return f


def open_source(path: str) -> tuple[BinaryIO, int, int]:
    """(file, size, mtime_ns) of a regular local file or an object (a URL); OSError saying why not."""
    if urlpaths.is_url(path):
        return remote.open_file(path)
    f = open_regular(path)
    st = os.fstat(f.fileno())
    return f, st.st_size, st.st_mtime_ns


def normpath(path: str) -> str:
    """A path made absolute and normal, ``..`` resolved by name; a URL stays a URL (``urlpaths.normpath``)."""
    return urlpaths.normpath(path)


def isdir(path: str) -> bool:
    """True when ``path`` is a directory, or a prefix that holds objects."""
    return remote.isdir(path)


class SourceFile:
    """An open source file: its stat, its first bytes for detection, and its bytes once.

    Use ``data()`` (whole file) or ``stream()`` (a reader), not both; ``sha256()``
    drains whatever was not read so the digest always covers the whole file.
    """

    def __init__(
        self,
        path: str,
        *,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        options: dict | None = None,
        chunk: tuple[int, int, int] | None = None,
        tree: str | None = None,
    ):
        """``chunk`` = (start byte, end byte, number of the first line): read only that
        piece of a JSONL file (a piece ends at a line end, so it holds whole lines).
        ``tree``: the directory the file was found under (default: the file's own);
        paths taken from the file's data must lie inside it."""
        self.path = path
        self.tree = normpath(tree) if tree else os.path.dirname(normpath(path))
        self.max_record_bytes = max_record_bytes
        self.first_line = chunk[2] if chunk else 1
        #: run options an ingestor may use (e.g. ``tokenizer``: a local tokenizer directory)
        self.options = options or {}
        #: other files and directories this file's rows were built from (see ``read_dependency``)
        self.dependencies: list[Dependency] = []
        self._f, self.size, self.mtime_ns = open_source(path)
        self._hash = hashlib.sha256()
        self._hashed = False  # every byte hashed already (``seekable``): the digest is final
        self._data: bytes | None = None
        self._range: tuple[int, int] | None = None
        if chunk is not None and chunk[1] - chunk[0] <= max_record_bytes:
            self._f.seek(chunk[0])
            self._data = read_piece(self._f, chunk[1] - chunk[0])
            self.size = len(self._data)
            self.head = bytes(memoryview(self._data)[:HEAD_BYTES])
        elif chunk is not None:  # a piece that is one giant line: streamed like a large file
            self._range = (chunk[0], chunk[1])
            self.size = chunk[1] - chunk[0]
            self._f.seek(chunk[0])
            self.head = self._f.read(min(HEAD_BYTES, self.size))
            self._f.seek(chunk[0])
        elif self.size <= max_record_bytes:
            self._data = self._f.read(self.size)  # what the size said: a growing file cannot run on
            self._hash.update(self._data)
            self.size = len(self._data)
            self.head = self._data[:HEAD_BYTES]
        else:
            self._range = (0, self.size)
            self.head = self._f.read(HEAD_BYTES)
            self._f.seek(0)
        self._stream: _HashingReader | None = None
        self._seeking = False  # ``seekable()`` handed out the open file: ``sha256()`` hashes it in a pass of its own

    @classmethod
    def of_lines(cls, parent: "SourceFile", data: bytes, first_line: int) -> "SourceFile":
        """Lines of ``parent`` already read (``data``, starting at line ``first_line``) as a
        source of their own: how a fast path hands the lines it does not map to the record path.
        Nothing is opened; dependencies the reader records are the parent's."""
        src = cls.__new__(cls)
        src.path, src.max_record_bytes, src.options = parent.path, parent.max_record_bytes, parent.options
        src.first_line, src.dependencies = first_line, parent.dependencies
        src._f = io.BytesIO(data)
        src.size, src.mtime_ns = len(data), parent.mtime_ns
        src._hash, src._data, src._range, src._stream = hashlib.sha256(data), data, None, None
        src._seeking = False
        src.head = data[:HEAD_BYTES]
        return src

    @property
    def whole(self) -> bool:
        return self._data is not None

    def data(self) -> bytes:
        if self._data is None:
            raise RuntimeError("file too large to read whole; use stream()")
        if not isinstance(self._data, bytes):  # a piece read into Arrow's memory (read_piece)
            self._data = self._data.to_pybytes()
        return self._data

    def buffer(self):
        """The bytes read, as they were read: a piece of a large file is an Arrow buffer
        (``read_piece``), anything else ``bytes``; both hold the buffer protocol. For fast
        paths, which need no ``bytes`` methods; ``data()`` is the same bytes as ``bytes``."""
        if self._data is None:
            raise RuntimeError("file too large to read whole; use stream()")
        return self._data

    def stream(self) -> BinaryIO:
        if self._data is not None:
            return io.BytesIO(self._data)
        if self._seeking:
            raise RuntimeError("the file was read with seekable(); stream() would hash a part of it twice")
        if self._stream is None:
            self._stream = _HashingReader(self._f, self._hash, self._range[1] if self._range else None)
        return self._stream  # type: ignore[return-value]

    def seekable(self) -> BinaryIO:
        """The file for reads at any place, for containers read from an index (a zip's directory is at
        its end): the bytes read whole, when they were, else the open file itself, read wherever the
        caller seeks (of a large file, only the parts the format needs are read). Not with ``stream()``.

        Such reads cannot be hashed as they go, so ``sha256()`` then hashes the file in a pass of its
        own, from its start to the size it had when opened, as an unchanged large file is hashed
        (``worker._digest``): a file rewritten during the read may have been read in another state
        than the one hashed, which a later run sees as a change."""
        if self._data is not None:
            return io.BytesIO(self.data())
        if self._range != (0, self.size) or self._stream is not None:
            raise RuntimeError("seekable() reads a whole file that stream() has not begun to read")
        self._seeking = True
        return self._f

    def sha256(self) -> str:
        if self._data is None and self._seeking:
            self._seeking = False  # hashed once: a second call finds the file read to its end
            self._f.seek(0)
            left = self.size
            while left > 0 and (chunk := self._f.read(min(CHUNK, left))):
                self._hash.update(chunk)
                left -= len(chunk)
            self._stream = _HashingReader(self._f, self._hash, self.size)  # at the end: reads nothing more
        elif self._data is None:
            reader = self.stream()
            while reader.read(CHUNK):
                pass
        return self._hash.hexdigest()

    def reference(self, path: str) -> str:
        """``path`` as read: absolute, ``..`` resolved by name; ReferenceRefused when it is
        outside the tree this file was found under (it came from the file's data)."""
        if urlpaths.is_url(path):
            p = normpath(path)
        elif not urlpaths.is_url(self.path):
            p = normpath(os.path.join(os.path.dirname(normpath(self.path)), path))
        else:  # inside a bucket: a path from the data resolves below the bucket, never on this machine
            p = normpath(os.path.dirname(self.path) + "/" + path) if not path.startswith("/") else path
        if not urlpaths.inside(p, self.tree):
            self.dependencies.append(Dependency.refused(p, self.tree))
            raise ReferenceRefused(
                f"{path} is outside {self.tree}, the path being ingested: a file is read only from inside "
                "the paths given to ingest (ingest a directory that holds both)"
            )
        return p

    def read_dependency(self, path: str, *, from_data: bool = True) -> bytes | None:
        """Bytes of another file this file's rows depend on (None when it does not exist).

        The catalog remembers the file's size, mtime and digest: when it changes,
        appears or disappears, this file is ingested again, so rows built from
        two files come out the same whichever of them was met first.

        Raises ReferenceRefused (a RecordError) when the file may not be read: outside
        the tree (unless ``from_data=False``: a path that does not come from the file's data,
        such as an option the user gave or a sibling the format's layout names),
        not a regular file, over the record limit, or unreadable. A directory counts as
        no file there.
        """
        path = self.reference(path) if from_data else normpath(path)
        if urlpaths.is_url(path):
            return self._read_object(path)
        try:
            with open_regular(path) as f:
                st = os.fstat(f.fileno())
                if st.st_size > self.max_record_bytes:
                    self.dependencies.append(Dependency.file(path, mtime_ns=st.st_mtime_ns))  # re-read when it changes
                    raise ReferenceRefused(
                        f"{path}: {st.st_size} bytes, over the {self.max_record_bytes}-byte record limit; "
                        "raise --max-record-mb to read it"
                    )
                data = f.read(st.st_size)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            self.dependencies.append(Dependency.file(path))  # absent: read when it appears
            return None
        except OSError as e:  # unreadable, or not a regular file: tried again next run
            self.dependencies.append(Dependency.file(path))
            raise ReferenceRefused(f"cannot read {path}: {e.strerror or e}") from None
        self._read_whole(Dependency.file(path, len(data), st.st_mtime_ns, hashlib.sha256(data).hexdigest()))
        return data

    def peek_dependency(self, path: str, size: int = HEAD_BYTES) -> bytes | None:
        """The first ``size`` bytes of another file in this file's tree (None when it does not exist),
        to tell whether this file's rows depend on it (a sibling of another kind: a batch's output
        beside its input). It is recorded by its size and mtime, so a change re-ingests this file; read
        the file with ``read_dependency`` once it is known to matter.

        Raises ReferenceRefused as ``read_dependency`` does (outside the tree, not a regular file, unreadable).
        """
        path = self.reference(path)
        try:
            f, total, mtime_ns = open_source(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            self.dependencies.append(Dependency.file(path))  # absent: read when it appears
            return None
        except OSError as e:
            self.dependencies.append(Dependency.file(path))
            raise ReferenceRefused(f"cannot read {path}: {e.strerror or e}") from None
        with f:
            try:
                head = f.read(size)
            except OSError as e:
                self.dependencies.append(Dependency.file(path))
                raise ReferenceRefused(f"cannot read {path}: {e.strerror or e}") from None
        self.dependencies.append(Dependency.file(path, total, mtime_ns))  # no digest: only its start was read
        return head

    def _read_object(self, url: str) -> bytes | None:
        """``read_dependency`` of an object: the same rules, through its listing entry or a HEAD."""
        try:
            found = remote.stat(url)
            if found is None or found[0] != "file":
                self.dependencies.append(Dependency.file(url))
                return None
            _, size, mtime_ns = found
            if (size or 0) > self.max_record_bytes:
                self.dependencies.append(Dependency.file(url, mtime_ns=mtime_ns))
                raise ReferenceRefused(
                    f"{url}: {size} bytes, over the {self.max_record_bytes}-byte record limit; "
                    "raise --max-record-mb to read it"
                )
            f, _size, _mtime = remote.open_file(url)
            with f:
                data = f.read(self.max_record_bytes + 1)[: self.max_record_bytes]
        except OSError as e:
            self.dependencies.append(Dependency.file(url))
            raise ReferenceRefused(f"cannot read {url}: {e.strerror or e}") from None
        self._read_whole(Dependency.file(url, len(data), mtime_ns, hashlib.sha256(data).hexdigest()))
        return data

    def _read_whole(self, read: Dependency) -> None:
        """Record a file read whole; its first bytes read before (``peek_dependency``) say nothing more."""
        self.dependencies[:] = [d for d in self.dependencies
                                if not (d.kind == "file" and d.path == read.path and d.sha256 is None and d.size is not None)]
        self.dependencies.append(read)

    def option(self, name: str):
        """A run option (e.g. ``tokenizer``). Asking for it makes it a dependency:
        when a later run has another value, this file is ingested again."""
        value = self.options.get(name)
        self.dependencies.append(Dependency.option(name, value))
        return value

    def list_dependency_dir(self, path: str) -> list[str]:
        """Names in a directory this file's rows depend on; a change of the listing re-ingests this file.

        Like ``read_dependency``: inside the tree only, and bounded (names beyond the
        record limit, in bytes, are refused rather than listed).
        """
        path = self.reference(path)
        if urlpaths.is_url(path):
            try:
                names = remote.list_dir(path)
            except OSError as e:
                raise ReferenceRefused(f"cannot list {path}: {e.strerror or e}") from None
            if sum(len(n) + 1 for n in names) > self.max_record_bytes:
                raise ReferenceRefused(f"{path}: listing over the {self.max_record_bytes}-byte record limit")
            self.dependencies.append(Dependency.directory(path, remote.names_digest(names) if names else None))
            return names
        names: list[str] = []
        try:
            mtime = os.stat(path).st_mtime_ns
            total = 0
            with os.scandir(path) as it:
                for entry in it:
                    total += len(entry.name) + 1
                    if total > self.max_record_bytes:
                        raise ReferenceRefused(f"{path}: listing over the {self.max_record_bytes}-byte record limit")
                    names.append(entry.name)
        except (FileNotFoundError, NotADirectoryError):
            names, mtime = [], None
        except ReferenceRefused:
            raise
        except OSError as e:
            raise ReferenceRefused(f"cannot list {path}: {e.strerror or e}") from None
        self.dependencies.append(Dependency.directory(path, mtime))
        return sorted(names)

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> "SourceFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _HashingReader(io.RawIOBase):
    """Reads (up to ``end``, when given) and hashes what it reads."""

    def __init__(self, f: BinaryIO, h, end: int | None = None) -> None:
        self._f, self._h, self._end = f, h, end

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self._end is not None:
            left = self._end - self._f.tell()
            n = left if n < 0 else min(n, left)
            if n <= 0:
                return b""
        b = self._f.read(n)
        self._h.update(b)
        return b

    def readinto(self, buf) -> int:  # used by io.BufferedReader / ijson
        b = self.read(len(buf))
        buf[: len(b)] = b
        return len(b)


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

#: bytes compared at a time by ``line_ends``: the mask of a slice stays in the cache
_SCAN_SLICE = 1 << 18


def line_ends(data: bytes, start: int = 0, end: int | None = None) -> np.ndarray:
    """Offsets (in ``data``) of the line ends in ``data[start:end]``, nothing copied.

    numpy's compare finds them ~3x faster than ``bytes.count`` counts them (a byte loop for
    a one-byte needle); a slice at a time, as a compare over a whole 32 MB block writes a
    32 MB mask to memory and reads it back (2x slower again)."""
    return scan_lines(data, start, end)[0]


def scan_lines(data: bytes, start: int = 0, end: int | None = None) -> tuple[np.ndarray, bool]:
    """``line_ends(data, start, end)``, and whether those bytes are ASCII: both from one read
    of each slice, the largest byte taken while the slice is in the cache (a fast path needs
    both of a piece; a second pass over 32 MB reads it from memory again)."""
    a = np.frombuffer(data, np.uint8)
    end = len(a) if end is None else end
    found, top = [], 0
    for i in range(start, end, _SCAN_SLICE):
        piece = a[i:min(i + _SCAN_SLICE, end)]
        found.append(np.flatnonzero(piece == 10) + i)
        top = max(top, int(piece.max()))  # numpy's max: 2x bytes.isascii
    return (np.concatenate(found) if found else np.zeros(0, np.int64)), top < 0x80


def count_lines(data: bytes, start: int = 0, end: int | None = None, h=None) -> int:
    """How many line ends ``data[start:end]`` holds: ``len(line_ends(...))`` without the offsets
    (a count over each slice's mask, ~2.5x faster than finding where its ends are; the pass
    over a large file counts every line of it). ``h``: a hash (``hashlib``) fed the same bytes,
    a slice at a time while the slice is in the cache: the pass hashes every byte it counts, and
    one read from memory instead of two halves the count's cost (bench/README.md, part H)."""
    a = np.frombuffer(data, np.uint8)
    end = len(a) if end is None else end
    view = memoryview(data) if h is not None else None
    n = 0
    for i in range(start, end, _SCAN_SLICE):
        j = min(i + _SCAN_SLICE, end)
        if view is not None:
            h.update(view[i:j])
        n += int(np.count_nonzero(a[i:j] == 10))
    return n


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
