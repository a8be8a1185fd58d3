"""The span annotations of exported responses, back into trait-interp annotation files.

The reverse of ``ingest/trait_interp/annotations.py``. Each annotation file that
has rows about an exported response is written again at its own place in the
layout (so it stays the sibling of what it annotates), holding only the entries
about exported responses:

* span forms (unified, dense, hacks, biases) in the **unified** form:
  ``{"metadata"?, "categories"?, "annotations": [{idx, spans, borderline?, note?, ...}]}``,
  ``idx`` = the response's position in the exported array file (arrays are
  compacted, so it follows the new positions) or its prompt id (inference), in the
  key (``idx``/``id``) and JSON type the source entry wrote it (``names``);
* token-range forms in their own form, since only they carry the file's token
  ranges: ``detailed`` (``{metadata, detailed_annotations: {prompt_id: {exploitations}}}``)
  and ``audit`` (``{prompt_id: {annotations: [{token_start, token_end, label}]}}``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from warehouse.exports import kit

from ..annotation_targets import as_index

#: a span row's locator: its entry's locator, then ``.spans[j]`` (``[j]`` in the dense form)
_SPAN_LOCATOR = re.compile(r"^(.*?)(?:\.\w+)?\[(\d+)\]$")  # lazy: the shortest entry that fits
#: one range of a detailed exploitation's ``tokens_multiple``: a span of that exploitation
_MULTIPLE = re.compile(r"\.tokens_multiple\[(\d+)\]$")
_ENTRY_INDEX = re.compile(r"\[(\d+)\]$")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")  # ASCII only ('²'.isdigit() is true), no leading zero


def _entry_of(row: dict) -> tuple[str, int | None]:
    """(entry locator, the span's position in its list); a response row is its entry (position None)."""
    if row["level"] != "span":
        return row["source_locator"], None
    m = _SPAN_LOCATOR.match(_MULTIPLE.sub("", row["source_locator"]))
    return m.group(1), int(m.group(2))


def _entry_order(locator: str) -> tuple:
    m = _ENTRY_INDEX.search(locator)
    return (0, int(m.group(1)), "") if m else (1, 0, locator)


def idx_value(prompt_id: str) -> int | str:
    """A prompt id as trait-interp writes it: an integer when it is one."""
    if _DECIMAL.fullmatch(prompt_id):
        return int(prompt_id)
    return prompt_id


def target_key(row: dict) -> int | str:
    """What an entry calls its response: the array position, or the prompt id (the file's name)."""
    if row["single"]:
        return idx_value(os.path.splitext(os.path.basename(row["target_path"]))[0])
    return row["out_index"]


def names(written: dict | None, key: int | str) -> dict:
    """How a unified entry names its response ``key``: as the source entry did (``entry_key``), in its key
    (``idx`` or ``id``) and JSON type (``"35"`` stays a string: trait-interp's reader compares strictly),
    written as it was when it names the same response, else as the new position in that type."""
    if not written:
        return {"idx": key}
    out = dict(written)
    used = "idx" if "idx" in written else next(iter(written))  # the one the ingest resolved: idx first
    was = written[used]
    if isinstance(was, bool) or not (was == key or (as_index(was) is not None and as_index(was) == as_index(key))):
        out[used] = str(key) if isinstance(was, str) else key
    return out


def document(form: str, set_row: dict, rows: Iterable[dict]) -> Any:
    """The annotation file for one source file's selected rows (with their targets' new places)."""
    entries: dict[str, dict] = {}
    for row in rows:
        entry, j = _entry_of(row)
        e = entries.setdefault(entry, {"key": target_key(row), "spans": [], "borderline": [], "response": None,
                                       "written": kit.json_value(row.get("entry_key")) if form == "unified" else None})
        if j is None:
            e["response"] = row
        else:
            e["borderline" if row.get("borderline") else "spans"].append((j, row))
    ordered = [entries[k] for k in sorted(entries, key=_entry_order)]
    if form == "detailed":
        return _detailed(set_row, ordered)
    if form == "audit":
        return {str(e["key"]): _keyed_entry(e, "annotations", _audit_item) for e in ordered}
    root = _root(set_row)
    root["annotations"] = [_unified_entry(e) for e in ordered]
    return root


def _root(set_row: dict) -> dict:
    root: dict[str, Any] = {}
    for key in ("metadata", "categories"):
        value = kit.json_value(set_row.get(key))
        if value is not None:
            root[key] = value
    for k, v in (kit.json_value(set_row.get("extra")) or {}).items():
        root.setdefault(k, v)
    return root


def _unified_entry(e: dict) -> dict:
    out: dict[str, Any] = names(e["written"], e["key"])
    out["spans"] = [_span_item(r) for _, r in sorted(e["spans"], key=lambda x: x[0])]
    if e["borderline"]:
        out["borderline"] = [_span_item(r) for _, r in sorted(e["borderline"], key=lambda x: x[0])]
    response = e["response"]
    if response is not None:
        if response.get("note") is not None:
            out["note"] = response["note"]
        for k, v in (kit.json_value(response.get("extra")) or {}).items():
            out.setdefault(k, v)  # the entry's own keys win: they are what the rows were read from
    return out


def _span_item(row: dict) -> dict:
    item: dict[str, Any] = {"span": row.get("span")}
    if row.get("category") is not None:
        item["category"] = row["category"]
    if row.get("intensity") is not None:
        item["intensity"] = _number(row["intensity"])
    if row.get("note") is not None:
        item["note"] = row["note"]
    for k, v in (kit.json_value(row.get("extra")) or {}).items():
        item.setdefault(k, v)
    return item


def _number(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def _keyed_entry(e: dict, list_key: str, item) -> dict:
    """A detailed or audit entry: its items, then the entry's own fields (its response row's extra).
    ``item`` makes one item from the rows at one position (several for a ``tokens_multiple``)."""
    positions: dict[int, list[dict]] = {}
    for j, r in sorted(e["spans"], key=lambda x: (x[0], x[1]["source_locator"])):
        positions.setdefault(j, []).append(r)
    out: dict[str, Any] = {list_key: [item(rows) for rows in positions.values()]}
    if e["response"] is not None:
        for k, v in (kit.json_value(e["response"].get("extra")) or {}).items():
            out.setdefault(k, v)
    return out


def _detailed(set_row: dict, entries: list[dict]) -> dict:
    root = _root(set_row)
    root["detailed_annotations"] = {str(e["key"]): _keyed_entry(e, "exploitations", _exploitation) for e in entries}
    return root


def _exploitation(rows: list[dict]) -> dict:
    """One exploitation from its span rows: the ``tokens`` range, then each of ``tokens_multiple``."""
    plain = [r for r in rows if not _MULTIPLE.search(r["source_locator"])]
    multiple = sorted((r for r in rows if _MULTIPLE.search(r["source_locator"])),
                      key=lambda r: int(_MULTIPLE.search(r["source_locator"]).group(1)))
    row = (plain or multiple)[0]
    extra = dict(kit.json_value(row.get("extra")) or {})
    item: dict[str, Any] = {}
    if "bias" in extra:
        item["bias"] = extra.pop("bias")
    if plain and row.get("token_source") == "annotation_file":  # not a range found from the response's tokens
        item["tokens"] = [row.get("token_start"), row.get("token_end")]
    if multiple:
        item["tokens_multiple"] = [[r.get("token_start"), r.get("token_end")] for r in multiple]
    texts = [r.get("span") for r in plain[:1] + multiple]
    item["text"] = texts[0] if len(set(texts)) == 1 else texts
    if row.get("note") is not None:
        item["note"] = row["note"]
    item.update(extra)
    return item


def _audit_item(rows: list[dict]) -> dict:
    row = rows[0]
    item = {"token_start": row.get("token_start"), "token_end": row.get("token_end"), "label": row.get("category")}
    item.update(kit.json_value(row.get("extra")) or {})
    return item
