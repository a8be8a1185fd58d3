"""The members of a ``.eval`` log: a zip archive, read from its directory, one member at a time.

Inspect writes its members zstd-compressed (zip method 93), which ``zipfile`` cannot
decompress before Python 3.14. ``zipfile`` still reads the directory and, for the
methods it knows (stored, deflate, ...), the members; a zstd member's bytes are read
from its place in the archive (after its local header) and decompressed with Arrow's
zstd codec (``pyarrow``, already a dependency), its CRC checked as ``zipfile`` checks
the others'. Only a member's own bytes are ever in memory, so a log of any size is
read in bounded memory: at most one member at a time, and none larger than the
record limit unless it is streamed (``open_member``).
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from typing import BinaryIO

#: the zip method number of zstd (APPNOTE 4.4.5), Inspect's compression of every member
ZSTD = 93
#: the local file header: signature, versions, flags, method, time, date, CRC, sizes, name and extra lengths
_LOCAL = struct.Struct("<4s2B4HL2L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"


class MemberError(Exception):
    """A member that cannot be read: damaged, or compressed in a way no reader here knows."""


def members(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The archive's members in their order, each name once: where a name was written twice (an
    archive appended to), the last entry, the one ``zipfile`` reads under that name."""
    return [info for info in archive.infolist() if archive.getinfo(info.filename) is info and not info.is_dir()]


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes | None:
    """The member's bytes, or None when they are more than ``limit``. MemberError when it cannot be read."""
    if info.file_size > limit:
        return None
    with open_member(archive, info) as f:
        data = f.read(limit + 1)  # the directory's size may be wrong: never trust it to bound the read
        if len(data) > limit:
            return None
        f.read(1)  # the end, where the CRC is checked
    return data


def open_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> BinaryIO:
    """A reader of the member's decompressed bytes (a stream: nothing read ahead). MemberError when
    it cannot be opened; reading a damaged member raises MemberError too."""
    if info.compress_type != ZSTD:
        try:
            return _Checked(archive.open(info))
        except (NotImplementedError, zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
            raise MemberError(_reason(e)) from None
    import pyarrow as pa

    f = archive.fp
    try:
        f.seek(info.header_offset)
        header = f.read(_LOCAL.size)
        if len(header) != _LOCAL.size or header[:4] != _LOCAL_SIGNATURE:
            raise MemberError("its local header is missing or damaged")
        name_length, extra_length = _LOCAL.unpack(header)[-2:]
        start = info.header_offset + _LOCAL.size + name_length + extra_length
        compressed = pa.PythonFile(_Window(f, start, info.compress_size), mode="r")
        return _Checked(pa.CompressedInputStream(compressed, "zstd"), info.CRC)
    except (OSError, ValueError, pa.ArrowException) as e:
        raise MemberError(_reason(e)) from None


def _reason(e: BaseException) -> str:
    if isinstance(e, NotImplementedError):
        return f"compressed in a way this reader does not know ({e})"
    return f"damaged ({type(e).__name__}: {e})"


class _Window(io.RawIOBase):
    """``size`` bytes of ``f`` from ``start``: one member's compressed bytes (the archive's file is
    shared with ``zipfile``, so every read seeks to its own place first)."""

    def __init__(self, f: BinaryIO, start: int, size: int):
        self._f, self._at, self._end = f, start, start + size

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        n = min(len(buf), self._end - self._at)
        if n <= 0:
            return 0
        self._f.seek(self._at)
        data = self._f.read(n)
        if not data:
            raise MemberError("it ends before its compressed size: the archive is cut short")
        buf[: len(data)] = data
        self._at += len(data)
        return len(data)


class _Checked(io.RawIOBase):
    """A member's reader whose failures are MemberErrors, and whose CRC (of a zstd member, which
    ``zipfile`` does not check) is compared with the directory's at its end."""

    def __init__(self, f, crc: int | None = None):
        self._f, self._expected, self._crc, self._done = f, crc, 0, False

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)

    def read(self, n: int = -1) -> bytes:
        if self._done or n == 0:  # a read of nothing (ijson asks one, to see bytes come back) is no end
            return b""
        whole = n is None or n < 0
        try:
            data = bytes(self._f.read() if whole else self._f.read(n))
        except MemberError:
            raise
        except Exception as e:  # noqa: BLE001 - zlib, zipfile and Arrow each raise their own
            raise MemberError(_reason(e)) from None
        if self._expected is not None:
            self._crc = zlib.crc32(data, self._crc)
            if whole or not data:  # the member's end: all of it was read
                self._done = True
                if self._crc != self._expected:
                    raise MemberError(f"its CRC-32 is {self._crc:08x}, the archive's directory says {self._expected:08x}")
        return data

    def close(self) -> None:
        try:
            self._f.close()
        finally:
            super().close()
