"""The Delta Lake tables under the root: one per declared table, written with ``deltalake`` (delta-rs).

The warehouse writes its Parquet files itself (workers, with ``warehouse.store.writer``) and
commits them here as Delta ``add`` actions with the statistics every Delta reader uses
to skip files (``file_stats``: rows, and min / max / null count of the columns where
they are exact and short). A table's removes and adds of one run are one Delta version
(``commit_table``). Everything here takes the table's location as a string, so that a
root may later be a URL (``storage_options`` go straight to deltalake).

Why the statistics are read here and not by deltalake: deltalake 1.6 computes them only for
the files its own writer writes (``write_deltalake``, and the rewrites of its ``delete``,
``merge`` and ``optimize``) and in ``convert_to_deltalake`` (a folder of Parquet files made
a new table). Its reader of a footer's statistics is not exposed to Python, and an
``AddAction`` takes them from the caller as JSON. Having its writer write the batches would
move every row through the committing process after the workers (which write their files
in parallel, and the commit only adds them); converting makes a new table, not an add.
"""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass

import orjson

from warehouse.filesystems import FileSystems, reach
from warehouse.store import remote_root

#: string min / max longer than this are left out of a file's statistics: they would bloat
#: the Delta log (response texts) and a reader gains nothing from them
STATS_STRING_MAX = 256
_INT_TYPES = ("INT32", "INT64")


@dataclass(frozen=True)
class Part:
    """A Parquet file a run wrote, as the commit needs it: its path relative to the root, and facts
    read from its footer (no reader opens it again). Carried by ``BatchResult`` from any engine."""

    path: str  # relative to the root: "<table>/<run id>-b00001.parquet"
    rows: int
    size: int
    mtime_ms: int
    stats: str  # Delta statistics JSON
    #: ``file_schema`` of its footer (None: not known)
    schema: str | None = None

    @classmethod
    def of(cls, root: str, abspath: str) -> "Part":
        import pyarrow.parquet as pq

        fs, path = reach(abspath).path(abspath)
        meta = pq.read_metadata(path, filesystem=fs)
        info = fs.get_file_info(path)
        return cls(os.path.relpath(abspath, root), meta.num_rows, info.size, int(info.mtime.timestamp() * 1000),
                   file_stats(meta), file_schema(meta))


def file_schema(meta) -> str:
    """A digest of what a reader binds a Parquet file's columns by (each leaf's path, types and levels), from
    its footer: files with the same digest can be read as one relation without matching their columns by
    name (``shared_schema``)."""
    import hashlib

    schema = meta.schema
    leaves = (schema.column(i) for i in range(len(schema)))
    text = "\n".join(f"{c.path}\t{c.physical_type}\t{c.logical_type}\t{c.max_definition_level}\t"
                     f"{c.max_repetition_level}" for c in leaves)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def shared_schema(kept: str | None, parts: list[Part]) -> str | None:
    """The ``file_schema`` every live file of a table version shares: ``kept`` is that of the files it keeps
    from the version before ("" for none, None when not known), ``parts`` the files it adds. "" for a table
    with no file; None when they differ or one is not known."""
    digests = {p.schema for p in parts}
    if kept is None or None in digests:
        return None
    if kept:
        digests.add(kept)
    return _one_of(digests)


def _one_of(digests: set[str]) -> str | None:
    """The digest files share: "" for no file, None when they differ."""
    return "" if not digests else digests.pop() if len(digests) == 1 else None


def file_stats(meta) -> str:
    """Delta statistics (``numRecords``, ``minValues``, ``maxValues``, ``nullCount``) from a Parquet footer.

    Only top-level integer and string columns get min / max, and only when every row group
    has them (Parquet leaves out a value too long rather than cut it): floats (NaN is outside
    Parquet's min / max but counts in Spark's comparisons), timestamps (Delta keeps milliseconds: a truncated max would skip a file
    that matches) and nested columns get none, which a reader treats as "may match".
    """
    schema = meta.schema
    mins: dict = {}
    maxs: dict = {}
    nulls: dict = {}
    top = {}
    for i in range(len(schema)):
        col = schema.column(i)
        if "." in col.path:  # a nested column's leaf
            continue
        top[i] = col
    # a timestamp or date is an INT32/INT64 too: only plain integers (no logical type, or INT) count
    usable = {i for i, c in top.items()
              if (c.physical_type in _INT_TYPES and c.logical_type.type in ("NONE", "INT"))
              or c.logical_type.type == "STRING"}
    for i, col in top.items():
        lo = hi = None
        exact = i in usable
        count = 0
        for g in range(meta.num_row_groups):
            s = meta.row_group(g).column(i).statistics
            if s is None:
                exact = False
                count = None
                break
            if count is not None and s.has_null_count:
                count += s.null_count
            elif not s.has_null_count:
                count = None
            if not exact:
                continue
            if not s.has_min_max:
                if s.null_count == meta.row_group(g).num_rows:
                    continue  # all null: no value to bound
                exact = False
                continue
            lo = s.min if lo is None else min(lo, s.min)
            hi = s.max if hi is None else max(hi, s.max)
        if count is not None:
            nulls[col.name] = count
        if exact and lo is not None:
            if isinstance(lo, str) and (len(lo) > STATS_STRING_MAX or len(hi) > STATS_STRING_MAX):
                continue
            mins[col.name], maxs[col.name] = lo, hi
    return orjson.dumps(
        {"numRecords": meta.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    ).decode()


def is_delta_error(e: BaseException) -> bool:
    """An error deltalake raised (its classes live in its Rust module, ``_internal``, not under ``deltalake``)."""
    from deltalake.exceptions import DeltaError

    return isinstance(e, DeltaError)


def is_table(uri: str) -> bool:
    from warehouse import urlpaths

    if urlpaths.is_url(uri):  # asked of the store, never of a run's listing of its sources
        return "_delta_log" in remote_root.list_folders(reach(uri), uri)
    return os.path.isdir(os.path.join(uri, "_delta_log"))


def open_table(uri: str, version: int | None = None):
    from deltalake import DeltaTable


    return DeltaTable(str(uri), version=version, storage_options=reach(uri).delta_options(str(uri)))


def properties(metadata: dict):
    from deltalake import CommitProperties

    return CommitProperties(custom_metadata={k: str(v) for k, v in metadata.items()})


def commit_table(uri: str, version: int | None, arrow_schema, adds: list[Part], removes: list[str],
                 metadata: dict) -> int:
    """One Delta version of the table at ``uri`` holding ``removes`` (paths relative to the table) and
    ``adds``; creates the table at version 0 when ``version`` is None. Returns the new version.

    ``version``: the version the run read (the snapshot's; None: no table yet). The table may be
    beyond it only by versions of the same content (``commit.repair``'s restores): the writer
    lock keeps other runs out, and the tables are written by the warehouse alone.
    """

    with reach(uri).writing_root(uri):  # a store's refusal as one line naming the object, not a Rust error chain
        return _commit_table(uri, version, arrow_schema, adds, removes, metadata)


def _commit_table(uri: str, version: int | None, arrow_schema, adds: list[Part], removes: list[str],
                  metadata: dict) -> int:
    from deltalake import Schema
    from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

    actions = [AddAction(_in_table(p.path), p.size, {}, p.mtime_ms, True, p.stats) for p in adds]
    props = properties(metadata)
    if version is None:

        create_table_with_add_actions(uri, Schema.from_arrow(arrow_schema), actions, mode="error",
                                      commit_properties=props, storage_options=reach(uri).delta_options(uri))
        return 0
    dt = open_table(uri)
    _add_new_columns(dt, arrow_schema, props)
    now = int(time.time() * 1000)
    removals = [RemoveAction(p, True, now) for p in removes]
    dt.create_write_transaction(removals + actions, mode="append", schema=dt.schema(), commit_properties=props)
    dt.update_incremental()  # the object does not follow its own commit
    return dt.version()


def _in_table(path: str) -> str:
    """A part's path relative to its table folder (the first segment of a root-relative path is the table)."""
    return path.split("/", 1)[1] if "/" in path else path


def _add_new_columns(dt, arrow_schema, props) -> None:
    """Columns a format declares since the table was created join the Delta schema (older files read them as null)."""
    from deltalake import Schema

    have = {f.name for f in dt.schema().fields}
    new = [f for f in Schema.from_arrow(arrow_schema).fields if f.name not in have]
    if new:
        dt.alter.add_columns(new, commit_properties=props)


def vacuum(table, uri: str, *, retention_hours: int, keep_version: int, commit_properties) -> tuple[list[str], set[str]]:
    """Delta ``vacuum`` (full: every file in the table's folder that no version kept references, replaced
    or written more than ``retention_hours`` ago) that deletes nothing outside the folder: (the files
    deleted, the symbolic links left alone, relative to the folder; "." for the folder itself).

    deltalake's own vacuum follows symbolic links: a link in a table folder to ``~/data`` would have it
    delete every old file there. Locally, deltalake only lists what it would delete, and each file is
    deleted here, opened folder by folder from the table's without following a link (``O_NOFOLLOW``):
    a link on the way, or at the file, is left alone and reported. A bucket has no links.
    """
    from warehouse import urlpaths

    options = dict(retention_hours=retention_hours, enforce_retention_duration=False, full=True,
                   keep_versions=[keep_version], commit_properties=commit_properties)
    # deltalake names a replaced file as long as the log remembers it, deleted or not: only the files
    # still there count (and on a bucket, a vacuum, a new Delta version, only when there is one)
    if urlpaths.is_url(uri):
        doomed = [rel for rel in table.vacuum(dry_run=True, **options) if reach(uri).exists(f"{uri}/{rel}")]
        if doomed:
            table.vacuum(dry_run=False, **options)
        return doomed, set()
    deleted, links = [], set()
    for rel in table.vacuum(dry_run=True, **options):
        link = _delete_inside(uri, rel)
        if link is None:
            deleted.append(rel)
        elif link and link is not _GONE:
            links.add(link)
    return deleted, links


_GONE = "(gone)"  # what _delete_inside says of a file deleted before


def leaves_table(rel: str) -> bool:
    """Whether a data file's path as a table's log gives it (relative to the table's folder, decoded) leads
    out of that folder: a log written by hand or by something hostile. Readers and writers never follow it."""
    return rel.startswith("/") or ":" in rel or ".." in rel.split("/")


def _delete_inside(folder: str, rel: str) -> str | None:
    """Delete the regular file ``folder/rel`` without following a link: None when deleted, ``_GONE`` when
    it was already gone; else the link met on the way (relative to ``folder``), or "" for a path that leaves it."""
    from urllib.parse import unquote

    parts = unquote(rel).split("/")
    if any(p in ("", ".", "..") for p in parts):
        return ""
    nofollow = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(folder, nofollow)
    except FileNotFoundError:
        return _GONE
    except OSError:  # ELOOP / ENOTDIR: the table folder itself is a link (or no folder)
        return "."
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                below = os.open(part, nofollow, dir_fd=fd)
            except FileNotFoundError:
                return _GONE
            except OSError:
                return "/".join(parts[:i + 1])
            os.close(fd)
            fd = below
        try:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return _GONE
        if not stat.S_ISREG(st.st_mode):
            return "/".join(parts)  # a link (or a FIFO, a socket) where a file was: not ours to remove
        os.unlink(parts[-1], dir_fd=fd)  # (unlink never follows a link at the name itself)
        return None
    finally:
        os.close(fd)


def writer_properties():
    """The writer settings of the files delta-rs writes itself (``optimize``): those of ours (zstd level 1)."""
    from deltalake import WriterProperties

    return WriterProperties(compression="ZSTD", compression_level=1)


def live_files(uri: str, version: int) -> list[str]:
    """Absolute paths of the table's files at ``version`` (deltalake gives them percent-encoded: a root
    with a space in its path would read as missing files)."""
    return files_and_schema(open_table(uri, version))[0]


def files_schema(paths: list[str], filesystems: FileSystems) -> str | None:
    """``shared_schema`` of the files at ``paths``, read from their footers (None when one cannot be read)."""
    import pyarrow.parquet as pq

    digests = set()
    for path in paths:
        fs, where = filesystems.path(path)
        try:
            digests.add(file_schema(pq.read_metadata(where, filesystem=fs)))
        except (OSError, ValueError):  # (pyarrow's ArrowInvalid is a ValueError)
            return None
    return _one_of(digests)


def live_files_by_version(uri: str, versions: set[int]) -> dict[int, list[str] | None]:
    """``live_files`` of each of ``versions``, the log read forward once (a version that cannot be loaded,
    its log cleaned up: None), for questions about many snapshots at once (``readable.readable_snapshots``)."""
    from urllib.parse import unquote

    out: dict[int, list[str] | None] = {}
    table = None
    for v in sorted(versions):
        try:
            if table is None:
                table = open_table(uri, v)
            else:
                table.load_as_version(v)
            out[v] = [unquote(u) for u in table.file_uris()]
        except Exception:  # noqa: BLE001 - deltalake's errors for a version it cannot rebuild
            out[v], table = None, None
    return out


def local_files(uri: str, version: int, sizes: dict[str, int] | None = None) -> list[str] | None:
    """``live_files(uri, version)`` of a table on local disk, read from its log without deltalake (``sizes``,
    when given, gets each file's size as the log recorded it, by its path): a reader
    opening a warehouse needs only the file list, and importing deltalake and loading every table with it
    was a good part of a small query's time from a cold process. None when the log is anything but what
    this reads (JSON commits and single-file checkpoints of reader version 1, no deletion vectors, relative
    paths) or looks damaged: the caller then asks deltalake, which reads it or says what is wrong."""
    from urllib.parse import unquote

    log = os.path.join(uri, LOG)
    try:
        names = set(os.listdir(log))
    except OSError:
        return None
    if any(n.startswith("_") and n != LAST_CHECKPOINT for n in names) or any(
            ".checkpoint." in n and not _CHECKPOINT_ONE.match(n) for n in names):
        return None  # sidecars, multi-part or v2 checkpoints, a staged commit: deltalake's to read
    checkpoints = sorted(int(m.group(1)) for n in names if (m := _CHECKPOINT_ONE.match(n)))
    if LAST_CHECKPOINT in names:  # a hint naming a checkpoint that is gone: deltalake says what it makes of it
        hint = checkpoint_hint(log)
        if hint is None or hint not in checkpoints:
            return None
    start = max((v for v in checkpoints if v <= version), default=-1)
    # in deltalake's order: the newest commit first, each one's actions in order, then the checkpoint's
    batches = []
    for v in range(version, start, -1):
        data = read_bytes(os.path.join(log, f"{v:020d}.json"))
        if not data or not data.strip():
            return None
        try:
            batches.append([orjson.loads(line) for line in data.splitlines() if line.strip()])
        except orjson.JSONDecodeError:
            return None
    if start >= 0:
        batches.append(_checkpoint_actions(os.path.join(log, f"{start:020d}.checkpoint.parquet")))
        if batches[-1] is None:
            return None
    live: list[str] = []
    logged: dict[str, int] = {}
    seen: set[str] = set()  # paths a newer action added or removed
    for action in (a for batch in batches for a in batch):
        if not isinstance(action, dict):
            return None
        if "protocol" in action:
            protocol = action["protocol"] or {}
            if protocol.get("minReaderVersion", 1) not in (1, 3) or not set(protocol.get("readerFeatures") or ()) <= {
                    "timestampNtz"}:  # (a type of the schema; the file list is read as without it)
                return None
        for kind in ("add", "remove"):
            act = action.get(kind)
            if act is None:
                continue
            if (not isinstance(act, dict) or not isinstance(act.get("path"), str) or ":" in act["path"]
                    or act["path"].startswith("/") or act.get("deletionVector")):
                return None
            if act["path"] not in seen:
                seen.add(act["path"])
                if kind == "add":
                    live.append(act["path"])
                    logged[act["path"]] = act.get("size")
    out = [os.path.join(uri, unquote(p)) for p in live]
    if sizes is not None:
        sizes.update((path, logged[p]) for path, p in zip(out, live) if isinstance(logged[p], int))
    return out


#: a single-file checkpoint (``<version>.checkpoint.parquet``)
_CHECKPOINT_ONE = re.compile(r"^(\d{20})\.checkpoint\.parquet$")


def _checkpoint_actions(path: str) -> list[dict] | None:
    """The add and protocol actions of a checkpoint, in its order (None: it cannot be read)."""
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        rows = con.execute(
            "SELECT CASE WHEN \"add\" IS NOT NULL THEN json_object('add', to_json(\"add\")) "
            "ELSE json_object('protocol', to_json(protocol)) END::VARCHAR "
            f"FROM read_parquet({_sql_quote(path)}) WHERE \"add\" IS NOT NULL OR protocol IS NOT NULL").fetchall()
    except duckdb.Error:
        return None
    finally:
        con.close()
    return [orjson.loads(r[0]) for r in rows]


def _sql_quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def files_and_schema(table):
    """The files (absolute paths) of ``table``, a DeltaTable opened at a version, and its Arrow schema there: the
    schema every file of that version reads as (a file written before a column was added lacks it: null)."""
    from urllib.parse import unquote

    import pyarrow as pa

    return [unquote(u) for u in table.file_uris()], pa.schema(table.schema().to_arrow())


def add_actions(uri: str, version: int):
    """The table's add actions at ``version`` as an Arrow table (path, size_bytes, num_records, min.*, max.*)."""
    import pyarrow as pa

    return pa.table(open_table(uri, version).get_add_actions(flatten=True))  # (deltalake gives an arro3 table)


# --- the log's own files: read here (local_files) and by delta_damage --------------------------

LOG = "_delta_log"
COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
CHECKPOINT_FILE = re.compile(r"^(\d{20})\.checkpoint(?:\.\d+\.\d+)?\.parquet$")
LAST_CHECKPOINT = "_last_checkpoint"


def read_bytes(path: str, filesystems: FileSystems | None = None) -> bytes | None:
    """The bytes of a file or an object; None when it does not exist."""
    return (filesystems or reach(path)).read(path)


def checkpoint_hint(log: str, filesystems: FileSystems | None = None) -> int | None:
    """The version ``_last_checkpoint`` names; None when it is not readable."""
    try:
        named = orjson.loads(read_bytes(f"{log}/{LAST_CHECKPOINT}", filesystems) or b"").get("version")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return named if type(named) is int else None
