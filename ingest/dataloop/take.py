"""Typed reads from nested Dataloop objects that leave the unread rest for ``extra``.

Dataloop keeps the fields we type several levels down (``metadata.system.shebang.dltype``,
``metadata.user.model.confidence``). ``Taker`` works on a copy of one object:
``take(path, ...)`` removes the value it returns, and prunes the parents the
removal emptied, so ``left()`` is exactly what no column took. A container that
was empty in the source (``"refs": []``) stays: only what we took is gone.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from warehouse.formatkit.records import RecordError

from ..fields import as_bool, as_float, as_text, id_text, json_type, preview


def _any(v: Any, key: str, sub: str) -> Any:
    return v


def _object(v: Any, key: str, sub: str) -> dict | None:
    if v is None or isinstance(v, dict):
        return v
    raise RecordError(f"{key}: expected an object, got {json_type(v)} {preview(v)}", sub_locator=sub)


def _list(v: Any, key: str, sub: str) -> list | None:
    if v is None or isinstance(v, list):
        return v
    raise RecordError(f"{key}: expected a list, got {json_type(v)} {preview(v)}", sub_locator=sub)


class Taker:
    """One JSON object, read by paths; what is not taken is ``left()``."""

    __slots__ = ("_left", "sub")

    def __init__(self, obj: dict, sub: str = ""):
        self._left = copy.deepcopy(obj)
        self.sub = sub  # locator of the object inside the record, for messages

    def _take(self, path: str, conv: Callable) -> Any:
        keys = path.split(".")
        chain = [self._left]
        for depth, key in enumerate(keys[:-1]):
            node = chain[-1].get(key)
            if node is None:
                return None
            if not isinstance(node, dict):
                at = self.sub + "." + ".".join(keys[: depth + 1])
                raise RecordError(f"{key}: expected an object, got {json_type(node)} {preview(node)}", sub_locator=at)
            chain.append(node)
        if keys[-1] not in chain[-1]:
            return None
        value = conv(chain[-1][keys[-1]], keys[-1], f"{self.sub}.{path}")
        del chain[-1][keys[-1]]
        # Remove the parents this removal emptied (they held the key, so they were not empty before).
        for parent, key, node in zip(reversed(chain[:-1]), reversed(keys[:-1]), reversed(chain[1:])):
            if node:
                break
            del parent[key]
        return value

    def text(self, path: str) -> str | None:
        return self._take(path, as_text)

    def id(self, path: str) -> str | None:
        return self._take(path, id_text)

    def float(self, path: str) -> float | None:
        return self._take(path, as_float)

    def bool(self, path: str) -> bool | None:
        return self._take(path, as_bool)

    def object(self, path: str) -> dict | None:
        return self._take(path, _object)

    def list(self, path: str) -> list | None:
        return self._take(path, _list)

    def raw(self, path: str) -> Any:
        return self._take(path, _any)

    def peek(self, path: str) -> Any:
        """The value at ``path`` without taking it (None when absent or not reachable)."""
        node: Any = self._left
        for key in path.split("."):
            if not isinstance(node, dict):
                return None
            node = node.get(key)
        return node

    def left(self) -> dict | None:
        return self._left or None
