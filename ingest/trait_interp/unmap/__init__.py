"""The ingest mapping in reverse (every format's is its ``unmap``): rows back into trait-interp's files.

One module per module of the mapping it reverses: ``responses`` (a response record,
with its turn and sentence boundaries), ``annotations`` (an annotation file),
``sidecars`` (a prompt set). The exporter (``export/``) decides where each file goes.
"""
