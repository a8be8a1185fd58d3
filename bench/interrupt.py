"""Ctrl-C during a large ingest, query or export: how long until it has exited, and what it left.

    python bench/interrupt.py afterimage --mb 200 --after 3 6 9
    python bench/interrupt.py steering --mb 200 --after 3 6
    python bench/interrupt.py afterimage --mb 200 --command sql --after 1 3
    python bench/interrupt.py afterimage --mb 200 --command export --after 1 3
    python bench/interrupt.py inference --files 100000 --after 0.8 0.9 1.0 1.2 1.5 2.0 --hang 30

With ``--command sql`` or ``export`` the corpus is ingested once (kept beside it) and
the signal interrupts a long query over it (every pair of responses)
or a JSONL export of it; "left" then counts the files in the export's folder.

Each run ingests the corpus into a fresh root with the worker pool (``--jobs 2``),
sends SIGINT to the whole process group ``--after`` seconds after the start (as a
terminal's Ctrl-C does), and measures the time from the signal until the ingest
has exited and every process it started is gone. Prints one row per delay: that
time, the exit code, the line printed, and what was left (files under the root,
live processes). Corpora are made by corpora.py under --corpus and reused.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from ingest import corpus as ingest_corpus  # noqa: E402
from measure import _tree, say  # noqa: E402


def corpus(kind: str, args, base: Path) -> Path:
    """The corpus directory, named and made as bench/ingest.py makes it."""
    return ingest_corpus(kind, args, base)[0]


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return None if fields[0] == "Z" else fields[19]
    except OSError:
        return None


def warehouse_of(src: Path) -> Path:
    """A warehouse of the corpus, ingested once and kept beside it, for sql and export."""
    root = src.with_name(src.name + "-wh")
    if not (root / ".complete").exists():
        shutil.rmtree(root, ignore_errors=True)
        say(f"ingesting {src} into {root} ...")
        subprocess.run([sys.executable, "-m", "warehouse.cli", "ingest", str(src), "--root", str(root), "--quiet"], check=True)
        (root / ".complete").touch()
    return root


def command(kind: str, src: Path, work: Path, jobs: int) -> tuple[list[str], Path]:
    """The command to interrupt, and the folder whose leftovers count."""
    wh = [sys.executable, "-m", "warehouse.cli"]
    if kind == "sql":
        return wh + ["sql", "SELECT count(*) FROM responses a, responses b WHERE length(a.response) + length(b.response) = 12345", "--root",
                     str(warehouse_of(src)), "--format", "csv"], work
    if kind == "export":
        return wh + ["export", "--root", str(warehouse_of(src)), "--format", "jsonl", "--out",
                     str(work / "out.jsonl"), "--quiet"], work
    root = work / "wh"
    return wh + ["ingest", str(src), "--root", str(root), "--jobs", str(jobs), "--quiet"], root


def interrupt_once(kind: str, src: Path, after: float, jobs: int, hang_s: float = 60.0) -> dict:
    work = Path(tempfile.mkdtemp(prefix="interrupt-"))
    cmd, root = command(kind, src, work, jobs)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    started = time.monotonic()
    procs: dict[int, str] = {}
    while time.monotonic() - started < after and proc.poll() is None:
        for p in _tree(proc.pid)[1:]:
            procs.setdefault(p, _start_time(p))
        time.sleep(0.02)
    if proc.poll() is not None:
        shutil.rmtree(work, ignore_errors=True)
        return {"after": after, "note": f"the {kind} ended before the signal: use a larger corpus"}
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _out, err = proc.communicate(timeout=hang_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        shutil.rmtree(work, ignore_errors=True)
        return {"after": after, "note": f"HANG: still running {hang_s:g} s after the signal (killed)"}
    exited = time.monotonic() - t0
    while any(_start_time(p) == s and s is not None for p, s in procs.items()) and time.monotonic() - t0 < 60:
        time.sleep(0.01)
    all_gone = time.monotonic() - t0
    alive = [p for p, s in procs.items() if s is not None and _start_time(p) == s]
    left = sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []
    shutil.rmtree(work, ignore_errors=True)
    return {"after": after, "exited": exited, "all_gone": all_gone, "code": proc.returncode,
            "line": err.strip().splitlines()[-1] if err.strip() else "", "lines": len(err.strip().splitlines()),
            "left": left, "alive": alive}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=("afterimage", "steering", "inference"))
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--after", type=float, nargs="+", default=[3.0, 6.0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--command", choices=("ingest", "sql", "export"), default="ingest", help="what to interrupt")
    ap.add_argument("--corpus", default="/tmp/warehouse-bench")
    ap.add_argument("--hang", type=float, default=60.0, metavar="S",
                    help="a run still going this long after the signal is a hang: killed, and said so")
    args = ap.parse_args()
    src = corpus(args.kind, args, Path(args.corpus))
    print("| command | corpus | Ctrl-C after | exited after the signal | every process gone | exit code | lines on stderr | left under the root | processes left |")
    print("|---|---|---|---|---|---|---|---|---|")
    for after in args.after:
        say(f"{args.command} {args.kind}: Ctrl-C after {after:g} s ...")
        r = interrupt_once(args.command, src, after, args.jobs, args.hang)
        if "note" in r:
            print(f"| {args.command} | {src.name} | {after:g} s | {r['note']} | | | | | |")
            continue
        print(f"| {args.command} | {src.name} | {after:g} s | {r['exited']:.2f} s | {r['all_gone']:.2f} s | {r['code']} | "
              f"{r['lines']}: `{r['line']}` | {len(r['left'])} | {len(r['alive'])} |")


if __name__ == "__main__":
    main()
