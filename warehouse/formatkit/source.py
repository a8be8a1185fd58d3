"""A source file opened for reading: its stat, its first bytes for detection, and its bytes once.

A file is read once: the bytes that are parsed are the bytes that are hashed.
Files up to the record limit are read whole (the fast path: one ``orjson.loads``);
larger ones are streamed (``readers.py``), and hashed as they are read. A JSONL file
may be read a piece at a time (``chunk``), each piece by a worker of its own.
"""

from __future__ import annotations

import hashlib
import io
import os
from typing import BinaryIO

from warehouse.filesystems import FileSystems
from warehouse.formatkit.dependencies import Dependency
from warehouse.formatkit.dependency_reads import DependencyReads
from warehouse.formatkit.opening import (
    CHUNK,
    DEFAULT_MAX_RECORD_BYTES,
    HEAD_BYTES,
    normpath,
    read_piece,
)


class SourceFile(DependencyReads):
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
        filesystems: FileSystems | None = None,
    ):
        """``chunk`` = (start byte, end byte, number of the first line): read only that
        piece of a JSONL file (a piece ends at a line end, so it holds whole lines).
        ``tree``: the directory the file was found under (default: the file's own);
        paths taken from the file's data must lie inside it. ``filesystems``: how the file and what it depends
        on are reached (the run's; by default the environment's options, for a URL)."""
        self.filesystems = filesystems or FileSystems.for_path(path)
        self.path = path
        self.tree = normpath(tree) if tree else os.path.dirname(normpath(path))
        self.max_record_bytes = max_record_bytes
        self.first_line = chunk[2] if chunk else 1
        #: run options an ingestor may use (e.g. ``tokenizer``: a local tokenizer directory)
        self.options = options or {}
        #: other files and directories this file's rows were built from (see ``read_dependency``)
        self.dependencies: list[Dependency] = []
        self._f, self.size, self.mtime_ns = self.filesystems.open(path)
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
