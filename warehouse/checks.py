"""Checks of the public functions' arguments, made where they are used: in the API.

``warehouse ingest`` and ``warehouse.ingest(...)`` are one thing: the command line
passes its options through unchecked (an option and its parameter have the same
name), so Python callers get the same checks and the same messages. A message
names the option (``--max-record-mb``), which is also the parameter's name.
Imports nothing heavy: ``warehouse --help`` stays fast. URLs are read as ``remote`` reads them
(``urlpaths.is_url``, ``urlpaths.split``): one definition of a URL.
"""

from __future__ import annotations

import operator
import os
import re
from typing import Any

from warehouse import remote, urlpaths  # (imports nothing heavy either: pyarrow and obstore only inside its functions)
from warehouse.errors import UsageError

#: what ``warehouse sql --format`` / ``warehouse.sql(format=...)`` writes (``warehouse.reading.output``)
SQL_FORMATS = ("table", "csv", "json", "jsonl")
#: what ``warehouse stats --format`` / ``warehouse.stats(format=...)`` writes
STATS_FORMATS = ("table", "json")
#: what ``warehouse history --format`` / ``warehouse.history(format=...)`` writes
HISTORY_FORMATS = ("table", "json")

#: where ``warehouse ingest --engine`` / ``warehouse.ingest(engine=...)`` runs the batches
ENGINES = ("local", "spark")

def option(name: str) -> str:
    """``max_record_mb`` -> ``--max-record-mb``: how a message names a parameter."""
    return "--" + name.replace("_", "-")


def local_path(path: str | os.PathLike, name: str) -> str:
    """A local path, never a URL (``export --out``: the export is written on this machine)."""
    text = os.fspath(path)
    if urlpaths.is_url(text):
        raise UsageError(f"{option(name)} {remote.redact(text)}: a URL; {option(name)} is a local path (write it "
                         "here, then copy it to the bucket)")
    return os.fsdecode(text)


#: the schemes a warehouse root may have (its conditional puts are made with obstore: s3 only, tested on moto)
ROOT_SCHEMES = ("s3",)


def root(path: str | os.PathLike, name: str = "root") -> str:
    """A warehouse root: a local path, or an ``s3://bucket/prefix`` URL (docs/storage.md)."""
    text = os.fspath(path)
    if urlpaths.is_url(text):
        scheme, bucket, _ = urlpaths.split(text)
        if scheme not in ROOT_SCHEMES:
            raise UsageError(f"{option(name)} {remote.redact(text)}: a warehouse root may be a local directory or an "
                             f"s3:// URL, not {text.partition('://')[0]}:// (docs/storage.md)")
        if not bucket:
            raise UsageError(f"{option(name)} {text}: no bucket named (expected s3://BUCKET/PREFIX)")
        remote.no_credentials(text)
        return text
    return os.fsdecode(text)


def directory_or_name(value: str | os.PathLike, name: str, what: str) -> str:
    """A local directory, as an absolute path, or a name a format looks up (a model id: ``tokenizer``).

    What names a place on this disk must be a directory: a path that exists, or an absolute (or ``./``,
    ``~``) one. Any other text is passed on as given, for the formats to judge
    (``Ingestor.option_problem``, asked of every run). ``what`` says what is wanted.
    """
    text = os.fsdecode(os.fspath(value))
    if os.path.isdir(text):
        return os.path.abspath(text)
    if not text or os.path.exists(text) or os.path.isabs(text) or text.startswith((".", "~")):
        raise UsageError(f"{option(name)} {text}: not a directory ({what})")
    return text


def positive(value: Any, name: str, unit: str = "") -> Any:
    """A number above 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise UsageError(f"{option(name)} {value!r}: must be a positive number{unit}")
    return value


def count(value: int | None, name: str, *, least: int, meaning: str = "") -> int | None:
    """None, or an integer of at least ``least`` (``meaning`` says what the smallest means)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise UsageError(f"{option(name)} {value!r}: must be an integer of {least} or more{meaning}")
    return value


def as_of(value: Any) -> int | None:
    """None (the latest snapshot), or a snapshot number: an integer of 1 or more, or its digits as
    text, read as ``--as-of`` reads them. Every function that takes ``as_of`` checks it here, so
    True, 1.0 or "one" is refused naming the value, never looked up as a snapshot file."""
    if value is None:
        return None
    number = None
    if isinstance(value, str):
        try:
            number = int(value)  # what argparse's type=int makes of --as-of
        except ValueError:
            pass
    elif not isinstance(value, bool):
        try:
            number = operator.index(value)  # an int, or a numpy integer; not a float
        except TypeError:
            pass
    if number is None or number < 1:
        raise UsageError(f"{option('as_of')} {value!r}: must be a snapshot number, an integer of 1 or more "
                         "(`warehouse history` lists them)")
    return number


def choice(value: str | None, name: str, choices: tuple[str, ...]) -> str | None:
    """None, or one of ``choices``."""
    if value is not None and value not in choices:
        raise UsageError(f"{option(name)} {value!r}: choose one of {', '.join(choices)}")
    return value


#: the Spark masters Spark 4 accepts (``SparkContext.createTaskScheduler``; a cluster manager's URL):
#: ``local``, ``local[N]`` / ``local[*]`` (N >= 1, optionally ``,F`` task failures), ``local-cluster[N,C,M]``,
#: ``spark://HOST:PORT[,HOST:PORT...]``, ``yarn``, ``k8s://...``
_HOST_PORT = r"(?:[^\s/,:\[\]]+|\[[0-9a-fA-F:.]+\]):[0-9]+"
SPARK_MASTER = re.compile(
    r"local|local\[(?:[1-9][0-9]*|\*)(?:\s*,\s*[0-9]+)?\]"
    r"|local-cluster\[\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*\]"
    rf"|spark://{_HOST_PORT}(?:,{_HOST_PORT})*|yarn|k8s://\S+"
)


def engine(name: str, spark_master: str | None) -> str:
    """One of ``ENGINES``; ``spark`` only where pyspark and Java are installed; a master only for Spark,
    and one Spark would take: a bad one is refused here, before Spark is started (a JVM, seconds)."""
    choice(name, "engine", ENGINES)
    if spark_master is not None and name != "spark":
        raise UsageError(f"--spark-master {spark_master}: only with --engine spark")
    if name == "spark":
        import importlib.util

        if importlib.util.find_spec("pyspark") is None:
            raise UsageError("--engine spark: pyspark is not installed here; install the extra: "
                             "pip install 'response-warehouse[spark]' (docs/spark.md)")
        if spark_master is not None and not SPARK_MASTER.fullmatch(spark_master):
            raise UsageError(f"--spark-master {spark_master}: not a Spark master; use local[N] (N threads, or * for "
                             "one per core), spark://HOST:PORT, yarn or k8s://HOST:PORT (docs/spark.md)")
        _java()
    return name


def _java() -> None:
    """The Java runtime Spark starts (``JAVA_HOME/bin/java``, else ``java`` on PATH, as Spark's own script
    looks for it), unless a Spark of this process or of ``spark-submit`` is running already."""
    import shutil
    import sys

    if "PYSPARK_GATEWAY_PORT" in os.environ or "pyspark" in sys.modules and _spark_running():
        return
    home = os.environ.get("JAVA_HOME")
    if home and not os.access(os.path.join(home, "bin", "java"), os.X_OK):
        raise UsageError(f"--engine spark: JAVA_HOME={home} has no bin/java; set JAVA_HOME to a Java 17 or later "
                         "installation, or unset it to use java on PATH (docs/spark.md)")
    if not home and shutil.which("java") is None:
        raise UsageError("--engine spark: no Java runtime (no java on PATH, no JAVA_HOME); Spark needs Java 17 or "
                         "later: install one (e.g. apt-get install openjdk-17-jre-headless) (docs/spark.md)")


def _spark_running() -> bool:
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() is not None or getattr(SparkSession, "_instantiatedSession", None) is not None
