"""The viewer: look at responses with everything the warehouse holds about them (docs/viewer.md).

``warehouse view --root DIR`` serves it on 127.0.0.1 (``server.py``); ``--out FILE.html`` writes one
self-contained file (``static.py``); ``warehouse.view(root, where=...)`` and ``Warehouse.view(where=...)``
return a ``View`` that shows the file inline in Jupyter and VS Code. Pages: the list of the
selection, one response (its text with spans, its conversation, tokens, sentences, per-token
values, evaluations, provenance), compare, and spans by category (``pages.py``). What is read, and
the sandbox it is read in: ``data.py``.

The viewer is one package: it reads through the public views and the export's ``--where`` checks,
and nothing else of the warehouse reaches into it.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from warehouse.access import StorageOptions
    from warehouse.viewer.data import Reader

#: the iframe a notebook shows the file in: scripts run, but in an origin of their own (no
#: ``allow-same-origin``): the page cannot reach the notebook, its cookies or its kernel
FRAME = ('<iframe srcdoc="{doc}" sandbox="allow-scripts" title="warehouse view: {n} responses" '
         'style="width: 100%; height: {height}px; border: 1px solid #d9dce1;"></iframe>')


class View:
    """The selected responses: shown inline in Jupyter / VS Code (``_repr_html_``: the ``--out`` file in a
    sandboxed iframe), written to a file (``save``), or served (``serve``: ``warehouse view``)."""

    def __init__(self, reader: Reader, *, limit: int | None = None, port: int | None = None, browser: bool = True,
                 height: int = 640):
        from warehouse.viewer.static import LIMIT, check_limit

        self.reader = reader
        self.limit = check_limit(LIMIT if limit is None else limit)
        self.port = port
        self.browser = browser
        self.height = height
        self.notes: list[str] = []
        self.written: tuple[str, int] | None = None
        self._html: str | None = None
        self._count = 0

    @property
    def total(self) -> int:
        """Responses in the selection."""
        return self.reader.total

    @property
    def html(self) -> str:
        """The self-contained page: the first ``limit`` responses (made on first use)."""
        if self._html is None:
            from warehouse.viewer.static import document

            self._html, self._count = document(self.reader, self.limit, warn=self.notes.append)
        return self._html

    @property
    def count(self) -> int:
        """Responses the page holds."""
        self.html  # noqa: B018 (made on first use)
        return self._count

    def _repr_html_(self) -> str:
        doc = self.html
        note = "".join(f'<p style="color:#60656f">{html.escape(n)}</p>' for n in self.notes)
        return note + FRAME.format(doc=html.escape(doc, quote=True), n=self._count, height=self.height)

    def save(self, path) -> str:
        """Write the page to ``path`` (whole or not at all); the path written."""
        from warehouse.viewer.static import write

        self.written = (write(self.html, path), self.count)
        return self.written[0]

    def serve(self) -> None:
        """Serve the pages on 127.0.0.1 until Ctrl-C (``warehouse view``)."""
        from warehouse.viewer.server import serve

        serve(self.reader, port=self.port, open_browser=self.browser)

    def close(self) -> None:
        self.reader.close()

    def text(self) -> str:
        """What ``warehouse view --out`` says on stderr."""
        lines = [f"note: {n}" for n in self.notes]
        if self.written:
            lines.append(f"wrote {self.written[1]:,} of {self.total:,} selected responses to {self.written[0]}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<warehouse view of {self.total:,} responses of {self.reader.root}>"


def view(root, where: str | None = None, *, as_of: int | None = None, port: int | None = None, browser: bool = True,
         out=None, limit: int | None = None, storage_options: StorageOptions = None) -> View:
    """The responses matching ``where`` (SQL on ``responses``, checked and sandboxed as ``export``'s), as a
    ``View``; with ``out``, the page is written there too. See ``warehouse.view``."""
    from warehouse import access, checks
    from warehouse.errors import UsageError
    from warehouse.viewer.data import Reader

    if out is not None and port is not None:
        raise UsageError("--port is for serving the pages; --out writes them to a file instead: give one of them")
    if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536):
        raise UsageError(f"--port {port!r}: must be a port number, 1 to 65535 (leave it out for a free one)")
    from warehouse.viewer.static import LIMIT, check_limit, check_out

    target = None if out is None else check_out(checks.local_path(out, "out"))

    check_limit(LIMIT if limit is None else limit)
    reader = Reader(checks.root(root), where, as_of=as_of, storage_options=access.canonical(storage_options))
    shown = View(reader, limit=limit, port=port, browser=browser)
    if target is not None:
        try:
            shown.save(target)
        finally:
            reader.close()
    return shown
