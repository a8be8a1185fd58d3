"""Arrow types as Spark SQL names them: the schema Spark reads a table's Parquet files with."""

from __future__ import annotations

import pyarrow as pa

from warehouse.decimals import DECIMAL, SQL_TYPE
from warehouse.tables import Table


def spark_schema(table: Table | pa.Schema) -> str:
    """The table's declared columns (or an Arrow schema's fields) as a Spark DDL schema."""
    columns = table if isinstance(table, pa.Schema) else table.columns
    return ", ".join(f"`{c.name}` {spark_type(c.type)}" for c in columns)


def spark_type(t: pa.DataType) -> str:
    """The Spark SQL type that reads a Parquet column written with Arrow type ``t``."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "STRING"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_int32(t):
        return "INT"
    if pa.types.is_int64(t):
        return "BIGINT"
    if t == DECIMAL:
        return SQL_TYPE  # Spark writes DECIMAL(p,s) as DuckDB does
    if pa.types.is_float64(t):
        return "DOUBLE"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.tz else "TIMESTAMP_NTZ"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"ARRAY<{spark_type(t.value_type)}>"
    if pa.types.is_struct(t):
        return "STRUCT<" + ", ".join(f"`{f.name}`: {spark_type(f.type)}" for f in t) + ">"
    raise TypeError(f"no Spark type for the Arrow type {t} (declare it in warehouse/spark/types.py)")
