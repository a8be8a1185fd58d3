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
