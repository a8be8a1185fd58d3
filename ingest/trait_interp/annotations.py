"""trait-interp annotation files into ``annotations`` and ``annotation_sets``.

Forms (NOTES.md, "Annotation schema & span mapping"):

============  ==================================================================  ======================
form          shape                                                               one record per
============  ==================================================================  ======================
unified       ``{"annotations": [{idx, spans, note?, borderline?}], metadata?,    entry
              categories?}``
dense         ``{"annotations": [[{span}], [], ...]}`` (idx = position)             entry
hacks         ``{"responses": [{"hacks": [{type, text}]}], "hack_types": {...}}``   response
biases        ``[{"response_idx", "biases": [{bias, text}]}]``                     entry
detailed      ``{"metadata"|"description", "detailed_annotations":                 prompt id
              {pid: {exploitations: [{bias, tokens: [s, e], text, note}]}}}``
audit         ``{pid: {"annotations": [{token_start, token_end, label}]}}``         prompt id
              (absolute token indices)
sentence_     ``{problem_id: {condition: [{sentence_num, category, ...}]}}``       problem and condition
categories
============  ==================================================================  ======================

The file's root (metadata, category definitions) is one more record, into
``annotation_sets``. Every span keeps its row, found or not; entry-level facts
(a note about the response, fields such as ``intended_bias_exploited``) become
one ``level = 'response'`` row, so nothing in the file is dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from warehouse.formatkit.readers import json_whole_record
from warehouse.formatkit.records import Mapped, Record, RecordContext, RecordError, key_step
from warehouse.formatkit.source import SourceFile

from .. import spans as spanlib
from ..fields import Fields, as_fields, as_int, as_text, children, json_type, preview
from .annotation_targets import Target, resolver_for
from .kinds import ANNOTATIONS, KIND


def _key(k: str) -> str:
    return key_step(k)  # a long key is cut, with a hash (warehouse.formatkit.records)


def classify(value: Any) -> tuple[str, list[tuple[str, Any, Any]], dict] | None:
    """(form, [(locator, idx, entry)], root fields) or None when no form fits."""
    if isinstance(value, list):
        if value and all(isinstance(e, dict) and "response_idx" in e for e in value):
            return "biases", [(f"[{i}]", e.get("response_idx"), e) for i, e in enumerate(value)], {}
        return None
    if not isinstance(value, dict):
        return None
    root = {k: v for k, v in value.items()}
    if isinstance(value.get("annotations"), list):
        entries = value["annotations"]
        root.pop("annotations")
        if entries and all(isinstance(e, list) for e in entries):
            return "dense", [(f".annotations[{i}]", i, e) for i, e in enumerate(entries)], root
        return "unified", [
            (f".annotations[{i}]", (e.get("idx", e.get("id")) if isinstance(e, dict) else None), e)
            for i, e in enumerate(entries)
        ], root
    if isinstance(value.get("responses"), list) and (
        "hack_types" in value or any(isinstance(r, dict) and "hacks" in r for r in value["responses"])
    ):
        root.pop("responses")
        return "hacks", [(f".responses[{i}]", i, e) for i, e in enumerate(value["responses"])], root
    if isinstance(value.get("detailed_annotations"), dict):
        root.pop("detailed_annotations")
        return "detailed", [
            (".detailed_annotations" + _key(pid), pid, e) for pid, e in value["detailed_annotations"].items()
        ], root
    if value and all(isinstance(v, dict) and isinstance(v.get("annotations"), list) for v in value.values()):
        return "audit", [(_key(pid), pid, e) for pid, e in value.items()], {}
    if value and all(
        isinstance(v, dict) and v and all(
            isinstance(x, list) and all(isinstance(i, dict) and "sentence_num" in i for i in x) for x in v.values()
        )
        for v in value.values()
    ):
        return "sentence_categories", [
            (_key(pid) + _key(cond), (pid, cond), items) for pid, conds in value.items() for cond, items in conds.items()
        ], {}
    return None


def annotation_records(src: SourceFile) -> Iterator[Record]:
    doc = json_whole_record(src)  # the form is a property of the whole document (some are arrays)
    if doc.error is not None:
        yield doc
        return
    found = classify(doc.value)
    if found is None:
        keys = ", ".join(sorted(doc.value)[:8]) if isinstance(doc.value, dict) else json_type(doc.value)
        yield Record("", doc.value, error=RecordError(
            f"not a known trait-interp annotation form (top level: {keys}); expected 'annotations', "
            "'detailed_annotations', 'responses' with hacks, a list with response_idx, or per-prompt 'annotations'"
        ))
        return
    form, entries, root = found
    resolver = resolver_for(src, form, root)
    yield Record("", root, envelope={KIND: ANNOTATIONS, "part": "set", "form": form, "target": resolver.describe()})
    for i, (locator, idx, entry) in enumerate(entries):
        yield Record(locator, entry, index=i,
                     envelope={KIND: ANNOTATIONS, "part": "entry", "form": form, "idx": idx, "target": resolver.target(idx)})


# --- mapping ---------------------------------------------------------------------------


def map_annotations(record: Record, ctx: RecordContext) -> Mapped:
    env = record.envelope or {}
    if env.get("part") == "set":
        return {"annotation_sets": [_set_row(record.value, env)]}
    form, target = env["form"], env["target"]
    if form == "detailed":
        return {"annotations": _detailed(record.value, target, ctx)}
    if form == "audit":
        return {"annotations": _audit(record.value, target, ctx)}
    if form == "sentence_categories":
        return {"annotations": _sentences(record.value, env["idx"], ctx)}
    spans, borderline, note, rest = _span_entry(form, record.value)
    rows = []
    for kind, items in (("spans", spans), ("borderline", borderline)):
        repeats: Counter = Counter()
        for j, (sub, item) in enumerate(items):
            f = as_fields(item, "span", sub)
            text = as_text(item.get("span", item.get("text")), "span", sub + ".span")
            f.used.update(("span", "text"))
            if text is None:
                raise RecordError("span: missing (each span object needs a 'span' string)", sub_locator=sub)
            repeats[text] += 1
            category = f.text("category")
            if category is None and "type" in item:
                category = f.text("type")
            if category is None and "bias" in item:
                category = f"bias_{item['bias']}"
            rows.append(_span_row(
                ctx, sub, target, text=text, repeat=repeats[text], category=category,
                intensity=f.float("intensity"), note=f.text("note"), borderline=kind == "borderline", extra=f.rest(),
            ))
    # An entry listed with no spans says "looked at, nothing found": keep it as a response row.
    # (In the dense form an empty list is only a placeholder for an unannotated response.)
    if note is not None or rest or (not rows and form != "dense"):
        rows.append(_response_row(ctx, target, note=note, extra=rest))
    written = _entry_key(form, record.value)
    for row in rows:
        row["entry_key"] = written
    return {"annotations": rows}


#: the keys an entry of the unified form names its response with (the export writes every span form as
#: unified; the others name it by position, by ``response_idx`` or by an object key)
_ENTRY_KEYS = {"unified": ("idx", "id")}


def _entry_key(form: str, entry: Any) -> dict | None:
    """The entry's own name for its response, as written (``schema.ENTRY_KEY``)."""
    if not isinstance(entry, dict):
        return None
    return {k: entry[k] for k in _ENTRY_KEYS.get(form, ()) if k in entry} or None


def _set_row(root: dict, env: dict) -> dict:
    f = Fields(root)
    metadata = f.raw("metadata")
    description = f.raw("description")
    if metadata is None and description is not None:
        metadata = {"description": description}
    elif description is not None:
        f.used.discard("description")
    categories = f.raw("categories")
    hack_types = f.raw("hack_types")
    if categories is None and isinstance(hack_types, dict):
        categories = {k: (v.get("description") if isinstance(v, dict) else v) for k, v in hack_types.items()}
    elif hack_types is not None:
        f.used.discard("hack_types")
    return {"form": env["form"], "target": env["target"], "metadata": metadata, "categories": categories, "extra": f.rest()}


def _span_entry(form: str, entry: Any) -> tuple[list, list, str | None, dict | None]:
    """(spans, borderline spans, entry note, other entry fields), spans as (sub-locator, object)."""
    if form == "dense":
        if not isinstance(entry, list):
            raise RecordError(f"expected a list of spans, got {json_type(entry)} {preview(entry)}")
        return [(f"[{j}]", s) for j, s in enumerate(entry)], [], None, None
    e = as_fields(entry, "annotation entry")
    if form == "unified":
        e.used.update(("idx", "id"))
        spans_key = "spans"
    elif form == "hacks":
        spans_key = "hacks"
    else:  # biases
        e.used.add("response_idx")
        spans_key = "biases"
    spans = e.list(spans_key) or []
    borderline = e.list("borderline") or []
    note = e.text("note")
    return (
        [(f".{spans_key}[{j}]", s) for j, s in enumerate(spans)],
        [(f".borderline[{j}]", s) for j, s in enumerate(borderline)],
        note,
        e.rest(),
    )


def _base(ctx: RecordContext, sub: str, target: Target, level: str) -> dict:
    return {
        "annotation_id": ctx.row_id(sub),
        "response_id": target.response_id,
        "level": level,
        "target": target.where,
        "source_locator": ctx.locate(sub),
    }


def _span_row(ctx, sub, target: Target, *, text, repeat, category, intensity, note, borderline, extra,
              file_tokens: tuple[int, int] | None = None) -> dict:
    row = _base(ctx, sub, target, "span")
    reasons = []
    if target.text is None:
        m = spanlib.CharMatch(None, None, 0, None, target.missing or "no response text")
        row["occurrences"] = None
    else:
        m = spanlib.find_span(target.text, text, repeat)
        row["occurrences"] = m.occurrences
    reasons.append(m.reason)
    row.update(span=text, char_start=m.start, char_end=m.end, match=m.match, category=category,
               intensity=intensity, note=note, borderline=borderline, extra=extra)
    if file_tokens is not None:
        row.update(token_start=file_tokens[0], token_end=file_tokens[1], token_source="annotation_file",
                   token_base="response", prompt_tokens=target.prompt_tokens)
    elif m.start is not None:
        tr = spanlib.token_range(target.offsets, m.start, m.end) if target.offsets is not None else None
        if tr is not None:
            row.update(token_start=tr[0], token_end=tr[1], token_source=target.token_source,
                       token_base="response", prompt_tokens=target.prompt_tokens)
            if target.tokenizer is not None:
                row.update(tokenizer=target.tokenizer.name, tokenizer_revision=target.tokenizer.revision)
        else:
            reasons.append(target.no_tokens or "no token covers the span")
    row["unresolved_reason"] = "; ".join(r for r in reasons if r) or None
    return row


def _response_row(ctx, target: Target, *, note: str | None, extra: dict | None, sub: str = "") -> dict:
    row = _base(ctx, sub, target, "response")
    row.update(note=note, extra=extra)
    if target.missing:
        row["unresolved_reason"] = target.missing
    return row


def _detailed(entry: Any, target: Target, ctx) -> list[dict]:
    e = as_fields(entry, "annotation entry")
    rows, repeats = [], Counter()
    for _, f, _ in children(e.list("exploitations"), ".exploitations", "exploitation"):
        ranges = _token_ranges(f, f.sub)
        texts = _range_texts(f.raw("text"), len(ranges), f.sub)
        bias = f.raw("bias")
        note = f.text("note")
        extra = f.rest() or {}
        if bias is not None:
            extra["bias"] = bias
        for (at, tokens), text in zip(ranges, texts):
            repeats[text] += 1
            rows.append(_span_row(
                ctx, at, target, text=text or "", repeat=repeats[text], category=f"bias_{bias}" if bias is not None else None,
                intensity=None, note=note, borderline=False, extra=extra or None, file_tokens=tokens,
            ))
    rest = e.rest()
    if rest or not rows:
        rows.append(_response_row(ctx, target, note=None, extra=rest))
    return rows


def _token_ranges(f: Fields, sub: str) -> list[tuple[str, tuple[int, int] | None]]:
    """(locator, (start, end)) of each span an exploitation marks: its ``tokens`` range, or one per range of
    ``tokens_multiple`` (located ``.tokens_multiple[k]``); one span with no range when it gives neither."""
    ranges: list[tuple[str, tuple[int, int] | None]] = []
    if "tokens" in f:
        ranges.append((sub, _token_range(f.raw("tokens"), "tokens", sub + ".tokens")))
    if "tokens_multiple" in f:
        several = f.list("tokens_multiple") or []
        ranges += [(f"{sub}.tokens_multiple[{k}]", _token_range(r, "tokens_multiple", f"{sub}.tokens_multiple[{k}]"))
                   for k, r in enumerate(several)]
    return ranges or [(sub, None)]


def _token_range(value: Any, key: str, at: str) -> tuple[int, int]:
    if not (isinstance(value, list) and len(value) == 2):
        got = "null" if value is None else f"{json_type(value)} {preview(value)}"
        raise RecordError(f"{key}: expected a token range [start, end], got {got}", sub_locator=at)
    return as_int(value[0], key, at), as_int(value[1], key, at)


def _range_texts(text: Any, n: int, sub: str) -> list[str | None]:
    """The span text of each range: one string for all of them, or one string per range."""
    if text is None or isinstance(text, str):
        return [text] * n
    if isinstance(text, list) and len(text) == n and all(t is None or isinstance(t, str) for t in text):
        return text
    raise RecordError(
        f"text: expected a string (or one string per token range), got {json_type(text)} {preview(text)}",
        sub_locator=sub + ".text",
    )


def _audit(entry: Any, target: Target, ctx) -> list[dict]:
    e = as_fields(entry, "audit entry")
    rows = []
    for _, f, _ in children(e.list("annotations"), ".annotations", "annotation"):
        start, end = f.int("token_start"), f.int("token_end")
        row = _base(ctx, f.sub, target, "span")
        text = None
        if target.tokens is not None and start is not None and end is not None:
            text = "".join(target.tokens[start:end])
        row.update(
            span=text, category=f.text("label"), token_start=start, token_end=end, token_source="annotation_file",
            token_base="sequence", extra=f.rest(),
            unresolved_reason=target.missing or "absolute token range (audit file): no character range in the response",
        )
        rows.append(row)
    rest = e.rest()
    if rest or not rows:
        rows.append(_response_row(ctx, target, note=None, extra=rest))
    return rows


def _sentences(items: Any, key: tuple, ctx) -> list[dict]:
    problem, condition = key
    if not isinstance(items, list):
        raise RecordError(f"expected a list of sentence categories, got {json_type(items)}")
    rows = []
    for _, f, locator in children(items, "", "sentence category", ctx):
        num, category = f.int("sentence_num"), f.text("category")
        extra = {"problem_id": problem, "condition": condition, "sentence_num": num, **(f.rest() or {})}
        rows.append({
            "annotation_id": ctx.row_id(f.sub), "level": "sentence",
            "target": f"problem {problem}, {condition}, sentence {num}",
            "category": category, "source_locator": locator, "extra": extra,
        })
    return rows

