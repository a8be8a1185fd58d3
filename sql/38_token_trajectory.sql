-- token_trajectory: a response's values for each vector in token order, prompt then response, with
-- the running mean and a moving mean (the value and two neighbours on each side), as a trajectory
-- of per-token projections is usually drawn (without centering it on the first token).
--
-- sequence_index is the token's index in the whole sequence (the response's prompt_end + token_index for
-- the response segment); token is the response's token there, when the list lines up with them.
CREATE OR REPLACE VIEW token_trajectory AS
WITH t AS (
    SELECT
        v.*,
        CAST(CASE WHEN v.segment = 'prompt' THEN v.token_index ELSE r.prompt_end + v.token_index END AS INTEGER) AS sequence_index,  -- INTEGER: Spark indexes lists by INT
        r.tokens AS response_tokens,
        -- the order of the means: prompt then response, without prompt_end (absent where the prompt has no tokens)
        CASE WHEN v.segment = 'prompt' THEN 0 ELSE 1 END AS prompt_first
    FROM token_values AS v
    LEFT JOIN raw.responses AS r ON r.response_id = v.response_id
)
SELECT
    t.response_id,
    t.trait,
    t.layer,
    t.method,
    t.component,
    t.vector_index,
    t.segment,
    t.token_index,
    t.sequence_index,
    CASE WHEN t.aligned THEN t.response_tokens[t.sequence_index + 1] END AS token,
    t.value,
    t.normalized,
    t.cosine,
    avg(t.value) OVER (PARTITION BY t.response_id, t.source_path, t.vector_index ORDER BY t.prompt_first, t.token_index
                       ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running_mean,
    avg(t.value) OVER (PARTITION BY t.response_id, t.source_path, t.vector_index ORDER BY t.prompt_first, t.token_index
                       ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING) AS moving_mean,
    t.aligned,
    t.source_path
FROM t;
