"""``warehouse view``: its pages over plain HTTP (as an outside check fetches them), the ``--out`` file, the
command line, the notebook object and the per-token values seam. The browser's view: test_viewer_browser.py."""

from __future__ import annotations

import base64
import hashlib
import re
import signal
import subprocess
import sys
from html import unescape
from urllib.parse import quote

import pytest

import warehouse
from warehouse.errors import QueryError, UsageError
from warehouse.viewer.data import Reader
from warehouse.viewer.text import Span, layout

from ..conftest import FIXTURES, REPO, Warehouse
from ..viewer_helpers import HOSTILE_TEXT, PAYLOADS, elements, get, markup_problems, serving

ALL = ("samples", "afterimage", "dataloop", "scale", "trait_interp", "trait_interp_annotations", "hostile")


# --- spans become elements whose text is exactly theirs ----------------------------------------------------


def marks(html: str) -> list[tuple[str, str]]:
    return [(attrs["data-category"], text) for attrs, text in elements(html, "data-category")]


def test_a_span_is_cut_by_code_points_nested_spans_nest_and_a_crossing_one_is_shown_apart():
    text = "ab 😀 漢字 cd <b>x</b>"
    spans = [Span(3, 7, "outer"), Span(5, 7, "inner"), Span(6, 10, "crosses"), Span(11, 19, "tag"), Span(0, 99, "far"),
             Span(2, 2, "empty")]
    shown = layout(text, spans, ["outer", "inner", "crosses", "tag", "far", "empty"])
    assert sorted(marks(shown.html)) == sorted([("outer", "😀 漢字"), ("inner", "漢字"), ("tag", "<b>x</b>")])
    assert {s.category: why for s, why in shown.apart} == {
        "crosses": "it crosses another span", "far": "its range 0..99 is outside the text (19 characters)",
        "empty": "it is empty"}
    assert "<b>" not in shown.html and "&lt;b&gt;x&lt;/b&gt;" in shown.html
    assert re.sub(r"<[^>]+>", "", shown.html).replace("&lt;", "<").replace("&gt;", ">") == text  # nothing lost
    assert 'class="crossing"' in shown.html  # the crossing span's characters are outlined in the text


# --- every page of every warehouse, over HTTP ---------------------------------------------------------------


@pytest.fixture(scope="module")
def served(viewer_warehouses):
    """Each warehouse's viewer, served at once: name -> (URL, Reader)."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        out = {}
        for name in ALL:
            reader = Reader(viewer_warehouses[name].root)
            stack.callback(reader.close)
            out[name] = (stack.enter_context(serving(reader)), reader)
        yield out


@pytest.mark.parametrize("name", ALL)
def test_every_response_page_holds_its_id_and_each_span_as_an_element_with_exactly_its_text(name, served,
                                                                                            viewer_warehouses):
    url, reader = served[name]
    w = viewer_warehouses[name]
    status, headers, page = get(url)
    assert status == 200 and f"{reader.total:,} response" in page
    # every response with spans, and a few of the others
    every = ids = [r["response_id"] for r in w.rows(
        "SELECT response_id FROM responses ORDER BY response_id IN (SELECT response_id FROM annotations "
        "WHERE char_start IS NOT NULL) DESC, source_path, source_locator")]
    with_spans = w.one("SELECT count(DISTINCT response_id) FROM annotations WHERE char_start IS NOT NULL")
    ids = ids[:with_spans + 4]
    assert ids
    listed = {attrs["data-response-id"] for attrs, _ in elements(page, "data-response-id")}
    assert listed and listed <= set(every)
    for rid in ids:
        status, _, page = get(url + "responses/" + rid)
        assert status == 200, page
        roots = elements(page, "data-response-id")
        assert [a["data-response-id"] for a, _ in roots] == [rid]
        spans = w.rows("SELECT category, r.response[a.char_start + 1:a.char_end] AS text, a.char_start, a.char_end "
                       "FROM annotations a JOIN responses r USING (response_id) "
                       "WHERE response_id = ? AND a.char_start IS NOT NULL AND a.turn_index IS NULL", [rid])
        drawn = marks(page)
        crossing = page.count('class="crossing"')
        expected = sorted((s["category"] or "", s["text"]) for s in spans)
        # a span that crosses another is drawn apart, in its context: still one element of exactly its text
        assert sorted(drawn) == expected or (crossing and sorted(set(drawn)) == sorted(set(expected))), rid


def test_the_spans_page_shows_each_span_of_a_category_in_its_response(served, viewer_warehouses):
    url, _ = served["samples"]
    w = viewer_warehouses["samples"]
    status, _, index = get(url + "spans")
    assert status == 200 and "voting" in index
    status, _, page = get(url + "spans?category=voting")
    assert status == 200
    want = w.rows("SELECT response_id, r.response[a.char_start + 1:a.char_end] AS text FROM annotations a "
                  "JOIN responses r USING (response_id) WHERE category = 'voting' AND char_start IS NOT NULL")
    assert sorted(t for c, t in marks(page)) == sorted(r["text"] for r in want)
    assert {a["data-response-id"] for a, _ in elements(page, "data-response-id")} == {r["response_id"] for r in want}


def test_compare_pairs_responses_by_the_key_and_shows_score_differences(served, viewer_warehouses):
    url, reader = served["samples"]
    w = viewer_warehouses["samples"]
    # the same prompt, steered at several settings and unsteered
    rid, prompt = w.rows("SELECT response_id, prompt FROM responses WHERE run_kind = 'baseline' AND trait_score "
                         "IS NOT NULL ORDER BY source_path, source_locator LIMIT 1")[0].values()
    same = {r["response_id"] for r in w.rows("SELECT response_id FROM responses WHERE prompt = ?", [prompt])}
    status, _, page = get(url + f"compare?of={rid}&by=prompt")
    assert status == 200
    shown = [a["data-response-id"] for a, _ in elements(page, "data-response-id")]
    assert shown[0] == rid and set(shown) <= same and len(shown) == min(len(same), 8)
    assert "trait_score" in page and re.search(r'class="delta (up|down)', page)
    ids = shown[:2]
    status, _, page = get(url + "compare?" + "&".join(f"id={i}" for i in ids))
    assert status == 200 and [a["data-response-id"] for a, _ in elements(page, "data-response-id")] == ids


def test_the_server_refuses_a_foreign_host_and_writes_and_says_what_it_allows(served):
    url, _ = served["samples"]
    port = url.rsplit(":", 1)[1].strip("/")
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{int(port) + 1}", "localhost"):
        status, _, text = get(url, {"Host": host})
        assert status == 421 and "refused" in text and f"127.0.0.1:{port}" in text, host
    assert get(url, {"Host": f"localhost:{port}"})[0] == 200
    for method in ("POST", "PUT", "DELETE"):
        status, headers, _ = get(url, method=method)
        assert status == 405 and headers["allow"] == "GET, HEAD"
    status, headers, _ = get(url)
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe" not in csp
    assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"


def test_unknown_pages_are_clean_404_pages(served):
    url, _ = served["samples"]
    for path in ("responses/0000000000000000", "responses/" + quote("<script>x</script>", safe=""), "nowhere",
                 "spans?category=" + quote("<b>none</b>"), "compare?of=nope"):
        status, headers, page = get(url + path)
        assert status == 404, path
        assert "Not found" in page and "<script>x" not in page and "<b>none" not in page
        assert "content-security-policy" in headers
    status, _, page = get(url + "?sort=nosuch")
    assert status == 400 and "not a column of the list" in page


def test_the_list_sorts_and_pages(served, viewer_warehouses):
    url, reader = served["samples"]
    scores = [r["trait_score"] for r in viewer_warehouses["samples"].rows(
        "SELECT trait_score FROM responses ORDER BY trait_score DESC NULLS LAST")]
    status, _, page = get(url + "?sort=trait_score&desc=1")
    assert status == 200 and 'trait score ▼' in page
    first = reader.page("trait_score", True)["rows"]
    assert [r["trait_score"] for r in first] == scores[:50]
    second = reader.page("trait_score", True, page=2)["rows"]
    assert [r["trait_score"] for r in second] == scores[50:100]
    status, _, page = get(url + "?sort=trait_score&desc=1&page=2")
    assert status == 200 and f"responses 51–100 of {reader.total}" in page


def test_hostile_text_is_text_in_every_page(served):
    url, reader = served["hostile"]
    pages = [get(url)[2], get(url + "spans")[2]]
    for rid in reader.ids():
        pages.append(get(url + "responses/" + rid)[2])
    pages.append(get(url + "spans?category=" + quote(PAYLOADS[1]))[2])
    for page in pages:
        assert "<script>window" not in page and "<img src=x" not in page and "<svg onload" not in page
        assert markup_problems(page) == []
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in "".join(pages)


# --- the per-token values seam ------------------------------------------------------------------------------


def with_token_values(response_id: str, tokens: int, prompt_tokens: int):
    """A ``setup`` for Reader: a ``token_values`` table of hand-written values over one response's tokens,
    in the columns the real view will have (docs/tables.md): two vectors over every token, one that does
    not line up with the tokens."""
    import math

    rows = []
    for i in range(tokens):
        rows.append((response_id, "response", i, "cat/syco", 10, "probe", math.sin(i / 3), True))
        rows.append((response_id, "response", i, "cat/refusal", 12, "mean_diff", i / 10 - 1, True))
    for i in range(prompt_tokens):
        rows.append((response_id, "prompt", i, "cat/syco", 10, "probe", -0.5, True))
    for i in range(tokens - 3):
        rows.append((response_id, "response", i, "cat/short", 14, "probe", 0.25, False))

    def setup(con):  # in place of the warehouse's own view, which holds no values for the samples
        con.execute("CREATE TABLE hand_values (response_id VARCHAR, segment VARCHAR, token_index INTEGER, "
                    "trait VARCHAR, layer INTEGER, method VARCHAR, value DOUBLE, aligned BOOLEAN)")
        con.executemany("INSERT INTO hand_values VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        con.execute("CREATE OR REPLACE VIEW token_values AS FROM hand_values")

    return setup


def test_per_token_values_draw_a_heatmap_and_trajectories_when_the_warehouse_has_them(viewer_warehouses):
    w = viewer_warehouses["samples"]
    rid, tokens, prompt_end = w.rows("SELECT response_id, len(tokens) AS n, prompt_end FROM responses WHERE tokens IS "
                                     "NOT NULL AND prompt_set = 'rm_syco/train_100' AND prompt_id = '1'")[0].values()
    plain = Reader(w.root)
    assert "heat-row" not in plain_page(plain, rid)  # the samples hold no per-token values
    reader = Reader(w.root, setup=with_token_values(rid, tokens - prompt_end, prompt_end))
    try:
        assert reader.token_values[-1] == "aligned"
        page = plain_page(reader, rid)
        assert page.count('class="heat-row"') == 3 + 1  # three vectors over the response, one over the prompt
        assert page.count("<polyline") == 3
        assert page.count("<rect") == 2 * (tokens - prompt_end) + (tokens - prompt_end - 3) + prompt_end
        assert "(values do not line up with the tokens)" in page  # the short vector: drawn by index, not on the text
        assert 'data-s="r" data-i="0"' in page and f'data-s="r" data-i="{tokens - prompt_end - 1}"' in page
        blob = re.search(r'<script type="application/json" class="token-values">(.*?)</script>', page, re.S).group(1)
        import json

        data = json.loads(blob)
        assert [v["label"] for v in data["vectors"]] == ["cat/refusal · L12 · mean_diff", "cat/short · L14 · probe",
                                                         "cat/syco · L10 · probe"]
        assert data["vectors"][2]["prompt"] == [-0.5] * prompt_end
    finally:
        reader.close()
        plain.close()


def test_a_responses_ingested_projections_are_its_heatmap(tmp_path):
    """The real path: trait-interp projection files ingested into token_values, drawn for their response;
    vectors of one trait, layer and method that differ in their component (an older file's sublayers)
    are rows of their own."""
    w = Warehouse(tmp_path / "wh")
    w.ingest(FIXTURES / "trait_interp_projections")
    rid = w.one("SELECT response_id FROM token_values SEMI JOIN responses USING (response_id) GROUP BY 1 "
                "ORDER BY count(DISTINCT (trait, layer, method, component)) - count(DISTINCT (trait, layer, method)) DESC, "
                "count(DISTINCT (trait, layer, method, component)) DESC, 1 LIMIT 1")
    expected = {}
    for r in w.rows("SELECT trait, layer, method, component, segment, value FROM token_values WHERE response_id = ? "
                    "ORDER BY token_index", [rid]):
        vector = expected.setdefault(f"{r['trait']} · L{r['layer']} · {r['method']} · {r['component']}", {})
        vector.setdefault(r["segment"], []).append(r["value"])
    assert len(expected) > len({label.rsplit(" · ", 1)[0] for label in expected}) > 0  # sublayers of one layer
    _assert_heatmap(w, rid, expected)


def test_a_completions_log_probabilities_are_its_heatmap(tmp_path):
    """OpenAI batch results' logprobs, ingested as token_values, drawn under the one name they have."""
    w = Warehouse(tmp_path / "wh")
    w.ingest(FIXTURES / "openai_batch")
    rid = w.one("SELECT response_id FROM responses WHERE custom_id = 'vllm-1'")
    values = [r["value"] for r in w.rows("SELECT value FROM token_values WHERE response_id = ? ORDER BY token_index", [rid])]
    assert len(values) > 1
    _assert_heatmap(w, rid, {"logprob": {"response": values}})


def _assert_heatmap(w, rid, expected: dict):
    import json

    reader = Reader(w.root)
    try:
        page = plain_page(reader, rid)
    finally:
        reader.close()
    blob = re.search(r'<script type="application/json" class="token-values">(.*?)</script>', page, re.S).group(1)
    shown = {v["label"]: {seg: v[seg] for seg in ("prompt", "response") if v.get(seg)} for v in json.loads(blob)["vectors"]}
    assert shown == expected
    assert page.count('class="heat-row"') == sum(len(v) for v in expected.values())


def plain_page(reader, rid):
    from warehouse.viewer.pages import Links, Pages

    return str(Pages(reader, Links()).response(rid))


def test_sentences_are_shaded_by_cue_p(viewer_warehouses):
    w = viewer_warehouses["samples"]
    rid = w.one("SELECT response_id FROM sentence_boundaries WHERE cue_p = 0.8")
    reader = Reader(w.root)
    try:
        page = plain_page(reader, rid)
    finally:
        reader.close()
    assert 'class="sentence cue8" title="sentence 3 · cue_p 0.8"' in page
    assert page.count('class="sentence') == 5


# --- --out --------------------------------------------------------------------------------------------------


def test_out_writes_one_file_that_needs_no_network_and_allows_only_its_own_script(viewer_warehouses, tmp_path):
    w = viewer_warehouses["samples"]
    out = tmp_path / "view.html"
    proc = run("view", "--root", str(w.root), "--out", str(out), "--limit", "30")
    assert proc.returncode == 0, proc.stderr
    total = w.one("SELECT count(*) FROM responses")
    assert proc.stderr.splitlines() == [
        f"note: the file holds the first 30 of the {total} selected responses; raise the bound with --limit N "
        "(limit=N), or narrow --where", f"wrote 30 of {total} selected responses to {out}"]
    html = out.read_text()
    csp = unescape(re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html).group(1))
    script = re.search(r"<script>(.*?)</script>", html, re.S).group(1)
    style = re.search(r"<style>(.*?)</style>", html, re.S).group(1)

    def digest(t):
        return "'sha256-" + base64.b64encode(hashlib.sha256(t.encode()).digest()).decode() + "'"

    assert f"script-src {digest(script)};" in csp and f"style-src {digest(style)};" in csp
    assert not re.search(r'(src|href)="(https?:)?//', html), "nothing is loaded from a network"
    sections = re.findall(r'<div class="page" id="/responses/([0-9a-f]+)">\s*<article class="response" '
                          r'data-response-id="([0-9a-f]+)">', html)
    assert len(sections) == 30 and all(a == b for a, b in sections)


def test_out_of_the_hostile_warehouse_runs_nothing_it_holds(viewer_warehouses, tmp_path):
    out = tmp_path / "hostile.html"
    view = warehouse.view(viewer_warehouses["hostile"].root, out=out)
    html = out.read_text()
    assert view.count == 2 and html.count('data-response-id="') >= 2
    assert "<script>window" not in html and "<img src=x" not in html and 'href="javascript:' not in html
    assert markup_problems(html, inline_scripts=1) == []
    assert HOSTILE_TEXT not in html  # it is there escaped only


def test_view_refuses_what_it_cannot_do_in_one_line(viewer_warehouses, tmp_path):
    root = str(viewer_warehouses["samples"].root)
    cases = [  # on the command line: one line, the documented exit code
        (["--root", str(tmp_path / "none")], 1, "no such directory, so no warehouse here"),
        (["--root", root, "--where", "nosuch = 1"], 1, 'Referenced column "nosuch" not found'),
        (["--root", root, "--out", str(tmp_path / "o.html"), "--port", "8000"], 2, "--port is for serving"),
    ]
    for args, code, message in cases:
        proc = run("view", *args, "--no-browser")
        assert proc.returncode == code, (args, proc.stderr)
        assert proc.stderr.startswith("error: ") and message in proc.stderr and "Traceback" not in proc.stderr
    calls = [  # the same checks in Python
        (dict(where="response_id IN (SELECT content FROM read_text('/etc/passwd'))"), QueryError,
         "it calls the table function read_text()"),
        (dict(where="true); COPY responses TO 'x.csv'; SELECT (1"), QueryError, "more statement(s)"),
        (dict(out=tmp_path / "o.html", limit=0), UsageError, "--limit 0: must be a number"),
        (dict(out=tmp_path / "no" / "o.html"), UsageError, "does not exist"),
        (dict(port=70000), UsageError, "--port 70000: must be a port number"),
    ]
    for kwargs, error, message in calls:
        with pytest.raises(error) as e:
            warehouse.view(root, **kwargs)
        assert message in str(e.value)
    assert not (tmp_path / "o.html").exists() and not (REPO / "x.csv").exists()


def run(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "warehouse.cli", *args], capture_output=True, text=True, cwd=REPO,
                          **kwargs)


# --- the command: a URL on stderr, Ctrl-C -------------------------------------------------------------------


def test_view_serves_on_127_0_0_1_says_where_and_stops_on_ctrl_c(viewer_warehouses):
    root = viewer_warehouses["samples"].root
    proc = subprocess.Popen([sys.executable, "-m", "warehouse.cli", "view", "--root", str(root), "--no-browser"],
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = proc.stderr.readline()
        url = re.search(r"at (http://127\.0\.0\.1:\d+/)", line).group(1)
        assert line.startswith("serving ") and "(Ctrl-C stops)" in line
        assert get(url)[0] == 200
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert err.strip() == "interrupted: the viewer was stopped; the warehouse is unchanged"
    assert out == ""


# --- Python ---------------------------------------------------------------------------------------------------


def test_warehouse_view_and_the_method_show_the_same_selection(viewer_warehouses):
    root = viewer_warehouses["samples"].root
    where = "response_id IN (SELECT response_id FROM annotations WHERE category = 'voting')"
    a = warehouse.view(root, where=where)
    with warehouse.open(root) as wh:
        b = wh.view(where=where)
    html = a._repr_html_()
    assert html.startswith('<iframe srcdoc="') and 'sandbox="allow-scripts"' in html
    assert "allow-same-origin" not in html
    assert a.count == b.count == a.total == 3
    assert a.html == b.html and a.html.count("data-category=&quot;voting&quot;") == 0  # it is not double-escaped
    assert a.html.count('data-category="voting"') >= 4  # each span, in its response and on the spans page
    a.close()
    b.close()


@pytest.mark.slow
def test_in_jupyter_the_view_shows_inline(viewer_warehouses, tmp_path, monkeypatch):
    """A real kernel (as tests/test_notebooks.py runs the notebooks): the cell's value shows as HTML, the
    pages in a sandboxed frame."""
    from ..test_notebooks import outputs, run_in_kernel

    notebook = tmp_path / "look.py"
    notebook.write_text('# %%\nimport os\nimport warehouse\n\n# %%\nwarehouse.view(os.environ["WAREHOUSE_ROOT"], '
                        'where="response_id IN (SELECT response_id FROM annotations WHERE category = \'voting\')")\n')
    nb = run_in_kernel(notebook, viewer_warehouses["samples"].root, tmp_path, monkeypatch)
    [shown] = outputs(nb, "text/html")
    assert shown.startswith('<iframe srcdoc="') and 'sandbox="allow-scripts"' in shown
    assert unescape(shown).count('data-category="voting"') >= 4
