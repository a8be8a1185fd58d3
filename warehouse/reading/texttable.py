"""A plain aligned text table that fits a width, as DuckDB's own CLI fits its tables.

What it shows is text from the data, models' text included, so it is shown as text: control
characters (an escape sequence would be obeyed by the terminal) and the Unicode controls
that reorder or hide text are written as escapes (``\\x1b``, ``\\u202e``); a newline is ``\\n``.
Widths are the terminal's columns (``wcwidth``: a CJK character takes two).

To fit ``width``, the widest columns are cut first (an ellipsis says so), down to
``MIN_WIDTH``; the columns that still do not fit are left out, from the right, and a note
names them. A value that looks like a path (a ``/`` and no space) keeps its start and its
end, ``/very/lo…/file.json``: the end is where paths differ.
"""

from __future__ import annotations

import math
import re
import textwrap
from typing import Any

#: characters of a cell before it is cut, whatever the width
CELL_WIDTH = 60
#: the narrowest a column is cut to before columns are left out
MIN_WIDTH = 16
#: between two columns
GAP = "  "

#: what is written as an escape: controls (C0, DEL, C1) and the invisible ones that reorder or hide
#: text (bidirectional overrides and isolates, marks, zero-width spaces, the byte-order mark)
HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def escaped(text: str) -> str:
    """``text`` with nothing a terminal would obey or hide: newlines as ``\\n``, tabs as a space, the
    rest of ``HIDDEN`` as ``\\xNN`` / ``\\uNNNN``."""
    text = text.replace("\n", "\\n").replace("\t", " ")
    return HIDDEN.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


def width_of(text: str) -> int:
    """Terminal columns of escaped ``text``: one a character for printable ASCII, else as ``wcwidth`` says
    (imported only then: most answers are ASCII, and a cold ``warehouse sql`` would pay for its tables)."""
    if text.isascii() and text.isprintable():
        return len(text)
    from wcwidth import wcswidth, wcwidth

    n = wcswidth(text)
    return n if n >= 0 else sum(max(wcwidth(c), 0) for c in text)


def _head(text: str, room: int) -> str:
    """The longest start of ``text`` that takes at most ``room`` columns."""
    if text.isascii() and text.isprintable():
        return text[:room]
    from wcwidth import wcwidth

    used = 0
    for i, c in enumerate(text):
        used += max(wcwidth(c), 0)
        if used > room:
            return text[:i]
    return text


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` columns: whole, or cut with ``…`` (in the middle for a path)."""
    if width_of(text) <= width:
        return text
    room = max(width - 1, 0)
    if "/" in text and not any(c.isspace() for c in text):  # a path: keep its end too
        front = _head(text, room // 3)
        back = _head(text[::-1], room - width_of(front))[::-1]
        return front + "…" + back
    return _head(text, room) + "…"


def cell_text(value: Any) -> str:
    """A value as a cell shows it, before any cut: NULL for None, escaped text otherwise."""
    if value is None:
        return "NULL"
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    return escaped(str(value))


def fit(natural: list[int], width: int | None) -> list[int]:
    """The width of each column shown, from the left: ``natural`` when the line fits ``width`` (None: no
    limit); else the widest cut first, none below ``MIN_WIDTH`` (or its own width), and the columns
    that still do not fit left out (fewer widths are returned). The first column is always shown."""
    if width is None:
        return natural

    def line(widths: list[int]) -> int:
        return sum(widths) + len(GAP) * (len(widths) - 1)

    shown = len(natural)
    while shown > 1 and line([min(w, MIN_WIDTH) for w in natural[:shown]]) > width:
        shown -= 1
    kept = natural[:shown]
    cap = max(kept, default=0)
    while cap > 1 and line([min(w, cap) for w in kept]) > width:
        cap -= 1
    return [min(w, cap) for w in kept]


def render(names: list[str], rows: list[list[Any]], total: int | None = None, *, width: int | None = None,
           more_rows: str = "", more_columns: str = "") -> str:
    """``rows`` under ``names`` as an aligned text table of at most ``width`` columns (None: any).

    With ``total`` larger than ``len(rows)``, the footer says how many rows there were, and
    ``more_rows`` how to see them; columns left out to fit are named in a note, with ``more_columns``.
    """
    heads = [escaped(n) for n in names]
    cells = [[cut(cell_text(v), CELL_WIDTH) for v in row] for row in rows]
    natural = [max([width_of(h)] + [width_of(r[i]) for r in cells]) for i, h in enumerate(heads)]
    widths = fit(natural, width)

    def line(values: list[str]) -> str:
        texts = [cut(v, w) for v, w in zip(values, widths)]
        return GAP.join(t + " " * (w - width_of(t)) for t, w in zip(texts, widths)).rstrip()

    out = [line(heads), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    total = len(rows) if total is None else total
    footer = f"({total} row{'s' if total != 1 else ''}"
    if total > len(rows):
        footer += f", {len(rows)} shown{'; ' + more_rows if more_rows else ''}"
    out.append(footer + ")")
    left_out = heads[len(widths):]
    if left_out:
        note = (f"({len(left_out)} more column{'s' if len(left_out) != 1 else ''} did not fit in {width} characters: "
                f"{', '.join(left_out)}{'; ' + more_columns if more_columns else ''})")
        out += textwrap.wrap(note, width=max(width or 0, 40), break_long_words=True, break_on_hyphens=False)
    return "\n".join(out) + "\n"
