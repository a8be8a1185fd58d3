"""One ingest run: walk, plan, run the batches, commit atomically.

The run holds the warehouse lock from start to end, so two ingests into one
root never interleave. Files whose size and mtime match the catalog are not
opened; files whose bytes match it are not parsed. Everything a run writes
becomes visible in one step (``commit``); a strict-mode stop, an exception or a
kill before that leaves the warehouse as it was.

This module is the order of things; each job has its own module:

* ``opening``: the root opened for writing, with the lock held: converted, set aside, repaired;
* ``catalog``: the catalog read once: what is unchanged, what depends on what, what is gone;
* ``work``: what the run reads: the walk, less what is unchanged, plus what depends on a change;
* ``walk_ahead``: the rest of the walk, on a thread beside the first batches of a run for a pool;
* ``pieces``: large JSONL files cut at line ends while hashed, and their catalog rows merged;
* ``batches``: the batches planned and run on an engine (``pool``; ``worker``: one batch; ``sink``: its records);
* ``path_fields``: path_fields evaluated while the batches run;
* ``commit``: the run's files and catalog made live at once;
* ``failure``: a run that fails: one line, nothing kept;
* ``summary`` and ``progress.IngestProgress``: what the user reads.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack

from warehouse import urlpaths
from warehouse.checks import option
from warehouse.errors import StrictModeError, UsageError
from warehouse.filesystems import FileSystems
from warehouse.formatkit.ingestor import JSON_SUFFIXES
from warehouse.formatkit.registry import Registry
from warehouse.progress import IngestProgress
from warehouse.run import damage
from warehouse.run.batches import job_count, run_batches
from warehouse.run.catalog import Catalog
from warehouse.run.commit import Changes, CommitAhead, commit
from warehouse.run.failure import first_missing, nothing_kept_unless_committed, said_in_one_line
from warehouse.run.opening import open_for_writing
from warehouse.run.path_fields import PathFieldsAhead
from warehouse.run.pieces import FileScan, merge_pieces, split_large_files
from warehouse.run.pool import start_forkserver
from warehouse.run.summary import IngestSummary
from warehouse.run.walk_ahead import WalkAhead
from warehouse.run.work import Walk, Work
from warehouse.run.worker import BatchIngest, BatchResult, BatchSpec, WorkItem
from warehouse.store.readable import read_existing_snapshot
from warehouse.store.snapshots import new_run_id
from warehouse.store.storage import Store


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ingest(
    paths: Sequence[str],
    root: str,
    *,
    registry: Registry | None = None,
    source_format: str | None = None,
    strict: bool = False,
    jobs: int | None = None,
    prune: bool = False,
    wait: bool = True,
    max_record_bytes: int = 64 * 1024 * 1024,
    progress: bool = True,
    options: dict | None = None,
    fast_paths: bool = True,
    trees: dict[str, str] | None = None,
    engine: str = "local",
    spark_master: str | None = None,
    storage_options: dict | None = None,
) -> IngestSummary:
    """Ingest files and directories into the warehouse at ``root``. See ``warehouse ingest --help``.

    A run that does not commit (an error, ``--strict`` meeting a bad record, Ctrl-C)
    leaves no file of its own behind, and in a root that held no warehouse, nothing
    at all. ``trees`` (for ``tokenize``): the tree of each file named in ``paths``,
    instead of its directory. ``registry``: the formats (default: the installed ones).
    ``engine``: ``local`` (this process or a process pool) or ``spark`` (Spark tasks, on
    ``spark_master`` or the session this process has: ``warehouse.spark.engine``).
    ``storage_options``: how to reach sources given as URLs and a remote root (``FileSystems``; never stored).
    """
    t0 = time.monotonic()
    registry = registry or Registry.installed()
    if source_format is not None:
        registry.load(source_format)  # an unknown name is answered with the installed ones
    ingestors = registry.ingestors()
    if not paths:
        raise UsageError("no paths to ingest")
    filesystems = FileSystems(storage_options)  # the run's: checked now, before anything is read
    existing = [p for p in paths if filesystems.exists(p)]  # once: on object storage each is a request
    for p in paths:
        if p not in existing and not prune:
            what = "no object at or under it" if urlpaths.is_url(p) else "no such file or directory"
            raise UsageError(f"{filesystems.redact(p)}: {what} (if it was ingested and is gone, --prune removes its rows)")
    store = Store(root, filesystems)
    if "%" in str(store.root):
        raise UsageError(f"--root {root}: a path with '%' in it, which deltalake reads as an escape; choose another --root")
    run_id = new_run_id()
    summary = IngestSummary(run_id, root=root)
    if store.root.exists() and not store.root.is_dir():
        raise UsageError(f"--root {root}: exists and is not a directory")
    created = None if store.remote else first_missing(store.root)
    trees = trees or {}
    with said_in_one_line(store, run_id), store.lock(wait=wait, announce=say), \
            nothing_kept_unless_committed(store, run_id, created), ExitStack() as run_scoped:
        record, damaged = open_for_writing(store, say)
        catalog = Catalog() if "sources" in damaged else Catalog.load(store, record)
        settings = _settings(record.settings, options or {}, ingestors)
        mending = damage.plan(store, record, damaged, catalog.rows, prune=prune) if damaged else damage.Mending()
        for line in mending.said():
            say(f"repairing: {line}")
        # Every JSON-looking file is looked at, claimed or not, so none is passed over silently.
        suffixes = tuple(sorted(set(JSON_SUFFIXES) | {s for i in ingestors for s in i.suffixes}))
        if source_format is not None:
            suffixes = next(i for i in ingestors if i.name == source_format).suffixes
        for p in paths:
            if p not in existing and not catalog.covers(p):
                raise UsageError(f"{p}: no such file or directory, and no catalogued file was under it")
        # Once the walk has found work enough for a pool, its forkserver starts importing alongside.
        pool_run = engine == "local" and job_count(jobs) > 1
        warm = (lambda: start_forkserver(registry)) if pool_run else None
        walk = Walk(paths, existing, store, catalog, summary, suffixes, source_format, settings, trees, warm,
                    mending.reread)
        found = walk.found()
        # A run for a pool starts its batches as soon as the walk has found enough for one, and the rest of
        # the walk goes on beside them (``WalkAhead``). Any other walks to its end first: its engine and its
        # batches are chosen from the totals. (Sources on object storage too: their listing is the run's.)
        streams = pool_run and not any(map(urlpaths.is_url, paths))
        for _ in found:
            if streams and walk.pooled:
                break
        else:
            walk.finish()
            found = None
        work = walk.work
        head_items, head_sizes = list(work.items), list(work.sizes)  # (a walk going on adds to work.items)

        spec_args = dict(
            run_id=run_id,
            root=str(store.root),
            registry=registry,
            forced_format=source_format,
            strict=strict,
            max_record_bytes=max_record_bytes,
            options=settings,
            fast_paths=fast_paths,
            # resolved here: a worker process may not have this process's environment (a forkserver started earlier)
            storage_options=filesystems.options if store.remote or any(map(urlpaths.is_url, paths)) else {},
        )
        results: list[BatchResult] = []
        # path_fields of every path the commit may catalogue, evaluated while the batches run (on a walk still
        # going on, from its end: its connection made here all the same, on this thread)
        if found is None:
            results += _unreachable(work, spec_args)
            known = _paths_ahead(store, catalog, work)
            ahead = PathFieldsAhead(known) if known is not None else None
        else:
            ahead = PathFieldsAhead() if not store.remote else None
        if ahead is not None:
            run_scoped.callback(ahead.close)  # however the run ends: --strict, Ctrl-C, an error, its commit
        items, sizes, scans = split_large_files(head_items, head_sizes, ingestors, filesystems)
        bar = IngestProgress(len(items) + len(scans), sum(sizes) + sum(s.item_size for s in scans), enabled=progress)
        walking = None
        if found is not None:
            walking = WalkAhead(walk, found, lambda item, size: _scan_of(item, size, ingestors, filesystems), bar,
                                at_end=lambda done: _start_ahead(ahead, store, catalog, done))
            run_scoped.callback(walking.stop)  # (before ahead.close: the walk's end starts it)
        commit_ahead = CommitAhead(store)  # the batches' files fsynced as they come, not all at the commit
        run_scoped.callback(commit_ahead.close)  # however the run ends, as path_fields ahead
        try:
            if not any(r.strict_failure for r in results):
                results += run_batches(items, sizes, spec_args, jobs, bar, scans, engine, spark_master, commit_ahead.add,
                                       filesystems, walking)
                if walking is not None and not any(r.strict_failure for r in results):
                    results += _unreachable(work, spec_args)  # found while the batches ran
                    scans = scans + walking.scans
                if scans and not any(r.strict_failure for r in results):
                    results.append(merge_pieces(results, scans, store))
        finally:
            bar.done()
        gone = work.gone
        if prune:
            gone |= mending.dropped
            summary.files_removed = len(gone)
        else:
            summary.files_gone = len(gone)
            gone = set()
        failure = next((r.strict_failure for r in results if r.strict_failure), None)
        if failure is not None:
            raise StrictModeError(failure.path, failure.locator, failure.stage, failure.message)

        for r in results:
            summary.add(r)
        changes = Changes.of(run_id, results, gone, settings)
        changes.path_fields, changes.ahead, changes.mending = ahead, commit_ahead, mending
        summary.committed = commit(store, record, catalog, changes)
    if not (summary.files_seen or summary.files_removed or summary.files_gone):
        summary.notes.append(_nothing_found(paths, suffixes, root, made=not record.number))
    summary.seconds = time.monotonic() - t0
    return summary


def _nothing_found(paths: Sequence[str], suffixes: Sequence[str], root: str, made: bool) -> str:
    """What a run that found no file to look at did: a wrong PATH (or files of another kind) is seen at once.
    The warehouse is made all the same: only ingest makes one, and a later run may fill it."""
    kinds = " or ".join(", ".join(suffixes).rsplit(", ", 1))
    found = f"no {kinds} file under {', '.join(paths)}"
    if made:
        return f"{found}: the warehouse at {root} was made, and is empty"
    return f"{found}: nothing to add; the warehouse at {root} is unchanged"


def _paths_ahead(store: Store, catalog: Catalog, work: Work) -> set[str] | None:
    """The paths to evaluate path_fields of ahead: the catalogued and walked ones, when the run brings a
    new path (else None: the commit keeps the path_fields it has); local roots (a remote one copies it)."""
    walked = {i.path for i in work.items} | {u.path for u in work.unreachable}
    if store.remote or all(p in catalog for p in walked):
        return None
    return set(catalog.rows) | walked


def _start_ahead(ahead: PathFieldsAhead | None, store: Store, catalog: Catalog, work: Work) -> None:
    """At the end of a walk that went on beside the batches: path_fields ahead started, when it is wanted."""
    known = _paths_ahead(store, catalog, work)
    if ahead is not None and known is not None:
        ahead.start(known)


def _unreachable(work: Work, spec_args: dict) -> list[BatchResult]:
    """The files the walk could not reach, as quarantine rows of a batch of this process's own."""
    if not work.unreachable:
        return []
    parent = BatchIngest(BatchSpec(batch_no=0, items=[], **spec_args))
    try:
        for u in work.unreachable:
            parent.unreachable(u.path, u.message)
    finally:
        result = parent.run()  # (its writers closed, whatever happened)
    return [result]


def _scan_of(item: WorkItem, size: int, ingestors: Sequence, filesystems: FileSystems) -> FileScan | None:
    """``item`` as a scan in pieces when it is a large JSONL file of a line-based format (``split_large_files``)."""
    scans = split_large_files([item], [size], ingestors, filesystems)[2]
    return scans[0] if scans else None


def _settings(remembered: dict, given: dict, ingestors: Sequence) -> dict:
    """The run's options: the ones given now override the ones remembered from earlier runs, and
    one given as False is forgotten. Each is one every format can use (``Ingestor.option_problem``):
    a tool that cannot load is a usage error now, before anything is read or changed, never a
    quarantined record; a remembered one says how to change or forget it."""
    given = {k: v for k, v in given.items() if v is not None}
    settings = {k: v for k, v in {**remembered, **given}.items() if v is not False}
    for name, value in settings.items():
        for ingestor in ingestors:
            problem = ingestor.option_problem(name, value)
            if problem is None:
                continue
            flag = option(name)
            if name in given:
                raise UsageError(f"{flag} {value}: {problem}")
            raise UsageError(f"{flag} {value}, remembered from an earlier run: {problem}; give {flag} again with "
                             f"another, or --no-{flag[2:]} to forget it")
    return settings


def tokenize(root: str, tokenizer: str, **options) -> IngestSummary:
    """Add token ranges to an existing warehouse: re-ingest the sources built without this tokenizer.

    Only sources that asked for the ``tokenizer`` option (annotation files) are read
    again; the tokenizer is remembered for later runs.
    """
    filesystems = FileSystems(options.get("storage_options"))  # before the root is read: it may be a URL
    store = Store(root, filesystems)
    if not store.legacy():  # none there: the StorageError every reading command gives (exit 1)
        read_existing_snapshot(store, root)
    if store.legacy():  # the catalog is read before the ingest that would convert the root
        with store.lock(wait=options.get("wait", True), announce=say):
            open_for_writing(store, say)
    catalog = damage.load_catalog(store, store.read_snapshot())
    paths = [p for p in catalog.asking_for("tokenizer") if filesystems.isfile(p)]
    opts = dict(options.pop("options", None) or {}, tokenizer=tokenizer)  # a folder made absolute by the API
    if not paths:
        summary = IngestSummary(run_id="")
        summary.notes.append("no catalogued source uses a tokenizer (no annotation files): nothing to do")
        return summary
    # Each file is read again within the tree it was ingested from, not just its folder.
    trees = {p: catalog[p]["source_tree"] for p in paths if catalog[p].get("source_tree")}
    return ingest(paths, root, options=opts, trees=trees, **options)
