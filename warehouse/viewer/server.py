"""The viewer's web server: Starlette pages served by uvicorn on 127.0.0.1, read-only.

Every page is made on the server (the HTML a plain GET returns already holds each response's
``data-response-id`` and each span's ``data-category``); the script and the style sheet are files of
the package, served from ``/static``. What keeps the data's text inert and the server to itself:

* a Content-Security-Policy that allows scripts and styles from the server only (no inline script,
  no other origin), no frames of it, no form posting elsewhere;
* the socket listens on 127.0.0.1 only, and a request whose ``Host`` is not ``127.0.0.1:PORT`` or
  ``localhost:PORT`` is refused (another site's page, through a name it points at 127.0.0.1, cannot
  read the pages: DNS rebinding);
* only GET and HEAD are answered; the reader's connection is an export's sandbox (``data.Reader``).

Ctrl-C: uvicorn stops serving (running queries are interrupted, open connections get a second), then
the SIGINT is raised again as ``KeyboardInterrupt``, which the command turns into its one line.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable
from urllib.parse import quote

from warehouse.errors import NotFound, QueryError, UsageError
from warehouse.viewer.data import PAIRINGS, Reader
from warehouse.viewer.pages import Links, Pages

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]
HOST = "127.0.0.1"


class Guard:
    """ASGI middleware: the Host check, GET/HEAD only, and the security headers on every answer."""

    def __init__(self, app, port: int):
        self.app = app
        self.hosts = {f"{HOST}:{port}".encode(), f"localhost:{port}".encode()}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        host = dict(scope["headers"]).get(b"host")

        async def secured(message):
            if message["type"] == "http.response.start":
                message["headers"] = [h for h in message.get("headers", []) if h[0] not in dict(HEADERS)] + HEADERS
            await send(message)

        if host not in self.hosts:
            return await _plain(secured, 421, "refused: this viewer answers only requests addressed to "
                                              f"{' or '.join(sorted(h.decode() for h in self.hosts))} (this one was sent to {host.decode('latin-1') if host else 'no host'})")
        if scope["method"] not in ("GET", "HEAD"):
            return await _plain(secured, 405, "the viewer only reads: GET and HEAD", [(b"allow", b"GET, HEAD")])
        await self.app(scope, receive, secured)


async def _plain(send, status: int, text: str, headers: list | None = None) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


def app(reader: Reader, port: int):
    """The ASGI application of ``reader``'s pages, answering for ``127.0.0.1:port``."""
    from importlib.resources import files

    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    pages = Pages(reader, Links())
    shell = pages.env.get_template("page.html")

    def page(title: str, make: Callable[[], object], status: int = 200) -> HTMLResponse:
        try:
            body = make()
        except NotFound as e:
            title, body, status = "not found", pages.not_found(str(e)), 404
        except (UsageError, QueryError) as e:
            title, body, status = "error", pages.not_found(str(e)), 400 if isinstance(e, UsageError) else 500
        return HTMLResponse(shell.render(title=title, body=body, root=reader.root), status_code=status)

    def home(request):
        q = request.query_params
        return page("responses", lambda: pages.list(q.get("sort"), q.get("desc") == "1", _int(q.get("page"))))

    def response(request):
        rid = request.path_params["response_id"]
        return page(f"response {rid}", lambda: pages.response(rid))

    def compare(request):
        q = request.query_params
        ids = list(dict.fromkeys(q.getlist("id")))
        by = q.get("by")

        def make():
            if q.get("of"):
                chosen = reader.group(q["of"], by or "prompt")
            elif len(ids) >= 1:
                chosen = ids
            else:
                raise UsageError("nothing to compare: tick responses in the list, or open compare from a response "
                                 f"(pair by {', '.join(PAIRINGS)})")
            return pages.compare(chosen, (by or "prompt") if q.get("of") else None)

        return page("compare", make)

    def spans(request):
        q = request.query_params
        if q.get("category") is None:
            return page("spans", pages.span_categories)
        return page(f"spans: {q['category']}", lambda: pages.spans(q["category"], _int(q.get("page"))))

    def missing(request, exc=None):
        return page("not found", lambda: pages.not_found(f"no page at {quote(request.url.path)}"), 404)

    routes = [
        Route("/", home),
        Route("/responses/{response_id}", response),
        Route("/compare", compare),
        Route("/spans", spans),
        Mount("/static", StaticFiles(directory=str(files("warehouse.viewer") / "static")), name="static"),
    ]
    return Guard(Starlette(routes=routes, exception_handlers={404: missing}), port)


def _int(value: str | None) -> int:
    try:
        return max(1, int(value)) if value else 1
    except ValueError:
        return 1


def bind(port: int | None) -> socket.socket:
    """A socket listening on 127.0.0.1 (``port``, or a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port or 0))
    except OSError as e:
        sock.close()
        raise UsageError(f"--port {port}: cannot listen there ({e.strerror}); choose another, or leave --port out "
                         "for a free one") from None
    sock.listen(128)
    return sock


class Server:
    """uvicorn serving ``reader`` on ``sock``; ``run()`` until Ctrl-C (or ``stop()`` from another thread)."""

    def __init__(self, reader: Reader, sock: socket.socket):
        import uvicorn

        self.reader = reader
        self.sock = sock
        self.port = sock.getsockname()[1]
        self.url = f"http://{HOST}:{self.port}/"
        config = uvicorn.Config(app(reader, self.port), log_level="warning", access_log=False, lifespan="off",
                                server_header=False, timeout_graceful_shutdown=1)
        owner = self

        class _Uvicorn(uvicorn.Server):
            def handle_exit(self, sig, frame):
                owner.reader.interrupt()  # a query still running stops now, not when it ends
                super().handle_exit(sig, frame)

        self._server = _Uvicorn(config)

    @property
    def started(self) -> bool:
        return self._server.started

    def run(self) -> None:
        self._server.run(sockets=[self.sock])

    def stop(self) -> None:
        self.reader.interrupt()
        self._server.should_exit = True


def serve(reader: Reader, *, port: int | None = None, open_browser: bool = True) -> None:
    """Serve ``reader``'s pages on 127.0.0.1 until Ctrl-C; the URL is said on stderr."""
    server = Server(reader, bind(port))
    print(f"serving {reader.total:,} responses of {reader.root} at {server.url}  (Ctrl-C stops)", file=sys.stderr,
          flush=True)
    if open_browser:
        import webbrowser

        threading.Thread(target=webbrowser.open, args=(server.url,), daemon=True).start()
    server.run()
