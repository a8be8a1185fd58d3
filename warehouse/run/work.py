"""What a run reads: the files the walk finds, less the ones the catalog says are unchanged, plus the ones
built from a file that changed or went, and the ones a damaged table lost the rows of.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
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


def what_to_read(paths: Sequence[str], existing: list[str], store: Store, catalog: Catalog, summary: IngestSummary,
                  suffixes: tuple[str, ...], source_format: str | None, settings: dict, trees: dict[str, str],
                  warm: Callable[[], None] | None = None, reread: set[str] = frozenset()) -> Work:
    """Walk ``existing``, skip what the catalog says is unchanged, and add what depends on a change and
    ``reread`` (sources read again whatever the catalog says: ``damage.plan``). ``warm`` is called once,
    as soon as what is to be read would run on a pool (``pooled``)."""
    work = Work()
    filesystems = store.filesystems  # the run's: its storage options, and what its walk listed
    nbytes = 0
    seen: set[str] = set()
    unchanged: set[str] = set()
    # the root is never walked as a source, however it is reached: a local one by its inode, a remote one by its prefix
    if store.remote:
        exclude: tuple[int, int] | str = str(store.root)
    else:
        root_dir = os.stat(store.root)
        exclude = (root_dir.st_dev, root_dir.st_ino)
    compressed: list[str] = []
    for found in walk(existing, filesystems, suffixes=suffixes, exclude=exclude):
        if isinstance(found, LoopSkipped):
            summary.notes.append(f"skipped {found.path}: directory already walked (symlink loop or alias of {found.target})")
            continue
        if isinstance(found, Compressed):
            compressed.append(found.path)
            continue
        summary.files_seen += 1
        if isinstance(found, Unreachable):
            seen.add(found.path)
            work.unreachable.append(found)
            continue
        path, entry = catalog.find(found.path, found.identity)
        tree = trees.get(found.path, found.tree)
        if path != found.path:  # the catalogued source, met through another path: its tree is the catalogued one
            tree = entry.get("source_tree") or os.path.dirname(path)
        seen.add(path)
        unchanged_now, previous = catalog.compare(entry, found.size, found.mtime_ns, source_format, settings, tree,
                                                      filesystems)
        if path in reread:  # its rows are lost in a damaged table: read, even if its bytes are the same
            unchanged_now, previous = False, None
        if unchanged_now:
            summary.files_unchanged += 1
            unchanged.add(path)
            continue
        work.items.append(WorkItem(path, previous, explicit=found.explicit, tree=tree))
        work.sizes.append(found.size)
        nbytes += found.size
        if warm is not None and pooled(len(work.items), nbytes):
            warm()
            warm = None
    if compressed:
        summary.notes.append(skipped_note(compressed))
    work.gone = catalog.gone(paths, seen, filesystems)
    # Files built from a file that changed (or went) are ingested again too, walked or not.
    scheduled = {i.path for i in work.items}
    walked_dirs = [urlpaths.normpath(p) for p in existing if filesystems.isdir(p)]
    for path in sorted((catalog.dependents(scheduled | work.gone) | reread) - scheduled - work.gone):
        if filesystems.isfile(path):
            if path in unchanged:  # counted once: as ingested again, not as unchanged too
                summary.files_unchanged -= 1
            tree = (next((d for d in walked_dirs if inside(path, d)), None)
                    or (catalog.get(path) or {}).get("source_tree"))
            work.items.append(WorkItem(path, None, tree=tree))
            work.sizes.append(filesystems.size_and_mtime(path)[0])
    return work
