"""trait-interp per-token projection files into ``token_values`` and ``projection_files``.

One file holds, for one response and one trait, a score per token of the prompt and of the
response for each trait vector (a layer, a method), with the activation's norm per token and,
since March 2026, a normalised score. The shapes written since November 2025, told apart as
../shared/formats/projections.md (section 4) does:

=========  =======================================================================  ==================
shape      ``projections``                                                          per-token norms
=========  =======================================================================  ==================
H0-H2, H3  an object of nested arrays, ``{prompt, response}: [token][layer][sublayer]``  none
           (H0-H2 also hold the response itself: ``prompt``/``response`` objects)
H4-H5a     an object of two arrays, ``{prompt, response}``; the vector in            top-level
           ``metadata.vector_source``                                                ``token_norms``
H5b        a list of vectors ``{method, layer, selection_source, baseline,           top-level, the first
           prompt, response}``                                                       vector's layer only
H6-H9      the same list, each vector with its ``token_norms``; H9 adds              per vector
           ``normalized_prompt``/``normalized_response``
=========  =======================================================================  ==================

The file is one record. Each vector's prompt and response arrays become one ``token_values`` row
each (the view shows a row per token), numbers kept as read: a list is never padded, cut or
shifted to the response's tokens, and ``n_tokens`` (the response's count, from the metadata)
says whether it lines up. The response is the file beside it in ``responses/`` (its id is
computed from the path, so the rows are the same whether or not that file is ingested, before or
after); the first shapes hold their own response, which becomes a ``responses`` row of the file.
Everything else of the file (metadata, activation norms per layer, massive dimensions, logit
lens) is its ``projection_files`` row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from warehouse.decimals import fits, floats
from warehouse.formatkit.records import Mapped, Record, RecordContext, RecordError, stable_id

from ..fields import Fields, as_fields, as_text, json_type, preview
from .kinds import ProjectionPlace
from .responses import map_response

SEGMENTS = ("prompt", "response")
#: names of the sublayers of the nested shapes, by how many there are (H0-H2: three; H3 from 2025-12-12: two)
_SUBLAYERS = {3: ("residual_in", "after_attn", "residual_out"), 2: ("after_attn", "residual_out")}
#: per-file data of the older shapes: columns of projection_files
_PER_FILE = ("activation_norms", "massive_dim_data", "logit_lens")
#: what to do about a file trait-interp would not have written
_FIX = "fix the file, or project the response again with trait-interp"


@dataclass
class Segment:
    name: str  # prompt or response
    at: str  # the scores' place in the file (`.projections[1].response`)
    scores: np.ndarray
    norms: np.ndarray | None = None
    normalized: np.ndarray | None = None


@dataclass
class Vector:
    attrs: dict[str, Any]  # layer, method, component, selection_source, baseline, centered, position
    segments: list[Segment] = field(default_factory=list)
    extra: dict | None = None


def map_projections(record: Record, ctx: RecordContext) -> Mapped:
    place: ProjectionPlace = record.envelope["place"]
    f = as_fields(record.value, "projection file")
    projections = f.raw("projections")
    metadata = Fields(f.object("metadata") or {}, ".metadata")
    own_response = _holds_its_response(f.obj)
    if isinstance(projections, list):
        vectors, shape = _listed(projections, f, metadata), _list_shape(projections, f.obj, metadata)
    elif isinstance(projections, dict) and _nested(projections):
        vectors, shape = _layered(projections, metadata, place), ("H0-H2" if own_response else "H3")
    elif isinstance(projections, dict):
        vectors, shape = _single(projections, f, metadata), "H4-H5a"
    else:
        keys = ", ".join(sorted(f.obj)[:8]) or "none"
        raise RecordError(
            f"not a trait-interp projection file: 'projections' is {json_type(projections)}, expected a list of vectors "
            f"or an object of prompt/response scores (keys: {keys})", sub_locator=".projections")

    out: Mapped = {}
    if own_response:  # its response is inside: a row of its own, as the file's response record
        response = {k: v for k, v in f.obj.items() if k not in ("projections", *_PER_FILE)}
        out = map_response(response, ctx)
        response_id = out["responses"][0]["response_id"]
        counts = {side: _own_count(f.obj[side]) for side in SEGMENTS if isinstance(f.obj.get(side), dict)}
        f.used.update(response)  # mapped there: not the projection file's extra
    else:
        response_id = stable_id(place.response_path, "") if place.response_path else None
        counts = {}
    counts = {"prompt": metadata.int("n_prompt_tokens"), "response": metadata.int("n_response_tokens"), **counts}
    out["token_values"] = _rows(vectors, response_id, place.trait, counts, ctx)
    out["projection_files"] = [_file_row(f, metadata, response_id, None if own_response else place.response_path,
                                         shape, counts)]
    return out


# --- the shapes ------------------------------------------------------------------------------------


def _listed(entries: list, f: Fields, metadata: Fields) -> list[Vector]:
    """H5b-H9: one vector per entry. H5b's norms are top-level, of the first vector's layer only."""
    common = _file_attrs(metadata)
    vectors = []
    for i, entry in enumerate(entries):
        at = f".projections[{i}]"
        e = as_fields(entry, "projection vector", at)
        attrs = {**common, "method": e.text("method"), "layer": e.int("layer"),
                 "selection_source": e.text("selection_source"), "baseline": e.float("baseline")}
        vector = Vector(attrs, _segments(e, at))
        norms = e.object("token_norms")
        if norms is not None:
            _add_norms(vector, Fields(norms, f"{at}.token_norms"))
        vector.extra = {**(e.rest() or {}), **(vector.extra or {})} or None
        vectors.append(vector)
    shared = f.object("token_norms")
    if shared is not None:  # H5b: the norms of the first vector's layer, written once
        first = vectors[0].attrs["layer"] if vectors else None
        takers = [v for v in vectors if v.attrs["layer"] == first and all(s.norms is None for s in v.segments)]
        for v in takers:
            _add_norms(v, Fields(shared, ".token_norms"))
        if not takers:
            f.used.discard("token_norms")  # no vector of their layer: kept in the file's extra
    return vectors


def _single(projections: dict, f: Fields, metadata: Fields) -> list[Vector]:
    """H4-H5a: one vector, described by ``metadata.vector_source``; norms top-level."""
    p = Fields(projections, ".projections")
    s = _vector_source(metadata)
    common = _file_attrs(metadata)
    attrs = {
        "method": s.text("method"), "layer": s.int("layer"),
        "component": _first(s.text("component"), common["component"]),
        "selection_source": s.text("selection_source"), "baseline": s.float("baseline"),
        "centered": _first(s.bool("centered"), common["centered"]),
        "position": _first(s.text("position"), common["position"]),
    }
    vector = Vector(attrs, _segments(p, ".projections"))
    norms = f.object("token_norms")
    if norms is not None:
        _add_norms(vector, Fields(norms, ".token_norms"))
    vector.extra = {**(p.rest() or {}), **(vector.extra or {})} or None
    return [vector]


def _vector_source(metadata: Fields) -> Fields:
    """``metadata.vector_source`` (H2 from 2025-12-09 to H5a): the vector scored. Read without taking it
    from the metadata, which keeps it whole (its model, experiment, trait) in projection_files.metadata."""
    source = metadata.obj.get("vector_source")
    return as_fields({} if source is None else source, "vector_source", ".metadata.vector_source")


def _layered(projections: dict, metadata: Fields, place: ProjectionPlace) -> list[Vector]:
    """H0-H3: ``[token][layer][sublayer]`` per segment, every layer scored with one vector: a vector
    row per (layer, sublayer), ``layer`` the layer scored (the vector's own layer stays in the metadata)."""
    p = Fields(projections, ".projections")
    source = _vector_source(metadata)
    # H2's metadata names the method itself; read without taking it, so the metadata stays whole
    method = _first(source.text("method"), as_text(metadata.obj.get("method"), "method", ".metadata.method"))
    cubes = {}
    for side in SEGMENTS:
        if side in projections:
            cubes[side] = _cube(p.raw(side), f".projections.{side}")
    shapes = {c.shape[1:] for c in cubes.values() if c.shape[0]}
    if len(shapes) > 1:
        raise RecordError(f"the prompt and response scores have different [layer][sublayer] shapes ({sorted(shapes)}); "
                          f"{_FIX}", sub_locator=".projections")
    layers, sublayers = shapes.pop() if shapes else (0, 0)
    names = _SUBLAYERS.get(sublayers) or (("attn_out",) if place.stream == "attn" and sublayers == 1 else None)
    vectors = []
    for layer in range(layers):
        for k in range(sublayers):
            attrs = {"method": method, "layer": layer, "component": names[k] if names else None,
                     "selection_source": source.text("selection_source"), "baseline": source.float("baseline"),
                     "centered": source.bool("centered"), "position": source.text("position")}
            segments = [Segment(side, f".projections.{side}", cube[:, layer, k] if cube.shape[0] else cube.reshape(0))
                        for side, cube in cubes.items()]
            vectors.append(Vector(attrs, segments, None if names else {"sublayer": k}))
    rest = p.rest()
    if rest and vectors:
        vectors[0].extra = {**(vectors[0].extra or {}), **rest}
    return vectors


def _nested(projections: dict) -> bool:
    """Whether the scores are nested arrays (a list per token) rather than one number per token."""
    for side in SEGMENTS:
        v = projections.get(side)
        if isinstance(v, list) and v:
            return isinstance(v[0], list)
    return False


def _holds_its_response(obj: dict) -> bool:
    """The first shapes carry the response: ``prompt``/``response`` objects with its text and tokens."""
    return any(isinstance(obj.get(side), dict) for side in SEGMENTS)


def _list_shape(entries: list, obj: dict, metadata: Fields) -> str:
    vectors = [e for e in entries if isinstance(e, dict)]
    if any(k.startswith("normalized_") for e in vectors for k in e) or "score_mode" in metadata.obj:
        return "H9"
    if "token_norms" in obj and not any("token_norms" in e for e in vectors):
        return "H5b"
    if "activation_norms" in obj:
        return "H6-H7"
    return "H8"


# --- arrays ------------------------------------------------------------------------------------------


def _segments(e: Fields, at: str) -> list[Segment]:
    """The vector's prompt and response scores, and its normalised scores."""
    segments = []
    for side in SEGMENTS:
        if side not in e.obj:
            if f"normalized_{side}" in e.obj:
                raise RecordError(f"normalized_{side} without {side} scores; {_FIX}", sub_locator=f"{at}.normalized_{side}")
            continue
        scores = numbers(e.raw(side), f"{at}.{side}")
        normalized = e.raw(f"normalized_{side}")
        segment = Segment(side, f"{at}.{side}", scores)
        if normalized is not None:
            segment.normalized = _same_length(numbers(normalized, f"{at}.normalized_{side}"), segment,
                                              f"{at}.normalized_{side}")
        segments.append(segment)
    return segments


def _add_norms(vector: Vector, norms: Fields) -> None:
    """Each segment's norms, one per score (a norm belongs to its token: a list of another length is
    no norm of these scores)."""
    by_name = {s.name: s for s in vector.segments}
    for side in SEGMENTS:
        v = norms.raw(side)
        if v is None:
            continue
        at = f"{norms.sub}.{side}"
        segment = by_name.get(side)
        if segment is None:
            raise RecordError(f"token norms of the {side} without {side} scores; {_FIX}", sub_locator=at)
        segment.norms = _same_length(numbers(v, at), segment, at)
    rest = norms.rest()
    if rest:
        vector.extra = {**(vector.extra or {}), "token_norms": rest}


def _same_length(values: np.ndarray, segment: Segment, at: str) -> np.ndarray:
    if len(values) != len(segment.scores):
        raise RecordError(f"{len(values)} values where {segment.at} has {len(segment.scores)} scores: each belongs to "
                          f"the token of its score, so the lists must be as long; {_FIX}", sub_locator=at)
    return values


def numbers(v: Any, at: str) -> np.ndarray:
    """A JSON list of numbers as float64, or RecordError naming the first element that is not one."""
    if type(v) is not list:
        raise RecordError(f"expected a list of numbers (one per token), got {json_type(v)} {preview(v)}; {_FIX}",
                          sub_locator=at)
    try:
        values = floats(v)
    except (TypeError, OverflowError):
        values = None
    # array('d') reads true as 1 and false as 0: a list holding a 0 or a 1 is looked at value by value
    if values is None or ((values == 0) | (values == 1)).any():
        for j, x in enumerate(v):
            if type(x) is not float and type(x) is not int:
                raise RecordError(f"expected a number (a per-token value), got {json_type(x)} {preview(x)}; {_FIX}",
                                  sub_locator=f"{at}[{j}]")
        if values is None:  # an integer beyond a double's range
            raise RecordError(f"a number beyond a double's range; {_FIX}", sub_locator=at)
    return values


def _cube(v: Any, at: str) -> np.ndarray:
    """``[token][layer][sublayer]`` scores as a 3-dimensional array; every token with as many layers,
    and every layer as many sublayers, as the first."""
    if type(v) is not list:
        raise RecordError(f"expected a list of tokens, got {json_type(v)} {preview(v)}; {_FIX}", sub_locator=at)
    if not v:
        return np.zeros((0, 0, 0))
    rows = []
    shape = None
    for t, token in enumerate(v):
        if type(token) is not list:
            raise RecordError(f"expected a list of layers, got {json_type(token)} {preview(token)}; {_FIX}",
                              sub_locator=f"{at}[{t}]")
        layers = [numbers(layer, f"{at}[{t}][{n}]") for n, layer in enumerate(token)]
        here = (len(layers), len(layers[0]) if layers else 0)
        if shape is None:
            shape = here
        if here[0] != shape[0] or any(len(x) != shape[1] for x in layers):
            raise RecordError(f"token {t} has a [layer][sublayer] shape other than token 0's {list(shape)}: every "
                              f"token is scored at every layer; {_FIX}", sub_locator=f"{at}[{t}]")
        rows.append(np.stack(layers) if layers else np.zeros((0, 0)))
    return np.stack(rows)


# --- rows ----------------------------------------------------------------------------------------------


def _rows(vectors: list[Vector], response_id: str | None, trait: str | None, counts: dict, ctx: RecordContext) -> list[dict]:
    rows = []
    for index, vector in enumerate(vectors):
        for segment in vector.segments:
            row = {"response_id": response_id, "segment": segment.name, "trait": trait, "vector_index": index,
                   **vector.attrs, "n_tokens": counts.get(segment.name), "source_locator": ctx.locate(segment.at),
                   "extra": vector.extra}
            for column, values in (("scores", segment.scores), ("norms", segment.norms),
                                   ("normalized", segment.normalized)):
                if values is not None:
                    row[column if fits(values) else f"{column}_float"] = values
            rows.append(row)
    return rows


def _file_attrs(metadata: Fields) -> dict[str, Any]:
    """What the metadata says of every vector of the file."""
    return {"component": metadata.text("component"), "centered": metadata.bool("centered"),
            "position": metadata.text("position")}


def _file_row(f: Fields, metadata: Fields, response_id: str | None, response_path: str | None, shape: str,
              counts: dict) -> dict:
    row = {
        "response_id": response_id,
        "response_path": response_path,
        "shape": shape,
        "n_prompt_tokens": counts.get("prompt"),
        "n_response_tokens": counts.get("response"),
        "multi_vector": metadata.bool("multi_vector"),
        "n_vectors": metadata.int("n_vectors"),
        "component": metadata.text("component"),
        "position": metadata.text("position"),
        "centered": metadata.bool("centered"),
        "score_mode": metadata.text("score_mode"),
        "projection_date": metadata.text("projection_date"),
        "metadata": metadata.rest(),
    }
    for key in _PER_FILE:
        row[key] = f.raw(key)
    row["extra"] = f.rest()
    return row


def _own_count(side: dict) -> int | None:
    """Tokens of a prompt or response object of the first shapes (``n_tokens``, else its token list)."""
    n = side.get("n_tokens")
    if isinstance(n, int) and not isinstance(n, bool):
        return n
    for key in ("token_ids", "tokens"):
        if isinstance(side.get(key), list):
            return len(side[key])
    return None


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)
