"""The notebooks in notebooks/ run end to end on the bundled samples: as scripts (``python``, saving
their figures) and in a real Jupyter kernel (figures and tables inline), and what they draw is honest."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import REPO, Warehouse, write_text

NOTEBOOKS = sorted(p for p in (REPO / "notebooks").glob("*.py") if not p.name.startswith("_"))
FIGURES = {
    "steering.py": ["steering_trait_vs_coherence.png"],
    "annotations.py": ["annotation_positions.png"],
    "afterimage.py": ["afterimage_scores_by_persona.png"],
}
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def sample_root(samples_wh):
    return samples_wh.root


def test_the_notebooks_jupytext_makes_are_not_committed():
    """README says to open a notebook with ``jupytext --to notebook notebooks/steering.py``, which writes
    notebooks/steering.ipynb beside the script: git must not offer it for a commit."""
    import shutil

    if shutil.which("git") is None or subprocess.run(["git", "-C", str(REPO), "rev-parse"], capture_output=True).returncode:
        pytest.skip("not a git checkout (an sdist or an installed copy): .gitignore is git's")
    for notebook in NOTEBOOKS:
        made = notebook.with_suffix(".ipynb").relative_to(REPO)
        ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "--no-index", "-q", str(made)])
        assert ignored.returncode == 0, f"{made} is not in .gitignore"


def test_every_notebook_is_listed():
    assert {p.name for p in NOTEBOOKS} == set(FIGURES)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_saves_its_figures(notebook, sample_root, tmp_path):
    env = {**os.environ, "WAREHOUSE_ROOT": str(sample_root), "NOTEBOOK_OUT": str(tmp_path), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, notebook.name], cwd=notebook.parent, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in FIGURES[notebook.name]:
        figure = tmp_path / name
        assert figure.read_bytes()[:8] == PNG, name
        assert figure.stat().st_size > 10_000  # a real plot, not an empty canvas
        assert f"saved {figure}" in proc.stdout


def test_the_steering_notebook_finds_the_sweep(sample_root, tmp_path):
    env = {**os.environ, "WAREHOUSE_ROOT": str(sample_root), "NOTEBOOK_OUT": str(tmp_path)}
    out = subprocess.run([sys.executable, "steering.py"], cwd=REPO / "notebooks", env=env, capture_output=True,
                         text=True, check=True).stdout
    assert "pv_natural/sycophancy" in out and "baseline: trait" in out


# --- in Jupyter ---------------------------------------------------------------------------------------


def run_in_kernel(notebook, root, out, monkeypatch, *checks: str):
    """Execute ``notebook`` (a jupytext percent script) in a new IPython kernel, as Jupyter does,
    with ``checks`` appended as code cells; the executed notebook (with its outputs)."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("WAREHOUSE_ROOT", str(root))
    monkeypatch.setenv("NOTEBOOK_OUT", str(out))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's own default: inline figures
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core's future default, without its warning
    nb = jupytext.read(notebook)
    nb.cells += [nbformat.v4.new_code_cell(code) for code in checks]
    # generous timeouts: a kernel starts slowly on a loaded machine; a failing cell raises at once
    NotebookClient(nb, kernel_name="python3", timeout=600, startup_timeout=300,
                   resources={"metadata": {"path": str(notebook.parent)}}).execute()
    return nb


def outputs(nb, mime: str) -> list:
    return [o["data"][mime] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if mime in o.get("data", {})]


def last_json(nb) -> dict:
    """What the last cell printed. Its stdout may come in several outputs: the kernel sends what it
    has at each flush, and under load ``print``'s text and its newline can go in separate messages."""
    return json.loads("".join(o["text"] for o in nb.cells[-1].outputs
                              if o.get("output_type") == "stream" and o.get("name") == "stdout"))


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_in_jupyter_figures_and_tables_show_inline(notebook, sample_root, tmp_path, monkeypatch):
    nb = run_in_kernel(notebook, sample_root, tmp_path, monkeypatch)
    assert len(outputs(nb, "image/png")) == len(FIGURES[notebook.name])  # each figure shown once, under its cell
    assert outputs(nb, "text/html"), "tables are shown as HTML tables"
    for name in FIGURES[notebook.name]:  # and saved as well
        assert (tmp_path / name).read_bytes()[:8] == PNG


INTEGER_AXES = """
import json
axes = {"spans per category: x": ax1.xaxis, "where spans start: y": ax2.yaxis,
        "spans by sentence: x": ax3.xaxis, "spans by sentence: y": ax3.yaxis}
print(json.dumps({name: [float(t) for t in axis.get_ticklocs()] for name, axis in axes.items()}))
"""


@pytest.mark.slow
def test_counts_and_sentence_numbers_get_whole_number_ticks(sample_root, tmp_path, monkeypatch):
    nb = run_in_kernel(REPO / "notebooks" / "annotations.py", sample_root, tmp_path, monkeypatch, INTEGER_AXES)
    for axis, ticks in last_json(nb).items():
        assert ticks and all(t == int(t) for t in ticks), (axis, ticks)


SCORE_CELLS = """
import json
print(json.dumps({
    "personas": personas,
    "criteria": criteria,
    "labels": [t.get_text() for t in ax1.get_yticklabels()],
    "no_score": [[p, c] for p, row in zip(personas, grid) for c, v in zip(criteria, row) if v is None],
    "painted": int((~im.get_array().mask).sum()),
    "marked_missing": [t.get_text() for t in ax2.texts].count("missing"),
}))
"""
UNSCORED = "A night-shift nurse who keeps a very detailed medication log for every single patient"


@pytest.fixture(scope="module")
def unscored_root(tmp_path_factory):
    """The AfterImage samples and a persona whose judge gave no grounding score."""
    src = tmp_path_factory.mktemp("unscored")
    criteria = {c: {"score": 0.8, "feedback": "ok"} for c in ("coherence", "factuality", "helpfulness", "relevance")}
    row = {"conversations": [{"role": "user", "content": "When do I log a dose?"},
                             {"role": "assistant", "content": "Right after giving it."}],
           "persona": UNSCORED, "evaluation": {**criteria, "overall_grade": "acceptable"}, "final_score": 0.8}
    write_text(src / "extra" / "conversations_20260101_000000.jsonl", json.dumps(row) + "\n")
    w = Warehouse(tmp_path_factory.mktemp("unscored-wh") / "wh")
    w.ingest(REPO / "samples" / "afterimage", src / "extra")
    return w.root


@pytest.mark.slow
def test_a_missing_score_is_drawn_as_missing_and_labels_keep_whole_words(unscored_root, tmp_path, monkeypatch):
    nb = run_in_kernel(REPO / "notebooks" / "afterimage.py", unscored_root, tmp_path, monkeypatch, SCORE_CELLS)
    got = last_json(nb)
    assert got["no_score"] == [[UNSCORED, "grounding"]]
    assert got["marked_missing"] == 1  # the cell says "missing" ...
    assert got["painted"] == len(got["criteria"]) * len(got["personas"]) - 1  # ... and is not painted with a colour of the scale
    for persona, text in zip(got["personas"], got["labels"]):
        words = text.replace("…", " ").split()
        assert words == persona.split()[: len(words)], (persona, text)  # whole words, in order, none cut
    assert any("…" in t for t in got["labels"])  # the long one is shortened, and says so


EXPORT_WITHOUT_WIDGETS = """\
# %%
import json, os, sys
sys.modules["ipywidgets"] = None  # not importable: the notebooks extra does not install it
import warehouse, warehouse.progress
warehouse.progress.DELAY = 0  # the bar from the first moment: a small export is quick
summary = warehouse.export(os.environ["WAREHOUSE_ROOT"], None, "jsonl", os.path.join(os.environ["NOTEBOOK_OUT"], "all.jsonl"))
print(json.dumps({"written": summary.written}))
"""


@pytest.mark.slow
def test_export_in_a_kernel_without_ipywidgets_shows_a_text_bar(samples_wh, tmp_path, monkeypatch):
    """warehouse.export() in Jupyter without ipywidgets raised DuckDB's InvalidInputException (its own
    progress bar, which the export turned on to read its progress, wants the widgets in a kernel)."""
    script = tmp_path / "export.py"
    script.write_text(EXPORT_WITHOUT_WIDGETS)
    nb = run_in_kernel(script, samples_wh.root, tmp_path, monkeypatch)
    assert last_json(nb) == {"written": samples_wh.one("SELECT count(*) FROM responses")}
    stderr = "".join(o["text"] for c in nb.cells for o in c.get("outputs", []) if o.get("name") == "stderr")
    assert "export jsonl: 100%" in stderr  # tqdm.auto's text bar, which Jupyter redraws in place
    assert (tmp_path / "all.jsonl").read_text().count("\n") == last_json(nb)["written"]


NO_PERSONA_BOX = """
import json, math
at = personas.index(None) + 1  # the box of the rows with no persona (boxes sit at 1, 2, ...)
medians = [line.get_xdata()[0] for line in ax1.lines if len(line.get_xdata()) == 2
           and line.get_xdata()[0] == line.get_xdata()[1] and sorted(line.get_ydata()) == [at - 0.25, at + 0.25]]
print(json.dumps({"medians": [None if math.isnan(m) else float(m) for m in medians],
                  "label": ax1.get_yticklabels()[at - 1].get_text()}))
"""


@pytest.fixture(scope="module")
def no_persona_root(tmp_path_factory):
    """The AfterImage samples and two graded conversations that name no persona."""
    src = tmp_path_factory.mktemp("no-persona")
    rows = [{"conversations": [{"role": "user", "content": f"Question {i}?"}, {"role": "assistant", "content": "Answer."}],
             "evaluation": {c: {"score": score, "feedback": "ok"} for c in ("coherence", "factuality", "grounding")}
             | {"overall_grade": "poor"}, "final_score": score}
            for i, score in enumerate((0.2, 0.4))]
    write_text(src / "extra" / "conversations_20260102_000000.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    w = Warehouse(tmp_path_factory.mktemp("no-persona-wh") / "wh")
    w.ingest(REPO / "samples" / "afterimage", src / "extra")
    assert w.one("SELECT count(*) FROM responses WHERE source_format = 'afterimage' AND persona IS NULL") == 2
    return w.root


@pytest.mark.slow
def test_rows_with_no_persona_get_their_box(no_persona_root, tmp_path, monkeypatch):
    """The boxplot filtered with ``persona == None``, which is never true: the rows with no persona had an empty box."""
    nb = run_in_kernel(REPO / "notebooks" / "afterimage.py", no_persona_root, tmp_path, monkeypatch, NO_PERSONA_BOX)
    assert last_json(nb) == {"medians": [pytest.approx(0.3)], "label": "(no persona)"}
