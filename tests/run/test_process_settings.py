"""The ingest's own processes keep freed memory and run no idle BLAS threads (issue 20, part F).

Each test runs in a fresh interpreter: the allocators and numpy read their settings when a
process starts or loads them, and a forkserver, once started, serves the rest of a process's
life. What is checked is what the processes see and do (their environment, their threads, the
page faults of memory used twice), never a time.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from warehouse.run.process_settings import ENV, GC_THRESHOLDS

from ..conftest import FIXTURES

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc, /proc: Linux only")

#: what a process reports: its settings, its threads beside numpy's, and the page faults of
#: 64 MB of Python memory used a second time (a fresh mmap, zeroed by the kernel, if freed memory
#: went back to it; none if it stayed in the heap)
REPORT = """
import gc, json, os, resource, sys
def threads():
    return len(os.listdir("/proc/self/task"))
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def reused(n=64 << 20):
    b = bytearray(n); del b
    f = faults(); b = bytearray(n); b[::4096] = bytes(len(range(0, n, 4096))); return faults() - f
before = threads()
import numpy  # OpenBLAS starts its threads here
report = {"env": {k: os.environ.get(k) for k in KEYS}, "blas_threads": threads() - before, "blas": eval(BLAS),
          "second_use_faults": reused(), "pages": (64 << 20) // 4096, "gc": list(gc.get_threshold())}
print(json.dumps(report))
"""


#: numpy's OpenBLAS's own thread count (an expression: ``eval`` runs it in a pool's worker too),
#: None where numpy has no OpenBLAS loaded
BLAS = ("next((getattr(lib, f)() for path in sorted({l.split()[-1] for l in open('/proc/self/maps') if 'openblas' in l})"
        " for lib in [__import__('ctypes').CDLL(path)] for f in ('openblas_get_num_threads',"
        " 'openblas_get_num_threads64_', 'scipy_openblas_get_num_threads64_', 'scipy_openblas_get_num_threads')"
        " if hasattr(lib, f)), None)")


def _run(code: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ENV}  # the test's own settings must not leak in
    proc = subprocess.run([sys.executable, "-c", f"KEYS = {sorted(ENV)!r}\nBLAS = {BLAS!r}\n{code}"], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_ingest_command_keeps_freed_memory_and_starts_no_blas_threads():
    """``warehouse ingest`` sets its process's allocators before pyarrow and numpy load (they read
    their settings then): memory freed is used again without the kernel faulting it in anew, and
    numpy starts no thread beside the caller's."""
    code = ("from warehouse import cli\n"
            "import contextlib, io\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            "        cli.main(['ingest', '--help'])\n"
            "    except SystemExit:\n"
            "        pass\n" + REPORT)
    got = _run(code)
    assert got["env"] == ENV
    assert got["blas_threads"] == 0 and got["blas"] in (1, None)
    assert got["second_use_faults"] < got["pages"] // 10, got  # the heap kept it
    assert got["gc"] == list(GC_THRESHOLDS)


def test_importing_the_library_changes_nothing_in_the_users_process():
    """A notebook that imports ``warehouse`` (and runs a query) keeps its allocators as they were."""
    got = _run("import warehouse, warehouse.run.process_settings, warehouse.run.pool, warehouse.run.runner\n" + REPORT)
    untouched = _run(REPORT)
    assert got["env"] == untouched["env"] == dict.fromkeys(ENV)
    assert (got["gc"], got["blas"]) == (untouched["gc"], untouched["blas"])


def test_the_pools_forkserver_and_workers_get_the_settings_and_the_callers_environment_stays():
    """The forkserver is started with the settings in its environment (workers are forked from it),
    also when a library user's process starts it; that process's environment is left as it was."""
    code = """
import json, os
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
from warehouse.run.pool import start_forkserver
from warehouse.formatkit.registry import Registry
start_forkserver(Registry.installed())
caller = {k: os.environ.get(k) for k in KEYS}
with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver")) as pool:
    worker = {k: pool.submit(os.getenv, k).result() for k in KEYS}
    # numpy came with the forkserver's preload (the worker's modules import it)
    blas = pool.submit(eval, BLAS).result()
print(json.dumps({"caller": caller, "worker": worker, "blas": blas}))
"""
    got = _run(code)
    assert got["caller"] == dict.fromkeys(ENV)
    assert got["worker"] == ENV
    assert got["blas"] in (1, None)  # (None: this numpy has no OpenBLAS, so no threads of it to check)


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None,
                    reason="pandas is not installed here: pyarrow cannot import it, there is nothing to check")
def test_pyarrow_imports_no_pandas_in_the_ingests_processes_and_pandas_still_works(tmp_path):
    """pyarrow imports pandas (when installed, 0.15-0.22 CPU-s) in a process's first ``pa.array``,
    to tell pandas objects apart. The ingest command's process (mapping every fixture format's
    batch itself with ``--jobs 1``), the forkserver and its workers settle first that there is
    none to look out for; a conversion to pandas still imports it and works."""
    sources = [str(FIXTURES / name) for name in sorted(os.listdir(FIXTURES))]
    code = f"""
import json, sys
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
from warehouse.cli import main
assert main(['ingest', *{sources!r}, '--root', {str(tmp_path / "wh")!r}, '--jobs', '1', '--quiet']) == 0
command = 'pandas' in sys.modules
from warehouse.run.pool import start_forkserver
from warehouse.formatkit.registry import Registry
start_forkserver(Registry.installed())
import pyarrow as pa
with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver")) as pool:
    worker = pool.submit(eval, "(__import__('pyarrow').array(['a']), 'pandas' in __import__('sys').modules)[1]").result()
frame = type(pa.table({{"a": [1]}}).to_pandas()).__name__
print(json.dumps({{"command": command, "worker": worker, "to_pandas": frame}}))
"""
    got = _run(code)
    assert got == {"command": False, "worker": False, "to_pandas": "DataFrame"}


def test_the_forkserver_start_does_nothing_in_a_process_that_merely_imports_it():
    """Only the forkserver ends at once with status 0: imported anywhere else (a tool that imports
    every module), the process keeps its own exit status, and pyarrow its pandas lookout."""
    code = ("import sys, warehouse.run.forkserver_start, pyarrow as pa\n"
            "pa.array(['a'])\n"
            "sys.exit(3 if ('pandas' in sys.modules) == IMPORTABLE else 4)\n")
    importable = importlib.util.find_spec("pandas") is not None
    proc = subprocess.run([sys.executable, "-c", f"IMPORTABLE = {importable}\n{code}"], capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr
