"""The pass over a large JSONL file: its pieces hold whole lines, know their first line, and end small.

The rows of a file read in pieces must be the rows of the file read whole (the ids hash each
line's number, so a piece must know the number of its first line exactly); the last pieces are
smaller than the others so the workers end together (issue 20).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading

import pytest

from warehouse.run import pieces
from warehouse.run.pieces import FileScan
from warehouse.run.worker import WorkItem

from ..conftest import REPO, Warehouse


def _lines(n: int, width: int) -> bytes:
    """n JSONL lines of varying length (up to ``width`` characters of text each)."""
    return b"".join(json.dumps({"i": i, "text": "x" * ((i * 7919) % width)}).encode() + b"\n" for i in range(n))


def _scan(path, chunk_bytes: int) -> tuple[FileScan, list[tuple[int, int, int]]]:
    scan = FileScan(WorkItem(str(path)), "afterimage", chunk_bytes, os.path.getsize(path))
    return scan, [item.chunk for item in scan.chunks()]


@pytest.mark.parametrize("read_bytes", [64, 1000, 8 << 20])
@pytest.mark.parametrize("chunk_bytes", [1, 300, 5000, 40_000])
@pytest.mark.parametrize("trailing_newline", [True, False])
def test_pieces_are_whole_lines_that_know_their_first_line(tmp_path, monkeypatch, read_bytes, chunk_bytes,
                                                           trailing_newline):
    monkeypatch.setattr(pieces, "READ_BYTES", read_bytes)
    data = _lines(2000, 400)
    data = data if trailing_newline else data[:-1]
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    scan, chunks = _scan(path, chunk_bytes)
    pos, line = 0, 1
    for start, end, first in chunks:
        assert (start, first) == (pos, line)
        assert end > start and (data[end - 1:end] == b"\n" or end == len(data))
        line += data[start:end].count(b"\n")
        pos = end
    assert pos == len(data)
    assert scan.sha256 == hashlib.sha256(data).hexdigest()


def test_the_last_pieces_are_smaller_so_the_workers_end_together(tmp_path):
    data = _lines(20_000, 400)  # ~4.2 MB
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    chunk = 500_000
    _, chunks = _scan(path, chunk)
    sizes = [end - start for start, end, _first in chunks]
    assert all(s <= chunk for s in sizes)
    # the first pieces are whole chunks (less the part of a line they end before)
    assert all(s > chunk - 1000 for s in sizes[:4])
    # the rest is cut in halves, down to a quarter of a chunk: no piece ends the file alone for long
    tail = sizes[-3:]
    assert max(tail) <= chunk // 2 + 1000 and min(sizes) >= chunk // 8 - 1000, sizes
    assert sum(sizes) == len(data)


def test_a_file_in_pieces_gives_the_rows_of_the_file_whole(tmp_path, monkeypatch):

    samples = REPO / "samples" / "afterimage"
    lines = b"".join(p.read_bytes() for p in sorted(samples.rglob("*.jsonl")))
    src = tmp_path / "src"
    src.mkdir()
    (src / "big.jsonl").write_bytes(lines * 10)
    whole = Warehouse(tmp_path / "whole")
    whole.ingest(src)
    monkeypatch.setattr(pieces, "CHUNK_BYTES", 64 * 1024)  # a dozen pieces, the last ones smaller
    monkeypatch.setattr(pieces, "READ_BYTES", 1000)
    split = Warehouse(tmp_path / "split")
    split.ingest(src)
    assert split.one("SELECT count(*) FROM responses") == whole.one("SELECT count(*) FROM responses") > 100
    for table in ("responses", "turns", "evaluations"):
        query = f"SELECT * FROM {table} ORDER BY ALL"
        assert split.rows(query) == whole.rows(query), table
    assert split.one("SELECT sha256 FROM sources") == whole.one("SELECT sha256 FROM sources")


@pytest.mark.parametrize("slice_bytes", [1, 3, 64, 1 << 18])
def test_line_ends_are_every_newline_across_slices(monkeypatch, slice_bytes):
    from warehouse.formatkit import linescan
    monkeypatch.setattr(linescan, "_SCAN_SLICE", slice_bytes)
    data = b"\n\nab\ncd\n" + _lines(50, 30) + b"x\ny"
    want = [i for i, b in enumerate(data) if b == 10]
    assert linescan.line_ends(data).tolist() == want
    assert linescan.line_ends(data, 3, 40).tolist() == [i for i in want if 3 <= i < 40]
    assert linescan.line_ends(data, len(data)).tolist() == [] and linescan.line_ends(b"").tolist() == []
    # the pass over a large file only counts them
    assert linescan.count_lines(data) == len(want) and linescan.count_lines(data, 3, 40) == len([i for i in want if 3 <= i < 40])
    assert linescan.count_lines(data, len(data)) == 0 and linescan.count_lines(b"") == 0
    # a fast path finds the line ends and whether the bytes are ASCII in one scan
    ends, ascii = linescan.scan_lines(data)
    assert ends.tolist() == want and ascii
    wide = data[:20] + "é".encode() + data[20:]  # in one slice of many
    assert linescan.scan_lines(wide)[1] is False and linescan.scan_lines(wide, 0, 20)[1] is True
    assert linescan.scan_lines(wide)[0].tolist() == [i for i, b in enumerate(wide) if b == 10]
    assert linescan.scan_lines(b"")[1] is True


def test_the_first_piece_is_handed_out_before_the_pass_counts_it_and_hashing_is_on_a_thread_of_its_own(
        tmp_path, monkeypatch):
    """The first batch waits only for the search of the first piece's end: its lines are counted when the
    pass is drawn from again (alongside that batch), and every block is hashed on the digest's own thread
    (beside the pass, on another core); the digest and the line numbers are the same."""
    monkeypatch.setattr(pieces, "READ_BYTES", 1000)
    data = _lines(2000, 400)
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    hashed, counted = [], []
    real_sha256, real_count_lines = hashlib.sha256, pieces.count_lines

    class Recording:
        def __init__(self):
            self.h = real_sha256()

        def update(self, b):
            hashed.append((len(b), threading.current_thread() is threading.main_thread()))
            self.h.update(b)

        def hexdigest(self):
            return self.h.hexdigest()

    monkeypatch.setattr(pieces.hashlib, "sha256", Recording)  # (hashlib's own: restored after the test)
    monkeypatch.setattr(pieces, "count_lines", lambda *a: counted.append(a) or real_count_lines(*a))
    scan = FileScan(WorkItem(str(path)), "afterimage", 40_000, len(data))
    chunks = scan.chunks()
    first = next(chunks)
    assert first.chunk[0] == 0 and first.chunk[1] > 20 * 1000  # many blocks read for it
    assert counted == []
    rest = list(chunks)
    assert sum(n for n, _ in hashed) == len(data) and scan.sha256 == real_sha256(data).hexdigest()
    assert not any(on_main for _, on_main in hashed)
    line = 1 + data[:first.chunk[1]].count(b"\n")
    assert rest[0].chunk == (first.chunk[1], rest[0].chunk[1], line)


def test_a_pass_cut_short_ends_its_hash_thread_and_knows_no_digest(tmp_path, monkeypatch):
    """--strict's first bad record or Ctrl-C closes the pass after a piece: its thread ends with it, and a
    digest of part of the file is never taken for the file's."""
    monkeypatch.setattr(pieces, "READ_BYTES", 1000)
    data = _lines(2000, 400)
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    before = set(threading.enumerate())
    scan = FileScan(WorkItem(str(path)), "afterimage", 40_000, len(data))
    chunks = scan.chunks()
    next(chunks)
    assert any(t.name == "pass-sha256" for t in set(threading.enumerate()) - before)
    chunks.close()
    assert scan.sha256 is None
    assert not any(t.name == "pass-sha256" and t.is_alive() for t in set(threading.enumerate()) - before)
