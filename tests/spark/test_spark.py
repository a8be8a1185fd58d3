"""Spark gives the same answers: the engine the local engines' tables, ``register`` DuckDB's views.

Every test here runs on one local Spark (``local[2]``, the session-scoped ``spark`` fixture),
skipped with the reason where pyspark or Java is absent. The translation rules are held
to DuckDB one construct at a time (the same query, translated, gives the same values), and
every view of a warehouse holding the bundled samples to its DuckDB rows.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import warehouse
from warehouse.errors import StrictModeError, UsageError
from warehouse.formatkit.declared import TABLES
from warehouse.store.readable import snapshot_files

from ..conftest import FIXTURES, REPO, Warehouse, write_json

#: what differs between two runs of the same ingest: the run's id and clock
RUN_COLUMNS = {"ingest_run", "ingested_at"}


def _plain(v):
    """A value both engines' Arrow results agree on: NaN named, instants in UTC, floats to 12 significant
    digits (an average's last bits follow the order the engine summed in)."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, float):
        return float(f"{v:.12g}")
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.timezone.utc).isoformat()
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _rows(table, drop=()) -> list[dict]:
    """An Arrow table's rows as plain dicts, in a canonical order (views promise no order)."""
    rows = [{k: _plain(v) for k, v in r.items() if k not in drop} for r in table.to_pylist()]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _duckdb(root, sql: str):
    con = warehouse.connect(root)
    try:
        return con.sql(sql).to_arrow_table()
    finally:
        con.close()


# --- the translation, one construct at a time ------------------------------------------------

#: a DuckDB query per rule of warehouse/spark/translate.py, with the inputs where the engines differ
CONSTRUCTS = {
    "named regexp groups": "SELECT regexp_extract(p, '^(\\w+)/(\\w+)?/?(x)?', ['a', 'b', 'c']) AS s "
                           "FROM (VALUES ('one/two'), ('one'), ('/')) t(p)",
    "list length": "SELECT len(string_split(p, '/')) AS n FROM (VALUES ('a/b/c'), (''), ('x')) t(p)",
    "index out of range": "SELECT [1, 2, 3][2] AS a, [1, 2, 3][4] AS b, list_value(1)[i] AS c FROM (VALUES (1), (5)) t(i)",
    "slices": "SELECT [1, 2, 3][0:2] AS a, [1, 2, 3][2:9] AS b, [1, 2, 3][3:1] AS c, [1, 2, 3][2:2] AS d, "
              "[1, 2, 3][NULL:2] AS e, [1, 2, 3][1:NULL] AS f",
    "ordered list": "SELECT g, list(v ORDER BY k, v) AS l, list(v ORDER BY k) FILTER (WHERE v <> 'x')[1] AS f "
                    "FROM (VALUES (1, 3, 'c'), (1, 1, 'x'), (1, 2, 'b'), (2, 1, NULL)) t(g, k, v) GROUP BY g",
    "any_value skips NULLs": "SELECT any_value(v) AS a, any_value(v) FILTER (WHERE k > 1) AS b "
                             "FROM (VALUES (1, NULL), (2, NULL), (3, 'z')) t(k, v)",
    "to_json keeps NULLs": "SELECT md5(to_json({a: NULL::VARCHAR, b: [{'r': 'u', 's': NULL::VARCHAR}]})::VARCHAR) AS h",
    "strptime": "SELECT strptime('2025-01-02_03-04-05', '%Y-%m-%d_%H-%M-%S') AS t",
    "json_each": "SELECT c.key AS k, coalesce(c.value ->> '$', CAST(c.value AS VARCHAR)) AS v "
                 "FROM (SELECT '{\"a\": \"s\", \"b\": {\"c\": [1, true]}, \"d\": null}' AS j) AS s, json_each(s.j) AS c",
    "USING keeps column order": "WITH l AS (SELECT 1 AS a, 2 AS k, 3 AS b), r AS (SELECT 2 AS k, 4 AS c) "
                                "SELECT l.*, r.c FROM l LEFT JOIN r USING (k)",
}


@pytest.mark.parametrize("sql", CONSTRUCTS.values(), ids=CONSTRUCTS.keys())
def test_each_translated_construct_gives_duckdbs_values(spark, sql):
    import duckdb

    from warehouse.spark.translate import to_spark

    expected = duckdb.sql(sql).to_arrow_table()
    got = spark.sql(to_spark(sql)).toArrow()
    assert got.column_names == expected.column_names
    assert _rows(got) == _rows(expected)


def test_the_rules_are_needed_sqlglot_alone_gives_other_values_or_none(spark):
    """Without the rules, sqlglot's own translation fails or answers differently for each construct:
    the rules are not decoration (a rule sqlglot comes to cover can then be dropped)."""
    import duckdb
    import sqlglot

    needed = []
    for name, sql in CONSTRUCTS.items():
        try:
            plain = spark.sql(sqlglot.transpile(sql, read="duckdb", write="spark")[0]).toArrow()
            same = plain.column_names == duckdb.sql(sql).to_arrow_table().column_names and \
                _rows(plain) == _rows(duckdb.sql(sql).to_arrow_table())
        except Exception:
            same = False
        if not same:
            needed.append(name)
    covered = [name for name in CONSTRUCTS if name not in needed]
    assert not covered, f"sqlglot now translates {covered} by itself: drop their rules from warehouse/spark/translate.py"


def test_views_read_raw_tables_as_one_part_names_and_become_temporary():
    from warehouse.spark.translate import to_spark

    out = to_spark("CREATE OR REPLACE VIEW turns AS SELECT * FROM raw.turns")
    assert out == "CREATE OR REPLACE TEMPORARY VIEW turns AS SELECT * FROM raw_turns"


# --- the views --------------------------------------------------------------------------------


#: fixture folders beside the samples, for the views the samples leave empty: Inspect logs, per-token
#: projections, chat datasets and batch files
EVERY_VIEW_FIXTURES = ("inspect", "trait_interp_projections", "hf_chat", "openai_batch")


@pytest.fixture(scope="module")
def every_view_wh(tmp_path_factory) -> Warehouse:
    """The samples and the fixtures of the formats the samples lack, in one warehouse."""
    src = tmp_path_factory.mktemp("every-view") / "src"
    shutil.copytree(REPO / "samples", src)
    for name in EVERY_VIEW_FIXTURES:
        shutil.copytree(FIXTURES / name, src / f"fixture_{name}")
    w = Warehouse(src.parent / "wh")
    w.ingest(src)
    return w


def test_every_view_gives_in_spark_the_rows_it_gives_in_duckdb(spark, every_view_wh):
    from warehouse.spark import register

    names = register(spark, every_view_wh.root)
    views = [n for n in names if not n.startswith("raw_")]
    assert {"responses", "turns", "path_fields", "dpo_pairs", "annotated_spans", "annotation_categories"} <= set(views)
    assert [n for n in names if n.startswith("raw_")] == [f"raw_{t}" for t in TABLES]
    empty = []
    con = warehouse.connect(every_view_wh.root)
    try:
        for name in names:
            duck = "raw." + name.removeprefix("raw_") if name.startswith("raw_") else name
            expected = con.sql(f"SELECT * FROM {duck}").to_arrow_table()
            got = spark.table(name).toArrow()
            assert got.column_names == expected.column_names, name
            assert _rows(got) == _rows(expected), name
            if expected.num_rows == 0:
                empty.append(name)
    finally:
        con.close()
    # the samples and those fixtures fill every view but two (no format of them has chunks or rubrics):
    # an empty one compares nothing
    assert set(empty) <= {"raw_chunks", "chunks", "raw_rubric_criteria", "rubric_criteria"}, empty
    got = spark.sql("SELECT trait, avg(trait_score) AS s FROM responses WHERE trait IS NOT NULL GROUP BY trait")
    assert got.count() > 0


def test_register_reads_the_snapshot_it_was_given(spark, tmp_path):
    """Tables come from the snapshot's file lists: a later ingest shows after registering again, an
    earlier snapshot (``as_of``) reads as it was, and the files are the Delta table's own."""
    from deltalake import DeltaTable

    from warehouse.spark import register

    w = Warehouse(tmp_path / "wh")
    src = tmp_path / "src"
    first, second = sorted((REPO / "samples" / "afterimage").glob("*.jsonl"))[:2]
    src.mkdir()
    shutil.copy(first, src)
    w.ingest(src)
    snapshot = warehouse.history(w.root)[-1]["snapshot"]
    register(spark, w.root)
    before = spark.table("responses").count()
    shutil.copy(second, src)
    w.ingest(src)
    added = w.one(f"SELECT count(*) FROM responses WHERE source_path LIKE '%{second.name}'")
    assert spark.table("responses").count() == before  # the registered snapshot
    register(spark, w.root)
    assert added > 0 and spark.table("responses").count() == before + added
    register(spark, w.root, as_of=snapshot)
    assert spark.table("responses").count() == before
    assert sorted(snapshot_files(w.root)["responses"]) == sorted(
        DeltaTable(str(w.root / "responses")).file_uris())


class _WithDeltaConnector:
    """The session as a Delta connector sees it: ``delta-spark`` cannot be fetched here (no Maven), so
    ``format("delta").option("versionAsOf", v).load(uri)`` is answered by deltalake's own reading of
    that version. What this holds is register's side: that it asks for the pinned version of each
    table's folder and brings the columns to the declared ones."""

    class _Conf:
        def get(self, key, default=None):
            return "io.delta.sql.DeltaSparkSessionExtension" if key == "spark.sql.extensions" else default

    class _Reader:
        def __init__(self, spark):
            self.spark, self.options, self.asked = spark, {}, []

        def format(self, name):
            assert name == "delta"
            return self

        def option(self, key, value):
            self.options[key] = value
            return self

        def load(self, uri):
            from deltalake import DeltaTable

            version = int(self.options.pop("versionAsOf"))
            self.asked.append((uri, version))
            from pyspark.sql.pandas.types import from_arrow_schema

            data = DeltaTable(uri, version=version).to_pyarrow_dataset().to_table()
            if data.num_rows == 0:  # pyspark cannot make a frame of an empty Arrow table with timestamps
                return self.spark.createDataFrame([], from_arrow_schema(data.schema))
            return self.spark.createDataFrame(data)

    def __init__(self, spark):
        self._spark, self.conf, self.read = spark, self._Conf(), self._Reader(spark)

    def __getattr__(self, name):
        return getattr(self._spark, name)


def test_a_session_with_the_delta_connector_reads_each_table_at_its_pinned_version(spark, tmp_path):
    from warehouse.spark import register
    from warehouse.spark.views import has_delta_connector
    from warehouse.store.storage import Store

    w = Warehouse(tmp_path / "wh")
    src = tmp_path / "src"
    shutil.copytree(REPO / "samples" / "afterimage", src)
    w.ingest(src)
    first = warehouse.history(w.root)[-1]["snapshot"]
    victim = sorted(src.glob("*.jsonl"))[0]
    victim.write_text(victim.read_text().splitlines()[0] + "\n")  # one line left: rows removed and rewritten
    w.ingest(src)
    assert not has_delta_connector(spark)
    with_connector = _WithDeltaConnector(spark)
    assert has_delta_connector(with_connector)
    for as_of in (first, None):
        pinned = Store(w.root).read_snapshot(as_of).tables
        register(spark, w.root, as_of=as_of)
        by_files = {t: _rows(spark.table(f"raw_{t}").toArrow()) for t in TABLES}
        register(with_connector, w.root, as_of=as_of)
        # path_fields is pinned too, but Spark derives it in its view from raw_sources
        assert sorted(with_connector.read.asked) == sorted(
            (str(w.root / t), v["version"]) for t, v in pinned.items() if t in TABLES)
        with_connector.read.asked.clear()
        for t in TABLES:
            got = spark.table(f"raw_{t}").toArrow()
            assert got.column_names == [c.name for c in TABLES[t].columns], t
            assert _rows(got) == by_files[t], t


# --- the engine -------------------------------------------------------------------------------


def _summary(s) -> dict:
    return {k: v for k, v in vars(s).items() if k not in ("run_id", "root", "seconds")}


def _tables(root) -> dict[str, list[dict]]:
    return {t: _rows(_duckdb(root, f"SELECT * FROM raw.{t}"), drop=RUN_COLUMNS) for t in TABLES}


def test_the_spark_engine_gives_the_local_engines_rows_counts_and_errors(spark, tmp_path):
    """The bundled samples ingested, re-ingested unchanged, changed and pruned, and stopped by --strict,
    in lockstep into two roots: the local engine's and Spark's tables are equal row for row (run ids
    and times aside), and so are the counts and the error."""
    src = tmp_path / "samples"
    shutil.copytree(REPO / "samples", src)
    local, on_spark = Warehouse(tmp_path / "local"), Warehouse(tmp_path / "spark")

    def both(**options):
        a = local.ingest(src, **options)
        b = on_spark.ingest(src, engine="spark", **options)
        assert _summary(b) == _summary(a)
        assert _tables(on_spark.root) == _tables(local.root)
        return a

    first = both()
    assert first.files_ingested > 50 and first.records_ingested > 200
    assert both().files_unchanged == first.files_ingested  # nothing read again

    conversations = sorted((src / "afterimage").glob("*.jsonl"))
    with open(conversations[0], "a") as f:
        f.write("{not json\n")  # a changed file, with a bad record
    next((src / "scale").rglob("*.json")).unlink()
    write_json(src / "experiments" / "demo" / "inference" / "instruct" / "responses" / "new" / "1.json",
               {"prompt": "p", "response": "r"})
    changed = both(prune=True)
    assert changed.records_quarantined == 1 and changed.files_removed == 1

    with open(conversations[1], "a") as f:
        f.write("{not json either\n")
    errors = []
    for w, engine in ((local, "local"), (on_spark, "spark")):
        kept = sorted(p.relative_to(w.root) for p in w.root.rglob("*") if p.name != ".lock")
        with pytest.raises(StrictModeError) as e:
            w.ingest(src, engine=engine, strict=True)
        errors.append(str(e.value))
        assert sorted(p.relative_to(w.root) for p in w.root.rglob("*") if p.name != ".lock") == kept
    assert errors[0] == errors[1] and "not json either" not in errors[0] and ".jsonl:" in errors[0]


def test_closing_the_spark_run_cancels_its_jobs(spark, tmp_path):
    """One batch finishes, another never would: closing the run cancels its jobs, and the task
    slot the stuck batch held is free again."""
    from warehouse.spark.engine import SparkEngine

    from ..run.test_engines import TOY, _specs

    ok = write_json(tmp_path / "src" / "a.json", {"prompt": "p"})
    hang = write_json(tmp_path / "src" / "b.hang.json", {"prompt": "p"})
    specs = _specs(tmp_path / "wh", [[hang], [ok], [ok], [ok]], TOY)
    outcome = {}

    def run():
        running = SparkEngine().run(iter(specs), lambda files, nbytes: None)
        outcome["first"] = next(running)
        running.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(300)  # a guard against a hang, not a measure
    assert not t.is_alive(), "closing the Spark run did not return"
    assert outcome["first"].batch_no != 1 and outcome["first"].records_ingested == 1
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 120  # the cancel is asynchronous: wait for Spark to say so, at most this
    while tracker.getActiveStageIds() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert tracker.getActiveStageIds() == []
    assert spark.sparkContext.parallelize(range(4), 2).count() == 4  # both slots work


def test_a_batch_exception_is_raised_on_the_driver_as_itself(spark, tmp_path):
    """An OSError in a task (here: the root is a file) is the local engine's one-line StorageError."""
    src = tmp_path / "src"
    write_json(src / "a.json", {"prompt": "p", "response": "r"})
    messages = []
    for engine in ("local", "spark"):
        root = tmp_path / engine
        root.mkdir()
        (root / "responses").write_text("not a directory: the responses table goes here")
        with pytest.raises(warehouse.StorageError) as e:
            warehouse.ingest([str(src)], root, engine=engine, source_format="trait_interp", progress=False)
        messages.append(str(e.value).replace(str(root), "ROOT"))
    assert messages[0] == messages[1]


def test_engine_options_are_checked_before_anything_is_made(spark, tmp_path):
    src = tmp_path / "src"
    write_json(src / "a.json", {"prompt": "p"})
    with pytest.raises(UsageError, match="--spark-master local\\[1\\]: only with --engine spark"):
        warehouse.ingest([str(src)], tmp_path / "wh", spark_master="local[1]")
    with pytest.raises(UsageError, match="--engine 'yarn': choose one of local, spark"):
        warehouse.ingest([str(src)], tmp_path / "wh", engine="yarn")
    with pytest.raises(UsageError, match="--spark-master local\\[1\\]: this process already has a Spark session on local\\[2\\]"):
        warehouse.ingest([str(src)], tmp_path / "wh", engine="spark", spark_master="local[1]", progress=False)
    assert not (tmp_path / "wh").exists()


# --- the command line on Spark: its own lines only, one line for every fault ---------------------
#
# Run as a user runs it: the venv's `warehouse` by its full path, from an environment without the venv
# (pipx, cron, a full path typed), whose `python3` is not the warehouse's (here: one without its
# site-packages). Each test below starts at most one JVM, in the command it runs; the checks that
# come before Spark starts start none.

VENV_WAREHOUSE = Path(sys.executable).with_name("warehouse")


def _spark_or_skip() -> None:
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed: pip install -e '.[test,spark]' to run the Spark tests")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime (java on PATH or JAVA_HOME): Spark needs Java 17 or later")


def _outside_the_venv(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a user who did not activate the venv: PATH without its bin folder, no
    VIRTUAL_ENV, and a `python3` first on PATH that cannot import the warehouse."""
    shims = tmp_path / "shims"
    shims.mkdir(exist_ok=True)
    python3 = shims / "python3"
    python3.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")  # no site-packages: no warehouse
    python3.chmod(0o755)
    venv_bin = str(VENV_WAREHOUSE.parent)
    path = [str(shims)] + [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYSPARK_PYTHON",
                                                            "PYSPARK_DRIVER_PYTHON", "WAREHOUSE_SPARK_LOG")}
    env["PATH"] = os.pathsep.join(path)
    env.update(extra)
    assert subprocess.run(["python3", "-c", "import warehouse"], env=env, capture_output=True, cwd=shims).returncode != 0
    return env


def _ingest_on_spark(tmp_path: Path, master: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    src = tmp_path / "src"
    if not src.exists():
        src.mkdir()
        shutil.copy(sorted((REPO / "samples" / "afterimage").glob("*.jsonl"))[0], src)
    return subprocess.run([str(VENV_WAREHOUSE), "ingest", str(src), "--root", str(tmp_path / "wh"),
                           "--engine", "spark", "--spark-master", master],
                          env=env, capture_output=True, text=True, cwd=tmp_path, timeout=900)


def test_a_venvs_warehouse_run_by_its_path_runs_local_spark_tasks_on_its_own_python_and_says_only_its_lines(tmp_path):
    """The tasks of a local master run the warehouse's interpreter, not the `python3` of PATH (every task
    failed with `No module named 'warehouse'`); stderr holds the run's summary and nothing of Spark's
    (JVM warnings, log4j lines, pyspark's pandas FutureWarning)."""
    _spark_or_skip()
    proc = _ingest_on_spark(tmp_path, "local[2]", _outside_the_venv(tmp_path))
    assert proc.returncode == 0, proc.stderr
    [summary] = proc.stderr.splitlines()
    assert summary.startswith("1 files: 1 ingested") and proc.stdout == ""
    assert Warehouse(tmp_path / "wh").one("SELECT count(*) FROM responses") > 0


def test_a_failing_spark_task_is_one_line_and_sparks_own_log_goes_where_asked(tmp_path):
    """A task that cannot run (here: its Python lacks the project, as on an executor where it is not
    installed) is the one line naming the cause, not after ~49 lines of Spark's log; WAREHOUSE_SPARK_LOG
    keeps that log. Nothing is left in the new root."""
    _spark_or_skip()
    log = tmp_path / "spark.log"
    env = _outside_the_venv(tmp_path, PYSPARK_PYTHON=str(tmp_path / "shims" / "python3"), WAREHOUSE_SPARK_LOG=str(log))
    proc = _ingest_on_spark(tmp_path, "local[2]", env)
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("error: Spark could not run batch 1 (1 files, the first ")
    assert "ModuleNotFoundError: No module named 'warehouse' (is the project installed on the executors" in proc.stderr
    assert "ERROR" in log.read_text()  # Spark's own account of it, for whoever asked
    assert not (tmp_path / "wh").exists()


@pytest.mark.parametrize("master", ["bogus", "local[abc]", "local[0]", "spark://head", "yarn-client"])
def test_a_master_spark_would_refuse_is_a_usage_error_before_spark_starts(tmp_path, master):
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed: pip install -e '.[test,spark]' to run the Spark tests")
    proc = _ingest_on_spark(tmp_path, master, dict(os.environ))
    assert (proc.returncode, proc.stderr) == (2, f"error: --spark-master {master}: not a Spark master; use local[N] "
                                                 "(N threads, or * for one per core), spark://HOST:PORT, yarn or "
                                                 "k8s://HOST:PORT (docs/spark.md)\n")
    assert not (tmp_path / "wh").exists()


def test_an_unreachable_master_is_one_line_without_waiting_for_spark(tmp_path):
    """Spark would try a master that refuses for a minute, then end in a traceback; the driver tries it
    first (at most MASTER_CONNECT_SECONDS), before starting a JVM."""
    _spark_or_skip()
    import socket

    from warehouse.spark.engine import MASTER_CONNECT_SECONDS

    with socket.socket() as s:  # a port nothing listens on any more: connections are refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _ingest_on_spark(tmp_path, f"spark://127.0.0.1:{port}", dict(os.environ))
    assert (proc.returncode, proc.stderr) == (
        1, f"error: --spark-master spark://127.0.0.1:{port}: cannot reach the Spark master within "
           f"{MASTER_CONNECT_SECONDS} s (127.0.0.1:{port}: Connection refused); is it running, at that address?\n")
    assert not (tmp_path / "wh").exists()


def test_no_java_or_a_java_too_old_is_one_line(tmp_path):
    """No Java at all is a usage error found before Spark starts; a Java that cannot run Spark (here one
    that answers as Java 11 does) ends Spark's start at once, said in one line with its reason."""
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed: pip install -e '.[test,spark]' to run the Spark tests")
    bare = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = _ingest_on_spark(tmp_path, "local[2]", dict(bare, PATH=str(empty)))
    assert (proc.returncode, proc.stderr) == (2, "error: --engine spark: no Java runtime (no java on PATH, no "
                                                 "JAVA_HOME); Spark needs Java 17 or later: install one (e.g. apt-get "
                                                 "install openjdk-17-jre-headless) (docs/spark.md)\n")
    proc = _ingest_on_spark(tmp_path, "local[2]", dict(bare, JAVA_HOME=str(empty)))
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: --engine spark: JAVA_HOME={empty} has no bin/java")
    old = tmp_path / "java11"
    (old / "bin").mkdir(parents=True)
    (old / "bin" / "java").write_text(
        "#!/bin/sh\necho 'Error: LinkageError occurred while loading main class org.apache.spark.launcher.Main' >&2\n"
        "printf '\\tjava.lang.UnsupportedClassVersionError: org/apache/spark/launcher/Main has been compiled by a "
        "more recent version of the Java Runtime (class file version 61.0), this version of the Java Runtime only "
        "recognizes class file versions up to 55.0\\n' >&2\nexit 1\n")
    (old / "bin" / "java").chmod(0o755)
    proc = _ingest_on_spark(tmp_path, "local[2]", dict(bare, JAVA_HOME=str(old)))
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("error: Spark did not start on local[2]: java.lang.UnsupportedClassVersionError: ")
    assert "(Spark 4 needs Java 17 or later; WAREHOUSE_SPARK_LOG=FILE keeps Spark's own output" in proc.stderr
    assert not (tmp_path / "wh").exists()


@pytest.mark.xdist_group("spark")
def test_the_spark_tests_share_one_worker(request):
    """The Spark tests run on one worker, with one session (tests/conftest.py marks them): pytest-xdist groups by a
    suffix it writes into each test's id, which pytest 9.2 no longer reads (pytest-dev/pytest-xdist#1386); then
    every worker starts a JVM of its own and nothing else says so."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run by pytest-xdist with --dist loadgroup (README's test command does): no groups to check")
    assert request.node.nodeid.endswith("@spark"), (
        "pytest-xdist's --dist loadgroup did not group this test: this pytest and pytest-xdist do not work "
        "together; install the versions pyproject.toml's test extra asks for")
