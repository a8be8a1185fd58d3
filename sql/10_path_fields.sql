-- path_fields: the fields a source file's path encodes (experiment, prompt set, ...), one row per source
-- file, joined on source_path by responses, sources and the views over them.
--
-- Which paths encode what is a format's grammar, not the core's: an installed format that defines
-- path_fields (Ingestor.defines; docs/paths.md) replaces this statement with its own, of the same
-- columns. This one, used when no installed format does, derives only source_dir (the folder of the
-- file) and leaves every other field NULL.
--
-- The ingest runner materialises the statement in use per source file after each run, and `connect()`
-- uses that copy only while the statement's text is unchanged.
CREATE OR REPLACE VIEW path_fields AS
SELECT
    source_path,
    regexp_replace(source_path, '/[^/]*$', '') AS source_dir,
    CAST(NULL AS VARCHAR) AS experiment,
    CAST(NULL AS VARCHAR) AS pipeline,
    CAST(NULL AS VARCHAR) AS model_variant,
    CAST(NULL AS VARCHAR) AS trait,
    CAST(NULL AS VARCHAR) AS position,
    CAST(NULL AS VARCHAR) AS prompt_set,
    CAST(NULL AS VARCHAR) AS prompt_id,
    CAST(NULL AS VARCHAR) AS polarity,
    CAST(NULL AS VARCHAR) AS split,
    CAST(NULL AS VARCHAR) AS run_kind,
    CAST(NULL AS VARCHAR) AS component,
    CAST(NULL AS VARCHAR) AS method,
    CAST(NULL AS INTEGER[]) AS layers,
    CAST(NULL AS DOUBLE[]) AS coefficients,
    CAST(NULL AS TIMESTAMP) AS run_timestamp,
    CAST(NULL AS INTEGER) AS layer
FROM raw.sources;
