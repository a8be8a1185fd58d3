-- variant_differences: per token, the difference between two model variants' values of the same
-- vector on the same prompt (same experiment, prompt set, prompt id, trait, layer, method, component,
-- segment and token index), for every ordered pair of variants: difference = value_b - value_a.
--
-- Two variants answer a prompt with their own tokens: token j of one response is token j of the
-- other only when both score the same text (a replay). aligned_a/aligned_b say whether each list
-- lines up with its own response's tokens.
CREATE OR REPLACE VIEW variant_differences AS
WITH t AS (
    SELECT v.*, p.experiment, p.model_variant, p.prompt_set, p.prompt_id
    FROM token_values AS v
    JOIN path_fields AS p ON p.source_path = v.source_path
    WHERE p.model_variant IS NOT NULL
)
SELECT
    a.experiment,
    a.prompt_set,
    a.prompt_id,
    a.trait,
    a.layer,
    a.method,
    a.component,
    a.segment,
    a.token_index,
    a.model_variant AS variant_a,
    b.model_variant AS variant_b,
    a.value AS value_a,
    b.value AS value_b,
    b.value - a.value AS difference,
    a.normalized AS normalized_a,
    b.normalized AS normalized_b,
    b.normalized - a.normalized AS normalized_difference,
    a.aligned AS aligned_a,
    b.aligned AS aligned_b,
    a.response_id AS response_id_a,
    b.response_id AS response_id_b,
    a.source_path AS values_path_a,
    b.source_path AS values_path_b
FROM t AS a
JOIN t AS b
  ON b.experiment = a.experiment
 AND b.prompt_set = a.prompt_set
 AND b.prompt_id = a.prompt_id
 AND b.trait = a.trait
 AND b.layer = a.layer
 AND b.method = a.method
 AND b.component IS NOT DISTINCT FROM a.component
 AND b.segment = a.segment
 AND b.token_index = a.token_index
 AND b.model_variant <> a.model_variant;
