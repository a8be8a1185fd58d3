"""What the pool's forkserver does first when it starts (``pool.preload_modules`` imports this
before anything else), for itself and for every worker it forks:

* pyarrow settles, once, that it has no pandas to look out for
  (``process_settings.pyarrow_without_pandas``): otherwise every process would import pandas
  (when installed, 0.2 CPU-s) on its first ``pa.array``;
* the forkserver ends at once when it is told to (its parent closed its end of the pipe: the run
  is over, or its process exits): it holds nothing to flush or to clean up, and tearing down
  its interpreter (pyarrow, numpy, the formats) took ~40 ms of a core after the run had ended.
  Its workers do not run this: multiprocessing ends them with ``os._exit`` already.

Imported anywhere else (a tool that imports every module), it does nothing: an exit handler that
ends the process with status 0 would hide any other process's failure.
"""

import atexit
import os
import sys


def _preloaded_by_the_forkserver() -> bool:
    """Whether this import runs inside multiprocessing's forkserver loop (its ``main`` preloads)."""
    from multiprocessing import forkserver

    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is forkserver.main.__code__:
            return True
        frame = frame.f_back
    return False


if _preloaded_by_the_forkserver():
    from warehouse.run.process_settings import pyarrow_without_pandas

    pyarrow_without_pandas()
    atexit.register(os._exit, 0)
