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
``--format`` names three things, each its own keyword: ``source_format`` (ingest), ``output_format`` (sql, stats,
history) and ``export_format`` (export).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Union

from warehouse import moved
from warehouse.errors import ExportError, QueryError, StorageError, StrictModeError, UsageError, WarehouseError

moved.install()

if TYPE_CHECKING:
    from warehouse.api import Warehouse, open, read, read_arrow, scan
    from warehouse.exports import ExportSummary
    from warehouse.formatkit.declared import TABLES
    from warehouse.formatkit.registry import Registry
    from warehouse.reading.query import sql, stats
    from warehouse.reading.views import connect
    from warehouse.run.maintenance import compact, history
    from warehouse.run.runner import IngestSummary

#: names imported on first use, so `import warehouse` (and the `warehouse` command's
#: start-up, `--help`, `--version`) does not load DuckDB, Arrow or polars until they are needed
_LAZY = {
    "Warehouse": "api", "open": "api", "read": "api", "read_arrow": "api", "scan": "api",
    "sql": "reading.query", "stats": "reading.query", "TABLES": "formatkit.declared", "connect": "reading.views",
    "history": "run.maintenance", "compact": "run.maintenance",
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
    "view",
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


@moved.renamed_keyword("format", "source_format")
def ingest(
    paths: StrPath | Iterable[StrPath],
    root: StrPath,
    *,
    source_format: str | None = None,
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

    ``source_format`` reads every file as that format (default: detect per file); ``strict`` stops at the
    first bad record and changes nothing; ``jobs`` worker processes (default: one per core);
    ``prune`` drops the rows of catalogued files under ``paths`` that no longer exist;
    ``wait=False`` raises LockedError instead of waiting for another ingest into ``root``;
    ``max_record_mb`` quarantines larger records; ``tokenizer`` a local tokenizer directory, or the id
    of a model in the local Hugging Face cache, for annotation token ranges (remembered for later runs;
    None: the remembered one, False: forget it, as ``--no-tokenizer``); ``options`` run options that
    ingestors read (``tokenizer`` is one); ``registry`` the formats to read with (default:
    the installed ones, ``warehouse.formatkit.registry``); ``progress`` on stderr;
    ``fast_paths=False`` reads every record through the record path (the formats' vectorised
    paths are held to it; turn them off only to compare the two); ``engine="spark"`` runs the
    batches as Spark tasks (the ``spark`` extra; docs/spark.md), on ``spark_master`` (a Spark
    master URL) or the SparkSession this process already has. ``paths`` may be
    ``s3://bucket/prefix`` URLs; ``storage_options`` (``aws_region``, ``aws_endpoint_url``, ...:
    the names deltalake and polars take; a dict, or ``KEY=VALUE`` strings as ``--storage-option``
    gives them) add to and override the AWS environment (docs/storage.md).
    """
    from warehouse import access, checks
    from warehouse.run.runner import ingest as _ingest

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
        run_options["tokenizer"] = checks.directory_or_name(tokenizer, "tokenizer", TOKENIZER)
    return _ingest(
        [os.fsdecode(p) for p in paths],  # type: ignore[union-attr]
        root,
        source_format=source_format,
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
        storage_options=access.canonical(storage_options),
    )


@moved.renamed_keyword("format", "export_format")
def export(
    root: StrPath,
    where: str | None,
    export_format: str,
    out: StrPath,
    *,
    overwrite: bool = False,
    memory_limit: str = "1GB",  # exports.MEMORY_LIMIT (not imported here: start-up stays light)
    progress: bool = True,
    as_of: int | None = None,
    storage_options: Mapping[str, str] | Iterable[str] | None = None,
) -> ExportSummary:
    """Export the responses matching ``where`` (SQL on ``responses``; None: all) with their children; see ``warehouse export``.

    ``export_format`` is parquet, jsonl, csv, openai_chat, or an installed source format that writes its
    own shape back (``warehouse export --help`` lists them). ``overwrite`` replaces an existing
    ``out`` directory; ``memory_limit`` is DuckDB's (it spills beyond); ``as_of`` exports warehouse
    snapshot N (``warehouse.history`` lists them), default the latest. ``root`` may be an ``s3://`` URL
    (``storage_options`` as for ``ingest``); ``out`` is a local path.
    """
    from warehouse import access, checks
    from warehouse.exports import export as _export

    return _export(checks.root(root), where, export_format, checks.local_path(out, "out"),
                   overwrite=overwrite, memory_limit=memory_limit, progress=progress, as_of=checks.as_of(as_of),
                   storage_options=access.canonical(storage_options))


def tokenize(root: StrPath, tokenizer: StrPath, *, jobs: int | None = None, progress: bool = True,
             storage_options: Mapping[str, str] | Iterable[str] | None = None) -> IngestSummary:
    """Add token ranges to an existing warehouse with a local tokenizer directory or a model id found in the
    local Hugging Face cache; see ``warehouse tokenize``.
    ``root`` may be an ``s3://`` URL (``storage_options`` as for ``ingest``)."""
    from warehouse import access, checks
    from warehouse.run.runner import tokenize as _tokenize

    root = checks.root(root)
    checks.count(jobs, "jobs", least=1)
    return _tokenize(root, checks.directory_or_name(tokenizer, "tokenizer", TOKENIZER), jobs=jobs, progress=progress,
                     storage_options=access.canonical(storage_options))


def view(
    root: StrPath,
    where: str | None = None,
    *,
    as_of: int | None = None,
    port: int | None = None,
    browser: bool = True,
    out: StrPath | None = None,
    limit: int | None = None,
    storage_options: Mapping[str, str] | Iterable[str] | None = None,
):
    """The responses matching ``where`` (SQL on ``responses``, the same language and sandbox as ``export``'s;
    None: all) in the viewer; see ``warehouse view`` and docs/viewer.md.

    Returns a ``warehouse.viewer.View``: in Jupyter or VS Code it shows the pages inline (the list, each
    response, spans by category) for the first ``limit`` responses (default 500); ``.serve()`` serves
    them on 127.0.0.1 (``port``, default a free one; ``browser=False`` opens no browser) until Ctrl-C;
    ``out`` writes them as one self-contained HTML file. ``as_of`` reads warehouse snapshot N.
    """
    from warehouse.viewer import view as _view

    return _view(root, where, as_of=as_of, port=port, browser=browser, out=out, limit=limit,
                 storage_options=storage_options)


#: what ``tokenizer`` must name, said when it does not
TOKENIZER = "give a local tokenizer directory, e.g. one saved with save_pretrained, or a model id"
