"""What the first bytes of a JSON file say: its first value, and whether it holds JSON Lines.

Formats decide from a file's first 64 KiB (``Ingestor.sniff``); those that tell their rows by
their keys and values read the first row whole when it ends there.
"""

from __future__ import annotations

import json
from typing import Any

CUT = object()  # the first row does not end within the head


def first_value(head: bytes) -> Any:
    """The first row of a JSON Lines file, a JSON array or a JSON object, read from the file's first
    bytes: ``CUT`` when it does not end there, None when they hold no JSON value."""
    text = head.decode("utf-8", "ignore").lstrip()
    decoder = json.JSONDecoder()
    at = 0
    if text.startswith("["):
        at = len(text) - len(text[1:].lstrip())
        if text[at:at + 1] == "]":
            return None
    try:
        value, _end = decoder.raw_decode(text, at)
    except ValueError:
        return CUT if text[at:at + 1] in ("{", "[") else None
    return value


def is_json_lines(head: bytes) -> bool:
    """A ``.json`` file that holds JSON Lines (``datasets``' ``to_json`` writes them by default): its
    first line is a whole object and another line follows. One object on one line is a document."""
    text = head.decode("utf-8", "ignore").lstrip()
    if not text.startswith("{"):
        return False
    line, newline, rest = text.partition("\n")
    if not newline or not rest.strip():
        return False
    try:
        json.loads(line)
    except ValueError:
        return False
    return True
