"""The warehouse on Apache Spark (the ``spark`` extra; docs/spark.md).

* ``warehouse ingest ... --engine spark`` runs the run's batches as Spark tasks
  (``warehouse.spark.engine``); the driver plans and commits as with the local engines.
* ``register(spark, root)`` makes every table and view of a warehouse snapshot a temporary
  view of a SparkSession (``warehouse.spark.views``; the DuckDB views of ``sql/`` translated
  to Spark SQL by ``warehouse.spark.translate``).

Nothing here is imported by the rest of the project unless Spark is asked for.
"""

from __future__ import annotations

from warehouse.spark.views import register

__all__ = ["register"]
