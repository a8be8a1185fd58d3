"""Every table of the warehouse, declared once.

Each table has a name, a grain (what one row is) and, per column, an Arrow type
and a one-line doc. The Arrow schemas used to write Parquet, the DuckDB types of
the empty placeholder views, the row validators and the generated
``docs/tables.md`` are all derived from this module, so a column exists in one
place only.

Columns typed ``JSON`` hold a JSON document serialised as text; DuckDB views
expose them with the ``JSON`` type so ``->`` and ``->>`` work on them.

This module declares the core's tables. Formats add their own columns to the
shared ones (``extensible``) and tables of their own, as data on their
``Ingestor`` class (``columns``, ``tables``); ``TABLES`` is the core's tables
merged with what every installed format adds, built on first use
(``compose``). So a column exists in one place only, and the core names no format.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from warehouse.decimals import DECIMAL
from warehouse.decimals import SQL_TYPE as DECIMAL_SQL


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    doc: str
    json: bool = False  # text that holds a JSON document
    #: the Parquet encoding of its values when not the writer's default (dictionary, else plain):
    #: ``BYTE_STREAM_SPLIT`` for numbers that seldom repeat (per-token values: bench/README.md)
    encoding: str | None = None


#: the columns a child table links to its response by (``Parent.by``)
LINKS = ("response_id", "record_id")


@dataclass(frozen=True)
class Parent:
    """How a table's rows belong to responses: its link to its parent, declared once on the child
    table (as dlt declares ``parent``). Exports generate every join from it (``warehouse.exports.kit``).

    ``by`` names the link columns: ``response_id``, a row is that response's own; ``record_id``,
    a row with no response of its own (``response_id`` NULL, or the table has no such column) is
    about its whole record, and belongs to every response of the record (the prompt message
    several candidates share). ``order`` is a total order of one response's rows: the order of
    the response's list of them in nested output (the conversation's order for messages).
    """

    by: tuple[str, ...]
    order: tuple[str, ...]

    def __post_init__(self):
        if not self.by or any(b not in LINKS for b in self.by):
            raise ValueError(f"Parent.by {self.by!r}: name one or both of {', '.join(LINKS)}")


@dataclass(frozen=True)
class Table:
    name: str
    grain: str
    doc: str
    columns: tuple[Column, ...]
    # Tables whose rows belong to one source file and are replaced with it.
    # The catalog table (`sources`) is rewritten whole instead.
    per_source: bool = True
    # Formats may add columns to it (``Ingestor.columns``): they go before its trailing
    # provenance columns and ``extra``.
    extensible: bool = False
    # A total order of the table's rows, so an export of the same rows gives the same bytes
    # whatever order the Parquet files hold them in: where a row was read (source_path,
    # source_locator), then the columns that tell apart rows read from one place. Every table
    # an export writes declares one (tests/exports/test_export_safety.py checks it tells rows apart).
    order: tuple[str, ...] = ()
    # How its rows belong to responses (``Parent``); None for tables about files (the catalog,
    # quarantine, a format's prompt sets), which exports do not carry as children.
    parent: Parent | None = None
    # Columns its view shows in place of stored lists: a table that keeps one list per row
    # (``token_values``: a vector's values over a segment) has a view with one row per element;
    # these are that view's own columns (the element's position, its values), documented with
    # the table. ``order`` may name them: it orders the view's rows, which exports write.
    view_columns: tuple[Column, ...] = ()
    _by_name: dict = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "_by_name", {c.name: c for c in self.columns})
        if len(self._by_name) != len(self.columns):
            raise ValueError(f"table {self.name}: duplicate column names")
        shown = set(self._by_name) | {c.name for c in self.view_columns}
        for what, names in (("order", self.order), ("parent.by", self.parent.by if self.parent else ()),
                            ("parent.order", self.parent.order if self.parent else ())):
            unknown = [n for n in names if n not in shown]
            if unknown:
                raise ValueError(f"table {self.name}: {what} names {', '.join(unknown)}, which it has no column for")
        if self.parent is None and (self.has("response_id") or self.has("record_id")) and self.name != "responses":
            raise ValueError(f"table {self.name}: its rows carry response_id or record_id, so it declares how they "
                             "belong to responses: parent=Parent(by=..., order=...) (warehouse.tables.Parent)")
        if self.parent is not None:
            if self.has("response_id") and "response_id" not in self.parent.by:
                raise ValueError(f"table {self.name}: has response_id, so its parent link must be by response_id")
            if not self.order:
                raise ValueError(f"table {self.name}: a table with a parent declares its order (exports write it)")

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        return self._by_name[name]

    def has(self, name: str) -> bool:
        return name in self._by_name

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.type) for c in self.columns])


STR = pa.string()
I32 = pa.int32()
I64 = pa.int64()
F64 = pa.float64()
BOOL = pa.bool_()
STRS = pa.list_(pa.string())
I64S = pa.list_(pa.int64())
F64S = pa.list_(pa.float64())
TS = pa.timestamp("us", tz="UTC")
#: numbers of at most 4 decimals, under 10^5 (warehouse/decimals.py), and lists of them
DEC = DECIMAL
DECS = pa.list_(DEC)
#: Parquet's encoding for numbers that seldom repeat: their bytes split into streams zstd packs well
SPLIT = "BYTE_STREAM_SPLIT"


def C(name: str, type: pa.DataType, doc: str, encoding: str | None = None) -> Column:
    return Column(name, type, doc, encoding=encoding)


def J(name: str, doc: str) -> Column:
    return Column(name, STR, doc, json=True)


def provenance(locator_doc: str = "where the row comes from inside the file") -> tuple[Column, ...]:
    return (
        C("source_path", STR, "absolute path of the source file"),
        C("source_locator", STR, locator_doc),
    )


EXTRA = J("extra", "source fields with no column of their own, kept verbatim (JSON object)")
RECORD_ID = C(
    "record_id", STR,
    "id of the source record the row comes from (a hash of source_path and the record's locator); "
    "the candidates of one record, and their messages, share it",
)

RESPONSES = Table(
    "responses",
    grain="one model output",
    doc=(
        "The unified flat record. A source record with a prompt and several candidate "
        "outputs gives one row per candidate; a record with a prompt but no output still "
        "gives one row (response NULL)."
    ),
    columns=(
        C("response_id", STR, "stable id: a hash of source_path and source_locator"),
        RECORD_ID,
        C("source_format", STR, "ingestor that read the file (`--format` name)"),
        *provenance("locator of the record: `[3]` array element, `12` JSONL line, empty for a whole-file object"),
        C("record_index", I64, "0-based position of the record in its file (array index or line index); NULL for a whole-file object"),
        C("candidate_index", I32, "0-based index of this output among the record's candidates"),
        C("answers_turn", I32, "for an answer that is not itself a message in `turns` (an answer given as an annotation of the record): `turn_index` of the message it answers; its conversation is the record's messages up to that one, then the answer (docs/export.md)"),
        C("prompt", STR, "prompt text (as the source holds it, chat-template tokens included; conversations: the user message `response` answers, i.e. the last user message before the last assistant message, or the last user message when nothing answered it)"),
        C("response", STR, "model output text; NULL when the record has no output"),
        C("system_prompt", STR, "system prompt, when one was used"),
        C("tokens", STRS, "token strings of the full sequence (prompt + response)"),
        C("token_ids", I64S, "token ids of the full sequence"),
        C("prompt_end", I64, "token index where the response starts"),
        C("prefill_end", I64, "token index where model generation starts (prefilling)"),
        C("tokens_suspect", BOOL, "true when `tokens` may be altered by a known bug of the source's writer (a token holds a comma, or the count differs from token_ids): trust token_ids"),
        C("inference_model", STR, "model that produced the output"),
        C("prompt_note", STR, "category or note of the prompt, from its prompt set"),
        C("capture_date", STR, "when the output was captured, as written by the source (ISO text)"),
        C("tags", STRS, "user-defined tags"),
        C("trait_score", F64, "trait projection / judge score (steering)"),
        C("coherence_score", F64, "coherence / quality score (steering)"),
        J("rollout_source", "provenance object of a multi-turn rollout (`source`: type, environment, messages_path, ...)"),
        EXTRA,
    ),
    extensible=True,
    order=("source_path", "source_locator", "response_id"),
)

TURNS = Table(
    "turns",
    grain="one message of a conversation",
    doc="Messages of conversations and rollouts, in order, attached to the response they belong to.",
    columns=(
        C("response_id", STR, "response this message belongs to (for a record with several candidates: the candidate the message is, NULL for shared prompt messages; join on record_id for the whole conversation)"),
        RECORD_ID,
        C("turn_index", I32, "0-based position of the message in its conversation"),
        C("role", STR, "system, user, assistant, tool, function, ..."),
        C("content", STR, "message text (NULL where only token boundaries are known)"),
        J("content_parts", "the message's content when the source gave a list of typed parts, as written (OpenAI's shape: `{type: text, text}`, `{type: image_url, image_url: {url}}`); `content` holds its text parts joined by a newline"),
        C("reasoning_content", STR, "reasoning / chain-of-thought text of the message"),
        C("token_start", I64, "first token of the message (absolute index in the response's token_ids)"),
        C("token_end", I64, "end-exclusive token index of the message"),
        C("source_id", STR, "id of who sent the message (the source's `source_id`)"),
        C("model", STR, "model that wrote the message"),
        C("has_thinking", BOOL, "the turn contains thinking / reasoning"),
        C("has_tool_calls", BOOL, "the turn contains tool calls"),
        C("tool_names", STRS, "names of the tools called in the turn"),
        J("tool_calls", "tool calls the message makes, as written (OpenAI's shape: `[{id, type, function: {name, arguments}}]`); `has_tool_calls` and `tool_names` sum them up"),
        C("tool_call_id", STR, "tool call answered by this message"),
        C("tool_name", STR, "tool that produced this message"),
        # a message given as several rows, one per part (text, image, ...): conversations join them
        C("part_index", I32, "0-based position of the part when a message is given as several rows, one per part (an element of a multimodal prompt); the parts of one message share turn_index"),
        C("mimetype", STR, "mimetype of the part as written (`application/text`, `image/*`, `image/jpeg`, `audio/*`, ...)"),
        C("content_ref", STR, "reference to the part's media (stream URL, item id or placeholder), kept as written; content is NULL then"),
        *provenance(),
        EXTRA,
    ),
    extensible=True,
    order=("source_path", "source_locator", "record_id", "response_id", "turn_index", "part_index"),
    # a response's messages: its own and its record's shared ones (the prompt), in conversation order
    parent=Parent(by=("response_id", "record_id"), order=("turn_index", "part_index", "source_path", "source_locator")),
)

SENTENCE_BOUNDARIES = Table(
    "sentence_boundaries",
    grain="one sentence of a response",
    doc="Sentence token ranges of a response (response-relative, end-exclusive).",
    columns=(
        C("response_id", STR, "response the sentence belongs to"),
        C("sentence_num", I32, "0-based sentence position in the response"),
        C("token_start", I64, "first token of the sentence, relative to the response start"),
        C("token_end", I64, "end-exclusive token index, relative to the response start"),
        C("cue_p", F64, "transplant resampling probability (0-1)"),
        *provenance(),
        EXTRA,
    ),
    extensible=True,
    order=("source_path", "source_locator", "response_id", "sentence_num"),
    parent=Parent(by=("response_id",), order=("sentence_num", "source_path", "source_locator")),
)

ANNOTATIONS = Table(
    "annotations",
    grain="one annotation (a span, a label or a rating)",
    doc="Annotations of responses, turns and spans, from every format.",
    columns=(
        C("annotation_id", STR, "stable id: a hash of source_path and source_locator"),
        C("response_id", STR, "response the annotation is about (NULL when it is about the whole record, e.g. a record with several candidates)"),
        RECORD_ID,
        C("turn_index", I32, "message the annotation is about, when it targets one"),
        C("level", STR, "what is annotated: span, response, message, turn, thread, chunk, item"),
        C("target", STR, "locator of the annotated thing inside its source (`[0].messages[2].content.chunks[1]`)"),
        C("span", STR, "annotated text span"),
        C("char_start", I64, "start of the span in the response text (characters)"),
        C("char_end", I64, "end-exclusive character offset of the span"),
        C("token_start", I64, "first token of the span, relative to the response start"),
        C("token_end", I64, "end-exclusive token index of the span"),
        C("category", STR, "annotation category / label name"),
        C("intensity", F64, "severity (1-5) where given"),
        C("note", STR, "free-text note of the annotator"),
        C("borderline", BOOL, "plausible but ambiguous span, kept apart from the strict ones"),
        C("key", STR, "annotation key (question id)"),
        J("value", "annotation value as JSON"),
        C("value_number", F64, "the value when it is a number (or a boolean, as 0/1)"),
        C("value_text", STR, "the value when it is text"),
        C("annotation_type", STR, "type of the annotation as the source names it (integer, category, text, ref_image, ...)"),
        C("label", STR, "label of the annotation (the source's label, or the single chosen label)"),
        C("title", STR, "title of the question"),
        C("description", STR, "description of the question"),
        C("labels", STRS, "the labels offered to the annotator"),
        J("possible_values", "allowed values as written (flat or nested)"),
        J("metadata", "the annotation's metadata object"),
        C("source_annotation_id", STR, "the annotation's own id in its source (its `id`); not unique: a source may reuse one id at several levels"),
        # how a span was placed in its response: the views annotated_spans and span_values read them
        C("occurrences", I64, "times the span text occurs in the response (case-insensitively when only that matched)"),
        C("match", STR, "how the span was found: exact, case_insensitive; NULL when not found"),
        C("unresolved_reason", STR, "why a span has no character range (not found, empty, repeat beyond the occurrences, no response text)"),
        C("token_source", STR, "where the token range comes from: annotation_file, stored_tokens or tokenizer"),
        C("tokenizer", STR, "the tokenizer that made the token range (token_source tokenizer): its folder, or the Hugging "
          "Face model id it was found by in the local cache"),
        C("tokenizer_revision", STR, "the revision (commit) of that model the local Hugging Face cache held; NULL for a folder"),
        C("token_base", STR, "token indices are relative to the response start (response) or the whole sequence (sequence)"),
        C("prompt_tokens", I64, "prompt length in tokens under the tokenization used: absolute index = prompt_tokens + token_start"),
        *provenance(),
        EXTRA,
    ),
    extensible=True,
    order=("source_path", "source_locator", "annotation_id"),
    parent=Parent(by=("response_id", "record_id"), order=("source_path", "source_locator", "annotation_id")),
)

EVALUATIONS = Table(
    "evaluations",
    grain="one (target, criterion) judgement",
    doc="Scores, grades and ratings of responses or of single messages.",
    columns=(
        C("response_id", STR, "response judged (NULL when the judgement is about the whole record)"),
        RECORD_ID,
        C("turn_index", I32, "message judged, when the judgement is about one message"),
        C("criterion", STR, "what was judged (coherence, trait_score, overall_grade, ...)"),
        C("score", F64, "numeric score"),
        C("score_scale", STR, "range of the score as written by the source (`0-1`, `0-100`, ...), so scales are never mixed silently"),
        C("label", STR, "categorical result (a grade, a category value)"),
        C("feedback", STR, "judge feedback text"),
        *provenance(),
        EXTRA,
    ),
    extensible=True,
    order=("source_path", "source_locator", "record_id", "response_id", "criterion"),
    parent=Parent(by=("response_id", "record_id"), order=("source_path", "source_locator", "record_id", "response_id", "criterion")),
)

TOKEN_VALUES = Table(
    "token_values",
    grain="segment (prompt or response) of one vector's per-token values for one response",
    doc=(
        "Per-token values of responses (trait projections: a score per token for each trait vector, "
        "with the activation's norm and a normalised score). Stored as one row per response, vector "
        "and segment holding the values as lists, one element per token (about 2.3 bytes a score, 6.3 with its norm and normalised score: "
        "bench/README.md); the view `token_values` shows one row per token, with the columns below "
        "the stored ones in place of the lists. A list that does not line up with the response's "
        "tokens is kept as it is, never padded or stretched (`aligned`; docs/token_values.md)."
    ),
    columns=(
        C("response_id", STR, "response the values belong to; a source that names its response by path gets the id that response's file has, whether or not it is in the warehouse"),
        C("segment", STR, "prompt or response: the part of the response's tokens the values run over"),
        C("trait", STR, "trait the vector measures, `category/name`"),
        C("layer", I32, "0-based model layer whose outputs were scored"),
        C("method", STR, "how the vector was made (probe, mean_diff, gradient, ...)"),
        C("component", STR, "the activation scored: residual, attn_contribution, ... (older sources: a sublayer such as residual_out)"),
        C("vector_index", I32, "0-based position of the vector among the vectors of its source"),
        C("selection_source", STR, "why this vector was chosen (steering, unscored, layers_arg, ...), as written"),
        C("baseline", F64, "projection of the class centroid: subtracted from every value when `centered`"),
        C("centered", BOOL, "the values had `baseline` subtracted"),
        C("position", STR, "token positions the vector was extracted from (`response[:5]`); every token is scored whatever it says"),
        C("n_tokens", I64, "tokens of this segment in the response, as the source records them: the values line up with them when there are as many"),
        C("scores", DECS, "the values as stored, one per token of the segment, when each is a number of at most 4 decimals under 10^5; else NULL and `scores_float` holds them", encoding=SPLIT),
        C("scores_float", F64S, "the values when one of them is no such decimal (an unrounded source, NaN, 10^5 or more)"),
        C("norms", DECS, "L2 norm of the activation at each token (same index as the values), as 4-decimal numbers", encoding=SPLIT),
        C("norms_float", F64S, "the norms when one of them is no 4-decimal number"),
        C("normalized", DECS, "the source's normalised score of each token (the score divided by the segment's mean norm), as 4-decimal numbers"),
        C("normalized_float", F64S, "the normalised scores when one of them is no 4-decimal number"),
        *provenance("the list's place in the file (`.projections[1].response`)"),
        EXTRA,
    ),
    extensible=True,
    view_columns=(
        C("token_index", I64, "0-based index of the token inside its segment, as `annotations.token_start` counts (response token j is `tokens[prompt_end + j]`)"),
        C("value", F64, "the score as stored (`scores` or `scores_float`)"),
        C("norm", F64, "L2 norm of the activation at this token"),
        C("normalized", F64, "the source's normalised score, as stored; NULL when it stored none"),
        C("cosine", F64, "value / norm: the cosine between the activation and the (unit) vector"),
        C("n_scores", I64, "values in this segment's list"),
        C("aligned", BOOL, "n_scores = n_tokens: the values line up with the response's tokens; false: they do not (token_index counts the list, which no longer matches the tokens); NULL: the source does not say"),
    ),
    order=("source_path", "source_locator", "vector_index", "token_index"),
    parent=Parent(by=("response_id",), order=("source_path", "source_locator", "vector_index", "token_index")),
)

SOURCES = Table(
    "sources",
    grain="one ingested source file",
    doc="The catalog: what was read, when, and what came of it. Re-ingest skips unchanged files using it.",
    per_source=False,
    columns=(
        C("source_path", STR, "absolute path of the source file, symlinks not resolved: the path it was first ingested under (a file reached by several paths is one source)"),
        C("source_tree", STR, "the PATH given to ingest it was found under (a directory, or the directory of a file given); files its data names are read only inside it"),
        C("source_format", STR, "format the file was read as; NULL when no format recognised it"),
        C("sha256", STR, "SHA-256 of the file bytes"),
        C("size_bytes", I64, "file size in bytes"),
        C("mtime_ns", I64, "modification time (ns) when read; with the size, a fast unchanged check"),
        C("records", I64, "source records seen in the file"),
        C("records_ingested", I64, "records that landed in the tables"),
        C("records_quarantined", I64, "records sent to quarantine (records = ingested + quarantined)"),
        C("status", STR, "ingested, empty (a JSONL file with no lines), not_records (a format knows the file and that it holds no records: see reason), unrecognised (no format claimed the file) or unreadable"),
        C("reason", STR, "why a not_records file holds no records, as its format says (e.g. steering run aggregates)"),
        J("depends_on", "other files (and directories) the rows were built from, with their size, mtime and SHA-256; a change in one re-ingests this file"),
        C("ingest_run", STR, "id of the ingest run that wrote the file's rows"),
        C("ingested_at", TS, "when that run read the file"),
    ),
    order=("source_path",),
)

QUARANTINE = Table(
    "quarantine",
    grain="one source record that could not be ingested",
    doc="Nothing is dropped silently: every record that fails lands here whole, with where and why.",
    columns=(
        C("source_path", STR, "absolute path of the source file"),
        C("source_format", STR, "format the file was read as, if known"),
        C("locator", STR, "where in the file: `[3]`, `12` (JSONL line), `[3].messages[1]`, empty for the whole file"),
        C("stage", STR, "read, decode, detect, map or validate"),
        C("error", STR, "what is wrong and what to do"),
        C("raw", STR, "the record's text (truncated to 64 KiB)"),
        C("raw_bytes", I64, "size of the record's text before truncation"),
        C("ingest_run", STR, "ingest run that found the problem"),
    ),
)

#: the core's tables, in the order docs list them; the installed formats' tables follow
CORE: tuple[Table, ...] = (RESPONSES, TURNS, SENTENCE_BOUNDARIES, ANNOTATIONS, EVALUATIONS, TOKEN_VALUES, SOURCES,
                          QUARANTINE)

#: provenance columns (and ``extra``) that stay last in a table; formats' columns go before them
TRAILING = ("source_path", "source_locator", "extra")


# --- derived forms -----------------------------------------------------------

_DUCKDB_SCALARS = {
    pa.string(): "VARCHAR",
    pa.int32(): "INTEGER",
    pa.int64(): "BIGINT",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    TS: "TIMESTAMP WITH TIME ZONE",
}


def duckdb_type(column: Column) -> str:
    if column.json:
        return "JSON"
    t = column.type
    if t == DEC:
        return DECIMAL_SQL
    if pa.types.is_list(t):
        return duckdb_type(Column("item", t.value_type, "")) + "[]"
    try:
        return _DUCKDB_SCALARS[t]
    except KeyError:  # pragma: no cover - a declaration error, caught by tests
        raise TypeError(f"column {column.name}: no DuckDB type for {t}") from None
