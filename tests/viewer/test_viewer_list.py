"""The viewer's list (``Reader.page``): every page, sort and selection holds what SQL over ``responses`` says,
whether it is answered before the texts' columns are made (the first page reads its own rows' texts) or
after (from ``_viewer_texts``), and a sort or pairing by a text column waits for them."""

from __future__ import annotations

import pytest

from warehouse.viewer.data import COMPARE_MAX, PREVIEW, Reader

#: what each sort of the list means, as SQL over ``responses`` (and their grades)
SORTS = {
    "source": "source_path {d}, source_locator {d}",
    "trait_score": "trait_score {d}",
    "layer": "layers[1] {d}",
    "grade": "g.grade_rank {d}",
    "prompt_preview": "length(prompt) {d}",
    "response_chars": "length(response) {d}",
}


def expected(w, sort: str, descending: bool, where: str | None, size: int, page: int) -> list[dict]:
    d = "DESC NULLS LAST" if descending else "ASC NULLS LAST"
    order = SORTS[sort].format(d=d)
    return w.rows(
        f"SELECT r.response_id, left(r.prompt, {PREVIEW}) AS prompt_preview, left(r.response, {PREVIEW}) AS "
        "response_preview, length(r.response) AS response_chars, array_to_string(r.layers, ',') AS layer, "
        "r.source_path || coalesce(':' || nullif(r.source_locator, ''), '') AS source "
        "FROM responses AS r LEFT JOIN response_grades AS g USING (response_id) "
        f"WHERE {where or 'true'} ORDER BY {order}, r.source_path, r.source_locator, r.response_id "
        f"LIMIT {size} OFFSET {(page - 1) * size}")


def shown(rows: list[dict]) -> list[dict]:
    keys = ("response_id", "prompt_preview", "response_preview", "response_chars", "layer", "source")
    return [{k: r.get(k) for k in keys} for r in rows]


@pytest.mark.parametrize("where", [None, "source_format IN ('trait_interp', 'dataloop')"])
@pytest.mark.parametrize("sort", list(SORTS))
def test_every_page_holds_what_sql_says_before_and_after_the_texts_are_made(viewer_warehouses, sort, where):
    w = viewer_warehouses["samples"]
    reader = Reader(w.root, where)
    try:
        for descending in (False, True):
            for page in (1, 3):
                want = expected(w, sort, descending, where, 7, page)
                got = reader.page(sort, descending, page, size=7)["rows"]
                assert shown(got) == want, (sort, descending, page, reader.texts.ready())
        assert reader.texts.ready()  # (the pages after the first waited for them)
    finally:
        reader.close()


def test_the_first_page_reads_its_own_texts_and_later_ones_the_texts_table(viewer_warehouses):
    w = viewer_warehouses["samples"]
    reader = Reader(w.root)
    try:
        assert not reader.texts.started  # nothing of the texts is made before a page is asked for
        first = reader.page(size=9)
        assert reader.texts.started
        reader.texts.wait()
        assert reader.page(size=9) == first
        assert shown(first["rows"]) == expected(w, "source", False, None, 9, 1)
    finally:
        reader.close()


def test_a_text_column_with_no_value_in_the_selection_is_not_shown(viewer_warehouses):
    w = viewer_warehouses["samples"]
    where = "response IS NULL"
    assert w.one(f"SELECT count(*) FROM responses WHERE {where}") >= 1
    reader = Reader(w.root, where)
    try:
        names = [c.name for c in reader.columns]
        assert "response_chars" not in names and "layer" not in names
        assert {"prompt_preview", "response_preview", "source"} <= set(names)
        rows = reader.page()["rows"]
        assert rows and all(r["response_preview"] is None and r["prompt_preview"] for r in rows)
    finally:
        reader.close()
    reader = Reader(w.root, "source_format = 'trait_interp'")
    try:
        assert {"response_chars", "layer", "trait_score"} <= {c.name for c in reader.columns}
    finally:
        reader.close()


def test_compare_by_prompt_waits_for_the_texts(viewer_warehouses):
    w = viewer_warehouses["samples"]
    prompt, n = w.rows("SELECT prompt, count(*) AS n FROM responses GROUP BY prompt ORDER BY n DESC, prompt LIMIT 1")[0].values()
    assert n > 1
    ids = [r["response_id"] for r in w.rows(
        "SELECT response_id FROM responses WHERE prompt = ? ORDER BY source_path, source_locator, response_id", [prompt])]
    reader = Reader(w.root)
    try:
        assert not reader.texts.started
        group = reader.group(ids[-1], "prompt")
        assert group[0] == ids[-1] and set(group) <= set(ids) and len(group) == min(len(ids), COMPARE_MAX)
    finally:
        reader.close()


def test_closing_while_the_texts_are_made_ends_their_thread(viewer_warehouses):
    reader = Reader(viewer_warehouses["samples"].root)
    reader.page()
    thread = reader.texts._thread
    reader.close()  # (interrupts the making if it is still running, and waits for the thread)
    assert thread is not None and not thread.is_alive()
