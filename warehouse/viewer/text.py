"""Text with its annotation spans marked, as escaped HTML: the one place model text becomes markup.

``char_start``/``char_end`` index Unicode code points of ``responses.response`` (docs/annotations.md),
as Python slices do; a browser's strings count UTF-16 units, so every cut is made here, in Python,
and an emoji or a CJK character is never split.

Each span becomes one element with ``data-category`` whose text is exactly ``text[start:end]``. A span
inside another nests in it; a span that *crosses* another (starts inside it and ends after it) cannot
be one element in the same tree, so it is shown apart, in its context, and its characters in the text
are outlined (``.crossing``) without being a span element. Every piece of text is escaped; attributes
are escaped; nothing from the data is ever markup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup, escape

#: characters of context shown on each side of a span outside its text (crossing spans, the spans page)
CONTEXT = 120


@dataclass
class Span:
    start: int
    end: int
    category: str
    annotation_id: str | None = None
    borderline: bool = False
    note: str | None = None
    intensity: float | None = None
    children: list[Span] = field(default_factory=list)

    def title(self) -> str:
        """The hover text: category, borderline, intensity, note."""
        parts = [self.category or "(no category)"]
        if self.borderline:
            parts.append("borderline")
        if self.intensity is not None:
            parts.append(f"intensity {self.intensity:g}")
        if self.note:
            parts.append(self.note)
        return " · ".join(parts)


@dataclass
class Layout:
    html: Markup  # the text with its nested spans
    apart: list[tuple[Span, str]]  # spans not drawn in the text, with why ("crosses another", "outside the text")


def category_class(categories: list[str], category: str) -> str:
    """A colour class for a category, by its place in the response's legend (the CSS has 12)."""
    return f"c{categories.index(category) % 12}" if category in categories else "c0"


def layout(text: str, spans: list[Span], categories: list[str]) -> Layout:
    """``text`` with ``spans`` (ranges into it) marked; the spans that cannot be drawn as one element in it."""
    apart: list[tuple[Span, str]] = []
    drawable = []
    for s in spans:
        if s.start < 0 or s.end > len(text) or s.start >= s.end:
            apart.append((s, f"its range {s.start}..{s.end} is outside the text ({len(text)} characters)"
                          if s.start < s.end else "it is empty"))
        else:
            drawable.append(s)
    roots: list[Span] = []
    stack: list[Span] = []
    crossing: list[Span] = []
    for s in sorted(drawable, key=lambda s: (s.start, -s.end)):
        s.children = []
        while stack and stack[-1].end <= s.start:
            stack.pop()
        if stack and s.end > stack[-1].end:
            crossing.append(s)
            apart.append((s, "it crosses another span"))
            continue
        (stack[-1].children if stack else roots).append(s)
        stack.append(s)
    cuts = sorted({p for s in crossing for p in (s.start, s.end)})
    html = _render(text, 0, len(text), roots, categories, crossing, cuts)
    return Layout(Markup(html), apart)


def _render(text: str, start: int, end: int, spans: list[Span], categories: list[str],
            crossing: list[Span], cuts: list[int]) -> str:
    out = []
    at = start
    for s in spans:
        out.append(_plain(text, at, s.start, crossing, cuts))
        out.append(_open(s, categories))
        out.append(_render(text, s.start, s.end, s.children, categories, crossing, cuts))
        out.append("</mark>")
        at = s.end
    out.append(_plain(text, at, end, crossing, cuts))
    return "".join(out)


def _open(s: Span, categories: list[str]) -> str:
    classes = ["span", category_class(categories, s.category)]
    if s.borderline:
        classes.append("borderline")
    if s.children:
        classes.append("outer")
    attrs = [f'class="{" ".join(classes)}"', f'data-category="{escape(s.category)}"', f'title="{escape(s.title())}"']
    if s.annotation_id:
        attrs.append(f'data-annotation-id="{escape(s.annotation_id)}"')
    if s.borderline:
        attrs.append('data-borderline="true"')
    return f"<mark {' '.join(attrs)}>"


def _plain(text: str, start: int, end: int, crossing: list[Span], cuts: list[int]) -> str:
    """Text between spans; the parts a crossing span covers outlined (no ``data-category``: not the span)."""
    if start >= end:
        return ""
    if not crossing:
        return str(escape(text[start:end]))
    points = [start, *(c for c in cuts if start < c < end), end]
    out = []
    for a, b in zip(points, points[1:]):
        piece = escape(text[a:b])
        over = [s for s in crossing if s.start <= a and b <= s.end]
        if over:
            title = escape(" / ".join(s.title() for s in over))
            out.append(f'<span class="crossing" title="{title} (shown below: it crosses another span)">{piece}</span>')
        else:
            out.append(str(piece))
    return "".join(out)


def in_context(text: str, span: Span, categories: list[str], context: int = CONTEXT) -> Markup:
    """One span in its context: up to ``context`` characters either side, the span as its element."""
    a, b = max(0, span.start - context), min(len(text), span.end + context)
    lead = ("…" if a > 0 else "") + text[a:span.start]
    tail = text[span.end:b] + ("…" if b < len(text) else "")
    inner = Span(span.start, span.end, span.category, span.annotation_id, span.borderline, span.note, span.intensity)
    return Markup(f"{escape(lead)}{_open(inner, categories)}{escape(text[span.start:span.end])}</mark>{escape(tail)}")
