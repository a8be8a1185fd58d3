"""What every command shares, spelled the same on each: how a command is declared, ``--root``,
``--storage-option``, ``--as-of``, ``--where``, ``--jobs``, ``--quiet`` and a printed result's ``--format``."""

from __future__ import annotations

import argparse


def command(sub, name: str, *, help: str, description: str, epilog):
    """A command's parser: its line in ``warehouse --help``, its description, and its examples (``epilog``,
    text or a function that makes it when help is asked for) shown as they are written."""
    return sub.add_parser(name, help=help, description=description, epilog=epilog,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def root(p, help: str = "warehouse directory or s3:// URL") -> None:
    """``--root`` and the ``--storage-option`` that goes with an s3:// root: the same on every command."""
    p.add_argument("--root", required=True, help=help)
    storage_option(p)


def storage_option(p, what: str = "an s3:// --root") -> None:
    """``--storage-option KEY=VALUE``: the same option on every command (parsed by ``access.canonical``)."""
    p.add_argument("--storage-option", dest="storage_options", action="append", metavar="KEY=VALUE",
                   help=f"for {what}: aws_region, aws_endpoint_url, aws_access_key_id, ... (repeatable; "
                        "overrides the AWS_* environment; see docs/storage.md)")


def as_of(p, verb: str) -> None:
    """``--as-of N``: which snapshot a reading command reads (``verb``: what it does with it)."""
    p.add_argument("--as-of", type=int, default=None, metavar="N",
                   help=f"{verb} warehouse snapshot N (`warehouse history` lists them; default: the latest)")


def where(p, more: str = "") -> None:
    """``--where``: one SQL expression on responses, as export and view take it."""
    p.add_argument("--where", default=None, help=f"one SQL expression on responses{more} (default: every response)")


def printed_format(p, choices) -> None:
    """``--format`` of a command that prints a result: a table on a terminal, or one of ``choices``."""
    p.add_argument("--format", default="table", choices=choices, help="output format (default: table)")


def jobs(p) -> None:
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: one per core)")


def quiet(p, help: str = "no progress bar or summary on stderr") -> None:
    p.add_argument("-q", "--quiet", action="store_true", help=help)
