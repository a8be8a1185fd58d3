"""A damaged warehouse ROOT on object storage (the local S3 API server of test_remote): a table's folder removed,
a data object deleted or overwritten. As on disk (tests/store/test_damage.py): every command ends in one line
naming the table, the intact tables stay readable, and the next ingest mends it."""

from __future__ import annotations

import pyarrow.fs as pafs

import warehouse

from ..conftest import Warehouse
from ..ground.test_remote import put, upload
from .test_damage import CORPUS, fails, run, works


def _remote_warehouse(s3, bucket) -> tuple[str, str, dict[str, int]]:
    """A warehouse of the trait_interp fixtures at s3://bucket/wh, its sources at s3://bucket/src; its counts."""
    src, root = f"s3://{bucket}/src", f"s3://{bucket}/wh"
    upload(s3, CORPUS, src)
    Warehouse(root).ingest(src)
    return src, root, _counts(root)


def _counts(root: str) -> dict[str, int]:
    con = warehouse.connect(root)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("responses", "turns", "evaluations", "prompts", "sources")}
    finally:
        con.close()


def _objects(s3, url: str) -> list[str]:
    path = url.removeprefix("s3://")
    infos = s3.filesystem().get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
    return [f"s3://{i.path}" for i in infos if i.type == pafs.FileType.File]


def test_a_removed_table_folder_on_a_bucket_is_one_line_and_made_again(s3, bucket):
    src, root, before = _remote_warehouse(s3, bucket)
    fs = s3.filesystem()
    for url in _objects(s3, f"{root}/turns"):
        fs.delete_file(url.removeprefix("s3://"))
    fails(run("sql", "SELECT count(*) FROM raw.turns", "--root", root), "table turns is damaged", "warehouse ingest")
    assert "17" in works(run("sql", "SELECT count(*) FROM responses", "--root", root)).out  # the others answer
    fails(run("compact", "--root", root, "--quiet"), "table turns is damaged")
    works(run("ingest", src, "--root", root, "--quiet"))
    assert _counts(root) == before


def test_a_deleted_or_overwritten_data_object_is_one_line_and_its_sources_read_again(s3, bucket):
    src, root, before = _remote_warehouse(s3, bucket)
    fs = s3.filesystem()
    (responses,) = [u for u in _objects(s3, f"{root}/responses") if u.endswith(".parquet")]
    (evaluations,) = [u for u in _objects(s3, f"{root}/evaluations") if u.endswith(".parquet")]
    fs.delete_file(responses.removeprefix("s3://"))
    put(s3, evaluations, b"not parquet")
    for table, name in (("responses", responses), ("evaluations", evaluations)):
        line = fails(run("sql", f"SELECT count(*) FROM {table}", "--root", root), f"table {table} is damaged",
                     name.rsplit("/", 1)[1])
        assert "NoSuchKey" not in line and "<?xml" not in line
    assert "6" in works(run("sql", "SELECT count(*) FROM prompts", "--root", root)).out
    line = fails(run("compact", "--root", root, "--quiet"), "is damaged", "warehouse ingest")
    assert "NoSuchKey" not in line and "<?xml" not in line
    works(run("ingest", src, "--root", root, "--quiet"))
    assert _counts(root) == before
    works(run("compact", "--root", root, "--quiet"))
