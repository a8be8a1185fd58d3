"""Imported first by the pool's forkserver (``pool.preload_modules``): there pyarrow settles, once,
that it has no pandas to look out for (``process_settings.pyarrow_without_pandas``), and every
worker forked from the forkserver inherits that, instead of importing pandas (0.2 CPU-s)."""

from .process_settings import pyarrow_without_pandas

pyarrow_without_pandas()
