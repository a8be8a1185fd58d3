"""Finding line ends in bytes of a JSONL file, a cache-sized slice at a time (numpy).

How a large file is cut into pieces of whole lines (``run/pieces.py``) and how a fast
path finds the lines of its piece.
"""

from __future__ import annotations

import numpy as np

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


def count_lines(data: bytes, start: int = 0, end: int | None = None) -> int:
    """How many line ends ``data[start:end]`` holds: ``len(line_ends(...))`` without the offsets
    (a count over each slice's mask, ~2.5x faster than finding where its ends are; the pass
    over a large file counts every line of it)."""
    a = np.frombuffer(data, np.uint8)
    end = len(a) if end is None else end
    n = 0
    for i in range(start, end, _SCAN_SLICE):
        n += int(np.count_nonzero(a[i:min(i + _SCAN_SLICE, end)] == 10))
    return n
