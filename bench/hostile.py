"""Hostile inputs: what the ingest says about each, and how much memory it takes.

    python bench/hostile.py [--big-mb 300] [--out DIR]

Each case is written to its own directory and ingested by a fresh process
(`warehouse ingest --jobs 1`, so the whole run is one process and its peak RSS
is the run's). Prints one table row per case: files, records ingested and
quarantined, the first quarantine message, the note on stderr, peak RSS and time.
Progress goes to stderr; the table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEER = "experiments/x/steering/c/t/instruct/response__5/steering/responses/residual/probe"
RUNNER = r"""
import resource, sys, json
from warehouse.cli import main
code = main(sys.argv[2:])
json.dump({"code": code, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}, open(sys.argv[1], "w"))
"""


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def afterimage_row(i: int, text: str = "fine") -> dict:
    return {"conversations": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": text}],
            "metadata": {}, "persona": "A curious user"}


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def build_cases(base: Path, big_mb: int) -> dict[str, tuple[Path, str, list[str]]]:
    """name -> (directory, what it is, extra ingest args)."""
    cases = {}

    d = base / "invalid_utf8"
    good = json.dumps(afterimage_row(1)).encode()
    write(d / "rows.jsonl", good + b"\n" + '{"conversations": [{"role": "user", "content": "caf\xe9"}]}'.encode("latin-1") + b"\n" + good + b"\n")
    cases["invalid UTF-8 line in JSONL"] = (d, "latin-1 bytes in line 2 of 3", [])

    d = base / "deep_nesting"
    write(d / "rows.jsonl", json.dumps(afterimage_row(1)) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    deep = {"prompt": "p", "response": "r", "tree": json.loads("[" * 600 + "]" * 600)}
    write(d / STEER / "L1_c1.0.json", json.dumps([deep]))
    cases["deeply nested JSON"] = (d, "a 100,000-deep array line; a record with a 600-deep field", [])

    d = base / "huge_line"
    path = d / "rows.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(json.dumps(afterimage_row(1)).encode() + b"\n")
        f.write(b'{"conversations": [{"role": "user", "content": "')
        chunk = b"x" * (1 << 20)
        for _ in range(big_mb):
            f.write(chunk)
        f.write(b'"}]}\n')
        f.write(json.dumps(afterimage_row(3)).encode() + b"\n")
    cases[f"single JSONL line of {big_mb} MB"] = (d, "line 2 is one record of that size", [])

    d = base / "nan"
    write(d / STEER / "L2_c1.0.json", '[{"prompt": "p", "response": "r", "trait_score": NaN, "coherence_score": Infinity},'
                                      ' {"prompt": "q", "response": "s", "trait_score": -Infinity, "coherence_score": 1.0}]')
    cases["NaN and Infinity"] = (d, "scores written by Python's json", [])

    d = base / "huge_array"
    path = d / STEER / "L3_c1.0.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    element = {"prompt": "How does the X7 processor work?", "response": "word " * 200, "system_prompt": None,
               "trait_score": 1.0, "coherence_score": 50.0}
    blob = json.dumps(element).encode()
    n = (big_mb << 20) // (len(blob) + 2)
    with open(path, "wb") as f:
        f.write(b"[")
        for i in range(n):
            f.write(blob if i == 0 else b"," + blob)
        f.write(b"]")
    cases[f"one JSON array of {big_mb} MB"] = (d, f"{n:,} elements in one steering array", [])

    d = base / "bom"
    write(d / "rows.jsonl", b"\xef\xbb\xbf" + json.dumps(afterimage_row(1)).encode() + b"\n")
    write(d / STEER / "L4_c1.0.json", b"\xef\xbb\xbf" + json.dumps([{"prompt": "p", "response": "r"}]).encode())
    cases["UTF-8 BOM"] = (d, "a BOM before a JSONL file and a JSON file", [])

    d = base / "empty"
    write(d / "rows.jsonl", b"")
    write(d / STEER / "L5_c1.0.json", b"")
    write(d / STEER / "L6_c1.0.json", b"   \n")
    cases["empty files"] = (d, "an empty .jsonl, an empty .json, a blank .json", [])

    d = base / "mixed"
    write(d / STEER / "L7_c1.0.json", '[{"prompt": "p", "response": "r"}, 3, "text", null, [1, 2], {"prompt": "q", "response": "s"}]')
    cases["array with mixed element types"] = (d, "objects, a number, a string, null, a list", [])

    d = base / "symlink_loop"
    write(d / "a" / STEER / "L8_c1.0.json", '[{"prompt": "p", "response": "r"}]')
    os.symlink(d, d / "a" / "loop")
    os.symlink(d / "a" / "missing.json", d / "a" / "dangling.json")
    cases["symlink loop and a dangling link"] = (d, "a/loop -> the tree itself", [])

    d = base / "unreadable"
    write(d / STEER / "L9_c1.0.json", '[{"prompt": "p", "response": "r"}]')
    locked = write(d / STEER / "L10_c1.0.json", '[{"prompt": "p", "response": "r"}]')
    locked.chmod(0)
    os.chmod(d / STEER, 0o755)
    cases["unreadable file (mode 000)"] = (d, "one of two files has no read permission", [])

    d = base / "repeated_key"
    key = "k" * (1 << 20)
    parts = [{"mimetype": "application/text", "value": f"part {i}"} for i in range(300)]
    write(d / "prompt.json", json.dumps({"shebang": "dataloop", "metadata": {"dltype": "prompt"}, "prompts": {key: parts}}))
    cases["Dataloop prompt with a 1 MB key and 300 parts"] = (d, "every part's locator names the key", [])

    d = base / "huge_key"
    key = "k" * (50 << 20)
    write(d / "prompt.json", '{"shebang": "dataloop", "metadata": {"dltype": "prompt"}, "prompts": {"%s": "not a list"}}' % key)
    write(d / "experiments/x/inference/v/responses/s/1.json", '{"%s": 1}' % key)
    cases["a 50 MB JSON key in a bad record"] = (d, "the key is in the quarantine message and locator", [])

    # The AfterImage fast path against the record path (issues 13.1, 14.6, 14.11): both give these rows.
    d = base / "fast_path_utf8"
    write(d / "rows.jsonl", json.dumps(afterimage_row(1)).encode() + b"\n"
          + b'{"conversations": [{"role": "user", "content": "caf\xe9"}]}\n')
    cases["invalid UTF-8 in an AfterImage JSONL (fast path)"] = (d, "a good line, then a latin-1 one", [])

    d = base / "fast_path_pieces"
    path = d / "rows.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(afterimage_row(1, "word " * 100)).encode() + b"\n"
    bad = b'{"conversations": [{"role": "user", "content": "caf\xe9"}]}\n'
    n = (80 << 20) // len(line)
    with open(path, "wb") as f:
        for i in range(n):
            f.write(bad if i in (10, n - 10) else line)
    cases["invalid UTF-8 in a JSONL read in pieces"] = (d, f"80 MB, {n:,} lines, latin-1 in the first and last piece", [])

    d = base / "fast_path_numbers"
    row = '{"conversations": [{"role": "user", "content": "q"}], "final_score": %s}'
    write(d / "rows.jsonl", "\n".join(row % v for v in ("0.5", "1" + "0" * 399, "-0.0", "Inf", "-Inf")) + "\n")
    write(d / "row.json", row % ("1" + "0" * 399))
    cases["numbers the fast path read differently"] = (
        d, "final_score 0.5, a 400-digit integer, -0.0, Inf, -Inf (.jsonl); the 400-digit one in a .json", [])

    d = base / "fast_path_split_document"
    one = '{"conversations": [{"role": "user", "content": "q"}]}'
    write(d / "rows.jsonl", f'{one}\n{{"conversations": [\n{{"role": "user", "content": "x"}}]}}\n{one}{one}\n')
    cases["a JSON document over two lines"] = (d, "lines 2-3 one object, line 4 two: as many objects as lines", [])

    d = base / "streamed_utf8"
    elements = [json.dumps(afterimage_row(i, "word " * 100)).encode() for i in range(5)]
    elements.insert(3, b'{"conversations": [{"role": "user", "content": "caf\xe9"}]}')
    write(d / "rows.json", b"[" + b",".join(elements) + b"]")
    cases["invalid UTF-8 in a streamed array"] = (d, "element 3 of 6 latin-1, --max-record-mb 0.001", ["--max-record-mb", "0.001"])
    return cases


def run_case(directory: Path, root: Path, extra: list[str], as_nobody: bool) -> dict:
    stats_file = root.parent / f"{root.name}.stats.json"
    cmd = [sys.executable, "-c", RUNNER, str(stats_file), "ingest", str(directory), "--root", str(root), "--jobs", "1", *extra]
    if as_nobody:  # root reads any file: drop to an unprivileged user to see a permission error
        p = directory
        while p != p.parent and str(p).startswith(tempfile.gettempdir() + "/"):
            os.chmod(p, 0o755)
            p = p.parent
        os.chmod(root.parent, 0o777)
        cmd = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", *cmd]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    seconds = time.monotonic() - t0
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {"code": proc.returncode, "maxrss_kb": 0}
    summary = {"code": stats["code"], "rss_mb": stats["maxrss_kb"] / 1024, "seconds": seconds, "stderr": proc.stderr.strip()}
    if (root / ".warehouse" / "snapshots").is_dir():
        import warehouse

        con = warehouse.connect(root)
        summary["files"], summary["ingested"], summary["quarantined"] = con.execute(
            "SELECT count(*), sum(records_ingested), sum(records_quarantined) FROM sources").fetchone()
        summary["messages"] = [r[0] for r in con.execute(
            "SELECT DISTINCT stage || ': ' || error FROM quarantine ORDER BY 1").fetchall()]
        # what repetition costs: the longest locator, message and the total of source_locator written
        summary["longest"] = con.execute(
            "SELECT max(length(locator)), max(length(error)) FROM quarantine").fetchone()
        summary["locator_mb"] = sum(con.execute(f"SELECT coalesce(sum(length(source_locator)), 0) FROM {t}").fetchone()[0]
                                    for t in ("responses", "turns", "annotations")) / 2**20
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--big-mb", type=int, default=300, help="size of the huge line and the huge array (default 300)")
    ap.add_argument("--out", help="keep the generated cases here (default: a temporary directory, removed)")
    ap.add_argument("--only", help="run only the cases whose name contains this text")
    args = ap.parse_args()
    base = Path(args.out or tempfile.mkdtemp(prefix="hostile-"))
    say(f"writing cases under {base} ...")
    cases = build_cases(base / "cases", args.big_mb)
    print("| case | input | files | ingested | quarantined | what the warehouse says | peak RSS | time |")
    print("|---|---|---|---|---|---|---|---|")
    sizes = []
    for name, (directory, what, extra) in cases.items():
        if args.only and args.only not in name:
            continue
        say(f"- {name}")
        root = base / "roots" / directory.name
        root.parent.mkdir(parents=True, exist_ok=True)
        s = run_case(directory, root, extra, as_nobody=("unreadable" in directory.name and os.geteuid() == 0))
        said = "; ".join(m[:150] for m in s.get("messages", [])) or "(nothing quarantined)"
        notes = [line for line in s["stderr"].splitlines() if line.startswith(("skipped", "error"))]
        if notes:
            said += "; note: " + "; ".join(notes)
        print(f"| {name} | {what} | {s.get('files', '-')} | {s.get('ingested', '-')} | {s.get('quarantined', '-')} "
              f"| {said} | {s['rss_mb']:.0f} MB | {s['seconds']:.1f} s |", flush=True)
        longest = s.get("longest") or (None, None)
        sizes.append(f"| {name} | {longest[0] or 0:,} | {longest[1] or 0:,} | {s.get('locator_mb', 0):.2f} MB |")
    # what a locator or a message repeats (records.py bounds them): the longest of each, and all locators written
    print("\n| case | longest quarantine.locator (chars) | longest quarantine.error (chars) | source_locator written |")
    print("|---|---|---|---|")
    print("\n".join(sizes))
    if not args.out:
        for p in base.rglob("*"):
            try:
                p.chmod(0o755 if p.is_dir() else 0o644)
            except OSError:
                pass
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
