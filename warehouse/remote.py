"""Object storage (``s3://``, ``gs://``, ``abfs://``): what a request's failure means, listings, secrets.

The helpers of ``warehouse.filesystems`` (the seam every path is reached through) for URLs: they
hold no state; the options in use are given to each. The rest of the core handles a URL as a path
string (``source_path`` is the object's URL), so path-derived fields, ids and dependencies work
as for local files.

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

**Listings.** A walk lists a prefix once (``FileSystems.list_tree``); what it saw is remembered
by the run's ``FileSystems`` (``Listing``), so the catalog's checks (is this object unchanged, is
this dependency as recorded, is that object gone) cost no request. ETags are not in
pyarrow's listings: an object is unchanged when its size and LastModified (1 s
resolution) are the catalogued ones.

**Reads.** ``FileSystems.open_object`` opens an object as a seekable, buffered binary file: each
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
import posixpath
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from warehouse.access import WHAT_TO_CHECK, WHAT_TO_CHECK_WRITING, resolve, scrub
from warehouse.errors import ObjectStoreError, UsageError
from warehouse.urlpaths import is_url, split

#: bytes fetched per ranged GET when an object is read in order
BUFFER_BYTES = 8 << 20


# --- options -----------------------------------------------------------------------


def redact(text: str, options: Mapping[str, str] | None = None) -> str:
    """``text`` with no secret left in it: every URL's userinfo and every credential-like query parameter's
    value, and every secret value of ``options`` (default: the environment's), replaced by ``***``.
    Every message that may name a URL or quote a library goes through it (``FileSystems.redact``
    with the options in use; the command line's ``error:`` line once more)."""
    return scrub(text, resolve(None) if options is None else options)


def no_credentials(url: str, options: Mapping[str, str] | None = None) -> None:
    """UsageError for a URL carrying credentials (``s3://KEY:SECRET@bucket/...``): they would be part of every
    path and message made from it, so they are never read from there."""
    if "@" in split(url)[1]:
        raise UsageError(f"{redact(url, options)}: credentials in a URL are not read (they would show in every path and "
                         "message); give them as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or "
                         "--storage-option, and the URL as s3://BUCKET/PREFIX")


# --- what went wrong -----------------------------------------------------------------


def first_line(e: BaseException, options: Mapping[str, str]) -> str:
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


def explain(url: str, e: BaseException, options: Mapping[str, str], *, writing: bool = False) -> tuple[str, str]:
    """(kind, message) for a failed request on ``url`` made with ``options``: what went wrong and what to check."""
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
                          f"[{first_line(e, options)}]")
    if any(s in text for s in ("NETWORK_CONNECTION", "curlCode", "Could not resolve host", "Couldn't connect",
                               "Connection refused", "Timeout", "timed out", "error sending request")):
        return "network", (f"{url}: cannot reach {endpoint}: check AWS_ENDPOINT_URL (or --storage-option "
                           "aws_endpoint_url) and the network")
    if isinstance(e, FileNotFoundError):
        return "missing", f"{url}: no such object (bucket {bucket!r}, key {key!r})"
    return "other", f"{url}: {first_line(e, options)} ({check})"


def run_error(url: str, e: BaseException, options: Mapping[str, str], *, writing: bool = False) -> ObjectStoreError:
    """The error that stops a run (the listing of a given URL failed, a write into a remote root failed)."""
    _, message = explain(url, e, options, writing=writing)
    _, bucket, key = split(_object_of(url, e))
    return ObjectStoreError(message, bucket=bucket, key=key)


def object_error(url: str, e: BaseException, options: Mapping[str, str]) -> OSError:
    """An OSError for one object, its message (``strerror``) naming it and saying what to check."""
    kind, message = explain(url, e, options)
    code = {"missing": errno.ENOENT, "denied": errno.EACCES, "bucket": errno.ENOENT}.get(kind, errno.EIO)
    return OSError(code, message, url)  # filename: the URL, so a caller can tell it from a local fault


@contextmanager
def writing_root(url: str, options: Mapping[str, str]) -> Iterator[None]:
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
        raise run_error(url, e, options, writing=True) from None


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


def names_digest(names: list[str]) -> int:
    """A 63-bit digest of a listing: what ``mtime_ns`` records for a prefix."""
    h = hashlib.blake2b("\n".join(sorted(names)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") >> 1


def last_modified_ns(meta) -> int | None:
    """LastModified from an object's metadata (ns); None when the metadata has none."""
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
    return None


class RawObject(io.RawIOBase):
    """A pyarrow random-access file as a Python raw file; a failed read is an OSError naming the object."""

    def __init__(self, f, url: str, options: Mapping[str, str]):
        self._f, self._url, self._options = f, url, options

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        try:
            return self._f.readinto(buf)
        except Exception as e:  # noqa: BLE001
            raise object_error(self._url, e, self._options) from None

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def close(self) -> None:
        try:
            self._f.close()
        finally:
            super().close()
