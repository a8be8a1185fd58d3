-- responses: one row per model output, with the fields derived from its path (path_fields) and the
-- parameters its folder's responses were generated with (generation_params, joined on the folder).
-- Both come from the installed formats that define them (NULL where none does).
CREATE OR REPLACE VIEW responses AS
SELECT
    r.*,
    pf.experiment,
    pf.pipeline,
    pf.model_variant,
    pf.trait,
    pf.position,
    pf.prompt_set,
    pf.prompt_id,
    pf.polarity,
    pf.split,
    pf.run_kind,
    pf.component,
    pf.method,
    pf.layers,
    pf.coefficients,
    pf.run_timestamp,
    gp.generation_params
FROM raw.responses AS r
LEFT JOIN path_fields AS pf USING (source_path)
LEFT JOIN generation_params AS gp ON gp.source_dir = pf.source_dir;
