-- span_values: each vector's values over the tokens of each annotated span (one row per span and
-- vector): mean, max and the token of the max.
--
-- Spans count tokens from the response's start (token_base 'response') or over the whole sequence
-- ('sequence': the part before prompt_end is in the prompt segment). A list that does not line up
-- with the response's tokens gives values of other tokens: such rows say aligned = false.
CREATE OR REPLACE VIEW span_values AS
WITH s AS (
    SELECT
        a.annotation_id,
        a.response_id,
        a.category,
        a.span,
        a.token_start,
        a.token_end,
        a.token_base,
        -- the span's tokens in each segment: [prompt_from, prompt_to) and [response_from, response_to)
        CASE WHEN a.token_base = 'sequence' THEN a.token_start END AS prompt_from,
        CASE WHEN a.token_base = 'sequence' THEN least(a.token_end, r.prompt_end) END AS prompt_to,
        CASE WHEN a.token_base = 'sequence' THEN a.token_start - r.prompt_end ELSE a.token_start END AS response_from,
        CASE WHEN a.token_base = 'sequence' THEN a.token_end - r.prompt_end ELSE a.token_end END AS response_to,
        CASE WHEN a.token_base = 'sequence' THEN r.prompt_end ELSE 0 END AS response_offset
    FROM raw.annotations AS a
    LEFT JOIN raw.responses AS r ON r.response_id = a.response_id
    WHERE a.level = 'span' AND a.token_start IS NOT NULL AND a.token_end IS NOT NULL
)
SELECT
    s.annotation_id,
    s.response_id,
    s.category,
    s.span,
    s.token_start,
    s.token_end,
    s.token_base,
    t.trait,
    t.layer,
    t.method,
    t.component,
    t.vector_index,
    count(*) AS n_values,
    avg(t.value) AS mean_value,
    max(t.value) AS max_value,
    -- counted as token_start is: the token's index in the response, or in the sequence for 'sequence' spans
    arg_max(CASE WHEN t.segment = 'prompt' THEN t.token_index ELSE t.token_index + s.response_offset END, t.value)
        AS argmax_token,
    avg(t.normalized) AS mean_normalized,
    avg(t.cosine) AS mean_cosine,
    bool_and(t.aligned) AS aligned,
    t.source_path AS values_path
FROM s
JOIN token_values AS t
  ON t.response_id = s.response_id
 AND ((t.segment = 'response' AND t.token_index >= s.response_from AND t.token_index < s.response_to)
      OR (t.segment = 'prompt' AND t.token_index >= s.prompt_from AND t.token_index < s.prompt_to))
GROUP BY s.annotation_id, s.response_id, s.category, s.span, s.token_start, s.token_end, s.token_base,
         t.trait, t.layer, t.method, t.component, t.vector_index, t.source_path;
