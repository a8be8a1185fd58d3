"""The warehouse's tables as this installation has them: the core's (``warehouse.tables``) merged with
what every installed format adds (``Ingestor.columns``, ``Ingestor.tables``), and docs/tables.md made from them.

The core declares its tables knowing no format; this module is where the registry's formats join them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa

from warehouse.errors import FormatError
from warehouse.tables import CORE, TRAILING, Column, Table, duckdb_type

if TYPE_CHECKING:
    from warehouse.formatkit.ingestor import Ingestor


def compose(core: Iterable[Table], formats: Iterable["Ingestor"]) -> dict[str, Table]:
    """The core's tables with the columns each format adds, then each format's own tables.

    Formats come in detection order (``Ingestor.priority``), so the merge is the same on
    every machine with the same formats. A column two declarations make alike (name, type,
    JSON or not) is one column; one they make differently, or a table named twice, is a
    FormatError naming both.
    """
    tables = {t.name: t for t in core}
    owner = {t.name: "the core" for t in tables.values()}
    added: dict[str, list[Column]] = {}
    for fmt in formats:
        for name, columns in fmt.columns.items():
            table = tables.get(name)
            if table is None or not table.extensible:
                shared = ", ".join(t.name for t in tables.values() if t.extensible)
                raise FormatError(f"format {fmt.name!r} adds columns to {name!r}: formats add columns to {shared} "
                                  "only; declare a table of its own (Ingestor.tables) instead")
            mine = added.setdefault(name, [])
            for column in columns:
                same = next((c for c in (*table.columns, *mine) if c.name == column.name), None)
                if same is None:
                    mine.append(column)
                elif (same.type, same.json) != (column.type, column.json):
                    raise FormatError(f"format {fmt.name!r} declares {name}.{column.name} as {column.type}"
                                      f"{' JSON' if column.json else ''}, but it is {same.type}"
                                      f"{' JSON' if same.json else ''} already: use that type or another name")
        for table in fmt.tables:
            if table.name in tables:
                raise FormatError(f"format {fmt.name!r} declares the table {table.name!r}, which {owner[table.name]} "
                                  "declares already: choose another name")
            tables[table.name] = table
            owner[table.name] = f"format {fmt.name!r}"
    for name, columns in added.items():
        table = tables[name]
        at = len(table.columns)
        while at and table.columns[at - 1].name in TRAILING:
            at -= 1
        tables[name] = replace(table, columns=(*table.columns[:at], *columns, *table.columns[at:]))
    return tables


class _Declarations(Mapping):
    """``TABLES``: the core's tables merged with what the installed formats add, on first use.

    Built lazily because the formats' own modules import this one (for ``C``, ``Table``, ...):
    a format module must not read ``TABLES`` while it is being imported.
    """

    def __init__(self):
        self._tables: dict[str, Table] | None = None
        self._building = False

    def _get(self) -> dict[str, Table]:
        if self._tables is None:
            if self._building:
                raise RuntimeError("warehouse.formatkit.declared.TABLES was read while the formats that add to it were being "
                                   "imported: read it inside functions, not when a format's module is imported")
            from warehouse.formatkit.registry import Registry

            self._building = True
            try:
                self._tables = compose(CORE, Registry.installed().ingestors())
            finally:
                self._building = False
        return self._tables

    def loaded(self) -> bool:
        """Whether the tables have been composed in this process (the formats are loaded)."""
        return self._tables is not None

    def __getitem__(self, name: str) -> Table:
        return self._get()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return f"TABLES({', '.join(self._get())})"


#: every table of the warehouse by name: the core's, then the installed formats' (``compose``)
TABLES: Mapping[str, Table] = _Declarations()


def render_markdown() -> str:
    """The text of docs/tables.md (generated; a test fails when the file is stale)."""
    out = [
        "# Tables",
        "",
        "<!-- Generated from warehouse/tables.py and the installed formats by `python -m warehouse.docgen`. Do not edit. -->",
        "",
        "Every table is a view of the same name in `warehouse.connect(root)` and in `warehouse sql`.",
        "The views add the fields derived from paths (see [paths.md](paths.md)).",
        "",
        "| table | one row per |",
        "|---|---|",
    ]
    out += [f"| [`{t.name}`](#{t.name}) | {t.grain} |" for t in TABLES.values()]
    for t in TABLES.values():
        out += ["", f"## {t.name}", "", f"One row per {t.grain}. {t.doc}", "", "| column | type | doc |", "|---|---|---|"]
        out += [f"| `{c.name}` | `{duckdb_type(c)}` | {c.doc} |" for c in t.columns]
        if t.view_columns:
            listed = [c.name for c in t.columns if pa.types.is_list(c.type) and not pa.types.is_string(c.type.value_type)]
            out += ["", f"The view `{t.name}` shows one row per element of the lists ({', '.join(f'`{n}`' for n in listed)}), "
                    "with these columns in their place:", "", "| column | type | doc |", "|---|---|---|"]
            out += [f"| `{c.name}` | `{duckdb_type(c)}` | {c.doc} |" for c in t.view_columns]
    return "\n".join(out) + "\n"
