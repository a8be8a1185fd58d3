"""Sources on object storage: ``warehouse ingest s3://bucket/prefix --root LOCAL``.

Against a real S3 API server on localhost (moto's server mode, ``tests/s3server.py``),
with only the standard variables set: endpoint, keys, region, ``AWS_ALLOW_HTTP=true``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import warehouse
from warehouse import access, remote, urlpaths
from warehouse.errors import ObjectStoreError, UsageError
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.ingestor import Ingestor
from warehouse.formatkit.readers import json_document_records
from warehouse.formatkit.records import RecordContext
from warehouse.formatkit.registry import Registry

from ..conftest import REPO, Warehouse

SAMPLES = REPO / "samples"
#: columns a run fills with its own time and id
RUN_COLUMNS = {"ingest_run", "ingested_at", "mtime_ns"}
ID_COLUMNS = ("response_id", "record_id", "annotation_id")


def put(s3, url: str, data: bytes) -> None:
    _, bucket, key = urlpaths.split(url)
    with s3.filesystem().open_output_stream(f"{bucket}/{key}") as f:
        f.write(data)


def upload(s3, local: Path, url: str) -> None:
    for p in sorted(local.rglob("*")):
        if p.is_file():
            put(s3, f"{url}/{p.relative_to(local).as_posix()}", p.read_bytes())


def delete(s3, url: str) -> None:
    _, bucket, key = urlpaths.split(url)
    s3.filesystem().delete_file(f"{bucket}/{key}")


def tables(w: Warehouse, prefix: str, local: str) -> dict[str, list[dict]]:
    """Every table's rows, the source prefix written as ``local``, without the run's own columns."""
    out = {}
    for name in TABLES:
        rows = []
        for row in _arrow_rows(w, f"SELECT * FROM raw.{name}"):
            if row.get("depends_on"):  # the mtimes of what a source was built from: the store's, not the disk's
                row["depends_on"] = [{k: v for k, v in d.items() if k != "mtime_ns"}
                                     for d in orjson.loads(row["depends_on"])]
            rows.append({k: _local(v, prefix, local) for k, v in row.items() if k not in RUN_COLUMNS})
        out[name] = rows
    out["path_fields"] = [
        {k: _local(v, prefix, local) for k, v in r.items()} for r in _arrow_rows(w, "SELECT * FROM path_fields")
    ]
    return out


def _arrow_rows(w: Warehouse, sql: str) -> list[dict]:
    con = warehouse.connect(w.root)
    try:
        return con.sql(sql).to_arrow_table().to_pylist()
    finally:
        con.close()


def _local(value, prefix: str, local: str):
    if isinstance(value, str):
        return value.replace(prefix, local)
    if isinstance(value, list):
        return [_local(v, prefix, local) for v in value]
    if isinstance(value, dict):
        return {k: _local(v, prefix, local) for k, v in value.items()}
    return value


def assert_same_tables(got: dict[str, list[dict]], want: dict[str, list[dict]]) -> None:
    """Equal rows in every table; ids (hashes of the path) differ, but map one to one across all tables."""
    mapping: dict[str, dict] = {c: {} for c in ID_COLUMNS}
    for name in want:
        def key(row):
            return repr(sorted((k, repr(v)) for k, v in row.items() if k not in ID_COLUMNS))

        g, w = sorted(got[name], key=key), sorted(want[name], key=key)
        assert [key(r) for r in g] == [key(r) for r in w], f"table {name} differs"
        for rg, rw in zip(g, w):
            for c in ID_COLUMNS:
                if c in rg and rg[c] is not None:
                    assert mapping[c].setdefault(rg[c], rw[c]) == rw[c], f"{name}.{c} links differently"
    for c, m in mapping.items():
        assert len(set(m.values())) == len(m), f"{c}: two ids became one"


def test_the_samples_from_a_bucket_give_the_tables_of_a_local_ingest(s3, bucket, tmp_path):
    prefix = f"s3://{bucket}/any/prefix"
    upload(s3, SAMPLES, prefix)
    remote_wh, local_wh = Warehouse(tmp_path / "remote"), Warehouse(tmp_path / "local")
    got = remote_wh.ingest(prefix)
    want = local_wh.ingest(SAMPLES)
    assert (got.files_ingested, got.records_ingested, got.records_quarantined) == (
        want.files_ingested, want.records_ingested, want.records_quarantined)
    assert got.files_ingested > 50
    remote_tables, local_tables = tables(remote_wh, prefix, str(SAMPLES)), tables(local_wh, str(SAMPLES), str(SAMPLES))
    assert_same_tables(remote_tables, local_tables)
    # the path-derived fields come from the object key as from the local path
    derived = remote_wh.rows("SELECT DISTINCT experiment, pipeline, prompt_set FROM responses WHERE experiment IS NOT NULL")
    assert {"experiment": "demo", "pipeline": "inference", "prompt_set": "rm_syco/train_100"} in derived
    assert remote_wh.one("SELECT count(*) FROM sources WHERE source_path NOT LIKE 's3://%'") == 0


def test_an_unchanged_bucket_is_skipped_from_its_listing_without_reading_an_object(s3, bucket, tmp_path):
    prefix = f"s3://{bucket}/p"
    upload(s3, SAMPLES / "experiments", f"{prefix}/experiments")
    w = Warehouse(tmp_path / "wh")
    first = w.ingest(prefix)
    s3.start_recording()
    again = w.ingest(prefix)
    requests = s3.recorded()
    assert again.files_unchanged == first.files_ingested and again.files_ingested == 0
    objects = [r for r in requests if "list-type" not in r[1]]
    assert requests and not objects, objects  # listings only: no HEAD, no GET of an object


def test_a_changed_object_replaces_its_rows_and_prune_drops_a_deleted_one(s3, bucket, tmp_path):
    prefix = f"s3://{bucket}/data"
    a, b = f"{prefix}/a/conv.jsonl", f"{prefix}/b/conv.jsonl"
    line = (SAMPLES / "afterimage").glob("*.jsonl")
    first_line = next(iter(sorted(line))).read_bytes().splitlines()[0]
    put(s3, a, first_line + b"\n")
    put(s3, b, first_line + b"\n")
    w = Warehouse(tmp_path / "wh")
    w.ingest(prefix)
    assert w.one("SELECT count(*) FROM responses") == 2
    changed = orjson.loads(first_line)
    put(s3, a, first_line + b"\n" + first_line + b"\n")  # now two conversations
    s = w.ingest(prefix)
    assert (s.files_ingested, s.files_unchanged) == (1, 1)
    assert w.rows("SELECT source_path, count(*) AS n FROM responses GROUP BY 1 ORDER BY 1") == [
        {"source_path": a, "n": 2}, {"source_path": b, "n": 1}]
    assert changed  # the line is a real conversation
    delete(s3, b)
    kept = w.ingest(prefix)
    assert kept.files_gone == 1 and w.one("SELECT count(*) FROM responses WHERE source_path = ?", [b]) == 1
    pruned = w.ingest(prefix, prune=True)
    assert pruned.files_removed == 1
    assert w.one("SELECT count(*) FROM responses WHERE source_path = ?", [b]) == 0
    assert w.one("SELECT count(*) FROM sources WHERE source_path = ?", [b]) == 0


def test_a_large_object_streams_in_ranged_pieces_like_a_local_file(s3, bucket, tmp_path, monkeypatch):
    import warehouse.run.pieces as pieces

    monkeypatch.setattr(pieces, "CHUNK_BYTES", 32768)  # pieces of a few dozen lines: several ranged reads
    lines = b"".join(p.read_bytes() for p in sorted((SAMPLES / "afterimage").rglob("*.jsonl")))
    local = tmp_path / "src" / "big.jsonl"
    local.parent.mkdir()
    local.write_bytes(lines * 4)
    url = f"s3://{bucket}/big/big.jsonl"
    put(s3, url, local.read_bytes())
    remote_wh, local_wh = Warehouse(tmp_path / "remote"), Warehouse(tmp_path / "local")
    got, want = remote_wh.ingest(f"s3://{bucket}/big"), local_wh.ingest(local.parent)
    assert got.records_ingested == want.records_ingested > 20
    assert_same_tables(tables(remote_wh, f"s3://{bucket}/big", str(local.parent)),
                       tables(local_wh, str(local.parent), str(local.parent)))
    sha = remote_wh.one("SELECT sha256 FROM sources")
    assert sha == local_wh.one("SELECT sha256 FROM sources")  # hashed as parsed, over the pieces


def test_an_archive_in_a_bucket_is_read_from_its_directory_like_a_local_one(s3, bucket, tmp_path):
    """An Inspect .eval over the record limit is read at the places its directory names (ranged reads of
    the object), and hashed in a pass of its own: the rows and digest of the local file."""
    logs = REPO / "tests" / "fixtures" / "inspect"
    prefix = f"s3://{bucket}/logs"
    upload(s3, logs, prefix)
    limit = 42_000 / 2**20  # under the .eval's size, over its largest member
    remote_wh, local_wh = Warehouse(tmp_path / "remote"), Warehouse(tmp_path / "local")
    got, want = remote_wh.ingest(prefix, max_record_mb=limit), local_wh.ingest(logs, max_record_mb=limit)
    assert got.records_ingested == want.records_ingested > 30 and got.records_quarantined == 0
    assert_same_tables(tables(remote_wh, prefix, str(logs)), tables(local_wh, str(logs), str(logs)))


class Refers(Ingestor):
    """Test format: ``X.ref.json`` = {"prompt", "ref"}; the response is the file ``ref`` names (from the data)."""

    name = "refers"
    description = "test format: a prompt and a path to its response"
    suffixes = (".ref.json", ".txt")

    def sniff(self, path, head):
        return path.endswith(".ref.json")

    def records(self, src):
        for r in json_document_records(src):
            try:
                data = src.read_dependency(r.value["ref"])
                r.envelope = {"response": data.decode() if data is not None else None, "error": None}
            except Exception as e:  # noqa: BLE001 - the refusal is the point
                r.envelope = {"response": None, "error": str(e)}
            yield r

    def map(self, record, ctx: RecordContext):
        return {"responses": [{"prompt": record.value["prompt"], "response": record.envelope["response"],
                               "extra": {"error": record.envelope["error"]}}]}


REFERS = Registry.of({"refers": "tests.ground.test_remote:Refers"})


def test_references_resolve_inside_the_prefix_and_a_changed_one_rebuilds(s3, bucket, tmp_path):
    prefix = f"s3://{bucket}/tree"
    put(s3, f"{prefix}/sub/x.ref.json", orjson.dumps({"prompt": "p", "ref": "../answers/x.txt"}))
    put(s3, f"{prefix}/answers/x.txt", b"first")
    put(s3, f"{prefix}/sub/y.ref.json", orjson.dumps({"prompt": "q", "ref": "../../outside.txt"}))
    put(s3, f"s3://{bucket}/outside.txt", b"secret")
    w = Warehouse(tmp_path / "wh")
    w.ingest(prefix, registry=REFERS)
    rows = {r["prompt"]: r for r in w.rows("SELECT prompt, response, extra FROM responses")}
    assert rows["p"]["response"] == "first"
    assert rows["q"]["response"] is None and "outside" in orjson.loads(rows["q"]["extra"])["error"]
    put(s3, f"{prefix}/answers/x.txt", b"second!")  # the dependency changes: its dependent is read again
    s = w.ingest(prefix, registry=REFERS)
    assert w.one("SELECT response FROM responses WHERE prompt = 'p'") == "second!"
    assert s.files_ingested == 1


def test_storage_options_override_the_environment_and_are_never_shown(s3, bucket, tmp_path, monkeypatch):
    prefix = f"s3://{bucket}/opts"
    upload(s3, SAMPLES / "afterimage", prefix)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    w = Warehouse(tmp_path / "wh")
    s = w.ingest(prefix, storage_options={"AWS_SECRET_ACCESS_KEY": s3.secret, "endpoint": s3.endpoint})
    assert s.records_ingested > 0
    stored = [_arrow_rows(w, f"SELECT * FROM raw.{t}") for t in TABLES]
    assert s3.secret not in repr(stored)
    assert all(s3.secret.encode() not in p.read_bytes() for p in w.root.rglob("*") if p.is_file())


def _cli(*args, env: dict, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "warehouse.cli", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)


def _env(s3, **changes) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(s3.env())
    env.update(changes)
    return env


@pytest.mark.parametrize("case", ["wrong secret", "unknown key", "wrong endpoint", "no such bucket"])
def test_a_store_that_refuses_gives_one_clear_line(s3, bucket, tmp_path, case):
    put(s3, f"s3://{bucket}/p/a.jsonl", b"{}\n")
    url = f"s3://{bucket}/p"
    env = {
        "wrong secret": _env(s3, AWS_SECRET_ACCESS_KEY="wrong-secret-value"),
        "unknown key": _env(s3, AWS_ACCESS_KEY_ID="AKIANOSUCHKEY0000000"),
        "wrong endpoint": _env(s3, AWS_ENDPOINT_URL="http://127.0.0.1:9"),
        "no such bucket": _env(s3),
    }[case]
    if case == "no such bucket":
        url = f"s3://no-such-bucket-{bucket}/p"
    r = _cli("ingest", url, "--root", str(tmp_path / "wh"), "--quiet", env=env, tmp_path=tmp_path)
    assert r.returncode == ObjectStoreError.exit_code, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr and "wrong-secret-value" not in r.stderr
    expected = {
        "wrong secret": "access denied", "unknown key": "access denied",
        "wrong endpoint": "cannot reach http://127.0.0.1:9", "no such bucket": "no such bucket",
    }[case]
    assert expected in lines[0] and url in lines[0], lines[0]
    if case in ("wrong secret", "unknown key"):
        assert "AWS_ACCESS_KEY_ID" in lines[0] and f"bucket {bucket!r}" in lines[0]
    assert not (tmp_path / "wh").exists()


def test_plain_http_needs_allow_http_and_bad_options_are_usage_errors(s3, bucket, tmp_path):
    env = _env(s3)
    del env["AWS_ALLOW_HTTP"]
    r = _cli("ingest", f"s3://{bucket}/p", "--root", str(tmp_path / "wh"), env=env, tmp_path=tmp_path)
    assert r.returncode == UsageError.exit_code and "AWS_ALLOW_HTTP=true" in r.stderr, r.stderr
    r = _cli("ingest", f"s3://{bucket}/p", "--root", str(tmp_path / "wh"), "--storage-option", "aws_colour=red",
             env=_env(s3), tmp_path=tmp_path)
    assert r.returncode == UsageError.exit_code and "unknown option" in r.stderr and "aws_region" in r.stderr
    r = _cli("ingest", f"s3://{bucket}/p", "--root", str(tmp_path / "wh"), "--storage-option", "novalue",
             env=_env(s3), tmp_path=tmp_path)
    assert r.returncode == UsageError.exit_code and "KEY=VALUE" in r.stderr


def test_the_cli_ingests_from_a_bucket_with_storage_options(s3, bucket, tmp_path):
    upload(s3, SAMPLES / "scale", f"s3://{bucket}/scale")
    env = _env(s3)
    secret = env.pop("AWS_SECRET_ACCESS_KEY")
    r = _cli("ingest", f"s3://{bucket}/scale", "--root", str(tmp_path / "wh"),
             "--storage-option", f"aws_secret_access_key={secret}", env=env, tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    assert secret not in r.stderr + r.stdout
    assert Warehouse(tmp_path / "wh").one("SELECT count(*) FROM responses") > 0


def test_translate_uses_the_object_store_names():
    opts = access.resolve({"AWS_REGION": "eu-west-1", "endpoint": "https://example.test", "Aws_Access_Key_Id": "id",
                           "aws_secret_access_key": "s3cr3t-value"})
    kwargs = access.translate(opts)
    assert kwargs["region"] == "eu-west-1" and kwargs["endpoint_override"] == "https://example.test"
    assert (kwargs["access_key"], kwargs["secret_key"], kwargs["scheme"]) == ("id", "s3cr3t-value", "https")
    assert remote.redact("denied for s3cr3t-value", opts) == "denied for ***"
    with pytest.raises(UsageError, match="aws_secret_access_key"):
        access.translate({"aws_access_key_id": "id"})


def test_urls_resolve_by_name_inside_their_bucket():
    assert urlpaths.normpath("s3://b/a/./c/../d/") == "s3://b/a/d"
    assert urlpaths.normpath("s3://b/a/../../x") == "s3://b/x"  # never above the bucket
    assert urlpaths.normpath("s3://b") == "s3://b"
