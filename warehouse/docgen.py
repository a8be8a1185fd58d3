"""Regenerate docs/tables.md from the table declarations: ``python -m warehouse.docgen``."""

from pathlib import Path

from warehouse.formatkit.declared import render_markdown

DOC = Path(__file__).resolve().parent.parent / "docs" / "tables.md"

if __name__ == "__main__":
    DOC.write_text(render_markdown())
    print(f"wrote {DOC}")
