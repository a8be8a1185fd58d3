"""Scale files (BasicFile, ImageFile, AudioFile) into ``attachments`` rows.

The three shapes share one table: every field of any of them has a column, so a
file of any kind is one row. Scale's SDK cannot tell them apart (its ``oneOf``
matches all three, since every field is optional); the columns need not.
"""

from __future__ import annotations

from typing import Any

from warehouse.formatkit.records import RecordContext

from ..fields import as_fields


def file_rows(items: list, subs: list[str], links: dict, ctx: RecordContext) -> list[dict]:
    """One row per file; ``subs[k]`` locates ``items[k]``, ``links`` ties the rows to a message or annotation."""
    rows = []
    for k, (item, sub) in enumerate(zip(items, subs)):
        f = as_fields(item, "file", sub)
        rows.append(
            {
                **links,
                "attachment_index": k,
                "name": f.text("name"),
                "mime_type": f.text("mime_type"),
                "url": f.text("url"),
                "scale_url": f.text("scale_url"),
                "content": f.text("content"),
                "size_bytes": f.int("file_size_in_bytes"),
                "duration": f.float("duration"),
                "transcript": f.text("transcript"),
                "transcript_url": f.text("transcript_url"),
                "transcript_start": f.float("transcript_start"),
                "transcript_end": f.float("transcript_end"),
                "source_locator": ctx.locate(sub),
                "extra": f.rest(),
            }
        )
    return rows


def attachment_rows(items: Any, sub: str, links: dict, ctx: RecordContext) -> list[dict]:
    """Rows for a message's ``content.attachments`` list at ``sub``."""
    if items is None:
        return []
    return file_rows(items, [f"{sub}[{k}]" for k in range(len(items))], links, ctx)
