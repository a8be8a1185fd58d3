"""What the viewer reads: the selection, its list, one response with everything about it, spans, pairs.

``Reader`` opens one warehouse snapshot on a DuckDB connection that is sandboxed exactly as an
export's (``warehouse.exports.where``: ``--where`` is checked to be one expression over the views,
and the connection reads the warehouse's files and nothing else, writes none, loads no extension,
and its settings are locked). Every request reads on a cursor of its own (threads share the reader).

**The list.** Sorting a million responses by a score and then fetching their texts from Parquet costs
seconds: a row in the middle of a row group is reached only by decompressing the pages before it. So
the selection's list is made once, when the reader opens: one in-memory table (``_viewer_list``) of
the columns the list shows and sorts by. Every page is then a sort of that table with LIMIT/OFFSET
(paging and its count stay cheap on millions of rows). The columns made from the texts (short
previews, lengths) are made apart, after the first page (``texts.Texts``).

**Per-token values.** When the connection has a relation ``token_values`` (the warehouse's view;
docs/tables.md) with rows for a response, its page draws them: a heatmap of each vector's values
over the tokens and their trajectories. The columns read are ``response_id``, ``segment``
(``prompt``|``response``), ``token_index`` (inside its segment), ``trait``, ``layer``, ``method``,
``value``, and, where the relation has them, ``component``, ``vector_index`` (two vectors of one
trait, layer and method that differ in these are two rows), ``normalized``, ``norm``, ``aligned``,
``baseline`` and ``source``. ``Reader(setup=...)`` is the seam to give it another such relation: ``setup(con)``
runs on the connection before it is sandboxed (a test registers a table of hand-written values).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import duckdb

from warehouse.access import StorageOptions
from warehouse.errors import NotFound, QueryError, UsageError
from warehouse.viewer.texts import TEXTS, Texts

#: the table of the selection's list (in the connection's in-memory database, seen by every cursor)
LIST = "_viewer_list"
#: responses per page of the list, the spans page and a group to compare
PAGE = 50
COMPARE_MAX = 8
#: characters of each text kept in the list (a preview; the response page shows all)
PREVIEW = 100
#: the relation of per-token values, when the warehouse has it
TOKEN_VALUES = "token_values"
TOKEN_VALUE_OPTIONAL = ("component", "vector_index", "normalized", "norm", "aligned", "baseline", "source")


@dataclass(frozen=True)
class Column:
    """A column of the list: its name, its heading, what ``_viewer_list`` keeps of it (SQL over the
    responses ``r`` and their grades ``g``; None: nothing of its own), how a page shows it (SQL over
    the list's columns; default: the kept column) and what it sorts by (the same)."""

    name: str
    heading: str
    sql: str | None
    shown: str | None = None
    sort: tuple[str, ...] | None = None
    numeric: bool = False
    text_of: str | None = None  # made from this text of ``r`` (``texts.Texts``), not kept in ``_viewer_list``

    @property
    def keys(self) -> tuple[str, ...]:
        return self.sort or (f"{'t' if self.text_of else 'l'}.{self.name}",)

    @property
    def select(self) -> str:
        return f"{self.shown or ('t' if self.text_of else 'l') + '.' + self.name} AS {self.name}"


# The list keeps values as they are (a layer's list, a source's path and place): showing them as text takes
# a page 50 rows, where making every row's text took a large part of opening the viewer (bench/README.md).
#: the columns people sort and filter by; a column with no value in the selection is not shown
COLUMNS = (
    Column("response_id", "response", "r.response_id"),
    Column("source_format", "format", "r.source_format"),
    Column("model", "model", "r.inference_model"),
    Column("model_variant", "variant", "r.model_variant"),
    Column("experiment", "experiment", "r.experiment"),
    Column("prompt_set", "prompt set", "r.prompt_set"),
    Column("prompt_id", "prompt id", "r.prompt_id"),
    Column("trait", "trait", "r.trait"),
    Column("run_kind", "run", "r.run_kind"),
    Column("layer", "layer", "r.layers", shown="array_to_string(l.layer, ',')", sort=("l.layer[1]",), numeric=True),
    Column("coefficient", "coef", "r.coefficients", shown="array_to_string(l.coefficient, ',')",
           sort=("l.coefficient[1]",), numeric=True),
    Column("trait_score", "trait score", "r.trait_score", numeric=True),
    Column("coherence_score", "coherence", "r.coherence_score", numeric=True),
    Column("grade", "grade", "g.overall_grade", sort=("l.grade_rank",)),
    Column("final_score", "final score", "g.final_score", numeric=True),
    Column("prompt_preview", "prompt", f"left(r.prompt, {PREVIEW})", sort=("t.prompt_chars",), text_of="prompt"),
    Column("response_preview", "response text", f"left(r.response, {PREVIEW})", sort=("t.response_chars",),
           text_of="response"),
    Column("response_chars", "chars", "length(r.response)", numeric=True, text_of="response"),
    Column("source", "source", None, shown="l.source_path || coalesce(':' || nullif(l.source_locator, ''), '')",
           sort=("l.source_path", "l.source_locator")),
)
BY_NAME = {c.name: c for c in COLUMNS}
#: what the list keeps besides its columns: sort keys and the pairing keys of compare
HIDDEN = {
    "record_id": "r.record_id",
    "grade_rank": "g.grade_rank",
    "source_path": "r.source_path",
    "source_locator": "r.source_locator",
}
#: the order of responses tied on a sort, and the default order: where they were read (over ``l``, the list)
SOURCE_ORDER = "l.source_path, l.source_locator, l.response_id"
#: the columns made from the texts, by name: ``_viewer_texts`` (``texts.Texts``)
TEXT_COLUMNS = {**{c.name: c.sql for c in COLUMNS if c.text_of}, "prompt_chars": "length(r.prompt)",
                "prompt_key": "hash(r.prompt)"}
#: the default order: where the responses were read
DEFAULT_SORT = "source"

#: how responses are paired to be compared: key name -> (what it means, the list's columns it compares)
PAIRINGS = {
    "prompt": ("the same prompt (across models, variants, runs)", ("prompt_key",)),
    "prompt_id": ("the same prompt set and prompt id (steered against baseline)", ("prompt_set", "prompt_id")),
    "record": ("the same source record (the candidates given one prompt)", ("record_id",)),
}


class Reader:
    """The selection of one warehouse snapshot, read by the viewer's pages; safe to share between threads."""

    def __init__(self, root: str, where: str | None = None, *, as_of: int | None = None,
                 storage_options: StorageOptions = None,
                 setup: Callable[[duckdb.DuckDBPyConnection], None] | None = None):
        from warehouse import checks, interrupt
        from warehouse.exports.where import sandbox, selection_sql
        from warehouse.reading.views import open_snapshot
        from warehouse.store.storage import Store

        self.root = checks.root(root)
        self.where = where.strip() if where and where.strip() else None
        self.con, self.snapshot = open_snapshot(self.root, as_of=checks.as_of(as_of), storage_options=storage_options)
        interrupt.register(self.con)  # Ctrl-C stops the list being made (under the command's guard)
        self._cursors: set = set()
        self._lock = threading.Lock()
        self.texts = Texts(self.cursor, self.interrupt, TEXT_COLUMNS,
                           "" if self.where is None else f"WHERE r.response_id IN (SELECT response_id FROM {LIST})")
        try:
            if setup is not None:
                setup(self.con)
            store = Store(self.root)
            sandbox(self.con, [] if store.remote else [str(d) for d in store.table_dirs()])
            self.selection = selection_sql(self.con, self.where or "true")
            self._make_list()
            self.total = self.con.execute(f"SELECT count(*) FROM {LIST}").fetchall()[0][0]
            self.columns = self._shown_columns()
            self.token_values = self._token_value_columns()
        except BaseException:
            self.con.close()
            raise

    # --- the connection -------------------------------------------------------------------------------

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for one request; ``interrupt()`` stops it while it runs."""
        from warehouse.reading.views import cursor

        c = cursor(self.con, self.snapshot)
        with self._lock:
            self._cursors.add(c)
        try:
            yield c
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except duckdb.Error as e:
            raise QueryError(str(e)) from None
        finally:
            with self._lock:
                self._cursors.discard(c)
            c.close()

    def interrupt(self) -> None:
        """Stop every running query (Ctrl-C on the server)."""
        with self._lock:
            running = list(self._cursors)
        for c in running:
            try:
                c.interrupt()
            except Exception:  # closed meanwhile: nothing to stop
                pass

    def close(self) -> None:
        self.texts.stop()
        self.interrupt()
        self.con.close()

    # --- the list -------------------------------------------------------------------------------------

    def _make_list(self) -> None:
        chosen = "" if self.where is None else f"WHERE r.response_id IN (SELECT response_id FROM ({self.selection}))"
        columns = [f"{c.sql} AS {c.name}" for c in COLUMNS if c.sql and not c.text_of] + [
            f"{sql} AS {name}" for name, sql in HIDDEN.items()]
        try:
            self.con.execute(
                f"CREATE TABLE {LIST} AS SELECT {', '.join(columns)} "
                f"FROM responses AS r LEFT JOIN response_grades AS g USING (response_id) {chosen}").fetchall()
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except duckdb.Error as e:
            from warehouse.reading.query import columns_hint

            raise QueryError(f"--where {self.where!r}: {e}\n\ncolumns of responses you can filter on:\n"
                             f"{columns_hint(self.con, 'responses')}") from None

    def _shown_columns(self) -> list[Column]:
        listed = [c for c in COLUMNS if c.sql and not c.text_of]
        counts = self.con.execute(f"SELECT {', '.join(f'count({c.name})' for c in listed)} FROM {LIST}").fetchall()[0]
        have = {c.name for c, n in zip(listed, counts) if n}
        # a text column is shown when one text of the selection is there (found without reading every text)
        chosen = "" if self.where is None else f"AND r.response_id IN (SELECT response_id FROM {LIST})"
        texts = sorted({c.text_of for c in COLUMNS if c.text_of})
        found = self.con.execute("SELECT " + ", ".join(
            f"EXISTS (SELECT 1 FROM responses AS r WHERE r.{t} IS NOT NULL {chosen})" for t in texts)).fetchall()[0]
        have |= {c.name for c in COLUMNS if c.text_of and dict(zip(texts, found))[c.text_of]}
        # (a column kept by nothing of its own is shown from kept columns that always have a value)
        return [c for c in COLUMNS if c.name in have or not c.sql or c.name in ("response_id", "response_preview")]

    def page(self, sort: str | None = None, descending: bool = False, page: int = 1,
             size: int | None = PAGE) -> dict[str, Any]:
        """One page of the list: its rows (dicts of the shown columns), the sort, and the paging."""
        sort = sort or DEFAULT_SORT
        if sort not in BY_NAME:
            raise UsageError(f"sort by {sort!r}: not a column of the list; choose one of: {', '.join(BY_NAME)}")
        column = BY_NAME[sort]
        direction = "DESC" if descending else "ASC"
        order = ", ".join([*(f"{k} {direction} NULLS LAST" for k in column.keys), SOURCE_ORDER])
        pages = max(1, -(-self.total // size)) if size else 1
        page = min(max(1, page), pages)
        limit = f"LIMIT {size} OFFSET {(page - 1) * size}" if size else ""
        names = [c.name for c in self.columns]
        listed = ", ".join(c.select for c in self.columns if not c.text_of)
        shown = ", ".join(c.select for c in self.columns)
        by_text = any(k.startswith("t.") for k in column.keys)
        if by_text or self.texts.started:
            self.texts.wait()
        ready = self.texts.ready()  # (decided once: another request may start and finish the table meanwhile)
        with self.cursor() as c:
            if by_text:  # the page's ids sorted on the fewest columns, then their rows
                rel = c.execute(
                    f"SELECT {shown} FROM (SELECT l.response_id FROM {TEXTS} AS t JOIN {LIST} AS l USING (response_id) "
                    f"ORDER BY {order} {limit}) AS p JOIN {LIST} AS l USING (response_id) "
                    f"JOIN {TEXTS} AS t USING (response_id) ORDER BY {order}")
            elif ready:  # the page's rows, then their texts
                rel = c.execute(f"SELECT {shown} FROM (SELECT * FROM {LIST} AS l ORDER BY {order} {limit}) AS l "
                                f"LEFT JOIN {TEXTS} AS t USING (response_id) ORDER BY {order}")
            else:  # the first page answered, before the texts' table is made: it reads its own rows' texts
                rel = c.execute(f"SELECT {listed}, l.source_path AS _source_path FROM {LIST} AS l ORDER BY {order} {limit}")
            rows = _dicts(rel)
            if not ready:
                self.texts.of(c, rows, [n for n in names if n in TEXT_COLUMNS])
                rows = [{n: r[n] for n in names} for r in rows]
        self.texts.start()  # (made while this page is read)
        return {"rows": rows, "sort": sort, "descending": descending, "page": page, "pages": pages,
                "total": self.total, "first": (page - 1) * (size or 0) + 1}

    def ids(self, limit: int | None = None) -> list[str]:
        """The selection's response ids in the list's default order (``--out`` writes these)."""
        with self.cursor() as c:
            sql = f"SELECT l.response_id FROM {LIST} AS l ORDER BY {SOURCE_ORDER}"
            return [r[0] for r in c.execute(sql + (f" LIMIT {int(limit)}" if limit is not None else "")).fetchall()]

    # --- one response ---------------------------------------------------------------------------------

    def response(self, response_id: str) -> dict[str, Any]:
        """Everything about one selected response: its row, its turns, annotations, evaluations, sentences,
        the rows of every other table that belongs to it, the other candidates of its record, and its
        per-token values."""
        return self.responses([response_id])[response_id]

    def responses(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """``response`` for each of ``ids``, read with one query per table (an ``--out`` file of hundreds)."""
        from warehouse.exports.kit import children, ordered_by
        from warehouse.formatkit.declared import TABLES

        with self.cursor() as c:
            found = c.execute(f"SELECT response_id, record_id, source_path FROM {LIST} "
                              "WHERE response_id IN (SELECT unnest($ids))", {"ids": ids}).fetchall()
            missing = set(ids) - {r[0] for r in found}
            if missing:
                raise NotFound(f"no response {sorted(missing)[0]!r} in this selection")
            record_of = {r[0]: r[1] for r in found}
            records = sorted({r[1] for r in found if r[1] is not None})
            # the source paths too: Parquet statistics skip the row groups of other files
            paths = sorted({r[2] for r in found if r[2] is not None})
            rows = {r["response_id"]: r for r in _dicts(c.execute(
                "SELECT * FROM responses WHERE source_path IN (SELECT unnest($paths)) "
                "AND response_id IN (SELECT unnest($ids))", {"paths": paths, "ids": ids}))}
            out = {i: {"row": rows[i], "related": {}, "candidates": [], "token_values": []} for i in ids}
            for table in children():
                if table == TOKEN_VALUES:  # drawn as the heatmap below, not listed row by row
                    continue
                by = TABLES[table].parent.by
                has_id = TABLES[table].has("response_id")
                own = "c.response_id IN (SELECT unnest($ids))" if "response_id" in by else "false"
                params = {"ids": ids} if "response_id" in by else {}
                if "record_id" in by:
                    whole = "c.record_id IN (SELECT unnest($records))" + (" AND c.response_id IS NULL" if has_id else "")
                    own = f"({own} OR ({whole}))"
                    params["records"] = records
                for i in ids:
                    out[i]["related"][table] = []
                for r in _dicts(c.execute(f"SELECT * FROM {table} AS c WHERE {own} {ordered_by(table)}", params)):
                    owner = r.get("response_id") if has_id else None
                    if owner is not None:
                        out[owner]["related"][table].append(r)
                    else:  # about the whole record: every response of it
                        for i in ids:
                            if record_of[i] == r.get("record_id"):
                                out[i]["related"][table].append(r)
            for rid, record in c.execute(
                    f"SELECT l.response_id, l.record_id FROM {LIST} AS l WHERE l.record_id IN (SELECT unnest($records)) "
                    f"ORDER BY {SOURCE_ORDER}", {"records": records}).fetchall():
                for i in ids:
                    if record_of[i] == record and rid != i:
                        out[i]["candidates"].append(rid)
            if self.token_values is not None:
                order = ("response_id", "trait", "layer", "method",
                         *(k for k in ("component", "vector_index") if k in self.token_values), "segment", "token_index")
                for r in _dicts(c.execute(
                        f"SELECT response_id, {', '.join(self.token_values)} FROM {TOKEN_VALUES} "
                        f"WHERE response_id IN (SELECT unnest($ids)) ORDER BY {', '.join(order)}", {"ids": ids})):
                    out[r.pop("response_id")]["token_values"].append(r)
        return out

    def _token_value_columns(self) -> tuple[str, ...] | None:
        """The columns of ``token_values`` the viewer reads, or None when the connection has no such relation."""
        names = self.con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND schema_name = 'main'",
            [TOKEN_VALUES]).fetchall()
        have = {r[0] for r in names}
        needed = ("response_id", "segment", "token_index", "trait", "layer", "method", "value")
        if not set(needed) <= have:
            return None
        return needed[1:] + tuple(c for c in TOKEN_VALUE_OPTIONAL if c in have)

    # --- compare --------------------------------------------------------------------------------------

    def group(self, response_id: str, by: str) -> list[str]:
        """The selected responses paired with ``response_id`` by ``by`` (a key of ``PAIRINGS``), it first."""
        if by not in PAIRINGS:
            raise UsageError(f"pair by {by!r}: choose one of: {', '.join(PAIRINGS)}")
        keys = PAIRINGS[by][1]
        listed = [k for k in keys if k not in TEXT_COLUMNS]
        texts = [k for k in keys if k in TEXT_COLUMNS]
        match = [f"l.{k} IS NOT DISTINCT FROM me.{k}" for k in listed]
        if texts:  # the same texts: found in their table, then listed
            self.texts.wait()
            same = " AND ".join(f"t.{k} IS NOT DISTINCT FROM tm.{k}" for k in texts)
            match.append(f"l.response_id IN (SELECT t.response_id FROM {TEXTS} AS t, "
                         f"(SELECT * FROM {TEXTS} WHERE response_id = $id) AS tm WHERE {same})")
        with self.cursor() as c:
            if not c.execute(f"SELECT 1 FROM {LIST} WHERE response_id = ?", [response_id]).fetchall():
                raise NotFound(f"no response {response_id!r} in this selection")
            rows = c.execute(
                f"SELECT l.response_id FROM {LIST} AS l, (SELECT * FROM {LIST} WHERE response_id = $id) AS me "
                f"WHERE {' AND '.join(match)} ORDER BY l.response_id <> $id, l.model, l.model_variant, l.run_kind, l.layer[1], "
                f"l.coefficient[1], {SOURCE_ORDER} LIMIT {COMPARE_MAX}", {"id": response_id}).fetchall()
        return [r[0] for r in rows]

    def scores(self, ids: list[str]) -> dict[str, dict[str, float | str | None]]:
        """Per response: every score it has (its columns and its response-level evaluations), by name."""
        out: dict[str, dict] = {i: {} for i in ids}
        with self.cursor() as c:
            for rid, name, score, label in c.execute(
                    "SELECT response_id, criterion, score, label FROM evaluations "
                    "WHERE response_id IN (SELECT unnest($ids)) AND turn_index IS NULL ORDER BY criterion",
                    {"ids": ids}).fetchall():
                out[rid].setdefault(name, score if score is not None else label)
        return out

    # --- spans ----------------------------------------------------------------------------------------

    def categories(self, within: list[str] | None = None) -> list[tuple[str, int, int]]:
        """Each category of the selection's spans (of the responses ``within``): (category, spans, responses)."""
        with self.cursor() as c:
            return c.execute(
                f"SELECT category, count(*), count(DISTINCT response_id) FROM annotations "
                f"WHERE char_start IS NOT NULL AND category IS NOT NULL "
                f"AND response_id IN (SELECT response_id FROM {LIST}) {_within(within)} "
                "GROUP BY category ORDER BY category", _ids(within)).fetchall()

    def spans(self, category: str, page: int = 1, size: int | None = PAGE,
              within: list[str] | None = None) -> dict[str, Any]:
        """The selection's spans of ``category`` (in the responses ``within``), a page of responses at a time,
        each response with its text."""
        with self.cursor() as c:
            ids = [r[0] for r in c.execute(
                f"SELECT DISTINCT a.response_id, l.source_path, l.source_locator FROM annotations a "
                f"JOIN {LIST} l USING (response_id) "
                f"WHERE a.category = $category AND a.char_start IS NOT NULL {_within(within, 'a.response_id')} "
                "ORDER BY l.source_path, l.source_locator, a.response_id",
                {"category": category, **_ids(within)}).fetchall()]
            if not ids:
                raise NotFound(f"no span of category {category!r} in this selection")
            pages = max(1, -(-len(ids) // size)) if size else 1
            page = min(max(1, page), pages)
            shown = ids[(page - 1) * size: page * size] if size else ids
            texts = dict(c.execute("SELECT response_id, response FROM responses WHERE response_id IN (SELECT unnest(?))",
                                   [shown]).fetchall())
            spans = _dicts(c.execute(
                "SELECT response_id, annotation_id, char_start, char_end, category, borderline, note, intensity "
                "FROM annotations WHERE response_id IN (SELECT unnest(?)) AND char_start IS NOT NULL "
                "ORDER BY response_id, char_start, char_end", [shown]))
        return {"category": category, "ids": shown, "texts": texts, "spans": spans, "page": page, "pages": pages,
                "responses": len(ids)}


def _within(ids: list[str] | None, column: str = "response_id") -> str:
    return "" if ids is None else f"AND {column} IN (SELECT unnest($within))"


def _ids(ids: list[str] | None) -> dict:
    return {} if ids is None else {"within": ids}


def _dicts(rel) -> list[dict]:
    names = [d[0] for d in rel.description]
    return [dict(zip(names, r)) for r in rel.fetchall()]


def json_text(value: Any) -> str:
    """A JSON column's value (text, or already parsed) as indented text."""
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)

