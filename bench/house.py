"""The size of the modules of ``warehouse/`` (issue 32's figures): how many, the median and the largest
in non-blank lines, and every module of 400 lines or more.

    python bench/house.py            # this checkout
    python bench/house.py /work/main # another one
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path


def sizes(repo: Path) -> list[tuple[int, str]]:
    """(non-blank lines, path) of every Python module under ``repo/warehouse``, smallest first."""
    rows = []
    for path in (repo / "warehouse").rglob("*.py"):
        lines = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
        rows.append((lines, str(path.relative_to(repo))))
    return sorted(rows)


def main(argv: list[str]) -> None:
    repo = Path(argv[0] if argv else Path(__file__).resolve().parent.parent)
    rows = sizes(repo)
    if not rows:
        sys.exit(f"{repo}: no warehouse/ modules there")
    print(f"| {repo} | modules | median | largest |")
    print("|---|---|---|---|")
    print(f"| non-blank lines | {len(rows)} | {statistics.median(n for n, _ in rows):g} | "
          f"{rows[-1][0]} ({rows[-1][1]}) |")
    large = [f"{p} {n}" for n, p in rows if n >= 400]
    print(f"\n400 lines or more: {', '.join(large) if large else 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
