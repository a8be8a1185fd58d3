"""How the Parquet files are encoded: a dictionary only for columns whose values repeat (issue 20).

Arrow dictionary-encodes every column by default, hashing each value until the dictionary
holds 1 MB; for values that never repeat (a row's locator, prose) that is work thrown away
and a larger file. Statistics (what Delta's data skipping reads) stay on every column.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from warehouse.formatkit.declared import TABLES
from warehouse.store.writer import TableWriter


def _encodings(path) -> dict[str, bool]:
    """Column path -> True when the column chunk is dictionary-encoded."""
    meta = pq.ParquetFile(path).metadata
    group = meta.row_group(0)
    return {group.column(i).path_in_schema: any("DICTIONARY" in e for e in group.column(i).encodings)
            for i in range(group.num_columns)}


def test_locators_and_prose_are_written_plain_repeated_values_with_a_dictionary(tmp_path):
    table = TABLES["turns"]
    n = 3000
    rows = {
        "response_id": [f"{i // 3:016x}" for i in range(n)],
        "turn_index": [i % 3 for i in range(n)],
        "role": ["user" if i % 2 else "assistant" for i in range(n)],
        "content": [f"message {i}: " + "lorem ipsum dolor sit amet " * 4 for i in range(n)],
        "source_path": ["/data/a.jsonl"] * n,
        "source_locator": [f"{i // 3 + 1}.conversations[{i % 3}]" for i in range(n)],
    }
    batch = pa.table({c.name: pa.array(rows.get(c.name, [None] * n), c.type) for c in table.columns})
    writer = TableWriter(table, str(tmp_path / "turns.parquet"))
    writer.add_batch(batch.to_batches()[0])
    path = writer.close()
    encoded = _encodings(path)
    assert not encoded["source_locator"] and not encoded["content"]
    # a column with no value has nothing to look up: no dictionary (an encoder and a page for nothing)
    assert not encoded["reasoning_content"] and not encoded["tool_names.list.element"]
    assert encoded["response_id"] and encoded["role"] and encoded["source_path"] and encoded["turn_index"]
    # every column keeps its statistics (min / max feed the Delta statistics)
    group = pq.ParquetFile(path).metadata.row_group(0)
    stats = {group.column(i).path_in_schema: group.column(i).statistics for i in range(group.num_columns)}
    assert stats["content"].has_min_max and stats["source_locator"].has_min_max
    assert pq.read_table(path).equals(batch)


def test_nested_columns_are_named_by_their_parquet_path(tmp_path):
    """Per-column options name Parquet leaf paths: a list of short strings keeps its dictionary."""
    from warehouse.store.writer import dictionary_columns

    data = pa.table({
        "tags": pa.array([["a", "b"], ["a"], None] * 100, pa.list_(pa.string())),
        "pairs": pa.array([{"k": "x", "v": 1}] * 300, pa.struct([("k", pa.string()), ("v", pa.int64())])),
    })
    assert dictionary_columns(data) == ["tags.list.element", "pairs.k", "pairs.v"]
    pq.write_table(data, tmp_path / "n.parquet", use_dictionary=dictionary_columns(data))
    assert all(_encodings(tmp_path / "n.parquet").values())
