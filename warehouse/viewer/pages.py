"""The viewer's pages as HTML: the list, one response, compare, spans.

Each page is a fragment (``templates/*.html``, Jinja with autoescape: every value from the data is
escaped) that a shell wraps: ``server.py`` serves each fragment as its own page, ``static.py`` puts
them all in one file. ``Links`` makes every link, so one template serves both: URLs on the server,
``#/...`` fragments inside a file. Model text with spans is made in ``text.py``; the tokens, sentences
and per-token values here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from markupsafe import Markup, escape

from warehouse.viewer import text as texts
from warehouse.viewer.data import BY_NAME, PAIRINGS, Reader, json_text

#: columns of a row not shown among its fields: shown elsewhere on the page, or the rows' own links
SHOWN_ELSEWHERE = {"response_id", "record_id", "prompt", "response", "system_prompt", "tokens", "token_ids",
                   "source_path", "source_locator", "source_format", "extra"}
#: columns of a related row that only link it (to its response, its record, its source)
LINK_COLUMNS = {"response_id", "record_id", "source_path", "source_locator"}
#: the core's child tables, drawn each in its own way; any other table's rows are drawn as fields
DRAWN = ("turns", "sentence_boundaries", "annotations", "evaluations")
#: characters of a value shown in a field before it is cut (a base64 attachment, a long JSON value)
FIELD_CHARS = 600
#: cells of a heatmap row that fit across the page; line colours of the trajectories
HEATMAP_WIDTH = 960
LINE_COLOURS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


@dataclass(frozen=True)
class Links:
    """Every link of the pages: server URLs, or fragments of one file (``static``)."""

    static: bool = False

    def home(self) -> str:
        return "#/" if self.static else "/"

    def response(self, response_id: str) -> str:
        return f"#/responses/{quote(response_id, safe='')}" if self.static else f"/responses/{quote(response_id, safe='')}"

    def list(self, sort: str | None = None, descending: bool = False, page: int = 1) -> str:
        query = {k: v for k, v in (("sort", sort), ("desc", "1" if descending else None),
                                   ("page", page if page > 1 else None)) if v is not None}
        return "/" + (f"?{urlencode(query)}" if query else "")

    def compare(self, of: str | None = None, by: str | None = None) -> str | None:
        if self.static:
            return None  # a file holds no compare pages: compare is the server's
        return "/compare?" + urlencode({"of": of, "by": by})

    def spans(self, category: str | None = None, page: int = 1) -> str:
        if self.static:
            return f"#/spans/{quote(category, safe='')}" if category is not None else "#/spans"
        if category is None:
            return "/spans"
        return "/spans?" + urlencode({"category": category, **({"page": page} if page > 1 else {})})


class Pages:
    def __init__(self, reader: Reader, links: Links):
        from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

        self.reader = reader
        self.links = links
        self.env = Environment(loader=PackageLoader("warehouse.viewer", "templates"),
                               autoescape=select_autoescape(default=True, default_for_string=True),
                               undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        self.env.globals.update(links=links, json_text=json_text, fmt=fmt, short=short, pairings=PAIRINGS)

    def _render(self, name: str, **context: Any) -> Markup:
        return Markup(self.env.get_template(name).render(**context))

    # --- the list -----------------------------------------------------------------------------------

    def list(self, sort: str | None = None, descending: bool = False, page: int = 1, size: int | None = 50) -> Markup:
        p = self.reader.page(sort, descending, page, size)
        return self._render("list.html", p=p, columns=self.reader.columns, where=self.reader.where,
                            snapshot=self.reader.snapshot.number, by_name=BY_NAME)

    # --- one response -------------------------------------------------------------------------------

    def response(self, response_id: str, bundle: dict | None = None) -> Markup:
        """One response's page; ``bundle``: what ``Reader.responses`` read for it, when read already."""
        return self._render("response.html", r=response_view(bundle or self.reader.response(response_id)))

    # --- compare ------------------------------------------------------------------------------------

    def compare(self, ids: list[str], by: str | None = None) -> Markup:
        views = [response_view(self.reader.response(i)) for i in ids]
        scores = self.reader.scores(ids)
        for v in views:
            for name in ("trait_score", "coherence_score"):
                if v["row"].get(name) is not None:
                    scores[v["id"]].setdefault(name, v["row"][name])
        names = sorted({n for s in scores.values() for n in s})
        table = []
        for n in names:
            first = scores[ids[0]].get(n)
            cells = []
            for i in ids:
                value = scores[i].get(n)
                delta = value - first if _number(value) and _number(first) and i != ids[0] else None
                cells.append({"value": value, "delta": delta})
            table.append({"name": n, "cells": cells})
        return self._render("compare.html", views=views, scores=table, by=by)

    # --- spans --------------------------------------------------------------------------------------

    def span_categories(self, within: list[str] | None = None) -> Markup:
        return self._render("categories.html", categories=self.reader.categories(within))

    def spans(self, category: str, page: int = 1, size: int | None = 50, within: list[str] | None = None) -> Markup:
        s = self.reader.spans(category, page, size, within)
        blocks = []
        for rid in s["ids"]:
            text = s["texts"].get(rid) or ""
            mine = [a for a in s["spans"] if a["response_id"] == rid]
            categories = [category]  # the page's one category: one colour on every block
            shown = [_span(a) for a in mine if a["category"] == category]
            blocks.append({"id": rid, "spans": [{"span": sp, "html": texts.in_context(text, sp, categories),
                                                 "fits": 0 <= sp.start < sp.end <= len(text)} for sp in shown]})
        return self._render("spans.html", s=s, blocks=blocks)

    def not_found(self, message: str) -> Markup:
        return self._render("missing.html", message=message)


# --- one response, as the template draws it -------------------------------------------------------------


def response_view(bundle: dict) -> dict[str, Any]:
    row, related = bundle["row"], bundle["related"]
    rid = row["response_id"]
    text = row.get("response")
    annotations = related.get("annotations", [])
    spans = [_span(a) for a in annotations
             if a.get("char_start") is not None and a.get("char_end") is not None and a.get("turn_index") is None]
    categories = sorted({s.category for s in spans})
    layout = texts.layout(text or "", spans, categories)
    apart = [{"span": s, "why": why, "html": texts.in_context(text or "", s, categories) if why.startswith("it crosses")
              else None} for s, why in layout.apart]
    by_turn: dict[int, dict[str, list]] = {}

    def beside(turn: int | None, kind: str, item: Any) -> bool:
        if turn is None:
            return False
        by_turn.setdefault(turn, {}).setdefault(kind, []).append(item)
        return True

    evaluations = [e for e in related.get("evaluations", []) if not beside(e.get("turn_index"), "evaluations", e)]
    notes = [a for a in annotations if not (a.get("char_start") is not None and a.get("turn_index") is None)
             and not beside(a.get("turn_index"), "annotations", a)]
    more = []
    for table, rows in related.items():
        if table in DRAWN or not rows:
            continue
        kept = [fields_of(r) for r in rows if not beside(r.get("turn_index"), "rows", (table, fields_of(r)))]
        if kept:
            more.append((table, kept))
    messages = _messages(related.get("turns", []), rid, text, by_turn)
    roles = {m["role"] for m in messages}
    in_turns = any(m["is_response"] for m in messages)
    fields = fields_of({k: v for k, v in row.items() if k not in SHOWN_ELSEWHERE})
    return {
        "id": rid, "row": row, "text": text, "html": layout.html, "categories": categories, "apart": apart,
        "legend": [(c, texts.category_class(categories, c), sum(s.category == c for s in spans)) for c in categories],
        "borderline": sum(s.borderline for s in spans), "messages": messages, "in_turns": in_turns,
        "show_system": bool(row.get("system_prompt")) and "system" not in roles,
        "show_prompt": row.get("prompt") is not None and "user" not in roles,
        "evaluations": evaluations, "notes": notes, "more": more, "fields": fields,
        "extra": json_text(row.get("extra")), "candidates": bundle["candidates"],
        "tokens": token_view(row, related.get("sentence_boundaries", []), bundle["token_values"]),
    }


def _span(a: dict) -> texts.Span:
    return texts.Span(a["char_start"], a["char_end"], a.get("category") or "", a.get("annotation_id"),
                      bool(a.get("borderline")), a.get("note"), a.get("intensity"))


def _messages(turns: list[dict], rid: str, text: str | None, by_turn: dict) -> list[dict]:
    """The conversation's messages: the record's shared turns and the response's own, in order (a message
    of several parts is one message); the response's last own assistant message holding its text is
    where its spans are drawn."""
    groups: dict[int, list[dict]] = {}
    for t in turns:
        groups.setdefault(t["turn_index"], []).append(t)
    messages = []
    for index, parts in groups.items():
        first = parts[0]
        content = "\n".join(p["content"] for p in parts if p.get("content") is not None) or None
        media = [{"mimetype": p.get("mimetype"), "ref": p.get("content_ref")} for p in parts if p.get("content_ref")]
        messages.append({
            "index": index, "role": first.get("role") or "(no role)", "content": content,
            "reasoning": first.get("reasoning_content"), "tool_calls": json_text(first.get("tool_calls")),
            "tool_call_id": first.get("tool_call_id"), "tool_name": first.get("tool_name"), "model": first.get("model"),
            "own": first.get("response_id") == rid, "media": media, "parts": json_text(first.get("content_parts")),
            "tokens": (first.get("token_start"), first.get("token_end")), "is_response": False,
            **{k: by_turn.get(index, {}).get(k, []) for k in ("evaluations", "annotations", "rows")},
        })
    for m in reversed(messages):
        if m["own"] and m["role"] == "assistant":
            m["is_response"] = text is not None and (m["content"] == text or m["content"] is None)
            break
    return messages


def fields_of(row: dict) -> list[tuple[str, str]]:
    """A related row's values to show: every column with a value, but its links; long values cut."""
    out = []
    for k, v in row.items():
        if k in LINK_COLUMNS or v is None or v == []:
            continue
        shown = json_text(v) if k == "extra" or isinstance(v, (dict, list)) else fmt(v)
        out.append((k, short(shown, FIELD_CHARS)))
    return out


# --- tokens, sentences, per-token values --------------------------------------------------------------


def token_view(row: dict, sentences: list[dict], values: list[dict]) -> dict | None:
    tokens = row.get("tokens") or []
    ids = row.get("token_ids") or []
    if not tokens and not values:
        return None
    end = row.get("prompt_end")
    split = end if isinstance(end, int) and 0 <= end <= len(tokens) else 0
    segments = {"prompt": tokens[:split], "response": tokens[split:]}
    sentence_of: dict[int, dict] = {}
    for s in sentences:
        if s.get("token_start") is None or s.get("token_end") is None:
            continue
        for i in range(max(0, s["token_start"]), min(len(segments["response"]), s["token_end"])):
            sentence_of.setdefault(i, s)
    vectors = _vectors(values, {k: len(v) for k, v in segments.items()})
    html = {seg: _token_html(seg, toks, ids[split if seg == "response" else 0:], sentence_of if seg == "response" else {})
            for seg, toks in segments.items() if toks}
    return {
        "html": html, "count": {k: len(v) for k, v in segments.items()}, "sentences": len(sentences),
        "cue_p": any(s.get("cue_p") is not None for s in sentences), "vectors": vectors,
        "heatmaps": {seg: _heatmap(vectors, seg) for seg in ("response", "prompt")
                     if any(v["values"][seg] for v in vectors)},
        "trajectory": _trajectory(vectors, "response"),
        "data": Markup(_json_for_script({"vectors": [{"label": v["label"], "aligned": v["aligned"],
                                                      "prompt": v["values"]["prompt"],
                                                      "response": v["values"]["response"]} for v in vectors]})),
    }


def _token_html(segment: str, tokens: list[str], ids: list, sentence_of: dict[int, dict]) -> Markup:
    out = []
    current = None
    for i, tok in enumerate(tokens):
        s = sentence_of.get(i)
        if s is not current:
            if current is not None:
                out.append("</span>")
            if s is not None:
                cue = s.get("cue_p")
                level = f" cue{min(9, max(0, int(cue * 10)))}" if _number(cue) and not math.isnan(cue) else ""
                title = f"sentence {s.get('sentence_num')}" + (f" · cue_p {cue:g}" if _number(cue) else "")
                out.append(f'<span class="sentence{level}" title="{escape(title)}">')
            current = s
        tid = f" · id {ids[i]}" if i < len(ids) and ids[i] is not None else ""
        out.append(f'<span class="tok" data-s="{segment[0]}" data-i="{i}" title="{segment} token {i}{tid}">'
                   f"{escape(tok)}</span>")
    if current is not None:
        out.append("</span>")
    return Markup("".join(out))


def _vector_label(v: dict) -> str:
    """What names a vector: its trait, layer, method and component, those it has (log probabilities
    have only a method)."""
    parts = [v["trait"], None if v["layer"] is None else f"L{v['layer']}", v["method"], v.get("component")]
    return " · ".join(str(p) for p in parts if p is not None)


def _vectors(values: list[dict], lengths: dict[str, int]) -> list[dict]:
    """The response's vectors (trait, layer, method, component, index), each with its values per segment, by token index."""
    vectors: dict[tuple, dict] = {}
    for v in values:
        key = (v["trait"], v["layer"], v["method"], v.get("component"), v.get("vector_index"))
        d = vectors.setdefault(key, {"label": _vector_label(v),
                                     "aligned": True, "values": {"prompt": [], "response": []},
                                     "source": v.get("source"), "baseline": v.get("baseline")})
        if v.get("aligned") is False:
            d["aligned"] = False
        segment = v["segment"] if v["segment"] in d["values"] else "response"
        seq = d["values"][segment]
        i = v["token_index"]
        if i is None or i < 0:
            continue
        seq.extend([None] * (i + 1 - len(seq)))
        seq[i] = None if v["value"] is None or not math.isfinite(v["value"]) else float(v["value"])
    out = list(vectors.values())
    for d in out:
        d["colour"] = LINE_COLOURS[out.index(d) % len(LINE_COLOURS)]
        for segment, seq in d["values"].items():
            if lengths.get(segment) and len(seq) != lengths[segment]:
                d["aligned"] = False  # more or fewer values than tokens: drawn by index, not on the text
    return out


def _heatmap(vectors: list[dict], segment: str) -> dict:
    """SVG rectangles: one row per vector, one cell per token, red above zero and blue below."""
    vectors = [v for v in vectors if any(x is not None for x in v["values"][segment])]
    n = max(len(v["values"][segment]) for v in vectors)
    cell = max(1.0, min(8.0, HEATMAP_WIDTH / max(n, 1)))
    rows = []
    for v in vectors:
        seq = v["values"][segment]
        top = max((abs(x) for x in seq if x is not None), default=0.0) or 1.0
        cells = "".join(f'<rect x="{i * cell:.2f}" width="{cell:.2f}" height="14" fill="{_colour(x, top)}"/>'
                        for i, x in enumerate(seq) if x is not None)
        rows.append({"label": v["label"], "cells": Markup(cells), "top": top})
    return {"rows": rows, "width": n * cell, "cell": cell, "n": n}


def _colour(x: float, top: float) -> str:
    t = max(-1.0, min(1.0, x / top))
    fade = int(255 * (1 - abs(t)))
    return f"rgb(255,{fade},{fade})" if t >= 0 else f"rgb({fade},{fade},255)"


def _trajectory(vectors: list[dict], segment: str) -> dict | None:
    series = [(v, v["values"][segment]) for v in vectors if any(x is not None for x in v["values"][segment])]
    if not series:
        return None
    every = [x for _, seq in series for x in seq if x is not None]
    low, high = min(every), max(every)
    span = (high - low) or 1.0
    n = max(len(seq) for _, seq in series)
    width, height = HEATMAP_WIDTH, 160
    step = width / max(n - 1, 1)
    lines = []
    for v, seq in series:
        points = " ".join(f"{i * step:.1f},{height - (x - low) / span * height:.1f}" for i, x in enumerate(seq)
                          if x is not None)
        lines.append({"label": v["label"], "colour": v["colour"], "points": points})
    zero = height - (0 - low) / span * height if low < 0 < high else None
    return {"lines": lines, "low": low, "high": high, "width": width, "height": height, "n": n, "zero": zero}


def _json_for_script(value: Any) -> str:
    """JSON for a ``<script type="application/json">`` block: ``<`` escaped, so no text ends the element."""
    import json

    return (json.dumps(value, ensure_ascii=False, allow_nan=False).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


# --- values as text ---------------------------------------------------------------------------------------


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def fmt(value: Any) -> str:
    """A value as the pages show it: numbers without noise, lists joined, nothing as an empty string."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v) for v in value)
    return str(value)


def short(value: Any, limit: int = 120) -> str:
    text = fmt(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"
