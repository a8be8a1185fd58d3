"""What the pool's forkserver does first when it starts (``pool.preload_modules`` imports this
before anything else), for itself and for every worker it forks:

* pyarrow settles, once, that it has no pandas to look out for
  (``process_settings.pyarrow_without_pandas``): otherwise every process would import pandas
  (when installed, 0.2 CPU-s) on its first ``pa.array``;
* the forkserver ends at once when it is told to (its parent closed its end of the pipe: the run
  is over, or its process exits): it holds nothing to flush or to clean up, and tearing down
  its interpreter (pyarrow, numpy, the formats) took ~40 ms of a core after the run had ended.
  Its workers do not run this: multiprocessing ends them with ``os._exit`` already.
"""

import atexit
import os

from .process_settings import pyarrow_without_pandas

pyarrow_without_pandas()
atexit.register(os._exit, 0)
