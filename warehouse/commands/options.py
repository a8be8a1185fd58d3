"""The options every command shares, spelled the same on each: ``--root`` and ``--storage-option``."""

from __future__ import annotations


def root(p, help: str = "warehouse directory or s3:// URL") -> None:
    """``--root`` and the ``--storage-option`` that goes with an s3:// root: the same on every command."""
    p.add_argument("--root", required=True, help=help)
    storage_option(p)


def storage_option(p, what: str = "an s3:// --root") -> None:
    """``--storage-option KEY=VALUE``: the same option on every command (parsed by ``access.canonical``)."""
    p.add_argument("--storage-option", dest="storage_options", action="append", metavar="KEY=VALUE",
                   help=f"for {what}: aws_region, aws_endpoint_url, aws_access_key_id, ... (repeatable; "
                        "overrides the AWS_* environment; see docs/storage.md)")
