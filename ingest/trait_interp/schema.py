"""What trait-interp adds to the warehouse: the span columns of ``annotations`` and its own
tables (prompt sets, generation parameters, annotation files), merged into ``warehouse.tables.TABLES``."""

from __future__ import annotations

from warehouse.tables import EXTRA, F64, I64, STR, C, Column, J, Table, provenance

#: how a span annotation was placed in its response (ingest/spans.py)
SPAN_COLUMNS: tuple[Column, ...] = (
    C("occurrences", I64, "times the span text occurs in the response (case-insensitively when only that matched)"),
    C("match", STR, "how the span was found: exact, case_insensitive; NULL when not found"),
    C("unresolved_reason", STR, "why a span has no character range (not found, empty, repeat beyond the occurrences, no response text)"),
    C("token_source", STR, "where the token range comes from: annotation_file, stored_tokens or tokenizer"),
    C("token_base", STR, "token indices are relative to the response start (response) or the whole sequence (sequence)"),
    C("prompt_tokens", I64, "prompt length in tokens under the tokenization used: absolute index = prompt_tokens + token_start"),
)

#: how an annotation entry names the response it annotates, as written: trait-interp's reader compares an
#: ``idx`` strictly (``"35"`` is not ``35``), so an export gives it back in its own key and JSON type
ENTRY_KEY = J("entry_key", "the annotation entry's own name for its response, as written (`{\"idx\": \"35\"}`; "
              "trait-interp's unified form): an export writes it back in this key and JSON type")

COLUMNS = {"annotations": (*SPAN_COLUMNS, ENTRY_KEY)}

PROMPTS = Table(
    "prompts",
    grain="one prompt of a prompt set",
    doc=(
        "Inputs of trait-interp runs (prompt-set files). The view derives `prompt_set` and `set_kind` "
        "from the path, so prompts join responses on (prompt_set, prompt_id)."
    ),
    columns=(
        C("prompt_id", STR, "prompt id as text (int or string in the source; a steering question's position)"),
        C("prompt", STR, "prompt text"),
        C("note", STR, "note of the prompt (becomes a response's prompt_note)"),
        C("system_prompt", STR, "system prompt of the whole set"),
        C("set_name", STR, "display name of the set"),
        C("set_description", STR, "description of the set"),
        *provenance(),
        EXTRA,
    ),
)

GENERATION_METADATA = Table(
    "generation_metadata",
    grain="one generation-parameters file (trait-interp extraction metadata.json)",
    doc="Generation parameters of a directory of responses; the responses view joins them on responses_dir.",
    columns=(
        C("responses_dir", STR, "directory whose response files these parameters describe"),
        C("model", STR, "model name"),
        C("temperature", F64, "sampling temperature"),
        C("max_new_tokens", I64, "generation length limit"),
        C("rollouts", I64, "responses per scenario"),
        C("timestamp", STR, "when generation ran, as written"),
        J("params", "the whole file (JSON object)"),
        *provenance("empty: the whole file is one record"),
    ),
)

ANNOTATION_SETS = Table(
    "annotation_sets",
    grain="one annotation file (trait-interp)",
    doc="The root of an annotation file: its form, what it annotates, its metadata and category definitions.",
    columns=(
        C("form", STR, "unified, dense, hacks, biases, detailed (token ranges by prompt id), audit or sentence_categories"),
        C("target", STR, "the response file or prompt-set directory the file annotates, when known"),
        J("metadata", "the file's metadata (or description) object"),
        J("categories", "category definitions: {name: description}"),
        *provenance("empty: the file's root"),
        EXTRA,
    ),
)

#: in the order docs list them
TABLES: tuple[Table, ...] = (PROMPTS, GENERATION_METADATA, ANNOTATION_SETS)
