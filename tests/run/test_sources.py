"""What a source is: a file, once per run, under the path it was first ingested under.

Also what a source may read besides itself (only inside the tree being ingested,
only regular files, within the size limit), and the files a format knows hold no
records.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys

import orjson
import pytest

from warehouse.errors import UsageError

from ..conftest import FIXTURES, write_json, write_text

STEERING = "experiments/x/steering/c/t/instruct/response__5/steering/responses/residual/probe"


def steering_file(root, name="L25_c-10.0_2026-01-23_05-39-08.json", n=3, tag="a"):
    rows = [{"prompt": f"q{i}", "response": f"{tag}{i}", "trait_score": float(i), "coherence_score": 50.0}
            for i in range(n)]
    return write_json(root / STEERING / name, rows)


def sources(wh):
    return wh.rows("SELECT source_path, status, reason, records FROM sources ORDER BY 1")


# --- 13.8: a tree that is gone, a tree reached through a symlink -------------------------------


def test_pruning_a_directory_that_is_gone_removes_its_rows(wh, tmp_path):
    kept = steering_file(tmp_path / "kept")
    steering_file(tmp_path / "run", "L1_c1.0_2026-01-01_00-00-00.json")
    steering_file(tmp_path / "run", "L2_c1.0_2026-01-01_00-00-00.json")
    wh.ingest(tmp_path / "kept", tmp_path / "run")
    shutil.rmtree(tmp_path / "run")
    with pytest.raises(UsageError, match="no such file or directory.*--prune removes its rows"):
        wh.ingest(tmp_path / "run")
    s = wh.ingest(tmp_path / "run", prune=True)
    assert s.files_removed == 2 and s.committed
    assert [r["source_path"] for r in sources(wh)] == [str(kept)]
    assert wh.one("SELECT count(*) FROM responses") == 3
    with pytest.raises(UsageError, match="no catalogued file was under it"):  # a typo removes nothing
        wh.ingest(tmp_path / "rnu", prune=True)
    assert not (tmp_path / "rnu").exists()


def test_a_tree_reached_through_a_symlink_is_the_same_sources(wh, tmp_path):
    real = tmp_path / "real"
    a = steering_file(real, "L1_c1.0_2026-01-01_00-00-00.json")
    b = steering_file(real, "L2_c1.0_2026-01-01_00-00-00.json")
    os.symlink(real, tmp_path / "link")
    wh.ingest(real)
    s = wh.ingest(tmp_path / "link")  # the same files: nothing new
    assert (s.files_unchanged, s.files_ingested, s.committed) == (2, 0, False)
    assert wh.one("SELECT count(*) FROM responses") == 6
    # a change seen through the link replaces the rows of the source, which keeps its first path
    steering_file(real, a.name, n=4, tag="new")
    s = wh.ingest(tmp_path / "link")
    assert s.files_ingested == 1
    assert [r["source_path"] for r in sources(wh)] == [str(a), str(b)]
    assert wh.one("SELECT count(*) FROM responses") == 7
    assert wh.one("SELECT count(*) FROM responses WHERE response LIKE 'new%' AND source_path = ?", [str(a)]) == 4
    # ... and a file deleted from it is pruned through the link too
    b.unlink()
    assert wh.ingest(tmp_path / "link", prune=True).files_removed == 1
    assert [r["source_path"] for r in sources(wh)] == [str(a)]


def test_a_symlinked_experiment_folder_keeps_the_fields_of_its_path(wh, tmp_path):
    """Sources are never resolved to their real path: the segments under experiments/ carry meaning."""
    storage = tmp_path / "scratch" / "run42"
    steering_file(storage / "data")
    os.makedirs(tmp_path / "project" / "experiments")
    # experiments/x -> the scratch folder holding that experiment's steering/ tree
    os.symlink(storage / "data" / "experiments" / "x", tmp_path / "project" / "experiments" / "x")
    wh.ingest(tmp_path / "project")
    assert wh.rows("SELECT DISTINCT experiment, trait FROM responses") == [{"experiment": "x", "trait": "c/t"}]
    assert wh.one("SELECT source_path FROM sources").startswith(str(tmp_path / "project" / "experiments" / "x"))


# --- 14.8: the same file twice in one run ----------------------------------------------------


@pytest.mark.parametrize("how", ["F F", "dir dir/F", "dir/F dir", "a hard link"])
def test_the_same_file_is_ingested_once_per_run(wh, tmp_path, how):
    d = tmp_path / "d"
    f = write_text(d / "chat.jsonl", "".join(
        json.dumps({"conversations": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]}) + "\n"
        for i in range(4)))
    if how == "a hard link":
        os.link(f, d / "same.jsonl")
    args = {"F F": (f, f), "dir dir/F": (d, f), "dir/F dir": (f, d), "a hard link": (d,)}[how]
    for _ in range(2):  # and it stays so on re-ingest
        wh.ingest(*args)
        assert wh.one("SELECT count(*) FROM responses") == 4
        assert wh.one("SELECT count(DISTINCT response_id) FROM responses") == 4
        assert wh.one("SELECT count(*) FROM sources") == 1


# --- 13.8: files a format knows hold no records ------------------------------------------------


def test_files_known_not_to_be_records_are_catalogued_with_the_reason_and_pass_strict(wh, tmp_path):
    response = steering_file(tmp_path)
    results = write_text(tmp_path / "experiments/x/steering/c/t/instruct/response__5/steering/results.jsonl",
                         '{"type": "header", "trait": "c/t"}\n{"result": {"trait_mean": 71.2}, "config": {"layers": [25]}}\n')
    config = write_json(tmp_path / "experiments/x/config.json", {"model_variants": {"instruct": {"model": "m"}}})
    s = wh.ingest(tmp_path, strict=True)
    assert s.committed and s.files_not_records == 1 and s.files_ingested == 2
    assert "1 not records" in s.text()
    rows = {r["source_path"]: r for r in sources(wh)}
    assert rows[str(response)]["status"] == "ingested"
    assert rows[str(results)]["status"] == "not_records" and rows[str(results)]["records"] == 0
    assert "steering results" in rows[str(results)]["reason"]
    # the experiment config is a record now: its model variants (docs/formats/trait_interp.md)
    assert rows[str(config)]["status"] == "ingested"
    assert wh.rows("SELECT variant, model FROM model_variants") == [{"variant": "instruct", "model": "m"}]
    assert wh.one("SELECT count(*) FROM quarantine") == 0
    assert wh.ingest(tmp_path, strict=True).files_unchanged == 3  # and they are not looked at again


# --- 14.2: paths taken from data stay inside the tree being ingested -------------------------------


def _outside(tmp_path):
    """A response file outside the tree, holding a secret that a span would match."""
    secret = tmp_path / "outside" / "secret.json"
    write_json(secret, {"prompt": "p", "response": "the password is hunter2"})
    return secret


def test_annotation_targets_outside_the_tree_are_refused(wh, tmp_path):
    secret = _outside(tmp_path)
    tree = tmp_path / "tree"
    responses = tree / "experiments/e/inference/instruct/responses"
    write_json(responses / "set" / "1.json", {"prompt": "p", "response": "inside text"})
    escape = os.path.relpath(secret.with_suffix(""), responses / "set")  # ../../.../outside/secret
    write_json(responses / "set_annotations.json", {"annotations": [
        {"idx": 1, "spans": [{"span": "inside"}]},
        {"idx": escape, "spans": [{"span": "hunter2"}]},
        {"idx": str(secret.with_suffix("")), "spans": [{"span": "hunter2"}]},  # absolute
    ]})
    write_json(tree / "experiments/e/analysis/detailed_annotations.json", {
        "metadata": {"response_source": str(secret.parent)},
        "detailed_annotations": {"secret": {"exploitations": [{"bias": 1, "tokens": [0, 2], "text": "hunter2"}]}}})
    wh.ingest(tree)
    rows = wh.rows("SELECT span, char_start, unresolved_reason FROM annotations WHERE span IS NOT NULL ORDER BY source_locator")
    inside = [r for r in rows if r["span"] == "inside"]
    assert inside and inside[0]["char_start"] == 0
    refused = [r for r in rows if r["span"] == "hunter2"]
    assert len(refused) == 3 and all(r["char_start"] is None for r in refused)
    assert all(f"is outside {tree}, the path being ingested" in r["unresolved_reason"] for r in refused)
    deps = "".join(d or "" for d in (r["depends_on"] for r in wh.rows("SELECT depends_on FROM sources")))
    assert "hunter2" not in deps and hashlib_of(secret) not in deps  # never opened, never hashed


def hashlib_of(path):
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reading_a_reference_that_is_outside_or_not_a_plain_file_is_refused(tmp_path):
    from warehouse.errors import ReferenceRefused
    from warehouse.formatkit.source import SourceFile

    tree = tmp_path / "tree"
    src_path = write_json(tree / "a" / "x.json", {})
    write_json(tree / "a" / "ok.json", {"fine": 1})
    write_json(tmp_path / "outside.json", {"secret": 1})
    os.mkfifo(tree / "a" / "fifo.json")
    os.symlink("/dev/zero", tree / "a" / "zero.json")
    write_text(tree / "a" / "big.json", "x" * 300)
    for n in range(40):
        write_text(tree / "a" / "many" / f"file-{n:03d}.json", "")
    with SourceFile(str(src_path), max_record_bytes=256, tree=str(tree)) as src:
        assert src.read_dependency(str(tree / "a" / "ok.json")) == b'{"fine": 1}'
        assert src.read_dependency(str(tree / "a" / "absent.json")) is None
        for bad, why in [("../../outside.json", "is outside"), (str(tmp_path / "outside.json"), "is outside"),
                         ("fifo.json", "not a regular file"), ("zero.json", "not a regular file"),
                         ("big.json", "over the 256-byte record limit")]:
            with pytest.raises(ReferenceRefused, match=why):
                src.read_dependency(bad)
        with pytest.raises(ReferenceRefused, match="is outside"):
            src.list_dependency_dir(str(tmp_path))
        with pytest.raises(ReferenceRefused, match="listing over the 256-byte record limit"):
            src.list_dependency_dir(str(tree / "a" / "many"))
        # a path the user gave (an option such as the tokenizer) may be anywhere
        assert src.read_dependency(str(tmp_path / "outside.json"), from_data=False) == b'{"secret": 1}'
        refused = [d for d in src.dependencies if d.kind == "refused"]
        assert {d.path for d in refused} == {str(tmp_path / "outside.json"), str(tmp_path)}


# --- 14.3: regular files only, within the size limit, everywhere -------------------------------


def _ingest_in_a_subprocess(args, root, timeout=120, memory=None):
    """Run `warehouse ingest` in its own process: a hang or a runaway read fails the test, not the suite."""

    def limit():
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    cmd = [sys.executable, "-m", "warehouse.cli", "ingest", *map(str, args), "--root", str(root), "--quiet", "--jobs", "1"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=limit)


def _dataloop_pair(tmp_path):
    ds = tmp_path / "ds"
    src = FIXTURES / "dataloop" / "download" / "66f0a1b2c3d4e5f601234567" / "train"
    os.makedirs(ds / "items")
    os.makedirs(ds / "json")
    shutil.copy(src / "items" / "capitals.json", ds / "items" / "capitals.json")
    return ds


@pytest.mark.parametrize("kind", ["FIFO", "/dev/zero"])
def test_a_dataloop_item_json_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    from ..conftest import Warehouse

    ds = _dataloop_pair(tmp_path)
    sibling = ds / "json" / "capitals.json"
    if kind == "FIFO":
        os.mkfifo(sibling)  # opening it would wait for a writer forever, holding the lock
    else:
        os.symlink("/dev/zero", sibling)  # reading it never ends
    # a cap on address space, not memory: deltalake's runtime (threads, allocator arenas) reserves over
    # 1 GB of it unused; a read of /dev/zero that never ended would pass any cap in seconds
    done = _ingest_in_a_subprocess([ds], tmp_path / "wh", memory=6 << 30)
    assert done.returncode == 0, done.stderr
    wh = Warehouse(tmp_path / "wh")
    q = wh.rows("SELECT source_path, stage, error FROM quarantine ORDER BY 1")
    assert {r["source_path"] for r in q} == {str(ds / "items" / "capitals.json"), str(sibling)}
    assert all("not a regular file" in r["error"] for r in q), q


def test_a_source_that_is_not_a_regular_file_is_quarantined_not_waited_for(tmp_path):
    from ..conftest import Warehouse

    fifo = tmp_path / "in" / "chat.jsonl"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    good = write_text(tmp_path / "in" / "good.jsonl", json.dumps({"conversations": [
        {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}) + "\n")
    for args in ([fifo, good], [tmp_path / "in"]):  # named, and met in a walk
        done = _ingest_in_a_subprocess(args, tmp_path / "wh")
        assert done.returncode == 0, done.stderr
    wh = Warehouse(tmp_path / "wh")
    assert wh.one("SELECT count(*) FROM responses") == 1
    [q] = wh.rows("SELECT source_path, stage, error FROM quarantine")
    assert q["source_path"] == str(fifo) and "not a regular file" in q["error"]


def test_depends_on_records_refusals_so_a_wider_ingest_reads_them(wh, tmp_path):
    # an annotation file ingested alone: the responses its data names are outside the tree given
    responses = tmp_path / "experiments/e/inference/instruct/responses/set"
    write_json(responses / "1.json", {"prompt": "p", "response": "inside text"})
    annotations = write_json(tmp_path / "experiments/e/analysis/detailed_annotations.json", {
        "metadata": {"response_source": str(responses)},
        "detailed_annotations": {"1": {"exploitations": [{"bias": 1, "tokens": [0, 1], "text": "inside"}]}}})
    wh.ingest(annotations.parent)
    deps = orjson.loads(wh.one("SELECT depends_on FROM sources WHERE source_path = ?", [str(annotations)]))
    assert any(d.get("refused") == str(annotations.parent) for d in deps), deps
    assert wh.one("SELECT char_start FROM annotations WHERE span = 'inside'") is None
    s = wh.ingest(tmp_path / "experiments")  # the refused target is inside now: the annotations are read again
    assert s.files_ingested == 2
    assert wh.one("SELECT char_start FROM annotations WHERE span = 'inside'") == 0
