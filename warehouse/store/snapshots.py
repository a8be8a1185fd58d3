"""A warehouse snapshot: one record under .warehouse/snapshots pinning a Delta version of every table (the commit
point of a run), what makes a file one, and the run ids that name the runs."""

from __future__ import annotations

import datetime as dt
import re
import secrets
from dataclasses import dataclass, field

from warehouse.errors import LeaseLost, NotASnapshot, StorageError

#: the version of this layout, in every snapshot; the layout before it (``manifest.json``) is 1
FORMAT_VERSION = 2


#: a run id: UTC time to the millisecond and 4 random hex digits; every file of a run starts with it
RUN_ID = re.compile(r"^\d{8}T\d{9}Z-[0-9a-f]{4}")


def new_run_id() -> str:
    now = dt.datetime.now(dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%S") + f"{now.microsecond // 1000:03d}Z-{secrets.token_hex(2)}"


@dataclass
class SnapshotRecord:
    """One warehouse snapshot: what ``.warehouse/snapshots/<number>.json`` holds.

    ``tables``: ``{table: {"version": Delta version, "columns": [columns some live file has],
    "file_schema": digest}}`` (the columns let the views read files written before a column was declared;
    ``file_schema``, when every live file has the same columns of the same types, lets them read the files
    without matching columns by name: ``pin``).
    ``did``: what the run did (``files_ingested``, ``files_replaced``, ``files_pruned``,
    ``rows_added`` / ``rows_removed`` per table), for ``warehouse history``.
    """

    number: int = 0
    time: str = ""
    run_id: str | None = None
    operation: str = "ingest"
    did: dict = field(default_factory=dict)
    tables: dict[str, dict] = field(default_factory=dict)
    #: the SHA-256 of the SQL ``path_fields`` was materialised with
    path_fields_sql: str | None = None
    #: run options remembered between runs (e.g. the tokenizer directory)
    settings: dict = field(default_factory=dict)

    def version(self, table: str) -> int | None:
        t = self.tables.get(table)
        return None if t is None else t["version"]

    def to_json(self) -> dict:
        return {
            "format_version": FORMAT_VERSION, "snapshot": self.number, "time": self.time, "run_id": self.run_id,
            "operation": self.operation, "did": self.did, "tables": self.tables,
            "path_fields_sql": self.path_fields_sql, "settings": self.settings,
        }

    @classmethod
    def from_json(cls, d, where: str, number: int) -> "SnapshotRecord":
        """The snapshot in ``d`` (the parsed file ``where``, snapshot ``number``); a file that is not one
        (written by hand or by something else, or damaged) raises ``NotASnapshot`` saying what is wrong."""
        if isinstance(d, dict) and isinstance(d.get("format_version"), int) and d["format_version"] > FORMAT_VERSION:
            raise StorageError(
                f"{where}: warehouse format {d['format_version']!r}, this version reads {FORMAT_VERSION}; "
                "upgrade the warehouse package"
            )
        wrong = _not_a_snapshot(d, number)
        if wrong:
            raise NotASnapshot(where, number, wrong)
        return cls(number=d["snapshot"], time=d["time"], run_id=d.get("run_id"), operation=d.get("operation", ""),
                   did=d.get("did", {}), tables=d["tables"], path_fields_sql=d.get("path_fields_sql"),
                   settings=d.get("settings", {}))


#: the key of a table's pin naming the schema all its live files share (``delta.file_schema``); absent when
#: they differ or it is not known (a snapshot of an older version), and the views then match columns by name
FILE_SCHEMA = "file_schema"


def pin(version: int, columns: list[str], file_schema: str | None) -> dict:
    """A table's entry in ``SnapshotRecord.tables``."""
    out = {"version": version, "columns": columns}
    if file_schema is not None:
        out[FILE_SCHEMA] = file_schema
    return out


#: what a table may be called in a snapshot: a name, never a path (the tables are folders of the root)
TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


#: the fields of a snapshot and the types they hold (None: may be null)
_FIELDS = {"time": (str,), "run_id": (str, type(None)), "operation": (str,), "did": (dict,),
           "path_fields_sql": (str, type(None)), "settings": (dict,)}


def _not_a_snapshot(d, number: int) -> str | None:
    """What makes ``d`` no snapshot ``number`` (None: it is one)."""
    if not isinstance(d, dict):
        return f"holds a JSON {type(d).__name__.replace('NoneType', 'null').replace('dict', 'object')}, not a snapshot object"
    if d.get("format_version") != FORMAT_VERSION:
        return f"its format_version is {d.get('format_version')!r}, not {FORMAT_VERSION}"
    if d.get("snapshot") != number or type(d.get("snapshot")) is not int:
        return f"it says it is snapshot {d.get('snapshot')!r}, not {number}"
    for name, types in _FIELDS.items():
        if name in d and not isinstance(d[name], types):
            return f"its {name!r} is {d[name]!r}"
    if "time" not in d:
        return "it has no 'time'"
    tables = d.get("tables")
    if not isinstance(tables, dict):
        return "it has no 'tables' object" if tables is None else f"its 'tables' is {type(tables).__name__}, not an object"
    for name, pin in tables.items():
        if not TABLE_NAME.match(name):
            return f"it names a table {name!r}, which is no table name (a table is a folder of the root, named by a word)"
        version = pin.get("version") if isinstance(pin, dict) else None
        if type(version) is not int or version < 0:
            return f"its table {name} has version {version!r}, not a Delta version (a whole number from 0)"
        columns = pin.get("columns", [])
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            return f"its table {name} has columns {columns!r}, not a list of names"
        if not isinstance(pin.get(FILE_SCHEMA, ""), str):
            return f"its table {name} has {FILE_SCHEMA} {pin[FILE_SCHEMA]!r}, not a digest"
    return None


def committed_meanwhile(store, number: int) -> LeaseLost:
    """Snapshot ``number`` exists already: another writer committed it while this run held the lock (which
    only a lock file deleted by hand, or a lease taken over, allows). The tables are that writer's now: no repair."""
    return LeaseLost(
        f"{store.root}: snapshot {number} was committed by another writer while this run held the lock (was "
        f"{store.lock_path} deleted?); this run's snapshot was not written and nothing of it is in the warehouse "
        "(the next run repairs the tables): run again"
    )
