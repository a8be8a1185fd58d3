"""What an export format is, as the registry and a format's ``Ingestor.exporter`` know it: a name, what it
writes, and the function that writes it from a connection holding the selection (``warehouse.exports``
runs it; ``warehouse.exports.kit`` has the helpers a writer is built from)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb


@dataclass
class ExportContext:
    """What a format's writer gets: a connection with the selection, and where to write."""

    con: duckdb.DuckDBPyConnection
    out: str  # a temporary path: a file or a directory, per the format
    total: int  # responses selected
    progress: Callable[[int], None]  # call with the number of responses written so far
    notes: list[str] = field(default_factory=list)  # said on stderr after the export
    target: str = ""  # the final --out path (``out`` is renamed to it at the end): its name may choose a layout


@dataclass(frozen=True)
class ExportFormat:
    name: str
    description: str
    directory: bool  # writes a directory (else a single file)
    write: Callable[[ExportContext], int]  # returns how many responses it wrote
    #: what a single file's --out must end with to be read back by ``warehouse ingest``, which tells a
    #: source format's files by their extension (a source format's file; empty: any name)
    suffixes: tuple[str, ...] = ()
