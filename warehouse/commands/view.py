"""``warehouse view``: responses served to a browser, or written to one HTML file."""

from __future__ import annotations

import sys

from warehouse.commands.options import as_of, command, root, where
from warehouse.errors import EXIT_OK

VIEW_DESCRIPTION = (
    "Serve the responses matching --where on 127.0.0.1 (a free port unless --port), print the URL on "
    "stderr and open a browser (unless --no-browser), until Ctrl-C. With --out, write one self-contained "
    "HTML file of them instead (the first --limit)."
)

VIEW_EXAMPLES = """\
examples:
  warehouse view --root wh
  warehouse view --root wh --where "response_id IN (SELECT response_id FROM annotations)" --port 8765 --no-browser
  warehouse view --root wh --where "trait = 'pv_natural/sycophancy'" --out sycophancy.html
  warehouse view --root wh --where "source_format = 'NAME'" --out all.html --limit 2000

Pages: the list (sortable, paged), one response (/responses/ID: text with its annotation spans,
conversation, tokens, sentences, per-token values, evaluations, provenance), compare, spans by
category. The server listens on 127.0.0.1 only and only reads. docs/viewer.md
"""


def add_view(sub) -> None:
    """The ``view`` command's arguments and help."""
    v = command(sub, "view", help="look at responses in a browser: text with its spans, tokens, scores; or write them to one HTML file",
                description=VIEW_DESCRIPTION, epilog=VIEW_EXAMPLES)
    root(v)
    where(v, ", as for export")
    as_of(v, "view")
    v.add_argument("--port", type=int, default=None, metavar="N", help="serve on this port (default: a free one)")
    v.add_argument("--no-browser", dest="browser", action="store_false", help="do not open a browser")
    v.add_argument("--out", default=None, metavar="FILE.html",
                   help="write one self-contained HTML file (no network needed to open it) instead of serving")
    v.add_argument("--limit", type=int, default=None, metavar="N",
                   help="with --out: the most responses the file holds (default 500; more are said on stderr)")


def cmd_view(args) -> int:
    import warehouse
    from warehouse.interrupt import SigintGuard

    with SigintGuard():  # making the selection's list is a DuckDB query: Ctrl-C stops it at once
        view = warehouse.view(args.root, args.where, as_of=args.as_of, port=args.port, browser=args.browser,
                              out=args.out, limit=args.limit, storage_options=args.storage_options)
    if args.out is None:
        view.serve()  # until Ctrl-C (uvicorn's own handler: it stops serving, then raises KeyboardInterrupt)
    else:
        print(view.text(), file=sys.stderr)
    return EXIT_OK
