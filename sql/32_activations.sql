-- activations: one row per activation file (.pt), with what its path says and its link to responses.
--
-- Inference files hold one prompt each: response_id is the response with the same experiment,
-- model variant, prompt set and prompt id. Extraction files hold every response of a trait
-- (rows in the order the extraction pipeline kept them): responses_dir names the directory of
-- those responses, to be joined with responses.source_path and ordered by record_index.
CREATE OR REPLACE VIEW activations AS
SELECT
    a.source_path AS activation_path,
    pf.experiment,
    pf.pipeline,
    pf.model_variant,
    pf.trait,
    pf.position,
    pf.component,
    pf.split,
    pf.polarity,
    pf.layer,
    pf.prompt_set,
    pf.prompt_id,
    r.response_id,
    CASE WHEN pf.pipeline = 'extraction'
        THEN regexp_replace(a.source_path, '(?s)/(?:val_)?activations/.*$', '/responses')
    END AS responses_dir,
    a.size_bytes,
    a.mtime_ns,
    a.source_path,
    a.source_locator
FROM raw.activations AS a
LEFT JOIN path_fields AS pf USING (source_path)
LEFT JOIN (
    SELECT rp.response_id, pr.experiment, pr.model_variant, pr.prompt_set, pr.prompt_id
    FROM raw.responses AS rp
    JOIN path_fields AS pr USING (source_path)
    WHERE pr.pipeline = 'inference' AND pr.prompt_id IS NOT NULL
) AS r
    ON pf.pipeline = 'inference'
   AND r.experiment = pf.experiment
   AND r.model_variant IS NOT DISTINCT FROM pf.model_variant
   AND r.prompt_set = pf.prompt_set
   AND r.prompt_id = pf.prompt_id;
