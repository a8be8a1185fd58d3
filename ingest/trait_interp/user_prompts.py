"""The plain prompt of trait-interp inference responses, for conversations (``Ingestor.user_prompts_sql``).

``responses.prompt`` of an inference response holds the chat-templated prompt; the
user's own message is the prompt of its prompt set. One per response: when two files
define the set (two project trees in one warehouse), the one under the response's own
tree wins, then the first by path.
"""

USER_PROMPTS_SQL = """
SELECT r.response_id, p.prompt
FROM responses AS r JOIN prompts AS p
  ON p.set_kind = 'inference' AND p.prompt_set = r.prompt_set AND p.prompt_id = r.prompt_id
WHERE r.pipeline = 'inference' AND r.response_id IN (SELECT response_id FROM selected)
QUALIFY row_number() OVER (
    PARTITION BY r.response_id
    ORDER BY starts_with(p.source_path, regexp_extract(r.source_path, '(?s)^(.*/)experiments/', 1)) DESC,
             p.source_path, p.source_locator) = 1
"""
