-- annotated_spans: every span annotation with its response text, character range, token range and tokens.
--
-- span_text is response[char_start:char_end] (DuckDB strings index code points, as Python does);
-- span_tokens are the stored tokens of the token range (response-relative ranges are shifted by the
-- response's prompt_end; `sequence` ranges index the whole token list). position_start/end are the
-- token positions in the full sequence, e.g. in an activation tensor.
CREATE OR REPLACE VIEW annotated_spans AS
SELECT
    a.annotation_id,
    a.response_id,
    r.source_path AS response_path,
    r.experiment,
    r.model_variant,
    r.prompt_set,
    r.prompt_id,
    r.trait,
    a.category,
    a.borderline,
    a.span,
    a.char_start,
    a.char_end,
    substring(r.response, a.char_start + 1, a.char_end - a.char_start) AS span_text,
    a.match,
    a.occurrences,
    a.token_start,
    a.token_end,
    a.token_source,
    a.tokenizer,
    a.tokenizer_revision,
    a.token_base,
    CASE a.token_base
        WHEN 'sequence' THEN a.token_start
        ELSE coalesce(a.prompt_tokens, r.prompt_end) + a.token_start
    END AS position_start,
    CASE a.token_base
        WHEN 'sequence' THEN a.token_end
        ELSE coalesce(a.prompt_tokens, r.prompt_end) + a.token_end
    END AS position_end,
    CASE
        WHEN a.token_base = 'sequence' THEN r.tokens[a.token_start + 1 : a.token_end]
        WHEN a.token_source IN ('stored_tokens', 'annotation_file') AND r.prompt_end IS NOT NULL
        THEN r.tokens[r.prompt_end + a.token_start + 1 : r.prompt_end + a.token_end]
    END AS span_tokens,
    a.note,
    a.unresolved_reason,
    r.response,
    a.source_path AS annotation_path,
    a.source_locator AS annotation_locator
FROM raw.annotations AS a
LEFT JOIN responses AS r USING (response_id)
WHERE a.level = 'span';
