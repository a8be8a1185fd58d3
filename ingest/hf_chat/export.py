"""``warehouse export --format hf_chat``: the selection as a Hugging Face chat dataset.

``--out`` is a folder ``datasets.load_dataset(out, config)`` reads (its README.md declares a config
per file):

* the rows the hf_chat ingest read go back in the shape they came in (``unmap.source_row``), one
  file per source file under ``sources/``, at its path below the folder the sources share, in the
  kind it was: Parquet for a Parquet file (its rows share one Arrow type), JSON Lines for a JSON
  or JSON Lines file (a row's keys exactly as they were: one Arrow type for all rows of a file
  would fill in the keys a row did not have);
* responses of other formats, as TRL's conversational shapes in Parquet: ``messages.parquet``
  (config ``messages``): one row per response with an answer, its conversation by the rule every
  export follows (``kit.conversation``, what ``openai_chat`` writes); ``preference.parquet``
  (config ``preference``): one row per ``dpo_pairs`` pair both of whose answers are selected and
  not both one hf_chat row's (that row carries it): ``prompt``, ``chosen``, ``rejected``.

Everything reads back as this format (``warehouse ingest``). The rows are made in ``unmap.py``; this
module stages the selection and writes, a window of records (and of pairs) at a time, with the export
kit; Parquet row groups hold ``ROW_GROUP`` rows whatever the window. docs/formats/hf_chat.md#export
"""

from __future__ import annotations

import os
import posixpath
import re
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq

from warehouse.errors import ExportError
from warehouse.exports import kit

from .unmap import message_type, messages_row, preference_row, source_row

MESSAGES, PREFERENCE, SOURCES, JSONL = "messages", "preference", "sources", "jsonl"
#: characters ``datasets`` refuses in a config name
CONFIG_REFUSED = re.compile(r'[<>:/\\|?*]')
#: rows per Parquet row group: fixed, so the same selection gives the same bytes
ROW_GROUP = 10_000
NATIVE = "r.source_format = 'hf_chat'"
FOREIGN = f"NOT ({NATIVE})"
#: one parent per source row: a record, in file order
RECORD_ORDER = "min(r.source_path), min(r.record_index) NULLS FIRST, min(r.source_locator)"
RECORD_COLUMNS = ("any_value(r.source_path) AS source_path, any_value(r.chat_shape) AS chat_shape, "
                  "any_value(r.extra) AS extra, list({'response_id': r.response_id, 'candidate_index': r.candidate_index, "
                  "'prompt': r.prompt, 'response': r.response, 'system_prompt': r.system_prompt}) AS responses")
TURN_ROW = ("{'response_id': c.response_id, 'turn_index': c.turn_index, 'role': c.role, 'content': c.content, "
            "'content_parts': c.content_parts, 'reasoning_content': c.reasoning_content, 'tool_calls': c.tool_calls, "
            "'tool_call_id': c.tool_call_id, 'tool_name': c.tool_name, 'source_locator': c.source_locator, 'extra': c.extra}")
#: the scores of a preference row (UltraFeedback's score_chosen, score_rejected); its marks are made again
SCORE = "c.criterion = 'score'"
#: the selected records of other formats hold a tool call or a tool's reply: the messages get tool fields
#: (a chat template that asks `'tool_calls' in message` would otherwise find null in every message)
FOREIGN_RECORDS = f"SELECT r.record_id FROM responses AS r WHERE r.response_id IN (SELECT response_id FROM selected) AND {FOREIGN}"
TOOL_SQL = (f"SELECT count(*) FROM turns AS c WHERE c.record_id IN ({FOREIGN_RECORDS}) "
            "AND ((c.tool_calls IS NOT NULL AND json_array_length(c.tool_calls) > 0) OR c.tool_call_id IS NOT NULL)")
REASONING_SQL = f"SELECT count(*) FROM turns AS c WHERE c.record_id IN ({FOREIGN_RECORDS}) AND c.reasoning_content IS NOT NULL"


def write(ctx: kit.ExportContext) -> int:
    files: dict[str, int] = {}  # config: rows
    left: Counter = Counter()
    written, split = _write_sources(ctx, files)
    tools = ctx.con.execute(TOOL_SQL).fetchall()[0][0] > 0
    message = message_type(tools)
    skipped = seen = 0
    out = ParquetOut(os.path.join(ctx.out, f"{MESSAGES}.parquet"), pa.schema([(MESSAGES, pa.list_(message))]))
    for row in kit.conversations(ctx, where=FOREIGN):
        c = kit.conversation(row)
        if c.answered:
            left.update(c.left_out)
            out.add(messages_row(c, tools, left))
        else:
            skipped += 1
        seen += 1
        if seen % kit.BATCH == 0:
            ctx.progress(written + seen)
    files[MESSAGES] = out.close()
    written += files[MESSAGES]
    files[PREFERENCE] = _write_pairs(ctx, message, tools, left)
    with open(os.path.join(ctx.out, "README.md"), "w", encoding="utf-8") as f:
        f.write(_card(files))
    _notes(ctx, files, skipped, split, left)
    return written


# --- the rows the hf_chat ingest read ----------------------------------------------------------------------


def _write_sources(ctx: kit.ExportContext, files: dict[str, int]) -> tuple[int, int]:
    """Each selected hf_chat record back into a file of its source's; (responses written, preference rows
    written as one answer's prompt and completion because the other answer is not selected)."""
    total = kit.stage(ctx, per=("r.record_id",), order=RECORD_ORDER, columns=RECORD_COLUMNS, where=NATIVE)
    if not total:
        return 0, 0
    kit.stage_children(ctx, "turns", row=TURN_ROW)
    kit.stage_children(ctx, "evaluations", name="scores", row="{'response_id': c.response_id, 'score': c.score}", where=SCORE)
    paths = [p for (p,) in ctx.con.execute("SELECT DISTINCT source_path FROM staged ORDER BY 1").fetchall()]
    names = _names(paths)
    written = split = 0
    out: SourceOut | None = None
    current = None
    for lo, hi in kit.windows(total):
        for r in kit.window(ctx, lo, hi, {"turns": "turns", "scores": "scores"}):
            if r["source_path"] != current:
                if out is not None:
                    _done(files, out)
                current = r["source_path"]
                out = SourceOut(ctx.out, names[current])
            row, whole = source_row(r)
            out.add(row)
            written += len(r["responses"])
            split += not whole
        ctx.progress(written)
    _done(files, out)
    return written, split


def _done(files: dict[str, int], out: SourceOut) -> None:
    name, n = out.close()
    files[name] = n


def _names(paths: list[str]) -> dict[str, str]:
    """Each source file's name under ``sources/``: its path below the folder they all share (its file name
    when they share none), safe to write (``kit.safe_path``), ending in ``.parquet``."""
    posix = [p.replace("\\", "/") for p in paths]
    folders = [posixpath.dirname(p) for p in posix]
    base = posixpath.commonpath(folders) if len({p.startswith("/") for p in posix}) == 1 else ""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for path, p in zip(paths, posix):
        rel = posixpath.relpath(p, base) if base else posixpath.basename(p)
        stem = posixpath.splitext(kit.safe_path(rel) or "rows")[0]
        name, k = f"{stem}.parquet", 1
        while name.lower() in taken:  # a.json beside a.jsonl
            k += 1
            name = f"{stem}-{k}.parquet"
        taken.add(name.lower())
        names[path] = name
    return names


# --- responses of other formats ----------------------------------------------------------------------------


def _write_pairs(ctx: kit.ExportContext, message: pa.DataType, tools: bool, left: Counter) -> int:
    """``preference.parquet``: the pairs both of whose answers are selected, a window of pairs at a time;
    a pair of two answers of one hf_chat row came back in that row."""
    # the format's own plan of what goes where (a layout_ table): the pairs, numbered in output order
    ctx.con.execute(
        "CREATE OR REPLACE TEMP TABLE layout_pairs AS SELECT row_number() OVER (ORDER BY c.source_path, c.source_locator, "
        "c.response_id, r.source_path, r.source_locator, r.response_id) AS n, p.chosen_response_id AS chosen, "
        "p.rejected_response_id AS rejected FROM dpo_pairs AS p "
        "JOIN responses AS c ON c.response_id = p.chosen_response_id JOIN responses AS r ON r.response_id = p.rejected_response_id "
        "WHERE p.chosen_response_id IN (SELECT response_id FROM selected) "
        "AND p.rejected_response_id IN (SELECT response_id FROM selected) "
        "AND NOT (c.source_format = 'hf_chat' AND r.source_format = 'hf_chat' AND c.record_id = r.record_id)").fetchall()
    total = ctx.con.execute("SELECT count(*) FROM layout_pairs").fetchall()[0][0]
    schema = pa.schema([(name, pa.list_(message)) for name in ("prompt", "chosen", "rejected")])
    out = ParquetOut(os.path.join(ctx.out, f"{PREFERENCE}.parquet"), schema)
    for lo, hi in kit.windows(total):
        pairs = ctx.con.execute(f"SELECT chosen, rejected FROM layout_pairs WHERE n BETWEEN {int(lo)} AND {int(hi)} "
                                "ORDER BY n").fetchall()
        window = f"r.response_id IN (SELECT chosen FROM layout_pairs WHERE n BETWEEN {int(lo)} AND {int(hi)} UNION ALL " \
                 f"SELECT rejected FROM layout_pairs WHERE n BETWEEN {int(lo)} AND {int(hi)})"
        conversations = {row["response_id"]: kit.conversation(row) for row in kit.conversations(ctx, where=window)}
        for chosen, rejected in pairs:
            a, b = conversations[chosen], conversations[rejected]
            if a.answered and b.answered:
                out.add(preference_row(a, b, tools, left))
    return out.close()


# --- files -----------------------------------------------------------------------------------------------------


class ParquetOut:
    """A Parquet file written ``ROW_GROUP`` rows at a time, made at its first row (none without rows). Its
    schema is given, or that of its first row group (a source's rows, which shared one)."""

    def __init__(self, path: str, schema: pa.Schema | None = None) -> None:
        self.path, self.schema = path, schema
        self.writer: pq.ParquetWriter | None = None
        self.rows: list[dict] = []
        self.count = 0

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if len(self.rows) >= ROW_GROUP:
            self._flush()

    def close(self) -> int:
        self._flush()
        if self.writer is not None:
            self.writer.close()
        return self.count

    def _flush(self) -> None:
        if not self.rows:
            return
        try:
            table = pa.Table.from_pylist(self.rows, schema=self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise ExportError(
                f"hf_chat export: the rows from {os.path.basename(self.path)} after row {self.count} do not fit the "
                f"Arrow types of the rows before them ({str(e).splitlines()[0]}); export fewer rows at a time with "
                "--where, or as --format jsonl") from None
        if self.writer is None:
            self.schema = table.schema
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self.writer = pq.ParquetWriter(self.path, self.schema, compression="zstd")
        self.writer.write_table(table)
        self.count += len(self.rows)
        self.rows.clear()


class SourceOut:
    """A source file's rows as Parquet, in one Arrow type made from all of them (a key some rows lack is
    null in those, as ``datasets`` writes it). The rows are spooled as JSON Lines first; when they have
    no one type (a message's content text in one row, a list of parts in another) the spool is the
    output, under ``jsonl/`` (no config: ``datasets`` reads one kind of file per folder)."""

    def __init__(self, out: str, name: str) -> None:
        self.out, self.name = out, name
        self.spool = os.path.join(out, ".spool.jsonl")  # one source file at a time
        self.f = open(self.spool, "wb")  # noqa: SIM115 (closed by close(), after the last row)
        self.count = 0

    def add(self, row: dict) -> None:
        self.f.write(kit.dumps_stdlib(row) + b"\n")  # NaN stays NaN until it is typed
        self.count += 1

    def close(self) -> tuple[str, int]:
        """(where the rows went, below the export; how many)."""
        self.f.close()
        try:
            schema = pa.unify_schemas([pa.Table.from_pylist(rows).schema for rows in self._groups()],
                                      promote_options="permissive")
            out = ParquetOut(os.path.join(self.out, SOURCES, *self.name.split("/")), schema)
            for rows in self._groups():
                for row in rows:
                    out.add(row)
            out.close()
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            if out_path := _exists(os.path.join(self.out, SOURCES, *self.name.split("/"))):
                os.remove(out_path)
            name = f"{JSONL}/{self.name.rsplit('.', 1)[0]}.jsonl"
            os.makedirs(os.path.dirname(os.path.join(self.out, name)), exist_ok=True)
            os.replace(self.spool, os.path.join(self.out, *name.split("/")))
            return name, self.count
        os.remove(self.spool)
        return f"{SOURCES}/{self.name}", self.count

    def _groups(self):
        with open(self.spool, "rb") as f:
            rows = []
            for line in f:
                rows.append(kit.loads(line))
                if len(rows) >= ROW_GROUP:
                    yield rows
                    rows = []
            if rows:
                yield rows


def _exists(path: str) -> str | None:
    return path if os.path.exists(path) else None


# --- the dataset card and the notes ----------------------------------------------------------------------------


def _configs(names: list[str]) -> dict[str, str]:
    """Each file's config name: its path below the export without the extension, folders joined by ``--``
    (``datasets`` refuses ``/`` and the other characters Windows refuses in a folder name)."""
    configs: dict[str, str] = {}
    for name in names:
        stem = name.rsplit(".", 1)[0] if name.endswith((".parquet", ".jsonl")) else name
        config, k = CONFIG_REFUSED.sub("_", stem.replace("/", "--")), 1
        while config in configs.values():
            k += 1
            config = f"{CONFIG_REFUSED.sub('_', stem.replace('/', '--'))}-{k}"
        configs[name] = config
    return configs


def _card(files: dict[str, int]) -> str:
    """README.md: a config per file that has rows (``datasets`` refuses a config without data);
    ``messages`` is the default where there is one."""
    paths = {name: (name if "/" in name else f"{name}.parquet") for name, n in files.items() if n}
    order = sorted(paths, key=lambda name: (name != MESSAGES, name.startswith(f"{SOURCES}/"), name))
    typed = [name for name in order if not name.startswith(f"{JSONL}/")]
    _config = _configs(order).__getitem__
    front = ["---", "configs:" if typed else "configs: []"]
    for name in typed:
        front += [f"- config_name: {_config(name)}", "  data_files:", "  - split: train", f"    path: {paths[name]}"]
        if name == typed[0]:
            front.append("  default: true")
    front.append("---")
    table = [f"| {f'`{_config(name)}`' if name in typed else '(none)'} | `{paths[name]}` | {files[name]:,} |" for name in order]
    body = [
        "",
        "# Chat dataset exported from a response warehouse",
        "",
        "`warehouse export --format hf_chat`: rows read from Hugging Face chat datasets in the shape they came in "
        "(`sources/`), and the responses of other sources in TRL's conversational formats (`messages`: the conversation "
        "that ends in each answer; `preference`: `prompt`, `chosen`, `rejected` per pair of answers to one conversation). "
        "A source file whose rows have no one Arrow type is under `jsonl/`, as JSON Lines: "
        '`load_dataset("json", data_files=...)`.',
        "",
        "| config | file | rows |",
        "|---|---|---|",
        *table,
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        'rows = load_dataset("PATH_OR_REPO", "CONFIG")',
        "```",
    ]
    return "\n".join(front + body) + "\n"


def _notes(ctx: kit.ExportContext, files: dict[str, int], skipped: int, split: int, left: Counter) -> None:
    untyped = [name for name in files if name.startswith(f"{JSONL}/")]
    if untyped:
        ctx.notes.append(f"{len(untyped)} source files have rows of no one Arrow type (a message's content text in one "
                         f"row, a list of parts in another): written as JSON Lines under {JSONL}/, with no config "
                         f"(first: {untyped[0]})")
    if split:
        ctx.notes.append(f"{split} preference rows have one of their two answers selected: written as that answer's "
                         "prompt and completion")
    if skipped:
        ctx.notes.append(f"{skipped} selected responses of other formats have no answer text (response NULL or empty) "
                         "and were left out")
    kit.note_left_out(ctx, left, "a Hugging Face chat message here is OpenAI's shape, its content text: "
                                 "docs/export.md#conversations")
    reasoning = ctx.con.execute(REASONING_SQL).fetchall()[0][0]
    if reasoning:
        ctx.notes.append(f"reasoning_content of {reasoning} messages of other formats is not written (the conversation "
                         "rule writes OpenAI's chat shape: role, content, tool calls)")
    kit.note_not_carried(ctx, "hf_chat", [t for t in kit.children() if t not in ("turns", "evaluations")])
    evaluations = kit.rows_text(kit.count_belonging(ctx, FOREIGN, ["evaluations"]))
    if evaluations:
        ctx.notes.append(f"hf_chat carries the evaluations of other formats' responses ({evaluations}) only as the pairs "
                         "of preference.parquet (differing grades); their scores and labels are not exported")


EXPORT = kit.ExportFormat(
    "hf_chat",
    "a Hugging Face chat dataset (for datasets.load_dataset and TRL): hf_chat rows in the shape they came in, other "
    "formats' responses as messages, and their preference pairs as prompt/chosen/rejected",
    directory=True,
    write=write,
)
