"""What Scale adds to the warehouse: its columns of the shared tables and its own tables
(attachments, chunks, reference texts, rubric criteria), merged into ``warehouse.formatkit.declared.TABLES``."""

from __future__ import annotations

from warehouse.tables import BOOL, EXTRA, F64, I32, I64, RECORD_ID, STR, C, Column, Parent, Table, provenance

RESPONSE_COLUMNS: tuple[Column, ...] = (
    C("source_id", STR, "Scale `source_id` of the candidate message: who produced it (`model_1`, `base_model`, ...); NULL on a turn with no candidate"),
    C("turn_id", STR, "Scale turn `id`"),
    C("thread_id", STR, "Scale thread `id`, for turns delivered inside a Thread or Task"),
    C("thread_turn_index", I32, "0-based position of the Scale turn in its thread (orders a multi-turn conversation)"),
    C("task_id", STR, "Scale `task_id`, for turns delivered inside a Task"),
)

TURN_COLUMNS: tuple[Column, ...] = (
    C("temperature", F64, "sampling temperature the message was generated with (Scale `model_parameters.temperature`)"),
    C("max_completion_tokens", I64, "generation length limit (Scale `model_parameters.max_completion_tokens`)"),
    C("top_p", F64, "nucleus sampling parameter (Scale `model_parameters.top_p`)"),
    C("top_k", I64, "top-k sampling parameter (Scale `model_parameters.top_k`)"),
)

ANNOTATION_COLUMNS: tuple[Column, ...] = (
    C("thread_id", STR, "Scale thread `id` of the annotated thread or turn; joins thread-level annotations to `responses.thread_id`"),
    C("not_applicable", BOOL, "the annotator marked the question not applicable (Scale `not_applicable`)"),
    C("cannot_assess", BOOL, "the annotator could not assess the question (Scale `cannot_assess`)"),
)

COLUMNS = {"responses": RESPONSE_COLUMNS, "turns": TURN_COLUMNS, "annotations": ANNOTATION_COLUMNS}


#: where a row was read, then its record and response: a total order of each table below
ORDER = ("source_path", "source_locator", "record_id", "response_id")


def _of_message(index: str) -> Parent:
    """A message's rows belong to the message's response (or, in a prompt message, to the whole record)."""
    return Parent(by=("response_id", "record_id"), order=("turn_index", index, "source_path", "source_locator"))


def _message_links() -> tuple[Column, ...]:
    return (
        RECORD_ID,
        C("response_id", STR, "candidate the message is (NULL for prompt messages); join turns on (record_id, turn_index) for the message"),
        C("turn_index", I32, "0-based position of the message in its turn (`turns.turn_index`)"),
    )


TABLES: tuple[Table, ...] = (
    Table(
        "attachments",
        grain="one file attached to a message or given as a file annotation's value",
        doc=(
            "Scale message `content.attachments` (BasicFile, ImageFile, AudioFile) and the files of `file` "
            "annotations. The base64 `content` lives only here, so queries on `turns` never read it."
        ),
        columns=(
            *_message_links(),
            C("annotation_id", STR, "annotation whose value this file is (NULL for a message attachment)"),
            C("attachment_index", I32, "0-based position of the file in its list"),
            C("name", STR, "file name"),
            C("mime_type", STR, "MIME type as written (`text/plain`, `image/png`, ...)"),
            C("url", STR, "source location of the file"),
            C("scale_url", STR, "location of the file in Scale's storage"),
            C("content", STR, "the file's bytes, base64 as written (decode with `from_base64(content)`)"),
            C("size_bytes", I64, "file size in bytes as the source gives it (ImageFile `file_size_in_bytes`)"),
            C("duration", F64, "audio duration in seconds"),
            C("transcript", STR, "audio transcript"),
            C("transcript_url", STR, "location of the audio transcript"),
            C("transcript_start", F64, "start of the transcript in the audio, seconds"),
            C("transcript_end", F64, "end of the transcript in the audio, seconds"),
            *provenance(),
            EXTRA,
        ),
        order=ORDER,
        parent=_of_message("attachment_index"),
    ),
    Table(
        "chunks",
        grain="one chunk of a message",
        doc="Scale message `content.chunks`: typed pieces of a message; their annotations are in `annotations` (level `chunk`).",
        columns=(
            *_message_links(),
            C("chunk_index", I32, "0-based position of the chunk in its message"),
            C("chunk_type", STR, "type of the chunk as written (`text`, ...)"),
            C("text", STR, "text of the chunk"),
            *provenance(),
            EXTRA,
        ),
        order=ORDER,
        parent=_of_message("chunk_index"),
    ),
    Table(
        "reference_texts",
        grain="one reference text of a message",
        doc="Scale message `content.reference_texts`: documents given with a message (retrieval context, sources).",
        columns=(
            *_message_links(),
            C("reference_index", I32, "0-based position of the reference text in its message"),
            C("content", STR, "the reference text"),
            C("category", STR, "category of the reference text as written"),
            C("url", STR, "where the reference text comes from"),
            *provenance(),
            EXTRA,
        ),
        order=ORDER,
        parent=_of_message("reference_index"),
    ),
    Table(
        "rubric_criteria",
        grain="one criterion of a rubric defined on a turn",
        doc=(
            "Scale turn `rubrics[].criteria_definitions[]`. Messages are scored against them in "
            "`evaluations` (criterion = `criterion_id`); their annotations are in `annotations` (level `turn`)."
        ),
        columns=(
            RECORD_ID,
            C("rubric_index", I32, "0-based position of the rubric in the turn's `rubrics`"),
            C("criterion_index", I32, "0-based position of the criterion in its rubric"),
            C("criterion_id", STR, "id of the criterion; `evaluations.criterion` of the scores given against it"),
            C("criterion", STR, "text of the criterion"),
            C("weight", F64, "weight applied to the criterion's score"),
            C("max_total_score", F64, "maximum weighted total of the rubric"),
            *provenance(),
            EXTRA,
        ),
        order=ORDER[:3],
        # a turn's rubric is about the whole record: every candidate of the turn is scored against it
        parent=Parent(by=("record_id",), order=("rubric_index", "criterion_index", "source_path", "source_locator")),
    ),
)
