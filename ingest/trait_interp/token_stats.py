"""What made the token ranges of annotated spans, for ``warehouse stats`` (``Ingestor.stats_queries``).

A span found in its response's text has a token range from the annotation file, the stored tokens
or a tokenizer (which one: ``annotations.tokenizer``), or none (``(none)``): its response has no stored
tokens and no tokenizer was at hand. ``model`` is the response's ``inference_model``, so the responses
whose model has no tokenizer in the local Hugging Face cache are counted per model.
"""

SPANS_BY_TOKENIZER_SQL = """
SELECT coalesce(a.token_source, '(none)') AS token_source, a.tokenizer, r.inference_model AS model,
       count(DISTINCT a.response_id) AS responses, count(*) AS spans
FROM annotations AS a LEFT JOIN responses AS r USING (response_id)
WHERE a.level = 'span' AND (a.char_start IS NOT NULL OR a.token_start IS NOT NULL)
GROUP BY a.token_source, a.tokenizer, r.inference_model
ORDER BY a.token_source IS NULL, a.token_source, a.tokenizer NULLS LAST, model NULLS LAST
"""
