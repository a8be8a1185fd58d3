"""Every command on a warehouse root on object storage (issue 18, part C): ``sql``, ``export``, ``history``,
``compact``, ``tokenize``'s root, ``--storage-option`` for the readers, the views' schemas.

Against the local S3 API server of test_remote (moto's server mode), with only the standard variables
set (the ``bucket`` fixture). The bundled samples are ingested once per module into a bucket root and
into a local root, from the same local files, so the two warehouses hold the same rows and ids.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import deltalake
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import warehouse
from warehouse import access, urlpaths
from warehouse.errors import ObjectStoreError, QueryError, StorageError
from warehouse.filesystems import FileSystems
from warehouse.store import remote_root
from warehouse.store.storage import Store

from ..conftest import Warehouse
from ..ground.test_remote import SAMPLES

#: columns a run fills with its own time and id
RUN_COLUMNS = ("ingest_run", "ingested_at")


@pytest.fixture(scope="module")
def roots(s3, tmp_path_factory):
    """(bucket root URL, local root): the samples ingested into each, from the same local files."""
    with pytest.MonkeyPatch.context() as mp:
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3"):
            mp.delenv(name, raising=False)
        for name, value in s3.env().items():
            mp.setenv(name, value)
        bucket = s3.new_bucket()
        url, local = f"s3://{bucket}/wh", tmp_path_factory.mktemp("local") / "wh"
        Warehouse(url).ingest(SAMPLES)
        Warehouse(local).ingest(SAMPLES)
        yield url, local


@pytest.fixture
def env_for(s3, roots, monkeypatch):
    """The standard variables for the server (again for this test: the module fixture's may be undone)."""
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)


def _env(s3, **changes) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(s3.env())
    env.update(changes)
    return env


def _cli(*args: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "warehouse.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd)


# --- sql ----------------------------------------------------------------------------------------


def test_warehouse_sql_on_a_remote_root_prints_the_rows_on_stdout(s3, roots, env_for, tmp_path):
    url, local = roots
    query = "SELECT source_format, count(*) AS n FROM responses GROUP BY 1 ORDER BY 1"
    got = _cli("sql", query, "--root", url, "--format", "csv", env=_env(s3), cwd=tmp_path)
    want = _cli("sql", query, "--root", str(local), "--format", "csv", env=_env(s3), cwd=tmp_path)
    assert got.returncode == 0 and got.stderr == "", got.stderr
    assert got.stdout == want.stdout and got.stdout.count("\n") > 3
    assert list(tmp_path.iterdir()) == []  # no ./s3:/...


# --- export -------------------------------------------------------------------------------------


def _parquet_rows(folder: Path) -> dict[str, list]:
    out = {}
    for f in sorted(folder.rglob("*.parquet")):
        rows = pq.read_table(f).to_pylist()
        out[str(f.relative_to(folder))] = [{k: v for k, v in r.items() if k not in RUN_COLUMNS} for r in rows]
    return out


def _jsonl_rows(path: Path) -> list[dict]:
    return [{k: v for k, v in orjson.loads(line).items() if k not in RUN_COLUMNS}
            for line in path.read_bytes().splitlines()]


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "openai_chat", "afterimage"])
def test_the_export_of_a_remote_root_is_the_export_of_the_same_local_ingest(roots, env_for, tmp_path, fmt):
    url, local = roots
    where = "source_format IN ('afterimage', 'trait_interp', 'scale')"
    outs, counts = {}, {}
    for name, root in (("remote", url), ("local", local)):
        out = tmp_path / name / ("out" if fmt == "parquet" else "out.jsonl")
        summary = warehouse.export(root, where, fmt, out, progress=False)
        outs[name], counts[name] = out, (summary.selected, summary.written, summary.notes)
    assert counts["remote"] == counts["local"] and counts["local"][1] > 0
    if fmt == "parquet":
        got, want = _parquet_rows(outs["remote"]), _parquet_rows(outs["local"])
        assert got == want and sum(map(len, got.values())) > 0
        assert {p: b for p, b in _tree(outs["remote"]).items() if not p.endswith(".parquet")}.keys() == {
            p for p in _tree(outs["local"]) if not p.endswith(".parquet")}
    elif fmt == "jsonl":
        assert _jsonl_rows(outs["remote"]) == _jsonl_rows(outs["local"])
    else:  # formats without the run's own columns: the same bytes
        assert outs["remote"].read_bytes() == outs["local"].read_bytes() and outs["local"].stat().st_size > 0


def test_export_where_is_sandboxed_on_a_remote_root_too(roots, env_for, tmp_path):
    """The Arrow datasets a remote root's views read keep working under the export's sandbox, and a
    --where (or anything run on that connection) still cannot read a file."""
    from warehouse.exports.where import sandbox
    from warehouse.reading.query import open_existing

    url, local = roots
    secret = tmp_path / "secret.parquet"
    pq.write_table(pq.read_table(next((Path(local) / "responses").glob("*.parquet"))), secret)
    with pytest.raises(QueryError, match="table function read_parquet"):
        warehouse.export(url, f"response_id IN (SELECT response_id FROM read_parquet('{secret}'))", "jsonl",
                         tmp_path / "o.jsonl", progress=False)
    assert not (tmp_path / "o.jsonl").exists()
    con = open_existing(url)
    try:
        sandbox(con, [])
        assert con.execute("SELECT count(*) FROM responses").fetchone()[0] > 0
        import duckdb

        with pytest.raises(duckdb.PermissionException):
            con.execute(f"SELECT count(*) FROM read_parquet('{secret}')").fetchall()
    finally:
        con.close()


def test_the_api_where_is_checked_and_sandboxed_on_a_remote_root_too(roots, env_for, tmp_path):
    """A where= runs in a sandboxed database on a bucket root as locally: its Arrow datasets still read."""
    url, local = roots
    secret = tmp_path / "secret.parquet"
    pq.write_table(pq.read_table(next((Path(local) / "responses").glob("*.parquet"))), secret)
    where = "source_format = 'scale'"
    with warehouse.open(url) as wh:
        assert wh.read("responses", where=where).height == warehouse.read(local, "responses", where=where).height > 0
        assert wh.scan("turns", where="role = 'user'").collect().height > 0
        with pytest.raises(QueryError, match="table function read_parquet"):
            wh.read_arrow("responses", where=f"response_id IN (SELECT response_id FROM read_parquet('{secret}'))")
        assert wh.sql(f"SELECT count(*) FROM read_parquet('{secret}')").fetchall()[0][0] > 0  # sql() is not confined


# --- history and compact ------------------------------------------------------------------------


def test_history_and_compact_on_a_remote_root(s3, env_for, tmp_path):
    bucket = s3.new_bucket()
    root = f"s3://{bucket}/wh"
    w = Warehouse(root)
    src = tmp_path / "src"
    src.mkdir()
    for f in sorted((SAMPLES / "afterimage").glob("*.jsonl"))[:2]:  # two runs: more than one file per table
        (src / f.name).write_bytes(f.read_bytes())
        w.ingest(src)
    before = {t: w.one(f"SELECT count(*) FROM {t}") for t in ("responses", "turns", "sources")}
    r = _cli("history", "--root", root, "--format", "json", env=_env(s3), cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert [h["operation"] for h in orjson.loads(r.stdout)] == ["ingest", "ingest"]

    r = _cli("compact", "--root", root, "--retention-hours", "0", env=_env(s3), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "compacted into snapshot 3" in r.stderr
    history = warehouse.history(root)
    assert [h["operation"] for h in history] == ["ingest", "ingest", "compact"]
    assert history[-1]["files_compacted"]  # some table had small files merged
    assert {t: w.one(f"SELECT count(*) FROM {t}") for t in before} == before  # the rows did not change
    assert orjson.loads(FileSystems().read(Store(root).lock_path))["released"]  # the lease was let go
    assert list(tmp_path.iterdir()) == [src]

    # outside readers of the bucket's tables agree with the views
    import polars as pl

    options = access.resolve(None)
    for table in ("responses", "turns"):
        uri = f"{root}/{table}"
        assert deltalake.DeltaTable(uri, storage_options=options).to_pyarrow_table().num_rows == before[table]
        assert pl.scan_delta(uri, storage_options=options).select(pl.len()).collect().item() == before[table]
        ids = sorted(pl.scan_delta(uri, storage_options=options).select("response_id").collect()["response_id"])
        assert ids == sorted(r["response_id"] for r in w.rows(f"SELECT response_id FROM raw.{table}"))


def test_tokenize_adds_token_ranges_to_a_remote_root_as_to_a_local_one(s3, env_for, tmp_path):
    """The same run as locally (``tokenize`` is an ingest of the files that asked for a tokenizer)."""
    from ..conftest import FIXTURES, normalize_rows
    from ..tokenizer_fixture import build_tokenizer

    tokenizer = build_tokenizer(tmp_path / "tokenizer")
    annotations = FIXTURES / "trait_interp_annotations"
    bucket = s3.new_bucket()
    remote_wh, local_wh = Warehouse(f"s3://{bucket}/wh"), Warehouse(tmp_path / "local")
    for w in (remote_wh, local_wh):
        w.ingest(annotations)
    assert remote_wh.one("SELECT count(*) FROM annotations WHERE token_source = 'tokenizer'") == 0
    r = _cli("tokenize", "--root", remote_wh.root, "--tokenizer", str(tokenizer), "--quiet", "--jobs", "1",
             env=_env(s3), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    warehouse.tokenize(local_wh.root, tokenizer, jobs=1, progress=False)
    q = "SELECT * FROM annotations ORDER BY source_path, source_locator"
    got = normalize_rows(remote_wh.rows(q))
    assert got == normalize_rows(local_wh.rows(q))
    assert remote_wh.one("SELECT count(*) FROM annotations WHERE token_source = 'tokenizer'") > 0


# --- errors and storage options -----------------------------------------------------------------


@pytest.mark.parametrize("command", ["sql", "export", "history", "stats", "compact"])
def test_a_wrong_key_against_a_remote_root_gives_one_clear_line(s3, roots, tmp_path, command):
    url, _ = roots
    args = {
        "sql": ["sql", "SELECT count(*) FROM responses", "--root", url],
        "export": ["export", "--root", url, "--format", "jsonl", "--out", str(tmp_path / "o.jsonl")],
        "history": ["history", "--root", url],
        "stats": ["stats", "--root", url],
        "compact": ["compact", "--root", url],
    }[command]
    r = _cli(*args, env=_env(s3, AWS_SECRET_ACCESS_KEY="wrong-secret-value"), cwd=tmp_path)
    assert r.returncode == ObjectStoreError.exit_code == StorageError.exit_code, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr and "wrong-secret-value" not in r.stderr
    _, bucket, _ = urlpaths.split(url)
    assert "access denied" in lines[0] and f"bucket {bucket!r}" in lines[0] and "AWS_ACCESS_KEY_ID" in lines[0]
    assert r.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["sql", "stats", "history", "export"])
def test_storage_options_override_a_wrong_environment_for_the_readers(s3, roots, tmp_path, command):
    url, _ = roots
    wrong = _env(s3, AWS_SECRET_ACCESS_KEY="wrong-secret-value", AWS_REGION="eu-west-3")
    given = ["--storage-option", f"aws_secret_access_key={s3.secret}", "--storage-option", "region=us-east-1"]
    args = {
        "sql": ["sql", "SELECT count(*) AS n FROM responses", "--root", url, "--format", "csv"],
        "stats": ["stats", "--root", url, "--format", "json"],
        "history": ["history", "--root", url, "--format", "json"],
        "export": ["export", "--root", url, "--format", "jsonl", "--out", str(tmp_path / "o.jsonl"), "--quiet"],
    }[command]
    assert _cli(*args, env=wrong, cwd=tmp_path).returncode == ObjectStoreError.exit_code
    r = _cli(*args, *given, env=wrong, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert s3.secret not in r.stdout + r.stderr
    if command == "export":
        assert (tmp_path / "o.jsonl").stat().st_size > 0
    else:
        assert r.stdout.strip()


def test_open_and_connect_take_storage_options(s3, roots, monkeypatch):
    url, local = roots
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-value")
    with pytest.raises(ObjectStoreError, match="access denied"):
        warehouse.open(url)
    right = {"aws_secret_access_key": s3.secret}
    n = Warehouse(local).one("SELECT count(*) FROM responses")
    with warehouse.open(url, storage_options=right) as wh:
        assert wh.sql("SELECT count(*) FROM responses").fetchall()[0][0] == n
        assert wh.refresh().sql("SELECT count(*) FROM responses").fetchall()[0][0] == n  # refresh keeps them
    con = warehouse.connect(url, storage_options=[f"secret_access_key={s3.secret}"])
    try:
        assert con.execute("SELECT count(*) FROM responses").fetchall()[0][0] == n
    finally:
        con.close()
    assert warehouse.sql(url, "SELECT count(*) FROM turns", storage_options=right).fetchall()[0][0] > 0
    assert warehouse.stats(url, storage_options=right)["tables"]["responses"] == n


# --- the views' schemas -------------------------------------------------------------------------


def test_opening_a_remote_root_reads_no_parquet_footer(s3, roots, env_for):
    url, _ = roots
    s3.start_recording()
    con = warehouse.connect(url)
    opened = s3.recorded()
    try:
        s3.start_recording()
        assert con.execute("SELECT count(*), max(length(response)) FROM responses").fetchone()[0] > 0
        queried = s3.recorded()
    finally:
        con.close()
    data = [(m, p) for m, p in opened if ".parquet" in p and "_delta_log" not in p]
    assert data == [], data[:5]
    assert any(m == "GET" and ".parquet" in p for m, p in queried)  # the files are read when queried


def test_an_older_file_lacking_a_later_column_reads_it_as_null_on_a_remote_root(s3, env_for, tmp_path, monkeypatch):
    """A column declared after a file was written (a newer package) is in the table's Delta schema, not in
    that file: the views read it as NULL for the older file's rows, from the pinned version's schema."""
    import dataclasses

    import pyarrow as pa

    from warehouse import tables
    from warehouse.formatkit import declared

    bucket = s3.new_bucket()
    root = f"s3://{bucket}/wh"
    w = Warehouse(root)
    src = tmp_path / "src"
    src.mkdir()
    first, second = sorted((SAMPLES / "afterimage").glob("*.jsonl"))[:2]
    (src / first.name).write_bytes(first.read_bytes())
    w.ingest(src)
    old = declared.TABLES["responses"]
    grown = dataclasses.replace(old, columns=(*old.columns, tables.C("later_note", pa.string(), "declared later")))
    monkeypatch.setitem(declared.TABLES._get(), "responses", grown)  # a newer package declares a column
    (src / second.name).write_bytes(second.read_bytes())
    w.ingest(src)
    files = Store(root).read_snapshot().tables["responses"]
    assert "later_note" in files["columns"]
    fs = s3.filesystem()
    names = [n for n, _ in remote_root.list_objects(FileSystems(), f"{root}/responses") if n.endswith(".parquet")]
    schemas = [pq.read_schema(f"{bucket}/wh/responses/{n}", filesystem=fs) for n in names]
    assert sorted("later_note" in s.names for s in schemas) == [False, True]  # an older file lacks it
    rows = w.rows("SELECT source_path, later_note FROM raw.responses")
    assert {r["source_path"].rsplit("/", 1)[-1] for r in rows} == {first.name, second.name}
    assert all(r["later_note"] is None for r in rows)


# --- Spark --------------------------------------------------------------------------------------


def _covering_tables(con) -> list[str]:
    """Tables holding rows that between them have a column of every Arrow type those tables declare:
    what the data source converts is the type, and test_spark holds every table and view to DuckDB."""
    from warehouse.formatkit.declared import TABLES

    types = {n: {str(f.type) for f in t.arrow_schema} for n, t in TABLES.items()
             if con.execute(f"SELECT count(*) FROM raw.{n}").fetchall()[0][0]}
    left = set().union(*types.values())
    chosen = []
    while left:  # greedily, the table with most types not yet covered
        name = max(types, key=lambda n: len(types[n] & left))
        chosen.append(name)
        left -= types.pop(name)
    return chosen


def test_spark_register_on_a_remote_root_gives_duckdbs_rows(spark, s3, roots, env_for):
    """Tables through the Python data source (no S3 connector JAR), every column type among them, and the
    views over them."""
    from warehouse.formatkit.declared import TABLES
    from warehouse.spark import register

    from ..spark.test_spark import _rows

    url, _ = roots
    names = register(spark, url)
    assert names[:len(TABLES)] == [f"raw_{t}" for t in TABLES]
    con = warehouse.connect(url)
    try:
        tables = _covering_tables(con)
        assert "responses" in tables
        for name in [f"raw_{t}" for t in tables] + ["responses", "path_fields"]:
            duck = "raw." + name.removeprefix("raw_") if name.startswith("raw_") else name
            expected = con.sql(f"SELECT * FROM {duck}").to_arrow_table()
            got = spark.table(name).toArrow()
            assert got.column_names == expected.column_names, name
            assert _rows(got) == _rows(expected), name
    finally:
        con.close()
    plan = spark.table("raw_responses")._jdf.queryExecution().toString()
    assert s3.secret not in plan  # the storage options travel redacted


def test_spark_register_takes_storage_options_over_a_wrong_environment(spark, s3, roots, monkeypatch):
    from warehouse.spark import register

    url, local = roots
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-value")
    with pytest.raises(ObjectStoreError, match="access denied"):
        register(spark, url)
    register(spark, url, storage_options={"aws_secret_access_key": s3.secret})
    # the executors read with the options given, not their (wrong) environment
    assert spark.table("raw_turns").count() == Warehouse(local).one("SELECT count(*) FROM raw.turns")


def test_spark_reads_a_file_lacking_declared_columns_as_nulls_of_their_types(spark, s3, env_for):
    """A pinned file written before some columns were declared (here: the same file rewritten without a
    list, a text and an integer column) reads them as typed NULLs through the data source, one partition
    per file, every other column as written; DuckDB's view gives the same rows."""
    import pyarrow.parquet as pq

    from warehouse.spark import register
    from warehouse.store.readable import snapshot_files

    from ..spark.test_spark import _rows

    url = f"s3://{s3.new_bucket()}/wh"
    w = Warehouse(url)
    w.ingest(sorted((SAMPLES / "afterimage").glob("*.jsonl"))[0])
    files = snapshot_files(url)["responses"]
    fs, path = FileSystems().path(files[0])
    older = pq.read_table(path, filesystem=fs)
    dropped = ["context_ids", "persona", "persona_generation_depth"]  # a list, a text and an integer column
    assert all(older.column(c).null_count == 0 for c in dropped)  # (each with values in the file as written)
    pq.write_table(older.drop_columns(dropped), path, filesystem=fs)
    register(spark, url)
    frame = spark.table("raw_responses")
    assert frame.rdd.getNumPartitions() == len(files)
    got = frame.toArrow()
    assert all(got.column(c).null_count == got.num_rows for c in dropped)
    assert [got.schema.field(c).type for c in dropped] == [pa.list_(pa.string()), pa.string(), pa.int64()]
    assert _rows(got) == _rows(spark_wh_arrow(w, "SELECT * FROM raw.responses"))


def test_spark_reads_a_remote_root_in_the_declarations_of_the_process_that_registers_it(
        spark, s3, env_for, monkeypatch):
    """The schema Spark is told and the batches' schema are the declarations of the process calling
    register (a newer package than the Python workers': here a column declared in this process alone),
    not each Spark Python worker's own: the column is there, NULL in files written before it."""
    import dataclasses

    from warehouse import tables
    from warehouse.formatkit import declared
    from warehouse.spark import register

    url = f"s3://{s3.new_bucket()}/wh"
    Warehouse(url).ingest(sorted((SAMPLES / "afterimage").glob("*.jsonl"))[0])
    old = declared.TABLES["responses"]
    grown = dataclasses.replace(old, columns=(*old.columns, tables.C("later_note", pa.string(), "declared later")))
    monkeypatch.setitem(declared.TABLES._get(), "responses", grown)
    register(spark, url)
    got = spark.table("raw_responses").toArrow()
    assert got.column_names == grown.arrow_schema.names
    assert got.num_rows and got.column("later_note").null_count == got.num_rows


def test_the_spark_engine_ingests_into_a_remote_root(spark, s3, env_for, tmp_path):
    bucket = s3.new_bucket()
    src = SAMPLES / "afterimage"
    spark_wh, local_wh = Warehouse(f"s3://{bucket}/wh"), Warehouse(tmp_path / "local")
    got = spark_wh.ingest(src, engine="spark", jobs=None)
    want = local_wh.ingest(src)
    assert got.committed and (got.files_ingested, got.records_ingested) == (want.files_ingested, want.records_ingested)
    q = "SELECT * EXCLUDE (response_id, record_id) FROM responses ORDER BY source_path, source_locator"
    from ..spark.test_spark import _rows

    assert _rows(spark_wh_arrow(spark_wh, q)) == _rows(spark_wh_arrow(local_wh, q))
    assert list(tmp_path.iterdir()) == [tmp_path / "local"]


def spark_wh_arrow(w: Warehouse, sql: str):
    con = warehouse.connect(w.root)
    try:
        return con.sql(sql).to_arrow_table()
    finally:
        con.close()


# --- view ---------------------------------------------------------------------------------------


def test_the_viewers_pages_of_a_remote_root_are_those_of_the_same_local_ingest(s3, roots, env_for):
    """The list, a response page of each format and the spans of a category, read from the bucket as from disk."""
    from warehouse.viewer.data import Reader
    from warehouse.viewer.pages import Links, Pages

    url, local = roots
    readers = [Reader(url), Reader(str(local))]
    try:
        remote_pages, local_pages = (Pages(r, Links()) for r in readers)
        assert str(remote_pages.list(size=None)) == str(local_pages.list(size=None))
        ids = Warehouse(local).rows("SELECT min(response_id) AS response_id FROM responses GROUP BY source_format ORDER BY 1")
        assert len(ids) >= 4
        for r in ids:
            assert str(remote_pages.response(r["response_id"])) == str(local_pages.response(r["response_id"]))
        category = Warehouse(local).one("SELECT category FROM annotations WHERE level = 'span' GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1")
        assert 'data-category="' in str(local_pages.spans(category))
        assert str(remote_pages.spans(category)) == str(local_pages.spans(category))
    finally:
        for r in readers:
            r.close()
