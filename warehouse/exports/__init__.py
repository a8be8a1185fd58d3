"""Export a filtered subset of the warehouse: ``warehouse export --where ... --format ... --out ...``.

The selection is the responses that satisfy ``--where`` (a SQL predicate on the
``responses`` view), and, with them, their children: turns, sentence boundaries,
annotations and evaluations of those responses (and of their records, for rows
that belong to a whole record, such as a prompt message several candidates share).

Every format writes into a private workspace beside ``--out`` (``workspace.py``) and
its output is renamed into place at the end, so a failed export leaves no partial
output. ``--where`` is checked to be one expression over the views, and the
connection is sandboxed (``where.py``).

Formats are a registry of small frozen dataclasses: the generic ones live in
``warehouse.exports.generic``; the ones back to a source format are the installed
formats' ``Ingestor.exporter`` (each format knows its own shape), found through
``warehouse.formatkit.registry``. Both are written with one public kit, ``warehouse.exports.kit``:
staging of the selection and its children (joins generated from the tables' declared
parent links), windows, the conversation of a response, JSON, notes.
"""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass

import duckdb

from warehouse.access import StorageOptions
from warehouse.errors import ExportError, QueryError, UsageError
from warehouse.exports.where import sandbox, selection_sql
from warehouse.exports.workspace import Workspace
from warehouse.formatkit.exporter import ExportContext, ExportFormat
from warehouse.moved import renamed_attribute
from warehouse.reading.damaged import damage_error
from warehouse.reading.query import columns_hint, open_existing
from warehouse.store.storage import Store

#: DuckDB's memory for an export (``--memory-limit``); beyond it, it spills to a temporary
#: directory beside --out
MEMORY_LIMIT = "1GB"
MEMORY_SIZE = re.compile(r"\d+(\.\d+)?\s*([KMGT]i?B|B)", re.IGNORECASE)


@dataclass
class ExportSummary:
    export_format: str
    out: str
    selected: int
    written: int
    seconds: float
    notes: list[str]

    format = renamed_attribute("format", "export_format")

    def text(self) -> str:
        lines = [f"exported {self.written} of {self.selected} selected responses as {self.export_format} to {self.out} in {self.seconds:.2f}s"]
        return "\n".join(lines + self.notes)


class _Progress:
    """Export progress: responses written of those selected, with percentage and time left (a tqdm
    bar, see ``warehouse.progress``). Until the format reports its first responses (while DuckDB
    selects and stages them) the bar shows DuckDB's progress through the running statement."""

    def __init__(self, con: duckdb.DuckDBPyConnection, export_format: str, enabled: bool):
        from warehouse import progress

        self.bar = progress.bar(None, desc=f"export {export_format}", unit=" responses", enabled=enabled)
        self.preparing = progress.QueryProgress(con, self.bar) if self.bar is not None else None

    def selected(self, total: int) -> None:
        if self.bar is not None:
            self.bar.total = total  # shown from the next update on

    def __call__(self, done: int) -> None:
        if self.bar is not None:
            if self.preparing.active:
                self.preparing.active = False
                self.bar.set_postfix_str("", refresh=False)
            self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.preparing.stop()
            self.bar.close()


def formats(extra: Iterable[ExportFormat] = ()) -> dict[str, ExportFormat]:
    """Every export format by name: the generic ones, the installed formats' exporters, then ``extra``."""
    from warehouse.exports.generic import GENERIC
    from warehouse.formatkit.registry import Registry

    return {f.name: f for f in (*GENERIC, *Registry.installed().exporters(), *extra)}


SELECTION_SQL = (
    "CREATE OR REPLACE TEMP TABLE selected AS {selection}",
    "CREATE OR REPLACE TEMP TABLE selected_records AS SELECT DISTINCT record_id FROM selected",
)


def select(con: duckdb.DuckDBPyConnection, where: str | None, root: str = "") -> int:
    """Make the temp tables ``selected`` and ``selected_records``; the number of responses.

    ``where`` must be one boolean expression over the warehouse's views (``where.py``).
    """
    predicate = where.strip() if where and where.strip() else "true"
    selection = selection_sql(con, predicate)
    try:
        for statement in SELECTION_SQL:
            con.execute(statement.format(selection=selection)).fetchall()
    except duckdb.OutOfMemoryException:
        raise  # not the predicate's fault: export() says what to do
    except duckdb.Error as e:
        if (damaged := damage_error(e, root)) is not None:
            raise damaged from None
        raise QueryError(f"--where {where!r}: {e}\n\ncolumns of responses you can filter on:\n{columns_hint(con, 'responses')}") from None
    return con.execute("SELECT count(*) FROM selected").fetchall()[0][0]  # fetchall: leaves no open result


def export(
    root: str,
    where: str | None,
    export_format: str,
    out: str,
    *,
    extra_formats: Iterable[ExportFormat] = (),
    overwrite: bool = False,
    progress: bool = True,
    memory_limit: str = MEMORY_LIMIT,
    as_of: int | None = None,
    storage_options: StorageOptions = None,
) -> ExportSummary:
    """Write the responses matching ``where`` (and their children) to ``out`` (a local path) as ``export_format``, from
    warehouse snapshot ``as_of`` (default: the latest) of ``root`` (a local directory or an ``s3://`` URL)."""
    registry = formats(extra_formats)
    if export_format not in registry:
        raise UsageError(f"unknown export format {export_format!r}; choose one of: {', '.join(registry)}")
    spec = registry[export_format]
    out = os.path.abspath(out)
    _check_out(root, out)
    if os.path.lexists(out) and spec.directory and not overwrite:
        raise UsageError(f"--out {out}: exists; remove it, choose another path, or pass --overwrite")
    if os.path.isdir(out) and not spec.directory:
        raise UsageError(f"--out {out}: is a directory; the {export_format} format writes one file")
    if spec.suffixes and not out.lower().endswith(spec.suffixes):
        named = " or ".join(spec.suffixes)
        name = os.path.splitext(os.path.basename(out))[0] + spec.suffixes[0]
        raise UsageError(f"--out {out}: `warehouse ingest` reads the {export_format} format back only from a name ending in "
                         f"{named} (it tells formats by the extension); name it {name}")
    if not MEMORY_SIZE.fullmatch(memory_limit.strip()):
        raise UsageError(f"--memory-limit {memory_limit!r}: not a memory size (give e.g. 1GB, 512MB)")
    t0 = time.monotonic()
    con = open_existing(root, as_of, storage_options)
    shown = _Progress(con, export_format, progress)  # before the sandbox locks the connection's settings
    made: list[str] = []
    space, done = None, False
    try:
        made = _make_parent(os.path.dirname(out))
        space = Workspace(out, spec.directory)
        try:
            con.execute("SET memory_limit = ?", [memory_limit.strip()]).fetchall()
        except duckdb.Error as e:
            raise UsageError(f"--memory-limit {memory_limit!r}: {str(e).splitlines()[0]}") from None
        # DuckDB may use this much memory, then writes what it holds to the workspace's spill
        # folder (sorts, joins, the staged tables of nested formats): the export's memory is bounded.
        con.execute("SET temp_directory = ?", [space.spill]).fetchall()
        store = Store(root)
        # the Delta tables' folders only; a remote root's tables are Arrow datasets registered in the
        # connection (raw.register_remote_files), read without DuckDB's file system: no folder at all
        sandbox(con, [] if store.remote else [str(d) for d in store.table_dirs()])
        total = select(con, where, str(root))
        shown.selected(total)
        ctx = ExportContext(con, space.output, total, shown, target=out)
        written = spec.write(ctx)
        con.close()  # before the workspace goes: DuckDB's spill files are in it
        space.commit()
        done = True
    except BaseException as e:
        said = _said(e, out, memory_limit, str(root))
        if said is e:
            raise
        raise said from None
    finally:
        shown.close()
        con.close()
        if space is not None:
            space.discard()
        if not done:
            _remove_made(made)
    return ExportSummary(export_format, out, total, written, time.monotonic() - t0, ctx.notes)


def _check_out(root: str, out: str) -> None:
    """--out must not be the warehouse root, inside it, or hold it: the export would write into the
    warehouse, or (replacing a directory) delete it. (--out is local: a URL root never holds it.)"""
    if Store(root).remote:
        return
    real_root = os.path.realpath(root)
    real_out = os.path.join(os.path.realpath(os.path.dirname(out)), os.path.basename(out))
    if os.path.commonpath([real_root, real_out]) in (real_root, real_out):
        where = "is the warehouse root" if real_out == real_root else (
            "is inside the warehouse root" if real_out.startswith(real_root + os.sep) else "holds the warehouse root")
        raise UsageError(f"--out {out}: {where} {root}; write the export somewhere outside it")


def _make_parent(parent: str) -> list[str]:
    """Create --out's folder; the folders this made (removed again if the export fails)."""
    missing = []
    d = parent
    while not os.path.isdir(d) and d != os.path.dirname(d):
        missing.append(d)
        d = os.path.dirname(d)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError:
        _remove_made(missing)
        raise
    return missing


def _remove_made(made: list[str]) -> None:
    for d in made:  # deepest first
        try:
            os.rmdir(d)
        except OSError:
            return


#: errnos that mean the device (or the process's file size limit) has no room for the output
NO_ROOM = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def _said(e: BaseException, out: str, memory_limit: str, root: str) -> BaseException:
    """The message for an export that failed on the machine, not on the data; else ``e`` itself."""
    if isinstance(e, duckdb.Error) and (damaged := damage_error(e, root)) is not None:
        return damaged  # (the export's partial output is removed as for any failure)
    if isinstance(e, duckdb.OutOfMemoryException):
        return ExportError(
            f"export to {out}: DuckDB needed more than --memory-limit {memory_limit} and could not spill the rest "
            f"to disk; raise --memory-limit, or export a smaller --where selection. DuckDB said: "
            f"{str(e).splitlines()[0]}"
        )
    if isinstance(e, OSError) or isinstance(e, duckdb.IOException):
        if isinstance(e, OSError) and e.strerror:
            text = e.strerror  # its file name is in the workspace, which is gone
        else:
            text = str(e).splitlines()[0] if str(e) else type(e).__name__
        code = getattr(e, "errno", None)
        if code in NO_ROOM or any(os.strerror(n) in str(e) for n in NO_ROOM):
            hint = "; free some space there, or write --out to another device"
        elif code in (errno.EACCES, errno.EPERM, errno.EROFS):
            hint = "; check that --out's folder is writable"
        else:
            hint = ""
        return ExportError(f"export to {out}: could not write: {text}{hint}. Nothing was written.")
    return e
