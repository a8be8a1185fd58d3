"""A remote root never loses a commit and says what is wrong (issue 18, part D), against the local S3
API server of test_remote: the lease and its takeover, errors on root writes, a writer killed mid-commit,
two writer processes, the listings of the root.

Time is driven through the lease's clock (``lease._now``) or its stored expiry, and the kill through a
patched commit step in a subprocess: nothing here races the machine's speed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import orjson
import pytest

import warehouse
from warehouse.errors import LeaseLost, LockedError, ObjectStoreError
from warehouse.filesystems import FileSystems
from warehouse.store import delta, lease, remote_root, storage
from warehouse.store.lease import Lease
from warehouse.store.storage import Store

from ..conftest import REPO, Warehouse
from ..ground.test_remote import SAMPLES, put

CONVERSATIONS = SAMPLES / "afterimage" / "conversations_20260112_101500.jsonl"


def _lines() -> list[bytes]:
    return CONVERSATIONS.read_bytes().splitlines(keepends=True)


def _expire(url: str) -> None:
    """Time passing for a lease nobody renews: its stored expiry moved into the past (conditionally)."""
    data, e_tag = remote_root.read_versioned(FileSystems(), url)
    remote_root.replace_object(FileSystems(), url, orjson.dumps({**orjson.loads(data), "expires": 0}), e_tag)


# --- 1. the lease ---------------------------------------------------------------------------------


def test_two_takers_of_one_stale_lease_exactly_one_wins(s3, bucket):
    url = f"s3://{bucket}/wh/.warehouse/lock"
    remote_root.create_object(FileSystems(), url, orjson.dumps({"holder": "a dead writer", "token": "t", "expires": 0}))
    one, two = Lease(FileSystems(), url, "wh"), Lease(FileSystems(), url, "wh")
    _, e_tag = remote_root.read_versioned(FileSystems(), url)  # both read the stale lease, then both try to take it over
    assert sorted([one.take(e_tag), two.take(e_tag)]) == [False, True]
    winner = one if one.e_tag else two
    assert orjson.loads(remote_root.read_versioned(FileSystems(), url)[0])["token"] == winner.me["token"]
    # through the whole path: a third taker finds the winner's live lease and is told who holds it
    holder = Lease(FileSystems(), url, "wh").try_take()
    assert holder["holder"] == winner.me["holder"]
    assert re.fullmatch(r"pid \d+ on \S+", holder["holder"])


@pytest.mark.parametrize("body", [b'{"holder": "a script", "expires": "tomorrow"}', b'{"holder": "x"}',
                                  b'{"expires": null}', b"[1]", b"not json"])
def test_a_lock_object_that_is_no_lease_is_taken_over(s3, bucket, body):
    url = f"s3://{bucket}/wh/.warehouse/lock"
    remote_root.create_object(FileSystems(), url, body)
    lease = Lease(FileSystems(), url, "wh")
    assert lease.try_take() is None
    assert orjson.loads(remote_root.read_versioned(FileSystems(), url)[0])["token"] == lease.me["token"]


def test_a_renewal_past_the_expiry_keeps_the_lease_only_if_nobody_took_it(s3, bucket, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(lease, "_now", lambda: clock[0])
    monkeypatch.setattr(lease, "LEASE_SECONDS", 5.0)
    url = f"s3://{bucket}/wh/.warehouse/lock"
    paused = Lease(FileSystems(), url, "wh")
    assert paused.try_take() is None
    # the holder is paused past its expiry; another writer takes the lease over
    clock[0] += 6
    other = Lease(FileSystems(), url, "wh")
    assert other.try_take() is None
    paused.renew()  # the paused run wakes: its renewal is refused, it knows it lost the lease
    assert paused.lost == other.me["holder"]
    with pytest.raises(LeaseLost, match=f"taken over by {re.escape(other.me['holder'])}"):
        paused.check()
    assert orjson.loads(remote_root.read_versioned(FileSystems(), url)[0])["token"] == other.me["token"]
    paused.release()  # a lost lease is not released: it is the other writer's
    assert orjson.loads(remote_root.read_versioned(FileSystems(), url)[0])["token"] == other.me["token"]
    # a renewal late but first wins: a taker that read the lapsed lease before it fails
    other.release()
    late = Lease(FileSystems(), url, "wh")
    assert late.try_take() is None
    clock[0] += 6
    _, lapsed = remote_root.read_versioned(FileSystems(), url)
    late.renew()
    assert late.lost is None
    assert not Lease(FileSystems(), url, "wh").take(lapsed)
    assert Lease(FileSystems(), url, "wh").try_take()["holder"] == late.me["holder"]  # renewed: not expired


def test_a_lease_expiring_decades_ahead_is_shown_and_taken_over_once_nobody_renews_it(s3, bucket, monkeypatch):
    """A writer whose clock is decades fast wrote its lease (or someone wrote one by hand): the holder and
    the expiry are shown, and once the lease has not changed for a whole lease period it is taken over,
    while a live writer, renewing however wrong its clock, keeps it."""
    clock = [1_800_000_000.0]
    monkeypatch.setattr(lease, "_now", lambda: clock[0])
    root = f"s3://{bucket}/wh"
    url = Store(root).lock_path
    decades = clock[0] + 30 * 365 * 86400
    year = f"expires {time.strftime('%Y', time.gmtime(decades))}-"

    def write(body: dict, e_tag: str | None = None) -> None:
        data = orjson.dumps({"holder": "pid 7 on fast-clock", "token": "t", **body})
        remote_root.replace_object(FileSystems(), url, data, e_tag) if e_tag else remote_root.create_object(FileSystems(), url, data)

    write({"expires": decades})
    with pytest.raises(LockedError) as e:
        with Store(root).lock(wait=False):
            pass
    message = str(e.value)
    assert "pid 7 on fast-clock" in message and year in message and "\n" not in message, message
    assert f"aws s3 rm {url}" in message and "clock" in message, message
    waiter = Lease(FileSystems(), url, root)
    assert waiter.try_take()["holder"] == "pid 7 on fast-clock"
    for _ in range(3):  # a live writer with the same wrong clock renews: never taken, however long we wait
        clock[0] += lease.LEASE_SECONDS / 2
        write({"expires": decades + clock[0]}, remote_root.read_versioned(FileSystems(), url)[1])
        assert waiter.try_take() is not None
    clock[0] += lease.LEASE_SECONDS + 1  # nobody renewed it for a whole lease period: its writer is gone
    assert waiter.try_take() is None
    assert orjson.loads(remote_root.read_versioned(FileSystems(), url)[0])["token"] == waiter.me["token"]
    waiter.release()
    # a waiting writer (not --no-wait) gets there by itself: the sleep between looks moves the clock
    write({"expires": decades}, remote_root.read_versioned(FileSystems(), url)[1])
    monkeypatch.setattr(storage.time, "sleep", lambda seconds: clock.__setitem__(0, clock[0] + seconds))
    said = []
    with Store(root).lock(announce=said.append):
        pass
    assert len(said) == 1 and "pid 7 on fast-clock" in said[0] and year in said[0], said


def test_a_run_whose_lease_was_taken_over_refuses_to_commit_and_the_new_holder_repairs(
        s3, bucket, tmp_path, monkeypatch, capsys):
    root = f"s3://{bucket}/wh"
    put(s3, f"s3://{bucket}/src/a.jsonl", _lines()[0])
    w = Warehouse(root)
    w.ingest(f"s3://{bucket}/src")
    before = w.rows("SELECT * FROM responses ORDER BY response_id")
    put(s3, f"s3://{bucket}/src/b.jsonl", _lines()[1])
    store = Store(root)
    original, calls, thief = delta.commit_table, [], Lease(FileSystems(), store.lock_path, root)

    def commit_table(*args, **kwargs):
        version = original(*args, **kwargs)
        calls.append(args[0])
        if len(calls) == 1:  # after the first table's commit, another writer takes the lease over
            assert thief.take(remote_root.read_versioned(FileSystems(), store.lock_path)[1])
        return version

    monkeypatch.setattr(delta, "commit_table", commit_table)
    with pytest.raises(LockedError, match=f"taken over by {re.escape(thief.me['holder'])}.*nothing of this run"):
        warehouse.ingest(f"s3://{bucket}/src", root, progress=False)
    assert len(calls) == 1 and store.snapshot_numbers() == [1]
    # the loser did not repair (the root is the thief's), and deleted its files that no table holds
    assert delta.open_table(calls[0]).version() > store.read_snapshot().version(calls[0].rsplit("/", 1)[1])
    assert w.rows("SELECT * FROM responses ORDER BY response_id") == before  # readers see snapshot 1
    monkeypatch.setattr(delta, "commit_table", original)
    thief.release()
    capsys.readouterr()
    again = warehouse.ingest(f"s3://{bucket}/src", root, progress=False)
    assert "repaired: restored" in capsys.readouterr().err
    assert again.committed and store.snapshot_numbers() == [1, 2]
    assert w.one("SELECT count(DISTINCT source_path) FROM responses") == 2


def _lost_reply(put):
    """``put`` (a remote create or conditional replace) whose request lands but whose reply never comes:
    a timeout after the store applied it, or a client retrying it and the retry being refused."""
    def landed(filesystems, url, *args):
        put(filesystems, url, *args)
        raise ObjectStoreError(f"{url}: cannot reach the endpoint: check AWS_ENDPOINT_URL and the network")
    return landed


def test_a_lease_put_that_landed_without_a_reply_is_still_this_runs(s3, bucket, monkeypatch):
    """Not 'taken over by' the run itself: a renewal, a take and a release whose reply was lost find
    their own token under an ETag they never saw, and go on with it."""
    url = f"s3://{bucket}/wh/.warehouse/lock"
    lease = Lease(FileSystems(), url, "wh")
    assert lease.try_take() is None
    replace = remote_root.replace_object
    monkeypatch.setattr(remote_root, "replace_object", _lost_reply(replace))
    with pytest.raises(ObjectStoreError):  # (the renewing thread tries again at its next turn)
        lease.renew()
    monkeypatch.setattr(remote_root, "replace_object", replace)
    lease.check()  # before a commit step: still this run's lease, renewed
    assert lease.lost is None and lease.e_tag == remote_root.read_versioned(FileSystems(), url)[1]
    monkeypatch.setattr(remote_root, "replace_object", _lost_reply(replace))
    with pytest.raises(ObjectStoreError):
        lease.renew()
    monkeypatch.setattr(remote_root, "replace_object", replace)
    lease.release()  # released, not left to lapse
    assert orjson.loads(remote_root.read_versioned(FileSystems(), url)[0])["released"]
    # a take whose create landed: the next look finds this run's own lease, not a holder to wait for
    other = f"s3://{bucket}/wh2/.warehouse/lock"
    taker = Lease(FileSystems(), other, "wh2")
    create = remote_root.create_object
    monkeypatch.setattr(remote_root, "create_object", _lost_reply(create))
    with pytest.raises(ObjectStoreError):
        taker.try_take()
    monkeypatch.setattr(remote_root, "create_object", create)
    assert taker.try_take() is None
    assert taker.e_tag == remote_root.read_versioned(FileSystems(), other)[1]


def test_a_lease_that_cannot_be_released_leaves_the_committed_run_committed(s3, bucket, monkeypatch, capsys):
    root = f"s3://{bucket}/wh"
    put(s3, f"s3://{bucket}/src/a.jsonl", _lines()[0])
    replace = remote_root.replace_object

    def no_release(filesystems, url, data, e_tag):
        if orjson.loads(data).get("released"):
            raise ObjectStoreError(f"{url}: cannot reach the endpoint: check AWS_ENDPOINT_URL and the network")
        return replace(filesystems, url, data, e_tag)

    monkeypatch.setattr(remote_root, "replace_object", no_release)
    summary = warehouse.ingest(f"s3://{bucket}/src", root, progress=False)
    assert summary.committed and Store(root).snapshot_numbers() == [1]
    err = capsys.readouterr().err
    assert "the lease was not released" in err and "cannot reach the endpoint" in err
    # the next writer waits until the lease lapses (here: at once); a failed run's error is its own, not the release's
    _expire(Store(root).lock_path)
    put(s3, f"s3://{bucket}/src/b.jsonl", b"{not json\n")
    with pytest.raises(warehouse.StrictModeError):
        warehouse.ingest(f"s3://{bucket}/src", root, progress=False, strict=True)
    assert "the lease was not released" in capsys.readouterr().err


def test_a_compact_whose_lease_was_taken_over_stops_before_its_next_commit_step(s3, bucket, monkeypatch):
    root = f"s3://{bucket}/wh"
    w = Warehouse(root)
    for i, line in enumerate(_lines()[:2]):  # two runs: small files to merge
        put(s3, f"s3://{bucket}/src/{i}.jsonl", line)
        w.ingest(f"s3://{bucket}/src")
    store = Store(root)
    pinned = store.read_snapshot().tables
    thief, original, opened = Lease(FileSystems(), store.lock_path, root), delta.open_table, []

    def open_table(uri, *args, **kwargs):
        opened.append(uri)
        if len(opened) == 1:  # compact has the lease; another writer takes it over
            assert thief.take(remote_root.read_versioned(FileSystems(), store.lock_path)[1])
        return original(uri, *args, **kwargs)

    monkeypatch.setattr(delta, "open_table", open_table)
    with pytest.raises(LeaseLost, match=f"taken over by {re.escape(thief.me['holder'])}"):
        warehouse.compact(root, progress=False)
    monkeypatch.setattr(delta, "open_table", original)
    assert store.snapshot_numbers() == [1, 2]
    for name, table in pinned.items():  # no table committed past its pin, none repaired by the loser
        assert delta.open_table(store.table_uri(name)).version() == table["version"], name
    assert orjson.loads(remote_root.read_versioned(FileSystems(), store.lock_path)[0])["token"] == thief.me["token"]


# --- 2. errors on root writes ---------------------------------------------------------------------


def _cli(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "warehouse.cli", *args], env=env, capture_output=True, text=True,
                          cwd=REPO, timeout=300)


def _env(s3, **changes) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | s3.env() | changes
    return env


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "\x1b[" not in stderr and "↳" not in stderr, stderr
    return lines[0]


def test_a_wrong_secret_and_a_missing_bucket_for_a_remote_root_are_one_line(s3, bucket):
    src = str(SAMPLES / "afterimage")
    r = _cli(["ingest", src, "--root", f"s3://{bucket}/wh"], _env(s3, AWS_SECRET_ACCESS_KEY="not-the-secret-123"))
    line = _one_line(r.stderr)
    assert r.returncode == 1 and line.startswith(f"error: s3://{bucket}/wh: access denied "
                                                 f"(bucket '{bucket}', key 'wh'): check the credentials")
    assert "AWS_SECRET_ACCESS_KEY" in line and "not-the-secret-123" not in r.stderr
    r = _cli(["ingest", src, "--root", "s3://no-such-bucket-here/wh"], _env(s3))
    assert r.returncode == 1 and _one_line(r.stderr).startswith(
        "error: s3://no-such-bucket-here/wh/.warehouse/lock: no such bucket 'no-such-bucket-here'")


@pytest.mark.parametrize("case", ["endpoint userinfo", "plain http", "storage option", "signed url", "url userinfo",
                                  "root userinfo"])
def test_no_secret_from_any_source_is_printed(s3, tmp_path, case):
    """A password in the endpoint's userinfo (environment or --storage-option, percent-encoded or not), a
    signed URL's signature, keys written into an s3:// URL: none of it in any line the user sees."""
    unreachable = "http://user:hunter2%40xy@127.0.0.1:9"  # nothing listens on port 9: refused at once
    env, args = _env(s3, AWS_ENDPOINT_URL=unreachable), ["ingest", "s3://b/x", "--root", str(tmp_path / "wh")]
    if case == "plain http":
        del env["AWS_ALLOW_HTTP"]
    elif case == "storage option":
        env = _env(s3)
        args = ["sql", "--root", "s3://b/wh", "SELECT 1", "--storage-option", f"aws_endpoint_url={unreachable}"]
    elif case == "signed url":
        args[1] = "https://h.example/x.json?X-Amz-Credential=AKID%2Fx&X-Amz-Signature=hunter2%40xy"
    elif case == "url userinfo":
        env, args[1] = _env(s3), "s3://AKIDX:hunter2%40xy@b/x"
    elif case == "root userinfo":
        env, args = _env(s3), ["sql", "--root", "s3://AKIDX:hunter2%40xy@b/wh", "SELECT 1"]
    r = _cli(args, env)
    line = _one_line(r.stderr)
    assert r.returncode in (1, 2) and line.startswith("error: "), r.stderr
    assert "hunter2" not in r.stderr + r.stdout and "@xy" not in r.stderr, r.stderr
    assert "***" in line or case == "plain http" and "http://user:***@127.0.0.1:9" in line, line
    assert s3.secret not in r.stderr


def _limited_keys(s3, bucket: str, denied: str) -> dict:
    """Keys of a user who may do anything but put objects matching ``denied`` (an IAM Deny, as a bucket
    policy refusing writes would): a store that refuses a write midway through a run."""
    import boto3

    iam = boto3.client("iam", endpoint_url=s3.endpoint, aws_access_key_id=s3.key_id,
                       aws_secret_access_key=s3.secret, region_name="us-east-1")
    user = f"limited-{bucket}-{abs(hash(denied)) % 10**6}"
    iam.create_user(UserName=user)
    iam.put_user_policy(UserName=user, PolicyName="p", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "*", "Resource": "*"},
        {"Effect": "Deny", "Action": "s3:PutObject", "Resource": f"arn:aws:s3:::{bucket}/{denied}"}]}))
    key = iam.create_access_key(UserName=user)["AccessKey"]
    return {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}


@pytest.mark.parametrize("denied, key", [
    ("wh/responses/_delta_log/*", "wh/responses/_delta_log/00000000000000000000.json"),  # the Delta commit
    ("wh/responses/*.parquet", "wh/responses/"),  # a worker's data file
])
def test_a_bucket_refusing_writes_midway_is_one_line_naming_the_key(s3, bucket, denied, key):
    env = _env(s3, **_limited_keys(s3, bucket, denied))
    r = _cli(["ingest", str(SAMPLES / "afterimage"), "--root", f"s3://{bucket}/wh"], env)
    line = _one_line(r.stderr)
    assert r.returncode == 1, r.stderr
    assert line.startswith(f"error: s3://{bucket}/{key}") and f"access denied (bucket '{bucket}', key '{key}" in line
    assert "may read and write the bucket" in line
    assert not Store(f"s3://{bucket}/wh").exists()  # nothing committed


# --- 3. a writer killed mid-commit; two writer processes -----------------------------------------

_KILLED_AFTER_TWO_TABLES = """
import os, signal, sys
import warehouse
from warehouse.store import delta
original, done = delta.commit_table, []
def commit_table(*args, **kwargs):
    version = original(*args, **kwargs)
    done.append(args[0])
    if len(done) == 2:  # between two table commits, before the snapshot
        os.kill(os.getpid(), signal.SIGKILL)
    return version
delta.commit_table = commit_table
warehouse.ingest(sys.argv[1], sys.argv[2], progress=False)
"""


def test_a_writer_killed_between_table_commits_is_repaired_by_the_next_run(s3, bucket, capsys):
    root, src = f"s3://{bucket}/wh", f"s3://{bucket}/src"
    put(s3, f"{src}/a.jsonl", _lines()[0])
    w = Warehouse(root)
    w.ingest(src)
    before = w.rows("SELECT * FROM responses ORDER BY response_id")
    put(s3, f"{src}/b.jsonl", _lines()[1])
    killed = subprocess.run([sys.executable, "-c", _KILLED_AFTER_TWO_TABLES, src, root], env=_env(s3), cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    store = Store(root)
    assert store.snapshot_numbers() == [1]
    moved = [d.name for d in store.table_dirs()
             if delta.is_table(d) and delta.open_table(d).version() > store.read_snapshot().version(d.name)]
    assert moved  # a table committed past the snapshot
    assert w.rows("SELECT * FROM responses ORDER BY response_id") == before  # readers see snapshot 1
    # its lease is live until it expires: a writer is told who holds it
    with pytest.raises(LockedError, match=r"being written by pid \d+ on "):
        warehouse.ingest(src, root, progress=False, wait=False)
    _expire(store.lock_path)
    capsys.readouterr()
    again = warehouse.ingest(src, root, progress=False)
    err = capsys.readouterr().err
    assert "repaired: restored" in err and "files of runs that did not finish" in err
    assert again.committed and store.snapshot_numbers() == [1, 2]
    assert w.one("SELECT count(DISTINCT source_path) FROM responses") == 2
    for name in moved:  # every table is at the version its snapshot pins (restores included)
        assert delta.open_table(store.table_uri(name)).version() == store.read_snapshot().version(name)


def test_two_writer_processes_on_one_remote_root_both_land(s3, bucket):
    root = f"s3://{bucket}/wh"
    for name, line in zip(("one", "two"), _lines()):
        put(s3, f"s3://{bucket}/{name}/x.jsonl", line)
    env = _env(s3)
    writers = [subprocess.Popen([sys.executable, "-m", "warehouse.cli", "ingest", f"s3://{bucket}/{name}",
                                 "--root", root], env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for name in ("one", "two")]
    outs = [p.communicate(timeout=300) for p in writers]
    assert [p.returncode for p in writers] == [0, 0], outs
    w = Warehouse(root)
    assert sorted(r["source_path"].split("/")[-2] for r in w.rows("SELECT DISTINCT source_path FROM responses")) == [
        "one", "two"]
    store = Store(root)
    assert store.snapshot_numbers() == [1, 2]
    assert {s.run_id for s in store.snapshots()} and store.snapshots()[1].tables  # both runs' snapshots


# --- 4. listings and bookkeeping ------------------------------------------------------------------


def test_a_root_url_answers_whether_it_exists_and_is_a_prefix(s3, bucket):
    put(s3, f"s3://{bucket}/wh/x.json", b"{}")
    assert Store(f"s3://{bucket}/wh").root.is_dir()
    nothing = Store(f"s3://{bucket}/nothing").root
    assert not nothing.exists() and not nothing.is_dir()
    an_object = Store(f"s3://{bucket}/wh/x.json").root
    assert an_object.exists() and not an_object.is_dir()
    with pytest.raises(warehouse.UsageError, match="exists and is not a directory"):
        warehouse.ingest(str(CONVERSATIONS), f"s3://{bucket}/wh/x.json", progress=False)


def test_the_table_folders_of_a_remote_root_cost_one_listing_each(s3, bucket):
    root = f"s3://{bucket}/wh"
    put(s3, f"s3://{bucket}/src/a.jsonl", _lines()[0])
    Warehouse(root).ingest(f"s3://{bucket}/src")
    # a folder a run that died before its first table commit left: data files, no _delta_log
    put(s3, f"{root}/responses_new/20260101T000000000Z-abcd-b00001.parquet", b"PAR1")
    store = Store(root)
    s3.start_recording()
    dirs = store.table_dirs()
    listings = [q for m, q in s3.recorded() if m == "GET" and "list-type=2" in q]
    folders = [n for n in remote_root.list_folders(FileSystems(), root) if not n.startswith(".")]
    assert f"{root}/responses_new" in dirs
    assert len(listings) == 1 + len(folders), listings  # the root, then each table folder once


def test_checks_reads_urls_as_remote_does():
    from warehouse import checks

    assert checks.root("S3://bucket/wh") == "S3://bucket/wh"
    with pytest.raises(warehouse.UsageError, match="not gs://"):
        checks.root("gs://bucket/wh")
    assert not hasattr(checks, "URL")  # one URL pattern: urlpaths.URL


def test_a_local_fault_during_a_run_into_a_remote_root_keeps_the_local_message():
    """A full local disk while ingesting into a bucket names the local file, not the bucket."""
    import errno

    from warehouse.errors import ObjectStoreError, StorageError
    from warehouse.run.failure import said_in_one_line

    class Root:  # what said_in_one_line asks of a store
        remote = True
        root = "s3://b/wh"
        filesystems = FileSystems()

        def exists(self):
            return True

    with pytest.raises(StorageError) as local:
        with said_in_one_line(Root(), "run"):
            raise OSError(errno.ENOSPC, "No space left on device", "/tmp/part-1.parquet")
    assert not isinstance(local.value, ObjectStoreError)
    assert "/tmp/part-1.parquet" in str(local.value) and "No space left" in str(local.value)
    with pytest.raises(ObjectStoreError):
        with said_in_one_line(Root(), "run"):
            raise OSError("Access Denied")
