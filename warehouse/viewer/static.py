"""One self-contained HTML file of the selection: ``warehouse view --out FILE.html`` and notebooks.

The file holds the list, each response's page and each span category's page as sections; the address's
fragment names the one shown (``#/responses/<id>``), by CSS alone (``:target``), so links work from
disk with no server and no script. The style sheet and the script are the server's, inlined, and the
file's Content-Security-Policy allows exactly them, by their SHA-256, and nothing from any network.
"""

from __future__ import annotations

import base64
import hashlib
import os
from importlib.resources import files

from markupsafe import Markup

from warehouse.errors import UsageError
from warehouse.viewer.data import Reader
from warehouse.viewer.pages import Links, Pages

#: responses a file holds unless told otherwise (``--limit``): a file of thousands is slow to open
LIMIT = 500


def check_limit(limit) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise UsageError(f"--limit {limit!r}: must be a number of responses, 1 or more")
    return limit


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def document(reader: Reader, limit: int = LIMIT, *, warn=None) -> tuple[str, int]:
    """The file's HTML and how many responses it holds: the first ``limit`` of the selection (its list's
    default order); ``warn(text)`` is told when the selection held more."""
    pages = Pages(reader, Links(static=True))
    ids = reader.ids(limit)
    if reader.total > len(ids) and warn is not None:
        warn(f"the file holds the first {len(ids):,} of the {reader.total:,} selected responses; "
             f"raise the bound with --limit N (limit=N), or narrow --where")
    sections: list[tuple[str, Markup, bool]] = []
    bundles = reader.responses(ids) if ids else {}
    for rid in ids:
        sections.append((f"/responses/{rid}", pages.response(rid, bundles[rid]), False))
    categories = reader.categories(within=ids) if ids else []
    for name, _, _ in categories:
        sections.append((f"/spans/{name}", pages.spans(name, size=None, within=ids), False))
    if categories:
        sections.append(("/spans", pages.span_categories(within=ids), False))
    sections.append(("/", pages.list(size=len(ids) or None), True))
    static = files("warehouse.viewer") / "static"
    css = (static / "viewer.css").read_text(encoding="utf-8")
    js = (static / "viewer.js").read_text(encoding="utf-8")
    csp = (f"default-src 'none'; script-src {_hash(js)}; style-src {_hash(css)}; img-src data:; "
           "base-uri 'none'; form-action 'none'")
    html = pages.env.get_template("file.html").render(
        csp=csp, css=Markup(css), js=Markup(js), sections=sections, spans=bool(categories),
        title=f"{len(ids):,} responses", root=reader.root)
    return html, len(ids)


def check_out(out: str) -> str:
    """``--out``: a file to write in a folder that exists; its absolute path."""
    out = os.path.abspath(out)
    if os.path.isdir(out):
        raise UsageError(f"--out {out}: is a directory; give the HTML file to write")
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise UsageError(f"--out {out}: its folder {parent} does not exist")
    return out


def write(html: str, out: str) -> str:
    """Write ``html`` to ``out`` (whole or not at all: a partial file is renamed into place); the path."""
    out = check_out(out)
    partial = f"{out}.partial-{os.getpid()}"
    try:
        with open(partial, "w", encoding="utf-8") as f:
            f.write(html)
        os.replace(partial, out)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return out
