"""Nothing is lost: every leaf value of every source file is somewhere in the rows of that file.

For each file of the fixtures, the bundled samples and the real files of
../shared/realdata, every string, number and boolean in the source (read with
the warehouse's own JSON decoder) must be found among the values of the rows
built from that file: typed columns, list elements, and the inside of the JSON
columns (``extra``, ``metadata``, ``value``, ...) and of ``quarantine.raw``. The
rows of a file include those of the files that read it as a dependency (a
Dataloop item JSON is ingested by its prompt file).

Columns the warehouse fills itself (ids, locators, positions, match results)
are not looked in, so a lost ``0`` or ``true`` is not found by accident in a
``candidate_index``.

A value may be represented otherwise only as listed in ``REPRESENTED_OTHERWISE``
(and in docs/architecture.md, "Nothing is lost"): a number kept as text in a text column (an id
written ``5`` is ``"5"``), and the structural markers and keys below, whose
meaning is a column of their rows.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

import warehouse
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.readers import BOM, decode_json
from warehouse.formatkit.records import RecordError

from ..conftest import FIXTURES, REPO, Warehouse

#: columns the warehouse derives (ids, places, positions, match results): never where a source value lands
DERIVED = {
    "source_path", "source_locator", "source_format", "response_id", "annotation_id", "record_id", "ingest_run",
    "locator", "stage", "error", "raw_bytes", "target", "level", "candidate_index", "turn_index", "part_index",
    "record_index", "thread_turn_index", "attachment_index", "chunk_index", "reference_index", "rubric_index",
    "criterion_index", "occurrences", "char_start", "char_end", "match", "unresolved_reason", "token_source",
    "tokenizer", "tokenizer_revision",
    "token_base", "tokens_suspect", "responses_dir", "segment", "vector_index", "response_path", "shape",
    "experiment", "event_index",
}


def _tag_true(path: tuple, value) -> bool:
    """``true`` in a Dataloop tag object (``metadata.system.tags.train``): the tag's name is in ``tags``."""
    return value is True and len(path) >= 2 and path[-2] == "tags"


def _annotation_target(path: tuple, value) -> bool:
    """An annotation entry's ``idx``/``id`` (unified form) or ``response_idx`` (biases form)."""
    return (len(path) == 3 and path[0] == "annotations" and isinstance(path[1], int) and path[2] in ("idx", "id")) or (
        len(path) == 2 and isinstance(path[0], int) and path[1] == "response_idx")


def _sharegpt_speaker(path: tuple, value) -> bool:
    """ShareGPT's ``from: human`` / ``from: gpt``: the turn's role user / assistant."""
    return path[-1:] == ("from",) and "conversations" in path and value in ("human", "gpt")


def _choice_index(path: tuple, value) -> bool:
    """A chat completion's ``choices[i].index``: its response's candidate_index."""
    return path[-1:] == ("index",) and len(path) >= 3 and path[-3] == "choices"


#: (kind of file, why, test on the leaf's key path and value): values whose meaning is a column of their rows.
#: The kind is the file's source_format, or "annotations" for a trait-interp annotation file.
REPRESENTED_OTHERWISE = (
    ("dataloop", "the format marker `shebang: \"dataloop\"` is the rows' source_format",
     lambda path, v: path[-1:] == ("shebang",) and v == "dataloop"),
    ("dataloop", "a `metadata` element is folded into its prompt (the turns' role and extra.metadata)",
     lambda path, v: path[-1:] == ("mimetype",) and v == "metadata"),
    ("dataloop", "`true` in a tag object is the tag's name in `tags`", _tag_true),
    ("annotations", "an entry's `idx`/`id`/`response_idx` names the response annotated: `target`, `response_id`",
     _annotation_target),
    ("inspect", "a .eval's summaries are Inspect's index of its samples, rebuilt from them (values cut short, counts)",
     lambda path, v: path[:1] == ("summaries.json",) or str(path[0]).startswith("_journal/summaries/")),
    ("hf_chat", "ShareGPT's `from: human` / `from: gpt` is the turn's role user / assistant", _sharegpt_speaker),
    ("openai_batch", "a choice's `index` is its response's candidate_index", _choice_index),
)


def _leaves(value, path: tuple = ()) -> Iterator[tuple[tuple, object]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, path + (i,))
    elif value is not None:
        yield path, value


def _key(value) -> tuple | None:
    """How a leaf compares: booleans, numbers (int or float alike) and strings apart."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float, Decimal)):  # a decimal column's value is the number the text wrote
        return ("num", "nan" if isinstance(value, float) and math.isnan(value) else float(value))
    if isinstance(value, str):
        return ("str", value)
    return None


def source_leaves(path: Path) -> Iterator[tuple[tuple, object]]:
    """Leaves of a source file; a document (or line) the decoder refuses has none (its raw text is in quarantine).
    A zip archive's leaves are its JSON members', under the member's name; a Parquet file's rows are read
    as the hf_chat format reads them (binary as base64 text)."""
    if path.suffix == ".eval":
        for name, member in zip_members(path):
            yield from _leaves(decode_json(member), (name,))
        return
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        from warehouse.formats.hf_chat.files import plain

        for n, row in enumerate(pq.read_table(path).to_pylist()):
            yield from _leaves(plain(row), (n,))
        return
    data = path.read_bytes().removeprefix(BOM)
    documents = [line for line in data.split(b"\n") if line.strip()] if path.suffix == ".jsonl" else [data]
    for n, doc in enumerate(documents):
        try:
            value = decode_json(doc)
        except RecordError:
            continue
        yield from _leaves(value, (n,) if path.suffix == ".jsonl" else ())


def zip_members(path: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of each member of a zip archive, zstd members (method 93: Inspect's) decompressed with
    Arrow, as ``zipfile`` cannot before Python 3.14."""
    import struct
    import zipfile

    import pyarrow as pa

    with zipfile.ZipFile(path) as z, open(path, "rb") as f:
        for info in z.infolist():
            if info.compress_type != 93:
                yield info.filename, z.read(info)
                continue
            f.seek(info.header_offset + 26)
            name_length, extra_length = struct.unpack("<2H", f.read(4))
            f.seek(name_length + extra_length, 1)
            raw = f.read(info.compress_size)
            yield info.filename, pa.decompress(raw, decompressed_size=info.file_size, codec="zstd").to_pybytes()


def _row_keys(con, paths: set[str]) -> set[tuple]:
    found: set[tuple] = set()
    marks = ",".join("?" * len(paths))
    for name, table in TABLES.items():
        if name == "sources" or not table.has("source_path"):
            continue
        rel = con.execute(f"SELECT * FROM raw.{name} WHERE source_path IN ({marks})", sorted(paths))
        columns = [d[0] for d in rel.description]
        for row in rel.fetchall():
            for column, value in zip(columns, row):
                if column in DERIVED or value is None:
                    continue
                if column == "raw" or table.column(column).json:
                    try:
                        value = json.loads(value)
                    except ValueError:
                        pass  # raw text cut at 64 KiB, or not JSON: kept as the string it is
                for _, leaf in _leaves(value):
                    k = _key(leaf)
                    if k is not None:
                        found.add(k)
    return found


def _found(k: tuple, found: set[tuple]) -> bool:
    if k in found:
        return True
    if k[0] == "num" and k[1] != "nan":  # a number kept as text in a text column (ids: "5", "12.5")
        v = k[1]
        return ("str", str(int(v)) if v.is_integer() else repr(v)) in found
    return False


def lost_values(root: Path, source: Path) -> dict[str, list[str]]:
    """{file: [key path = value, ...]} of the source values found in no row of their file."""
    con = warehouse.connect(root)
    try:
        readers: dict[str, set[str]] = defaultdict(set)  # file -> files that read it as a dependency
        for path, depends_on in con.execute("SELECT source_path, depends_on FROM sources").fetchall():
            for dep in json.loads(depends_on or "[]"):
                if "path" in dep:
                    readers[dep["path"]].add(path)
        kinds = dict(con.execute("SELECT source_path, source_format FROM sources").fetchall())
        kinds.update((p, "annotations") for (p,) in con.execute("SELECT source_path FROM annotation_sets").fetchall())
        lost: dict[str, list[str]] = {}
        for path in sorted(p for p in source.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".eval",
                                                                                         ".parquet")):
            found = _row_keys(con, {str(path)} | readers[str(path)])
            exceptions = [test for kind, _, test in REPRESENTED_OTHERWISE if kind == kinds.get(str(path))]
            missing = [
                f"{'.'.join(map(str, p))} = {v!r}"[:160]
                for p, v in source_leaves(path)
                if not _found(_key(v), found) and not any(test(p, v) for test in exceptions)
            ]
            if missing:
                lost[str(path.relative_to(source))] = missing
        return lost
    finally:
        con.close()


def _report(lost: dict[str, list[str]]) -> str:
    return "source values in no row of their file:\n" + "\n".join(
        f"  {file}: {', '.join(values[:6])}" + (f" (+{len(values) - 6} more)" if len(values) > 6 else "")
        for file, values in lost.items()
    )


def test_every_near_miss_value_is_in_the_quarantine(tmp_path):
    """Each format's own fixtures are held to this by the contract (test_contract.py, per format); the near
    misses, which no format claims, land whole in the quarantine."""
    w = Warehouse(tmp_path / "wh")
    w.ingest(FIXTURES / "near_misses")
    assert w.one("SELECT count(*) FROM quarantine") > 0
    lost = lost_values(w.root, FIXTURES / "near_misses")
    assert not lost, _report(lost)


def test_every_sample_value_is_in_the_rows(samples_wh):
    lost = lost_values(samples_wh.root, REPO / "samples")
    assert not lost, _report(lost)


@pytest.mark.realdata
def test_every_real_file_value_is_in_the_rows(realdata, tmp_path):
    w = Warehouse(tmp_path / "wh")
    w.ingest(realdata)
    lost = lost_values(w.root, realdata)
    assert not lost, _report(lost)


def test_the_check_reports_a_value_no_row_holds(tmp_path):
    """The check itself: after ingest, a value added to the source is in no row, and is reported with its key path."""
    src = tmp_path / "src"
    src.mkdir()
    line = {"conversations": [{"role": "user", "content": "hi"}], "metadata": {"k": "v"}}
    (src / "a.jsonl").write_text(json.dumps(line) + "\n")
    w = Warehouse(tmp_path / "wh")
    w.ingest(src)
    assert lost_values(w.root, src) == {}
    line["metadata"]["added"] = "never ingested"
    (src / "a.jsonl").write_text(json.dumps(line) + "\n")
    assert lost_values(w.root, src) == {"a.jsonl": ["0.metadata.added = 'never ingested'"]}
