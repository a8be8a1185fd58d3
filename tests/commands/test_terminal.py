"""The `warehouse` command in a real process: Ctrl-C (SIGINT to its process group, as a terminal
sends it), start-up imports, --version, the query from a file or stdin, URL roots.

Each interrupt is sent once the process is provably at the point under test (a file it
writes there appears), so no test races the machine's speed; the time bounds are generous.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
import types
from pathlib import Path

import pytest

import warehouse

from ..conftest import FIXTURES, REPO, read_terminal, terminal

#: a query that runs for minutes unless stopped (10^12 rows of a cross join)
ENDLESS = "SELECT sum(a.range * b.range) FROM range(1000000) AS a, range(1000000) AS b"
#: the same over the warehouse's views only, as --where allows (the fixtures' 20 responses, 10 times: 10^13 rows)
ENDLESS_OVER_VIEWS = ("SELECT sum(length(a.response_id) + length(j.response_id)) FROM "
                      + ", ".join(f"responses AS {t}" for t in "abcdefghij"))
#: generous: "within about a second" on an idle machine, far more under load
STOP_S = 60


def warehouse_exe() -> str:
    exe = shutil.which("warehouse")
    assert exe, "the `warehouse` console script is not on PATH: install with pip install -e ."
    return exe


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    r = tmp_path_factory.mktemp("terminal") / "wh"
    subprocess.run([warehouse_exe(), "ingest", str(FIXTURES / "trait_interp"), "--root", str(r), "--quiet"], check=True)
    return r


def start(args: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen([warehouse_exe(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kw)


def wait_for(predicate, what: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + STOP_S
    while not predicate():
        if proc.poll() is not None:
            pytest.fail(f"the process ended before {what}: {proc.returncode}\n{proc.stderr.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no {what} after {STOP_S}s")
        time.sleep(0.05)


def interrupt(proc: subprocess.Popen) -> tuple[int, str, str, float]:
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"still running {STOP_S}s after Ctrl-C")
    return proc.returncode, out, err, time.monotonic() - t0


def test_ctrl_c_stops_a_long_sql_query(root, tmp_path):
    started = tmp_path / "started.csv"  # written by the first statement: the long one runs next
    proc = start(["sql", f"COPY (SELECT 1) TO '{started}'; {ENDLESS}", "--root", str(root)])
    wait_for(started.exists, "query start", proc)
    code, out, err, seconds = interrupt(proc)
    assert (code, out) == (130, "")
    assert err == "interrupted: the query was stopped; the warehouse is unchanged\n"
    print(f"stopped {seconds:.2f}s after SIGINT")


def test_ctrl_c_stops_an_export_and_leaves_nothing_behind(root, tmp_path):
    out_dir = tmp_path / "exports"
    out_dir.mkdir()
    before = sorted(p.name for p in (root / ".warehouse" / "snapshots").iterdir())
    # a --where that takes minutes: the export is interrupted while DuckDB selects
    proc = start(["export", "--root", str(root), "--where", f"({ENDLESS_OVER_VIEWS}) > 0", "--format", "jsonl",
                  "--out", str(out_dir / "o.jsonl")])
    wait_for(lambda: any(out_dir.iterdir()), "export start (its spill folder)", proc)
    code, out, err, seconds = interrupt(proc)
    assert (code, out) == (130, "")
    assert err == f"interrupted: the export was stopped and its partial output removed; {out_dir / 'o.jsonl'} was not written\n"
    assert list(out_dir.iterdir()) == []  # no partial output, no spill folder
    assert sorted(p.name for p in (root / ".warehouse" / "snapshots").iterdir()) == before
    print(f"stopped {seconds:.2f}s after SIGINT")


SITECUSTOMIZE = """
import os, signal, sys

class InterruptAtImport:
    # Sends SIGINT to this process when a given module is first imported: a Ctrl-C at start-up, on cue.
    def find_spec(self, name, path=None, target=None):
        if name == os.environ.get("INTERRUPT_AT_IMPORT"):
            del os.environ["INTERRUPT_AT_IMPORT"]
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, InterruptAtImport())
"""


@pytest.mark.parametrize("module", ["argparse", "duckdb", "pyarrow"])
def test_ctrl_c_during_start_up_imports_prints_one_line_not_a_traceback(root, tmp_path, module):
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               INTERRUPT_AT_IMPORT=module)
    proc = subprocess.run([warehouse_exe(), "sql", "SELECT 1", "--root", str(root)], capture_output=True, text=True,
                          env=env, timeout=STOP_S)
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("interrupted")
    assert proc.stdout == ""


#: a `warehouse` process with a Ctrl-C at one exact point of its end: after the code of a POINTS entry runs
AT_THE_END = """
import atexit, os, signal, sys
import warehouse.cli, warehouse.run.maintenance, warehouse.run.runner, warehouse.store.storage, warehouse.run.summary

def ctrl_c(): os.kill(os.getpid(), signal.SIGINT)

def after(owner, name):
    real = getattr(owner, name)
    def wrapped(*a, **k):
        out = real(*a, **k)
        ctrl_c()
        return out
    setattr(owner, name, wrapped)

{point}
sys.argv = ["warehouse", *sys.argv[1:]]
warehouse.cli.script()
"""
POINTS = {
    "as the snapshot is written": "after(warehouse.store.storage.Store, 'write_snapshot')",
    "as the run returns": "after(warehouse.run.runner, 'ingest')",
    "as the summary is printed": "after(warehouse.run.summary.IngestSummary, 'text')",
    "in an exit handler": "atexit.register(ctrl_c)",
}
COMMITTED = "interrupted after the run was committed: the warehouse holds its rows"


@pytest.mark.parametrize("point", POINTS.values(), ids=POINTS.keys())
def test_ctrl_c_after_the_commit_says_the_run_was_committed(tmp_path, point):
    """The commit is the point of no return: a Ctrl-C from there to the process's end never passes in
    silence (exit 0, no word of it) nor says the run was undone; the warehouse holds the new snapshot."""
    src, root = tmp_path / "src", tmp_path / "wh"
    shutil.copytree(FIXTURES / "trait_interp", src)
    proc = subprocess.run([sys.executable, "-c", AT_THE_END.format(point=point), "ingest", str(src), "--root", str(root)],
                          capture_output=True, text=True, timeout=STOP_S)
    lines = proc.stderr.splitlines()
    assert (proc.returncode, lines[-1]) == (130, COMMITTED), proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert lines[0].startswith(f"{len(list(src.rglob('*.json')))} files: ")  # the run's summary, before it
    assert [h["snapshot"] for h in warehouse.history(root)] == [1]


def test_ctrl_c_after_a_command_finished_says_its_work_is_complete(root):
    proc = subprocess.run([sys.executable, "-c", AT_THE_END.format(point=POINTS["in an exit handler"]),
                           "sql", "SELECT 1 AS x", "--root", str(root), "--format", "csv"],
                          capture_output=True, text=True, timeout=STOP_S)
    assert (proc.returncode, proc.stdout) == (130, '"x"\n1\n')
    assert proc.stderr == "interrupted after the command had finished: its output is complete; the warehouse is unchanged\n"


def test_help_and_version_do_not_import_duckdb_arrow_or_polars():
    heavy = ("duckdb", "pyarrow", "polars", "numpy", "pandas", "orjson", "warehouse.formats", "tqdm")
    # export --help names the formats that write their own shape back: it loads the formats (not their
    # exporters), and the modules they import; never DuckDB, polars or tqdm
    formats_import = ("pyarrow", "numpy", "orjson", "warehouse.formats")
    for args in (["--help"], ["--version"], ["sql", "--help"], ["export", "--help"]):
        watched = tuple(m for m in heavy if args != ["export", "--help"] or m not in formats_import)
        code = (
            "import sys\nfrom warehouse.cli import main\ntry:\n    main(%r)\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in %r if m in sys.modules), file=sys.stderr)" % (args, watched)
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert proc.stderr.strip() == "[]", (args, proc.stderr)


def test_version_is_the_package_version():
    out = subprocess.run([warehouse_exe(), "--version"], capture_output=True, text=True, check=True).stdout
    assert out == f"warehouse {warehouse.__version__}\n"
    assert "version" in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dynamic"]  # one source


def test_sql_reads_the_query_from_a_file_or_stdin(root, tmp_path):
    query = tmp_path / "q.sql"
    query.write_text("-- how many\nSELECT count(*) AS n\nFROM responses;\n")
    for args, stdin in ((["-f", str(query)], None), (["-"], query.read_text()), (["-f", "-"], query.read_text())):
        proc = subprocess.run([warehouse_exe(), "sql", *args, "--root", str(root), "--format", "csv"],
                              input=stdin, capture_output=True, text=True)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, '"n"\n17\n', ""), args
    proc = subprocess.run([warehouse_exe(), "sql", "-f", str(tmp_path / "none.sql"), "--root", str(root)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr == f"error: -f {tmp_path / 'none.sql'}: No such file or directory\n"


#: a root on a scheme no command supports; export writes --out locally
ROOT_SCHEME = "a warehouse root may be a local directory or an s3:// URL"
LOCAL_OUT = "--out s3://bucket/o.jsonl: a URL; --out is a local path"


@pytest.mark.parametrize("command, message", [
    (["ingest", str(FIXTURES / "trait_interp"), "--root", "gs://bucket/wh"], ROOT_SCHEME),
    (["sql", "SELECT 1", "--root", "az://bucket/wh"], ROOT_SCHEME),
    (["stats", "--root", "gs://bucket/wh"], ROOT_SCHEME),
    (["history", "--root", "gs://bucket/wh"], ROOT_SCHEME),
    (["compact", "--root", "az://bucket/wh"], ROOT_SCHEME),
    (["tokenize", "--root", "gs://bucket/wh", "--tokenizer", "."], ROOT_SCHEME),
    (["export", "--root", "https://example.org/wh", "--format", "jsonl", "--out", "o.jsonl"], ROOT_SCHEME),
    (["export", "--root", "wh", "--format", "jsonl", "--out", "s3://bucket/o.jsonl"], LOCAL_OUT),
])
def test_a_url_root_is_refused_and_nothing_is_created(tmp_path, command, message):
    proc = subprocess.run([warehouse_exe(), *command], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert list(tmp_path.iterdir()) == []  # no ./s3:/bucket/wh


# --- progress bars ----------------------------------------------------------------------------

#: runs the CLI with bars shown from the first moment (warehouse.progress.DELAY = 0), so a quick run shows one
SHOW_AT_ONCE = ("import sys, warehouse.progress as p; p.DELAY = 0; from warehouse.cli import main; "
                "sys.exit(main(sys.argv[1:]))")
#: tqdm's elapsed<remaining: the time left
ETA = re.compile(r"\[\d\d:\d\d<\d\d:\d\d")


def run_in_terminal(args: list[str]) -> tuple[int, str, str]:
    """The CLI with stderr on a pseudo-terminal (80 columns): what a terminal shows, and stdout."""
    master, slave = terminal(80)
    proc = subprocess.Popen([sys.executable, "-c", SHOW_AT_ONCE, *args], stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    shown = read_terminal(master)
    with proc.stdout:
        out = proc.stdout.read().decode()
    return proc.wait(timeout=STOP_S), shown.decode(), out


def test_ingest_shows_percentage_and_time_left_in_a_terminal(tmp_path):
    code, shown, out = run_in_terminal(["ingest", str(FIXTURES / "trait_interp"), "--root", str(tmp_path / "wh")])
    assert (code, out) == (0, "")
    assert re.search(r"ingest: 100%\|.*\| [\d.]+k/[\d.]+k .*20/20 files\]", shown), shown
    assert ETA.search(shown), shown
    assert shown.rstrip().splitlines()[-1].startswith("20 files: 20 ingested")  # the summary after the bar


def test_the_bar_of_a_run_whose_walk_goes_on_beside_its_batches_ends_at_every_file_found(tmp_path):
    """A run for a pool starts its batches before its walk ends (run/walk_ahead.py): its bar's totals grow
    as the walk finds files, and end at all of them, not at what was found when the first batch started."""
    master, slave = terminal(80)
    streams = ("import warehouse.run.batches as b; b.INLINE_MAX_FILES = 4; b.MIN_BATCH_FILES = 3; "
               "b.MIN_BATCH_BYTES = 1 << 40; " + SHOW_AT_ONCE)
    proc = subprocess.Popen([sys.executable, "-c", streams, "ingest", str(FIXTURES / "trait_interp"), "--root",
                             str(tmp_path / "wh"), "--jobs", "2"], stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    shown = read_terminal(master).decode()
    with proc.stdout:
        assert proc.stdout.read() == b""
    assert proc.wait(timeout=STOP_S) == 0
    assert re.search(r"ingest: 100%\|.*\| [\d.]+k/[\d.]+k .*20/20 files\]", shown), shown
    assert shown.rstrip().splitlines()[-1].startswith("20 files: 20 ingested")
    assert len(list((tmp_path / "wh" / "responses").glob("*.parquet"))) > 1  # (batches cut while it walked)


def test_export_shows_percentage_and_time_left_in_a_terminal(root, tmp_path):
    code, shown, out = run_in_terminal(["export", "--root", str(root), "--format", "jsonl", "--out", str(tmp_path / "o.jsonl")])
    assert (code, out) == (0, "")
    assert re.search(r"export jsonl: 100%\|.*\| 17/17 ", shown) and ETA.search(shown), shown


def test_no_bar_with_quiet_or_when_stderr_is_not_a_terminal(root, tmp_path):
    code, shown, _ = run_in_terminal(["ingest", str(FIXTURES / "trait_interp"), "--root", str(tmp_path / "a"), "--quiet"])
    assert (code, shown) == (0, "")
    code, shown, _ = run_in_terminal(["export", "--root", str(root), "--format", "csv", "--out", str(tmp_path / "o.csv"), "--quiet"])
    assert (code, shown) == (0, "")
    piped = subprocess.run([sys.executable, "-c", SHOW_AT_ONCE, "ingest", str(FIXTURES / "trait_interp"),
                            "--root", str(tmp_path / "b")], capture_output=True, text=True)
    assert piped.returncode == 0 and "\r" not in piped.stderr and "%|" not in piped.stderr  # a log gets the summary only
    assert piped.stderr.startswith("20 files: 20 ingested")


def test_a_notebook_gets_tqdm_autos_bar(monkeypatch):
    from tqdm.auto import tqdm

    from warehouse import progress

    stream = io.StringIO()  # a kernel's stderr is no terminal
    assert progress.bar(10, desc="x", unit="B", stream=stream) is None
    monkeypatch.setitem(sys.modules, "ipykernel", sys)  # imported by some library: not a kernel yet
    assert progress.bar(10, desc="x", unit="B", stream=stream) is None
    kernel_shell = types.SimpleNamespace(config={"IPKernelApp": {}})  # what IPython's get_ipython() is in a kernel
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: kernel_shell))
    bar = progress.bar(10, desc="x", unit="B", stream=stream)
    assert isinstance(bar, tqdm)
    bar.close()
    assert progress.bar(10, desc="x", unit="B", stream=stream, enabled=False) is None


def test_while_duckdb_prepares_an_export_the_bar_shows_its_progress_through_the_statement():
    from warehouse.progress import QueryProgress

    class Con:
        def execute(self, sql):
            return self

        def fetchall(self):
            return []

        def query_progress(self):
            return 45.4

    class Bar:
        postfix = None

        def set_postfix_str(self, text, refresh=True):
            self.postfix = text

    bar = Bar()
    watcher = QueryProgress(Con(), bar)
    watcher.stop()
    watcher.poll()
    assert bar.postfix == "preparing 45%"
    watcher.active = False  # the export writes: its own count takes over
    bar.postfix = None
    watcher.poll()
    assert bar.postfix is None
