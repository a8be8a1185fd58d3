"""The storage seam (``warehouse.filesystems``): every path reached through a ``FileSystems`` a run, a worker
or a connection makes for itself, and no storage state kept by the process."""

from __future__ import annotations

import ast

import pytest

import warehouse
from warehouse.errors import ObjectStoreError, UsageError
from warehouse.filesystems import FileSystems, reach
from warehouse.store.remote_root import RootURL
from warehouse.store.storage import Store

from ..conftest import REPO
from .test_remote import put

#: the modules that reach storage: none may keep anything of it between calls
SEAM = ["warehouse/filesystems.py", "warehouse/remote.py", "warehouse/store/remote_root.py", "warehouse/access.py"]


@pytest.mark.parametrize("module", SEAM)
def test_the_seam_keeps_no_state_of_the_process(module):
    """No module-level dict, list, set or value rebound later (``global``): options, clients and listings
    live in a ``FileSystems``, which whoever needs one makes."""
    tree = ast.parse((REPO / module).read_text(encoding="utf-8"))
    rebound = [n for n in ast.walk(tree) if isinstance(n, ast.Global)]
    assert not rebound, f"{module}: global {rebound[0].names}"
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            names = [t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                     if isinstance(t, ast.Name)]
            if any(n.isupper() for n in names):  # constants: tables of names, limits
                continue
            assert not isinstance(node.value, (ast.Dict, ast.List, ast.Set, ast.Call, ast.Constant)), \
                f"{module}:{node.lineno}: module-level state {names}"


def test_options_are_checked_when_made_and_a_local_root_leaves_a_stray_environment_alone(monkeypatch):
    with pytest.raises(UsageError, match="aws_secret_access_key"):
        FileSystems({"aws_access_key_id": "AKIA-only-one-key"})
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA-only-one-key")  # a stray half of a pair in the environment
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    FileSystems.for_path("/some/local/root")  # not read until a URL is met
    with pytest.raises(UsageError):
        FileSystems.for_path("s3://bucket/wh")


def test_a_remote_roots_urls_carry_its_options_and_a_bare_one_is_refused():
    mine = FileSystems({"aws_region": "eu-west-3"}, check=False)
    root = RootURL("s3://b/wh", mine)
    assert reach(root / "responses" / "x.parquet") is mine
    assert reach(Store("s3://b/wh", mine).table_uri("responses")) is mine
    with pytest.raises(TypeError, match="without its store's storage options"):
        reach("s3://b/wh/responses")  # a URL that lost its root's options on the way: our fault, said so
    assert reach("/local/wh/responses").given == {}


def test_a_run_with_other_options_leaves_an_open_connection_alone(s3, bucket, tmp_path):
    """Each reaches the bucket with its own options: a later run's wrong credentials are that run's
    alone (the options were the process's once, and the last run's applied to every connection)."""
    root = f"s3://{bucket}/wh"
    put(s3, f"s3://{bucket}/src/a.jsonl", b'{"messages": [{"role": "user", "content": "hi"}, '
                                          b'{"role": "assistant", "content": "hello"}]}\n')
    warehouse.ingest(f"s3://{bucket}/src", root, progress=False)
    from warehouse.reading.views import open_snapshot

    con, snapshot = open_snapshot(root)
    wrong = {"aws_secret_access_key": "wrong-secret-value"}  # the environment's key, another secret
    with pytest.raises(ObjectStoreError):
        warehouse.ingest(f"s3://{bucket}/src", tmp_path / "elsewhere", storage_options=wrong, progress=False)
    assert snapshot.missing() == []  # asked with the connection's own options
    assert con.execute("SELECT count(*) FROM responses").fetchone()[0] == 1


def test_a_format_handed_a_path_alone_reaches_it_with_the_runs_options(s3, bucket, monkeypatch):
    """A Parquet object over the 64 KB head: hf_chat's sniff reads its footer through the run's FileSystems,
    which the path carries (``Reachable``), so a secret given as a storage option, and in no environment
    variable, is the one it uses; the object is claimed, not passed over."""
    import io
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    words = random.Random(7)  # text that does not compress to nothing: the file must outgrow the head
    rows = [{"messages": [{"role": "user", "content": f"q{i} " + "".join("%032x" % words.getrandbits(128) for _ in range(8))},
                          {"role": "assistant", "content": f"a{i}"}]} for i in range(400)]
    data = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), data, compression="none")
    assert len(data.getvalue()) > 64 * 1024
    put(s3, f"s3://{bucket}/src/chat.parquet", data.getvalue())
    secret = {"aws_secret_access_key": s3.env()["AWS_SECRET_ACCESS_KEY"]}
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")  # only the run has it
    root = f"s3://{bucket}/wh"
    summary = warehouse.ingest(f"s3://{bucket}/src", root, storage_options=secret, progress=False)
    assert (summary.records_ingested, summary.records_quarantined) == (400, 0)


def test_a_path_that_carries_its_filesystems_travels_as_its_text():
    """Pickled to a worker or an executor, a ``Reachable`` (a ``RootURL``) is its text alone: never the clients
    and secrets of the FileSystems it carries; the far side makes its own from the options it is handed."""
    import pickle

    url = RootURL("s3://b/wh", FileSystems({"aws_region": "eu-west-3"}, check=False)) / "responses"
    back = pickle.loads(pickle.dumps(url))
    assert back == "s3://b/wh/responses" and type(back) is str and not hasattr(back, "filesystems")
