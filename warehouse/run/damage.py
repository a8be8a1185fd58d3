"""What a writer finds wrong with the tables a snapshot pins, and how its run mends it.

Under the lock, before an ``ingest`` or ``compact`` writes, every table the latest readable
snapshot pins is read at its pinned version and its data files are listed against the sizes
its Delta log recorded (``check``). What can be mended from what the warehouse holds is
mended at once: a damaged checkpoint or ``_last_checkpoint`` (the JSON commits say the same),
a damaged commit after the pinned version (no snapshot pins it). What was lost is mended by
the ingest's run, from the sources (``plan``):

* a data file missing, or not the size its log recorded: the run removes it from its table and
  reads again the sources whose rows it held: the catalogued paths between the file's smallest and
  largest ``source_path`` (the statistics the log keeps for it), their rows replaced in every table;
* a table whose log is lost (a commit it needs gone, empty or not JSON; its folder removed): the
  run sets the log aside and makes the table again from every catalogued source, read again;
* the catalog (``sources``) lost: every source some table holds rows of is read again, and the
  catalog written from them;
* ``path_fields`` lost in any way: written again from the catalog (readers compute it meanwhile).

A source that must be read again but is gone stops the run (nothing is changed) unless
``--prune`` says to drop its rows. A table deltalake cannot read although none of its files
looks damaged is left alone, and the run stops saying so (a log of a newer Delta writer must not
be taken for a damaged one).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from urllib.parse import unquote

from warehouse.errors import DamagedTable, StorageError, WarehouseError
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.declared_views import PATH_FIELDS
from warehouse.reading.damaged import damage_message
from warehouse.run.catalog import Catalog
from warehouse.store import delta, delta_damage, remote_root
from warehouse.store.delta_damage import Damage
from warehouse.store.readable import declared
from warehouse.store.snapshots import SnapshotRecord
from warehouse.store.storage import DAMAGED, STATE_DIR, Store


def check(store: Store, record: SnapshotRecord, say) -> tuple[dict[str, Damage], dict]:
    """Every table ``record`` pins, read at its latest version and at its pinned one (lock held): a damaged
    checkpoint or commit after the pinned version mended. Returns what else is wrong, by table, and the
    tables opened at their latest version (``commit.repair`` restores them to their pins)."""
    root = store.root  # a remote root's RootURL carries its storage options
    found: dict[str, Damage] = {}
    opened: dict = {}
    for name in declared(record):
        version = record.tables[name]["version"]
        damage, latest = _open(root, name, store.table_uri(name), version, say)
        if damage is None and (gap := delta_damage.log_gap(root, name, version)) is not None:
            if gap.kind != delta_damage.CHECKPOINT:
                damage = gap
            else:
                say(f"repaired: {delta_damage.mend(root, gap)}")
                damage, latest = _open(root, name, store.table_uri(name), version, say)
        if damage is None:
            pinned = latest if latest.version() == version else delta.open_table(store.table_uri(name), version)
            damage = delta_damage.data_damage(root, name, pinned)
        if damage is not None:
            found[name] = damage
        else:
            opened[name] = latest
    return found, opened


def _open(root: str, name: str, uri: str, version: int, say):
    """(None, the table at its latest version) when it opens there and at ``version`` (mending what can be
    mended first); else (what is wrong, None)."""
    mended = False
    while True:
        # Not under remote.writing_root: it would turn a log deltalake finds empty ("No files in log segment",
        # a removed table folder on a bucket) into a store error. A store that refuses (credentials, network)
        # refuses diagnose's listing too, which says so in its own one line.
        try:
            latest = delta.open_table(uri)  # a writer commits on top of it (or restores it)
            if latest.version() != version:
                delta.open_table(uri, version)
            return None, latest
        except WarehouseError:
            raise
        except Exception as e:  # noqa: BLE001 - deltalake's errors for a log damaged or gone
            if not (delta.is_delta_error(e) or isinstance(e, OSError)):
                raise  # a fault of our own code keeps its traceback
            damage = delta_damage.diagnose(root, name, version, e)
            if damage.kind not in (delta_damage.CHECKPOINT, delta_damage.BEYOND) or mended:
                return damage, None
            say(f"repaired: {delta_damage.mend(root, damage)}")
            mended = True


@dataclass
class Mending:
    """What this run mends of the tables ``check`` found damaged (``damaged``)."""

    damaged: dict[str, Damage] = field(default_factory=dict)
    #: table -> its lost data files (relative to the table's folder): removed without being read
    lost: dict[str, set[str]] = field(default_factory=dict)
    #: tables whose log is lost: made again (their damaged log set aside at the commit)
    remake: set[str] = field(default_factory=set)
    #: catalogued sources read again whatever the catalog says, their rows replaced in every table
    reread: set[str] = field(default_factory=set)
    #: sources to read again that are gone: their rows dropped (only with --prune)
    dropped: set[str] = field(default_factory=set)
    #: the catalog is lost: it is written from the sources read again
    catalog_lost: bool = False

    def __bool__(self) -> bool:
        return bool(self.damaged)

    def said(self) -> list[str]:
        """What the run does about each damaged table, one line each."""
        out = []
        for name, d in sorted(self.damaged.items()):
            if name == PATH_FIELDS:
                how = "written again from the catalog"
            elif name == "sources":
                how = "the catalog is written again from the sources the tables hold rows of, read again"
            elif name in self.remake:
                how = "its log is set aside and the table made again from its sources, read again"
            else:
                how = "the file is dropped and the sources whose rows it held read again"
            out.append(f"table {name}: {d.what}: {how}")
        if self.reread:
            out.append(f"{len(self.reread)} sources to read again")
        if self.dropped:
            out.append(f"{len(self.dropped)} of those sources are gone (e.g. {sorted(self.dropped)[0]}): their rows "
                       "are dropped (--prune)")
        return out

    @property
    def forced(self) -> set[str]:
        """The sources whose rows every table drops, whatever the catalog says."""
        return self.reread | self.dropped


def load_catalog(store: Store, record: SnapshotRecord) -> Catalog:
    """The catalog ``record`` pins, for a command that reads it outside a run (``tokenize``): a damaged one is its
    one line (the next ingest writes it again)."""
    try:
        return Catalog.load(store, record)
    except Exception as e:  # noqa: BLE001 - deltalake's errors for its log; pyarrow's for its file
        if not (delta.is_delta_error(e) or isinstance(e, (OSError, ValueError))):
            raise
        root, version = store.root, record.tables["sources"]["version"]
        try:
            found = delta_damage.data_damage(root, "sources", delta.open_table(store.table_uri("sources"), version),
                                      footers=True)
        except Exception as again:  # noqa: BLE001 - its log
            found = delta_damage.diagnose(root, "sources", version, again)
        if found is None:
            raise
        raise DamagedTable(damage_message(root, found), table="sources", path=found.path) from None


def refuse(store: Store, damaged: dict[str, Damage]) -> None:
    """For a writer that does not read sources (``compact``): the first damage it cannot mend, as the error."""
    for d in damaged.values():
        raise DamagedTable(damage_message(str(store.root), d) + "; compact after it", table=d.table, path=d.path)


def plan(store: Store, record: SnapshotRecord, damaged: dict[str, Damage], catalog_rows: dict[str, dict],
         *, prune: bool) -> Mending:
    """How this ingest mends ``damaged``: which files it removes, which tables it makes again, which sources
    it reads again (``catalog_rows``: the catalog, when it is not what was lost). Raises when it cannot."""
    root = store.root  # a remote root's RootURL carries its storage options
    m = Mending(damaged=dict(damaged))
    for name, d in damaged.items():
        if d.kind not in (delta_damage.DATA, delta_damage.LOST_LOG):
            raise DamagedTable(damage_message(root, d), table=name, path=d.path)
        if d.kind == delta_damage.LOST_LOG:
            m.remake.add(name)
        else:
            m.lost[name] = set(d.files)
    m.catalog_lost = "sources" in damaged
    known = _paths_in_tables(store, record, damaged) if m.catalog_lost else set(catalog_rows)
    if m.catalog_lost:
        m.reread |= known  # the catalog is made again from what reading them again gives
    for name in m.remake:
        if name in TABLES and TABLES[name].per_source:
            m.reread |= known  # which sources it held rows of is lost with its log: every one
    for name, files in m.lost.items():
        if name in TABLES and TABLES[name].per_source:
            m.reread |= _paths_in_files(store, record, name, files, known)
    gone = {p for p in m.reread if not store.filesystems.isfile(p)}
    if gone and not prune:
        d = next(iter(damaged.values()))
        example = sorted(gone)[0]
        raise StorageError(
            f"{damage_message(root, d).split('; ')[0]}: {len(gone)} of the sources whose rows it held cannot be "
            f"read again (e.g. {example}): make them readable again and run again, or run with --prune to drop "
            "their rows (nothing was changed)")
    m.dropped, m.reread = gone, m.reread - gone
    return m


def _paths_in_files(store: Store, record: SnapshotRecord, table: str, files: set[str], known: set[str]) -> set[str]:
    """The paths of ``known`` that may have rows in ``files`` of ``table``: between each file's smallest and
    largest ``source_path`` as its log recorded them (every path, for a file without those statistics)."""
    actions = delta.add_actions(store.table_uri(table), record.tables[table]["version"]).to_pylist()
    out = set()
    for a in actions:
        if unquote(a["path"]) not in files:
            continue
        lo, hi = a.get("min.source_path"), a.get("max.source_path")
        out |= known if lo is None or hi is None else {p for p in known if lo <= p <= hi}
    return out


def _paths_in_tables(store: Store, record: SnapshotRecord, damaged: dict[str, Damage]) -> set[str]:
    """Every source path some readable per-source table holds rows of: the sources of a lost catalog."""
    import pyarrow.parquet as pq

    out: set[str] = set()
    for name in declared(record):
        if name in damaged or name not in TABLES or not TABLES[name].per_source:
            continue
        for f in delta.live_files(store.table_uri(name), record.tables[name]["version"]):
            fs, where = store.filesystems.path(f)
            column = pq.ParquetFile(where, filesystem=fs).read(columns=["source_path"])["source_path"]
            out |= {p for p in column.unique().to_pylist() if p is not None}
    return out


def set_aside_log(store: Store, table: str, run_id: str) -> str | None:
    """Move a lost table's damaged Delta log out of its folder, so the table can be made again there; where
    it went (None: there was none). Kept under ``.warehouse/damaged/`` for a look, never read."""
    src = f"{store.table_uri(table)}/{delta.LOG}"
    dst = f"{store.root}/{STATE_DIR}/{DAMAGED}/{table}-{run_id}-{delta.LOG}"
    if store.remote:
        names = remote_root.list_objects(store.filesystems, src, recursive=True)
        for name, _ in names:
            data = store.filesystems.read(f"{src}/{name}")
            if data is not None:
                remote_root.create_object(store.filesystems, f"{dst}/{name}", data)
            remote_root.delete_object(store.filesystems, f"{src}/{name}")
        return dst if names else None
    if not os.path.lexists(src):
        return None
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.move(src, dst)
    return dst


def drop_new_log(store: Store, table: str) -> None:
    """A run that made a lost table again and then failed: the log it made is removed, so the table is as
    the run found it (lost; the next run makes it again)."""
    src = f"{store.table_uri(table)}/{delta.LOG}"
    if store.remote:
        for name, _ in remote_root.list_objects(store.filesystems, src, recursive=True):
            remote_root.delete_object(store.filesystems, f"{src}/{name}")
    else:
        shutil.rmtree(src, ignore_errors=True)
