"""Scale's own views (``Ingestor.views``), run after the core's views of ``sql/``."""

ATTACHMENTS = """
-- attachments: one row per file of a Scale message (content.attachments) or file annotation.
-- The base64 `content` lives only here; select it only when you need the bytes.
CREATE OR REPLACE VIEW attachments AS
SELECT * FROM raw.attachments;
"""

CHUNKS = """
-- chunks: one row per chunk of a Scale message (content.chunks); their annotations have level 'chunk'.
CREATE OR REPLACE VIEW chunks AS
SELECT * FROM raw.chunks;
"""

REFERENCE_TEXTS = """
-- reference_texts: one row per reference text of a Scale message (content.reference_texts).
CREATE OR REPLACE VIEW reference_texts AS
SELECT * FROM raw.reference_texts;
"""

RUBRIC_CRITERIA = """
-- rubric_criteria: one row per criterion of a rubric defined on a Scale turn; the scores given
-- against it are evaluations with criterion = criterion_id (join on record_id too).
CREATE OR REPLACE VIEW rubric_criteria AS
SELECT * FROM raw.rubric_criteria;
"""

VIEWS = (ATTACHMENTS, CHUNKS, REFERENCE_TEXTS, RUBRIC_CRITERIA)
