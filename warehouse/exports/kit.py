"""The export kit: what an export format uses to write the selection, and all it may use.

An export format is an ``ExportFormat`` whose ``write(ctx)`` gets an ``ExportContext``:
``ctx.con`` is a sandboxed DuckDB connection over the warehouse's views, holding the
selection (temp tables ``selected(response_id, ...)`` and ``selected_records(record_id)``),
and ``ctx.out`` is where to write. The generic formats (``warehouse.exports.generic``) and
every installed format's exporter (``Ingestor.exporter``) are written with this module
alone (``tests/test_architecture.py`` holds the format packages to it). docs/export.md
says how to write one.

**Staging.** Output that nests a response's children (its messages, annotations, ...)
is built from temporary tables in output order, keyed by ``n``, the position of a
*parent* (a response, or a group of responses written together: a record, a document),
and read back a window of ``BATCH`` parents at a time. DuckDB spills those tables to
disk under the export's memory limit, where one query aggregating the lists of a whole
large selection would not fit.

* ``stage``: ``staged(n, <columns>)``, one row per parent in output order, and
  ``staged_keys(n, response_id, record_id)``, the selected responses of each parent
  (``take_along`` adds records that come with a parent without a response of their own);
* ``stage_children``: ``staged_<table>(n, row, k)``, the rows of a child table that belong
  to each parent, ``k`` their place in its list. The joins are generated from the table's
  declared parent link (``warehouse.tables.Parent``): its own rows by ``response_id``,
  the rows about its whole record by ``record_id``; ``k`` is the link's declared order;
* ``stage_conversations``: what the conversation of a response needs (``conversation``);
* ``windows``, ``window`` and ``window_sql``: the staged parents a window at a time, with their
  lists, as Python rows or as a query.

**Conversations.** ``conversation(row)`` is the one rule every export that writes
messages follows (``warehouse.exports.conversation``); ``conversations(ctx)`` stages the
selection and yields each response's row for it.

**JSON.** ``loads``, ``dumps``, ``dumps_stdlib``, ``loads_checked``, ``json_value`` and
``deep_recursion`` read and write any value the warehouse holds: NaN, integers wider
than 64 bits, values nested deeper than orjson goes (``warehouse.exports.jsontext``).

**Notes.** What a format cannot carry is counted on stderr, never dropped silently:
``note_not_carried``, ``note_left_out``, ``count_belonging`` and ``rows_text``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

import pyarrow as pa

from warehouse.exports.conversation import ANSWER_FIELDS, TURN_FIELDS, Conversation, conversation, media_of, text_of
from warehouse.exports.jsontext import deep_recursion, dumps, dumps_stdlib, json_value, loads, loads_checked
from warehouse.exports.names import fit, safe_parts, safe_path
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.exporter import ExportContext, ExportFormat
from warehouse.tables import CORE, Parent

__all__ = [
    "BATCH", "CONVERSATION_COLUMNS", "CONVERSATION_LISTS", "Conversation", "ExportContext", "ExportFormat", "USER_PROMPT",
    "batches", "belongs", "children", "children_sql",
    "conversation", "conversations", "core_children", "count_belonging", "deep_recursion", "dumps", "dumps_stdlib",
    "fit", "json_value", "loads", "loads_checked", "media_of", "note_left_out", "note_not_carried", "ordered_by", "rows_sql",
    "rows_text", "safe_parts", "safe_path", "selected_responses_sql", "stage", "stage_children",
    "stage_conversations", "take_along", "text_of", "window", "window_sql", "windows",
]

#: parents per window, and rows per Arrow batch of flat output
BATCH = 20_000

#: in ``stage``'s columns (with ``user_prompts=True``): the user's own message, where a format
#: says how to find it (``Ingestor.user_prompts_sql``), else ``responses.prompt``
USER_PROMPT = "coalesce(u.prompt, r.prompt)"


# --- the declarations -------------------------------------------------------------------------------------


def children() -> tuple[str, ...]:
    """Every table whose rows belong to responses (it declares a ``Parent``), in ``TABLES`` order."""
    return tuple(name for name, t in TABLES.items() if t.parent is not None)


def core_children() -> tuple[str, ...]:
    """The core's child tables: turns, sentence boundaries, annotations, evaluations."""
    return tuple(t.name for t in CORE if t.parent is not None)


#: responses are their own parents' rows: a staged response's row is itself
_RESPONSES = Parent(by=("response_id",), order=())


def _parent(table: str) -> Parent:
    if table == "responses":
        return _RESPONSES
    parent = TABLES[table].parent
    if parent is None:
        raise ValueError(f"table {table}: declares no parent (warehouse.tables.Parent): its rows belong to no response")
    return parent


def ordered_by(table: str, alias: str = "c") -> str:
    """``ORDER BY`` the table's declared total order (``Table.order``), columns qualified by ``alias``."""
    return "ORDER BY " + ", ".join(f"{alias}.{col}" for col in TABLES[table].order)


def selected_responses_sql() -> str:
    """The selected responses, every column of the ``responses`` view, as ``r``."""
    return "SELECT r.* FROM responses AS r WHERE r.response_id IN (SELECT response_id FROM selected)"


def belongs(table: str, responses: str = "selected", records: str = "selected_records") -> str:
    """SQL on ``c``: the row belongs to a response of ``responses`` (a relation with response_id), or is
    about the whole record of one of ``records`` (with record_id): the table's declared link."""
    by, t = _parent(table).by, TABLES[table]
    own = f"c.response_id IN (SELECT response_id FROM {responses})" if "response_id" in by else "false"
    if "record_id" not in by:
        return own
    whole = f"c.record_id IN (SELECT record_id FROM {records})"
    return f"({own} OR (c.response_id IS NULL AND {whole}))" if t.has("response_id") else whole


def rows_sql(table: str) -> str:
    """The rows of a child table that belong to the selection, every column, in the table's order."""
    return f"SELECT c.* FROM {table} AS c WHERE {belongs(table)} {ordered_by(table)}"


def batches(ctx: ExportContext, sql: str, count_responses: bool = False) -> Iterator[pa.RecordBatch]:
    """The rows of ``sql`` in Arrow batches of ``BATCH``; progress counts them when they are responses."""
    done = 0
    for batch in ctx.con.sql(sql).to_arrow_reader(BATCH):
        yield batch
        if count_responses:
            done += batch.num_rows
            ctx.progress(done)


# --- staging ---------------------------------------------------------------------------------------------


def stage(ctx: ExportContext, *, order: str | None = None, columns: str = "r.*", where: str = "true",
          join: str = "", per: tuple[str, ...] = (), user_prompts: bool = False) -> int:
    """Stage the selected responses (``r``, the ``responses`` view) for which ``where`` holds; the number
    of parents staged.

    Each response is its own parent, unless ``per`` (SQL over ``r``) names what several share (a
    record: ``("r.record_id",)``). ``order`` (SQL ``ORDER BY`` terms) places the parents: over ``r``
    (default: the responses' declared order), or, with ``per``, over the group (aggregates of
    ``r``, or ``per``'s terms). ``columns`` are each parent's, over ``r`` (aggregates with ``per``);
    ``join`` joins other relations to ``r`` (a format's own plan of where each response goes);
    ``user_prompts`` joins ``u`` (``USER_PROMPT``). Makes ``staged(n, <columns>)`` sorted by ``n``
    (1, 2, ...; with ``per`` also ``per_0, per_1, ...``) and ``staged_keys(n, response_id, record_id)``.
    """
    con = ctx.con
    order = order or ", ".join(f"r.{col}" for col in TABLES["responses"].order)
    chosen = f"WHERE r.response_id IN (SELECT response_id FROM selected) AND ({where})"
    prompts = ""
    if user_prompts:
        _stage_user_prompts(ctx)
        prompts = "LEFT JOIN staged_user_prompts AS u ON u.response_id = r.response_id"
    if not per:
        con.execute(f"CREATE OR REPLACE TEMP TABLE staged_keys AS SELECT row_number() OVER (ORDER BY {order}) AS n, "
                    f"r.response_id, r.record_id FROM responses AS r {join} {chosen}").fetchall()
        con.execute(f"CREATE OR REPLACE TEMP TABLE staged AS SELECT k.n, {columns} FROM staged_keys AS k "
                    f"JOIN responses AS r ON r.response_id = k.response_id {join} {prompts} ORDER BY k.n").fetchall()
    else:
        keys = ", ".join(f"{term} AS per_{i}" for i, term in enumerate(per))
        con.execute(f"CREATE OR REPLACE TEMP TABLE staged AS SELECT row_number() OVER (ORDER BY {order}) AS n, {keys}"
                    f"{', ' + columns if columns else ''} FROM responses AS r {join} {prompts} {chosen} "
                    f"GROUP BY {', '.join(per)} ORDER BY n").fetchall()
        same = " AND ".join(f"s.per_{i} IS NOT DISTINCT FROM {term}" for i, term in enumerate(per))
        con.execute(f"CREATE OR REPLACE TEMP TABLE staged_keys AS SELECT s.n, r.response_id, r.record_id "
                    f"FROM responses AS r {join} JOIN staged AS s ON {same} {chosen}").fetchall()
    return con.execute("SELECT count(*) FROM staged").fetchall()[0][0]


def take_along(ctx: ExportContext, sql: str) -> None:
    """Stage more records with their parents: ``sql`` selects ``(n, record_id)``, records none of whose
    responses is selected but whose rows about the whole record go with parent ``n`` (a thread's own
    annotations, with the turns of the thread that are selected)."""
    ctx.con.execute(f"INSERT INTO staged_keys (n, record_id) SELECT DISTINCT n, record_id FROM ({sql})").fetchall()


def children_sql(table: str, *, row: str = "c", order: Iterable[str] = (), where: str = "true",
                 parents: str | None = None) -> str:
    """``SELECT n, row, k``: the rows ``c`` of ``table`` that belong to each staged parent, by the table's
    declared link (``warehouse.tables.Parent``): a staged response's own rows, and its record's rows
    about the whole record (once per parent). ``table`` may be ``responses``: the staged responses.

    ``row`` is what to keep of each (SQL over ``c``; default the whole row); ``k`` orders a parent's
    list: ``order`` (SQL over ``c``, and ``row``) if given, then the declared order, so it is total.
    ``where`` (SQL over ``c``) keeps some of the rows; ``parents`` (SQL over the staged parent ``p``)
    some of the parents.
    """
    link = _parent(table)
    terms = [*order, *(f"c.{col}" for col in (link.order or TABLES[table].order))]
    k = "{" + ", ".join(f"'k{i}': {term}" for i, term in enumerate(terms)) + "}"
    only = f" AND s.n IN (SELECT p.n FROM staged AS p WHERE {parents})" if parents else ""
    select = f"SELECT s.n, {row} AS row, {k} AS k"
    parts = []
    if "response_id" in link.by:
        parts.append(f"{select} FROM staged_keys AS s JOIN {table} AS c ON c.response_id = s.response_id "
                     f"WHERE ({where}){only}")
    if "record_id" in link.by:  # a second equi-join, not an OR: that would not hash
        none = " AND c.response_id IS NULL" if TABLES[table].has("response_id") else ""
        parts.append(f"{select} FROM (SELECT DISTINCT n, record_id FROM staged_keys) AS s JOIN {table} AS c "
                     f"ON c.record_id = s.record_id{none} WHERE ({where}){only}")
    return "\nUNION ALL\n".join(parts)


def stage_children(ctx: ExportContext, table: str, *, name: str | None = None, row: str = "c",
                   order: Iterable[str] = (), where: str = "true", parents: str | None = None) -> None:
    """``staged_<name>(n, row, k)`` (``name`` defaults to the table's): ``children_sql``, sorted by ``n``."""
    sql = children_sql(table, row=row, order=order, where=where, parents=parents)
    ctx.con.execute(f"CREATE OR REPLACE TEMP TABLE staged_{name or table} AS SELECT * FROM ({sql}) ORDER BY n").fetchall()


def stage_conversations(ctx: ExportContext, parents: str | None = None) -> None:
    """What ``conversation()`` needs of each staged parent (of those for which ``parents``, SQL over the
    staged parent ``p``, holds): ``staged_conversation_turns``, every message of its record (a
    response's conversation may hold other responses' messages: earlier exchanges), and
    ``staged_conversation_answers``, its record's answers that are not messages. ``window`` reads
    them as the row's ``turns`` and ``answers`` with ``CONVERSATION_LISTS``."""
    only = f" WHERE s.n IN (SELECT p.n FROM staged AS p WHERE {parents})" if parents else ""
    records = "(SELECT DISTINCT n, record_id FROM staged_keys) AS s"
    turns = ", ".join(f"'k{i}': c.{col}" for i, col in enumerate(TABLES["turns"].parent.order))
    for name, sql in (
        ("turns", f"SELECT s.n, {TURN_FIELDS} AS row, {{{turns}}} AS k FROM {records} "
                  f"JOIN turns AS c ON c.record_id = s.record_id{only}"),
        ("answers", f"SELECT s.n, {ANSWER_FIELDS} AS row, {{'k0': c.candidate_index, 'k1': c.response_id}} AS k "
                    f"FROM {records} JOIN responses AS c ON c.record_id = s.record_id AND c.answers_turn IS NOT NULL{only}"),
    ):
        ctx.con.execute(f"CREATE OR REPLACE TEMP TABLE staged_conversation_{name} AS SELECT * FROM ({sql}) ORDER BY n").fetchall()


#: ``window`` lists for ``conversation()``: the row's ``turns`` and ``answers``
CONVERSATION_LISTS = {"turns": "conversation_turns", "answers": "conversation_answers"}


def _stage_user_prompts(ctx: ExportContext) -> None:
    """``staged_user_prompts(response_id, prompt)``: the plain user prompt of the selected responses whose
    ``prompt`` holds more than the user's message, from the formats that say how to find it
    (``Ingestor.user_prompts_sql``)."""
    from warehouse.formatkit.registry import Registry

    queries = [i.user_prompts_sql for i in Registry.installed().ingestors() if i.user_prompts_sql]
    union = " UNION ALL ".join(f"({q})" for q in queries) or (
        "SELECT CAST(NULL AS VARCHAR) AS response_id, CAST(NULL AS VARCHAR) AS prompt WHERE false")
    ctx.con.execute(f"CREATE OR REPLACE TEMP TABLE staged_user_prompts AS {union}").fetchall()


def windows(total: int) -> Iterator[tuple[int, int]]:
    """``(lo, hi)`` bounds of consecutive windows of ``BATCH`` staged positions, 1-based, inclusive."""
    for lo in range(1, total + 1, BATCH):
        yield lo, min(lo + BATCH - 1, total)


def window_sql(lo: int, hi: int, lists: Mapping[str, str] = {}, *, select: str = "*") -> str:
    """The staged parents ``lo`` to ``hi`` (``s``) in order, each with its lists: ``lists`` maps a name to a
    staged table (``{"turns": "turns"}`` reads ``staged_turns``), each list its rows in ``k`` order, NULL
    when it has none. ``select`` picks the output (default: ``n``, the parent's columns, the lists)."""
    joins = "".join(
        f"\nLEFT JOIN (SELECT n, list(row ORDER BY k) AS {name} FROM staged_{table} WHERE n BETWEEN {int(lo)} AND {int(hi)} "
        f"GROUP BY n) AS l{i} USING (n)" for i, (name, table) in enumerate(lists.items()))
    return f"SELECT {select} FROM (SELECT * FROM staged WHERE n BETWEEN {int(lo)} AND {int(hi)}) AS s{joins}\nORDER BY s.n"


def window(ctx: ExportContext, lo: int, hi: int, lists: Mapping[str, str] = {}) -> list[dict]:
    """The staged parents ``lo`` to ``hi`` in order as Python dicts (their columns, ``n`` among them; JSON
    columns as text), each with its lists as ``window_sql`` makes them. Read flat and grouped here: a
    list aggregate in DuckDB costs twice as much when the rows come to Python anyway."""
    rows = ctx.con.sql(f"SELECT * FROM staged WHERE n BETWEEN {int(lo)} AND {int(hi)} ORDER BY n").to_arrow_table().to_pylist()
    for name, table in lists.items():
        batch = ctx.con.sql(f"SELECT n, row FROM staged_{table} WHERE n BETWEEN {int(lo)} AND {int(hi)} "
                            "ORDER BY n, k").to_arrow_table()
        grouped: dict[int, list] = {}
        for n, row in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
            grouped.setdefault(n, []).append(row)
        for row in rows:
            row[name] = grouped.get(row["n"])
    return rows


# --- conversations -----------------------------------------------------------------------------------------

#: what ``conversation()`` reads of a response, the plain user prompt as its ``prompt``
CONVERSATION_COLUMNS = ("r.response_id, r.source_format, r.inference_model, r.system_prompt, r.response, "
                        f"r.answers_turn, {USER_PROMPT} AS prompt")


def conversations(ctx: ExportContext, where: str = "true") -> Iterator[dict]:
    """Each selected response for which ``where`` (SQL over ``r``) holds, in output order, as the row
    ``conversation()`` takes. Stages the selection (``stage``): every staged table is replaced."""
    total = stage(ctx, columns=CONVERSATION_COLUMNS, where=where, user_prompts=True)
    stage_conversations(ctx)
    for lo, hi in windows(total):
        yield from window(ctx, lo, hi, CONVERSATION_LISTS)


# --- notes: what a format cannot carry --------------------------------------------------------------------


def count_belonging(ctx: ExportContext, responses: str, tables: Iterable[str]) -> dict[str, int]:
    """How many rows of each child table belong to the selected responses for which ``responses`` (SQL
    on ``responses AS r``) holds: their own rows, and the rows about their whole records."""
    counts = {}
    for table in tables:
        counts[table] = ctx.con.execute(
            f"WITH s AS (SELECT r.response_id, r.record_id FROM responses AS r "
            f"WHERE r.response_id IN (SELECT response_id FROM selected) AND ({responses})) "
            f"SELECT count(*) FROM {table} AS c WHERE {belongs(table, 's', 's')}"
        ).fetchall()[0][0]
    return counts


#: plurals of table names that do not end in s
_IRREGULAR = {"criteria": "criterion", "data": "datum"}


def _singular(name: str) -> str:
    """One row of a table, in words: sentence_boundaries -> sentence boundary."""
    *head, last = name.split("_")
    last = _IRREGULAR.get(last) or (last[:-3] + "y" if last.endswith("ies") else last.removesuffix("s"))
    return " ".join([*head, last])


def rows_text(counts: Mapping[str, int]) -> str:
    """``{"turns": 3, "annotations": 1}`` as "3 turns and 1 annotation"; "" when all are 0."""
    items = [f"{n:,} {name.replace('_', ' ') if n != 1 else _singular(name)}" for name, n in counts.items() if n]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + (" and " + items[-1] if items else "")


def note_not_carried(ctx: ExportContext, fmt: str, tables: Iterable[str]) -> None:
    """Say how many rows of ``tables`` belong to the selection though ``fmt`` has no place for them."""
    rows = rows_text(count_belonging(ctx, "true", tables))
    if rows:
        ctx.notes.append(f"{fmt} has no place for the selected responses' {rows}: not exported (parquet carries every table)")


def note_left_out(ctx: ExportContext, left_out: Counter, why: str) -> None:
    """Say what the conversations held that the format cannot, by kind, and why."""
    ctx.notes += [f"{kind}: {n} left out ({why})" for kind, n in sorted(left_out.items()) if n]
