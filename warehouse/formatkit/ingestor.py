"""The contract every source format implements.

A format is one package with one ``Ingestor`` subclass, registered as an entry
point in the group ``warehouse.formats`` (``warehouse/formatkit/registry.py``). It has
three jobs, and no others:

* ``sniff``: say whether a file is of its format, from the path and the first
  64 KiB (detection must be cheap: it runs for every file walked);
* ``records``: split a file into records (usually one of the helpers in
  ``warehouse.formatkit.readers``);
* ``map``: turn one decoded record into rows, a pure function. It raises
  ``RecordError`` to quarantine the record; it never touches storage and adds
  no provenance: the record sink (``warehouse.run.sink``) fills ``source_path``, ``source_locator`` and
  ``source_format`` and validates every row against ``warehouse.tables``.

Everything else a format may offer is an optional capability, declared below as
a class attribute with its default: the core reads these attributes and nothing
else (it never asks what a format is called or which class it is).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from warehouse.formatkit.records import Mapped, Record, RecordContext
from warehouse.formatkit.source import SourceFile

if TYPE_CHECKING:
    from warehouse.formatkit.exporter import ExportFormat
    from warehouse.tables import Column, Table

#: files of these kinds are always looked at, claimed by a format or not (an unclaimed
#: one is quarantined as unrecognised); other suffixes only when a format declares them
#: (``suffixes``), and a file of such a kind that no format claims is passed over
JSON_SUFFIXES = (".json", ".jsonl")

#: views of the core (``sql/``) whose rules are a format's, which ``Ingestor.defines`` may give: the fields a
#: source file's path encodes (``path_fields``), the parameters a folder's responses were generated with
#: (``generation_params``). The core's own statement gives their columns, NULL (no rows for the latter).
DEFINABLE_VIEWS = ("path_fields", "generation_params")


class Ingestor(ABC):
    # --- who it is ---------------------------------------------------------------------
    #: the ``--format`` value, the entry point's name, the package name and the fixtures folder name
    name: ClassVar[str]
    #: one line for ``--help`` and docs
    description: ClassVar[str]
    #: lower-case file suffixes this format can read. The walk looks at every file of these kinds;
    #: one that is not JSON (a zip, a tensor file) and that no format's ``sniff`` claims is passed over
    suffixes: ClassVar[tuple[str, ...]] = (".json",)
    #: detection order: formats are asked in ascending priority (ties by name), and the first
    #: whose ``sniff`` accepts a file reads it. Give a format that claims broadly a higher number
    #: than the narrower ones it must not take files from. Its columns also join the shared
    #: tables in this order.
    priority: ClassVar[int] = 100

    # --- how its files are read ------------------------------------------------------------
    #: False for catalogs built from paths alone (tensor files): the file is never
    #: opened, ``sniff`` gets an empty head, and ``map`` one record holding the file's stat.
    #: Such formats are asked (from the path) before any file is opened.
    reads_content: ClassVar[bool] = True
    #: True when, in a .jsonl file, every line is read on its own: large files are then
    #: split at line boundaries and the pieces ingested in parallel
    line_records: ClassVar[bool] = False
    #: True when the format implements ``fast_lines`` (a vectorised path for JSONL blocks)
    fast_path: ClassVar[bool] = False
    #: True when the format implements ``fast_document`` and ``fast_documents`` (many whole .json
    #: files mapped at once: a run of many small files pays no per-record mapping in Python)
    fast_documents_path: ClassVar[bool] = False
    #: modules the fast paths use (pyarrow.compute, pyarrow.json...) that the format imports where
    #: they run, not when it loads: the run's own process needs ``sniff``, the suffixes and the
    #: columns, and an unchanged run no more. A pool's forkserver imports them before forking
    #: its workers (``pool.preload_modules``), so no worker imports them itself.
    worker_modules: ClassVar[tuple[str, ...]] = ()

    # --- what it adds to the warehouse --------------------------------------------------------
    #: columns it adds to the shared tables, ``{table name: (Column, ...)}``; merged into
    #: ``warehouse.formatkit.declared.TABLES`` when the registry loads the installed formats. A column
    #: another format declares the same way (name, type) is one column.
    columns: ClassVar[Mapping[str, tuple["Column", ...]]] = {}
    #: tables only this format writes (``Table`` declarations), added to ``TABLES``
    tables: ClassVar[tuple["Table", ...]] = ()
    #: SQL statements (``CREATE OR REPLACE VIEW ...``) making its own views, run after the
    #: views of ``sql/``, so they may read every view there
    views: ClassVar[tuple[str, ...]] = ()
    #: statements of views the core reads and leaves to a format (``DEFINABLE_VIEWS``), ``{view name:
    #: "CREATE OR REPLACE VIEW <name> AS ..."}``, with the columns (names, types, order) of the core's own
    #: statement in ``sql/``, which they replace where it runs: the core's views read them (``responses``
    #: joins both), whatever format wrote the rows. When several installed formats define one, the first in
    #: detection order gives it.
    defines: ClassVar[Mapping[str, str]] = {}
    #: sections of ``warehouse stats`` of its own, ``{name: SQL query over the views}``: each result is shown
    #: after the core's counts, headed by ``name`` (underscores as spaces; one without rows is left out), and
    #: in ``--format json`` under ``name`` as a list of objects
    stats_queries: ClassVar[Mapping[str, str]] = {}

    # --- what exports may ask of it -------------------------------------------------------------
    #: ``warehouse export --format <name>``: the selection written back in this format, with the
    #: export kit (``warehouse.exports.kit``, docs/export.md#writing-an-exporter). May be a property
    #: that imports it (``exporter_in``): the built-in formats' are, as every ingest loads every
    #: format and needs none of them
    exporter: ClassVar["ExportFormat | None"] = None
    #: SQL selecting ``(response_id, prompt)``: the plain user prompt of selected responses
    #: (temp table ``selected``) whose ``responses.prompt`` holds more than the user's message
    #: (a chat template around it); at most one row per response. Conversations use it
    #: instead of ``responses.prompt`` (``warehouse.exports.kit.USER_PROMPT``).
    user_prompts_sql: ClassVar[str | None] = None

    @abstractmethod
    def sniff(self, path: str, head: bytes) -> bool:
        """True when the file at ``path`` (first bytes ``head``, without a BOM) is of this format.

        Raises: nothing; a file it cannot judge is not of its format (return False).
        """

    @abstractmethod
    def records(self, src: SourceFile) -> Iterator[Record]:
        """The file's records, streamed; decoding failures come as records with ``error`` set.

        Raises: ``RecordError`` (e.g. ``ReferenceRefused``) when the rest of the file cannot be
        read (it is quarantined as one record, the records before it kept); ``OSError`` when
        reading fails; ``UsageError`` when a tool the run was given fails (a tokenizer that does
        not load): the run stops and changes nothing. Any other exception is a bug: the rest of
        the file is quarantined.
        """

    @abstractmethod
    def map(self, record: Record, ctx: RecordContext) -> Mapped:
        """Rows for one record: ``{table name: [row, ...]}``.

        Raises: ``RecordError`` to quarantine the record whole (its ``sub_locator`` narrows
        where); ``UsageError`` as ``records``. Any other exception is a bug: the record is
        quarantined saying so.
        """

    def option_problem(self, name: str, value: Any) -> str | None:
        """Optional: why this format could not use the run option ``name`` = ``value`` (a tool it
        needs is not installed, or the value names nothing it can load), with what to do; None
        when it can, or when the option is not one it reads.

        Asked in the run's own process before anything is read or changed, for every option the
        run holds (given now or remembered from an earlier run): a tool's problem is a usage
        error, never a quarantined record. Asked on every run, an unchanged one included, so keep
        it cheap (no heavy import): a problem only loading finds is a ``UsageError`` raised where
        the format loads the tool.

        Raises: nothing.
        """
        return None

    def not_records(self, path: str) -> str | None:
        """Optional: why the file at ``path`` holds no records, when this format knows it does not.

        Formats write files beside their records that are not records (a run's
        aggregate scores, a configuration). Such a file is catalogued with status
        ``not_records`` and this reason, never opened, never quarantined, and does
        not stop ``--strict``. Decided from the path alone; asked of every format for
        every file walked, so keep it cheap. None (the default): no opinion.

        Raises: nothing.
        """
        return None

    def fast_lines(self, data: bytes, path: str, first_line: int) -> "FastResult | None":
        """Optional (``fast_path = True``): map a block of JSONL lines at once, vectorized.

        ``data`` holds whole lines, the first being line ``first_line``: a buffer (``bytes``, or an
        Arrow buffer for a piece of a large file: ``SourceFile.buffer``), not always ``bytes``. Return the
        tables (with every provenance column filled) of the lines it maps, and in
        ``FastResult.rest`` the lines it leaves to ``records``/``map`` (any line it
        cannot map exactly: those quarantine exactly); or None to leave the whole
        block to them. The rows must be the ones ``map`` would give; a test holds
        each fast path to that. The tables pass Arrow's full validation before any
        row is kept (else the whole block goes the record path).

        Raises: nothing on bad input (hand it back instead); ``NotImplementedError`` when
        the format declares no fast path.
        """
        raise NotImplementedError(f"format {self.name!r} has no fast path (fast_path = False)")

    def fast_document(self, path: str, head: bytes, data: bytes) -> bool:
        """Optional (``fast_documents_path = True``): whether the whole .json file ``path`` (bytes
        ``data``, first bytes ``head`` without a BOM) goes to ``fast_documents``; False: it goes
        through ``records``/``map`` now. Called for every such file, so keep it cheap: a file it
        takes may still be handed back by ``fast_documents``.

        Raises: nothing on bad input (return False instead).
        """
        return False

    def fast_documents(self, docs: list[tuple[str, bytes]]) -> "FastResult | None":
        """Optional: map many whole files ``fast_document`` took, ``(path, bytes)``, at once: the tables
        (every provenance column filled) of the files it maps, each one record at locator "", the rows
        ``map`` would give; in ``FastResult.rest`` the indices (in ``docs``) of the files it leaves to
        ``records``/``map``; or None to leave them all. The tables pass Arrow's full validation before
        any row is kept (else every file goes the record path). A test holds each format's document
        path to the record path.

        Raises: nothing on bad input.
        """
        return None


class FastResult:
    """What a fast path made of a block: Arrow tables by name, how many records they hold,
    and the lines it left to the record path, as (line number, line bytes); of many documents
    (``fast_documents``), the indices of the documents it left.

    ``validated``: every string in the tables was built from strings that passed Arrow's full
    validation (or from bytes that are all ASCII), so the sink need not validate them again
    (``writer.check_batch``: ~0.4 CPU-s per GB of conversation JSONL)."""

    __slots__ = ("tables", "records", "rest", "validated")

    def __init__(self, tables: dict, records: int, rest: list[tuple[int, bytes]] | None = None,
                 validated: bool = False):
        self.tables = tables
        self.records = records
        self.rest = rest or []
        self.validated = validated


def exporter_in(module: str) -> property:
    """``Ingestor.exporter`` as the ``EXPORT`` of ``module``, imported when an export asks for it:
    an ingest loads every format, and an unchanged run should not pay for their exporters."""

    def exporter(self) -> "ExportFormat":
        return importlib.import_module(module).EXPORT

    return property(exporter, doc=exporter.__doc__)
