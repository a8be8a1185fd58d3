"""The contract every registered format is held to, run over each format the registry lists.

A format gets all of it by registering (an entry point in the group ``warehouse.formats``) and putting its
fixtures in ``tests/fixtures/<name>`` (variants in ``tests/fixtures/<name>_*``):

- **detection and its negatives**: its fixtures are catalogued as it; no file of another format's fixtures,
  nor a near miss (``tests/fixtures/near_misses``), is;
- **the fast path is the record path**: its fixtures give the same rows with the vectorised paths off;
- **nothing lost**: every file counts ``records = ingested + quarantined``, and every value of its fixtures is
  in the rows of its file (``test_nothing_lost.lost_values``);
- **the export round trip**: a format that exports writes its fixtures' rows back in its own shape, and they
  read again as the same rows, but for where they are (paths, locators, ids, path fields).

Golden rows stay with each format's own tests (``test_<name>.py``): which columns and which order show a
format's rows best is the format's choice.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import warehouse
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.registry import Registry

from ..conftest import FIXTURES, Warehouse, activation_tree, export_out
from .test_nothing_lost import _report, lost_values

INGESTORS = {i.name: i for i in Registry.installed().ingestors()}
NAMES = sorted(INGESTORS)
EXPORTING = [n for n in NAMES if type(INGESTORS[n]).exporter is not None]

#: the columns of the run that wrote a row: two ingests of the same files differ in these alone
RUN = re.compile(r"^(ingest_run|ingested_at)$")
#: and the columns the warehouse makes from where a row is (its file, its place in it, the ids hashed from the
#: two, the fields its path gives): an exported file is elsewhere, and its records may sit at other places in it.
#: Every column read from the source (its own ids and times included) must come back.
WHERE = re.compile(r"^(ingest_run|ingested_at|source_path|source_locator|record_index|target|response_id|record_id"
                   r"|annotation_id|experiment|pipeline|model_variant|trait|position|prompt_set|polarity|split"
                   r"|component|method|layers?|coefficients)$")


def sources_of(name: str, tmp: Path) -> list[Path]:
    """The fixture folders of format ``name``: ``tests/fixtures/<name>`` and its variants ``<name>_*``; a format
    that reads paths, not content (activations), gets a tree of files made for it."""
    if not INGESTORS[name].reads_content:
        return [activation_tree(tmp)]
    return [p for p in sorted(FIXTURES.iterdir()) if p.is_dir() and (p.name == name or p.name.startswith(name + "_"))]


def rows_of(w: Warehouse, tables, exclude: re.Pattern) -> dict[str, list[str]]:
    """Every row of each raw table but the ``exclude``d columns, as sorted text (a multiset: the order rows are
    written in is no part of them), through one connection."""
    con = warehouse.connect(w.root)
    try:
        out = {}
        for table in tables:
            columns = [c for (c, *_) in con.execute(f"DESCRIBE raw.{table}").fetchall() if not exclude.search(c)]
            out[table] = sorted(map(repr, con.execute(f"SELECT {', '.join(columns)} FROM raw.{table}").fetchall()))
        return out
    finally:
        con.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``built(name, fast_paths=True)``: a warehouse of format ``name``'s fixtures, ingested once per module."""
    made: dict[tuple[str, bool], Warehouse] = {}
    sources = tmp_path_factory.mktemp("made")  # files made for a format: the same paths for both of its ingests

    def build(name: str, fast_paths: bool = True) -> Warehouse:
        if (name, fast_paths) not in made:
            w = Warehouse(tmp_path_factory.mktemp(f"{name}-{'fast' if fast_paths else 'records'}") / "wh")
            w.ingest(*sources_of(name, sources), fast_paths=fast_paths)
            made[name, fast_paths] = w
        return made[name, fast_paths]

    return build


@pytest.fixture(scope="module")
def everything(tmp_path_factory) -> tuple[Warehouse, dict[str, str]]:
    """Every format's fixtures and the near misses, in one warehouse, each format detected by the warehouse;
    and who each catalogued file belongs to (its fixture folder's format; None for a near miss)."""
    tmp = tmp_path_factory.mktemp("everything")
    folders = {p: n for n in NAMES for p in sources_of(n, tmp)}
    folders[FIXTURES / "near_misses"] = None
    w = Warehouse(tmp / "wh")
    w.ingest(*folders)
    owner = {}
    for r in w.rows("SELECT source_path FROM sources"):
        folder = next(f for f in folders if Path(r["source_path"]).is_relative_to(f))
        owner[r["source_path"]] = folders[folder]
    return w, owner


def test_every_format_has_fixtures():
    """Registering is not enough: the contract reads a format's own fixtures, so a new format brings them."""
    missing = [n for n in NAMES if INGESTORS[n].reads_content and not (FIXTURES / n).is_dir()]
    assert not missing, f"formats without tests/fixtures/<name>: {missing}"


@pytest.mark.parametrize("name", NAMES)
def test_its_fixtures_are_detected_as_it_and_no_other_file_is(everything, name):
    w, owner = everything
    catalogued = {r["source_path"]: r["source_format"] for r in w.rows("SELECT source_path, source_format FROM sources")}
    suffixes = INGESTORS[name].suffixes
    mine = [p for p, o in owner.items() if o == name and p.lower().endswith(suffixes)]
    assert mine, f"no fixture of {name} was catalogued"
    not_as_it = {p: catalogued[p] for p in mine if catalogued[p] != name}
    assert not not_as_it, f"fixtures of {name} catalogued as another format (or none): {not_as_it}"
    # another format's file (of a suffix that format reads: a companion file, such as an activation tensor
    # beside trait-interp's responses, is its own format's) and a near miss are never taken for this one
    others = [p for p, o in owner.items() if o != name and (o is None or p.lower().endswith(INGESTORS[o].suffixes))]
    taken = sorted(p for p in others if catalogued[p] == name)
    assert not taken, f"{name} claims files that are not its own: {taken}"


@pytest.mark.parametrize("name", NAMES)
def test_the_fast_path_gives_the_rows_of_the_record_path(built, name):
    fast = rows_of(built(name, fast_paths=True), TABLES, RUN)
    records = rows_of(built(name, fast_paths=False), TABLES, RUN)
    for table in TABLES:
        assert fast[table] == records[table], table


@pytest.mark.parametrize("name", NAMES)
def test_nothing_is_lost(built, name, tmp_path):
    """Per file, records = ingested + quarantined; and every value of its fixtures is in the rows of its file (a
    format of paths alone reads no value)."""
    w = built(name)
    unbalanced = w.rows("SELECT source_path, records, records_ingested, records_quarantined FROM sources "
                        "WHERE records IS DISTINCT FROM records_ingested + records_quarantined")
    assert not unbalanced, f"files whose records are not ingested + quarantined: {unbalanced}"
    if INGESTORS[name].reads_content:
        for source in sources_of(name, tmp_path):
            lost = lost_values(w.root, source)
            assert not lost, _report(lost)


@pytest.mark.parametrize("name", EXPORTING)
def test_an_export_reads_again_as_the_same_rows(name, tmp_path):
    """Its main fixtures (``tests/fixtures/<name>``), exported back to its shape and ingested again."""
    first = Warehouse(tmp_path / "first")
    first.ingest(FIXTURES / name)
    out = export_out(tmp_path / "out", name)
    warehouse.export(first.root, None, name, out, progress=False)
    again = Warehouse(tmp_path / "again")
    again.ingest(out, source_format=name)
    assert again.rows("SELECT locator, error FROM quarantine") == []  # what an export writes reads again
    tables = ("responses", "turns", "evaluations", "annotations", "sentence_boundaries")
    came_back, written = rows_of(again, tables, WHERE), rows_of(first, tables, WHERE)
    for table in tables:
        assert came_back[table] == written[table], table
