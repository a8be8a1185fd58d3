"""The response warehouse: LLM response data from many JSON shapes, as Parquet tables and DuckDB views.

>>> import warehouse
>>> warehouse.ingest("samples", "wh")                        # doctest: +SKIP
>>> con = warehouse.connect("wh")                             # DuckDB, every view  # doctest: +SKIP
>>> wh = warehouse.open("wh")                                 # polars / Arrow / SQL  # doctest: +SKIP
>>> wh.scan("responses").filter(pl.col("experiment") == "demo").collect()  # doctest: +SKIP
>>> warehouse.sql("wh", "SELECT count(*) FROM turns").fetchall()  # doctest: +SKIP
>>> warehouse.stats("wh")["tables"]                           # rows per table  # doctest: +SKIP

Every command is a function of the same name whose parameters are the command's options:
``warehouse ingest PATH --root wh --max-record-mb 8`` is ``warehouse.ingest(PATH, "wh", max_record_mb=8)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Union

from .errors import ExportError, QueryError, StorageError, StrictModeError, UsageError, WarehouseError

if TYPE_CHECKING:
    from .api import Warehouse, open, read, read_arrow, scan
    from .exports import ExportSummary
    from .maintenance import compact, history
    from .query import sql, stats
    from .registry import Registry
    from .runner import IngestSummary
    from .tables import TABLES
    from .views import connect

#: names imported on first use, so `import warehouse` (and the `warehouse` command's
#: start-up, `--help`, `--version`) does not load DuckDB, Arrow or polars until they are needed
_LAZY = {
    "Warehouse": "api", "open": "api", "read": "api", "read_arrow": "api", "scan": "api",
    "sql": "query", "stats": "query", "TABLES": "tables", "connect": "views",
    "history": "maintenance", "compact": "maintenance",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # once: later lookups do not come here
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "TABLES",
    "Warehouse",
    "compact",
    "history",
    "open",
    "read",
    "read_arrow",
    "scan",
    "sql",
    "stats",
    "tokenize",
    "ExportError",
    "QueryError",
    "StorageError",
    "StrictModeError",
    "UsageError",
    "WarehouseError",
    "connect",
    "export",
    "ingest",
]
__version__ = "0.1.0"

#: a path: str or os.PathLike (pathlib.Path)
StrPath = Union[str, os.PathLike]


def ingest(
    paths: StrPath | Iterable[StrPath],
    root: StrPath,
    *,
    format: str | None = None,
    strict: bool = False,
    jobs: int | None = None,
    prune: bool = False,
    wait: bool = True,
    max_record_mb: float = 64.0,
    tokenizer: StrPath | Literal[False] | None = None,
    options: Mapping[str, Any] | None = None,
    registry: Registry | None = None,
    progress: bool = True,
    fast_paths: bool = True,
    engine: str = "local",
    spark_master: str | None = None,
    storage_options: Mapping[str, str] | Iterable[str] | None = None,
) -> IngestSummary:
    """Ingest files and directories into the warehouse at ``root`` (created if need be); see ``warehouse ingest``.

    ``format`` forces one source format (default: detect per file); ``strict`` stops at the
    first bad record and changes nothing; ``jobs`` worker processes (default: one per core);
    ``prune`` drops the rows of catalogued files under ``paths`` that no longer exist;
    ``wait=False`` raises LockedError instead of waiting for another ingest into ``root``;
    ``max_record_mb`` quarantines larger records; ``tokenizer`` a local tokenizer directory
    for annotation token ranges (remembered for later runs; None: the remembered one, False: forget
    it, as ``--no-tokenizer``); ``options`` run options that
    ingestors read (``tokenizer`` is one); ``registry`` the formats to read with (default:
    the installed ones, ``warehouse.registry``); ``progress`` on stderr;
    ``fast_paths=False`` reads every record through the record path (the formats' vectorised
    paths are held to it; turn them off only to compare the two); ``engine="spark"`` runs the
    batches as Spark tasks (the ``spark`` extra; docs/spark.md), on ``spark_master`` (a Spark
    master URL) or the SparkSession this process already has. ``paths`` may be
    ``s3://bucket/prefix`` URLs; ``storage_options`` (``aws_region``, ``aws_endpoint_url``, ...:
    the names deltalake and polars take; a dict, or ``KEY=VALUE`` strings as ``--storage-option``
    gives them) add to and override the AWS environment (docs/storage.md).
    """
    from . import checks, remote
    from .runner import ingest as _ingest

    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]  # type: ignore[list-item]
    root = checks.root(root)
    checks.count(jobs, "jobs", least=1)
    checks.positive(max_record_mb, "max_record_mb", " of MB")
    checks.engine(engine, spark_master)
    run_options = dict(options or {})
    if tokenizer is False:
        run_options["tokenizer"] = False  # forgotten: the run's settings drop it (runner._settings)
    elif tokenizer is not None:
        run_options["tokenizer"] = checks.directory(tokenizer, "tokenizer", TOKENIZER_DIR)
    return _ingest(
        [os.fsdecode(p) for p in paths],  # type: ignore[union-attr]
        root,
        format=format,
        strict=strict,
        jobs=jobs,
        prune=prune,
        wait=wait,
        max_record_bytes=int(max_record_mb * 1024 * 1024),
        progress=progress,
        options=run_options,
        registry=registry,
        fast_paths=fast_paths,
        engine=engine,
        spark_master=spark_master,
        storage_options=remote.canonical(storage_options),
    )


def export(
    root: StrPath,
    where: str | None,
    format: str,
    out: StrPath,
    *,
    overwrite: bool = False,
    memory_limit: str = "1GB",  # exports.MEMORY_LIMIT (not imported here: start-up stays light)
    progress: bool = True,
    as_of: int | None = None,
    storage_options: Mapping[str, str] | Iterable[str] | None = None,
) -> ExportSummary:
    """Export the responses matching ``where`` (SQL on ``responses``; None: all) with their children; see ``warehouse export``.

    ``format`` is parquet, jsonl, csv, openai_chat, or an installed source format that writes its
    own shape back (``warehouse export --help`` lists them). ``overwrite`` replaces an existing
    ``out`` directory; ``memory_limit`` is DuckDB's (it spills beyond); ``as_of`` exports warehouse
    snapshot N (``warehouse.history`` lists them), default the latest. ``root`` may be an ``s3://`` URL
    (``storage_options`` as for ``ingest``); ``out`` is a local path.
    """
    from . import checks, remote
    from .exports import export as _export

    return _export(checks.root(root), where, format, checks.local_path(out, "out"),
                   overwrite=overwrite, memory_limit=memory_limit, progress=progress, as_of=checks.as_of(as_of),
                   storage_options=remote.canonical(storage_options))


def tokenize(root: StrPath, tokenizer: StrPath, *, jobs: int | None = None, progress: bool = True,
             storage_options: Mapping[str, str] | Iterable[str] | None = None) -> IngestSummary:
    """Add token ranges to an existing warehouse with a local tokenizer directory; see ``warehouse tokenize``.
    ``root`` may be an ``s3://`` URL (``storage_options`` as for ``ingest``)."""
    from . import checks, remote
    from .runner import tokenize as _tokenize

    root = checks.root(root)
    checks.count(jobs, "jobs", least=1)
    return _tokenize(root, checks.directory(tokenizer, "tokenizer", TOKENIZER_DIR), jobs=jobs, progress=progress,
                     storage_options=remote.canonical(storage_options))


#: what ``tokenizer`` must name, said when it does not
TOKENIZER_DIR = "give a local tokenizer directory, e.g. one saved with save_pretrained"
