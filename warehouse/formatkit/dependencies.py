"""What a source's rows were built from besides its own bytes: the catalog's ``depends_on``.

A format's reader records each dependency as it meets it (``SourceFile.read_dependency``,
``list_dependency_dir``, ``option``, a reference it refused); the worker stores them with the
file's catalog row as JSON (``sources.depends_on``), and a later run reads the source again
when one is not as recorded (``Dependency.changed``) or a file it read changed or went
(``DependsOn.names``). This module is the one place that JSON is written and read.

On disk (unchanged since the column exists, so existing warehouses stay readable) the
column is a JSON list with one object per dependency, in the order they were met:

* a file: ``{"path", "size", "mtime_ns", "sha256"}``; ``size`` is null when it was not there
  or not read (``mtime_ns`` then says whether something stood there); ``sha256`` is null when only
  its first bytes were read (``SourceFile.peek_dependency``);
* a directory listed: ``{"path", "size": null, "mtime_ns", "sha256": null, "dir": true}``; for a
  bucket prefix (which has no mtime), ``mtime_ns`` is a digest of the names under it (``remote.names_digest``);
* a run option asked for: ``{"option", "value"}``;
* a reference refused as outside the source's tree: ``{"path", "refused": tree}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from warehouse import urlpaths
from warehouse.filesystems import FileSystems

Kind = Literal["file", "dir", "option", "refused"]


@dataclass(frozen=True, slots=True)
class Dependency:
    """One thing a source's rows were built from. Make one with ``file``, ``directory``,
    ``option`` or ``refused``; which fields mean something depends on ``kind``."""

    kind: Kind
    path: str | None = None  # file, dir, refused: absolute, by name
    size: int | None = None  # file: its size when read; None when absent, unreadable or refused for its size
    mtime_ns: int | None = None  # file, dir: None when nothing stood there
    sha256: str | None = None  # file: digest of the bytes read
    name: str | None = None  # option: its name
    value: Any = None  # option: the value it had
    tree: str | None = None  # refused: the tree the path was outside of

    @classmethod
    def file(cls, path: str, size: int | None = None, mtime_ns: int | None = None,
             sha256: str | None = None) -> "Dependency":
        return cls("file", path=path, size=size, mtime_ns=mtime_ns, sha256=sha256)

    @classmethod
    def directory(cls, path: str, mtime_ns: int | None) -> "Dependency":
        return cls("dir", path=path, mtime_ns=mtime_ns)

    @classmethod
    def option(cls, name: str, value: Any) -> "Dependency":
        return cls("option", name=name, value=value)

    @classmethod
    def refused(cls, path: str, tree: str) -> "Dependency":
        return cls("refused", path=path, tree=tree)

    def to_json(self) -> dict:
        """The object stored for it in ``sources.depends_on`` (keys in the stored order)."""
        if self.kind == "option":
            return {"option": self.name, "value": self.value}
        if self.kind == "refused":
            return {"path": self.path, "refused": self.tree}
        out = {"path": self.path, "size": self.size, "mtime_ns": self.mtime_ns, "sha256": self.sha256}
        if self.kind == "dir":
            out["dir"] = True
        return out

    @classmethod
    def from_json(cls, d: dict) -> "Dependency":
        if "refused" in d:
            return cls.refused(d["path"], d["refused"])
        if "option" in d:
            return cls.option(d["option"], d["value"])
        if d.get("dir"):
            return cls.directory(d["path"], d["mtime_ns"])
        return cls.file(d["path"], d["size"], d["mtime_ns"], d["sha256"])

    def changed(self, settings: dict, tree: str | None, filesystems: FileSystems) -> bool:
        """True when it is not as recorded: the option has another value in ``settings``, the file or
        directory changed, appeared or went; or, refused, it lies inside ``tree`` (the source's tree now).
        An object is looked at through the run's ``filesystems`` (from its listing, when that covers it)."""
        if self.kind == "refused":
            return bool(tree) and urlpaths.inside(self.path, urlpaths.normpath(tree))
        if self.kind == "option":
            return settings.get(self.name) != self.value
        found = filesystems.stat(self.path)  # an object or a prefix: from the run's listing when it covers it
        if found is None:
            return self.mtime_ns is not None  # it was there and is gone
        kind, size, mtime_ns = found
        if self.kind == "dir":
            return kind != "dir" or mtime_ns != self.mtime_ns  # entries were added or removed
        return kind != "file" or self.size is None or size != self.size or mtime_ns != self.mtime_ns  # it appeared, or changed


@dataclass(frozen=True, slots=True)
class DependsOn:
    """A source's dependencies, in the order they were met: the value of ``sources.depends_on``."""

    items: tuple[Dependency, ...] = ()

    def __iter__(self) -> Iterator[Dependency]:
        return iter(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    @classmethod
    def of(cls, items: Iterable[Dependency]) -> "DependsOn":
        return cls(tuple(items))

    def to_json(self) -> str | None:
        """The column's text; None (SQL NULL) when the rows were built from the file alone."""
        return orjson.dumps([d.to_json() for d in self.items]).decode() if self.items else None

    @classmethod
    def from_json(cls, text: str | None) -> "DependsOn":
        return cls(tuple(Dependency.from_json(d) for d in orjson.loads(text))) if text else cls()

    def merged(self, other: Iterable[Dependency]) -> "DependsOn":
        """These and those of ``other`` not among them (the pieces of one large file)."""
        out = list(self.items)
        for d in other:
            if d not in out:
                out.append(d)
        return DependsOn(tuple(out))

    def changed(self, settings: dict, tree: str | None, filesystems: FileSystems) -> bool:
        """True when any dependency is not as recorded (see ``Dependency.changed``)."""
        return any(d.changed(settings, tree, filesystems) for d in self.items)

    def names(self, paths: set[str], dirs: set[str]) -> bool:
        """True when one of ``paths`` is a path these name (a file read or refused, a directory
        listed), or lies in a directory they listed (``dirs``: the directories of ``paths``)."""
        return any(
            d.path is not None and (d.path in paths or (d.kind == "dir" and d.path in dirs))
            for d in self.items
        )

    def asks_for(self, option: str) -> bool:
        """True when the rows were built with the run option ``option`` (whatever its value)."""
        return any(d.kind == "option" and d.name == option for d in self.items)
