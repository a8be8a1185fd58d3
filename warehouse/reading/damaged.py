"""What a reader is told about a damaged table: the one line that names the table, the damage, the file and
what to do (``damage_message``), and the error a query that met one raises (``damage_error``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from warehouse.errors import DamagedTable
from warehouse.formatkit.declared_views import PATH_FIELDS

if TYPE_CHECKING:  # imported where a damage is told: a cold query on a sound root does without it
    from warehouse.store.delta_damage import Damage

#: how a damaged table's message reads, inside the error DuckDB raises for a query on its view
_DAMAGED_IN_ERROR = re.compile(r"Invalid Input Error: (.*?: table (\w+) is damaged: .*)")


#: the relation of a remote root's table (``register_remote_files``), named in the error of a failed read
_ARROW_IN_ERROR = re.compile(r"_warehouse_arrow_(\w+)'? failed: (.*)")


def damage_error(e: BaseException, root: str) -> DamagedTable | None:
    """For a query's error that is a damaged table's (its view's message, or a remote root's data file that
    could not be read): the one-line error to raise instead; None for any other error."""
    text = str(e)
    m = _DAMAGED_IN_ERROR.search(text)
    if m:
        return DamagedTable(m.group(1).strip(), table=m.group(2))
    m = _ARROW_IN_ERROR.search(text)
    if m:
        name = m.group(1)
        return DamagedTable(f"{root}: table {name} is damaged: a data file of it cannot be read "
                            f"({m.group(2).splitlines()[0]}); {REREAD}", table=name)
    return None


#: what to do about a table that lost data files or its log: the next ingest reads its sources again
REREAD = "the next `warehouse ingest` into this root reads again the sources whose rows were in it"


def damage_message(root: str, d: Damage) -> str:
    """The one line for a damaged table: the table, the damage, the file, what to do."""
    from warehouse.store import delta_damage

    if d.table == PATH_FIELDS:
        fix = "the views compute it from the catalog meanwhile, and the next `warehouse ingest` writes it again"
    elif d.kind in (delta_damage.CHECKPOINT, delta_damage.BEYOND):
        fix = f"`warehouse compact --root {root}` (or the next `warehouse ingest`) mends it"
    elif d.kind == delta_damage.UNKNOWN:
        fix = (f"if it stays so, move {root}/{d.table} away: the next `warehouse ingest` then makes the table "
               "again from its sources")
    elif d.table == "sources":
        fix = ("the next `warehouse ingest` into this root rebuilds the catalog by reading again every source "
               "the tables hold rows of")
    elif d.kind == delta_damage.LOST_LOG:
        fix = "the next `warehouse ingest` into this root makes the table again, reading its sources again"
    else:
        fix = REREAD
    where = f" ({d.path})" if d.path and d.path not in d.what else ""
    return f"{root}: table {d.table} is damaged: {d.what}{where}; {fix}"
