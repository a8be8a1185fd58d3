"""What is wrong with a Delta table that cannot be read, and how it is mended.

A table's Delta log is the list of its files: JSON commits (``<version>.json``), checkpoints
(``<version>.checkpoint.parquet``: the state at that version in one file, which deltalake writes at its
checkpoint interval) and ``_last_checkpoint`` (a hint naming the latest checkpoint). A checkpoint and
the hint only repeat what the JSON commits say, so while the commits are whole a damaged checkpoint is
mended by removing it and writing it again (``mend``). A commit the pinned version needs that is missing,
empty or not JSON loses the table's list of files: its rows cannot be read. Data files are checked against
the sizes the log recorded for them (``lost_files``): a missing or truncated file, or garbage in its place.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from warehouse.errors import first_line
from warehouse.filesystems import FileSystems, reach
from warehouse.store import remote_root
from warehouse.store.delta import (
    CHECKPOINT_FILE,
    COMMIT_FILE,
    LAST_CHECKPOINT,
    LOG,
    checkpoint_hint,
    files_and_schema,
    leaves_table,
    open_table,
    read_bytes,
)

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


def _listing(filesystems: FileSystems, folder: str) -> dict[str, int] | None:
    """name -> size of the files right in ``folder`` (local or an object prefix); None when it does not exist."""
    import pyarrow.fs as pafs

    from warehouse import urlpaths

    fs, path = filesystems.path(folder)
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except FileNotFoundError:
        return None
    except OSError as e:
        if urlpaths.is_url(folder):
            raise filesystems.run_error(folder, e) from None
        raise
    if not infos and fs.get_file_info(path).type == pafs.FileType.NotFound:
        return None
    return {i.base_name: i.size for i in infos if i.type == pafs.FileType.File}


def _parquet_readable(filesystems: FileSystems, path: str) -> bool:
    import pyarrow.parquet as pq


    fs, where = filesystems.path(path)
    try:
        pq.read_metadata(where, filesystem=fs)
        return True
    except (OSError, ValueError):  # pyarrow: ArrowInvalid (a ValueError) for garbage, OSError for the rest
        return False




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
    filesystems = reach(root)  # a remote root's URL carries its store's storage options (RootURL)

    uri = f"{root}/{table}"
    rel_log = f"{table}/{LOG}"
    if _listing(filesystems, uri) is None:
        return Damage(table, LOST_LOG, "its folder is gone", table)
    files = _listing(filesystems, f"{uri}/{LOG}")
    if not files:
        return Damage(table, LOST_LOG, f"its Delta log ({rel_log}) is gone", rel_log)
    commits = {int(m.group(1)): size for n, size in files.items() if (m := COMMIT_FILE.match(n))}
    checkpoints: dict[int, list[str]] = {}
    for n in files:
        if m := CHECKPOINT_FILE.match(n):
            checkpoints.setdefault(int(m.group(1)), []).append(n)
    # the checkpoints that are whole; the first damaged one found is what a mend removes
    bad_checkpoint = None
    whole = []
    for v in sorted(checkpoints):
        if all(_parquet_readable(filesystems, f"{uri}/{LOG}/{n}") for n in checkpoints[v]):
            whole.append(v)
        elif bad_checkpoint is None:
            bad_checkpoint = f"{rel_log}/{checkpoints[v][0]}"
    hint = None
    if LAST_CHECKPOINT in files:
        named = checkpoint_hint(f"{uri}/{LOG}", filesystems)
        if named is None:
            hint = "its checkpoint hint (_last_checkpoint) is not readable"
        elif named not in whole:
            hint = f"its checkpoint hint (_last_checkpoint) names checkpoint {named}, which is gone or damaged"
    # the commits the pinned version needs: after the last whole checkpoint at or before it, else from 0
    start = max((v for v in whole if v <= version), default=-1) + 1
    for v in range(start, version + 1):
        wrong = "is missing" if v not in commits else _commit_damage(read_bytes(f"{uri}/{LOG}/{v:020d}.json", filesystems))
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
            wrong = _commit_damage(read_bytes(f"{uri}/{LOG}/{v:020d}.json", filesystems))
            if wrong:
                return Damage(table, BEYOND, f"commit {v} of its Delta log, after the version the snapshot pins "
                                             f"({version}), {wrong}", f"{rel_log}/{v:020d}.json")
    said = "" if error is None else f": {filesystems.redact(first_line(error))}"  # the secrets in use, the environment's too
    return Damage(table, UNKNOWN, f"its Delta log cannot be read{said}", rel_log)


def made_after(uri: str, version: int, snapshot: int) -> int | None:
    """The snapshot that committed ``version`` of the table at ``uri``, when it is after ``snapshot`` (else None).
    A table whose log was lost is made again from version 0 (``damage.py``): an older snapshot's pin then
    names a version of the new log, which the older snapshot never saw. Every commit of the warehouse
    carries its snapshot's number (``warehouse_snapshot``); a commit whose file is gone (cleaned up
    behind a checkpoint) cannot say, and is taken as the snapshot's own."""
    filesystems = reach(uri)  # a remote root's URL carries its store's storage options (RootURL)
    data = read_bytes(f"{uri}/{LOG}/{version:020d}.json", filesystems)
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
    filesystems = reach(root)  # a remote root's URL carries its store's storage options (RootURL)
    files = _listing(filesystems, f"{root}/{table}/{LOG}") or {}
    checkpoints = {int(m.group(1)) for n in files if (m := CHECKPOINT_FILE.match(n))}
    start = max((v for v in checkpoints if v <= version), default=-1) + 1
    for v in range(start, version + 1):
        if files.get(f"{v:020d}.json") == 0:
            return Damage(table, LOST_LOG, f"commit {v} of its Delta log is empty", f"{table}/{LOG}/{v:020d}.json")
    last = max(checkpoints, default=-1)
    if last > max((int(m.group(1)) for n in files if (m := COMMIT_FILE.match(n))), default=-1):
        return Damage(table, CHECKPOINT, f"commit {last} of its Delta log is missing (its checkpoint holds the same)",
                      f"{table}/{LOG}/{last:020d}.json")
    return None


def data_damage(root: str, table: str, dt, *, by_size: bool = True, footers: bool = False) -> Damage | None:
    """The data files of ``table`` (``dt``: opened at the pinned version) that are missing or (``by_size``) not the
    size its log recorded (one listing of the table's folder); with ``footers``, also those whose Parquet
    footer cannot be read (one read each: where a reader already failed on one)."""
    filesystems = reach(root)  # a remote root's URL carries its store's storage options (RootURL)
    lost = lost_files(root, table, dt, by_size=by_size)
    if not lost and footers:
        lost = [(f.rsplit("/", 1)[1], "is not a readable Parquet file") for f in files_and_schema(dt)[0]
                if not _parquet_readable(filesystems, f)]
    if not lost:
        return None
    name, why = lost[0]
    more = f" (and {len(lost) - 1} more of its files)" if len(lost) > 1 else ""
    return Damage(table, DATA, f"its data file {table}/{name} {why}{more}", f"{table}/{name}",
                  tuple(n for n, _ in lost))


def mend(root: str, damage: Damage) -> str:
    """Mend a CHECKPOINT or BEYOND damage (call with the lock held); what was done. The files removed are
    derived (checkpoints repeat the commits) or were never pinned by a snapshot (a commit after it)."""

    filesystems = reach(root)  # a remote root's URL carries its store's storage options (RootURL)
    uri = f"{root}/{damage.table}"
    log = f"{uri}/{LOG}"
    files = _listing(filesystems, log) or {}
    if damage.kind == BEYOND:
        # every commit from the damaged one on: no snapshot pins them, and the log must end where it is whole
        first = int(damage.path.rsplit("/", 1)[1][:20])
        gone = sorted(n for n in files if (m := COMMIT_FILE.match(n) or CHECKPOINT_FILE.match(n)) and int(m.group(1)) >= first)
    else:
        gone = sorted(n for n in files if CHECKPOINT_FILE.match(n) and not _parquet_readable(filesystems, f"{log}/{n}"))
        whole = {int(n[:20]) for n in files if CHECKPOINT_FILE.match(n) and n not in gone}
        if LAST_CHECKPOINT in files and checkpoint_hint(log, filesystems) not in whole:
            gone.append(LAST_CHECKPOINT)
    for n in gone:
        remote_root.delete(filesystems, f"{log}/{n}")
    if damage.kind == BEYOND:
        return f"{damage.table}: {damage.what}: removed ({len(gone)} files of its log, never pinned by a snapshot)"
    files = _listing(filesystems, log) or {}
    last = max((int(m.group(1)) for n in files if (m := CHECKPOINT_FILE.match(n))), default=-1)
    if last > max((int(m.group(1)) for n in files if (m := COMMIT_FILE.match(n))), default=-1):
        # The last version is in its checkpoint alone; deltalake's writers read its commit file. One holding no
        # action but a note changes nothing for a reader, which starts from the checkpoint.
        note = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WAREHOUSE REPAIR",
                               "operationParameters": {}, "warehouse_operation": "repair",
                               "warehouse_note": f"commit {last} was lost; checkpoint {last} holds its state"}}
        _write(filesystems, f"{log}/{last:020d}.json", orjson.dumps(note) + b"\n")
        return f"{damage.table}: {damage.what}: a commit that changes nothing written in its place"
    with filesystems.writing_root(uri):
        open_table(uri).create_checkpoint()  # the readers' shortcut again, from the whole commits
    return f"{damage.table}: {damage.what}: rebuilt from its JSON commits"


def _write(filesystems: FileSystems, path: str, data: bytes) -> None:
    from warehouse import urlpaths

    if urlpaths.is_url(path):
        remote_root.create_object(filesystems, path, data)
        return
    from warehouse.store.files import create_if_absent

    create_if_absent(Path(path), data)


def lost_files(root: str, table: str, dt, *, by_size: bool = True) -> list[tuple[str, str]]:
    """(path relative to the table, what is wrong) of the data files of ``dt`` (the table opened at a
    version) that are missing or (``by_size``) not the size its log recorded."""
    from urllib.parse import unquote

    filesystems = reach(root)  # a remote root's URL carries its store's storage options (RootURL)
    logged = _file_sizes(dt)
    if not logged:
        return []
    present = _listing(filesystems, f"{root}/{table}") or {}
    out = []
    for rel, size in logged.items():
        name = unquote(rel)
        if leaves_table(name):  # (never looked at)
            out.append((name, "lies outside the table's folder"))
            continue
        have = present.get(name) if "/" not in name else _size(filesystems, f"{root}/{table}/{name}")
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


def _size(filesystems: FileSystems, path: str) -> int | None:
    import pyarrow.fs as pafs


    fs, where = filesystems.path(path)
    info = fs.get_file_info(where)
    return info.size if info.type == pafs.FileType.File else None
