"""A warehouse table on object storage as a Spark DataFrame, without Spark's own S3 connector.

Spark reads ``s3a://`` only with the hadoop-aws JAR (and its AWS SDK), which comes from Maven:
not available everywhere the warehouse runs. So a remote root's tables are read by a PySpark
Python Data Source (``pyspark.sql.datasource``, Spark 4): ``warehouse_files``. Its partitions are
the Parquet files the snapshot pins (one each); each is read on an executor through
``pyarrow.fs`` (``warehouse.filesystems``, with the storage options the driver resolved) and yielded as
Arrow record batches in the table's declared schema (a column an older file lacks is NULL). The
declared schema is the one of the process calling ``register``, passed as an option: the Python
workers Spark starts (for the schema, and on the executors) may have another version of the package.

Python data sources get no column pruning from Spark: every declared column of a file is read.
Filters are not pushed into the files either (Spark applies them to the rows). A local root is
read by Spark's own Parquet (or Delta) reader, which has both (``warehouse.spark.views``).

The storage options travel to the executors as a data source option whose name says
``secret``, so Spark redacts its value wherever it shows options (``spark.redaction.regex``).
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Iterator

#: the name ``spark.read.format(...)`` takes
NAME = "warehouse_files"
#: the option holding the resolved storage options (its name matches Spark's redaction pattern)
SECRET_OPTIONS = "secret_storage_options"
#: the option holding the table's declared Arrow schema (IPC bytes, base64), made where ``register`` runs
SCHEMA_OPTION = "arrow_schema"
#: rows per Arrow batch handed to Spark
BATCH_ROWS = 64 * 1024


def read_file(schema, url: str, options: dict[str, str]) -> Iterator:
    """One Parquet file of a table as Arrow batches with its declared columns (``schema``), in order and
    type (on an executor): a column the file lacks (written before it was declared) is NULL."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from warehouse.filesystems import FileSystems

    filesystems = FileSystems(options)  # on an executor: the options the driver resolved
    fs, path = filesystems.path(url)
    try:
        f = pq.ParquetFile(path, filesystem=fs)
    except Exception as e:  # noqa: BLE001 - pyarrow's OSError: the same one-line message as a run gives
        raise filesystems.object_error(url, e) from None
    have = set(f.schema_arrow.names)
    for batch in f.iter_batches(batch_size=BATCH_ROWS, columns=[n for n in schema.names if n in have]):
        arrays = [batch.column(n).cast(field.type) if n in have else pa.nulls(batch.num_rows, field.type)
                  for n, field in zip(schema.names, schema)]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


@functools.cache
def data_source():
    """The ``DataSource`` class (made on first use: pyspark is the ``spark`` extra, not imported before).

    Options: ``arrow_schema`` (the table's declared columns, ``encode_schema``), ``files`` (a JSON list
    of the Parquet files' URLs), ``secret_storage_options`` (a JSON object: the canonical storage
    options, ``warehouse.filesystems``).
    Spark pickles the reader and its partitions to the executors (cloudpickle: by value)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class FileSplit(InputPartition):
        """One Parquet file of the table: one Spark partition."""

        def __init__(self, url: str):
            super().__init__(url)
            self.url = url

    class FilesReader(DataSourceReader):
        def __init__(self, schema, files: list[str], options: dict[str, str]):
            self.schema, self.files, self.options = schema, files, options

        def partitions(self) -> list:
            return [FileSplit(u) for u in self.files]

        def read(self, partition) -> Iterator:
            return read_file(self.schema, partition.url, self.options)

    class WarehouseFiles(DataSource):
        @classmethod
        def name(cls) -> str:
            return NAME

        def schema(self) -> str:
            from warehouse.spark.types import spark_schema

            return spark_schema(decode_schema(self.options[SCHEMA_OPTION]))

        def reader(self, schema) -> FilesReader:
            return FilesReader(decode_schema(self.options[SCHEMA_OPTION]), json.loads(self.options["files"]),
                               json.loads(self.options.get(SECRET_OPTIONS) or "{}"))

    return WarehouseFiles


def encode_schema(schema) -> str:
    """An Arrow schema as option text (Spark's options are strings)."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def decode_schema(text: str):
    import pyarrow as pa

    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def frame(spark, table: str, files: list[str], options: dict[str, str]):
    """``table`` over ``files`` (URLs) as a DataFrame read by the ``warehouse_files`` data source, in the
    columns this process declares for it."""
    from warehouse.formatkit.declared import TABLES

    spark.dataSource.register(data_source())  # once per session is enough; again is harmless
    return (spark.read.format(NAME).option(SCHEMA_OPTION, encode_schema(TABLES[table].arrow_schema))
            .option("files", json.dumps(files)).option(SECRET_OPTIONS, json.dumps(options)).load())
