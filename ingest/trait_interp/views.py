"""trait-interp's own views (``Ingestor.views``), run after the core's views of ``sql/``."""

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

VIEWS = (PROJECTION_FILES, MODEL_VARIANTS)
