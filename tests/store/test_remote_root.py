"""A warehouse ROOT on object storage (issue 18, part B), against the local S3 API server of test_remote.

Only the standard variables are set (the ``bucket`` fixture): the warehouse's defaults do the rest.
"""

from __future__ import annotations

import threading

import deltalake
import orjson
import pytest

import warehouse
from warehouse import access
from warehouse.filesystems import FileSystems
from warehouse.store import remote_root
from warehouse.store.storage import Store

from ..conftest import Warehouse
from ..ground.test_remote import SAMPLES, assert_same_tables, put, tables, upload


def test_samples_from_a_bucket_into_a_bucket_give_the_tables_of_a_local_ingest(s3, bucket, tmp_path):
    prefix = f"s3://{bucket}/src/prefix"
    upload(s3, SAMPLES, prefix)
    remote_wh, local_wh = Warehouse(f"s3://{bucket}/wh"), Warehouse(tmp_path / "local")
    got = remote_wh.ingest(prefix)
    want = local_wh.ingest(SAMPLES)
    assert got.committed and got.files_ingested == want.files_ingested > 50
    assert (got.records_ingested, got.records_quarantined) == (want.records_ingested, want.records_quarantined)
    assert_same_tables(tables(remote_wh, prefix, str(SAMPLES)), tables(local_wh, str(SAMPLES), str(SAMPLES)))
    # the snapshot and the Delta tables are objects in the bucket, nothing on local disk
    store = Store(f"s3://{bucket}/wh")
    assert store.remote and store.snapshot_numbers() == [1]
    assert not (tmp_path / "s3:").exists()
    # an outside Delta reader sees the rows the views show
    options = access.resolve(None)
    responses = deltalake.DeltaTable(f"s3://{bucket}/wh/responses", storage_options=options).to_pyarrow_table()
    assert responses.num_rows == remote_wh.one("SELECT count(*) FROM raw.responses")
    # re-ingest: nothing changed, no new snapshot; the lease is gone after each run
    again = remote_wh.ingest(prefix)
    assert not again.committed and store.snapshot_numbers() == [1]
    assert orjson.loads(FileSystems().read(store.lock_path))["released"]


def test_a_root_inside_the_source_prefix_is_never_walked_as_a_source(s3, bucket):
    """``ingest s3://b/data --root s3://b/data/wh``: the root's own objects (Delta logs, the lease, the
    snapshots) are skipped as a local root inside its PATH is; the run after is a run with nothing new."""
    prefix = f"s3://{bucket}/data"
    upload(s3, SAMPLES / "afterimage", f"{prefix}/afterimage")
    w = Warehouse(f"{prefix}/wh")
    first = w.ingest(prefix)
    again = w.ingest(prefix)
    assert first.committed and not again.committed and again.files_seen == first.files_seen
    assert w.one("SELECT count(*) FROM sources WHERE source_path LIKE ?", [f"{prefix}/wh/%"]) == 0
    assert w.one("SELECT count(*) FROM quarantine") == first.records_quarantined == 0


def test_a_changed_object_replaces_its_rows_in_a_remote_root_and_prune_drops_a_deleted_one(s3, bucket, tmp_path):
    prefix = f"s3://{bucket}/src"
    lines = (SAMPLES / "afterimage" / "conversations_20260112_101500.jsonl").read_bytes().splitlines(keepends=True)
    put(s3, f"{prefix}/a/conv.jsonl", b"".join(lines[:3]))
    put(s3, f"{prefix}/b/conv.jsonl", lines[3])
    w = Warehouse(f"s3://{bucket}/wh")
    w.ingest(prefix)
    per_source = "SELECT source_path, count(*) AS n FROM responses GROUP BY 1 ORDER BY 1"
    first = {r["source_path"].split("/")[-2]: r["n"] for r in w.rows(per_source)}
    assert set(first) == {"a", "b"}
    put(s3, f"{prefix}/a/conv.jsonl", lines[4])
    w.ingest(prefix)
    second = {r["source_path"].split("/")[-2]: r["n"] for r in w.rows(per_source)}
    assert second["b"] == first["b"] and second["a"] < first["a"]
    s3.filesystem().delete_file(f"{bucket}/src/b/conv.jsonl")
    w.ingest(prefix, prune=True)
    assert [r["source_path"].split("/")[-2] for r in w.rows(per_source)] == ["a"]
    assert Store(f"s3://{bucket}/wh").snapshot_numbers() == [1, 2, 3]


def test_the_snapshot_put_is_conditional_a_second_create_fails(s3, bucket):
    url = f"s3://{bucket}/wh/.warehouse/snapshots/1.json"
    remote_root.create_object(FileSystems(), url, b"first")
    with pytest.raises(FileExistsError):
        remote_root.create_object(FileSystems(), url, b"second")
    assert FileSystems().read(url) == b"first"


def test_two_writers_on_one_remote_root_both_land(s3, bucket):
    root = f"s3://{bucket}/wh"
    for name in ("one", "two"):
        put(s3, f"s3://{bucket}/{name}/x.jsonl", _line(name))
    errors = []

    def run(name: str) -> None:
        try:
            warehouse.ingest(f"s3://{bucket}/{name}", root, progress=False)
        except BaseException as e:  # noqa: BLE001 - reported by the assert below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(n,)) for n in ("one", "two")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    w = Warehouse(root)
    assert sorted(r["source_path"].split("/")[-2] for r in w.rows("SELECT DISTINCT source_path FROM responses")) == [
        "one", "two"]
    assert Store(root).snapshot_numbers() == [1, 2]


def test_a_lease_held_by_another_writer_refuses_no_wait_and_a_stale_one_is_taken_over(s3, bucket):
    from warehouse.errors import LockedError

    root = f"s3://{bucket}/wh"
    put(s3, f"s3://{bucket}/src/x.jsonl", _line("p"))
    store = Store(root)
    import time

    remote_root.create_object(FileSystems(), store.lock_path, orjson.dumps({"holder": "pid 1 on elsewhere", "token": "t",
                                                        "expires": time.time() + 3600}))
    with pytest.raises(LockedError, match="pid 1 on elsewhere"):
        warehouse.ingest(f"s3://{bucket}/src", root, progress=False, wait=False)
    remote_root.replace_object(FileSystems(), store.lock_path, orjson.dumps({"holder": "a dead writer", "token": "t", "expires": 0}),
                          remote_root.read_versioned(FileSystems(), store.lock_path)[1])
    assert warehouse.ingest(f"s3://{bucket}/src", root, progress=False, wait=False).committed
    assert orjson.loads(FileSystems().read(store.lock_path))["released"]


def _line(name: str) -> bytes:
    """One afterimage conversation (a record every run ingests)."""
    return (SAMPLES / "afterimage" / "conversations_20260112_101500.jsonl").read_bytes().splitlines(keepends=True)[0]


def test_a_snapshot_of_a_remote_root_knows_its_files_and_which_snapshots_stay_readable(s3, bucket):
    """The snapshot a connection reads names the objects themselves (not the Arrow scans made of them),
    so a vanished object is found as missing; and the hint for an unreadable snapshot checks objects."""
    from warehouse.reading.views import open_snapshot
    from warehouse.store.readable import snapshot_files

    prefix, root = f"s3://{bucket}/src", f"s3://{bucket}/wh"
    lines = (SAMPLES / "afterimage" / "conversations_20260112_101500.jsonl").read_bytes().splitlines(keepends=True)
    put(s3, f"{prefix}/conv.jsonl", b"".join(lines[:3]))
    w = Warehouse(root)
    w.ingest(prefix)
    put(s3, f"{prefix}/conv.jsonl", lines[3])
    w.ingest(prefix)
    con, snapshot = open_snapshot(root)
    con.close()
    assert snapshot.files and all(f.startswith(f"s3://{bucket}/wh/") for f in snapshot.files)
    assert snapshot.missing() == []
    # what `compact` would vacuum: the files of snapshot 1 that snapshot 2 no longer reads
    old = {f for fs in snapshot_files(root, as_of=1).values() for f in fs}
    new = {f for fs in snapshot_files(root).values() for f in fs}
    assert old - new
    for url in old - new:
        s3.filesystem().delete_file(url.removeprefix("s3://"))
    with pytest.raises(warehouse.StorageError, match="Snapshots 2 to 2 are readable"):
        warehouse.connect(root, as_of=1)


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_a_large_file_whose_mtime_moved_is_unchanged_and_its_pieces_files_are_deleted(s3, bucket, tmp_path,
                                                                                      monkeypatch, where):
    """A file read in pieces whose bytes are the catalogued ones (only its mtime moved) keeps its rows;
    the files its pieces wrote are deleted, from a local root and from a bucket alike."""
    import os

    import pyarrow.fs as pafs

    import warehouse.run.pieces as pieces

    monkeypatch.setattr(pieces, "CHUNK_BYTES", 16384)  # a few pieces: each writes files of its own
    big = tmp_path / "src" / "big.jsonl"
    big.parent.mkdir()
    big.write_bytes(b"".join(p.read_bytes() for p in sorted((SAMPLES / "afterimage").rglob("*.jsonl"))))
    root = str(tmp_path / "wh") if where == "local" else f"s3://{bucket}/wh"
    w = Warehouse(root)
    first = w.ingest(big.parent)
    before = w.rows("SELECT * FROM responses ORDER BY response_id")
    st = big.stat()
    os.utime(big, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    again = w.ingest(big.parent)
    assert first.records_ingested > 20 and again.files_unchanged == 1 and again.records_ingested == 0
    assert w.rows("SELECT * FROM responses ORDER BY response_id") == before
    if where == "local":
        names = [str(p) for p in (tmp_path / "wh").rglob("*")]
    else:
        found = s3.filesystem().get_file_info(pafs.FileSelector(f"{bucket}/wh", recursive=True))
        names = [f.path for f in found]
    # the run rewrote the catalog (the new mtime) and nothing else: no data file of its pieces is left
    ours = [n for n in names if again.run_id in n]
    assert ours and {n.split("/wh/")[1].split("/")[0] for n in ours} <= {"sources", "path_fields"}, ours


def _objects(s3, bucket: str, prefix: str) -> list[str]:
    """Every key under ``prefix``, folder markers (keys ending in /) included: boto3 lists what is stored."""
    import boto3

    client = boto3.client("s3", endpoint_url=s3.endpoint, aws_access_key_id=s3.key_id,
                          aws_secret_access_key=s3.secret, region_name="us-east-1")
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


@pytest.mark.parametrize("when", ["the batches run", "the snapshot is written"])
def test_an_interrupted_first_ingest_into_a_bucket_leaves_no_object(s3, bucket, monkeypatch, when):
    """As a local root's `Store.forget` leaves no lock file or folder: "nothing was written" is true of the
    bucket too (no lease, no folder marker, no table), and a bucket's other objects stay."""
    from warehouse.errors import Interrupted
    from warehouse.run import runner
    from warehouse.store.storage import RemoteStore

    put(s3, f"s3://{bucket}/src/x.jsonl", _line("p"))
    put(s3, f"s3://{bucket}/wh-neighbour.txt", b"not the warehouse's")
    root = f"s3://{bucket}/wh"

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as m, pytest.raises(Interrupted) as e:
        if when == "the batches run":
            m.setattr(runner, "run_batches", ctrl_c)
        else:
            m.setattr(RemoteStore, "write_snapshot", ctrl_c)  # every table committed, the commit point next
        warehouse.ingest([f"s3://{bucket}/src"], root, progress=False)
    assert str(e.value) == f"interrupted: nothing was written, there is no warehouse at {root}"
    assert _objects(s3, bucket, "wh") == ["wh-neighbour.txt"]
    assert warehouse.ingest([f"s3://{bucket}/src"], root, progress=False).committed  # and the root is usable
