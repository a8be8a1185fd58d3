"""What a run reads: the files the walk finds, less the ones the catalog says are unchanged, plus the ones
built from a file that changed or went, and the ones a damaged table lost the rows of.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from warehouse import urlpaths
from warehouse.run.batches import pooled
from warehouse.run.catalog import Catalog
from warehouse.run.discover import Compressed, LoopSkipped, Unreachable, walk
from warehouse.run.encodings import skipped_note
from warehouse.run.summary import IngestSummary
from warehouse.run.worker import WorkItem
from warehouse.store.storage import Store
from warehouse.urlpaths import inside


@dataclass
class Work:
    """What the walk and the catalog leave to read."""

    items: list[WorkItem] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    unreachable: list[Unreachable] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)  # catalogued under the paths, no longer on disk


class Walk:
    """What to read, in two steps, so a run's batches may start while it walks: ``found()`` yields each
    file to read (with its size) as the walk finds it, and ``finish()``, once it is over, adds the files
    built from one that changed or went and the ones to read again (``reread``: ``damage.plan``), and
    says what went. ``work`` holds everything found so far. ``warm`` is called once, as soon as what is
    to be read would run on a pool (``pooled``); ``pooled`` says whether it was."""

    def __init__(self, paths: Sequence[str], existing: list[str], store: Store, catalog: Catalog,
                 summary: IngestSummary, suffixes: tuple[str, ...], source_format: str | None, settings: dict,
                 trees: dict[str, str], warm: Callable[[], None] | None = None, reread: set[str] = frozenset()):
        self.paths, self.existing, self.store, self.catalog, self.summary = paths, existing, store, catalog, summary
        self.suffixes, self.source_format, self.settings, self.trees = suffixes, source_format, settings, trees
        self.warm, self.reread = warm, reread
        self.work = Work()
        self.nbytes = 0  # of the files to read found so far
        self.pooled = False
        self._seen: set[str] = set()
        self._unchanged: set[str] = set()

    def found(self) -> Iterator[tuple[WorkItem, int]]:
        work, summary, catalog, filesystems = self.work, self.summary, self.catalog, self.store.filesystems
        # the root is never walked as a source, however it is reached: a local one by its inode, a remote one by its prefix
        if self.store.remote:
            exclude: tuple[int, int] | str = str(self.store.root)
        else:
            root_dir = os.stat(self.store.root)
            exclude = (root_dir.st_dev, root_dir.st_ino)
        compressed: list[str] = []
        for found in walk(self.existing, filesystems, suffixes=self.suffixes, exclude=exclude):
            if isinstance(found, LoopSkipped):
                summary.notes.append(f"skipped {found.path}: directory already walked (symlink loop or alias of {found.target})")
                continue
            if isinstance(found, Compressed):
                compressed.append(found.path)
                continue
            summary.files_seen += 1
            if isinstance(found, Unreachable):
                self._seen.add(found.path)
                work.unreachable.append(found)
                continue
            path, entry = catalog.find(found.path, found.identity)
            tree = self.trees.get(found.path, found.tree)
            if path != found.path:  # the catalogued source, met through another path: its tree is the catalogued one
                tree = entry.get("source_tree") or os.path.dirname(path)
            self._seen.add(path)
            unchanged_now, previous = catalog.compare(entry, found.size, found.mtime_ns, self.source_format,
                                                      self.settings, tree, filesystems)
            if path in self.reread:  # its rows are lost in a damaged table: read, even if its bytes are the same
                unchanged_now, previous = False, None
            if unchanged_now:
                summary.files_unchanged += 1
                self._unchanged.add(path)
                continue
            item = WorkItem(path, previous, explicit=found.explicit, tree=tree)
            work.items.append(item)
            work.sizes.append(found.size)
            self.nbytes += found.size
            if not self.pooled and pooled(len(work.items), self.nbytes):
                self.pooled = True
                if self.warm is not None:
                    self.warm()
            yield item, found.size
        if compressed:
            summary.notes.append(skipped_note(compressed))

    def finish(self) -> list[tuple[WorkItem, int]]:
        """After ``found()``: what went, and the files to read that the walk did not find to be changed."""
        work, catalog, filesystems = self.work, self.catalog, self.store.filesystems
        work.gone = catalog.gone(self.paths, self._seen, filesystems)
        # Files built from a file that changed (or went) are ingested again too, walked or not.
        scheduled = {i.path for i in work.items}
        walked_dirs = [urlpaths.normpath(p) for p in self.existing if filesystems.isdir(p)]
        added = []
        for path in sorted((catalog.dependents(scheduled | work.gone) | self.reread) - scheduled - work.gone):
            if filesystems.isfile(path):
                if path in self._unchanged:  # counted once: as ingested again, not as unchanged too
                    self.summary.files_unchanged -= 1
                tree = (next((d for d in walked_dirs if inside(path, d)), None)
                        or (catalog.get(path) or {}).get("source_tree"))
                item, size = WorkItem(path, None, tree=tree), filesystems.size_and_mtime(path)[0]
                work.items.append(item)
                work.sizes.append(size)
                self.nbytes += size
                added.append((item, size))
        return added

