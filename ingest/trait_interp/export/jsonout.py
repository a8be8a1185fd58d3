"""JSON text as trait-interp writes it, without the comma bug of its ``dump_compact``.

``dump_compact`` is ``json.dumps(indent=2)`` with arrays of primitives inlined by
splitting their text on ``,``, which rewrites every token holding a comma. Here
each inlined array is dumped on its own, so its strings come out exactly.
Python's ``json`` writes ``NaN`` for a NaN score, as trait-interp does, and
escapes non-ASCII (``ensure_ascii``), as its writers do.
"""

from __future__ import annotations

import json
import os
from typing import Any


def dumps(value: Any, level: int = 0) -> str:
    """Indented by 2; lists of numbers, strings, booleans and nulls on one line."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        pad = "  " * (level + 1)
        items = ",\n".join(f"{pad}{json.dumps(k)}: {dumps(v, level + 1)}" for k, v in value.items())
        return "{\n" + items + "\n" + "  " * level + "}"
    if isinstance(value, list):
        if all(not isinstance(x, (dict, list)) for x in value):
            return json.dumps(value)
        pad = "  " * (level + 1)
        return "[\n" + ",\n".join(pad + dumps(x, level + 1) for x in value) + "\n" + "  " * level + "]"
    return json.dumps(value)


def write_json(path: str, value: Any) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(dumps(value))
        f.write("\n")


class FileWriter:
    """Response files written one record at a time: an array file grows element by element."""

    def __init__(self, root: str):
        self.root = root
        self.path: str | None = None
        self.f = None
        self.array = False
        self.count = 0
        self.files = 0

    def record(self, rel: str, single: bool, value: dict) -> None:
        if rel != self.path:
            self.close()
            self.path, self.array, self.count = rel, not single, 0
            full = os.path.join(self.root, rel)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            self.f = open(full, "w", encoding="utf-8")
            self.files += 1
            if self.array:
                self.f.write("[\n")
        elif not self.array:
            raise ValueError(f"{rel}: a single-object file given a second record")
        if self.array:
            self.f.write(("  " if self.count == 0 else ",\n  ") + dumps(value, 1))
        else:
            self.f.write(dumps(value))
        self.count += 1

    def close(self) -> None:
        f, self.f = self.f, None  # forgotten first: a close that fails (a full disk) is not tried again
        if f is not None:
            try:
                f.write("\n]\n" if self.array else "\n")
            finally:
                f.close()
