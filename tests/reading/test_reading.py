"""docs/reading.md: every reader's snippet, run from the page itself on the samples' warehouse, gives the views' rows."""

from __future__ import annotations

import re

import pytest

import warehouse

from ..conftest import REPO, Warehouse

PAGE = REPO / "docs" / "reading.md"
#: tables the samples leave without a row: Delta tables with no data file, only their columns
EMPTY_TABLES = ("quarantine", "chunks", "rubric_criteria")
#: sections whose snippet no test can run here, and why (the page says so too)
NOT_RUN = {"Spark, with the Delta connector": "the connector comes from Maven, which the test machines cannot reach"}


def snippets() -> dict[str, str]:
    """Section title -> its Python code (the ```python blocks of the section, joined)."""
    out = {}
    for section in re.split(r"^## ", PAGE.read_text(encoding="utf-8"), flags=re.M)[1:]:
        title, _, body = section.partition("\n")
        code = "\n".join(re.findall(r"```python\n(.*?)\n```", body, re.S))
        if code:
            out[title.strip()] = code
    return out


def run(title: str, root, **names) -> dict:
    namespace = {"ROOT": str(root), **names}
    exec(compile(snippets()[title], f"{PAGE}: {title}", "exec"), namespace)
    return namespace


def steering_rows(samples_wh) -> list[tuple]:
    return sorted(samples_wh.rows(
        "SELECT response, trait_score, experiment, trait FROM responses WHERE pipeline = 'steering'"),
        key=repr)


def as_tuples(rows) -> list[dict]:
    return sorted(({k: r[k] for k in ("response", "trait_score", "experiment", "trait")} for r in rows), key=repr)


def test_every_section_with_code_is_run_or_says_why_not():
    assert set(snippets()) == {"DuckDB", "polars", "pyarrow", "Spark, from the file list",
                               "Spark, with the Delta connector", "Hugging Face `datasets`"}
    text = PAGE.read_text(encoding="utf-8")
    assert "not run by the tests" in text and "Maven" in text  # NOT_RUN's reason is on the page


@pytest.fixture(scope="module")
def empty_wh(tmp_path_factory) -> Warehouse:
    """A warehouse none of whose tables has a row yet: an ingest of a folder with nothing to read."""
    w = Warehouse(tmp_path_factory.mktemp("empty") / "wh")
    w.ingest(tmp_path_factory.mktemp("nothing"))
    return w


def declared(table: str) -> list[str]:
    return [c.name for c in warehouse.TABLES[table].columns]


def test_duckdb_on_empty_tables(samples_wh, empty_wh):
    """The recipe as written failed on a table with no data file: `"read_parquet" needs at least one file`."""
    ns = run("DuckDB", empty_wh.root)
    assert ns["steering"].height == 0 and ns["by_role"].height == 0
    ns = run("DuckDB", samples_wh.root)
    for name in EMPTY_TABLES:
        relation = ns["table"](name)
        assert relation.columns == declared(name) and relation.fetchall() == []


def test_polars_and_pyarrow_on_an_empty_warehouse(empty_wh):
    assert run("polars", empty_wh.root)["steering"].height == 0
    assert run("pyarrow", empty_wh.root)["steering"].num_rows == 0


def test_duckdb(samples_wh):
    ns = run("DuckDB", samples_wh.root)
    assert as_tuples(ns["steering"].to_dicts()) == as_tuples(steering_rows(samples_wh))
    assert dict(ns["by_role"].iter_rows()) == dict(
        (r["role"], r["n"]) for r in samples_wh.rows("SELECT role, count(*) AS n FROM turns GROUP BY role"))


def test_polars(samples_wh):
    ns = run("polars", samples_wh.root)
    assert as_tuples(ns["steering"].to_dicts()) == as_tuples(steering_rows(samples_wh))


def test_pyarrow(samples_wh):
    ns = run("pyarrow", samples_wh.root)
    assert as_tuples(ns["steering"].to_pylist()) == as_tuples(steering_rows(samples_wh))


def test_hugging_face_datasets(samples_wh, empty_wh, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    ns = run("Hugging Face `datasets`", samples_wh.root)
    responses = ns["responses"]
    assert len(responses) == samples_wh.one("SELECT count(*) FROM responses")
    ours = {r["response_id"]: r["experiment"] for r in samples_wh.rows("SELECT response_id, experiment FROM responses")}
    assert dict(zip(responses["response_id"], responses["experiment"])) == ours
    # tables with no row: load_dataset said `Empty 'data_files'`
    assert len(run("Hugging Face `datasets`", empty_wh.root)["responses"]) == 0
    for name in EMPTY_TABLES:
        empty = ns["table"](name)
        assert len(empty) == 0 and empty.column_names == declared(name)


def test_spark_from_the_file_list(spark, samples_wh, empty_wh):
    """On the tests' one Spark session (tests/conftest.py): a session of its own would be that one
    (``getOrCreate``), and stopping it stopped every later Spark test of the worker."""
    ns = run("Spark, from the file list", samples_wh.root, spark=spark)
    rows = [r.asDict() for r in ns["steering"].select("response", "trait_score", "experiment", "trait").collect()]
    assert as_tuples(rows) == as_tuples(steering_rows(samples_wh))
    # tables with no data file: Spark said UNABLE_TO_INFER_SCHEMA
    assert run("Spark, from the file list", empty_wh.root, spark=spark)["steering"].count() == 0
    for name in EMPTY_TABLES:
        empty = ns["table"](name)
        assert empty.count() == 0 and empty.columns == declared(name)
