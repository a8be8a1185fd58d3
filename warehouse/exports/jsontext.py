"""JSON text in and out of exporters, at any depth the warehouse holds.

The ingest reads JSON up to orjson's depth limit (1024) and writes what orjson cannot
(deeper than 254) with the standard library; an export nests those values a few levels
deeper again (a document around its rows). orjson writes 254 levels and reads 1024;
the standard library's ``json`` recurses once per level, so past Python's recursion
limit (1000, minus the stack already in use) it raises ``RecursionError``. So every
exporter writes with orjson where it can, falls back to the standard library where
it cannot, and runs that fallback (and any recursive writer of its own) inside
``deep_recursion()``, which makes room for ``DEPTH`` more levels.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

#: the deepest value an export may meet: what the ingest reads, plus the export's own nesting
DEPTH = 1024 + 64
#: Python frames per level of the recursive writers (a call and a generator per level)
FRAMES_PER_LEVEL = 3

_lock = threading.Lock()
_users = 0
_saved = 0


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Room for ``DEPTH`` more levels of recursion (process-wide while any export needs it)."""
    global _users, _saved
    frame, depth = sys._getframe(), 0
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    with _lock:
        if _users == 0:
            _saved = sys.getrecursionlimit()
        _users += 1
        sys.setrecursionlimit(max(sys.getrecursionlimit(), depth + FRAMES_PER_LEVEL * DEPTH + 200))
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                sys.setrecursionlimit(_saved)


def loads(text: str | bytes) -> Any:
    """orjson, or the standard library for what orjson refuses (NaN and Infinity, integers wider
    than 64 bits, more than 1024 levels)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        with deep_recursion():
            return json.loads(text)


def json_value(value: Any) -> Any:
    """A JSON column's value: its text parsed (DuckDB hands JSON columns out as text); None, or a value
    already parsed (a column read inside ``to_json``), as it is."""
    return loads(value) if isinstance(value, (str, bytes)) else value


def loads_checked(text: str | bytes) -> tuple[Any, bool]:
    """``loads(text)``, and whether orjson read it. False when the text holds what only the standard
    library reads: NaN or Infinity (DuckDB's ``to_json`` writes a non-finite DOUBLE bare), an integer
    wider than 64 bits, more than 1024 levels. Write such a value back with ``dumps_stdlib``, which
    keeps them (``dumps`` writes NaN as ``null``)."""
    try:
        return orjson.loads(text), True
    except orjson.JSONDecodeError:
        with deep_recursion():
            return json.loads(text), False


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """Compact (or indented by 2) UTF-8 JSON; the standard library where orjson cannot (deeper than
    254 levels, integers wider than 64 bits). NaN becomes ``null`` with orjson: callers that keep
    NaN use ``dumps_stdlib``."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    except (orjson.JSONEncodeError, TypeError):
        return dumps_stdlib(value, indent=indent)


def dumps_stdlib(value: Any, *, indent: bool = False, separators: tuple[str, str] | None = None) -> bytes:
    """The standard library's JSON (NaN as ``NaN``), at any depth up to ``DEPTH``."""
    if separators is None:
        separators = (",", ": ") if indent else (",", ":")
    with deep_recursion():
        return json.dumps(value, ensure_ascii=False, indent=2 if indent else None, separators=separators).encode()
