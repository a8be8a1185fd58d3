"""The dataset card (README.md) of a ``parquet`` export, in the Hugging Face Hub's format.

Its YAML front matter declares one config per table, so ``datasets`` reads each
table on its own (``load_dataset(out, "turns")``; without a name, ``responses``)
instead of mixing every file into one, and the directory can be pushed to the Hub
as it is. The body says what each table holds, with its columns and row count.

The card is made only of the export's content (no time, no local path), so the
same export gives the same bytes.
"""

from __future__ import annotations

import pyarrow as pa

from warehouse.formatkit.declared import TABLES

DEFAULT_CONFIG = "responses"


def dataset_card(tables: dict[str, tuple[pa.Schema, int]]) -> str:
    """README.md for an export directory holding ``<name>.parquet`` per entry of ``tables`` (schema, rows)."""
    # datasets cannot load a config without rows ("corresponds to no data"): an empty table
    # keeps its file (with its columns) but gets no config
    loadable = [name for name, (_schema, rows) in tables.items() if rows]
    front = ["---", "configs:" if loadable else "configs: []"]
    for name in loadable:
        front += [f"- config_name: {name}", "  data_files:", "  - split: train", f"    path: {name}.parquet"]
        if name == DEFAULT_CONFIG:
            front.append("  default: true")
    front.append("---")
    body = [
        "",
        "# Response warehouse export",
        "",
        "LLM responses with their conversation turns, sentences, annotations and evaluations,",
        "exported from a response warehouse (`warehouse export --format parquet`): one Parquet file",
        "per table, each a config of this dataset. Rows of the other tables point to their response",
        "by `response_id` (or to a whole record by `record_id`).",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        'responses = load_dataset("PATH_OR_REPO")            # the default config: responses',
        'turns = load_dataset("PATH_OR_REPO", "turns")       # or any table below',
        "```",
        "",
        "| config | one row per | rows |",
        "|---|---|---|",
    ]
    body += [f"| `{name}` | {_grain(name)} | {rows:,} |" for name, (_schema, rows) in tables.items()]
    empty = [name for name, (_schema, rows) in tables.items() if not rows]
    if empty:
        body += ["", f"Empty in this export, so not a config: {', '.join(f'`{n}`' for n in empty)} "
                     "(the Parquet file is there, with its columns)."]
    for name, (schema, _rows) in tables.items():
        table = TABLES.get(name)
        body += ["", f"## {name}", ""]
        if table is not None:
            body += [f"One row per {table.grain}. {table.doc}", ""]
        body += ["| column | type | doc |", "|---|---|---|"]
        for field in schema:
            doc = table.column(field.name).doc if table is not None and table.has(field.name) else _derived(name)
            body.append(f"| `{field.name}` | `{field.type}` | {_cell(doc)} |")
    return "\n".join(front + body) + "\n"


def _grain(name: str) -> str:
    return TABLES[name].grain if name in TABLES else ""


def _derived(table: str) -> str:
    return "derived from the source path (experiment, prompt set, steering run, ...)" if table == "responses" else ""


def _cell(text: str) -> str:
    """Text fit for a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")
