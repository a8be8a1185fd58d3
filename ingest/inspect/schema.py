"""What Inspect adds to the warehouse: its columns of the shared tables, and its own tables (the eval
logs, the events of each sample's transcript, the scores reduced over epochs), merged into
``warehouse.formatkit.declared.TABLES``."""

from __future__ import annotations

from warehouse.tables import EXTRA, F64, I32, I64, STR, STRS, C, Column, J, Parent, Table, provenance

RESPONSE_COLUMNS: tuple[Column, ...] = (
    C("sample_id", STR, "id of the sample in its dataset, as text (Inspect `id`, an integer or a string)"),
    C("epoch", I32, "epoch of the sample, from 1 (Inspect `epoch`): a sample is run once per epoch, each run a response"),
    C("task", STR, "name of the evaluated task (Inspect `eval.task`)"),
    C("eval_id", STR, "id of the eval log the response comes from (Inspect `eval.eval_id`); joins `eval_logs`"),
    C("run_id", STR, "id of the eval run, shared by the logs of one `eval()` or eval set (Inspect `eval.run_id`)"),
    C("sample_uuid", STR, "unique id of this run of the sample (Inspect `uuid`)"),
    J("input", "the sample's input as written (Inspect `input`): a string, or a list of chat messages; the conversation as run is in `turns`"),
    C("targets", STRS, "the sample's target (Inspect `target`); a single string is a list of one, as Inspect's `Target` reads both"),
    C("choices", STRS, "the answer choices of a multiple-choice sample (Inspect `choices`)"),
    J("metadata", "the sample's metadata object as written (Inspect `metadata`)"),
)

TURN_COLUMNS: tuple[Column, ...] = (
    C("message_id", STR, "the message's own id in its source (Inspect `id`)"),
)

EVALUATION_COLUMNS: tuple[Column, ...] = (
    C("answer", STR, "the answer the scorer read from the output (Inspect score `answer`)"),
    J("value", "the score's value as written (Inspect score `value`: a number, a letter grade C/I/P/N, a boolean, a list or an object); `score` and `label` read it"),
    J("metadata", "the score's metadata object (Inspect score `metadata`: a model grader's conversation, ...)"),
)

COLUMNS = {"responses": RESPONSE_COLUMNS, "turns": TURN_COLUMNS, "evaluations": EVALUATION_COLUMNS}

#: where a row was read: a total order of a table of rows about files
_PLACE = ("source_path", "source_locator")

TABLES: tuple[Table, ...] = (
    Table(
        "eval_logs",
        grain="one Inspect eval log (a run of one task on one model)",
        doc=(
            "The header of an Inspect eval log: its eval spec, plan, results and stats, once per log "
            "(its samples are `responses` with its `eval_id`). A log whose run failed or was cancelled "
            "before any sample was logged gives this row alone."
        ),
        columns=(
            C("eval_id", STR, "id of the eval log (Inspect `eval.eval_id`); `responses.eval_id` of its samples"),
            C("run_id", STR, "id of the eval run, shared by the logs of one `eval()` or eval set (`eval.run_id`)"),
            C("task", STR, "name of the task (`eval.task`)"),
            C("task_id", STR, "id of the task (`eval.task_id`)"),
            C("task_version", STR, "version of the task, as text (`eval.task_version`)"),
            C("model", STR, "the model evaluated (`eval.model`, `provider/name`)"),
            C("created", STR, "when the eval was created, ISO text as written (`eval.created`)"),
            C("status", STR, "started, success, cancelled or error (`status`); NULL for a log whose run never finished (no header.json: the journal's start record is read)"),
            C("log_version", I64, "version of Inspect's log format (`version`)"),
            C("started_at", STR, "when the run started, ISO text (`stats.started_at`)"),
            C("completed_at", STR, "when the run ended, ISO text (`stats.completed_at`)"),
            C("total_samples", I64, "samples to run, epochs counted (`results.total_samples`)"),
            C("completed_samples", I64, "samples that completed (`results.completed_samples`)"),
            J("spec", "the rest of the eval spec as written (`eval`: dataset, config, model arguments, scorers, packages, revision, ...)"),
            J("plan", "the solvers and their parameters (`plan`)"),
            J("results", "the rest of the results (`results`: each scorer's metrics, the headline metric, ...)"),
            J("stats", "the rest of the stats (`stats`: tokens used per model, ...)"),
            J("eval_error", "why the run failed (`error`: message, traceback), for a log with status error"),
            *provenance("the member it was read from (`header.json`, `_journal/start.json`) in a .eval log; empty for a .json log"),
            EXTRA,
        ),
        order=_PLACE,
    ),
    Table(
        "sample_events",
        grain="one event of an Inspect sample's transcript",
        doc=(
            "Inspect sample `events`, in order: model calls, tool calls, state and store changes, scores, "
            "spans, ... Each event's fields other than the columns are in `extra`, as written (a model "
            "event's `input_refs` point into the pool in `responses.extra.events_data`; `attachment://` "
            "references into `responses.extra.attachments`)."
        ),
        columns=(
            C("response_id", STR, "the sample run (response) the event belongs to"),
            C("event_index", I32, "0-based position of the event in the sample's `events`"),
            C("event", STR, "kind of event (`event`: model, tool, state, store, score, span_begin, span_end, sample_init, info, error, ...)"),
            C("timestamp", STR, "when it happened, ISO text (`timestamp`)"),
            C("working_start", F64, "working time of the sample when it started, seconds (`working_start`)"),
            C("span_id", STR, "span the event happened in (`span_id`)"),
            *provenance(),
            EXTRA,
        ),
        order=(*_PLACE, "response_id", "event_index"),
        parent=Parent(by=("response_id",), order=("event_index", "source_path", "source_locator")),
    ),
    Table(
        "score_reductions",
        grain="one scorer's score of one sample, reduced over its epochs",
        doc=(
            "Inspect `reductions`: a sample's scores of several epochs reduced to one (mean, mode, ...) "
            "per scorer, the scores the log's metrics are computed from. Joined to the sample's responses "
            "on (`eval_id`, `sample_id`). A log written without its samples (`--no-log-samples`) has only these."
        ),
        columns=(
            C("eval_id", STR, "the eval log (`eval_logs.eval_id`)"),
            C("sample_id", STR, "the sample, as text (`sample_id`); `responses.sample_id`"),
            C("scorer", STR, "the scorer (`scorer`)"),
            C("reducer", STR, "how the epochs' scores were reduced (`reducer`: mean, mode, max, ...)"),
            C("score", F64, "numeric score (a number, a boolean as 0/1, or a letter grade as Inspect's metrics read it: C 1, P 0.5, I and N 0)"),
            C("score_scale", STR, "`0-1` for a score read from a letter grade or a boolean; NULL for a number, whose range the log does not say"),
            C("label", STR, "the value when it is text (a letter grade C/I/P/N, ...)"),
            J("value", "the value as written (`value`)"),
            C("answer", STR, "the answer scored (`answer`)"),
            C("feedback", STR, "the scorer's explanation (`explanation`)"),
            J("metadata", "the score's metadata (`metadata`)"),
            *provenance(),
            EXTRA,
        ),
        order=_PLACE,
    ),
)

#: a view per table, as the core's tables have (sql/): the tables' rows as they are
VIEWS: tuple[str, ...] = tuple(f"CREATE OR REPLACE VIEW {t.name} AS SELECT * FROM raw.{t.name}" for t in TABLES)
