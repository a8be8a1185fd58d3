"""What trait-interp adds to the warehouse: a column of ``annotations`` (``entry_key``) and its own
tables (prompt sets, generation parameters, annotation files), merged into ``warehouse.formatkit.declared.TABLES``.
How a span was placed in its response (``match``, ``token_base``, ...) is the core's ``annotations``:
its views (``annotated_spans``, ``span_values``) read it."""

from __future__ import annotations

from warehouse.tables import BOOL, EXTRA, F64, I64, STR, STRS, C, J, Parent, Table, provenance

#: how an annotation entry names the response it annotates, as written: trait-interp's reader compares an
#: ``idx`` strictly (``"35"`` is not ``35``), so an export gives it back in its own key and JSON type
ENTRY_KEY = J("entry_key", "the annotation entry's own name for its response, as written (`{\"idx\": \"35\"}`; "
              "trait-interp's unified form): an export writes it back in this key and JSON type")

COLUMNS = {"annotations": (ENTRY_KEY,)}

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

PROJECTION_FILES = Table(
    "projection_files",
    grain="one per-token projection file (trait-interp `projections/`)",
    doc=(
        "What a projection file says about itself: its shape, its metadata, the response it scores, and the "
        "per-file data of older shapes (activation norms by layer, massive dimensions, logit lens). Its "
        "values are in `token_values`. The view adds the path's fields and whether the response is in "
        "the warehouse (`response_found`)."
    ),
    columns=(
        C("response_id", STR, "the response scored: the id of the response file beside it (`response_path`), or of the file itself when it holds its own response (the first shapes)"),
        C("response_path", STR, "the response file the path names (`inference/{variant}/responses/{prompt_set}/{id}.json`); NULL when the file holds its own response"),
        C("shape", STR, "the file's shape, by its history (docs/token_values.md#shapes): H0-H2, H3, H4-H5a, H5b, H6-H7, H8 or H9"),
        C("n_prompt_tokens", I64, "metadata.n_prompt_tokens: the response's prompt tokens (token_values.n_tokens of the prompt segment)"),
        C("n_response_tokens", I64, "metadata.n_response_tokens: the response's own tokens (it may differ from the values' count: token_values.aligned)"),
        C("multi_vector", BOOL, "metadata.multi_vector, as written"),
        C("n_vectors", I64, "metadata.n_vectors, as written"),
        C("component", STR, "metadata.component: the activation hooked (residual, attn_contribution)"),
        C("position", STR, "metadata.position: the token positions the (first) vector was extracted from"),
        C("centered", BOOL, "metadata.centered: every score had its vector's baseline subtracted"),
        C("score_mode", STR, "metadata.score_mode (raw+normalized); NULL when the file does not say (read as raw)"),
        C("projection_date", STR, "metadata.projection_date, as written (local ISO time)"),
        J("metadata", "the rest of the metadata object (prompt_id, prompt_set, vector_source, ...)"),
        J("activation_norms", "older shapes: mean activation norm per layer, {prompt: [...], response: [...]}"),
        J("massive_dim_data", "older shapes: the massive dimensions and their values per token"),
        J("logit_lens", "older shapes: top predictions per layer and token, {prompt: {layer_L: {tokens, probs}}, response: ...}"),
        *provenance("empty: the whole file is one record"),
        EXTRA,
    ),
    order=("source_path",),
    parent=Parent(by=("response_id",), order=("source_path",)),
)

MODEL_VARIANTS = Table(
    "model_variants",
    grain="model variant of a trait-interp experiment (`experiments/{experiment}/config.json`)",
    doc="Which model (and LoRA adapter) each variant of an experiment runs, and which variants are its defaults.",
    columns=(
        C("experiment", STR, "the experiment: the folder holding config.json"),
        C("variant", STR, "the model variant (the `inference/{variant}/` folder name); NULL for a config with no variants"),
        C("model", STR, "model id of the variant (a Hugging Face id)"),
        C("lora", STR, "LoRA adapter applied to the model, when the variant has one"),
        C("default_for", STRS, "the pipelines this variant is the default of (`defaults`: extraction, application)"),
        *provenance("the variant's place: `.model_variants[\"instruct\"]`"),
        EXTRA,
    ),
    order=("source_path", "source_locator"),
)

#: in the order docs list them
TABLES: tuple[Table, ...] = (PROMPTS, GENERATION_METADATA, ANNOTATION_SETS, PROJECTION_FILES, MODEL_VARIANTS)
