"""Which Hugging Face chat shape a row is, and whether a file holds such rows, from its first bytes.

A row's shape is told by its keys (TRL's dataset formats, and ShareGPT's):

* ``chosen`` and ``rejected`` (and ``prompt``, unless implicit): a preference row;
* ``messages``: a conversation;
* ``conversations`` of ``{from, value}``: ShareGPT;
* ``prompt`` and ``completion``: a prompt and its completion; ``prompt`` alone: prompt-only.

A file is claimed when its first row is one of them with values of that shape: messages are
objects with a ``role`` and a string, list or null ``content`` (a Scale message's content is
an object), ShareGPT messages have ``from`` and ``value`` (AfterImage's ``conversations`` have
roles), and a prompt-only row is claimed only with a conversational prompt (``{"prompt":
"..."}`` alone is too common a shape to call a chat dataset). Files of other formats that hold
these keys are refused by a marker: Dataloop's ``shebang``, Scale's ``source_id`` (and, when the
first row is too long to read, OpenAI batch lines' ``custom_id``). A Parquet file is told by its
schema, which is in its footer.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from ..heads import CUT, first_value

PREFERENCE = "preference"
MESSAGES = "messages"
SHAREGPT = "sharegpt"
PROMPT_COMPLETION = "prompt_completion"
PROMPT_ONLY = "prompt"

#: what each shape holds, for messages naming the expected shapes
SHAPES = ("a `messages` list of {role, content}, `prompt` and `completion`, `prompt`/`chosen`/`rejected`, "
          "or ShareGPT `conversations` of {from, value}")

#: keys one of which every shape has: a file without any is not looked at further
_KEYS = (b'"messages"', b'"conversations"', b'"chosen"', b'"prompt"')
#: markers of other formats' files that hold those keys: Dataloop's llm_trace documents hold a messages list
_FOREIGN = (b'"shebang"', b'"source_id"')
#: and, for a first row too long to read, an OpenAI batch line's (its body holds a messages list)
_BATCH = b'"custom_id"'

#: a first row too long for the head: its opening says enough
_OPENINGS = (
    re.compile(rb'"messages"\s*:\s*\[\s*\{\s*"(?:role|content)"\s*:'),
    re.compile(rb'"conversations"\s*:\s*\[\s*\{\s*"(?:from|value)"\s*:'),
)


def shape_of(keys: Collection[str]) -> str | None:
    """The shape a row (or a Parquet file's columns) has by its keys; None when none."""
    if "chosen" in keys and "rejected" in keys:
        return PREFERENCE
    if "messages" in keys:
        return MESSAGES
    if "conversations" in keys:
        return SHAREGPT
    if "prompt" in keys and "completion" in keys:
        return PROMPT_COMPLETION
    if "prompt" in keys:
        return PROMPT_ONLY
    return None


def is_row(value: Any) -> bool:
    """Whether a decoded row is a Hugging Face chat row, its values of its shape (see the module)."""
    if not isinstance(value, dict):
        return False
    shape = shape_of(value)
    if shape == PREFERENCE:
        return all(_text_or_messages(value.get(k)) for k in ("chosen", "rejected")) and (
            "prompt" not in value or _text_or_messages(value["prompt"]))
    if shape == MESSAGES:
        return _messages(value["messages"])
    if shape == SHAREGPT:
        turns = value["conversations"]
        return isinstance(turns, list) and bool(turns) and all(
            isinstance(t, dict) and "from" in t and "value" in t for t in turns)
    if shape == PROMPT_COMPLETION:
        return _text_or_messages(value["prompt"]) and _text_or_messages(value["completion"])
    if shape == PROMPT_ONLY:
        return _messages(value["prompt"]) and "response" not in value
    return False


def _messages(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and (m.get("content") is None or isinstance(m["content"], (str, list)))
        for m in value)


def _text_or_messages(value: Any) -> bool:
    return isinstance(value, str) or _messages(value)


def sniff_json(head: bytes) -> bool:
    """A .json or .jsonl file whose first row (in ``head``) is a chat row."""
    if not any(k in head for k in _KEYS) or any(marker in head for marker in _FOREIGN):
        return False
    first = first_value(head)
    if first is CUT:
        return _BATCH not in head and any(p.search(head) for p in _OPENINGS)
    return is_row(first)


def parquet_shape(schema) -> str | None:
    """The shape of a Parquet file's rows, from its Arrow schema: its columns' names, and types that
    can hold that shape (text, or lists of objects with a ``role``; ShareGPT's ``from``/``value``)."""
    import pyarrow as pa

    names = set(schema.names)
    shape = shape_of(names)

    def text_or_messages(name: str) -> bool:
        t = schema.field(name).type
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return True
        return _struct_list(t, ("role",))

    if shape == PREFERENCE:
        return shape if all(text_or_messages(n) for n in ("chosen", "rejected")) and (
            "prompt" not in names or text_or_messages("prompt")) else None
    if shape == MESSAGES:
        return shape if _struct_list(schema.field("messages").type, ("role",)) else None
    if shape == SHAREGPT:
        return shape if _struct_list(schema.field("conversations").type, ("from", "value")) else None
    if shape == PROMPT_COMPLETION:
        return shape if text_or_messages("prompt") and text_or_messages("completion") else None
    if shape == PROMPT_ONLY:
        return shape if _struct_list(schema.field("prompt").type, ("role",)) and "response" not in names else None
    return None


def _struct_list(t, fields: tuple[str, ...]) -> bool:
    import pyarrow as pa

    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return False
    item = t.value_type
    return pa.types.is_struct(item) and all(item.get_field_index(f) >= 0 for f in fields)
