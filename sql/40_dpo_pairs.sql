-- dpo_pairs: preference pairs for DPO, one row per (chosen, rejected) pair of answers to the SAME
-- CONVERSATION: answers a judge graded differently (paired_by 'overall_grade'), and answers a source
-- marks chosen and rejected (paired_by 'preference').
--
-- Graded pairs. The conversation an answer replies to is every message before it: the messages
-- of its record that are its own or shared (turns.response_id NULL), in turn_index
-- order, before its answer (its last assistant message), and its system prompt.
-- Two answers pair when all of that is equal (roles and texts): the same first
-- user message is not enough, since a multi-turn conversation may go on differently
-- (the format docs that write such grades say more). `conversation_key` (a hash of it) groups them.
-- Grades rank perfect > good > needs_improvement > bad > not_acceptable
-- (the judge's grade schema); a grade outside those five, an unanswered
-- conversation (response NULL) and an empty answer are left out, as the judging
-- tool's own DPO exporter leaves them.
--
-- Pairs per conversation are bounded by its answers, not their square: the chosen
-- answer is the conversation's best, paired with every answer of a lower grade,
-- so n graded answers give at most n - 1 pairs (the judging tool's own exporter writes
-- one, its best against its worst; that pair is among these). The best is the
-- highest grade; among equals the highest final score, a current 0-1 score
-- before a legacy 0-100 one (scores of two scales are never compared); then the
-- first in the source. (Every pair of answers with different grades grows with
-- the square of a conversation's answers: a few prompts with many graded answers
-- each gave more pairs than memory holds.)
--
-- Marked pairs. A record whose answers carry an evaluation `criterion = 'preference'` with
-- `label` 'chosen' or 'rejected' (a preference row: TRL's prompt/chosen/rejected) pairs each
-- chosen answer with each rejected one of the same record, as the source paired them; their
-- conversation is the record's shared messages (its prompt; `prompt` when it has none), and
-- an answer is left out only when it has no text at all (response NULL).
CREATE OR REPLACE VIEW dpo_pairs AS
WITH graded AS (
    SELECT
        response_id,
        label AS grade,
        CASE label
            WHEN 'perfect' THEN 5
            WHEN 'good' THEN 4
            WHEN 'needs_improvement' THEN 3
            WHEN 'bad' THEN 2
            WHEN 'not_acceptable' THEN 1
        END AS grade_rank
    FROM raw.evaluations
    WHERE criterion = 'overall_grade' AND response_id IS NOT NULL
),
final AS (
    SELECT response_id, score AS final_score, score_scale AS final_score_scale
    FROM raw.evaluations
    WHERE criterion = 'final_score' AND response_id IS NOT NULL
),
answer AS (  -- where each answer sits in its record's messages
    SELECT response_id, any_value(record_id) AS record_id, max(turn_index) AS answer_turn
    FROM raw.turns
    WHERE role = 'assistant' AND response_id IS NOT NULL
    GROUP BY response_id
),
asked AS (  -- the messages before it
    SELECT a.response_id,
           list({'role': t.role, 'content': t.content} ORDER BY t.turn_index, t.source_locator) AS messages,
           list(t.content ORDER BY t.turn_index) FILTER (WHERE t.role = 'user')[1] AS first_user_message
    FROM answer AS a
    JOIN raw.turns AS t
      ON t.record_id = a.record_id AND (t.response_id = a.response_id OR t.response_id IS NULL) AND t.turn_index < a.answer_turn
    GROUP BY a.response_id
),
candidates AS (
    SELECT r.response_id, r.response, r.prompt, q.first_user_message, g.grade, g.grade_rank, s.final_score,
           s.final_score_scale, md5(to_json({system_prompt: r.system_prompt, messages: q.messages})::VARCHAR) AS conversation_key,
           r.source_path, r.record_index, r.source_locator
    FROM raw.responses AS r
    JOIN asked AS q USING (response_id)
    JOIN graded AS g USING (response_id)
    LEFT JOIN final AS s USING (response_id)
    WHERE g.grade_rank IS NOT NULL AND r.response <> '' AND q.first_user_message IS NOT NULL
),
ranked AS (  -- the best answer of each conversation is its first (a subquery, not QUALIFY: Spark reads this view too)
    SELECT *, row_number() OVER (
        PARTITION BY conversation_key
        ORDER BY grade_rank DESC, final_score_scale NULLS LAST, final_score DESC NULLS LAST, source_path,
                 record_index NULLS LAST, source_locator, response_id
    ) AS place
    FROM candidates
),
best AS (
    SELECT * FROM ranked WHERE place = 1
),
marked AS (  -- answers their source marks chosen or rejected
    SELECT response_id, any_value(record_id) AS record_id, any_value(label) AS mark
    FROM raw.evaluations
    WHERE criterion = 'preference' AND label IN ('chosen', 'rejected') AND response_id IS NOT NULL
    GROUP BY response_id
),
shared AS (  -- the messages a marked record's answers share: the prompt they answer
    SELECT record_id,
           list({'role': role, 'content': content} ORDER BY turn_index, source_locator) AS messages,
           list(content ORDER BY turn_index) FILTER (WHERE role = 'user')[1] AS first_user_message
    FROM raw.turns
    WHERE response_id IS NULL AND record_id IN (SELECT record_id FROM marked)
    GROUP BY record_id
),
preferred AS (
    SELECT r.response_id, r.record_id, r.response, r.prompt, m.mark, s.final_score, s.final_score_scale,
           coalesce(q.first_user_message, r.prompt) AS first_user_message,
           md5(to_json({system_prompt: r.system_prompt,
                        messages: coalesce(q.messages, [{'role': 'user', 'content': r.prompt}])})::VARCHAR) AS conversation_key
    FROM raw.responses AS r
    JOIN marked AS m ON m.response_id = r.response_id
    LEFT JOIN shared AS q ON q.record_id = r.record_id
    LEFT JOIN final AS s ON s.response_id = r.response_id
    WHERE r.response IS NOT NULL
),
pairs AS (  -- (chosen, rejected) by the way they pair: each an equi-join
    SELECT c.response_id AS chosen, r.response_id AS rejected, 'overall_grade' AS paired_by
    FROM best AS c
    JOIN candidates AS r ON r.conversation_key = c.conversation_key AND c.grade_rank > r.grade_rank
    UNION ALL
    SELECT c.response_id, r.response_id, 'preference'
    FROM preferred AS c
    JOIN preferred AS r ON r.record_id = c.record_id AND c.mark = 'chosen' AND r.mark = 'rejected'
),
answers AS (  -- what a pair shows of each answer, by the way it pairs
    SELECT 'overall_grade' AS paired_by, response_id, conversation_key, first_user_message, prompt, response, grade,
           final_score, final_score_scale
    FROM candidates
    UNION ALL
    SELECT 'preference', response_id, conversation_key, first_user_message, prompt, response, NULL,
           final_score, final_score_scale
    FROM preferred
)
SELECT
    c.conversation_key,
    c.first_user_message,
    c.prompt,
    p.chosen AS chosen_response_id,
    p.rejected AS rejected_response_id,
    c.response AS chosen_response,
    r.response AS rejected_response,
    c.grade AS chosen_grade,
    r.grade AS rejected_grade,
    c.final_score AS chosen_final_score,
    c.final_score_scale AS chosen_final_score_scale,
    r.final_score AS rejected_final_score,
    r.final_score_scale AS rejected_final_score_scale,
    p.paired_by
FROM pairs AS p
JOIN answers AS c ON c.response_id = p.chosen AND c.paired_by = p.paired_by
JOIN answers AS r ON r.response_id = p.rejected AND r.paired_by = p.paired_by;
