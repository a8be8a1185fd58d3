"""``register(spark, root)``: a warehouse snapshot as temporary views of a SparkSession.

Two layers, as in DuckDB (``warehouse/reading/views.py``):

* ``raw_<table>``: each declared table over its data files in the snapshot
  (``warehouse.store.readable.snapshot_files``, the one place that knows them), read with the
  declared schema. A session with the Delta connector (``delta-spark``: its SQL extension
  configured) reads each table through it instead, at the Delta version the snapshot pins
  (``versionAsOf``), which gives the same rows; an ``s3://`` root is read by the Python data
  source of ``warehouse.spark.source`` (Spark's s3a:// needs a JAR from Maven). Every way a
  column an older file lacks is NULL and an empty table is a typed empty view. JSON columns are text (Spark has no JSON type; ``get_json_object``,
  ``from_json`` and ``parse_json`` read them).
* the views of ``sql/`` in name order (those a format defines by its statement), then the
  installed formats' ``views`` (``warehouse.formatkit.declared_views.view_statements``), each translated from
  DuckDB to Spark SQL (``warehouse.spark.translate``). ``path_fields`` is computed by its
  view from ``raw_sources`` (DuckDB reads the copy the ingest materialised; Spark derives
  it where it runs).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from warehouse.access import StorageOptions
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.declared_views import view_statements
from warehouse.spark.translate import raw_name, to_spark
from warehouse.spark.types import spark_schema, spark_type
from warehouse.store.readable import snapshot_files
from warehouse.tables import Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def register(spark: SparkSession, root: str | os.PathLike, *, as_of: int | None = None,
             storage_options: StorageOptions = None) -> list[str]:
    """Make every table (``raw_<table>``) and every view of the warehouse at ``root`` a temporary
    view of ``spark``; returns the names of the views, in the order they were made.

    ``as_of``: a snapshot number (``warehouse history``); default: the live snapshot. The views
    read the files of that snapshot, so later ingests do not change them: register again to see
    them. A snapshot's files stay until `warehouse compact` vacuums them (after its retention), as for
    DuckDB connections.

    ``root`` may be an ``s3://`` URL (``storage_options`` as for ``warehouse.ingest``): its tables are then
    read by the Python data source of ``warehouse.spark.source`` (no S3 connector JAR needed); a local
    root by Spark's own Parquet reader, or the Delta connector when the session has it.
    """
    from warehouse import checks, urlpaths
    from warehouse.filesystems import FileSystems

    names = []
    as_of = checks.as_of(as_of)
    filesystems = FileSystems.for_path(root, storage_options)
    if urlpaths.is_url(os.fspath(root)):
        from warehouse.spark.source import frame

        files = snapshot_files(root, as_of=as_of, filesystems=filesystems)
        options = filesystems.delta_options(os.fspath(root)) or {}
        frames = {t.name: frame(spark, t.name, files[t.name], options) if files.get(t.name)
                  else _table_frame(spark, t, []) for t in TABLES.values()}
    elif has_delta_connector(spark):
        frames = _delta_frames(spark, root, as_of)
    else:
        files = snapshot_files(root, as_of=as_of)
        frames = {t.name: _table_frame(spark, t, files.get(t.name, [])) for t in TABLES.values()}
    for table in TABLES.values():
        frames[table.name].createOrReplaceTempView(raw_name(table.name))
        names.append(raw_name(table.name))
    for _, statement in view_statements():
        translated = to_spark(statement)
        spark.sql(translated)
        names.append(_view_name(translated))
    return names


def _table_frame(spark: SparkSession, table: Table, files: list[str]) -> DataFrame:
    schema = spark_schema(table)
    if not files:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).parquet(*files)


def has_delta_connector(spark: SparkSession) -> bool:
    """Whether the session was configured with the Delta connector (delta-spark's SQL extension)."""
    return "DeltaSparkSessionExtension" in (spark.conf.get("spark.sql.extensions", "") or "")


def _delta_frames(spark: SparkSession, root: str | os.PathLike, as_of: int | None) -> dict[str, DataFrame]:
    """Each table through the Delta connector at the version snapshot ``as_of`` pins, with the
    declared columns in their order (a column no version has yet is a typed NULL)."""
    from pyspark.sql import functions as F

    from warehouse.store.storage import Store

    store = Store(root)
    pinned = store.read_snapshot(as_of).tables
    frames = {}
    for table in TABLES.values():
        if table.name not in pinned:
            frames[table.name] = _table_frame(spark, table, [])
            continue
        df = spark.read.format("delta").option("versionAsOf", pinned[table.name]["version"]).load(
            store.table_uri(table.name))
        have = set(df.columns)
        frames[table.name] = df.select([
            (F.col(f"`{c.name}`") if c.name in have else F.lit(None)).cast(spark_type(c.type)).alias(c.name)
            for c in table.columns])
    return frames


def _view_name(spark_sql: str) -> str:
    import sqlglot
    from sqlglot import exp

    return sqlglot.parse_one(spark_sql, read="spark").find(exp.Table).name
