"""Fault injection: every kind of file in a warehouse root damaged in turn (truncated, overwritten with
garbage, deleted), and what each command then does, run as a user runs it (the ``warehouse`` command in
a process of its own, with ``RUST_BACKTRACE=1`` as some machines set it).

What must hold, whatever the damage (docs/reliability.md, "A damaged root"):

* every command ends a fault in one line, ``error: ...``, exit 1 (the documented code for a problem the
  user can fix), naming the table and the damage; never a traceback, never a Rust backtrace;
* a damaged table does not take the others with it: a connection opens, the intact tables' views answer,
  and a query on the damaged one fails with its line;
* ``warehouse ingest`` mends what can be mended and exits 0 only with every table readable again, holding
  the rows it held before the damage.

One pristine warehouse is built once (two runs, so the tables have several versions, and checkpoints on two
tables); each case damages a copy of it. Several kinds of damage go into one copy, each in a table of its
own, so that every command runs once per damage mode, not once per file.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import deltalake
import pytest

import warehouse

from ..conftest import FIXTURES

CORPUS = FIXTURES / "trait_interp"
#: the second run of the pristine warehouse adds these (so each table gets a second version and file)
LATER = "experiments/fx/inference"
#: every table that holds rows in the pristine warehouse, and path_fields
COUNTED = ("responses", "turns", "sentence_boundaries", "evaluations", "prompts", "generation_metadata", "sources",
           "path_fields")
#: what stderr may hold besides the one error: what a writer says it mended
OURS = ("error: ", "warning: ", "repaired: ", "repairing: ", "converting ")


@dataclass
class Ran:
    code: int
    out: str
    err: str


def run(*args) -> Ran:
    p = subprocess.run([sys.executable, "-m", "warehouse.cli", *map(str, args)], capture_output=True, text=True,
                       env={**os.environ, "RUST_BACKTRACE": "1"}, timeout=300)
    return Ran(p.returncode, p.stdout, p.stderr)


def run_all(*argvs) -> list[Ran]:
    """Commands that only read, run side by side (each starts a Python with DuckDB and Arrow: most of its time)."""
    with ThreadPoolExecutor(3) as pool:
        return list(pool.map(lambda argv: run(*argv), argvs))


def clean(r: Ran) -> list[str]:
    """stderr's lines, each one of ours: no traceback, no backtrace, no library's own text."""
    lines = r.err.strip().splitlines()
    assert all(line.startswith(OURS) for line in lines), r.err
    return lines


def fails(r: Ran, *words: str) -> str:
    """``r`` ended in one error line, exit 1, holding ``words``; that line."""
    lines = clean(r)
    errors = [line for line in lines if line.startswith("error: ")]
    assert r.code == 1 and len(errors) == 1 and lines[-1] == errors[0], r.err
    assert all(w in errors[0] for w in words), (words, errors[0])
    return errors[0]


def works(r: Ran) -> Ran:
    assert r.code == 0, r.err
    assert not [line for line in clean(r) if line.startswith("error: ")]
    return r


def counts(root: Path, tables=COUNTED) -> dict[str, int]:
    """Rows per table, read by the command: one query."""
    query = " UNION ALL ".join(f"SELECT '{t}' AS t, count(*) AS n FROM {t}" for t in tables)
    r = works(run("sql", query, "--root", root, "--format", "csv"))
    return {row["t"]: int(row["n"]) for row in csv.DictReader(io.StringIO(r.out))}


@dataclass
class Pristine:
    root: Path
    src: Path
    counts: dict[str, int]

    def copy(self, tmp_path: Path) -> Path:
        root = tmp_path / "wh"
        shutil.copytree(self.root, root, symlinks=True)
        return root


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Pristine:
    base = tmp_path_factory.mktemp("pristine")
    src, root, later = base / "src", base / "wh", base / "later"
    shutil.copytree(CORPUS, src)
    shutil.move(src / LATER, later)
    warehouse.ingest([str(src)], str(root), progress=False, jobs=1)
    shutil.move(later, src / LATER)
    warehouse.ingest([str(src)], str(root), progress=False, jobs=1)
    for table in ("responses", "turns"):  # as deltalake makes one every 100 versions
        deltalake.DeltaTable(str(root / table)).create_checkpoint()
    con = warehouse.connect(root)
    n = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in COUNTED}
    con.close()
    assert all(n[t] for t in COUNTED), n
    return Pristine(root, src, n)


# --- damage --------------------------------------------------------------------------------------------------


def damage(path: Path, mode: str) -> None:
    if mode == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif mode == "garbage":
        path.write_bytes(b"\x00\xffnot what was here\n" * 5)
    else:
        path.unlink()


def data_file(root: Path, table: str) -> Path:
    """One live data file of ``table``."""
    uri = deltalake.DeltaTable(str(root / table)).file_uris()[0]
    return Path(uri.removeprefix("file://"))


def log_file(root: Path, table: str, name: str = "") -> Path:
    log = root / table / "_delta_log"
    return log / name if name else max(log.glob("*.json"))


# --- the tables' files ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["truncated", "garbage", "deleted"])
def test_damaged_table_files_leave_the_others_readable_and_ingest_mends_them(pristine, tmp_path, mode):
    root = pristine.copy(tmp_path)
    damage(next(log_file(root, "responses").parent.glob("*.checkpoint.parquet")), mode)
    damage(log_file(root, "turns", "_last_checkpoint"), mode)  # a hint only: deltalake does without it
    damage(log_file(root, "turns"), mode)  # its checkpoint holds the same; deltalake's writers need the file
    damage(log_file(root, "sentence_boundaries"), mode)  # its latest commit: no checkpoint covers it
    damage(data_file(root, "evaluations"), mode)
    damage(data_file(root, "sources"), mode)  # the catalog
    damage(data_file(root, "path_fields"), mode)  # derived from the catalog: made from it again

    # readers: the intact tables answer; each damaged one fails with its own line
    intact = ("prompts", "generation_metadata", "turns")
    damaged = [("responses", "checkpoint"), ("sentence_boundaries", "commit"),
               ("evaluations", "data file evaluations/"), ("sources", "data file sources/"),
               ("path_fields", "table sources is damaged")]  # (the views compute path_fields from the catalog)
    query = " UNION ALL ".join(f"SELECT '{t}' AS t, count(*) AS n FROM {t}" for t in intact)
    # every reading command on one of the modes (how a table's damage reaches each is the same whatever the mode)
    every = mode == "garbage"
    readers = run_all(["sql", query, "--root", root, "--format", "csv"],
                      *[["sql", f"SELECT count(*) FROM {t}", "--root", root] for t, _ in damaged],
                      *([["stats", "--root", root], ["history", "--root", root, "--format", "json"],
                         ["export", "--root", root, "--format", "jsonl", "--out", tmp_path / "out.jsonl"]]
                        if every else []))
    got = {row["t"]: int(row["n"]) for row in csv.DictReader(io.StringIO(works(readers[0]).out))}
    assert got == {t: pristine.counts[t] for t in intact}
    for (table, what), r in zip(damaged, readers[1:]):
        line = fails(r, "is damaged", what)
        assert f"table {table} is damaged" in line or table == "path_fields"
        assert "warehouse ingest" in line or "warehouse compact" in line  # what to do
    if every:
        stats, history, export = readers[-3:]
        fails(stats, "is damaged")
        assert len(json.loads(works(history).out)) == 2
        fails(export, "is damaged")
        assert not (tmp_path / "out.jsonl").exists()
        # compact mends what the log itself holds (the checkpoint), and leaves lost rows to an ingest
        line = fails(run("compact", "--root", root, "--quiet"), "is damaged", "warehouse ingest")
        assert "table responses" not in line

    r = works(run("ingest", pristine.src, "--root", root, "--quiet"))
    assert "table evaluations" in r.err and "table sources" in r.err and "table sentence_boundaries" in r.err
    assert counts(root) == pristine.counts  # every table readable, holding what it held


def test_removed_table_folders_are_made_again_by_the_next_ingest(pristine, tmp_path):
    root = pristine.copy(tmp_path)
    shutil.rmtree(root / "responses")
    shutil.rmtree(root / "path_fields")
    fails(run("sql", "SELECT count(*) FROM raw.responses", "--root", root), "table responses is damaged",
          "folder is gone", "warehouse ingest")
    intact = ("turns", "prompts", "path_fields")  # path_fields: computed from the catalog meanwhile
    assert counts(root, intact) == {t: pristine.counts[t] for t in intact}
    fails(run("compact", "--root", root, "--quiet"), "table responses is damaged")
    works(run("ingest", pristine.src, "--root", root, "--quiet"))
    assert counts(root) == pristine.counts
    # the older snapshots pinned the lost log's versions: they say so rather than read the new log's
    fails(run("sql", "SELECT 1", "--root", root, "--as-of", 1), "snapshot 1 cannot be read any more",
          "made again by snapshot 3")


def test_a_data_file_whose_sources_are_gone_is_mended_only_with_prune(pristine, tmp_path):
    src, root = tmp_path / "src", tmp_path / "wh"
    shutil.copytree(CORPUS, src)
    warehouse.ingest([str(src)], str(root), progress=False, jobs=1)
    later = f"SELECT count(*) FROM turns WHERE source_path LIKE '%/{LATER}/%'"
    con = warehouse.connect(root)
    assert con.execute(later).fetchone()[0] > 0
    con.close()
    shutil.rmtree(src / LATER)
    for f in (root / "responses").glob("*.parquet"):
        f.unlink()
    line = fails(run("ingest", src, "--root", root, "--quiet"), "sources whose rows it held cannot be read again",
                 "--prune", "nothing was changed")
    assert str(src / LATER) in line
    works(run("ingest", src, "--root", root, "--prune", "--quiet"))
    after = counts(root, ("responses", "sources"))
    assert 0 < after["responses"] < pristine.counts["responses"] and after["sources"] < pristine.counts["sources"]
    assert json.loads(works(run("sql", later, "--root", root, "--format", "jsonl")).out) == {"count_star()": 0}


# --- the state folder ----------------------------------------------------------------------------------------


SNAPSHOTS = {
    "truncated": None,
    "garbage": None,
    "null": "null",
    "a list": "[]",
    "no tables": lambda d: d.pop("tables"),
    "version -1": lambda d: d["tables"]["responses"].update(version=-1),
    "version '0'": lambda d: d["tables"]["responses"].update(version="0"),
    "a file_schema that is no digest": lambda d: d["tables"]["responses"].update(file_schema=["a"]),
    "a table outside the root": lambda d: d["tables"].update({"../outside/responses": d["tables"]["responses"]}),
}


def damage_snapshot(root: Path, how: str, number: int = 2) -> None:
    path = root / ".warehouse" / "snapshots" / f"{number}.json"
    change = SNAPSHOTS[how]
    if change is None:
        damage(path, how)
    elif isinstance(change, str):
        path.write_text(change)
    else:
        d = json.loads(path.read_text())
        change(d)
        path.write_text(json.dumps(d))


def test_a_damaged_latest_snapshot_is_one_line_and_the_next_writer_goes_back_to_the_one_before(pristine, tmp_path):
    roots = {}
    for i, how in enumerate(SNAPSHOTS):
        roots[how] = pristine.copy(tmp_path / str(i))
        damage_snapshot(roots[how], how)
    for how, r in zip(roots, run_all(*[["sql", "SELECT count(*) FROM responses", "--root", root]
                                       for root in roots.values()])):
        fails(r, "snapshots/2.json: damaged warehouse snapshot", "sets it aside", "--as-of 1")
    # a name that leads out of the root is never acted on: compact, then an ingest, leave that table alone
    root = roots["a table outside the root"]
    outside = root.parent / "outside" / "responses"  # another warehouse's table, where the name leads
    shutil.copytree(root / "responses", outside)
    before = sorted((p.name, p.stat().st_size) for p in outside.rglob("*"))
    assert works(run("history", "--root", root)).err.startswith("warning: ")
    works(run("compact", "--root", root, "--quiet"))
    assert sorted((p.name, p.stat().st_size) for p in outside.rglob("*")) == before  # neither optimized nor vacuumed
    assert (root / ".warehouse" / "damaged" / "2.json").is_file()  # kept for a look, never read
    root = roots["garbage"]
    works(run("ingest", pristine.src, "--root", root, "--quiet"))
    assert counts(root) == pristine.counts


def test_an_older_damaged_snapshot_is_left_out_of_history_and_kept(pristine, tmp_path):
    root = pristine.copy(tmp_path)
    damage_snapshot(root, "garbage", number=1)
    r = works(run("history", "--root", root, "--format", "json"))
    assert [s["snapshot"] for s in json.loads(r.out)] == [2] and "snapshots/1.json" in r.err
    fails(run("sql", "SELECT 1", "--root", root, "--as-of", 1), "snapshots/1.json", "the other snapshots are readable")
    assert counts(root) == pristine.counts
    r = works(run("ingest", pristine.src, "--root", root, "--quiet"))
    assert "files of runs that did not finish are kept" in r.err
    assert (root / ".warehouse" / "snapshots" / "1.json").is_file()
    damage_snapshot(root, "null", number=2)  # none readable any more
    for r in run_all(["sql", "SELECT 1", "--root", root], ["ingest", pristine.src, "--root", root, "--quiet"]):
        fails(r, "snapshots/2.json: damaged warehouse snapshot", "no snapshot before it is readable", "new --root")


def test_a_damaged_lock_file_is_taken_again(pristine, tmp_path):
    root = pristine.copy(tmp_path)
    lock = root / ".warehouse" / "lock"
    for mode, argv in (("truncated", ["ingest", pristine.src]), ("garbage", ["compact"]), ("deleted", ["compact"])):
        lock.write_text("pid 1 since 2026-01-01 00:00:00")
        damage(lock, mode)
        works(run(*argv, "--root", root, "--quiet"))


def test_a_folder_at_the_lock_path_is_one_line_for_every_writer(pristine, tmp_path):
    root = pristine.copy(tmp_path)
    (root / ".warehouse" / "lock").unlink()
    (root / ".warehouse" / "lock").mkdir()
    for argv in (["ingest", pristine.src], ["compact"]):
        fails(run(*argv, "--root", root), ".warehouse/lock", "Is a directory", "move the folder away")
    assert counts(root, ("responses",))["responses"] == pristine.counts["responses"]


def test_a_hostile_manifest_of_the_old_layout_is_one_line(tmp_path):
    manifests = [b"\x00garbage", b"null", b'{"format_version": 1, "tables": {"responses": '
                 b'[{"path": "../../etc/passwd", "columns": []}]}}']
    roots = []
    for i, manifest in enumerate(manifests):
        roots.append(tmp_path / str(i) / "old")
        (roots[-1] / "data" / "responses").mkdir(parents=True)
        (roots[-1] / "manifest.json").write_bytes(manifest)
    fails(run("sql", "SELECT 1", "--root", roots[0]), "layout before Delta tables")
    for root, r in zip(roots, run_all(*[["ingest", CORPUS, "--root", root, "--quiet"] for root in roots])):
        fails(r, "manifest.json", "new --root")
        assert sorted(p.name for p in root.iterdir()) == [".warehouse", "data", "manifest.json"]  # nothing converted


def test_a_log_deltalake_cannot_read_for_no_reason_found_is_one_line_without_secrets(pristine, tmp_path, monkeypatch):
    """No file of the log looks damaged, yet deltalake failed: the table's line quotes deltalake's first line,
    with the storage secrets of the environment scrubbed from it (it raised AttributeError before: the scrub
    was called by a name its module never had)."""
    from warehouse.store import delta_damage

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2-secret-value")
    root = pristine.copy(tmp_path)
    version = deltalake.DeltaTable(str(root / "turns")).version()
    error = OSError("Generic delta kernel error: signed with hunter2-secret-value\nthe rest of a chain")
    found = delta_damage.diagnose(str(root), "turns", version, error)
    assert found.kind == delta_damage.UNKNOWN
    assert found.what == "its Delta log cannot be read: Generic delta kernel error: signed with ***"
