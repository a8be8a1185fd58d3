"""Which OpenAI file a line (or a file, from its first bytes) is, and whether a batch result succeeded.

* a **batch input** line: ``{custom_id, method, url, body}`` (OpenAI's Batch API input, vLLM's
  ``run_batch -i``);
* a **batch output** line: ``{id, custom_id, response, error}``, both keys written even when null
  (OpenAI's output and error files, vLLM's ``run_batch -o``);
* a **chat completion**: ``{id, object: "chat.completion", choices, ...}``, a response saved as it
  came (one per line, a whole ``.json`` file or an array of them).

Other files with a ``custom_id`` are not these (Anthropic's Message Batches write ``params`` and
``result``): a line is told by the keys that make it, never by ``custom_id`` alone.
"""

from __future__ import annotations

import re
from typing import Any

from ..heads import CUT, first_value

INPUT = "input"
OUTPUT = "output"
COMPLETION = "completion"

#: what each kind of line is, for messages naming the expected shapes
SHAPES = ("a batch input line {custom_id, method, url, body}, a batch output line {id, custom_id, response, error} "
          "or a chat completion {id, object: chat.completion, choices}")

_STRING = rb'"(?:[^"\\]|\\.)*"'
#: a first line too long for the head: its opening says enough (both writers put these keys first)
_OPENINGS = {
    INPUT: re.compile(rb'^\s*\{\s*"custom_id"\s*:\s*' + _STRING + rb'\s*,\s*"method"\s*:'),
    OUTPUT: re.compile(rb'^\s*\{\s*"id"\s*:\s*' + _STRING + rb'\s*,\s*"custom_id"\s*:\s*' + _STRING + rb'\s*,\s*"response"\s*:'),
}
_COMPLETION_MARK = re.compile(rb'"object"\s*:\s*"chat\.completion"')


def kind_of(value: Any) -> str | None:
    """The kind of a decoded line or document; None when it is none of them."""
    if not isinstance(value, dict):
        return None
    if "custom_id" in value and isinstance(value.get("body"), dict) and "url" in value and "method" in value:
        return INPUT
    if "custom_id" in value and "response" in value and "error" in value:
        return OUTPUT
    if value.get("object") == "chat.completion" and isinstance(value.get("choices"), list):
        return COMPLETION
    return None


def kind_of_head(head: bytes) -> str | None:
    """The kind of a file's first line or document, from its first bytes."""
    if b'"custom_id"' not in head and b'"chat.completion"' not in head:
        return None
    first = first_value(head)
    if first is not CUT:
        return kind_of(first)
    for kind, opening in _OPENINGS.items():
        if opening.search(head):
            return kind
    return COMPLETION if head.lstrip()[:1] in (b"{", b"[") and _COMPLETION_MARK.search(head) else None


def failure(line: dict) -> str | None:
    """Why a batch output line holds no chat completion (the API's own words), or None when it does."""
    error, response = line.get("error"), line.get("response")
    status = response.get("status_code") if isinstance(response, dict) else None
    body = response.get("body") if isinstance(response, dict) else None
    request = f"request {line.get('custom_id')!r}"
    if error is not None or not isinstance(response, dict) or status != 200:
        said = _said(error) or _said(body.get("error") if isinstance(body, dict) else None)
        how = f" with HTTP status {status}" if status is not None else ""
        answer = f"the API said: {said}" if said else "no answer (response null)" if response is None else "no error message"
        return f"{request} failed{how}: {answer}"
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
        return (f"{request}: status 200 but its response body is not a chat completion (no choices list): only "
                "/v1/chat/completions results are read")
    return None


def succeeded(line: Any) -> bool:
    """A batch output line with a chat completion: its request's prompt is read with it."""
    return isinstance(line, dict) and isinstance(line.get("custom_id"), str) and failure(line) is None


def _said(error: Any) -> str | None:
    """An error as the API wrote it: OpenAI's ``{code, message}`` (a failed request's body:
    ``{error: {message, type, param, code}}``), vLLM's text or ``ErrorResponse``."""
    if error is None:
        return None
    if isinstance(error, str):
        return error
    if isinstance(error, dict):
        if isinstance(error.get("error"), dict):  # vLLM's ErrorResponse {error: {...}}, a failed body's {error: {...}}
            return _said(error["error"])
        message = error.get("message")
        details = ", ".join(f"{k} {error[k]}" for k in ("code", "type", "param") if error.get(k) is not None)
        if message is not None:
            return f"{message} ({details})" if details else str(message)
        return details or str(error)
    return str(error)
