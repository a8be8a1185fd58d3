"""A warehouse root on object storage: the conditional puts, reads, deletes and listings of its objects.

``storage.RemoteStore`` keeps a warehouse under a URL. Files are written and read through
``pyarrow.fs`` as sources are; the writes pyarrow.fs cannot make, conditional puts, go through
``obstore``: the Python binding of the Rust object_store deltalake itself uses. ``create_object``
fails when the object exists (S3 ``If-None-Match: *``: the snapshot commit point, a new lease);
``replace_object`` fails when it is not the version read (``If-Match: <ETag>``: every other
change to the lease). There is no unconditional overwrite of a state object here.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from warehouse.access import _true
from warehouse.errors import Superseded, UsageError
from warehouse.filesystems import FileSystems, Reachable
from warehouse.remote import no_credentials
from warehouse.urlpaths import is_url, split


def _object_store(filesystems: FileSystems, url: str):
    """(obstore store of the bucket, key) for an ``s3://`` URL: one client (and its connections) a bucket."""
    from obstore.store import S3Store

    scheme, bucket, key = split(url)
    if scheme != "s3":
        raise UsageError(f"{filesystems.redact(url)}: a warehouse root on {scheme}:// is not supported; the root may be a local "
                         "directory or an s3:// URL (docs/storage.md)")
    no_credentials(url, filesystems.safe_options())
    options = filesystems.options
    kwargs: dict[str, Any] = {}
    pairs = {"aws_access_key_id": "access_key_id", "aws_secret_access_key": "secret_access_key",
             "aws_session_token": "session_token", "aws_region": "region", "aws_endpoint_url": "endpoint"}
    for name, arg in pairs.items():
        if options.get(name):
            kwargs[arg] = options[name]
    if _true(options.get("aws_virtual_hosted_style_request")):
        kwargs["virtual_hosted_style_request"] = True
    client = {"allow_http": True} if _true(options.get("aws_allow_http")) else {}
    store = filesystems.clients.get(("obstore", bucket))
    if store is None:
        store = filesystems.clients[("obstore", bucket)] = S3Store(bucket, client_options=client, **kwargs)
    return store, key


def create_object(filesystems: FileSystems, url: str, data: bytes) -> str | None:
    """Put ``data`` at ``url`` unless an object is there already (then FileExistsError): one conditional put.
    Returns the new object's ETag (what a later ``replace_object`` is conditional on)."""
    import obstore

    store, key = _object_store(filesystems, url)
    try:
        return obstore.put(store, key, data, mode="create")["e_tag"]
    except Exception as e:  # noqa: BLE001 - obstore's AlreadyExistsError, network and permission errors
        if type(e).__name__ == "AlreadyExistsError":
            raise FileExistsError(errno.EEXIST, f"{url}: exists", url) from None
        raise filesystems.run_error(url, e, writing=True) from None


def replace_object(filesystems: FileSystems, url: str, data: bytes, e_tag: str) -> str | None:
    """Put ``data`` at ``url`` only if the object there still has ETag ``e_tag`` (S3 ``If-Match``);
    ``Superseded`` when it changed or is gone. Returns the new ETag."""
    import obstore

    store, key = _object_store(filesystems, url)
    try:
        return obstore.put(store, key, data, mode={"e_tag": e_tag})["e_tag"]
    except Exception as e:  # noqa: BLE001
        if type(e).__name__ in ("PreconditionError", "NotFoundError") and "NoSuchBucket" not in str(e):
            raise Superseded(f"{url}: changed since it was read") from None
        raise filesystems.run_error(url, e, writing=True) from None


def read_versioned(filesystems: FileSystems, url: str) -> tuple[bytes, str | None] | None:
    """(the bytes at ``url``, their ETag); None when there is no object."""
    import obstore

    store, key = _object_store(filesystems, url)
    try:
        got = obstore.get(store, key)
        return bytes(got.bytes()), got.meta["e_tag"]
    except Exception as e:  # noqa: BLE001
        if type(e).__name__ == "NotFoundError" and "NoSuchBucket" not in str(e):
            return None
        raise filesystems.run_error(url, e) from None


def delete(filesystems: FileSystems, path: str) -> None:
    """Delete a file the run wrote, a local path or an object's URL; one already gone is fine."""
    if is_url(path):
        delete_object(filesystems, path)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def delete_object(filesystems: FileSystems, url: str) -> None:
    """Delete the object at ``url`` (one already gone is fine). On S3 through obstore: pyarrow's delete
    keeps the folder the object was in by putting an empty ``folder/`` object there, which would stay
    in a root after the run that wrote its only file was undone."""
    if split(url)[0] == "s3":
        import obstore

        store, key = _object_store(filesystems, url)
        try:
            obstore.delete(store, key)
        except Exception as e:  # noqa: BLE001
            if type(e).__name__ != "NotFoundError" or "NoSuchBucket" in str(e):
                raise filesystems.run_error(url, e, writing=True) from None
        return
    fs, path = filesystems.bucket(url)
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        pass
    except Exception as e:  # noqa: BLE001
        raise filesystems.run_error(url, e) from None


def list_objects(filesystems: FileSystems, url: str, *, recursive: bool = False) -> list[tuple[str, int]]:
    """(name relative to ``url``, size) of the objects under the prefix ``url`` (none when it is empty)."""
    import pyarrow.fs as pafs

    fs, path = filesystems.bucket(url)
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=recursive, allow_not_found=True))
    except Exception as e:  # noqa: BLE001
        raise filesystems.run_error(url, e) from None
    return [(i.path[len(path) + 1:], i.size) for i in infos if i.type == pafs.FileType.File]


def list_folders(filesystems: FileSystems, url: str) -> list[str]:
    """The names of the 'folders' (common prefixes) right under ``url``."""
    return list_entries(filesystems, url)[0]


def list_entries(filesystems: FileSystems, url: str) -> tuple[list[str], list[str]]:
    """(folder names, object names) right under the prefix ``url``: one listing request."""
    import pyarrow.fs as pafs

    fs, path = filesystems.bucket(url)
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True))
    except Exception as e:  # noqa: BLE001
        raise filesystems.run_error(url, e) from None
    return ([i.base_name for i in infos if i.type == pafs.FileType.Directory],
            [i.base_name for i in infos if i.type == pafs.FileType.File])


def kind(filesystems: FileSystems, url: str) -> str | None:
    """"file" (an object), "dir" (a prefix holding objects, or a bucket) or None (nothing) at ``url``."""
    import pyarrow.fs as pafs

    fs, path = filesystems.bucket(url)
    try:
        info = fs.get_file_info(path)
    except Exception as e:  # noqa: BLE001
        raise filesystems.run_error(url, e) from None
    return {pafs.FileType.File: "file", pafs.FileType.Directory: "dir"}.get(info.type)


class RootURL(Reachable):
    """A remote root as the rest of the code holds a root: text that joins with ``/``, and knows how it is
    reached (the store's ``FileSystems``)."""

    @property
    def name(self) -> str:
        return self.rsplit("/", 1)[-1]

    def exists(self) -> bool:
        """An object, or a prefix holding objects, is at this URL (one request)."""
        return kind(self.filesystems, self) is not None

    def is_dir(self) -> bool:
        """A prefix holding objects (or the bucket itself) is at this URL: not a single object."""
        return kind(self.filesystems, self) == "dir"
