"""Paths that may be URLs: which are (s3://bucket/key), their parts, their normal form, and whether one lies
inside a tree, by name. Local paths and object-storage URLs are named alike everywhere else."""

from __future__ import annotations

import os
import posixpath
import re
from typing import Any

#: a URL scheme (s3://, gs://, https://, file://): not a local path
URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


#: the schemes read through pyarrow.fs; only s3 is tested (against a local S3 API server)
SCHEMES = ("s3", "gs", "gcs", "abfs", "abfss")


def is_url(path: Any) -> bool:
    return isinstance(path, str) and bool(URL.match(path))


def split(url: str) -> tuple[str, str, str]:
    """``s3://bucket/a/b`` -> ("s3", "bucket", "a/b")."""
    scheme, _, rest = url.partition("://")
    bucket, _, key = rest.partition("/")
    return scheme.lower(), bucket, key


def normpath(path: str) -> str:
    """A path made absolute and normal: for a URL, ``..`` and ``//`` resolved inside the bucket
    (never above it) and no trailing ``/``; for a local path, ``os.path.abspath``."""
    if not is_url(path):
        return os.path.abspath(path)
    scheme, bucket, key = split(path)
    key = posixpath.normpath("/" + key).lstrip("/") if key else ""
    return f"{scheme}://{bucket}/{key}" if key else f"{scheme}://{bucket}"


def inside(path: str, tree: str) -> bool:
    """True when ``path`` (absolute, normalized) is ``tree`` or lies under it, by name.

    By name, not by resolved symlinks: the walk follows the symlinks inside a tree, so
    what it reaches through them is part of the tree; ``..`` is resolved by name first,
    so it cannot climb out through a symlink.
    """
    return path == tree or path.startswith(tree.rstrip("/") + "/")
