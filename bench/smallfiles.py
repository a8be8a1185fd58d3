"""Where a worker's CPU goes on many small inference files: CPU-s per 1,000 files (issue 20, part G).

    python bench/smallfiles.py /tmp/speed-bench/inference-20000 --files 2500 --repeat 5
    python bench/smallfiles.py /tmp/speed-bench/inference-20000 --profile 25   # cProfile, top 25

Takes the first ``--files`` .json files of the corpus (sorted, as a batch of the run holds
them: ``batches.plan_batches`` cuts ~2,500 files per batch at 20,000) and runs them as one
batch in this process (``BatchIngest``, files written to a temporary root), one warm-up run,
then ``--repeat`` runs: the minimum of the process CPU time (user + system), which moves less
with the machine's load than wall time. Also the stages the batch is made of, on the same files
(min of ``--repeat``). With ``--profile N``: one more batch under cProfile, its top N functions
by own time, to stderr. Markdown to stdout.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time

from warehouse.formatkit.registry import Registry
from warehouse.run.worker import BatchIngest, BatchSpec, WorkItem

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import cpu, stage_table  # noqa: E402


def corpus_files(root: str, n: int) -> list[str]:
    found = []
    for d, _dirs, names in os.walk(root):
        found += [os.path.join(d, f) for f in names if f.endswith(".json")]
    return sorted(found)[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--files", type=int, default=2500)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", type=int, default=0, metavar="N")
    a = ap.parse_args()
    paths = corpus_files(a.corpus, a.files)
    per = 1000 / len(paths)
    registry = Registry.installed()
    ingestor = registry.load("trait_interp")
    root = tempfile.mkdtemp(prefix="smallfiles-root-")

    def batch():
        shutil.rmtree(root, ignore_errors=True)
        spec = BatchSpec(run_id="bench", batch_no=1, root=root, registry=registry, items=[WorkItem(p) for p in paths])
        BatchIngest(spec).run()

    def read_all():
        for p in paths:
            with open(p, "rb") as f:
                f.read()

    from warehouse.formats.trait_interp import fast

    docs = []
    for p in paths:
        with open(p, "rb") as f:
            docs.append((p, f.read()))

    batch()  # the first batch of a process pays for first use (imports, allocator pages)
    stages = [
        ("open and read each file", read_all),
        ("document path: map 1,024 files at a time (fast.documents)",
         lambda: [fast.documents(docs[i:i + 1024], "trait_interp") for i in range(0, len(docs), 1024)]),
        ("detection (sniff + fast_document) of each file",
         lambda: [ingestor.sniff(p, d[:8192]) and ingestor.fast_document(p, d[:8192], d) for p, d in docs]),
    ]
    print(f"{len(paths):,} files of {a.corpus}, min of {a.repeat} runs\n")
    stage_table(stages, a.repeat, "batch", "1,000 files", per, ms=".0f", digits=".3f")
    s = cpu(batch, a.repeat)
    print(f"| **the whole batch** (BatchIngest: read, detect, map, write) | {s * 1000:.0f} ms | {s * per:.3f} |")
    if a.profile:
        prof = cProfile.Profile()
        prof.runcall(batch)
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(a.profile)
    shutil.rmtree(root, ignore_errors=True)
    print(f"time: {time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.1f}", file=sys.stderr)


if __name__ == "__main__":
    main()
