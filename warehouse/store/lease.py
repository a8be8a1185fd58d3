"""The writer's lease on an object-storage root: the object .warehouse/lock, created by a conditional put, holding
its holder, run and expiry, renewed while the run lasts; a lease past its expiry (a writer that died) is taken
over (docs/storage.md). A local root's lock is a flock instead (Store.lock)."""

from __future__ import annotations

import os
import secrets
import time

import orjson

from warehouse.errors import LeaseLost, Superseded
from warehouse.filesystems import FileSystems
from warehouse.store import remote_root

#: how long a writer's lease on a remote root lasts without renewal; renewed every third of it
LEASE_SECONDS = 60.0


#: how often a waiting writer looks at the lease again
LEASE_POLL_SECONDS = 1.0


def _now() -> float:
    """The clock leases are judged by (one name, so tests can drive time without sleeping)."""
    return time.time()


class Lease:
    """A writer's lease on a remote root: the object ``.warehouse/lock``.

    It holds ``{"holder", "token", "expires"}`` (or ``"released": true``). Every change is a
    conditional put on what was read, so two writers can never both believe they hold it:

    * taking it: create the object if there is none (``If-None-Match: *``), else replace a
      released or expired lease only if it is still the version read (``If-Match: <ETag>``);
      of two takers of one stale lease exactly one succeeds. Expired: past its expiry, or seen
      unchanged for longer than ``LEASE_SECONDS`` by the taker's clock (``_unrenewed``: an
      expiry decades ahead, from a writer with a wrong clock, must not hold the root for ever);
    * renewing (a thread, every third of ``LEASE_SECONDS``, and before each commit step:
      ``check``): replace it only if it is still the version this run last wrote;
    * releasing: replace it with a released lease, on the same condition. The object stays:
      object_store (obstore) has no conditional delete, and an unconditional one could delete
      the lease of a writer that took over meanwhile. Only a run that leaves no warehouse deletes
      it (``forget``), right after renewing it: nobody can take it over for ``LEASE_SECONDS`` then.

    A renewal that finds another version means the lease was taken over: ``lost`` says by
    whom, and ``check`` raises LeaseLost.
    """

    def __init__(self, filesystems: FileSystems, url: str, root: str):
        import socket
        import threading

        self.filesystems = filesystems
        self.url, self.root = url, root
        self.me = {"holder": f"pid {os.getpid()} on {socket.gethostname()}", "token": secrets.token_hex(8)}
        self.e_tag: str | None = None
        self.lost: str | None = None  # who holds it now, once a renewal found it taken over
        self._mutex = threading.Lock()  # the renewing thread and check() take turns
        #: another writer's lease as this one last read it (bytes and ETag), and since when it has not changed
        self._watched: tuple[tuple[bytes, str | None], float] | None = None

    def _body(self, **extra) -> bytes:
        return orjson.dumps({**self.me, "expires": _now() + LEASE_SECONDS, **extra})

    def try_take(self) -> dict | None:
        """Take the lease if it is free, released or expired (None); else the holder's lease as read."""
        try:
            self.e_tag = remote_root.create_object(self.filesystems, self.url, self._body())
            return None
        except FileExistsError:
            pass
        found = remote_root.read_versioned(self.filesystems, self.url)
        if found is None:
            return self.try_take()  # deleted since we tried to create it (by hand, or an older version): again
        if self._adopt(found):
            return None
        other = _parse_lease(found[0])
        if other.get("released") or other.get("expires", 0) < _now() or self._unrenewed(found):
            # A released lease, or one its writer stopped renewing (it died). Take it over.
            if self.take(found[1]):
                return None
            found = remote_root.read_versioned(self.filesystems, self.url)  # another taker won: say who holds it now
            other = _parse_lease(found[0]) if found else {}
        return other

    def _unrenewed(self, found: tuple[bytes, str | None]) -> bool:
        """The lease as read has not changed for longer than a lease lasts, by this writer's own clock.

        A lease's expiry is the holder's clock's: a writer whose clock is decades fast writes a lease
        that never expires by ours, and would block every writer for ever. A live holder renews every
        third of ``LEASE_SECONDS``, whatever its clock, so a lease unchanged for longer is nobody's."""
        now = _now()
        if self._watched is None or self._watched[0] != found:
            self._watched = (found, now)
        return now - self._watched[1] > LEASE_SECONDS

    def take(self, e_tag: str | None) -> bool:
        """Replace the lease read as version ``e_tag`` with ours; False when it changed since."""
        try:
            self.e_tag = remote_root.replace_object(self.filesystems, self.url, self._body(), e_tag)
            return True
        except Superseded:
            return False

    def _adopt(self, found: tuple[bytes, str | None] | None) -> bool:
        """Whether the lease as read (``read_versioned``) is this run's live lease; if so its ETag is
        the one later puts are conditional on. A put of ours can land while its reply is lost (a
        timeout; or the client retried it and the retry was refused because the first attempt had
        landed): the object is then ours under an ETag we never saw."""
        if found is None:
            return False
        lease = _parse_lease(found[0])
        if lease.get("token") != self.me["token"] or lease.get("released"):
            return False
        self.e_tag = found[1]
        return True

    def _replace(self, body: bytes) -> str | None:
        """Replace our lease with ``body`` if it is still ours: None, else who holds it now."""
        while True:
            tried = self.e_tag
            try:
                self.e_tag = remote_root.replace_object(self.filesystems, self.url, body, tried)
                return None
            except Superseded:
                found = remote_root.read_versioned(self.filesystems, self.url)
                if found is not None and found[1] != tried and self._adopt(found):
                    continue  # ours under an ETag we never saw: the put again, on that one
                return _parse_lease(found[0]).get("holder", "another writer") if found else "nobody (it was deleted)"

    def renew(self) -> None:
        """Push the expiry ``LEASE_SECONDS`` ahead, if the lease is still ours."""
        with self._mutex:
            if self.lost is None:
                self.lost = self._replace(self._body())

    def check(self) -> None:
        """Before a commit step: renew now; LeaseLost when the lease is another writer's."""
        self.renew()
        if self.lost is not None:
            raise LeaseLost(
                f"{self.root}: this run's lease ({self.url}) was taken over by {self.lost}: the run was not heard "
                f"from for over {LEASE_SECONDS:g} s (paused, or cut off from the store), so the root was given to "
                "another writer; nothing of this run was committed (the new holder repairs the tables): run again"
            )

    def forget(self) -> None:
        """Delete the lease, if it is still ours: renewed first, so for ``LEASE_SECONDS`` nobody can have
        taken it over, and the unconditional delete is of this run's lease. Nothing is renewed or
        released after it (a writer waiting creates its own)."""
        with self._mutex:
            if self.lost is None:
                self.lost = self._replace(self._body())
            if self.lost is None:
                remote_root.delete_object(self.filesystems, self.url)
                self.lost = "nobody (this run deleted it, leaving no warehouse)"

    def release(self) -> None:
        """Mark the lease released, if it is still ours (taken over at the very end, it is the new holder's)."""
        with self._mutex:
            if self.lost is None:
                self._replace(self._body(released=True, expires=0))


def holder_of(lease: dict) -> str:
    """Who holds a lease and until when, as a message says it; an expiry further ahead than a lease
    lasts is said to be wrong (the holder's clock, or a lease written by hand)."""
    holder, expires = lease.get("holder", "another writer"), lease.get("expires", 0)
    try:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires))
    except (OverflowError, OSError, ValueError):
        when = f"at {expires!r}"
    ahead = expires - _now()
    if ahead <= LEASE_SECONDS + LEASE_POLL_SECONDS:
        return f"{holder}, lease expires {when}"
    return (f"{holder}, lease expires {when}: {_span(ahead)} ahead, more than a lease lasts ({LEASE_SECONDS:g} s), so "
            "the holder's clock is wrong or the lease was written by hand; it is taken over once it has not "
            "changed for that long")


def _span(seconds: float) -> str:
    if seconds >= 1000 * 365 * 86400:
        return "over 1,000 years"
    for unit, size in (("years", 365 * 86400), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def _parse_lease(data: bytes) -> dict:
    """The lease as read; one that is not a lease (not JSON, no numeric expiry: written by hand or by
    something else) counts as expired, so a writer takes it over instead of failing on it."""
    try:
        lease = orjson.loads(data)
    except orjson.JSONDecodeError:
        lease = None
    if not isinstance(lease, dict):
        return {"holder": "an unreadable lease", "expires": 0}
    expires = lease.get("expires")
    if isinstance(expires, bool) or not isinstance(expires, (int, float)):
        lease["expires"] = 0
    return lease
