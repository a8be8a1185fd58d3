"""The Delta Lake tables under the root: one per declared table, written with ``deltalake`` (delta-rs).

The warehouse writes its Parquet files itself (workers, with ``warehouse.store.writer``) and
commits them here as Delta ``add`` actions with the statistics every Delta reader uses
to skip files (``file_stats``: rows, and min / max / null count of the columns where
they are exact and short). A table's removes and adds of one run are one Delta version
(``commit_table``). Everything here takes the table's location as a string, so that a
root may later be a URL (``storage_options`` go straight to deltalake).
"""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from warehouse.errors import first_line

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

    @classmethod
    def of(cls, root: str, abspath: str) -> "Part":
        import pyarrow.parquet as pq

        from warehouse import remote

        fs, path = remote.fs_path(abspath)
        meta = pq.read_metadata(path, filesystem=fs)
        info = fs.get_file_info(path)
        return cls(os.path.relpath(abspath, root), meta.num_rows, info.size, int(info.mtime.timestamp() * 1000),
                   file_stats(meta))


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
    from warehouse import remote, urlpaths

    if urlpaths.is_url(uri):
        return "_delta_log" in remote.list_folders(uri)
    return os.path.isdir(os.path.join(uri, "_delta_log"))


def open_table(uri: str, version: int | None = None):
    from deltalake import DeltaTable

    from warehouse import remote

    return DeltaTable(uri, version=version, storage_options=remote.delta_options(uri))


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
    from warehouse import remote

    with remote.writing_root(uri):  # a store's refusal as one line naming the object, not a Rust error chain
        return _commit_table(uri, version, arrow_schema, adds, removes, metadata)


def _commit_table(uri: str, version: int | None, arrow_schema, adds: list[Part], removes: list[str],
                  metadata: dict) -> int:
    from deltalake import Schema
    from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

    actions = [AddAction(_in_table(p.path), p.size, {}, p.mtime_ms, True, p.stats) for p in adds]
    props = properties(metadata)
    if version is None:
        from warehouse import remote

        create_table_with_add_actions(uri, Schema.from_arrow(arrow_schema), actions, mode="error",
                                      commit_properties=props, storage_options=remote.delta_options(uri))
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
    from warehouse import remote, urlpaths

    options = dict(retention_hours=retention_hours, enforce_retention_duration=False, full=True,
                   keep_versions=[keep_version], commit_properties=commit_properties)
    # deltalake names a replaced file as long as the log remembers it, deleted or not: only the files
    # still there count (and on a bucket, a vacuum, a new Delta version, only when there is one)
    if urlpaths.is_url(uri):
        doomed = [rel for rel in table.vacuum(dry_run=True, **options) if remote.exists(f"{uri}/{rel}")]
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


def local_files(uri: str, version: int) -> list[str] | None:
    """``live_files(uri, version)`` of a table on local disk, read from its log without deltalake: a reader
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
        hint = _hint(log)
        if hint is None or hint not in checkpoints:
            return None
    start = max((v for v in checkpoints if v <= version), default=-1)
    # in deltalake's order: the newest commit first, each one's actions in order, then the checkpoint's
    batches = []
    for v in range(version, start, -1):
        data = _read(os.path.join(log, f"{v:020d}.json"))
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
    return [os.path.join(uri, unquote(p)) for p in live]


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


# --- damage: what is wrong with a table that cannot be read ------------------------------------------
#
# A table's Delta log is the list of its files: JSON commits (``<version>.json``), checkpoints
# (``<version>.checkpoint.parquet``: the state at that version in one file, which deltalake writes at its
# checkpoint interval) and ``_last_checkpoint`` (a hint naming the latest checkpoint). A checkpoint and
# the hint only repeat what the JSON commits say, so while the commits are whole a damaged checkpoint is
# mended by removing it and writing it again (``mend``). A commit the pinned version needs that is missing, empty or
# not JSON loses the table's list of files: its rows cannot be read. Data files are checked against the
# sizes the log recorded for them (``lost_files``): a missing or truncated file, or garbage in its place.

LOG = "_delta_log"
_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.\d+\.\d+)?\.parquet$")
LAST_CHECKPOINT = "_last_checkpoint"

#: the kinds of damage: what can be done about each
CHECKPOINT = "checkpoint"  # a checkpoint or ``_last_checkpoint`` damaged, the JSON commits whole: mended from them
LOST_LOG = "log"  # a commit the pinned version needs is gone or damaged: the table's file list is lost
BEYOND = "beyond"  # a commit after the pinned version damaged (a run that did not finish): removed
DATA = "data"  # data files missing or not as the log recorded them
UNKNOWN = "unknown"  # deltalake cannot read the table and no file looks damaged


@dataclass(frozen=True)
class Damage:
    """What is wrong with one table at the version a snapshot pins."""

    table: str
    kind: str
    what: str  # e.g. "its data file responses/x.parquet is missing"
    path: str = ""  # the damaged file (or folder), relative to the root
    #: with DATA: the lost data files, relative to the table's folder
    files: tuple[str, ...] = ()


def _listing(folder: str) -> dict[str, int] | None:
    """name -> size of the files right in ``folder`` (local or an object prefix); None when it does not exist."""
    import pyarrow.fs as pafs

    from warehouse import remote, urlpaths

    fs, path = remote.fs_path(folder)
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except FileNotFoundError:
        return None
    except OSError as e:
        if urlpaths.is_url(folder):
            raise remote.run_error(folder, e) from None
        raise
    if not infos and fs.get_file_info(path).type == pafs.FileType.NotFound:
        return None
    return {i.base_name: i.size for i in infos if i.type == pafs.FileType.File}


def _read(path: str) -> bytes | None:
    from warehouse import remote, urlpaths

    if urlpaths.is_url(path):
        return remote.read_object(path)
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _parquet_readable(path: str) -> bool:
    import pyarrow.parquet as pq

    from warehouse import remote

    fs, where = remote.fs_path(path)
    try:
        pq.read_metadata(where, filesystem=fs)
        return True
    except (OSError, ValueError):  # pyarrow: ArrowInvalid (a ValueError) for garbage, OSError for the rest
        return False


def _hint(log: str) -> int | None:
    """The version ``_last_checkpoint`` names; None when it is not readable."""
    try:
        named = orjson.loads(_read(f"{log}/{LAST_CHECKPOINT}") or b"").get("version")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return named if type(named) is int else None


def _commit_damage(data: bytes | None) -> str | None:
    """What is wrong with a JSON commit's bytes (None: nothing)."""
    if data is None:
        return "is missing"
    if not data.strip():
        return "is empty"
    for line in data.splitlines():
        if line.strip():
            try:
                action = orjson.loads(line)
            except orjson.JSONDecodeError:
                return "is not JSON (truncated or overwritten)"
            if not isinstance(action, dict):
                return "is not a Delta commit"
    return None


def diagnose(root: str, table: str, version: int, error: BaseException | None = None) -> Damage:
    """What keeps ``table`` (under ``root``) from being read at ``version``, looking at its log's files."""
    from warehouse import access, remote

    uri = f"{root}/{table}"
    rel_log = f"{table}/{LOG}"
    if _listing(uri) is None:
        return Damage(table, LOST_LOG, "its folder is gone", table)
    files = _listing(f"{uri}/{LOG}")
    if not files:
        return Damage(table, LOST_LOG, f"its Delta log ({rel_log}) is gone", rel_log)
    commits = {int(m.group(1)): size for n, size in files.items() if (m := _COMMIT.match(n))}
    checkpoints: dict[int, list[str]] = {}
    for n in files:
        if m := _CHECKPOINT.match(n):
            checkpoints.setdefault(int(m.group(1)), []).append(n)
    # the checkpoints that are whole; the first damaged one found is what a mend removes
    bad_checkpoint = None
    whole = []
    for v in sorted(checkpoints):
        if all(_parquet_readable(f"{uri}/{LOG}/{n}") for n in checkpoints[v]):
            whole.append(v)
        elif bad_checkpoint is None:
            bad_checkpoint = f"{rel_log}/{checkpoints[v][0]}"
    hint = None
    if LAST_CHECKPOINT in files:
        named = _hint(f"{uri}/{LOG}")
        if named is None:
            hint = "its checkpoint hint (_last_checkpoint) is not readable"
        elif named not in whole:
            hint = f"its checkpoint hint (_last_checkpoint) names checkpoint {named}, which is gone or damaged"
    # the commits the pinned version needs: after the last whole checkpoint at or before it, else from 0
    start = max((v for v in whole if v <= version), default=-1) + 1
    for v in range(start, version + 1):
        wrong = "is missing" if v not in commits else _commit_damage(_read(f"{uri}/{LOG}/{v:020d}.json"))
        if wrong:
            if wrong == "is missing" and v > max(commits, default=-1):
                wrong = f"is missing (the log ends before version {version}, which the snapshot pins)"
            return Damage(table, LOST_LOG, f"commit {v} of its Delta log {wrong}", f"{rel_log}/{v:020d}.json")
    if bad_checkpoint or hint:
        what = (f"its checkpoint of version {int(bad_checkpoint.rsplit('/', 1)[1][:20])} is not a readable Parquet "
                "file" if bad_checkpoint else hint)
        return Damage(table, CHECKPOINT, what, bad_checkpoint or f"{rel_log}/{LAST_CHECKPOINT}")
    for v in sorted(commits):
        if v > version:
            wrong = _commit_damage(_read(f"{uri}/{LOG}/{v:020d}.json"))
            if wrong:
                return Damage(table, BEYOND, f"commit {v} of its Delta log, after the version the snapshot pins "
                                             f"({version}), {wrong}", f"{rel_log}/{v:020d}.json")
    said = "" if error is None else f": {remote.scrub(first_line(error), access.resolve(None))}"
    return Damage(table, UNKNOWN, f"its Delta log cannot be read{said}", rel_log)


def made_after(uri: str, version: int, snapshot: int) -> int | None:
    """The snapshot that committed ``version`` of the table at ``uri``, when it is after ``snapshot`` (else None).
    A table whose log was lost is made again from version 0 (``damage.py``): an older snapshot's pin then
    names a version of the new log, which the older snapshot never saw. Every commit of the warehouse
    carries its snapshot's number (``warehouse_snapshot``); a commit whose file is gone (cleaned up
    behind a checkpoint) cannot say, and is taken as the snapshot's own."""
    data = _read(f"{uri}/{LOG}/{version:020d}.json")
    for line in (data or b"").splitlines():
        try:
            info = orjson.loads(line).get("commitInfo")
        except (orjson.JSONDecodeError, AttributeError):
            return None
        if isinstance(info, dict):
            try:
                by = int(info.get("warehouse_snapshot"))
            except (TypeError, ValueError):
                return None
            return by if by > snapshot else None
    return None


def log_gap(root: str, table: str, version: int) -> Damage | None:
    """From the log's listing alone: a commit ``version`` needs that is empty (a crash before the file system
    wrote it out: deltalake reads it as a commit that changed nothing, so the table would read wrong, not
    fail), LOST_LOG; or the log's last version with no JSON commit beside its checkpoint (readers do without
    it, deltalake's writers do not), CHECKPOINT: ``mend`` writes one that says so."""
    files = _listing(f"{root}/{table}/{LOG}") or {}
    checkpoints = {int(m.group(1)) for n in files if (m := _CHECKPOINT.match(n))}
    start = max((v for v in checkpoints if v <= version), default=-1) + 1
    for v in range(start, version + 1):
        if files.get(f"{v:020d}.json") == 0:
            return Damage(table, LOST_LOG, f"commit {v} of its Delta log is empty", f"{table}/{LOG}/{v:020d}.json")
    last = max(checkpoints, default=-1)
    if last > max((int(m.group(1)) for n in files if (m := _COMMIT.match(n))), default=-1):
        return Damage(table, CHECKPOINT, f"commit {last} of its Delta log is missing (its checkpoint holds the same)",
                      f"{table}/{LOG}/{last:020d}.json")
    return None


def data_damage(root: str, table: str, dt, *, by_size: bool = True, footers: bool = False) -> Damage | None:
    """The data files of ``table`` (``dt``: opened at the pinned version) that are missing or (``by_size``) not the
    size its log recorded (one listing of the table's folder); with ``footers``, also those whose Parquet
    footer cannot be read (one read each: where a reader already failed on one)."""
    lost = lost_files(root, table, dt, by_size=by_size)
    if not lost and footers:
        lost = [(f.rsplit("/", 1)[1], "is not a readable Parquet file") for f in files_and_schema(dt)[0]
                if not _parquet_readable(f)]
    if not lost:
        return None
    name, why = lost[0]
    more = f" (and {len(lost) - 1} more of its files)" if len(lost) > 1 else ""
    return Damage(table, DATA, f"its data file {table}/{name} {why}{more}", f"{table}/{name}",
                  tuple(n for n, _ in lost))


def mend(root: str, damage: Damage) -> str:
    """Mend a CHECKPOINT or BEYOND damage (call with the lock held); what was done. The files removed are
    derived (checkpoints repeat the commits) or were never pinned by a snapshot (a commit after it)."""
    from warehouse import remote

    uri = f"{root}/{damage.table}"
    log = f"{uri}/{LOG}"
    files = _listing(log) or {}
    if damage.kind == BEYOND:
        # every commit from the damaged one on: no snapshot pins them, and the log must end where it is whole
        first = int(damage.path.rsplit("/", 1)[1][:20])
        gone = sorted(n for n in files if (m := _COMMIT.match(n) or _CHECKPOINT.match(n)) and int(m.group(1)) >= first)
    else:
        gone = sorted(n for n in files if _CHECKPOINT.match(n) and not _parquet_readable(f"{log}/{n}"))
        whole = {int(n[:20]) for n in files if _CHECKPOINT.match(n) and n not in gone}
        if LAST_CHECKPOINT in files and _hint(log) not in whole:
            gone.append(LAST_CHECKPOINT)
    for n in gone:
        remote.delete(f"{log}/{n}")
    if damage.kind == BEYOND:
        return f"{damage.table}: {damage.what}: removed ({len(gone)} files of its log, never pinned by a snapshot)"
    files = _listing(log) or {}
    last = max((int(m.group(1)) for n in files if (m := _CHECKPOINT.match(n))), default=-1)
    if last > max((int(m.group(1)) for n in files if (m := _COMMIT.match(n))), default=-1):
        # The last version is in its checkpoint alone; deltalake's writers read its commit file. One holding no
        # action but a note changes nothing for a reader, which starts from the checkpoint.
        note = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WAREHOUSE REPAIR",
                               "operationParameters": {}, "warehouse_operation": "repair",
                               "warehouse_note": f"commit {last} was lost; checkpoint {last} holds its state"}}
        _write(f"{log}/{last:020d}.json", orjson.dumps(note) + b"\n")
        return f"{damage.table}: {damage.what}: a commit that changes nothing written in its place"
    with remote.writing_root(uri):
        open_table(uri).create_checkpoint()  # the readers' shortcut again, from the whole commits
    return f"{damage.table}: {damage.what}: rebuilt from its JSON commits"


def _write(path: str, data: bytes) -> None:
    from warehouse import remote, urlpaths

    if urlpaths.is_url(path):
        remote.create_object(path, data)
        return
    from warehouse.store.files import create_if_absent

    create_if_absent(Path(path), data)


def lost_files(root: str, table: str, dt, *, by_size: bool = True) -> list[tuple[str, str]]:
    """(path relative to the table, what is wrong) of the data files of ``dt`` (the table opened at a
    version) that are missing or (``by_size``) not the size its log recorded."""
    from urllib.parse import unquote

    logged = _file_sizes(dt)
    if not logged:
        return []
    present = _listing(f"{root}/{table}") or {}
    out = []
    for rel, size in logged.items():
        name = unquote(rel)
        have = present.get(name) if "/" not in name else _size(f"{root}/{table}/{name}")
        if have is None:
            out.append((name, "is missing"))
        elif by_size and have != size:
            out.append((name, f"has {have} bytes where its log recorded {size} (truncated or overwritten)"))
    return out


def _file_sizes(dt) -> dict[str, int]:
    """path (relative to the table) -> size in bytes of the table's files, as its log recorded them. deltalake's
    own map of them is not public; its public route (the add actions, converted to an Arrow table) would
    be paid by every ingest for every table, so it is the fallback only."""
    recorded = getattr(getattr(dt, "_table", None), "get_add_file_sizes", None)
    if recorded is not None:
        return dict(recorded())
    import pyarrow as pa

    actions = pa.table(dt.get_add_actions(flatten=False)).select(["path", "size_bytes"]).to_pydict()
    return dict(zip(actions["path"], actions["size_bytes"]))


def _size(path: str) -> int | None:
    import pyarrow.fs as pafs

    from warehouse import remote

    fs, where = remote.fs_path(path)
    info = fs.get_file_info(where)
    return info.size if info.type == pafs.FileType.File else None
