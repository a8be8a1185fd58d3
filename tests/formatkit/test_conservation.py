"""Every ingestor, fed mutated and garbage versions of its own fixtures: never a crash, never a lost count.

For each file: records seen = records ingested + records quarantined, and there is
one quarantine row per quarantined record.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warehouse.formatkit.registry import Registry
from warehouse.run.worker import BatchIngest, BatchSpec, WorkItem
from warehouse.store.snapshots import new_run_id

from ..conftest import FIXTURES

INGESTORS = Registry.installed().ingestors()  # every installed format, in detection order

CONTENT_INGESTORS = [i for i in INGESTORS if i.reads_content]


def fixture_files(name: str, suffixes: tuple[str, ...] = ()) -> list[Path]:
    """The format's fixtures: tests/fixtures/<name>/ and any tests/fixtures/<name>_*/, JSON or of its own kinds
    (``suffixes``: an archive it reads is mutated byte by byte)."""
    folders = [FIXTURES / name, *sorted(FIXTURES.glob(f"{name}_*"))]
    kinds = (".json", ".jsonl", *suffixes)
    files = sorted(p for folder in folders for p in folder.rglob("*") if p.is_file() and p.suffix in kinds)
    assert files, f"the {name} ingestor has no fixtures under tests/fixtures/{name}/"
    return files


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _replace(value, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    out = list(value)
    out[head] = _replace(value[head], rest, new)
    return out


def mutate_json(value, rng: random.Random, new_value):
    paths = list(_paths(value))
    path = paths[rng.randrange(len(paths))]
    choice = rng.randrange(3)
    if choice == 0 or not path:
        return _replace(value, path, new_value)
    parent = path[:-1]
    node = value
    for k in parent:
        node = node[k]
    if choice == 1 and isinstance(node, dict):  # drop a key
        return _replace(value, parent, {k: v for k, v in node.items() if k != path[-1]})
    return _replace(value, path, [new_value])  # wrap


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(4)
    if kind == 0 and data:
        return data[: rng.randrange(len(data))]  # truncated
    if kind == 1 and data:
        b = bytearray(data)
        for _ in range(rng.randint(1, 5)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if kind == 2:
        i = rng.randrange(len(data) + 1)
        return data[:i] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 20))) + data[i:]
    return b"\n".join(rng.sample(data.split(b"\n"), k=len(data.split(b"\n"))))  # shuffled lines


def ingest_one(path: Path, fmt: str, root: Path):
    spec = BatchSpec(run_id=new_run_id(), batch_no=1, root=str(root), items=[WorkItem(str(path))],
                     registry=Registry.installed(), forced_format=fmt)
    result = BatchIngest(spec).run()
    [source] = result.sources
    assert source["records"] == source["records_ingested"] + source["records_quarantined"], source
    quarantine = result.parts.get("quarantine")
    rows = pq.read_table(root / quarantine.path).num_rows if quarantine else 0
    assert rows == source["records_quarantined"]
    for part in result.parts.values():
        (root / part.path).unlink()
    return source


@pytest.mark.parametrize("ingestor", CONTENT_INGESTORS, ids=lambda i: i.name)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), new_value=json_values, byte_level=st.booleans())
def test_mutated_fixtures_never_crash_or_lose_a_count(tmp_path, ingestor, seed, new_value, byte_level):
    rng = random.Random(seed)
    original = rng.choice(fixture_files(ingestor.name, ingestor.suffixes))
    data = original.read_bytes()
    if byte_level:
        data = mutate_bytes(data, rng)
    else:
        lines = original.suffix == ".jsonl"
        try:
            docs = [json.loads(x) for x in data.splitlines() if x.strip()] if lines else [json.loads(data)]
        except ValueError:
            docs = []
        if docs:
            k = rng.randrange(len(docs))
            docs[k] = mutate_json(docs[k], rng, new_value)
            data = ("\n".join(json.dumps(d) for d in docs) if lines else json.dumps(docs[0])).encode()
    # keep the original's place in its tree: paths carry meaning (layouts, siblings)
    target = tmp_path / "tree" / original.relative_to(FIXTURES)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    ingest_one(target, ingestor.name, tmp_path / "wh")


@pytest.mark.parametrize("ingestor", CONTENT_INGESTORS, ids=lambda i: i.name)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.one_of(st.binary(max_size=300), json_values.map(lambda v: json.dumps(v).encode())))
def test_garbage_never_crashes_or_loses_a_count(tmp_path, ingestor, garbage):
    suffix = ingestor.suffixes[0]
    path = tmp_path / "experiments/x/inference/v/responses/s" / f"1{suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(garbage)
    ingest_one(path, ingestor.name, tmp_path / "wh")
