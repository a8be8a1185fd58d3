"""The messages of a row: ``turns`` rows, and which of them are the prompt and the response."""

from __future__ import annotations

from typing import Any

from warehouse.formatkit.records import RecordContext, RecordError

from ..fields import Fields, children, json_type, preview

#: the only roles AfterImage's ``Role`` enum has
ROLES = ("user", "assistant")


def turn_rows(conversations: Any, response_id: str, ctx: RecordContext) -> list[dict]:
    if not isinstance(conversations, list):
        raise RecordError(
            f"conversations: expected a list of messages, got {json_type(conversations)} {preview(conversations)}",
            sub_locator=".conversations",
        )
    rows = []
    for i, m, locator in children(conversations, ".conversations", "message", ctx):
        rows.append(
            {
                "response_id": response_id,
                "turn_index": i,
                "role": _role(m),
                "content": _content(m),
                "reasoning_content": m.text("reasoning_content"),
                "source_locator": locator,
                "extra": m.rest(),
            }
        )
    return rows


def _role(m: Fields) -> str:
    if "role" not in m:
        raise RecordError("role: missing; every message needs a role, 'user' or 'assistant'", sub_locator=m.sub + ".role")
    role = m.raw("role")
    if role not in ROLES:
        raise RecordError(
            f"role: expected 'user' or 'assistant', got {json_type(role)} {preview(role)} "
            "(AfterImage conversations hold only user and assistant messages)",
            sub_locator=m.sub + ".role",
        )
    return role


def _content(m: Fields) -> str:
    if "content" not in m:
        raise RecordError("content: missing; every message needs its text as a string", sub_locator=m.sub + ".content")
    content = m.raw("content")
    if not isinstance(content, str):
        raise RecordError(
            f"content: expected a string, got {json_type(content)} {preview(content)}", sub_locator=m.sub + ".content"
        )
    return content


def exchange(turns: list[dict]) -> tuple[str | None, str | None]:
    """(prompt, response): the last assistant message and the user message it answers.

    Earlier exchanges of a multi-turn conversation stay in ``turns``. Without an
    assistant message the last user message is the prompt and the response is
    NULL (an empty assistant message gives ``""``: it answered, with nothing).
    """
    answer = next((i for i in range(len(turns) - 1, -1, -1) if turns[i]["role"] == "assistant"), None)
    before = turns if answer is None else turns[:answer]
    question = next((t["content"] for t in reversed(before) if t["role"] == "user"), None)
    return question, None if answer is None else turns[answer]["content"]
