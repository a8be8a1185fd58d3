"""``warehouse compact``: small files merged, files replaced long ago deleted."""

from __future__ import annotations

import sys

from warehouse.commands.options import command, quiet, root
from warehouse.errors import EXIT_OK
from warehouse.run.maintenance import RETENTION_HOURS

COMPACT_DESCRIPTION = (
    "Merge each table's small files (Delta optimize; the rows do not change) and delete the files "
    "replaced more than --retention-hours ago (Delta vacuum), then commit a new snapshot (none when "
    "there was nothing to merge or delete). Snapshots "
    "older than the retention may no longer be readable (--as-of says so). Waits for a running ingest."
)

COMPACT_EXAMPLES = """\
examples:
  warehouse compact --root wh
  warehouse compact --root wh --retention-hours 0    # keep only what the latest snapshots need
"""


def add_compact(sub) -> None:
    """The ``compact`` command's arguments and help."""
    c = command(sub, "compact", help="merge small files and delete files replaced long ago",
                description=COMPACT_DESCRIPTION, epilog=COMPACT_EXAMPLES)
    root(c)
    c.add_argument("--retention-hours", type=int, default=RETENTION_HOURS, metavar="H",
                   help=f"delete files replaced more than H hours ago (default {RETENTION_HOURS:g}: 7 days)")
    c.add_argument("--no-wait", dest="wait", action="store_false", help="fail (exit 4) instead of waiting for a running ingest")
    quiet(c, "no summary on stderr")


def cmd_compact(args) -> int:
    import warehouse

    summary = warehouse.compact(args.root, retention_hours=args.retention_hours, wait=args.wait,
                                progress=not args.quiet, storage_options=args.storage_options)
    if not args.quiet:
        print(summary.text(), file=sys.stderr)
    return EXIT_OK
