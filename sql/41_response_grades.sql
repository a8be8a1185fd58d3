-- response_grades: the judge's verdict on a response, one row per response with an
-- overall grade or a final score (a judge's verdict, as evaluations), so grades join responses in one step:
--   SELECT persona, overall_grade, count(*) FROM responses JOIN response_grades USING (response_id) GROUP BY ALL
-- grade_rank orders the grades (perfect 5 ... not_acceptable 1; NULL for any other
-- label). final_score keeps the range it is given on beside it: filter on final_score_scale before
-- averaging, 0-1 and legacy 0-100 scores are different measures.
CREATE OR REPLACE VIEW response_grades AS
SELECT
    response_id,
    any_value(label) FILTER (WHERE criterion = 'overall_grade') AS overall_grade,
    CASE any_value(label) FILTER (WHERE criterion = 'overall_grade')
        WHEN 'perfect' THEN 5
        WHEN 'good' THEN 4
        WHEN 'needs_improvement' THEN 3
        WHEN 'bad' THEN 2
        WHEN 'not_acceptable' THEN 1
    END AS grade_rank,
    any_value(score) FILTER (WHERE criterion = 'final_score') AS final_score,
    any_value(score_scale) FILTER (WHERE criterion = 'final_score') AS final_score_scale
FROM raw.evaluations
WHERE criterion IN ('overall_grade', 'final_score') AND response_id IS NOT NULL
GROUP BY response_id;
