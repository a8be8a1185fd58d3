"""Any one built-in format, installed alone, gives a warehouse whose every core view works.

The core's views (``sql/``) read only the core's tables and the two views the core leaves to formats
(``path_fields``, ``generation_params``: ``Ingestor.defines``), which have a default of their own; every
other view is a format's (``Ingestor.views``). Each case runs in a process that sees one entry point of
the group ``warehouse.formats``, as a distribution shipping that format alone would install it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from warehouse.formatkit.declared_views import view_files, view_name
from warehouse.formatkit.registry import GROUP, Registry

from ..conftest import FIXTURES, activation_tree

#: a process whose installed formats are the one named by its first argument; it ingests the paths after it
#: into a new root and answers every view, as JSON on stdout
ALONE = textwrap.dedent(f"""
    import importlib.metadata as md, json, sys, tempfile
    everything = md.entry_points
    def entry_points(**kw):
        eps = everything(**kw)
        if kw.get("group") != {GROUP!r}:
            return eps
        return md.EntryPoints(e for e in eps if e.name == sys.argv[1])
    md.entry_points = entry_points
    import warehouse
    from warehouse.formatkit.registry import Registry
    from warehouse.formatkit.declared_views import view_statements
    root = tempfile.mkdtemp()
    warehouse.ingest(sys.argv[2:], root, jobs=1, progress=False)
    con = warehouse.connect(root)
    rows = {{name: len(con.execute(f"SELECT * FROM {{name}}").fetchall()) for name, _ in view_statements()}}
    print(json.dumps({{
        "formats": Registry.installed().names(),
        "rows": rows,
        "responses": [r[0] for r in con.execute("DESCRIBE responses").fetchall()],
        "experiments": con.execute("SELECT count(experiment) FROM responses").fetchone()[0],
        "source_formats": sorted(r[0] for r in con.execute("SELECT DISTINCT source_format FROM sources "
                                                             "WHERE source_format IS NOT NULL").fetchall()),
    }}))
""")

#: the CONTRACT's columns of responses that a path gives (../shared/DESIGN.md), and the parameters of its folder
PATH_COLUMNS = ["experiment", "pipeline", "model_variant", "trait", "position", "prompt_set", "prompt_id",
                "generation_params"]


def _sources(name, tmp_path):
    if name == "activations":
        return [activation_tree(tmp_path)]
    return [p for p in sorted(FIXTURES.iterdir()) if p.is_dir() and (p.name == name or p.name.startswith(name + "_"))]


@pytest.mark.parametrize("name", Registry.installed().names())
def test_a_format_installed_alone_builds_every_core_view(name, tmp_path):
    sources = _sources(name, tmp_path)
    assert sources, f"no fixtures of {name}"
    proc = subprocess.run([sys.executable, "-c", ALONE, name, *map(str, sources)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    assert got["formats"] == [name]
    assert got["source_formats"] == [name], got  # the fixtures were read, by this format
    core = [view_name(path.read_text()) for path in view_files()]
    assert set(core) <= set(got["rows"]), sorted(set(core) - set(got["rows"]))
    assert got["rows"]["sources"] > 0
    # the columns a path gives stay on responses, NULL unless the format installed reads paths
    assert set(PATH_COLUMNS) <= set(got["responses"])
    assert (got["experiments"] > 0) == (name == "trait_interp"), got["experiments"]
