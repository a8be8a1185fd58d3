"""Ingest with two commits of the warehouse, interleaved in one run: wall time, CPU time, peak RSS, rows.

    python bench/compare.py a85de84^ HEAD --corpus afterimage-100mb inference-20000 --runs 3
    python bench/compare.py d705fa7 HEAD --corpus inference-100000 --reingest --runs 4

Each commit is checked out once (``git worktree add --detach``) under --work, laid out
as installed, and run with its checkout first on PYTHONPATH by this interpreter (so
both use the same installed libraries; formats are found through the current
install's entry points, so both commits must register the same ones). Commands run
from --work: ``python -m`` puts the current directory first on sys.path, so from a
checkout both sides would import that checkout. Runs alternate between the commits
(the order reversed every round), each into a fresh root, so
a machine whose load changes during the run treats both alike. Corpora are folders
made by corpora.py under --corpus-dir (bench/ingest.py makes them). Prints one
markdown row per corpus and commit: medians of wall time, CPU time (user + system,
every process of the tree) and peak RSS, and the rows each table ended with, which
must be equal. ``--reingest`` times an unchanged re-ingest instead: each commit ingests
the corpus once (untimed) into its own root, then every timed run ingests it again.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from measure import median_of, run, say  # noqa: E402

COUNT = ("SELECT (SELECT count(*) FROM responses) || '/' || (SELECT count(*) FROM turns) || '/' || "
         "(SELECT count(*) FROM evaluations) || '/' || (SELECT count(*) FROM quarantine)")


def checkout(rev: str, work: Path) -> Path:
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", rev], capture_output=True, text=True, check=True).stdout.strip()
    where = work / sha[:12]
    if not where.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(where), sha], check=True)
        installed_layout(where)
    return where


def installed_layout(tree: Path) -> None:
    """Link each folder that pyproject.toml's package-dir maps (ingest/ -> warehouse/formats) where the
    package is imported from: on PYTHONPATH the checkout must be laid out as installed, or the
    current install's mapping would import the current code for those packages."""
    import tomllib

    with open(tree / "pyproject.toml", "rb") as f:
        mapping = tomllib.load(f).get("tool", {}).get("setuptools", {}).get("package-dir", {})
    for package, folder in mapping.items():
        if package:
            link = tree.joinpath(*package.split("."))
            if not link.exists():
                link.symlink_to(tree / folder, target_is_directory=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--corpus", nargs="+", required=True, help="folder names under --corpus-dir")
    ap.add_argument("--corpus-dir", default=os.path.join(tempfile.gettempdir(), "warehouse-bench"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--reingest", action="store_true", help="time an unchanged re-ingest into a root ingested once")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "warehouse-compare"))
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    trees = {rev: checkout(rev, work) for rev in (a.before, a.after)}
    results: dict[tuple[str, str], list] = {}
    rows: dict[tuple[str, str], set[str]] = {}
    for n in range(a.runs):
        for corpus in a.corpus:
            src = Path(a.corpus_dir) / corpus
            # alternate the order (before, after / after, before) so a drift in load falls on both alike
            for rev, tree in (list(trees.items()) if n % 2 == 0 else list(trees.items())[::-1]):
                env = dict(os.environ, PYTHONPATH=str(tree))
                cmd = [sys.executable, "-m", "warehouse.cli", "ingest", str(src), "--quiet", "--root"]
                if a.reingest:
                    root = work / f"root-{corpus}-{tree.name}"
                    if n == 0:
                        shutil.rmtree(root, ignore_errors=True)
                        run(cmd + [str(root)], env=env, cwd=str(work))
                else:
                    root = work / "root"
                    shutil.rmtree(root, ignore_errors=True)
                r = run(cmd + [str(root)], env=env, cwd=str(work))
                if r.returncode != 0:
                    sys.exit(f"{rev} on {corpus} failed:\n{r.stderr}")
                counted = subprocess.run([sys.executable, "-m", "warehouse.cli", "sql", COUNT, "--root", str(root),
                                          "--format", "csv"], env=env, cwd=str(work), capture_output=True, text=True, check=True)
                rows.setdefault((corpus, rev), set()).add(counted.stdout.split()[-1].strip('"'))
                results.setdefault((corpus, rev), []).append(r)
                say(f"run {n + 1}: {corpus} at {rev}: {r.seconds:.2f} s wall, {r.cpu_seconds:.2f} s CPU, {r.peak_rss_mb:.0f} MB")
    print(f"| corpus | commit | wall (median of {a.runs}) | CPU | peak RSS | rows: responses/turns/evaluations/quarantine |")
    print("|---|---|---|---|---|---|")
    for corpus in a.corpus:
        for rev in trees:
            m = median_of(results[(corpus, rev)])
            print(f"| {corpus} | `{rev}` | {m.seconds:.2f} s | {m.cpu_seconds:.2f} s | {m.peak_rss_mb:.0f} MB | "
                  f"{' or '.join(sorted(rows[(corpus, rev)]))} |")
    if any(rows[(c, a.before)] != rows[(c, a.after)] for c in a.corpus):
        say("the two commits ended with different rows")
        sys.exit(1)


if __name__ == "__main__":
    main()
