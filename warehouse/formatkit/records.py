"""What flows between a file reader, an ingestor's mapping and the record sink (``warehouse.run.sink``).

A *record* is one source record (an array element, a JSONL line, a whole-file
object). An ingestor maps one record to rows: ``{"responses": [row], "turns":
[...]}``. The sink adds provenance, validates, and either keeps all of a
record's rows or quarantines the record whole.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from warehouse.errors import RecordError
from warehouse.moved import renamed_attribute

#: table name -> rows (dicts keyed by column name) produced by one record
Mapped = dict[str, list[dict[str, Any]]]

def stable_id(path: str, locator: str) -> str:
    """A short id that depends only on where a row comes from.

    Re-ingesting the same files gives the same ids; the path is part of the id,
    so moving a tree changes them (docs/architecture.md#ids).
    """
    h = hashlib.blake2b(digest_size=8)
    h.update(path.encode("utf-8", "surrogatepass"))
    h.update(b"\x00")
    h.update(locator.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def stable_ids(path: str, locators) -> list[str]:
    """``stable_id(path, loc)`` for each of many locators of one path: the path is hashed once
    and its hash state copied (a fast path names every line of a block: ~0.5 CPU-s per GB)."""
    prefix = hashlib.blake2b(digest_size=8)
    prefix.update(path.encode("utf-8", "surrogatepass"))
    prefix.update(b"\x00")
    out = []
    for locator in locators:
        h = prefix.copy()
        h.update(locator.encode("utf-8", "surrogatepass"))
        out.append(h.hexdigest())
    return out


# --- bounded locators and messages ------------------------------------------------------------------
#
# A locator is repeated on every row of a record (each part of a prompt may name the prompt's key),
# and a message may quote a source key or value: a 1 MB key times 300 parts is 300 MB of locators, a 50 MB
# key a 50 MB message. So keys, locators and messages are cut here, once for every format; what is cut
# carries a hash of the whole, so a locator still names exactly one place.

#: characters of an object key written whole in a locator
KEY_LIMIT = 64
#: characters of a locator written whole (rows' source_locator, quarantine.locator)
LOCATOR_LIMIT = 1024
#: characters of a message written whole (quarantine.error, the --strict message)
MESSAGE_LIMIT = 2048


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def key_step(key: str) -> str:
    """``["key"]``: the locator step into an object's key. A key over KEY_LIMIT characters is written as
    its start, ``…#`` and a hash of the whole key: longer than any key written whole, so never mistaken
    for one, and two long keys with the same start stay apart."""
    if len(key) > KEY_LIMIT:
        key = f"{key[:KEY_LIMIT]}\u2026#{_digest(key)}"
    return "[" + json.dumps(key, ensure_ascii=False) + "]"


def short_locator(locator: str) -> str:
    """The locator, or, over LOCATOR_LIMIT characters, its start, ``…#`` and a hash of the whole."""
    if len(locator) <= LOCATOR_LIMIT:
        return locator
    tail = f"\u2026#{_digest(locator)}"
    return locator[: LOCATOR_LIMIT - len(tail)] + tail


def short_message(message: str) -> str:
    """The message, or its first MESSAGE_LIMIT characters and how long it was."""
    if len(message) <= MESSAGE_LIMIT:
        return message
    return f"{message[:MESSAGE_LIMIT]}\u2026 (message cut: {len(message):,} characters)"


@dataclass(slots=True)
class Record:
    """One source record, decoded, or the reason it could not be decoded."""

    locator: str
    value: Any = None
    index: int | None = None  # 0-based position in the file; None for a whole-file object
    raw: bytes | None = None  # the record's own bytes where the reader has them cheaply
    raw_size: int | None = None  # full size when ``raw`` was cut short
    error: RecordError | None = None
    #: file-level fields shared by every record of the file (a prompt set's name,
    #: a wrapper's system prompt); part of the mapping's input, like ``value``
    envelope: dict | None = None


@dataclass(slots=True, frozen=True)
class RecordContext:
    """Where a record sits, handed to an ingestor's mapping.

    The mapping uses it only to name rows (ids and sub-locators); it never
    reads or writes storage.
    """

    path: str
    locator: str
    index: int | None
    source_format: str

    format = renamed_attribute("format", "source_format")

    def locate(self, sub: str = "") -> str:
        return self.locator + sub

    def row_id(self, sub: str = "") -> str:
        """Id of a row at ``sub`` inside this record (responses, annotations)."""
        return stable_id(self.path, self.locator + sub)
