-- generation_params: the parameters the responses of a folder were generated with (temperature, max
-- tokens, ...), one row per folder (source_dir, as path_fields has it), joined by responses.
--
-- Where such parameters are kept is a format's to say: an installed format that defines
-- generation_params (Ingestor.defines) replaces this statement with its own, of the same columns. This
-- one, used when no installed format does, has no rows.
CREATE OR REPLACE VIEW generation_params AS
SELECT CAST(NULL AS VARCHAR) AS source_dir, CAST(NULL AS JSON) AS generation_params
LIMIT 0;
