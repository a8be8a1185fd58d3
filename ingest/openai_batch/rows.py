"""Batch lines and chat completions into ``responses`` and ``turns`` rows.

* a **request** (a batch input line): its ``body.messages`` are the record's shared turns
  (``response_id`` NULL); the rest of its body is ``request_params``; alone, it gives one
  response, its prompt with response NULL;
* a **chat completion** (the body of a result, or one saved as it came): one response per
  choice (``n > 1``: several responses of one record, ``candidate_index`` the choice's
  ``index``), the choice's message a turn of its own after the request's messages; ``usage``,
  ``finish_reason``, ``logprobs`` (as written) and vLLM's ``prompt_logprobs`` in columns; vLLM's
  ``prompt_token_ids`` and a choice's ``token_ids`` make ``token_ids`` (``prompt_end`` where the
  choice's start);
* a **result** (a batch output line): its chat completion, with the request it was joined to
  (``files.py``) and the line's own ``id``, ``request_id`` and ``status_code``. A failed one
  (``error`` set, a status other than 200) is quarantined with what the API said.

Keys without a column stay in ``extra``: the result line's at the top, ``response`` (the line's
``response`` object), ``body`` (the completion's) and ``choice`` (the choice's) under their names,
the request line's under ``request``. docs/formats/openai_batch.md
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from warehouse.decimals import fits, floats
from warehouse.formatkit.records import Mapped, RecordContext, RecordError

from ..fields import Fields, as_fields, children, expect_object
from ..messages import exchange, message_turns, turn_row
from .detect import COMPLETION, INPUT, OUTPUT, SHAPES, failure, kind_of
from .files import ANSWERED, REQUEST, REQUEST_LINE, REQUEST_PATH

#: the endpoints whose requests and results are chat completions
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


def map_record(value: Any, envelope: dict | None, ctx: RecordContext) -> Mapped:
    obj = expect_object(value, "OpenAI batch line")
    kind = kind_of(obj)
    envelope = envelope or {}
    if kind == INPUT:
        return {} if envelope.get(ANSWERED) else _request_alone(obj, ctx)
    if kind == OUTPUT:
        return _result(obj, envelope, ctx)
    if kind == COMPLETION:
        return _completion(Fields(obj), "", [], {}, {}, ctx)
    keys = ", ".join(sorted(obj)[:8]) or "none"
    raise RecordError(f"not an OpenAI batch line or chat completion (keys: {keys}): expected {SHAPES}")


class _Request:
    """A batch input line read: its messages' turns, its columns and what is left of it."""

    def __init__(self, obj: dict, sub: str, ctx: RecordContext):
        r = Fields(obj, sub)
        url = obj.get("url")
        if not isinstance(url, str) or not url.rstrip("/").endswith(CHAT_PATHS):
            raise RecordError(f"url {url!r}: only chat completions requests ({CHAT_PATHS[0]}) are read",
                              sub_locator=f"{sub}.url")
        self.custom_id = r.id("custom_id")
        body = as_fields(r.raw("body"), "request body", f"{sub}.body")
        if "messages" not in body:
            raise RecordError("body: no messages; a chat completions request sends them", sub_locator=f"{sub}.body")
        self.turns = message_turns(body.raw("messages"), f"{sub}.body.messages", 0, None, ctx)
        self.model = body.obj.get("model") if isinstance(body.obj.get("model"), str) else None
        self.params = body.rest()
        self.rest = r.rest()  # method, url and any other key of the line


def _request_alone(obj: dict, ctx: RecordContext) -> Mapped:
    request = _Request(obj, "", ctx)
    row = {"response_id": ctx.row_id(), "candidate_index": 0, "custom_id": request.custom_id, **exchange(request.turns),
           "inference_model": request.model, "request_params": request.params,
           "extra": {"request": request.rest} if request.rest else None}
    out: Mapped = {"responses": [row]}
    if request.turns:
        out["turns"] = request.turns
    return out


def _result(obj: dict, envelope: dict, ctx: RecordContext) -> Mapped:
    said = failure(obj)
    if said is not None:
        raise RecordError(said + "; the line is kept here whole (raw)")
    f = Fields(obj)
    response = as_fields(f.raw("response"), "response", ".response")
    columns = {"custom_id": f.id("custom_id"), "batch_output_id": f.id("id"), "request_id": response.id("request_id"),
               "status_code": response.int("status_code")}
    f.raw("error")  # null: the result succeeded
    extra: dict[str, Any] = {}
    shared: list[dict] = []
    if REQUEST in envelope:
        request = _Request(envelope[REQUEST], ".request", ctx)
        shared = request.turns
        columns.update(request_params=request.params, batch_input_path=envelope[REQUEST_PATH],
                       batch_input_line=envelope[REQUEST_LINE])
        if request.rest:
            extra["request"] = request.rest
        columns["inference_model"] = request.model  # the served model, when the completion names it, below
    body = as_fields(response.raw("body"), "response body", ".response.body")
    extra.update(f.rest() or {})
    if response.rest():
        extra["response"] = response.rest()
    return _completion(body, ".response.body", shared, columns, extra, ctx)


def _completion(body: Fields, sub: str, shared: list[dict], columns: dict, extra: dict, ctx: RecordContext) -> Mapped:
    """One response per choice of a chat completion (``body`` at ``sub``), after the ``shared`` request turns."""
    model = body.text("model")
    choices = body.list("choices")
    if choices is None:
        raise RecordError("choices: missing; a chat completion holds its answers in choices", sub_locator=f"{sub}.choices")
    usage = as_fields(body.raw("usage") or {}, "usage", f"{sub}.usage")
    created = body.int("created")
    common = {
        **columns,
        "completion_id": body.id("id"),
        "created": created,
        "capture_date": _iso(created),
        "prompt_tokens": usage.int("prompt_tokens"),
        "completion_tokens": usage.int("completion_tokens"),
        "total_tokens": usage.int("total_tokens"),
        "prompt_logprobs": body.raw("prompt_logprobs"),
        "inference_model": model or columns.get("inference_model"),
    }
    # vLLM's return_token_ids: the prompt's ids and each choice's make the whole sequence (only when all are there)
    whole = isinstance(body.obj.get("prompt_token_ids"), list) and bool(choices) and all(
        isinstance(ch, dict) and isinstance(ch.get("token_ids"), list) for ch in choices)
    prompt_ids = body.ints("prompt_token_ids") if whole else None
    body_rest = body.rest() or {}
    if usage.rest():
        body_rest["usage"] = usage.rest()
    if body_rest:
        extra = {**extra, "body": body_rest}
    rows, turns, values = [], list(shared), []
    # the completion's token count is a choice's own only when it is the one choice
    n_tokens = common["completion_tokens"] if len(choices) == 1 else None
    for i, c, locator in children(choices, f"{sub}.choices", "choice", ctx):
        rid = ctx.row_id(c.sub)
        message = c.raw("message")
        if message is None:
            raise RecordError("message: missing; every choice holds the answer's message", sub_locator=f"{c.sub}.message")
        turn = turn_row(as_fields(message, "message", f"{c.sub}.message"), len(shared) + i, ctx.locate(f"{c.sub}.message"),
                        rid, model)
        turns.append(turn)
        index = c.int("index")
        row = {**common, "response_id": rid, "candidate_index": i if index is None else index, "source_locator": locator,
               **exchange(shared + [turn], first_answer=len(shared)),
               "finish_reason": c.text("finish_reason"), "logprobs": c.raw("logprobs")}
        if prompt_ids is not None:
            row.update(token_ids=prompt_ids + c.ints("token_ids"), prompt_end=len(prompt_ids))
        row["extra"] = _with(extra, "choice", c.rest())
        rows.append(row)
        logprobs = _logprob_row(row["logprobs"], rid, n_tokens, f"{c.sub}.logprobs.content", ctx)
        if logprobs is not None:
            values.append(logprobs)
    if not rows:  # no choices: the prompt, unanswered
        rows.append({**common, "response_id": ctx.row_id(), "candidate_index": 0, **exchange(shared),
                     "extra": extra or None})
    out: Mapped = {"responses": rows}
    if turns:
        out["turns"] = turns
    if values:
        out["token_values"] = values
    return out


def _logprob_row(logprobs: Any, response_id: str, n_tokens: int | None, at: str, ctx: RecordContext) -> dict | None:
    """A choice's log probabilities as per-token values (method ``logprob``, one per generated token, in
    order), so the views of per-token values read them as they read trait projections. The column
    ``logprobs`` keeps them whole (tokens, bytes, top_logprobs); a list with an entry that is no token with a
    number (a refusal's, a writer's own shape) gives no row: it is there, as written."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content:
        return None
    numbers = [e.get("logprob") if isinstance(e, dict) else None for e in content]
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers):
        return None
    scores = floats(numbers)
    return {"response_id": response_id, "segment": "response", "method": "logprob", "vector_index": 0,
            "n_tokens": n_tokens, "source_locator": ctx.locate(at),
            "scores" if fits(scores) else "scores_float": scores}


def _with(extra: dict, key: str, value: dict | None) -> dict | None:
    out = dict(extra)
    if value:
        out[key] = value
    return out or None


def _iso(created: int | None) -> str | None:
    if created is None:
        return None
    try:
        return dt.datetime.fromtimestamp(created, dt.timezone.utc).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None
