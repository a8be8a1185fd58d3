"""Local disk and object storage as one run, one connection or one worker reaches them: the storage seam.

Every question the warehouse asks of a path (is it there, a file or a folder, its size and
mtime, its bytes, the Parquet file system to write it through, deltalake's options for a
table under it) is asked of a ``FileSystems``, and "local or a URL?" is answered here and
nowhere else. There is no file-system state of the process: a run makes its own
``FileSystems`` with its storage options (the store holds it, ``Store(root, options)``), a
worker process makes one from the options the run handed it, a connection makes one for
its root. What one holds:

* the storage options, given and from the environment (``warehouse.access``): checked
  when it is made, so a bad option is a UsageError before anything is read;
* the clients it made: a ``pyarrow.fs`` file system a bucket and options, ``LocalFileSystem``
  for local paths (one seam for both: every Parquet and Delta file the store writes or
  reads goes through ``path``), and obstore's store for a root's conditional puts
  (``store.remote_root``; docs/storage.md says why it is a second client);
* what its walks listed (``remote.Listing``): a run's catalogue checks (is this object
  unchanged, is that one gone) are answered from it, without a request.

URL-only helpers (errors, listings, redaction) are in ``warehouse.remote``.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Iterator
from typing import Any, BinaryIO

from warehouse.access import StorageOptions, canonical, resolve, translate
from warehouse.errors import ObjectStoreError, UsageError
from warehouse.remote import (
    BUFFER_BYTES,
    Entry,
    Listing,
    RawObject,
    first_line,
    last_modified_ns,
    names_digest,
    no_credentials,
    object_error,
    redact,
    run_error,
    writing_root,
)
from warehouse.urlpaths import SCHEMES, is_url, normpath, split


class FileSystems:
    """How paths are reached, local and remote, with one set of storage options (see the module)."""

    def __init__(self, options: StorageOptions = None, *, check: bool = True):
        self.given = canonical(options)
        self._resolved: dict[str, str] | None = None
        self.listing = Listing()
        self.clients: dict[tuple, Any] = {}  # pyarrow.fs and obstore clients, by what they were made for
        if check:
            translate(self.options)  # refuse what cannot work (one key of two, plain http not allowed) up front

    @classmethod
    def for_path(cls, root: Any, options: StorageOptions = None) -> "FileSystems":
        """For a command that reads or maintains the warehouse at ``root``: the options are checked now when
        the root is a URL or options are given; a local root without options leaves a stray AWS environment
        alone (it is read, and checked, only if a URL is met)."""
        text = os.fspath(root) if hasattr(root, "__fspath__") else str(root)
        return cls(options, check=bool(options) or is_url(text))

    @classmethod
    def of(cls, path: Any) -> "FileSystems":
        """The ``FileSystems`` ``path`` carries (``Reachable``), else one with the environment's options: for
        code handed a path alone, as a format's ``sniff`` is."""
        return getattr(path, "filesystems", None) or cls.for_path(path)

    @property
    def options(self) -> dict[str, str]:
        """The storage options in use, the environment's included, by their canonical names."""
        if self._resolved is None:
            self._resolved = resolve(self.given)
        return self._resolved

    def safe_options(self) -> dict[str, str]:
        """The options to hide in a message: the resolved ones, or the given ones when they cannot be used."""
        try:
            return self.options
        except UsageError:
            return {**resolve(None), **self.given}

    def redact(self, text: str) -> str:
        """``text`` with none of these options' secrets (nor any URL's userinfo) in it (``remote.redact``)."""
        return redact(text, self.safe_options())

    # --- one seam: a pyarrow file system for any path -----------------------------------------

    def path(self, path: str):
        """(pyarrow file system, path inside it) for a local path or a URL."""
        if is_url(path):
            return self.bucket(path)
        fs = self.clients.get(("local",))
        if fs is None:
            import pyarrow.fs as pafs

            fs = self.clients[("local",)] = pafs.LocalFileSystem()
        return fs, path

    def bucket(self, url: str):
        """(pyarrow file system, path inside it) for a URL; UsageError for a scheme or URL that cannot be read."""
        import pyarrow.fs as pafs

        scheme, bucket, key = split(url)
        if scheme not in SCHEMES:
            raise UsageError(f"{self.redact(url)}: {scheme}:// is not supported; sources may be local paths or "
                             f"{', '.join(s + '://' for s in SCHEMES)} URLs")
        if not bucket:
            raise UsageError(f"{url}: no bucket named (expected {scheme}://BUCKET/PREFIX)")
        no_credentials(url, self.safe_options())
        options = self.options
        fs = self.clients.get((scheme, bucket))
        if fs is None:
            try:
                if scheme == "s3":
                    fs = pafs.S3FileSystem(connect_timeout=10, **translate(options))
                else:  # credentials from the provider's own environment (untested here: no local server)
                    fs = pafs.FileSystem.from_uri(f"{scheme}://{bucket}")[0]
            except UsageError:
                raise
            except Exception as e:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ...
                raise ObjectStoreError(f"{url}: cannot set up {scheme}:// access: {first_line(e, options)}",
                                       bucket=bucket) from None
            self.clients[(scheme, bucket)] = fs
        return fs, f"{bucket}/{key}".rstrip("/")

    def delta_options(self, uri: str) -> dict[str, str] | None:
        """The storage options deltalake gets for a table at ``uri`` (it reads the canonical names as they
        are); None for a local table."""
        return dict(self.options) if is_url(uri) else None

    # --- errors, with these options' endpoint and secrets -------------------------------------

    def run_error(self, url: str, e: BaseException, *, writing: bool = False) -> ObjectStoreError:
        return run_error(url, e, self.safe_options(), writing=writing)

    def object_error(self, url: str, e: BaseException) -> OSError:
        return object_error(url, e, self.safe_options())

    def writing_root(self, url: str):
        """A context in which any failure to write into the remote root at ``url`` is one ObjectStoreError
        naming the object (``remote.writing_root``); a local path's errors pass through."""
        return writing_root(url, self.safe_options())

    # --- questions about any path --------------------------------------------------------------

    def exists(self, path: str) -> bool:
        """True when a file, an object, or a prefix holding objects is there. For a URL no listing
        covers yet, the prefix is listed (and remembered for the walk); ObjectStoreError when the
        bucket cannot be read."""
        if not is_url(path):
            return os.path.lexists(path)
        if self.listing.covers(normpath(path)):
            return self.stat(path) is not None
        entries = self.list_tree(path)
        return entries is None or bool(entries)

    def isfile(self, path: str) -> bool:
        if not is_url(path):
            return os.path.isfile(path)
        found = self.stat(path)
        return found is not None and found[0] == "file"

    def isdir(self, path: str) -> bool:
        if not is_url(path):
            return os.path.isdir(path)
        found = self.stat(path)
        return found is not None and found[0] == "dir"

    def open(self, path: str) -> tuple[BinaryIO, int, int]:
        """(file, size, mtime_ns) of a regular local file or an object; OSError saying why not. A local
        file is opened by the OS (``open_regular``), an object for ranged reads (``open_object``)."""
        if is_url(path):
            return self.open_object(path)
        f = open_regular(path)
        st = os.fstat(f.fileno())
        return f, st.st_size, st.st_mtime_ns

    def read(self, path: str) -> bytes | None:
        """The bytes of a file or an object; None when there is none."""
        if not is_url(path):
            try:
                with open(path, "rb") as f:
                    return f.read()
            except FileNotFoundError:
                return None
        fs, where = self.bucket(path)
        try:
            with fs.open_input_stream(where) as f:
                return f.read()
        except FileNotFoundError:
            return None
        except Exception as e:  # noqa: BLE001
            raise self.run_error(path, e) from None

    def size_and_mtime(self, path: str) -> tuple[int, int]:
        """(size, mtime_ns) of a file or an object, without opening it; OSError when it is not there."""
        if not is_url(path):
            st = os.stat(path)
            return st.st_size, st.st_mtime_ns
        found = self.stat(path)
        if found is None or found[0] != "file":
            raise OSError(errno.ENOENT, "no such object")
        return found[1] or 0, found[2] or 0

    # --- objects: listings, stats, reads ------------------------------------------------------

    def list_tree(self, url: str) -> list[Entry] | None:
        """Every object under the prefix ``url``, sorted by URL (None when ``url`` is one object: the
        caller stats it). Raises ObjectStoreError when the bucket cannot be listed; an empty list when
        nothing is there."""
        import pyarrow.fs as pafs

        url = normpath(url)
        listing = self.listing
        if url in listing.complete:  # listed already
            return [e for u, e in sorted(listing.objects.items()) if u.startswith(url + "/")]
        fs, path = self.bucket(url)
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
            raise self.run_error(url, e) from None
        if not infos:  # say so when it is the bucket that is missing
            try:
                fs.get_file_info(pafs.FileSelector(bucket, recursive=False))
            except Exception as e:  # noqa: BLE001
                raise self.run_error(url, e) from None
        entries = sorted(
            (Entry(f"{scheme}://{i.path}", i.size, i.mtime_ns or 0) for i in infos if i.type == pafs.FileType.File),
            key=lambda e: e.url,
        )
        listing.add(url, entries)
        return entries

    def walk_objects(self, url: str) -> Iterator[Entry]:
        """Objects under a prefix (``list_tree``), or the one object ``url`` names."""
        entries = self.list_tree(url)
        if entries is None:
            yield self.listing.objects[normpath(url)]
            return
        yield from entries

    def stat(self, path: str) -> tuple[str, int | None, int | None] | None:
        """("file", size, mtime_ns), ("dir", None, mtime_ns) or None when nothing is there (or a local
        path cannot be stat'ed).

        A prefix has no mtime: an object prefix's "mtime" is a digest of the names directly under it, so a
        dependency on a listing changes when an entry is added or removed (a local directory's mtime
        changes then too). Answered from the listing when ``url`` is under a listed prefix, else asked.
        """
        import pyarrow.fs as pafs

        if not is_url(path):
            try:
                st = os.stat(path)
            except OSError:
                return None
            return ("dir", None, st.st_mtime_ns) if stat.S_ISDIR(st.st_mode) else ("file", st.st_size, st.st_mtime_ns)
        url = normpath(path)
        listing = self.listing
        if listing.covers(url):
            e = listing.objects.get(url)
            if e is not None:
                return "file", e.size, e.mtime_ns
            if url in listing.dirs:
                return "dir", None, names_digest(listing.children(url))
            return None
        fs, path = self.bucket(url)
        try:
            info = fs.get_file_info(path)
            if info.type == pafs.FileType.File:
                return "file", info.size, info.mtime_ns or 0
            if info.type == pafs.FileType.Directory:
                return "dir", None, names_digest(self.list_dir(url))
        except OSError:
            raise
        except Exception as e:  # noqa: BLE001
            raise self.object_error(url, e) from None
        return None

    def list_dir(self, url: str) -> list[str]:
        """Names directly under the prefix ``url`` (an OSError naming it when it cannot be listed)."""
        import pyarrow.fs as pafs

        url = normpath(url)
        if self.listing.covers(url):
            return self.listing.children(url)
        fs, path = self.bucket(url)
        try:
            infos = fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True))
        except Exception as e:  # noqa: BLE001
            raise self.object_error(url, e) from None
        return sorted(os.path.basename(i.path) for i in infos)

    def open_object(self, url: str) -> tuple[io.BufferedReader, int, int]:
        """An object as a seekable buffered binary file, its size and its LastModified (ns), from the
        one HEAD request the open makes. OSError (``object_error``) when it cannot be opened."""
        fs, path = self.bucket(url)
        try:
            raw = fs.open_input_file(path)
            size = raw.size()
            meta = raw.metadata()
        except Exception as e:  # noqa: BLE001
            raise self.object_error(url, e) from None
        mtime_ns = last_modified_ns(meta)
        if mtime_ns is None:  # no LastModified in the metadata: the listing's
            e = self.listing.objects.get(normpath(url))
            mtime_ns = e.mtime_ns if e is not None else 0
        return io.BufferedReader(RawObject(raw, url, self.safe_options()), BUFFER_BYTES), size, mtime_ns


class Reachable(str):
    """A path (local or a URL) that carries the ``FileSystems`` it is reached through, as universal_pathlib's
    ``UPath`` carries its storage options: what code handed a path alone (``reach``, ``FileSystems.of``)
    reaches it with. Joining with ``/`` keeps it."""

    filesystems: FileSystems

    def __new__(cls, text: str, filesystems: FileSystems) -> "Reachable":
        path = super().__new__(cls, text)
        path.filesystems = filesystems
        return path

    def __truediv__(self, name: str) -> "Reachable":
        return type(self)(f"{self}/{name}", self.filesystems)

    def __reduce__(self):  # pickled (to a worker, an executor) as the text alone: never the clients
        return str, (str(self),)


def open_regular(path: str) -> BinaryIO:
    """Open a regular local file for reading, or raise OSError saying why not: a FIFO would block a run
    forever, ``/dev/zero`` never ends.

    O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer;
    for a regular file the flag changes nothing.
    """
    extra = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)  # POSIX flags; Windows has no FIFOs to fear
    f = open(path, "rb", opener=lambda p, flags: os.open(p, flags | extra))
    try:
        mode = os.fstat(f.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or socket); only regular files are read")
    except BaseException:
        f.close()
        raise
    return f


def reach(path: Any) -> FileSystems:
    """The ``FileSystems`` a path of a warehouse root is reached through. A remote root's URLs carry the
    store's (``store.remote_root.RootURL``, as universal_pathlib's ``UPath`` carries its storage options);
    a local path needs no options. A bare URL string here is a fault of ours (it lost its root's options
    on the way), said as such rather than read with the environment's options alone."""
    found = getattr(path, "filesystems", None)
    if found is not None:
        return found
    if is_url(os.fspath(path) if hasattr(path, "__fspath__") else str(path)):
        raise TypeError(f"{redact(str(path))}: a URL of a warehouse root without its store's storage options "
                        "(expected a RootURL)")
    return FileSystems(check=False)
