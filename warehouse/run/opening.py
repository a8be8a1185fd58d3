"""The root opened for writing, with the lock held: converted from the old layout, damaged snapshots set
aside, the tables checked and repaired to the last snapshot, before a run or a command writes.
"""

from __future__ import annotations

from warehouse.errors import NotASnapshot
from warehouse.run import damage
from warehouse.run.commit import repair
from warehouse.store.delta_damage import Damage
from warehouse.store.snapshots import SnapshotRecord
from warehouse.store.storage import Store


def open_for_writing(store: Store, say) -> tuple[SnapshotRecord, dict[str, Damage]]:
    """With the lock held, before a run writes: a root in the old layout converted (once), a damaged latest
    snapshot set aside, the tables checked (``damage.check``: what can be mended at once is) and repaired
    to the last snapshot (a run that died mid-commit undone, its files deleted); that snapshot, and what
    is still damaged in it (the run's ``damage.plan`` mends it, or says why it cannot)."""
    if store.legacy():
        from warehouse.run.upgrade import upgrade

        if not store.exists():  # (else what a conversion that died after its snapshot left: cleaned up)
            say(f"converting {store.root} to Delta Lake tables (once; docs/reading.md)...")
        upgrade(store)
    record = latest_readable(store, say)
    damaged, opened = damage.check(store, record, say)
    for line in repair(store, record, skip=set(damaged), warn=say, opened=opened):
        say(f"repaired: {line}")
    return record, damaged


def latest_readable(store: Store, say) -> SnapshotRecord:
    """With the lock held: the latest snapshot, after setting aside the damaged ones above the last readable
    one (``Store.set_aside``). A snapshot is a run's commit point: the one before it is a whole state, which
    ``repair`` then restores the tables to. With no readable snapshot left, the damaged one's error stands."""
    while True:
        try:
            return store.read_snapshot()
        except NotASnapshot as e:
            numbers = store.snapshot_numbers()
            if not numbers or e.number != numbers[-1] or store.last_readable(below=e.number) is None:
                raise
            where = store.set_aside(e.number)
            say(f"repaired: snapshot {e.number} was damaged ({e.what}): set aside as {where}; the warehouse goes "
                "back to the snapshot before it")
