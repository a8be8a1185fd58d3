"""Spark as an ingest engine: each batch of the run is a Spark job of one task.

The driver (the ``warehouse ingest`` process) walks and plans as with the local engines
and commits once at the end; only ``worker.BatchIngest`` runs in the Spark tasks. A task
gets its ``BatchSpec`` (it pickles: the files, the run's settings and the formats by
name), reads the files, writes the batch's Parquet files under the root with the
project's own writer, and sends the ``BatchResult`` back. So the executors need the
project and its formats installed and the root and the sources at the same paths as the
driver sees them (a shared file system; object storage with issue 18), and nothing of
Spark's own storage layer: no Delta or S3 connector JARs.

One job per batch, several jobs at once (submitted from a few threads of the driver,
as Spark's scheduler expects concurrent jobs to be): results come back as batches
finish, so ``--strict`` stops at the first bad record and progress moves per batch.
All of a run's jobs share one job group; closing the run's iterator (Ctrl-C, an
error, ``--strict``) cancels the group, and Spark kills the tasks' Python workers.
The files a cancelled task was writing belong to the run and are deleted with it
(``Store.discard_run``), or by the next run if a task outlives the cancel.

An exception inside a batch is sent back and raised again on the driver as itself
(an ``OSError`` becomes the same one-line ``StorageError`` as with the process pool);
a task that Spark itself cannot run (the executor lost, the project missing on it)
becomes one ``WarehouseError`` naming the batch and the cause.
"""

from __future__ import annotations

import gc
import os
import re
import secrets
import sys
import warnings
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager

from warehouse.errors import UsageError, WarehouseError
from warehouse.run.worker import BatchIngest, BatchResult, BatchSpec, ProgressFn

#: batches waiting or running per task slot: enough to keep every slot busy, few enough that a
#: large file's pieces are scanned while the first ones are ingested
JOBS_PER_SLOT = 2


#: how long the driver tries to reach a ``spark://`` master before starting Spark, which would try
#: for a minute and then fail with a traceback
MASTER_CONNECT_SECONDS = 10
#: a file Spark's own output is appended to (its JVM's log4j lines and warnings, the tasks' Python
#: workers' stderr); without it that output is kept out of sight, in an unnamed temporary file
LOG_VARIABLE = "WAREHOUSE_SPARK_LOG"


def session(master: str | None = None):
    """The SparkSession to run on: the one this process already has, else a new one on ``master``
    (default: what ``spark-submit`` or the Spark configuration says, else ``local[*]``)."""
    from pyspark.sql import SparkSession

    # the thread's active session, else the process's (made in another thread)
    existing = SparkSession.getActiveSession() or getattr(SparkSession, "_instantiatedSession", None)
    if existing is None:
        existing = _start(master)
    running = existing.sparkContext.master
    if master and running != master:
        raise UsageError(
            f"--spark-master {master}: this process already has a Spark session on {running}; "
            "leave out --spark-master to use it, or run in a new process"
        )
    return existing


def _start(master: str | None):
    """A new SparkSession, whose JVM writes its output into ``SparkLog`` instead of the user's terminal:
    stderr is for the run's own progress and summary, and any fault is one line."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    conf = SparkConf().setAppName("warehouse ingest").set("spark.ui.showConsoleProgress", "false")
    if master:
        conf.setMaster(master)
    launched_by_spark_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    python = {}
    if (master or "local").startswith("local") and not launched_by_spark_submit \
            and "PYSPARK_PYTHON" not in os.environ:
        # Local tasks run this interpreter (where the project is installed), not `python3` of PATH: a
        # venv's `warehouse` run by its full path (pipx, cron) has no python of its own on PATH.
        # PySpark reads PYSPARK_PYTHON (not spark.pyspark.python) as the context starts.
        python = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        conf.set("spark.pyspark.python", sys.executable).set("spark.pyspark.driver.python", sys.executable)
    if master and master.startswith("spark://"):
        _reach(master)
    log = SparkLog.open()
    jvm_started = launched_by_spark_submit
    try:
        with _environment(python), warnings.catch_warnings():
            # pyspark's check of the pandas version warns when pandas is newer than it was tested with
            warnings.filterwarnings("ignore", "PySpark does not yet fully support", FutureWarning)
            gateway = None if launched_by_spark_submit else launch_gateway(
                conf, popen_kwargs={"stdout": log.file, "stderr": log.file})
            jvm_started = True
            context = SparkContext(conf=conf, gateway=gateway)
        if log.path is None:
            context.setLogLevel("ERROR")  # (what nobody will read need not be written)
        # (a standalone master that never took the application: Spark stopped the context, this fails)
        return SparkSession.builder.getOrCreate()
    except Exception as e:
        why = "" if jvm_started else "Spark 4 needs Java 17 or later; "  # (its JVM ended at once)
        raise WarehouseError(
            f"Spark did not start{f' on {master}' if master else ''}: {log.cause() or _cause(e)} "
            f"({why}{LOG_VARIABLE}=FILE keeps Spark's own output; docs/spark.md)"
        ) from None


def _reach(master: str) -> None:
    """Raise when no master of ``spark://HOST:PORT[,HOST:PORT]`` accepts a connection within
    ``MASTER_CONNECT_SECONDS``: Spark would try for a minute, then fail with a traceback."""
    import socket

    reasons = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=MASTER_CONNECT_SECONDS).close()
            return
        except OSError as e:
            reasons.append(f"{address}: {e.strerror or e}")
    raise WarehouseError(f"--spark-master {master}: cannot reach the Spark master within "
                         f"{MASTER_CONNECT_SECONDS:g} s ({'; '.join(reasons)}); is it running, at that address?")


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in the environment while the block runs (the caller's process keeps its own after)."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class SparkLog:
    """Where the JVM of a Spark this process starts writes its stdout and stderr: the file named by
    ``WAREHOUSE_SPARK_LOG`` (appended to), else an unnamed temporary file, gone with the process. Either
    way the first lines of a JVM that ended at once say why (``cause``)."""

    def __init__(self, file, path: str | None):
        self.file, self.path = file, path
        self.start = os.fstat(file.fileno()).st_size  # (an appended file: this run's part only)

    @classmethod
    def open(cls) -> "SparkLog":
        import tempfile

        path = os.environ.get(LOG_VARIABLE)
        if path:
            try:
                return cls(open(path, "ab"), path)
            except OSError as e:
                raise UsageError(f"{LOG_VARIABLE}={path}: cannot write there: {e.strerror or e}") from None
        return cls(tempfile.TemporaryFile(prefix="warehouse-spark-"), None)

    def cause(self) -> str:
        """What the JVM's output says went wrong, if anything: Spark's first ERROR line, else (a JVM that
        ended before Spark's logging started) its last line naming an error. Read without moving the
        offset the JVM writes at (they share it)."""
        text = os.pread(self.file.fileno(), 1 << 20, self.start).decode("utf-8", "replace")
        logged = re.findall(r"^\S+ \S+ ERROR \S+: (.+)$", text, re.M)
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        errors = [line for line in lines if re.search(r"Error|Exception|not set|[Nn]o such file", line)]
        line = logged[0] if logged else (errors or lines or [""])[-1]
        return line if len(line) <= 500 else line[:500] + "..."


class SparkEngine:
    """Batches run as Spark tasks, one job each, ``workers`` * 2 jobs submitted at a time."""

    def __init__(self, master: str | None = None):
        self.sc = session(master).sparkContext
        #: task slots of the cluster: the runner plans about four batches per slot
        self.workers = max(1, self.sc.defaultParallelism)

    def run(self, specs: Iterable[BatchSpec], progress: ProgressFn) -> Iterator[BatchResult]:
        group = f"warehouse-ingest-{secrets.token_hex(4)}"
        in_flight = self.workers * JOBS_PER_SLOT
        threads = ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="spark-batch")
        finished = False
        try:
            pending: set[Future] = set()
            for spec in specs:  # drawn lazily: pieces of a large file are found while others run
                pending.add(threads.submit(self._job, group, spec))
                while len(pending) >= in_flight:
                    yield from _finished(pending, progress)
            while pending:
                yield from _finished(pending, progress)
            finished = True
        finally:
            if not finished:
                # Stopped (--strict), Ctrl-C or an error: cancel the run's jobs now rather than
                # wait for them; Spark kills their tasks, the caller deletes what they wrote.
                self.sc.cancelJobGroup(group)
            threads.shutdown(wait=True, cancel_futures=True)

    def _job(self, group: str, spec: BatchSpec) -> tuple[BatchResult, int, int]:
        # Job groups are per thread (PySpark pins each Python thread to a JVM thread).
        self.sc.setJobGroup(group, f"warehouse ingest: batch {spec.batch_no} ({len(spec.items)} files)",
                            interruptOnCancel=True)
        try:
            [outcome] = self.sc.parallelize([spec], 1).map(run_batch_in_task).collect()
        except Exception as e:  # Spark could not run the task (py4j / captured Spark errors)
            raise WarehouseError(
                f"Spark could not run batch {spec.batch_no} ({len(spec.items)} files, the first "
                f"{spec.items[0].path if spec.items else '-'}): {_cause(e)} (is the project installed on the "
                "executors, and the root and sources at the same paths there? docs/spark.md)"
            ) from None
        error, result, files, nbytes = outcome
        if error is not None:
            raise error
        return result, files, nbytes


def _finished(pending: set[Future], progress: ProgressFn) -> list[BatchResult]:
    """Wait for at least one batch; the results of all that are done, in batch order."""
    done, _ = wait(pending, return_when=FIRST_COMPLETED)
    results = []
    for fut in done:
        pending.discard(fut)
        result, files, nbytes = fut.result()
        progress(files, nbytes)
        results.append(result)
    return sorted(results, key=lambda r: r.batch_no)


def _cause(e: Exception) -> str:
    """The line that says why, from a Spark error that wraps a Python traceback or a JVM one."""
    text = str(e)
    python = re.findall(r"^(\w+(?:\.\w+)*(?:Error|Exception|Exit)\b.*)$", text, re.M)
    line = python[-1] if python else text.strip().splitlines()[0] if text.strip() else type(e).__name__
    return line if len(line) <= 500 else line[:500] + "..."


# --- in a Spark task -------------------------------------------------------------


def run_batch_in_task(spec: BatchSpec) -> tuple[BaseException | None, BatchResult | None, int, int]:
    """Entry point in a Spark task: (exception or None, result, files done, bytes done).

    An exception is returned, not raised, so the driver raises the batch's own exception
    (Spark would wrap it in text, and retry a task whose failure would repeat).
    """
    # A task allocates millions of short-lived objects with no cycles (as a pool process does).
    gc.set_threshold(50_000, 20, 100)
    done = [0, 0]

    def progress(files: int, nbytes: int) -> None:
        done[0] += files
        done[1] += nbytes

    try:
        result = BatchIngest(spec, progress).run()
    except Exception as e:
        return _picklable(e), None, done[0], done[1]
    return None, result, done[0], done[1]


def _picklable(e: Exception) -> Exception:
    import pickle

    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:
        return RuntimeError(f"{type(e).__name__}: {e}")
