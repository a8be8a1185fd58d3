"""Progress bars for long work: percentage, rate and time left, on stderr.

tqdm draws them: a bar redrawn in place in a terminal, a widget in Jupyter
(``tqdm.auto``). Nothing is drawn when progress is not wanted (``--quiet``,
``progress=False``) or when stderr is neither a terminal nor a notebook (a log
file, a pipe), where a bar redrawn with carriage returns does not belong. A bar
appears only once its work has taken ``DELAY`` seconds, so quick runs stay quiet.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO

#: seconds before a bar appears
DELAY = 1.0


def in_kernel() -> bool:
    """True inside a Jupyter kernel. An imported ``ipykernel`` is not enough (any library may
    import it): the running IPython shell must be the kernel's."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def interactive(stream: IO[str]) -> bool:
    """Whether a progress bar belongs on ``stream``: a terminal, or a Jupyter kernel's output."""
    if in_kernel():  # in a notebook tqdm.auto draws a widget (or lines Jupyter redraws in place)
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def bar(total: float | None, *, desc: str, unit: str, enabled: bool = True, stream: IO[str] | None = None, **options):
    """A tqdm bar on ``stream`` (stderr), or None when it does not belong there (see the module's doc)."""
    stream = stream or sys.stderr
    if not enabled or not interactive(stream):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=stream, delay=DELAY, dynamic_ncols=True, **options)


class QueryProgress:
    """While DuckDB runs a long statement on ``con`` with no other progress to show, the bar's
    postfix shows DuckDB's own estimate for that statement (``query_progress``), polled from a thread:
    an export's selection and staging would otherwise look stalled."""

    INTERVAL_S = 0.5

    def __init__(self, con, bar, label: str = "preparing"):
        import duckdb

        self.con, self.bar, self.label = con, bar, label
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # DuckDB tracks a query's progress only with its progress bar on (printing it stays off: stdout is data)
        try:
            con.execute("SET enable_progress_bar_print = false").fetchall()
            con.execute("SET enable_progress_bar = true").fetchall()
        except duckdb.Error:
            # In a Jupyter kernel DuckDB draws its bar as a widget and refuses to change its settings
            # without ipywidgets (not in the notebooks extra): the bar goes without DuckDB's estimate.
            self.active = False
            return
        self.active = True  # cleared once the work reports progress of its own
        self._thread = threading.Thread(target=self._run, name="query-progress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.INTERVAL_S):
            self.poll()

    def poll(self) -> None:
        if not self.active:
            return
        try:
            percent = self.con.query_progress()
        except Exception:  # closed, or between statements
            return
        if percent >= 0:  # drawn now only once the bar may show (its DELAY): a quick run stays quiet
            self.bar.set_postfix_str(f"{self.label} {percent:.0f}%", refresh=time.monotonic() - self.start >= DELAY)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


class IngestProgress:
    """Ingest progress: bytes read of the total, with percentage, rate and time left, and files done
    (a bar on stderr, see ``bar``). ``add`` may be called from several threads (an engine's)."""

    def __init__(self, total_files: int, total_bytes: int, stream=None, enabled: bool = True):
        self.total_files, self.files = total_files, 0
        self._lock = threading.Lock()
        self.bar = bar(total_bytes, desc="ingest", unit="B", unit_scale=True, unit_divisor=1000,
                       enabled=enabled and total_files > 0, stream=stream)

    def add(self, files: int, nbytes: int) -> None:
        with self._lock:
            self.files += files
            if self.bar is not None:
                self.bar.set_postfix_str(f"{self.files}/{self.total_files} files", refresh=False)
                self.bar.update(nbytes)

    def more(self, files: int, nbytes: int) -> None:
        """``files`` more to read, of ``nbytes``: found by a walk still going on while the batches run."""
        with self._lock:
            self.total_files += files
            if self.bar is not None:
                self.bar.total += nbytes

    def done(self) -> None:
        if self.bar is not None:
            # Files read by path alone (and skipped ones) report no bytes: a run that ends
            # without an exception (none propagating through the caller's finally) is all done.
            if sys.exc_info()[0] is None and self.bar.total:
                self.bar.update(self.bar.total - self.bar.n)
            self.bar.close()
