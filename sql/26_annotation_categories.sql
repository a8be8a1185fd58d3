-- annotation_categories: one row per category defined at the root of an annotation file.
CREATE OR REPLACE VIEW annotation_categories AS
SELECT
    s.source_path,
    c.key AS category,
    -- a string's text; any other value as JSON (->> gives NULL for a JSON null: 'null', as written)
    coalesce(c.value ->> '$', CAST(c.value AS VARCHAR)) AS description
FROM raw.annotation_sets AS s, json_each(s.categories) AS c
WHERE s.categories IS NOT NULL;
