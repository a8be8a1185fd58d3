"""Ctrl-C that stops a running DuckDB query at once, and one that comes too late to stop anything.

Python turns SIGINT into ``KeyboardInterrupt`` only when the main thread next runs
Python code. A long DuckDB query keeps the main thread inside DuckDB, so a Ctrl-C
waits for the query to end (``warehouse sql``), or surfaces as DuckDB's own
``RuntimeError: Query interrupted`` (``warehouse export``).

While a ``SigintGuard`` is active, every SIGINT also wakes a watcher thread
(``signal.set_wakeup_fd``) that calls ``interrupt()`` on the connections
registered with ``register``: DuckDB stops the query within moments, whatever the
main thread is doing. The first SIGINT raises ``KeyboardInterrupt`` in the main
thread as usual; later ones only interrupt again, so the clean-up the first one
started (removing a partial export) runs to its end. Whatever exception the
interrupted code ends with, the guard re-raises it as ``KeyboardInterrupt``.

Once a command's work is done (an ingest's snapshot written, a query's output
complete), ``LateInterrupts`` records a Ctrl-C instead of raising it, and the command
ends with exit 130 and a line saying what it had done.
"""

from __future__ import annotations

import signal
import socket
import threading

_active: SigintGuard | None = None


def register(con) -> None:
    """Let Ctrl-C interrupt ``con`` while a guard is active (a no-op otherwise)."""
    if _active is not None:
        _active.connections.append(con)


class SigintGuard:
    def __init__(self) -> None:
        self.connections: list = []
        self.signalled = False  # the watcher saw a SIGINT
        self.raised = False  # the main thread raised KeyboardInterrupt for it
        self._thread: threading.Thread | None = None

    @property
    def interrupted(self) -> bool:
        return self.signalled or self.raised

    def __enter__(self) -> SigintGuard:
        global _active
        if threading.current_thread() is not threading.main_thread():
            return self  # signals reach the main thread only: nothing to guard here
        self._read, self._write = socket.socketpair()
        self._write.setblocking(False)
        self._previous_handler = signal.signal(signal.SIGINT, self._handler)
        self._previous_fd = signal.set_wakeup_fd(self._write.fileno(), warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._watch, name="sigint-watcher", daemon=True)
        self._thread.start()
        _active = self
        return self

    def __exit__(self, kind, value, tb) -> None:
        global _active
        if self._thread is not None:
            _active = None
            signal.set_wakeup_fd(self._previous_fd)
            signal.signal(signal.SIGINT, self._previous_handler)
            self._read.shutdown(socket.SHUT_RD)  # ends the watcher's recv
            self._thread.join()
            self._read.close()
            self._write.close()
            self.connections.clear()
        if kind is not None and self.interrupted and not issubclass(kind, KeyboardInterrupt):
            # DuckDB's InterruptException, its "Query interrupted", or what a caller made of them
            raise KeyboardInterrupt from None

    def _handler(self, signum, frame) -> None:
        self._interrupt_all()
        if not self.raised:
            self.raised = True
            raise KeyboardInterrupt

    def _watch(self) -> None:
        while True:
            try:
                data = self._read.recv(64)
            except OSError:
                return
            if not data:
                return
            if signal.SIGINT in data:
                self.signalled = True
                self._interrupt_all()

    def _interrupt_all(self) -> None:
        for con in list(self.connections):
            try:
                con.interrupt()
            except Exception:  # closed already: nothing to stop
                pass


# --- a Ctrl-C that comes once the work is done -----------------------------------------------

_late: LateInterrupts | None = None


class LateInterrupts:
    """Ctrl-C on the command line once a command's work is done: an ingest's snapshot written (its
    commit is the point of no return), a query's rows printed. Nothing is left to stop, so from then
    on a Ctrl-C is recorded instead of raised, and the command ends with exit 130 and one line saying
    what it had done. Raised instead, it would make the command say the run was undone, print a
    traceback, or pass in silence: Python prints and drops a KeyboardInterrupt raised in an exit
    handler, and never handles one that arrives as the process ends (exit 0, not a word).

    One per command line run (``active``): ``warehouse.cli.script`` holds it until the process ends,
    ``main`` called from Python until it returns. Outside a command, ``done`` does nothing and a
    Ctrl-C after a commit is raised as ``KeyboardInterrupt`` (the runner says the run was committed)."""

    def __init__(self) -> None:
        self.line: str | None = None  # what a Ctrl-C after ``done`` leaves
        self.caught = False
        self._armed = False
        self._original = signal.getsignal(signal.SIGINT)  # (what a deferral in between has replaced)

    @staticmethod
    def active() -> tuple[LateInterrupts, bool]:
        """The command's, and whether the caller made it (and ends it with ``end``)."""
        global _late
        if _late is not None:
            return _late, False
        _late = LateInterrupts()
        return _late, True

    def done(self, line: str, caught: bool = False) -> None:
        """The work is done: a Ctrl-C from now on is recorded, and ``line`` is what it says (the first
        line given stays: the commit's, not the command's generic one). ``caught``: one already came."""
        self.caught |= caught
        if self.line is None:
            self.line = line
        if not self._armed and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self._record)
            self._armed = True

    def _record(self, signum, frame) -> None:
        self.caught = True

    def interrupted(self, *, last: bool = False) -> bool:
        """Whether a Ctrl-C came after ``done``. ``last``: the process ends next, so SIGINT is blocked
        first and one that is pending (sent, not yet handled) counts too; none can come after it."""
        if last and self.line is not None and threading.current_thread() is threading.main_thread():
            # (Python runs the handler of a signal that arrived before the block as the call returns)
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            return self.caught or signal.SIGINT in signal.sigpending()
        return self.caught

    def end(self) -> None:
        """Python's own Ctrl-C handling again (``main`` returning to a Python caller)."""
        global _late
        _late = None
        if self._armed:
            signal.signal(signal.SIGINT, self._original)
            self._armed = False


def work_done(line: str, caught: bool = False) -> bool:
    """Tell the command line's ``LateInterrupts``, if a command is running, that its work is done
    (``line``: what a later Ctrl-C says); False outside a command (a Python caller's process)."""
    if _late is None:
        return False
    _late.done(line, caught)
    return True
