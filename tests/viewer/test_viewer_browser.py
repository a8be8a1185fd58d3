"""The viewer in a real browser: Debian's chromium driven by playwright (never a downloaded browser).

list -> response -> compare -> spans on the samples and every format's fixtures, the highlights as the
browser reads them, hostile text that must run nothing (server pages, the ``--out`` file, the notebook's
iframe), deep links, the per-token values, and the screenshots of docs/viewer.md
(``pytest --update-screenshots`` writes them)."""

from __future__ import annotations

import os
from contextlib import ExitStack

import pytest

import warehouse
from warehouse.viewer.data import Reader

from ..conftest import REPO
from ..viewer_helpers import serving
from .test_viewer import with_token_values

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
NAMES = ("samples", "afterimage", "dataloop", "scale", "trait_interp", "trait_interp_annotations")
SCREENSHOTS = REPO / "docs" / "viewer"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One chromium for the module, with a fresh profile; its pages report dialogs and page errors."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs it (apt-get install -y chromium)")
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium to run the browser tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, args=ARGS, headless=True,
            viewport={"width": 1400, "height": 900})
        context.events = []  # dialogs (alert, ...) and uncaught errors, on every page
        context.on("page", lambda page: _watch(context, page))
        yield context
        context.close()


def _watch(context, page):
    page.on("dialog", lambda d: (context.events.append(f"dialog {d.message}"), d.dismiss()))
    page.on("pageerror", lambda e: context.events.append(f"error {e}"))


@pytest.fixture
def page(browser):
    p = browser.new_page()
    yield p
    p.close()


@pytest.fixture(scope="module")
def servers(viewer_warehouses):
    with ExitStack() as stack:
        out = {}
        for name in (*NAMES, "hostile"):
            reader = Reader(viewer_warehouses[name].root)
            stack.callback(reader.close)
            out[name] = stack.enter_context(serving(reader))
        yield out


def spans_of(w, rid: str) -> list[tuple[str, str]]:
    """The response's spans as the warehouse has them: category and ``response[char_start:char_end]``."""
    rows = w.rows("SELECT category, response, char_start, char_end FROM annotations JOIN responses USING (response_id) "
                  "WHERE response_id = ? AND char_start IS NOT NULL AND turn_index IS NULL", [rid])
    return sorted((r["category"] or "", r["response"][r["char_start"]:r["char_end"]]) for r in rows)


def drawn(page, scope: str = "") -> list[tuple[str, str]]:
    return sorted(tuple(x) for x in page.eval_on_selector_all(
        f"{scope} [data-category]", "els => els.map(e => [e.dataset.category, e.textContent])"))


@pytest.mark.parametrize("name", NAMES)
def test_list_response_compare_spans(name, servers, page, viewer_warehouses, browser):
    w = viewer_warehouses[name]
    url = servers[name]
    answer = page.goto(url)
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    annotated = w.rows("SELECT response_id FROM annotations WHERE char_start IS NOT NULL LIMIT 1")
    if annotated:  # open a response with spans from the list (sorted so it is on the first page)
        rid = annotated[0]["response_id"]
        page.goto(url + f"?sort=source&page={_page_of(w, rid)}")
        page.click(f'tr[data-response-id="{rid}"] a.rid')
    else:
        page.click("table.responses tbody tr:first-child a.rid")
        rid = page.url.rsplit("/", 1)[1]
    page.wait_for_selector(f'article[data-response-id="{rid}"]')
    assert page.url == url + f"responses/{rid}"
    assert drawn(page) == spans_of(w, rid)  # each highlight is exactly its span's characters, as the browser reads them
    page.click('a[title^="the same prompt"]')  # compare: the same prompt
    page.wait_for_selector("section.compare")
    assert page.eval_on_selector("section.compare article", "a => a.dataset.responseId") == rid
    page.click("nav.top >> text=spans")
    if annotated:
        page.click("section.categories tbody tr:first-child a")
        page.wait_for_selector("section.spans article[data-response-id]")
        category = page.inner_text("section.spans h1").removeprefix("Spans: ")
        want = sorted(r["text"] for r in w.rows(
            "SELECT r.response[a.char_start + 1:a.char_end] AS text FROM annotations a JOIN responses r USING "
            "(response_id) WHERE a.category = ? AND a.char_start IS NOT NULL", [category]))
        assert sorted(t for _, t in drawn(page)) == want
        page.keyboard.press("j")
        assert page.evaluate("document.activeElement.classList.contains('step')")
    else:
        assert "no annotation spans" in page.inner_text("main")
    assert browser.events == []


def _page_of(w, rid):
    order = [r["response_id"] for r in w.rows("SELECT response_id FROM responses ORDER BY source_path, source_locator, "
                                              "response_id")]
    return order.index(rid) // 50 + 1


def test_hostile_text_runs_nothing(servers, page, viewer_warehouses, browser, tmp_path):
    url = servers["hostile"]
    w = viewer_warehouses["hostile"]
    page.goto(url)
    ids = page.eval_on_selector_all("tr[data-response-id]", "rows => rows.map(r => r.dataset.responseId)")
    assert len(ids) == 2
    for rid in ids:
        page.goto(url + "responses/" + rid)
        if drawn(page):
            page.hover("mark[data-category]")
        assert drawn(page) == spans_of(w, rid)
    page.goto(url + "spans")
    for link in page.eval_on_selector_all("section.categories a", "as => as.map(a => a.href)"):
        page.goto(link)
        page.hover("mark[data-category]")
    page.goto(url + f"compare?id={ids[0]}&id={ids[1]}")
    out = tmp_path / "hostile.html"
    view = warehouse.view(w.root, out=out)
    page.goto(out.as_uri())
    page.click(f'tr[data-response-id="{ids[0]}"] a.rid')
    notebook = tmp_path / "notebook.html"
    notebook.write_text("<!doctype html><title>notebook</title>" + view._repr_html_())
    page.goto(notebook.as_uri())
    frame = page.frame_locator("iframe")
    frame.locator(f'tr[data-response-id="{ids[1]}"] a.rid').click()
    frame.locator(f'article.response[data-response-id="{ids[1]}"]').wait_for(state="visible", timeout=10_000)
    for p in (page, *[f for f in page.frames]):
        assert p.evaluate("typeof window.__pwned") == "undefined"
    assert browser.events == []


def test_deep_links_open_the_response_in_the_server_and_in_the_file(servers, page, viewer_warehouses, tmp_path):
    w = viewer_warehouses["samples"]
    rid = w.one("SELECT response_id FROM annotations WHERE category = 'voting' AND borderline")
    page.goto(servers["samples"] + f"responses/{rid}")
    assert page.is_visible(f'article[data-response-id="{rid}"] mark.borderline[data-category="voting"]')
    assert page.get_attribute("mark.borderline", "title") == "voting · borderline · civics fact, not a nudge"
    out = tmp_path / "voting.html"
    warehouse.view(w.root, "response_id IN (SELECT response_id FROM annotations WHERE category = 'voting')", out=out)
    page.goto(out.as_uri() + f"#/responses/{rid}")
    shown = page.locator(f'article.response[data-response-id="{rid}"]')
    assert shown.is_visible() and page.locator("section.list").is_hidden()
    assert drawn(page, f'div.page[id="/responses/{rid}"]') == spans_of(w, rid)
    page.goto(out.as_uri())
    assert page.locator("section.list").is_visible() and shown.is_hidden()
    page.click("section.list th >> text=chars")  # the file's list sorts without a server
    page.goto(out.as_uri() + "#/spans/voting")
    assert page.locator('section.spans[aria-label="spans of voting"]').is_visible()
    assert page.locator('section.spans[aria-label="spans of population"]').is_hidden()


def test_per_token_values_colour_the_tokens_and_read_out_on_hover(viewer_warehouses, page, browser, request):
    w = viewer_warehouses["samples"]
    rid, tokens, prompt_end = w.rows("SELECT response_id, len(tokens) AS n, prompt_end FROM responses WHERE tokens IS "
                                     "NOT NULL AND prompt_set = 'rm_syco/train_100' AND prompt_id = '1'")[0].values()
    reader = Reader(w.root, setup=with_token_values(rid, tokens - prompt_end, prompt_end))
    try:
        with serving(reader) as url:
            page.goto(url + f"responses/{rid}")
            page.select_option("select.vector-pick", label="cat/syco · L10 · probe")
            colours = page.eval_on_selector_all('.tok[data-s="r"]', "ts => ts.map(t => t.style.backgroundColor)")
            assert len(colours) == tokens - prompt_end and all(colours) and len(set(colours)) > 3
            box = page.locator("svg.heat").first.bounding_box()
            page.mouse.move(box["x"] + 2, box["y"] + 5)
            assert page.inner_text(".readout").startswith("response token 0 ")
            page.hover('.tok[data-s="r"][data-i="3"]')
            assert "response token 3" in page.inner_text(".readout") and "cat/syco · L10 · probe = " in page.inner_text(".readout")
            screenshots(page, request, url, rid)
    finally:
        reader.close()
    assert browser.events == []


def screenshots(page, request, url: str, rid: str) -> None:
    """docs/viewer.md's pictures of each page: written with --update-screenshots, else they must exist."""
    shots = {"list.png": url + "?sort=trait_score&desc=1", "response.png": url + f"responses/{rid}",
             "compare.png": url + f"compare?of={rid}&by=prompt_id", "spans.png": url + "spans?category=voting"}
    if not request.config.getoption("--update-screenshots"):
        missing = [n for n in shots if not (SCREENSHOTS / n).is_file()]
        assert not missing, f"docs/viewer/{missing}: run pytest tests/viewer/test_viewer_browser.py --update-screenshots"
        return
    SCREENSHOTS.mkdir(exist_ok=True)
    for name, address in shots.items():
        page.goto(address)
        if name == "response.png":
            page.select_option("select.vector-pick", index=3)
        page.screenshot(path=str(SCREENSHOTS / name), full_page=False)

