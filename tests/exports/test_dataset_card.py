"""A parquet export is a Hugging Face dataset as it is: its README.md declares one config per table."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq

import warehouse

LOAD = """
import json, sys
import datasets
from huggingface_hub import DatasetCard

out = sys.argv[1]
got = {"configs": DatasetCard.load(out + "/README.md").data.to_dict()["configs"]}
for name in [None] + [c["config_name"] for c in got["configs"]] + ["sentence_boundaries"]:
    try:
        split = datasets.load_dataset(out, name)["train"]
        got[str(name)] = [split.num_rows, split.column_names]
    except ValueError as e:
        got[str(name)] = str(e)
print(json.dumps(got))
"""


def test_a_parquet_export_loads_with_datasets_one_config_per_table(samples_wh, tmp_path):
    out = tmp_path / "out"
    where = "source_format IN ('afterimage', 'scale')"  # no sentence boundaries: one table is empty
    warehouse.export(samples_wh.root, where, "parquet", out, progress=False)
    # offline: nothing may try the network (an unreachable endpoint fails at once if something does)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "HF_ENDPOINT": "http://127.0.0.1:9"}
    proc = subprocess.run([sys.executable, "-c", LOAD, str(out)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])

    files = {p.stem: pq.read_table(p) for p in out.glob("*.parquet")}
    assert files["sentence_boundaries"].num_rows == 0
    loadable = sorted(name for name, t in files.items() if t.num_rows)
    assert sorted(c["config_name"] for c in got["configs"]) == loadable
    for name in loadable:  # each config is exactly its own table, never a mix of files
        assert got[name] == [files[name].num_rows, files[name].column_names], name
    assert got["None"] == got["responses"]  # the default config
    assert "sentence_boundaries" in got["sentence_boundaries"] and "responses" in got["sentence_boundaries"]
    card = (out / "README.md").read_text()
    assert "Empty in this export, so not a config: `sentence_boundaries`" in card
    assert f"| `turns` | {warehouse.TABLES['turns'].grain} | {files['turns'].num_rows:,} |" in card


def test_the_card_is_the_same_for_the_same_export(samples_wh, tmp_path):
    for name in ("a", "b"):
        warehouse.export(samples_wh.root, "source_format = 'scale'", "parquet", tmp_path / name, progress=False)
    assert (tmp_path / "a" / "README.md").read_bytes() == (tmp_path / "b" / "README.md").read_bytes()
    assert str(tmp_path) not in (tmp_path / "a" / "README.md").read_text()  # no local path goes to the Hub
