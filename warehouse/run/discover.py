"""Walking the paths given to ``ingest``: which files to look at, and what could not be looked at.

Directories are walked recursively in name order (so runs are reproducible),
following symlinks, with each real directory visited once (symlink loops end
there) and each file yielded once, however many paths lead to it (``ingest F F``,
``ingest dir dir/f.json``, a symlink to a file of the tree, a hard link): a source
is a file, ingested once per run under the first path met. Hidden entries
(``.git``, ``.cache``) and the warehouse root itself (however it is reached; on
object storage, a root under a prefix given) are skipped. A directory or file that
cannot be listed or stat'ed, or whose name is not valid UTF-8, is reported, not
silently passed over.

A URL (``s3://bucket/prefix``) is walked the same way through its listing
(``FileSystems.walk_objects``): objects in key order, hidden names below the prefix
skipped, the same suffixes; an object's identity is its URL.

Compressed files of those suffixes (``x.jsonl.gz``) are not read, but reported
(``Compressed``): the run says how many it skipped, and what to do
(``encodings.py``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from warehouse import urlpaths
from warehouse.filesystems import FileSystems
from warehouse.run.encodings import compressed_suffixes


@dataclass(slots=True, frozen=True)
class Found:
    path: str  # absolute, not symlink-resolved: the path carries meaning (prompt sets)
    size: int
    mtime_ns: int
    explicit: bool = False  # named on the command line, not found by walking a directory
    #: the PATH it was found under (a directory given, or the directory of a file given):
    #: paths taken from the file's data must lie inside it
    tree: str = ""
    identity: tuple[int, int] = (0, 0)  # (st_dev, st_ino): the file itself, whatever path leads to it


@dataclass(slots=True, frozen=True)
class Unreachable:
    path: str  # with a name that is not valid UTF-8, its bytes shown as \xNN escapes
    message: str


@dataclass(slots=True, frozen=True)
class LoopSkipped:
    path: str
    target: str


@dataclass(slots=True, frozen=True)
class Compressed:
    """A compressed file of a kind the walk looks for (``x.jsonl.gz``): not read, but counted and said."""

    path: str


def walk(
    paths: Iterable[str],
    filesystems: FileSystems,
    *,
    suffixes: tuple[str, ...],
    exclude: tuple[int, int] | str | None = None,
) -> Iterator[Found | Unreachable | LoopSkipped | Compressed]:
    """Files under ``paths`` whose lower-case name ends with one of ``suffixes``.

    A path given explicitly is always yielded (whatever its suffix), so
    ``ingest notes.txt --format NAME`` reaches the ingestor. ``exclude`` is
    the warehouse root, never entered: a local directory's (st_dev, st_ino), or
    a URL (nothing under that prefix is listed as a source). Objects are listed through the run's
    ``filesystems``, which remembers what it listed.
    """
    seen_dirs: set[tuple[int, int]] = set()
    seen_files: set[tuple[int, int]] = set()
    seen_urls: set[str] = set()
    for given in paths:
        if urlpaths.is_url(given):
            yield from _walk_url(filesystems, urlpaths.normpath(given), suffixes, seen_urls, exclude if isinstance(exclude, str) else None)
            continue
        path = os.path.abspath(given)
        if not _utf8(path):
            yield Unreachable(readable(path), _NOT_UTF8)
            continue
        try:
            st = os.stat(path)
        except FileNotFoundError:
            yield Unreachable(path, "no such file or directory")
            continue
        except OSError as e:
            yield Unreachable(path, _os_message(e))
            continue
        if stat.S_ISDIR(st.st_mode):
            yield from _walk_dir(path, st, suffixes, exclude, seen_dirs, seen_files, path)
        elif _first(st, seen_files):
            yield Found(path, st.st_size, st.st_mtime_ns, explicit=True, tree=os.path.dirname(path),
                        identity=(st.st_dev, st.st_ino))


def _walk_url(filesystems: FileSystems, url: str, suffixes: tuple[str, ...], seen: set[str],
              exclude: str | None) -> Iterator[Found | Compressed]:
    """The objects under a prefix (or the one object ``url`` names), as the local walk finds files;
    none under ``exclude`` (a root inside the prefix: its Delta logs, lease and snapshots are no sources)."""
    below_root = exclude + "/" if exclude else None
    compressed = compressed_suffixes(suffixes)
    for entry in filesystems.walk_objects(url):
        if entry.url in seen or (below_root and entry.url.startswith(below_root)):
            continue
        if entry.url == url:  # named on its own: always looked at
            seen.add(entry.url)
            yield Found(entry.url, entry.size, entry.mtime_ns, explicit=True, tree=urlpaths.normpath(url.rsplit("/", 1)[0]))
            continue
        below = entry.url[len(url) + 1:].split("/")
        if any(part.startswith(".") for part in below):
            continue
        if not below[-1].lower().endswith(suffixes):
            if below[-1].lower().endswith(compressed):
                yield Compressed(entry.url)
            continue
        seen.add(entry.url)
        yield Found(entry.url, entry.size, entry.mtime_ns, tree=url)


NOT_REGULAR = "not a regular file (a FIFO, device or socket); only regular files are read"

_NOT_UTF8 = (
    "its name is not valid UTF-8 (the bytes are shown as \\xNN): rename it to ingest it "
    "(e.g. convmv -f latin1 -t utf-8 --notest)"
)


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
        return True
    except UnicodeEncodeError:  # undecodable bytes of the name, kept by Python as lone surrogates
        return False


def readable(path: str) -> str:
    """A path whose name is not valid UTF-8, with the bad bytes as \\xNN: storable and printable."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _first(st: os.stat_result, seen_files: set[tuple[int, int]]) -> bool:
    key = (st.st_dev, st.st_ino)
    if not st.st_ino:  # a file system without inode numbers: paths are all there is
        return True
    if key in seen_files:
        return False
    seen_files.add(key)
    return True


def _walk_dir(path, st, suffixes, exclude, seen_dirs, seen_files, tree) -> Iterator[Found | Unreachable | LoopSkipped | Compressed]:
    """The tree under directory ``path``, depth first in name order, with a stack of listings
    rather than a generator per directory (each file passed up through one generator per level)."""
    compressed = compressed_suffixes(suffixes)
    top = _listing(path, st, exclude, seen_dirs)
    if not isinstance(top, list):
        yield top
        return
    stack = [iter(top)]
    while stack:
        for entry in stack[-1]:
            name = entry.name
            if name.startswith("."):
                continue
            full = entry.path
            if not name.isascii() and not _utf8(name):
                yield Unreachable(readable(full), _NOT_UTF8 + ("; nothing under it was read" if entry.is_dir() else ""))
                continue
            try:
                est = os.stat(full)  # follows symlinks
            except OSError as e:
                if entry.is_symlink():
                    yield Unreachable(full, f"broken symlink ({_os_message(e)})")
                else:
                    yield Unreachable(full, _os_message(e))
                continue
            if stat.S_ISDIR(est.st_mode):
                below = _listing(full, est, exclude, seen_dirs)
                if isinstance(below, list):
                    stack.append(iter(below))
                    break  # into it; this listing goes on where it was once that one is done
                yield below
            elif not name.lower().endswith(suffixes):
                if name.lower().endswith(compressed):
                    yield Compressed(full)
                continue
            elif not stat.S_ISREG(est.st_mode):  # a FIFO would block the run, a device never end
                yield Unreachable(full, NOT_REGULAR)
            elif _first(est, seen_files):
                yield Found(full, est.st_size, est.st_mtime_ns, tree=tree, identity=(est.st_dev, est.st_ino))
        else:
            stack.pop()


def _listing(path, st, exclude, seen_dirs) -> list[os.DirEntry] | Unreachable | LoopSkipped:
    """A directory's entries in name order; what stops it being walked; [] for the excluded one."""
    key = (st.st_dev, st.st_ino)
    if key in seen_dirs:
        return LoopSkipped(path, os.path.realpath(path))
    seen_dirs.add(key)
    if key == exclude:
        return []
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError as e:
        return Unreachable(path, _os_message(e))


def _os_message(e: OSError) -> str:
    if isinstance(e, PermissionError):
        return "permission denied (check the file's permissions)"
    return e.strerror or str(e)
