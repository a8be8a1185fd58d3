"""What the viewer's tests share: a server in a thread, a warehouse of hostile text, reading pages' elements."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

from .conftest import write_json, write_text

#: what each hostile text tries: set this flag (or open a dialog)
PAYLOADS = (
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 1; alert(1)">',
    "<svg onload=window.__pwned=1>",
    '<a href="javascript:window.__pwned=1">click me</a>',
    "javascript:window.__pwned=1",
    '"><iframe srcdoc="<script>parent.__pwned=1</script>">',
    "</textarea></script></style><script>window.__pwned=1</script>",
    "{{ 7*7 }} ${7*7} <!--",
)
#: folder names may hold no slash: the payloads a path (and so experiment, prompt set) can carry
PATH_PAYLOAD = "x<img src=x onerror=window.__pwned=1>"
HOSTILE_TEXT = ("Hi " + " ".join(PAYLOADS) + " and an emoji 😀 then 漢字 end.")


def hostile_tree(base: Path) -> Path:
    """Source files whose every text (response, prompt, category, note, path, turns, feedback) is a payload;
    spans over emoji and CJK, nested, crossing and borderline."""
    responses = base / "experiments" / PATH_PAYLOAD / "inference" / "instruct" / "responses"
    prompt_set = f"set {PAYLOADS[2]}"
    write_json(responses / prompt_set / "1.json", {
        "prompt": "<bos>" + PAYLOADS[0], "response": HOSTILE_TEXT, "system_prompt": PAYLOADS[1],
        "inference_model": PAYLOADS[3], "prompt_note": PAYLOADS[5],
    })
    write_json(responses / f"{prompt_set}_annotations.json", {
        "categories": {PAYLOADS[1]: PAYLOADS[0]},
        "annotations": [{"idx": 1, "spans": [
            {"span": PAYLOADS[0], "category": PAYLOADS[1], "note": PAYLOADS[6]},
            {"span": "😀 then 漢字", "category": "emoji", "note": PAYLOADS[2]},
            {"span": "then 漢", "category": "inner"},  # nested in the emoji span
            {"span": "漢字 end.", "category": "crossing"},  # crosses the emoji span
            {"span": PAYLOADS[4], "category": PAYLOADS[4]},
        ], "borderline": [{"span": "Hi", "category": "maybe", "note": PAYLOADS[7]}]}],
    })
    lines = [{
        "conversations": [
            {"role": "user", "content": PAYLOADS[0], "reasoning_content": None},
            {"role": "assistant", "content": HOSTILE_TEXT, "reasoning_content": PAYLOADS[1]},
        ],
        "metadata": {"context_id": PAYLOADS[3], "persona_name": PAYLOADS[2]},
        "persona": PAYLOADS[5],
        "evaluation": {"helpfulness": {"score": 0.5, "feedback": PAYLOADS[6]}, "overall_grade": PAYLOADS[0]},
        "final_score": 0.5,
    }]
    write_text(base / "chats" / f"{PATH_PAYLOAD}.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    return base


@contextmanager
def serving(reader):
    """``reader``'s pages served by the viewer's own server in a thread; its URL."""
    from warehouse.viewer.server import Server, bind

    server = Server(reader, bind(None))
    thread = threading.Thread(target=server.run, name="viewer", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the viewer did not start"
        time.sleep(0.02)
    try:
        yield server.url
    finally:
        server.stop()
        thread.join(30)


def get(url: str, headers: dict | None = None, method: str = "GET") -> tuple[int, dict, str]:
    """Status, headers and text of a plain HTTP request (errors included)."""
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


class Elements(HTMLParser):
    """Each element that has ``attribute``: its attributes and its whole text (nested elements included)."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, attribute: str):
        super().__init__(convert_charrefs=True)
        self.attribute = attribute
        self.open: list[tuple[str, dict | None, list[str]]] = []
        self.found: list[tuple[dict, str]] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        attrs = dict(attrs)
        self.open.append((tag, attrs if self.attribute in attrs else None, []))

    def handle_endtag(self, tag):
        while self.open:
            name, attrs, text = self.open.pop()
            if attrs is not None:
                self.found.append((attrs, "".join(text)))
            if self.open:
                self.open[-1][2].extend(text)
            if name == tag:
                break

    def handle_data(self, data):
        if self.open:
            self.open[-1][2].append(data)


def elements(html: str, attribute: str) -> list[tuple[dict, str]]:
    parser = Elements(attribute)
    parser.feed(html)
    parser.close()
    return parser.found


class Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def markup_problems(html: str, inline_scripts: int = 0) -> list[str]:
    """What in ``html`` could run: an element that is no part of the viewer's pages (a script not its own,
    an image, a frame), an event handler attribute, a ``javascript:`` address. ``inline_scripts``: how many
    scripts the page itself inlines (an ``--out`` file: one)."""
    parser = Tags()
    parser.feed(html)
    problems = []
    scripts = [attrs for tag, attrs in parser.tags if tag == "script" and attrs.get("src") != "/static/viewer.js"
               and attrs.get("type") != "application/json"]
    if len(scripts) != inline_scripts:
        problems.append(f"{len(scripts)} scripts of no known kind: {scripts}")
    for tag, attrs in parser.tags:
        if tag in ("img", "iframe", "object", "embed", "base", "frame") or (tag == "form" and attrs.get("action") != "/compare"):
            problems.append(f"{tag} {attrs}")
        problems += [f"{tag} {name}=" for name in attrs if name.startswith("on")]
        problems += [f"{tag} {name}={value}" for name, value in attrs.items()
                     if name in ("href", "src", "action", "formaction", "xlink:href", "srcdoc") and value
                     and not value.startswith(("/", "#", "http://127.0.0.1", "data:,"))]
    return problems
