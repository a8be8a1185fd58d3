"""`warehouse sql "SELECT * FROM responses"` in each output format: time, peak memory, output size.

Uses a warehouse of AfterImage conversations (written by bench/corpora.py and
ingested here when missing). The table format shows 40 rows and counts the rest;
the data formats stream every row. Figures go to stdout, progress to stderr.

    python bench/sql_output.py --mb 200
    python bench/sql_output.py --root /tmp/warehouse-bench/afterimage-1000mb-wh
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from measure import run, say  # noqa: E402

FORMATS = ["table", "csv", "json", "jsonl"]
QUERY = "SELECT * FROM responses"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=None, help="warehouse to query (default: AfterImage --mb MB, built if missing)")
    ap.add_argument("--mb", type=int, default=200, help="size of the AfterImage corpus to build (default 200)")
    ap.add_argument("--formats", nargs="*", default=FORMATS, choices=FORMATS)
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "warehouse-bench"))
    a = ap.parse_args()
    here = Path(__file__).parent
    root = Path(a.root) if a.root else Path(a.corpus) / f"afterimage-{a.mb}mb-wh"
    if not (root / ".warehouse" / "snapshots").is_dir():
        if a.root:
            sys.exit(f"--root {root}: not a warehouse (no .warehouse/snapshots)")
        corpus = Path(a.corpus) / f"afterimage-{a.mb}mb"
        if not corpus.exists():
            say(f"writing {corpus} ...")
            subprocess.run([sys.executable, str(here / "corpora.py"), "afterimage", "--mb", str(a.mb), "--out", str(corpus)],
                           check=True)
        say(f"ingesting into {root} ...")
        subprocess.run(["warehouse", "ingest", str(corpus), "--root", str(root), "--quiet"], check=True)
    print(f"`warehouse sql \"{QUERY}\"` on {root}\n")
    print("| --format | time | peak RSS | output |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out"
        for fmt in a.formats:
            say(f"{fmt} ...")
            cmd = f"warehouse sql {shlex.quote(QUERY)} --root {shlex.quote(str(root))} --format {fmt} > {shlex.quote(str(out))}"
            r = run(["sh", "-c", cmd])
            if r.returncode:
                sys.exit(f"{fmt}: exit {r.returncode}\n{r.stderr}")
            print(f"| {fmt} | {r.seconds:.2f} s | {r.peak_rss_mb:,.0f} MB | {out.stat().st_size / 1e6:,.1f} MB |")


if __name__ == "__main__":
    main()
