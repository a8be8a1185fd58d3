-- sentence_values: each vector's values over the tokens of each sentence of a response
-- (sentence_boundaries: response-relative, end-exclusive), with the sentence's cue_p. One row per
-- sentence and vector: mean, max and the token of the max (its index in the response).
CREATE OR REPLACE VIEW sentence_values AS
SELECT
    b.response_id,
    b.sentence_num,
    b.token_start,
    b.token_end,
    b.cue_p,
    t.trait,
    t.layer,
    t.method,
    t.component,
    t.vector_index,
    count(*) AS n_values,
    avg(t.value) AS mean_value,
    max(t.value) AS max_value,
    arg_max(t.token_index, t.value) AS argmax_token,
    avg(t.normalized) AS mean_normalized,
    avg(t.cosine) AS mean_cosine,
    bool_and(t.aligned) AS aligned,
    t.source_path AS values_path
FROM raw.sentence_boundaries AS b
JOIN token_values AS t
  ON t.response_id = b.response_id
 AND t.segment = 'response'
 AND t.token_index >= b.token_start
 AND t.token_index < b.token_end
GROUP BY b.response_id, b.sentence_num, b.token_start, b.token_end, b.cue_p,
         t.trait, t.layer, t.method, t.component, t.vector_index, t.source_path;
