"""Typed reads from loose JSON objects, for mappings.

``Fields`` wraps one JSON object, hands out typed values by key and remembers
which keys were used, so everything left over goes to the ``extra`` column and
nothing is dropped. A value of the wrong type raises ``RecordError`` naming the
key and what was found; the record is quarantined with that message.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from typing import Any

from warehouse.formatkit.records import RecordContext, RecordError


def json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def preview(v: Any, limit: int = 40) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def expect_object(value: Any, what: str = "record", sub: str = "") -> dict:
    if not isinstance(value, dict):
        raise RecordError(f"expected a JSON object for the {what}, got {json_type(value)} {preview(value)}", sub_locator=sub)
    return value


def as_int(v: Any, key: str, sub: str = "") -> int | None:
    """An integer, accepting floats with no fraction (JSON writers emit 45.0 for 45)."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise RecordError(f"{key}: expected an integer, got boolean {v!r}", sub_locator=sub)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    raise RecordError(f"{key}: expected an integer, got {json_type(v)} {preview(v)}", sub_locator=sub)


def as_float(v: Any, key: str, sub: str = "") -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise RecordError(f"{key}: expected a number, got {json_type(v)} {preview(v)}", sub_locator=sub)
    return float(v)


def as_text(v: Any, key: str, sub: str = "") -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise RecordError(f"{key}: expected a string, got {json_type(v)} {preview(v)}", sub_locator=sub)


def as_bool(v: Any, key: str, sub: str = "") -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    raise RecordError(f"{key}: expected true or false, got {json_type(v)} {preview(v)}", sub_locator=sub)


def as_text_list(v: Any, key: str, sub: str = "") -> list[str] | None:
    if v is None:
        return None
    if isinstance(v, list):
        try:
            "".join(v)  # checks every element is a string, in C: token lists are long
            return v
        except TypeError:
            pass
    raise RecordError(f"{key}: expected a list of strings, got {json_type(v)} {preview(v)}", sub_locator=sub)


def as_int_list(v: Any, key: str, sub: str = "") -> list[int] | None:
    if v is None:
        return None
    if isinstance(v, list):
        try:
            array("q", v)  # every element a 64-bit integer, checked in C (floats and overflows raise)
            return v
        except (TypeError, OverflowError):
            pass
        out = []  # integers written as floats (45.0) are integers too
        for x in v:
            if type(x) is int:
                out.append(x)
            elif isinstance(x, float) and x.is_integer():
                out.append(int(x))
            else:
                break
        else:
            return out
    raise RecordError(f"{key}: expected a list of integers, got {json_type(v)} {preview(v)}", sub_locator=sub)


def id_text(v: Any, key: str, sub: str = "") -> str | None:
    """An id that may be an int or a string in the source, kept as text ("5", "simple_math")."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool):
        raise RecordError(f"{key}: expected an id (integer or string), got boolean {v!r}", sub_locator=sub)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    raise RecordError(f"{key}: expected an id (integer or string), got {json_type(v)} {preview(v)}", sub_locator=sub)


class Fields:
    """Typed access to one JSON object that tracks the keys used."""

    __slots__ = ("obj", "sub", "used")

    def __init__(self, obj: dict, sub: str = ""):
        self.obj = obj
        self.sub = sub  # locator of this object inside the record, for messages
        self.used: set[str] = set()

    def __contains__(self, key: str) -> bool:
        return key in self.obj

    def raw(self, key: str, default: Any = None) -> Any:
        self.used.add(key)
        return self.obj.get(key, default)

    def _at(self, key: str) -> str:
        return f"{self.sub}.{key}"

    def text(self, key: str) -> str | None:
        return as_text(self.raw(key), key, self._at(key))

    def int(self, key: str) -> int | None:
        return as_int(self.raw(key), key, self._at(key))

    def float(self, key: str) -> float | None:
        return as_float(self.raw(key), key, self._at(key))

    def bool(self, key: str) -> bool | None:
        return as_bool(self.raw(key), key, self._at(key))

    def texts(self, key: str) -> list[str] | None:
        return as_text_list(self.raw(key), key, self._at(key))

    def ints(self, key: str) -> list[int] | None:
        return as_int_list(self.raw(key), key, self._at(key))

    def id(self, key: str) -> str | None:
        return id_text(self.raw(key), key, self._at(key))

    def object(self, key: str) -> dict | None:
        v = self.raw(key)
        if v is None or isinstance(v, dict):
            return v
        raise RecordError(f"{key}: expected an object, got {json_type(v)} {preview(v)}", sub_locator=self._at(key))

    def list(self, key: str) -> list | None:
        v = self.raw(key)
        if v is None or isinstance(v, list):
            return v
        raise RecordError(f"{key}: expected a list, got {json_type(v)} {preview(v)}", sub_locator=self._at(key))

    def rest(self) -> dict | None:
        """Keys not used: what goes to ``extra``. None when nothing is left."""
        left = {k: v for k, v in self.obj.items() if k not in self.used}
        return left or None


# --- objects and lists of objects inside a record ------------------------------------------------
#
# Every mapping reads nested objects the same way: check that the value is an object (else the
# record is quarantined, naming what was expected and where), wrap it in a reader that knows its
# place, and give each row it yields that place as ``source_locator``. These two helpers are that
# idiom, once. ``reader`` is ``Fields`` or a format's own reader of the same shape (``reader(obj,
# sub)`` with a ``sub`` attribute), such as Dataloop's ``Taker``.


def as_fields(value: Any, what: str, sub: str = "", reader: Callable[[dict, str], Any] = Fields) -> Any:
    """A reader over ``value``, which must be a JSON object (``what`` names it in the message)."""
    return reader(expect_object(value, what, sub), sub)


#: one element of a list inside a record, as ``children`` yields it: (its index, the reader over it,
#: whose ``sub`` is its place in the record (``.messages[1]``), and its place in the source file
#: (``ctx.locate(sub)``), the ``source_locator`` of its rows). A plain tuple: mappings make millions.
Child = tuple[int, Any, str]


def children(items: list | None, sub: str, what: str, ctx: RecordContext | None = None,
             reader: Callable[[dict, str], Any] = Fields) -> Iterator[Child]:
    """Each element of the list at ``sub`` (``.messages``; None: no elements), in order, as
    ``(index, reader, locator)``, read with ``reader``. Every element must be a JSON object
    (``what`` names one in the message). Without ``ctx`` the locator is the sub-locator alone."""
    for i, item in enumerate(items or ()):
        at = f"{sub}[{i}]"
        yield i, reader(expect_object(item, what, at), at), ctx.locate(at) if ctx is not None else at
