"""Export every format from a large warehouse: time, peak memory, output size.

Uses a warehouse built by another bench (default: the 1M steering responses of
bench/queries.py, built there if missing). Each format is exported once into a
scratch directory beside the warehouse, then removed. Peak RSS is over the
process tree (bench/measure.py). Figures go to stdout, progress to stderr.

    python bench/export.py                                  # 1M steering responses
    python bench/export.py --root /tmp/warehouse-bench/afterimage-1000mb-wh
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from measure import run, say  # noqa: E402

FORMATS = ["parquet", "jsonl", "csv", "openai_chat", "trait_interp", "afterimage", "scale", "dataloop"]


def size_of(path: Path) -> tuple[int, int]:
    """Bytes and files under ``path`` (a file or a directory)."""
    if path.is_file():
        return path.stat().st_size, 1
    nbytes = files = 0
    for folder, _, names in os.walk(path):
        for name in names:
            nbytes += os.path.getsize(os.path.join(folder, name))
            files += 1
    return nbytes, files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=None, help="warehouse to export from (default: bench/queries.py's, built if missing)")
    ap.add_argument("--formats", nargs="*", default=FORMATS, choices=FORMATS)
    ap.add_argument("--where", default=None, help="selection (default: every response)")
    ap.add_argument("--memory-limit", default="1GB")
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "warehouse-bench"))
    a = ap.parse_args()
    root = Path(a.root) if a.root else Path(a.corpus) / "queries-1000000-wh"
    if not (root / ".warehouse" / "snapshots").is_dir():
        if a.root:
            sys.exit(f"--root {root}: not a warehouse (no .warehouse/snapshots)")
        say(f"building {root} with bench/queries.py ...")
        subprocess.run([sys.executable, str(Path(__file__).parent / "queries.py"), "--runs", "2", "--corpus", a.corpus],
                       check=True, stdout=subprocess.DEVNULL)
    import warehouse
    from warehouse.exports import formats as export_formats

    con = warehouse.connect(root)
    where = a.where or "true"
    n = con.execute(f"SELECT count(*) FROM responses WHERE {where}").fetchall()[0][0]
    formats = con.execute(f"SELECT string_agg(DISTINCT source_format, ', ') FROM responses WHERE {where}").fetchall()[0][0]
    con.close()
    print(f"{root}: {n:,} responses selected ({formats}), --memory-limit {a.memory_limit}\n")
    print("| format | time | peak RSS | output | files |\n|---|---|---|---|---|")
    scratch = Path(tempfile.mkdtemp(prefix="export-bench-", dir=root.parent))
    try:
        for fmt in a.formats:
            out = scratch / f"out-{fmt}{(export_formats()[fmt].suffixes or ('',))[0]}"  # read back only so named
            say(f"exporting {fmt} ...")
            cmd = [sys.executable, "-m", "warehouse.cli", "export", "--root", str(root), "--format", fmt,
                   "--out", str(out), "--memory-limit", a.memory_limit, "--quiet"]
            if a.where:
                cmd += ["--where", a.where]
            r = run(cmd)
            if r.returncode:
                print(f"| {fmt} | failed (exit {r.returncode}) | {r.peak_rss_mb:.0f} MB | | |", flush=True)
                say(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "no message")
                continue
            nbytes, files = size_of(out)
            print(f"| {fmt} | {r.seconds:.1f} s | {r.peak_rss_mb:.0f} MB | {nbytes / 1e6:,.1f} MB | {files:,} |", flush=True)
            shutil.rmtree(out) if out.is_dir() else out.unlink()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
