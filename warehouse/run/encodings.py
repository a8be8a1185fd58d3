"""Files that hold JSON, but not as UTF-8 text: compressed, or in UTF-16 or UTF-32.

Every format reads UTF-8 JSON text (a UTF-8 byte-order mark is allowed). A file
compressed with gzip, zstd, bzip2 or xz, or saved as UTF-16 (Windows tools,
PowerShell's ``>``), would otherwise read as "0 files" or "no format recognised":
the walk counts compressed JSON files it skips (``x.jsonl.gz``) and says what to do,
and a file whose first bytes are a compressor's or another encoding's is quarantined
saying which, and how to make it readable (``what_it_is``).

No JSON text starts with these bytes (it starts with whitespace, ``{``, ``[``, a
value, or the UTF-8 byte-order mark, and holds no NUL byte), so none is mistaken.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Compression:
    name: str
    suffix: str  # what such a file's name ends with
    magic: bytes  # its first bytes
    undo: str  # the command that gives the JSON text back (of FILE, beside it)


COMPRESSIONS = (
    Compression("gzip", ".gz", b"\x1f\x8b", "gunzip -k"),
    Compression("zstd", ".zst", b"\x28\xb5\x2f\xfd", "zstd -d"),
    Compression("bzip2", ".bz2", b"BZh", "bunzip2 -k"),
    Compression("xz", ".xz", b"\xfd7zXZ\x00", "unxz -k"),
)
#: a zip archive may hold JSON files, but is none
ZIP = b"PK\x03\x04"

#: (byte-order mark, encoding, iconv's name for it), longest first: UTF-32's marks begin with UTF-16's
_MARKS = ((b"\xff\xfe\x00\x00", "UTF-32 (little-endian)", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)", "UTF-32"),
          (b"\xff\xfe", "UTF-16 (little-endian)", "UTF-16"), (b"\xfe\xff", "UTF-16 (big-endian)", "UTF-16"))


def compressed_suffixes(suffixes: tuple[str, ...]) -> tuple[str, ...]:
    """The names of compressed files of those kinds: ``.jsonl`` -> ``.jsonl.gz``, ``.jsonl.zst``, ..."""
    return tuple(s + c.suffix for s in suffixes for c in COMPRESSIONS)


def skipped_note(paths: list[str]) -> str:
    """What the walk says about the compressed JSON files it did not read (``paths``, in walk order)."""
    files = "file" if len(paths) == 1 else "files"
    undo = ", ".join(f"{c.undo} FILE" for c in COMPRESSIONS if any(p.lower().endswith(c.suffix) for p in paths))
    return (f"skipped {len(paths)} compressed JSON {files} (e.g. {paths[0]}): the warehouse reads .json and .jsonl "
            f"text; decompress them first ({undo}) and ingest the result")


def what_it_is(head: bytes) -> str | None:
    """Why the file starting with ``head`` is not JSON text, and what to do; None when it may be."""
    for c in COMPRESSIONS:
        if head.startswith(c.magic):
            return (f"{c.name}-compressed, not JSON text (its first bytes are {c.name}'s): decompress it "
                    f"({c.undo} FILE) and ingest the result")
    if head.startswith(ZIP):
        return "a zip archive, not JSON text: unzip it and ingest the files it holds"
    for mark, encoding, iconv in _MARKS:
        if head.startswith(mark):
            return _reencode(encoding, "with a byte-order mark", iconv)
    first = head[:4]
    if len(first) == 4 and b"\x00" in first:  # JSON's first characters are ASCII: their NULs tell the width
        if first[1:] == b"\x00\x00\x00":
            return _reencode("UTF-32 (little-endian)", "no byte-order mark", "UTF-32LE")
        if first[:3] == b"\x00\x00\x00":
            return _reencode("UTF-32 (big-endian)", "no byte-order mark", "UTF-32BE")
        if first[1] == 0 and first[3] == 0:
            return _reencode("UTF-16 (little-endian)", "no byte-order mark", "UTF-16LE")
        if first[0] == 0 and first[2] == 0:
            return _reencode("UTF-16 (big-endian)", "no byte-order mark", "UTF-16BE")
    return None


def _reencode(encoding: str, mark: str, iconv: str) -> str:
    return (f"{encoding} text ({mark}), not UTF-8: re-encode it as UTF-8 "
            f"(iconv -f {iconv} -t UTF-8 FILE > NEW) and ingest the result")
