"""Lists of numbers stored as decimals: per-token values written with a fixed number of decimals.

Per-token scores, norms and normalised scores come rounded to 4 decimals (the writers of
interpretability projections round them so). Parquet DECIMAL(9,4) holds such a number exactly as a 32-bit count of ten-thousandths; byte-stream-split
and zstd bring it to 1.5 to 2.5 bytes, where a double takes 6 to 7 (bench/README.md, per-token values).
It reads back as the very double the JSON text parses to: k / 10^4 is correctly rounded, in
numpy as in DuckDB's cast. A list holding a value that is no such decimal (an unrounded older
file, NaN, a value of 10^5 or more, a log-probability) goes whole to the float column beside
the decimal one instead (``fits`` decides): nothing is rounded on the way in.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

#: the decimals of per-token values: 4 places, 9 digits (below 10^5 in magnitude); the one decimal type
#: of the warehouse (its SQL name: ``SQL_TYPE``)
PLACES = 4
DIGITS = 9
DECIMAL = pa.decimal128(DIGITS, PLACES)
SQL_TYPE = f"DECIMAL({DIGITS},{PLACES})"


def floats(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """``values`` as a float64 array. A list is read by ``array('d')``: numbers only (a string or
    None raises TypeError; a boolean, a subclass of int, passes as 0 or 1: callers that must refuse
    one check it themselves)."""
    if isinstance(values, np.ndarray):
        return values.astype(np.float64, copy=False)
    return np.frombuffer(array("d", values), np.float64)


def fits(values: np.ndarray) -> bool:
    """Whether every value is exactly a ``DECIMAL`` (at most ``PLACES`` decimals, under ``DIGITS``
    digits): the double of ``k / 10^PLACES`` for an integer ``k`` that fits."""
    if not len(values):
        return True
    unit = 10.0 ** PLACES
    with np.errstate(invalid="ignore", over="ignore"):
        units = np.rint(values * unit)
        exact = units / unit == values  # NaN and infinities are never equal
    return bool(exact.all()) and float(np.abs(units).max()) < 10.0 ** DIGITS


def decimal_array(values: np.ndarray) -> pa.Array:
    """The decimals of ``values`` (all of which ``fits``), built from their integer units."""
    units = np.rint(values * 10.0 ** PLACES).astype(np.int64)
    words = np.empty((len(units), 2), np.int64)  # Decimal128: 16 little-endian bytes, two's complement
    words[:, 0] = units
    words[:, 1] = units >> 63
    return pa.Array.from_buffers(DECIMAL, len(units), [None, pa.py_buffer(words)])


def decimal_lists(lists: Sequence[Sequence[float] | np.ndarray | None]) -> pa.ListArray:
    """A list<DECIMAL> column of ``lists`` (None: a null list). Raises ValueError when a value is no
    ``DECIMAL`` (the caller puts such a list in its float column instead)."""
    arrays = [None if v is None else floats(v) for v in lists]
    lengths = np.fromiter((0 if a is None else len(a) for a in arrays), np.int64, len(arrays))
    offsets = np.zeros(len(arrays) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    present = [a for a in arrays if a is not None]
    flat = np.concatenate(present) if present else np.zeros(0, np.float64)
    if not fits(flat):
        raise ValueError(f"a value that is no {SQL_TYPE} (at most {PLACES} decimals, under 10^{DIGITS - PLACES})")
    mask = pa.array([a is None for a in arrays], pa.bool_()) if len(present) < len(arrays) else None
    return pa.ListArray.from_arrays(pa.array(offsets), decimal_array(flat), type=pa.list_(DECIMAL), mask=mask)
