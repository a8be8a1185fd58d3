"""Shared test helpers: a warehouse in a temporary root, golden files, the real-data checkout."""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path
from typing import Any

import pytest

import warehouse

# Tests check Ctrl-C by sending SIGINT, to this process or to a `warehouse` they start. A shell
# without job control (a script, CI, `cmd &`) starts a background command with SIGINT ignored, and
# Python and every process it starts keep it ignored: those tests would wait for ever for an
# interrupt that never comes. Put back the handler an interactive run has; the processes started
# from here then get SIGINT's default disposition, as a user's would.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The read schema's cache (warehouse/formatkit/read_schema.py) in a folder of the test run's own, shared by
# every process it starts (the environment is inherited): the run starts from no cache, and leaves the
# user's cache folder alone.
if "WAREHOUSE_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["WAREHOUSE_CACHE_DIR"] = tempfile.mkdtemp(prefix="warehouse-test-cache-")
    atexit.register(shutil.rmtree, os.environ["WAREHOUSE_CACHE_DIR"], ignore_errors=True)

def terminal(columns: int = 80) -> tuple[int, int]:
    """A pseudo-terminal of ``columns`` columns: (master, slave) file descriptors."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    return master, slave


def read_terminal(master: int) -> bytes:
    """All a process wrote to the pseudo-terminal ``master`` until it closed it; ``master`` is closed."""
    shown = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not data:
            break
        shown += data
    os.close(master)
    return shown


REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
GOLDEN = REPO / "tests" / "golden"
REALDATA = REPO.parent / "shared" / "realdata"

#: columns that depend on the machine: ids hash absolute paths, mtimes come from the checkout
VOLATILE_COLUMNS = {"response_id", "annotation_id", "record_id", "mtime_ns", "ingest_run", "ingested_at"}


@pytest.fixture(scope="session", autouse=True)
def empty_hugging_face_cache(tmp_path_factory):
    """No test sees this machine's Hugging Face cache, nor the network: a response's model whose tokenizer
    happened to be cached here would tokenize it (docs/annotations.md#token-ranges). Tests that want a cache
    point HF_HOME at one of their own."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf_home")))
        for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
            mp.delenv(name, raising=False)
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield


@pytest.hookimpl(tryfirst=True)  # the marks are on before pytest-xdist reads them (its hook runs first else)
def pytest_collection_modifyitems(items):
    """Tests that share an expensive per-worker fixture run on one worker (pytest-xdist ``--dist
    loadgroup``): the session's Spark (one JVM, started once, not one a worker), and the real tokenizers'
    converted cache, built once. ``tests/spark/test_spark.py`` fails when the groups do not hold."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))
        elif "hub" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("hub-tokenizers"))


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: two workers a core. Most tests wait on processes they start (a command, an S3 server, a
    JVM) more than they compute, and the suite is held to pass beside a busy machine, as this makes it."""
    return min(2 * (os.cpu_count() or 1), 16)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/* from the current output (read the diff!)")
    parser.addoption("--update-screenshots", action="store_true",
                     help="rewrite the viewer's screenshots under docs/viewer/ (tests/viewer/test_viewer_browser.py)")


class Warehouse:
    """A warehouse under a temporary root, with one-line helpers for tests."""

    def __init__(self, root: Path):
        self.root = root

    def ingest(self, *paths, **options):
        options.setdefault("progress", False)
        options.setdefault("jobs", 1)
        return warehouse.ingest([str(p) for p in paths], self.root, **options)

    def rows(self, sql: str, params: list | None = None) -> list[dict[str, Any]]:
        con = warehouse.connect(self.root)
        try:
            rel = con.execute(sql, params or [])
            names = [d[0] for d in rel.description]
            return [dict(zip(names, r)) for r in rel.fetchall()]
        finally:
            con.close()

    def one(self, sql: str, params: list | None = None) -> Any:
        con = warehouse.connect(self.root)
        try:
            return con.execute(sql, params or []).fetchone()[0]
        finally:
            con.close()


@pytest.fixture
def wh(tmp_path) -> Warehouse:
    return Warehouse(tmp_path / "wh")


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """A real S3 API server on localhost (moto's server mode, tests/s3server.py): one for all of a process's tests."""
    from .s3server import S3Server  # needs the extra s3 (moto[server]), which README's test command installs

    server = S3Server.start(str(tmp_path_factory.mktemp("moto") / "server.log"))
    yield server
    server.stop()


@pytest.fixture
def bucket(s3, monkeypatch):
    """A new bucket, and the environment holding only the standard variables for the server."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    return s3.new_bucket()


@pytest.fixture(scope="session")
def samples_wh(tmp_path_factory) -> Warehouse:
    """The bundled samples (every format, every child table), ingested once: tests only read it."""
    w = Warehouse(tmp_path_factory.mktemp("samples") / "wh")
    w.ingest(REPO / "samples")
    return w


#: the fixture folders the viewer's tests show, one warehouse each (every format's own fixtures)
VIEWER_FIXTURES = ("afterimage", "dataloop", "scale", "trait_interp", "trait_interp_annotations")


@pytest.fixture(scope="session")
def viewer_warehouses(tmp_path_factory, samples_wh) -> dict[str, Warehouse]:
    """The warehouses the viewer's tests look at: the samples, each format's fixtures, and one of hostile
    text (tests/viewer_helpers.py); made once, only read."""
    from .viewer_helpers import hostile_tree

    out = {"samples": samples_wh}
    for name in VIEWER_FIXTURES:
        out[name] = Warehouse(tmp_path_factory.mktemp(f"view-{name}") / "wh")
        out[name].ingest(FIXTURES / name)
    base = tmp_path_factory.mktemp("view-hostile")
    out["hostile"] = Warehouse(base / "wh")
    out["hostile"].ingest(hostile_tree(base / "src"))
    return out


def ingested_cleanly(tmp_path_factory, name: str, source: Path) -> Warehouse:
    """A warehouse holding ``source``, every record of which must ingest (the fixtures have no bad ones)."""
    w = Warehouse(tmp_path_factory.mktemp(name) / "wh")
    summary = w.ingest(source)
    assert summary.records_quarantined == 0, w.rows("SELECT * FROM quarantine")
    return w


@pytest.fixture(scope="session")
def spark():
    """One local Spark (``local[2]``) for the whole test session: starting one costs ~10-30 s.
    Skipped, saying why, only where pyspark or Java is absent."""
    import importlib.util
    import shutil
    import sys

    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed: pip install -e '.[test,spark]' to run the Spark tests")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime (java on PATH or JAVA_HOME): Spark needs Java 17 or later")
    from pyspark.sql import SparkSession

    # Tasks run this interpreter, where the project is (not the `python3` of PATH): PySpark takes it from
    # PYSPARK_PYTHON as the context starts, not from spark.pyspark.python.
    before = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]").appName("warehouse tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.executorEnv.PYTHONPATH", str(REPO))  # tasks see the tests' own toy formats
        .getOrCreate()
    )
    if before is None:
        del os.environ["PYSPARK_PYTHON"]
    else:
        os.environ["PYSPARK_PYTHON"] = before
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def realdata() -> Path:
    if not REALDATA.is_dir():
        pytest.skip(f"{REALDATA} is absent: the real-file tests read ../shared/realdata beside the repository")
    return REALDATA


def _normal(v: Any, base: str) -> Any:
    if isinstance(v, str):
        return v.replace(base, "$FIXTURES")
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else v
    if isinstance(v, list):
        return [_normal(x, base) for x in v]
    if isinstance(v, dict):
        return {k: _normal(x, base) for k, x in v.items()}
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


def normalize_rows(rows: list[dict], base: Path = FIXTURES) -> list[dict]:
    out = []
    for row in rows:
        r = {}
        for k, v in row.items():
            if k in VOLATILE_COLUMNS:
                continue
            if isinstance(v, str) and k in ("extra", "value", "rollout_source", "params", "generation_params", "tool_calls", "content_parts") and v[:1] in "{[":
                v = json.loads(v)
            r[k] = _normal(v, str(base))
        out.append(r)
    return out


@pytest.fixture
def golden(request):
    """``golden(name, rows)``: compare rows to tests/golden/<name>.jsonl (rewrite with --update-golden)."""
    update = request.config.getoption("--update-golden")

    def check(name: str, rows: list[dict], base: Path = FIXTURES) -> None:
        path = GOLDEN / f"{name}.jsonl"
        text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in normalize_rows(rows, base))
        if update or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if not update:
                pytest.fail(f"{path} did not exist and was written; read it, then run again")
            return
        expected = path.read_text()
        if text != expected:
            got = text.splitlines()
            want = expected.splitlines()
            diff = [f"- {w}\n+ {g}" for w, g in zip(want, got) if w != g][:5]
            pytest.fail(
                f"rows differ from {path.relative_to(REPO)} ({len(want)} expected, {len(got)} got); "
                "if the change is intended, run pytest --update-golden and read the diff\n" + "\n".join(diff)
            )

    return check


def activation_tree(tmp_path: Path) -> Path:
    """Activation tensors in trait-interp's layouts, under ``tmp_path/experiments`` (the activations format reads
    their paths, never their bytes). Made once: asked again, the same files, unchanged."""
    for rel in ("experiments/e/inference/base/raw/residual/harmful/1.pt",
                "experiments/e/extraction/cat/trait/base/activations/response_all/residual/train_all_layers.pt"):
        if not (tmp_path / rel).exists():
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_bytes(b"\x80\x02")
    return tmp_path / "experiments"


def export_out(path: Path, fmt: str) -> Path:
    """``path``, with the extension an export as ``fmt`` must end in to be read back (afterimage: .jsonl)."""
    from warehouse.exports import formats

    suffixes = formats()[fmt].suffixes
    return path if not suffixes or path.name.lower().endswith(suffixes) else path.with_name(path.name + suffixes[0])


def write_json(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return path


def write_text(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def batch_rows(paths: list[Path], root: Path, fast_paths: bool, tables) -> tuple[dict, object]:
    """One worker batch of ``paths`` into ``root``, in this process: each of ``tables``' rows as sorted
    canonical JSON text (so -0.0 differs from 0.0), the source rows without their run columns, and the
    batch result. The fast-path tests compare this with fast paths on and off."""
    import pyarrow.parquet as pq

    from warehouse.formatkit.registry import Registry
    from warehouse.run.worker import BatchIngest, BatchSpec, WorkItem
    from warehouse.store.snapshots import new_run_id

    spec = BatchSpec(run_id=new_run_id(), batch_no=1, root=str(root), items=[WorkItem(str(p)) for p in paths],
                     registry=Registry.installed(), fast_paths=fast_paths)
    result = BatchIngest(spec).run()
    out = {}
    for table in tables:
        part = result.parts.get(table)
        rows = pq.read_table(root / part.path).to_pylist() if part else []
        out[table] = sorted(json.dumps(r, sort_keys=True, default=str) for r in normalize_rows(rows, paths[0].parent))
    out["sources"] = sorted(json.dumps({k: v for k, v in s.items() if k not in ("ingest_run", "ingested_at")},
                                       sort_keys=True, default=str) for s in result.sources)
    return out, result
