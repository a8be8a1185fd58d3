"""trait-interp's views (``Ingestor.views``, run after the core's views of ``sql/``) and the views of the
core it defines (``Ingestor.defines``: its path grammar, and the generation parameters ``responses`` joins)."""

from .path_fields import PATH_FIELDS

#: generation_params (the core's view, ``sql/11_generation_params.sql``): the parameters of a folder of
#: extraction responses, from its generation-parameters file
GENERATION_PARAMS = """
-- One parameters file per folder: the sibling metadata.json wins over an older
-- generation_metadata.json one level up.
CREATE OR REPLACE VIEW generation_params AS
SELECT responses_dir AS source_dir, params AS generation_params
FROM raw.generation_metadata
QUALIFY row_number() OVER (
    PARTITION BY responses_dir
    ORDER BY (source_path LIKE '%/generation_metadata.json'), source_path
) = 1
"""

#: the core's views whose statement trait-interp gives
DEFINES = {"path_fields": PATH_FIELDS, "generation_params": GENERATION_PARAMS}

ANNOTATION_SETS = r"""
-- annotation_sets: one row per trait-interp annotation file (its root: form, target, metadata, categories).
CREATE OR REPLACE VIEW annotation_sets AS
SELECT * FROM raw.annotation_sets;
"""

ANNOTATION_CATEGORIES = r"""
-- annotation_categories: one row per category defined at the root of an annotation file.
CREATE OR REPLACE VIEW annotation_categories AS
SELECT
    s.source_path,
    c.key AS category,
    -- a string's text; any other value as JSON (->> gives NULL for a JSON null: 'null', as written)
    coalesce(c.value ->> '$', CAST(c.value AS VARCHAR)) AS description
FROM raw.annotation_sets AS s, json_each(s.categories) AS c
WHERE s.categories IS NOT NULL;
"""

PROMPTS = r"""
-- prompts: one row per prompt of a trait-interp prompt set (the inputs of inference and steering).
--
-- prompt_set and set_kind come from the path, like the responses' fields:
--   datasets/inference/{prompt_set}.json (older: inference/prompts/{prompt_set}.json)  -> inference
--   datasets/traits/{trait}/steering.json (older: analysis/steering/prompts/{trait}.json) -> steering
-- A set file found elsewhere is named by its file name.
CREATE OR REPLACE VIEW prompts AS
SELECT
    coalesce(
        nullif(regexp_extract(source_path, '(?s)(?:^|/)(?:datasets/inference|inference/prompts)/(.+)\.json$', 1), ''),
        nullif(regexp_extract(source_path, '(?s)(?:^|/)datasets/traits/(.+)/steering\.json$', 1), ''),
        nullif(regexp_extract(source_path, '(?s)(?:^|/)analysis/steering/prompts/(.+)\.json$', 1), ''),
        regexp_extract(source_path, '([^/]+)\.json$', 1)
    ) AS prompt_set,
    CASE
        WHEN regexp_matches(source_path, '(?s)(?:^|/)datasets/traits/.+/steering\.json$')
          OR regexp_matches(source_path, '(?:^|/)analysis/steering/prompts/')
        THEN 'steering'
        ELSE 'inference'
    END AS set_kind,
    p.*
FROM raw.prompts AS p;
"""

GENERATION_METADATA = """
-- generation_metadata: one row per generation-parameters file of trait-interp extraction.
CREATE OR REPLACE VIEW generation_metadata AS
SELECT * FROM raw.generation_metadata;
"""

#: projection_files: each projection file with the fields of its path and whether the response it
#: scores is in the warehouse (a file whose response is missing keeps its rows: they say so here).
PROJECTION_FILES = """
CREATE OR REPLACE VIEW projection_files AS
SELECT
    f.*,
    p.experiment,
    p.model_variant,
    p.trait,
    p.prompt_set,
    p.prompt_id,
    f.response_id IN (SELECT response_id FROM raw.responses) AS response_found
FROM raw.projection_files AS f
LEFT JOIN path_fields AS p ON p.source_path = f.source_path
"""

#: model_variants: one row per model variant of an experiment, from its config.json
MODEL_VARIANTS = """
CREATE OR REPLACE VIEW model_variants AS
SELECT * FROM raw.model_variants
"""

VIEWS = (ANNOTATION_SETS, ANNOTATION_CATEGORIES, PROMPTS, GENERATION_METADATA, PROJECTION_FILES, MODEL_VARIANTS)
