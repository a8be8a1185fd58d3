"""Dataset downloads: ``<root>/items/X.json`` (the document) and ``<root>/json/X.json`` (its platform item JSON) are ONE item.

The item is one record, emitted by the document file, which reads its sibling
item JSON as a catalog dependency. The item JSON read on its own emits the
item only when no document pairs with it; it reads its candidate documents as
dependencies, so when one appears (or goes) it is read again and gives way (or
takes over). Either order of meeting the files gives the same rows.

**Which file pairs with which.** A download's root holds ``items/`` and ``json/``
side by side, and ``X`` is the item's ``filename`` inside the dataset, folders
and all, so an item's own path may hold folders named ``items`` or ``json``
(``<root>/items/json/a.json`` pairs with ``<root>/json/json/a.json``). Every folder
named ``items`` above a document is a candidate root (every ``json`` above an
item JSON); a candidate pairs only when the file at the same place under the
other folder exists and is of the other kind (by its first bytes). When several
do, the item JSON whose ``filename`` is the path below its root wins, else the
outermost root. The item JSON side asks the same question of each candidate
document (does that document choose me?), so both sides always agree.

Locators of rows and errors that come from the sibling item JSON start with
``@json`` (``@json.annotations[1]``): they are paths inside the sibling, while
``source_path`` is the document's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from warehouse.formatkit.opening import HEAD_BYTES
from warehouse.formatkit.readers import BOM, RAW_LIMIT, decode_json, json_document_records
from warehouse.formatkit.records import Record, RecordError
from warehouse.formatkit.source import SourceFile

from . import detect

SIBLING = "@json"
DOCUMENTS, ITEM_JSON = "items", "json"

Reader = Callable[[str], "bytes | None"]


def siblings(path: str, this: str, other: str) -> list[tuple[str, str]]:
    """(the file at the same place under ``other``, the path below the root) for each folder named
    ``this`` above ``path``, outermost first: the candidate roots of a download."""
    parts = path.split("/")
    return [
        ("/".join(parts[:i] + [other] + parts[i + 1 :]), "/".join(parts[i + 1 :]))
        for i in range(len(parts) - 1)
        if parts[i] == this
    ]


def _head(data: bytes) -> bytes:
    return data[:HEAD_BYTES].removeprefix(BOM)


def _named(data: bytes, below_root: str) -> bool:
    """The item JSON's ``filename`` is ``below_root`` (up to the extension: a download writes
    ``json/<name>.json`` for an item of any type)."""
    try:
        filename = decode_json(data.removeprefix(BOM)).get("filename")
    except (RecordError, AttributeError):
        return False
    if not isinstance(filename, str):
        return False
    return os.path.splitext(filename.lstrip("/"))[0] == os.path.splitext(below_root)[0]


def item_json_of(document: str, read: Reader) -> tuple[str, bytes] | None:
    """The item JSON a document pairs with, and its bytes; None when it has none."""
    found = []
    for path, below in siblings(document, DOCUMENTS, ITEM_JSON):
        data = read(path)
        if data is not None and detect.is_platform_item(_head(data)):
            found.append((path, below, data))
    if len(found) > 1:  # several roots hold a sibling: the one the item JSON names itself after
        found = [f for f in found if _named(f[2], f[1])] or found
    return (found[0][0], found[0][2]) if found else None


def document_of(item_json: str, read: Reader) -> str | None:
    """The document that pairs with an item JSON: a candidate document whose own choice it is."""
    for path, _ in siblings(item_json, ITEM_JSON, DOCUMENTS):
        data = read(path)
        if data is None or not detect.is_document(_head(data)):
            continue
        chosen = item_json_of(path, read)
        if chosen is not None and chosen[0] == item_json:
            return path
    return None


def records(src: SourceFile) -> Iterator[Record]:
    head = src.head.removeprefix(BOM)

    seen: dict[str, bytes | None] = {}

    def read(path: str) -> bytes | None:  # this file is read already; the others are dependencies, read once
        if path == src.path and src.whole:
            return src.data()
        if path not in seen:
            # The sibling's path follows from this file's own place (the download's items/ and json/
            # roots), not from its data: read it wherever the file was named from, as the walk would.
            seen[path] = src.read_dependency(path, from_data=False)
        return seen[path]

    if detect.is_platform_item(head) and not detect.is_document(head):
        if document_of(src.path, read) is not None:
            return  # the item is the document's record
        yield from json_document_records(src)
        return
    pair = item_json_of(src.path, read)
    if pair is None:
        yield from json_document_records(src)
        return
    item_json, data = pair
    try:
        sibling = decode_json(data.removeprefix(BOM))
        error = None
    except RecordError as e:
        sibling, error = None, RecordError(
            f"the item JSON beside this file ({item_json}) cannot be decoded: {e.message}; "
            "fix or remove it to ingest the item",
            stage="decode",
            sub_locator=SIBLING,
        )
    for record in json_document_records(src):
        if record.error is None and error is not None:
            record.error, record.raw, record.raw_size = error, data[:RAW_LIMIT], len(data)
        elif record.error is None:
            record.envelope = {"item_json": sibling, "item_json_path": item_json}
        yield record
