"""Object storage (``s3://``, ``gs://``, ``abfs://``) through ``pyarrow.fs``: options, listings, reads, errors.

The one place the warehouse talks to a bucket. Sources given as URLs are walked,
stat'ed and read through the functions here; the rest of the core handles a URL
as a path string (``source_path`` is the object's URL), so path-derived fields,
ids and dependencies work as for local files.

**Options.** Credentials and endpoint come from the standard environment
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``
or ``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``; ``AWS_PROFILE`` and
the shared config files through the AWS SDK's own chain) and from storage options
(``--storage-option KEY=VALUE``, ``storage_options={...}``), which win. The keys are
those deltalake, object_store and polars use (``aws_access_key_id``, ``aws_region``,
``aws_endpoint_url``, ``aws_allow_http``, ...; case-insensitive, the ``aws_`` prefix
optional); ``translate`` turns them into ``pyarrow.fs.S3FileSystem`` arguments. As
object_store does, a plain-``http://`` endpoint is refused unless ``aws_allow_http``
is true. No secret appears in a message (``redact``): not the secret options' values
(given or from the environment), a URL's userinfo (an endpoint ``http://user:pw@host``),
nor a signed URL's query parameters; a source or root URL carrying credentials is refused.

**Listings.** A walk lists a prefix once (``list_tree``); what it saw is remembered
in this process (``Listing``), so the catalog's checks (is this object unchanged, is
this dependency as recorded, is that object gone) cost no request. ETags are not in
pyarrow's listings: an object is unchanged when its size and LastModified (1 s
resolution) are the catalogued ones.

**Reads.** ``open_file`` opens an object as a seekable, buffered binary file: each
refill of the 8 MB buffer is one ranged GET, so a large object streams and a piece
of it (``seek`` + ``read``) is one ranged read.

**Errors** become ``ObjectStoreError`` (a run cannot go on: no such bucket, bad
credentials, unreachable endpoint) or, for one object, an ``OSError`` whose
message names the object and says what to check; never a pyarrow or AWS SDK traceback.
A write into a remote root (a Delta commit, a Parquet put) that the store refuses is
turned into the same one line by ``writing_root``, naming the key the library reports.

A warehouse root on object storage (conditional puts, its own objects): ``warehouse.store.remote_root``.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from warehouse.access import WHAT_TO_CHECK, WHAT_TO_CHECK_WRITING, canonical, resolve, scrub, translate
from warehouse.errors import ObjectStoreError, UsageError
from warehouse.urlpaths import SCHEMES, is_url, normpath, split

#: bytes fetched per ranged GET when an object is read in order
BUFFER_BYTES = 8 << 20


# --- URLs as paths ------------------------------------------------------------------


# --- options -----------------------------------------------------------------------


def redact(text: str, options: Mapping[str, str] | None = None) -> str:
    """``text`` with no secret left in it: every URL's userinfo and every credential-like query parameter's
    value, and every secret value of ``options`` (default: this process's resolved storage options,
    the environment's included), replaced by ``***``. Every message that may name a URL or quote a
    library goes through it (and the command line's ``error:`` line once more)."""
    if options is None:
        try:
            options = resolved_options()
        except UsageError:  # options that cannot be used: the ones given are still to be hidden
            options = {**resolve(None), **(_options or {})}
    return scrub(text, options)


def no_credentials(url: str) -> None:
    """UsageError for a URL carrying credentials (``s3://KEY:SECRET@bucket/...``): they would be part of every
    path and message made from it, so they are never read from there."""
    if "@" in split(url)[1]:
        raise UsageError(f"{redact(url)}: credentials in a URL are not read (they would show in every path and "
                         "message); give them as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or "
                         "--storage-option, and the URL as s3://BUCKET/PREFIX")


# --- the file systems of this process ------------------------------------------------

_options: dict[str, str] | None = None  # the run's storage options (canonical names), as given
_filesystems: dict[tuple, Any] = {}
_run_listing: "Listing | None" = None


def configure(options: Mapping[str, Any] | None, *, new_run: bool = False) -> None:
    """Use these storage options (with the environment's) for the URLs this process reads from now on.

    Called by the ingest run (``new_run``: forget the listings of earlier runs) and by each
    batch in a worker process; the options are checked here, so a bad one is a UsageError
    before anything is read.
    """
    global _options, _run_listing
    given = canonical(options)
    translate(resolve(given))  # refuse what cannot work (one key of two, plain http not allowed) up front
    if given != _options:
        _filesystems.clear()
    _options = given
    if new_run or _run_listing is None:
        _run_listing = Listing()


def configure_for(root: Any, options: Mapping[str, Any] | Iterable[str] | None) -> None:
    """For a command that reads or maintains the warehouse at ``root`` (``sql``, ``export``, ``history``, ...):
    ``configure(options)`` when the root is a URL or options are given (a local root without options
    leaves the store settings, and a stray AWS environment, alone)."""
    if options or is_url(os.fspath(root) if hasattr(root, "__fspath__") else root):
        configure(options)


def resolved_options() -> dict[str, str]:
    """This process's storage options, the environment's included, by their canonical names."""
    return resolve(_options)


def filesystem(url: str):
    """(pyarrow file system, path inside it) for a URL."""
    import pyarrow.fs as pafs

    scheme, bucket, key = split(url)
    if scheme not in SCHEMES:
        raise UsageError(f"{redact(url)}: {scheme}:// is not supported; sources may be local paths or "
                         f"{', '.join(s + '://' for s in SCHEMES)} URLs")
    if not bucket:
        raise UsageError(f"{url}: no bucket named (expected {scheme}://BUCKET/PREFIX)")
    no_credentials(url)
    options = resolved_options()
    cache_key = (scheme, tuple(sorted(options.items())))
    fs = _filesystems.get(cache_key)
    if fs is None:
        try:
            if scheme == "s3":
                fs = pafs.S3FileSystem(connect_timeout=10, **translate(options))
            else:  # credentials from the provider's own environment (untested here: no local server)
                fs = pafs.FileSystem.from_uri(f"{scheme}://{bucket}")[0]
        except UsageError:
            raise
        except Exception as e:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ...
            raise ObjectStoreError(f"{url}: cannot set up {scheme}:// access: {_first_line(e, options)}",
                                   bucket=bucket) from None
        _filesystems[cache_key] = fs
    return fs, f"{bucket}/{key}".rstrip("/")


# --- what went wrong -----------------------------------------------------------------


def _first_line(e: BaseException, options: Mapping[str, str]) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    text = text.split(": <?xml", 1)[0]  # obstore appends the response body (XML) to the status line
    text = re.sub(r"\s*\(Request ID: [^)]*\)", "", text)
    return redact(text, options)


#: where the libraries name the object a request was for: obstore ("for path K:"), pyarrow ("key 'K'")
_KEY_IN_MESSAGE = re.compile(r"for path ([^\s:]+)|key '([^']+)'")


def _object_of(url: str, e: BaseException) -> str:
    """The URL of the object a failed request was for: the one the library's message names (a Delta
    commit fails on ``<table>/_delta_log/<N>.json``, not on the table's URL), else ``url``."""
    m = _KEY_IN_MESSAGE.search(str(e))
    if m is None:
        return url
    scheme, bucket, _ = split(url)
    return f"{scheme}://{bucket}/{m.group(1) or m.group(2)}"


def explain(url: str, e: BaseException, *, writing: bool = False) -> tuple[str, str]:
    """(kind, message) for a failed request on ``url``: what went wrong and what to check."""
    options = resolved_options()
    text = str(e)
    url = _object_of(url, e)
    _, bucket, key = split(url)
    endpoint = redact(options["aws_endpoint_url"], options) if options.get("aws_endpoint_url") else \
        "the provider's default endpoint"
    check = WHAT_TO_CHECK_WRITING if writing else WHAT_TO_CHECK
    if "NO_SUCH_BUCKET" in text or "NoSuchBucket" in text:
        return "bucket", f"{url}: no such bucket {bucket!r} at {endpoint} (check the bucket name and AWS_ENDPOINT_URL)"
    if any(s in text for s in ("ACCESS_DENIED", "INVALID_ACCESS_KEY_ID", "SIGNATURE_DOES_NOT_MATCH", "InvalidAccessKeyId",
                               "SignatureDoesNotMatch", "AccessDenied", "Forbidden", "403", "EXPIRED_TOKEN",
                               "UNRECOGNIZED_CLIENT", "INVALID_CLIENT_TOKEN_ID", "MISSING_AUTHENTICATION_TOKEN")):
        return "denied", (f"{url}: access denied (bucket {bucket!r}, key {key!r}): {check} "
                          f"[{_first_line(e, options)}]")
    if any(s in text for s in ("NETWORK_CONNECTION", "curlCode", "Could not resolve host", "Couldn't connect",
                               "Connection refused", "Timeout", "timed out", "error sending request")):
        return "network", (f"{url}: cannot reach {endpoint}: check AWS_ENDPOINT_URL (or --storage-option "
                           "aws_endpoint_url) and the network")
    if isinstance(e, FileNotFoundError):
        return "missing", f"{url}: no such object (bucket {bucket!r}, key {key!r})"
    return "other", f"{url}: {_first_line(e, options)} ({check})"


def run_error(url: str, e: BaseException, *, writing: bool = False) -> ObjectStoreError:
    """The error that stops a run (the listing of a given URL failed, a write into a remote root failed)."""
    _, message = explain(url, e, writing=writing)
    _, bucket, key = split(_object_of(url, e))
    return ObjectStoreError(message, bucket=bucket, key=key)


def object_error(url: str, e: BaseException) -> OSError:
    """An OSError for one object, its message (``strerror``) naming it and saying what to check."""
    kind, message = explain(url, e)
    code = {"missing": errno.ENOENT, "denied": errno.EACCES, "bucket": errno.ENOENT}.get(kind, errno.EIO)
    return OSError(code, message, url)  # filename: the URL, so a caller can tell it from a local fault


@contextmanager
def writing_root(url: str) -> Iterator[None]:
    """Any failure of the block (a Delta commit, a Parquet write through pyarrow.fs) on the remote
    ``url`` as one ObjectStoreError naming the bucket and key and what to check, never a Rust or
    AWS SDK traceback; local paths' errors pass through as they are."""
    try:
        yield
    except (ObjectStoreError, UsageError, KeyboardInterrupt):
        raise
    except Exception as e:  # noqa: BLE001 - deltalake's DeltaError / OSError, pyarrow's OSError, obstore's errors
        if not is_url(url) or (isinstance(e, OSError) and is_url(e.filename)) or not from_store(e):
            raise
        raise run_error(url, e, writing=True) from None


def from_store(e: BaseException) -> bool:
    """An error a request to the store raised (not a fault of our own code, which must keep its traceback).
    deltalake's errors are classes of its Rust module (``_internal.DeltaError``): named by their base."""
    from deltalake.exceptions import DeltaError

    return isinstance(e, (OSError, DeltaError)) or type(e).__module__.split(".")[0] in ("obstore", "pyarrow")


# --- listings ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entry:
    url: str
    size: int
    mtime_ns: int


class Listing:
    """What the walks of this process listed: objects by URL and the prefixes listed in full.

    A question about a URL under a listed prefix is answered from here, without a request.
    """

    def __init__(self) -> None:
        self.objects: dict[str, Entry] = {}
        self.dirs: set[str] = set()  # prefixes that hold something (every parent of a listed object)
        self.complete: list[str] = []  # prefixes listed recursively

    def covers(self, url: str) -> bool:
        return any(url == p or url.startswith(p + "/") for p in self.complete)

    def add(self, prefix: str, entries: list[Entry]) -> None:
        self.complete.append(prefix)
        for e in entries:
            self.objects[e.url] = e
            d = posixpath.dirname(e.url)
            while len(d) > len(prefix) and d not in self.dirs:
                self.dirs.add(d)
                d = posixpath.dirname(d)
        if entries:
            self.dirs.add(prefix)

    def children(self, url: str) -> list[str]:
        """Names directly under ``url`` (objects and prefixes), as a directory listing gives them."""
        start = url + "/"
        names = {u[len(start):].split("/", 1)[0] for u in self.objects if u.startswith(start)}
        return sorted(names)


def _listing() -> Listing:
    """What this run listed (``configure(new_run=True)`` starts afresh)."""
    global _run_listing
    if _run_listing is None:
        _run_listing = Listing()
    return _run_listing


def list_tree(url: str) -> list[Entry] | None:
    """Every object under the prefix ``url``, sorted by URL (None when ``url`` is one object:
    the caller stats it). Raises ObjectStoreError when the bucket cannot be listed; an empty
    list when nothing is there."""
    import pyarrow.fs as pafs

    url = normpath(url)
    listing = _listing()
    if url in listing.complete:  # listed already in this run
        return [e for u, e in sorted(listing.objects.items()) if u.startswith(url + "/")]
    fs, path = filesystem(url)
    scheme, bucket, _ = split(url)
    try:
        # The listing first: a prefix (the usual case) costs one request per 1,000 objects.
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
        if not infos and "/" in path:  # nothing under it: one object, or nothing at all
            info = fs.get_file_info(path)
            if info.type == pafs.FileType.File:
                listing.objects[url] = Entry(url, info.size, info.mtime_ns or 0)
                return None
    except Exception as e:  # noqa: BLE001 - pyarrow's OSError / ArrowException
        raise run_error(url, e) from None
    if not infos:  # say so when it is the bucket that is missing
        _check_bucket(fs, url, bucket)
    entries = sorted(
        (Entry(f"{scheme}://{i.path}", i.size, i.mtime_ns or 0) for i in infos if i.type == pafs.FileType.File),
        key=lambda e: e.url,
    )
    _listing().add(url, entries)
    return entries


def _check_bucket(fs, url: str, bucket: str) -> None:
    """Raise ObjectStoreError when the bucket itself is missing or unreadable (a missing key is not an error)."""
    import pyarrow.fs as pafs

    try:
        fs.get_file_info(pafs.FileSelector(bucket, recursive=False))
    except Exception as e:  # noqa: BLE001
        raise run_error(url, e) from None


def stat(url: str) -> tuple[str, int | None, int | None] | None:
    """("file", size, mtime_ns), ("dir", None, listing digest) or None when nothing is there.

    A prefix has no mtime: a directory's "mtime" is a digest of the names directly
    under it, so a dependency on a listing changes when an entry is added or removed.
    Answered from the listing when ``url`` is under a listed prefix, else asked.
    """
    import pyarrow.fs as pafs

    url = normpath(url)
    listing = _listing()
    if listing.covers(url):
        e = listing.objects.get(url)
        if e is not None:
            return "file", e.size, e.mtime_ns
        if url in listing.dirs:
            return "dir", None, names_digest(listing.children(url))
        return None
    fs, path = filesystem(url)
    try:
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.File:
            return "file", info.size, info.mtime_ns or 0
        if info.type == pafs.FileType.Directory:
            return "dir", None, names_digest(list_dir(url))
    except OSError:
        raise
    except Exception as e:  # noqa: BLE001
        raise object_error(url, e) from None
    return None


def list_dir(url: str) -> list[str]:
    """Names directly under the prefix ``url`` (an OSError naming it when it cannot be listed)."""
    import pyarrow.fs as pafs

    url = normpath(url)
    listing = _listing()
    if listing.covers(url):
        return listing.children(url)
    fs, path = filesystem(url)
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True))
    except Exception as e:  # noqa: BLE001
        raise object_error(url, e) from None
    return sorted(posixpath.basename(i.path) for i in infos)


def names_digest(names: list[str]) -> int:
    """A 63-bit digest of a listing: what ``mtime_ns`` records for a prefix."""
    h = hashlib.blake2b("\n".join(sorted(names)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") >> 1


def open_file(url: str) -> tuple[io.BufferedReader, int, int]:
    """An object as a seekable buffered binary file, its size and its LastModified (ns), from the
    one HEAD request the open makes. OSError (``object_error``) when it cannot be opened."""
    fs, path = filesystem(url)
    try:
        raw = fs.open_input_file(path)
        size = raw.size()
        meta = raw.metadata()
    except Exception as e:  # noqa: BLE001
        raise object_error(url, e) from None
    return io.BufferedReader(_Raw(raw, url), BUFFER_BYTES), size, _mtime_ns(url, meta)


def _mtime_ns(url: str, meta) -> int:
    """LastModified from an object's metadata; the listing's when the metadata has none."""
    import datetime as dt

    value = meta.get("Last-Modified") if meta is not None else None
    if value:
        text = value.decode() if isinstance(value, bytes) else str(value)
        try:
            when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            from email.utils import parsedate_to_datetime

            try:
                when = parsedate_to_datetime(text)
            except (TypeError, ValueError):
                when = None
        if when is not None:
            if when.tzinfo is None:
                when = when.replace(tzinfo=dt.timezone.utc)
            return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000
    e = _listing().objects.get(normpath(url))
    return e.mtime_ns if e is not None else 0


class _Raw(io.RawIOBase):
    """A pyarrow random-access file as a Python raw file; a failed read is an OSError naming the object."""

    def __init__(self, f, url: str):
        self._f, self._url = f, url

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        try:
            return self._f.readinto(buf)
        except Exception as e:  # noqa: BLE001
            raise object_error(self._url, e) from None

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def close(self) -> None:
        try:
            self._f.close()
        finally:
            super().close()


# --- any path: local or a URL -----------------------------------------------------------


def exists(path: str) -> bool:
    """True when a file, an object, or a prefix holding objects is there. For a URL no listing
    covers yet, the prefix is listed (and remembered for the walk); ObjectStoreError when the
    bucket cannot be read."""
    if not is_url(path):
        return os.path.lexists(path)
    if _listing().covers(normpath(path)):
        return stat(path) is not None
    entries = list_tree(path)
    return entries is None or bool(entries)


def isfile(path: str) -> bool:
    if not is_url(path):
        return os.path.isfile(path)
    found = stat(path)
    return found is not None and found[0] == "file"


def isdir(path: str) -> bool:
    if not is_url(path):
        return os.path.isdir(path)
    found = stat(path)
    return found is not None and found[0] == "dir"


def getsize(path: str) -> int:
    if not is_url(path):
        return os.path.getsize(path)
    found = stat(path)
    if found is None or found[0] != "file":
        raise OSError(errno.ENOENT, f"{path}: no such object")
    return found[1] or 0


def walk_objects(url: str) -> Iterator[Entry]:
    """Objects under a prefix (``list_tree``), or the one object ``url`` names."""
    entries = list_tree(url)
    if entries is None:
        yield _listing().objects[normpath(url)]
        return
    yield from entries


