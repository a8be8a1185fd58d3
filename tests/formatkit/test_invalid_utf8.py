"""Text that is not UTF-8 never reaches a Parquet file, whatever path reads it (issues 13.1, 14.6).

One invalid string in a Parquet file makes every query on its table fail. For
every ingestor and every way a file is read (whole, JSONL fast path and record
path, a large JSONL in pieces, a streamed array), the bad record is quarantined
with the record path's message, the good ones are ingested, every Parquet file
passes Arrow's full validation, every view reads, and export works.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import warehouse
from warehouse.errors import InvalidBatch
from warehouse.formatkit.declared import TABLES
from warehouse.formats.afterimage import fast
from warehouse.run import pieces as large_files
from warehouse.store.writer import TableWriter

from ..conftest import Warehouse

BAD = b"caf\xe9"  # latin-1: not UTF-8


def utf8_error(data: bytes) -> str:
    """The record path's message for a record whose first invalid byte is BAD's."""
    return (f"invalid UTF-8 at byte {data.index(BAD) + 3}: the source must be UTF-8 "
            "(re-encode it, e.g. `iconv -f latin1 -t utf-8`)")


def write(path: Path, data: bytes) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def text(value) -> bytes:
    """JSON with the string "caf\\udce9" written as the bytes of BAD."""
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogateescape")


LATIN1 = BAD.decode("utf-8", "surrogateescape")


def afterimage_row(content: str) -> dict:
    return {"conversations": [{"role": "user", "content": content}, {"role": "assistant", "content": "a"}],
            "metadata": {}, "persona": "p"}


def scale_turn(i: int, content: str) -> dict:
    return {"id": f"turn_{i}", "messages": [
        {"role": "user", "content": {"text": content}, "source_id": "user", "annotations": []},
        {"role": "assistant", "content": {"text": "a"}, "source_id": "model_1", "annotations": []}]}


def dataloop_prompt(value: str) -> dict:
    return {"shebang": "dataloop", "metadata": {"dltype": "prompt"},
            "prompts": {"p1": [{"mimetype": "application/text", "value": value}]}}


RESP = "experiments/e/extraction/c/t/base/responses"


def jsonl(d: Path, name: str, rows: list) -> bytes:
    return write(d / name, b"".join(text(r) + b"\n" for r in rows))


# Each case writes its files and returns (records ingested, [(file, locator, message)] quarantined).

def afterimage_jsonl(d: Path):
    data = jsonl(d, "rows.jsonl", [afterimage_row("q1"), afterimage_row(LATIN1), afterimage_row("q3")])
    return 2, [("rows.jsonl", "2", utf8_error(data.split(b"\n")[1]))]


def afterimage_json(d: Path):
    write(d / "good.json", text([afterimage_row("q")]))
    bad = write(d / "bad.json", text([afterimage_row("q"), afterimage_row(LATIN1)]))
    return 1, [("bad.json", "", utf8_error(bad))]


def scale_jsonl(d: Path):
    data = jsonl(d, "turns.jsonl", [scale_turn(1, "q"), scale_turn(2, LATIN1), scale_turn(3, "q")])
    return 2, [("turns.jsonl", "2", utf8_error(data.split(b"\n")[1]))]


def scale_json(d: Path):
    write(d / "good.json", text([scale_turn(1, "q")]))
    bad = write(d / "bad.json", text([scale_turn(2, "q"), scale_turn(3, LATIN1)]))
    return 1, [("bad.json", "", utf8_error(bad))]


def trait_interp_json(d: Path):
    write(d / RESP / "pos.json", text([{"prompt": "p", "response": "r"}]))
    bad = write(d / RESP / "neg.json", text([{"prompt": "p", "response": "r"}, {"prompt": "p", "response": LATIN1}]))
    return 1, [(f"{RESP}/neg.json", "", utf8_error(bad))]


def dataloop_json(d: Path):
    write(d / "good.json", text(dataloop_prompt("ok")))
    bad = write(d / "bad.json", text(dataloop_prompt(LATIN1)))
    return 1, [("bad.json", "", utf8_error(bad))]


CASES = [afterimage_jsonl, afterimage_json, scale_jsonl, scale_json, trait_interp_json, dataloop_json]


def check_readable(wh: Warehouse, tmp_path: Path) -> None:
    """Every Parquet file is valid (UTF-8 strings), every view reads, export writes every response."""
    files = list(wh.root.rglob("*.parquet"))
    assert files
    for f in files:
        pq.read_table(f).validate(full=True)
    con = warehouse.connect(wh.root)
    try:
        for schema, view in con.execute("SELECT schema_name, view_name FROM duckdb_views() WHERE NOT internal").fetchall():
            con.sql(f'SELECT * FROM "{schema}"."{view}"').to_arrow_table()
        responses = con.execute("SELECT count(*) FROM responses").fetchone()[0]
    finally:
        con.close()
    out = tmp_path / "export" / "all.jsonl"
    warehouse.export(wh.root, "true", "jsonl", out)
    assert len(out.read_bytes().splitlines()) == responses


def quarantined(wh: Warehouse, base: Path) -> list[tuple]:
    rows = wh.rows("SELECT source_path, locator, stage, error FROM quarantine ORDER BY source_path, locator")
    return [(str(Path(r["source_path"]).relative_to(base)), r["locator"], r["error"]) for r in rows
            if r["stage"] == "decode"] + [r for r in rows if r["stage"] != "decode"]


@pytest.mark.parametrize("fast_paths", [True, False], ids=["fast paths", "record path only"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_a_record_that_is_not_utf8_is_quarantined_and_the_rest_reads(wh, tmp_path, case, fast_paths):
    src = tmp_path / "src"
    ingested, expected = case(src)
    summary = wh.ingest(src, fast_paths=fast_paths)
    assert quarantined(wh, src) == expected
    assert (summary.records_ingested, summary.records_quarantined) == (ingested, len(expected))
    check_readable(wh, tmp_path)


def test_a_large_jsonl_read_in_pieces_quarantines_each_bad_line(wh, tmp_path, monkeypatch):
    pieces = []
    chunks = large_files.FileScan.chunks

    def counted(self):
        for piece in chunks(self):
            pieces.append(piece.chunk)
            yield piece

    monkeypatch.setattr(large_files, "CHUNK_BYTES", 1 << 20)
    monkeypatch.setattr(large_files.FileScan, "chunks", counted)
    rows = [afterimage_row(f"question {i} " + "x" * 5000) for i in range(2000)]
    bad_lines = (5, 1995)  # one in the first piece, one in the last
    for n in bad_lines:
        rows[n - 1] = afterimage_row(LATIN1)
    data = jsonl(tmp_path / "src", "big.jsonl", rows)
    assert len(data) > 9 << 20  # over one 8 MB read: the scan cuts at least two pieces
    summary = wh.ingest(tmp_path / "src")
    piece_of = [max(i for i, (_start, _end, first) in enumerate(pieces) if first <= n) for n in bad_lines]
    assert piece_of == [0, len(pieces) - 1] and len(pieces) >= 2
    lines = data.split(b"\n")
    got = sorted(quarantined(wh, tmp_path / "src"), key=lambda q: int(q[1]))
    assert got == [("big.jsonl", str(n), utf8_error(lines[n - 1])) for n in bad_lines]
    assert (summary.records_ingested, summary.records_quarantined) == (2000 - 2, 2)
    assert wh.one("SELECT count(*) FROM responses") == 2000 - 2
    check_readable(wh, tmp_path)


@pytest.mark.parametrize("fmt", ["afterimage", "trait_interp"])
def test_a_streamed_array_stops_at_text_that_is_not_utf8_and_keeps_what_came_before(wh, tmp_path, fmt):
    """A streamed array is read in one pass: the elements before the bad one are ingested,
    the rest of the file is one quarantined record saying where and what to do."""
    if fmt == "afterimage":
        path, element = tmp_path / "src" / "rows.json", afterimage_row
    else:
        path, element = tmp_path / "src" / RESP / "pos.json", lambda t: {"prompt": "p", "response": t}
    elements = [element("x" * 300) for _ in range(5)] + [element(LATIN1), element("after")]
    write(path, text(elements))
    summary = wh.ingest(tmp_path / "src", max_record_mb=1024 / 2**20)
    assert path.stat().st_size > 1024  # streamed
    assert quarantined(wh, tmp_path / "src") == [(str(path.relative_to(tmp_path / "src")), "[5:]",
        "invalid UTF-8 in element [5] of a streamed array: the source must be UTF-8 "
        "(re-encode it, e.g. `iconv -f latin1 -t utf-8`); the rest of the file was not read")]
    assert (summary.records_ingested, summary.records_quarantined) == (5, 1)
    check_readable(wh, tmp_path)


# --- the chokepoint: whatever a path hands the writer ---------------------------------------

def invalid_strings(*values: bytes) -> pa.Array:
    """A string array holding these bytes as they are (Arrow checks nothing when built from buffers)."""
    offsets = np.cumsum([0] + [len(v) for v in values]).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), len(values), [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(values))])


def test_the_writer_refuses_a_batch_with_invalid_text_and_keeps_the_good_rows(tmp_path):
    table = TABLES["quarantine"]
    writer = TableWriter(table, str(tmp_path / "q.parquet"))

    def batch(*errors: bytes) -> pa.RecordBatch:
        columns = [invalid_strings(*errors) if f.name == "error" else pa.nulls(len(errors), f.type) for f in table.arrow_schema]
        return pa.RecordBatch.from_arrays(columns, schema=table.arrow_schema)

    writer.add_batch(batch(b"one", b"two"))
    with pytest.raises(InvalidBatch, match=r"quarantine\.error: .*UTF8"):
        writer.add_batch(batch(b"three", BAD))
    writer.add_batch(batch(b"four"))
    writer.close()
    assert pq.read_table(tmp_path / "q.parquet").column("error").to_pylist() == ["one", "two", "four"]


def test_a_fast_path_that_lets_invalid_text_through_never_writes_it(wh, tmp_path, monkeypatch):
    """Should a fast path miss a bad line, the worker refuses its tables and the record path reads the block."""
    monkeypatch.setattr(fast, "_left_to_records", lambda t, data, starts, is_ascii: (np.zeros(t.num_rows, dtype=bool), False))
    src = tmp_path / "src"
    ingested, expected = afterimage_jsonl(src)
    assert fast.fast_lines((src / "rows.jsonl").read_bytes(), "x.jsonl", 1).rest == []  # the fast path took it all
    summary = wh.ingest(src)
    assert quarantined(wh, src) == expected
    assert (summary.records_ingested, summary.records_quarantined) == (ingested, len(expected))
    check_readable(wh, tmp_path)


@pytest.mark.parametrize("block", ["ascii", "utf8", "a bad line"])
def test_a_fast_paths_tables_are_validated_once_before_they_are_kept(tmp_path, monkeypatch, block):
    """Every string is validated once before it is kept: by the fast path (the parsed block
    whole, or the block being ASCII), else by the sink (the fast path sent bad lines to the
    record path, the rows it kept are checked); the writer never again (issue 20: ~0.4 CPU-s per GB)."""
    import warehouse.run.sink as sink
    import warehouse.store.writer as writer
    from warehouse.formatkit.registry import Registry
    from warehouse.run.worker import BatchIngest, BatchSpec, WorkItem
    from warehouse.store.snapshots import new_run_id

    checked = []

    def counting(check):
        return lambda table, data: checked.append((table.name, data.num_rows)) or check(table, data)

    monkeypatch.setattr(sink, "check_batch", counting(sink.check_batch))
    monkeypatch.setattr(writer, "check_batch", counting(writer.check_batch))
    contents = {"ascii": ["q1", "q2", "q3"], "utf8": ["q1", "café ✓", "q3"], "a bad line": ["q1", LATIN1, "café"]}
    data = jsonl(tmp_path / "src", "rows.jsonl", [afterimage_row(c) for c in contents[block]])
    path = tmp_path / "src" / "rows.jsonl"
    result = fast.fast_lines(data, str(path), 1)
    assert [n for n, _line in result.rest] == ([2] if block == "a bad line" else [])
    assert result.validated == (block != "a bad line")
    spec = BatchSpec(run_id=new_run_id(), batch_no=1, root=str(tmp_path / "wh"), items=[WorkItem(str(path))],
                     registry=Registry.installed())
    result = BatchIngest(spec).run()
    assert sorted(result.parts) == (["quarantine", "responses", "turns"] if block == "a bad line" else ["responses", "turns"])
    sink_checked = sorted(name for name, _rows in checked if name != "quarantine")
    assert sink_checked == (["responses", "turns"] if block == "a bad line" else [])
    for part in result.parts.values():
        pq.read_table(tmp_path / "wh" / part.path).validate(full=True)
