"""The columns Dataloop adds to the shared tables (merged into ``warehouse.formatkit.declared.TABLES``)."""

from __future__ import annotations

from warehouse.tables import F64, STR, C, Column, J

RESPONSE_COLUMNS: tuple[Column, ...] = (
    C("dltype", STR, "Dataloop document type of the item: `prompt` (prompt item) or `llm_trace`"),
    C("item_id", STR, "Dataloop item id (`id` of the platform item JSON)"),
    C("dataset_id", STR, "Dataloop dataset id (`datasetId`)"),
    C("item_filename", STR, "path of the item inside its Dataloop dataset (`filename`, e.g. `/prompts/cats.json`)"),
    C("item_creator", STR, "who created the Dataloop item (`creator`)"),
    C("item_created_at", STR, "when the Dataloop item was created (`createdAt`, ISO text as written)"),
    C("item_updated_at", STR, "when the Dataloop item was last updated (`updatedAt`, ISO text as written)"),
    C("prompt_key", STR, "Dataloop prompt key the output answers (`promptId` of the answer, a key of `prompts`: `1`, `prompt1`)"),
    C("model_id", STR, "id of the Dataloop model entity that produced the output"),
    C("model_confidence", F64, "confidence the model gave its output (Dataloop `model.confidence`, 0-1)"),
    C("response_ref", STR, "reference to a non-text output (image item id or stream URL) when the answer is not text"),
    C("response_mimetype", STR, "mimetype of a non-text output, as written (`image/png`)"),
)

TURN_COLUMNS: tuple[Column, ...] = (
    C("prompt_key", STR, "Dataloop prompt key the part belongs to (`1`, `prompt1`); the parts of one prompt share turn_index"),
)

ANNOTATION_COLUMNS: tuple[Column, ...] = (
    J("coordinates", "Dataloop `coordinates` as written: the text of a free-text answer, `{ref, refType, mimetype}` of a ref_image, a geometry"),
    C("item_id", STR, "Dataloop item id the annotation belongs to (`itemId`)"),
    C("prompt_key", STR, "Dataloop prompt key the annotation answers (`metadata.system.promptId`)"),
    C("creator", STR, "who created the annotation (`creator`: a user or a bot)"),
    C("created_at", STR, "when the annotation was created (`createdAt`, ISO text as written)"),
)

COLUMNS = {"responses": RESPONSE_COLUMNS, "turns": TURN_COLUMNS, "annotations": ANNOTATION_COLUMNS}
