-- token_values: one row per token of every list of per-token values (raw.token_values keeps one
-- list per response, vector and segment; docs/token_values.md).
--
-- token_index is the value's position in its list, which is the token's index inside its segment
-- when the list lines up with the response's tokens (aligned). A list that does not (a value short,
-- a prompt list left empty) is shown as it is: never padded, cut or shifted. Values are read from the
-- decimal list, or from the float one where a list holds a number no decimal keeps exactly.
--
-- The lists are unnested in a select list, not by a lateral UNNEST: DuckDB turns a lateral one into
-- a join of every list's rows with the filtered lists, so a query for one trait and layer unnested
-- every list of the table first; this way its filter reaches the Parquet scan.
CREATE OR REPLACE VIEW token_values AS
SELECT
    v.response_id,
    v.segment,
    v.token_index,
    v.trait,
    v.layer,
    v.method,
    v.value_list[v.token_index + 1] AS value,
    v.norm_list[v.token_index + 1] AS norm,
    v.normalized_list[v.token_index + 1] AS normalized,
    v.value_list[v.token_index + 1] / nullif(v.norm_list[v.token_index + 1], 0) AS cosine,
    v.component,
    v.vector_index,
    v.selection_source,
    v.baseline,
    v.centered,
    v.position,
    array_length(v.value_list) AS n_scores,
    v.n_tokens,
    array_length(v.value_list) = v.n_tokens AS aligned,
    v.source_path,
    v.source_locator,
    v.extra
FROM (
    SELECT *, unnest(range(array_length(l.value_list))) AS token_index
    FROM (
        SELECT
            *,
            coalesce(scores_float, CAST(scores AS DOUBLE[])) AS value_list,
            coalesce(norms_float, CAST(norms AS DOUBLE[])) AS norm_list,
            coalesce(normalized_float, CAST(normalized AS DOUBLE[])) AS normalized_list
        FROM raw.token_values
    ) AS l
) AS v;
