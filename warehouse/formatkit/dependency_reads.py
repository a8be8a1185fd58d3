"""What a source file reads besides itself: the other files, directories and run options its rows depend on.

A file's rows may depend on other files (``read_dependency``); those paths often come from data,
so they must lie inside the *tree* the file was found under (the PATH given to
``ingest``): a reference outside it is refused, never opened. Each read is recorded as a
``Dependency``, so a change of what was read ingests the file again.

An object's references (``s3://bucket/key``) resolve by name inside its bucket prefix exactly
as a local file's inside its tree.
"""

from __future__ import annotations

import hashlib
import os

from warehouse import remote, urlpaths
from warehouse.errors import ReferenceRefused
from warehouse.filesystems import FileSystems, open_regular
from warehouse.formatkit.dependencies import Dependency
from warehouse.formatkit.opening import HEAD_BYTES, normpath


class DependencyReads:
    """The reads of a ``SourceFile`` (``source.py``) beyond its own bytes, each recorded in ``dependencies``.

    Uses the file's ``path``, ``tree``, ``max_record_bytes``, ``dependencies`` and ``filesystems``.
    """

    filesystems: FileSystems
    path: str
    tree: str
    max_record_bytes: int
    dependencies: list[Dependency]

    def reference(self, path: str) -> str:
        """``path`` as read: absolute, ``..`` resolved by name; ReferenceRefused when it is
        outside the tree this file was found under (it came from the file's data)."""
        if urlpaths.is_url(path):
            p = normpath(path)
        elif not urlpaths.is_url(self.path):
            p = normpath(os.path.join(os.path.dirname(normpath(self.path)), path))
        else:  # inside a bucket: a path from the data resolves below the bucket, never on this machine
            p = normpath(os.path.dirname(self.path) + "/" + path) if not path.startswith("/") else path
        if not urlpaths.inside(p, self.tree):
            self.dependencies.append(Dependency.refused(p, self.tree))
            raise ReferenceRefused(
                f"{path} is outside {self.tree}, the path being ingested: a file is read only from inside "
                "the paths given to ingest (ingest a directory that holds both)"
            )
        return p

    def read_dependency(self, path: str, *, from_data: bool = True) -> bytes | None:
        """Bytes of another file this file's rows depend on (None when it does not exist).

        The catalog remembers the file's size, mtime and digest: when it changes,
        appears or disappears, this file is ingested again, so rows built from
        two files come out the same whichever of them was met first.

        Raises ReferenceRefused (a RecordError) when the file may not be read: outside
        the tree (unless ``from_data=False``: a path that does not come from the file's data,
        such as an option the user gave or a sibling the format's layout names),
        not a regular file, over the record limit, or unreadable. A directory counts as
        no file there.
        """
        path = self.reference(path) if from_data else normpath(path)
        if urlpaths.is_url(path):
            return self._read_object(path)
        try:
            with open_regular(path) as f:
                st = os.fstat(f.fileno())
                if st.st_size > self.max_record_bytes:
                    self.dependencies.append(Dependency.file(path, mtime_ns=st.st_mtime_ns))  # re-read when it changes
                    raise ReferenceRefused(
                        f"{path}: {st.st_size} bytes, over the {self.max_record_bytes}-byte record limit; "
                        "raise --max-record-mb to read it"
                    )
                data = f.read(st.st_size)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            self.dependencies.append(Dependency.file(path))  # absent: read when it appears
            return None
        except OSError as e:  # unreadable, or not a regular file: tried again next run
            self.dependencies.append(Dependency.file(path))
            raise ReferenceRefused(f"cannot read {path}: {e.strerror or e}") from None
        self._read_whole(Dependency.file(path, len(data), st.st_mtime_ns, hashlib.sha256(data).hexdigest()))
        return data

    def peek_dependency(self, path: str, size: int = HEAD_BYTES) -> bytes | None:
        """The first ``size`` bytes of another file in this file's tree (None when it does not exist),
        to tell whether this file's rows depend on it (a sibling of another kind: a batch's output
        beside its input). It is recorded by its size and mtime, so a change re-ingests this file; read
        the file with ``read_dependency`` once it is known to matter.

        Raises ReferenceRefused as ``read_dependency`` does (outside the tree, not a regular file, unreadable).
        """
        path = self.reference(path)
        try:
            f, total, mtime_ns = self.filesystems.open(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            self.dependencies.append(Dependency.file(path))  # absent: read when it appears
            return None
        except OSError as e:
            self.dependencies.append(Dependency.file(path))
            raise ReferenceRefused(f"cannot read {path}: {e.strerror or e}") from None
        with f:
            try:
                head = f.read(size)
            except OSError as e:
                self.dependencies.append(Dependency.file(path))
                raise ReferenceRefused(f"cannot read {path}: {e.strerror or e}") from None
        self.dependencies.append(Dependency.file(path, total, mtime_ns))  # no digest: only its start was read
        return head

    def _read_object(self, url: str) -> bytes | None:
        """``read_dependency`` of an object: the same rules, through its listing entry or a HEAD."""
        try:
            found = self.filesystems.stat(url)
            if found is None or found[0] != "file":
                self.dependencies.append(Dependency.file(url))
                return None
            _, size, mtime_ns = found
            if (size or 0) > self.max_record_bytes:
                self.dependencies.append(Dependency.file(url, mtime_ns=mtime_ns))
                raise ReferenceRefused(
                    f"{url}: {size} bytes, over the {self.max_record_bytes}-byte record limit; "
                    "raise --max-record-mb to read it"
                )
            f, _size, _mtime = self.filesystems.open_object(url)
            with f:
                data = f.read(self.max_record_bytes + 1)[: self.max_record_bytes]
        except OSError as e:
            self.dependencies.append(Dependency.file(url))
            raise ReferenceRefused(f"cannot read {url}: {e.strerror or e}") from None
        self._read_whole(Dependency.file(url, len(data), mtime_ns, hashlib.sha256(data).hexdigest()))
        return data

    def _read_whole(self, read: Dependency) -> None:
        """Record a file read whole; its first bytes read before (``peek_dependency``) say nothing more."""
        self.dependencies[:] = [d for d in self.dependencies
                                if not (d.kind == "file" and d.path == read.path and d.sha256 is None and d.size is not None)]
        self.dependencies.append(read)

    def option(self, name: str):
        """A run option (e.g. ``tokenizer``). Asking for it makes it a dependency:
        when a later run has another value, this file is ingested again."""
        value = self.options.get(name)
        self.dependencies.append(Dependency.option(name, value))
        return value

    def list_dependency_dir(self, path: str) -> list[str]:
        """Names in a directory this file's rows depend on; a change of the listing re-ingests this file.

        Like ``read_dependency``: inside the tree only, and bounded (names beyond the
        record limit, in bytes, are refused rather than listed).
        """
        path = self.reference(path)
        if urlpaths.is_url(path):
            try:
                names = self.filesystems.list_dir(path)
            except OSError as e:
                raise ReferenceRefused(f"cannot list {path}: {e.strerror or e}") from None
            if sum(len(n) + 1 for n in names) > self.max_record_bytes:
                raise ReferenceRefused(f"{path}: listing over the {self.max_record_bytes}-byte record limit")
            self.dependencies.append(Dependency.directory(path, remote.names_digest(names) if names else None))
            return names
        names: list[str] = []
        try:
            mtime = os.stat(path).st_mtime_ns
            total = 0
            with os.scandir(path) as it:
                for entry in it:
                    total += len(entry.name) + 1
                    if total > self.max_record_bytes:
                        raise ReferenceRefused(f"{path}: listing over the {self.max_record_bytes}-byte record limit")
                    names.append(entry.name)
        except (FileNotFoundError, NotADirectoryError):
            names, mtime = [], None
        except ReferenceRefused:
            raise
        except OSError as e:
            raise ReferenceRefused(f"cannot list {path}: {e.strerror or e}") from None
        self.dependencies.append(Dependency.directory(path, mtime))
        return sorted(names)
