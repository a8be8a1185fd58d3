"""Per-token values (issue 33, "How fast"): ingest of trait-interp projection files, their stored size,
and the mean per span.

    python bench/token_values.py                          # 10,000 responses, 20 projection files each
    python bench/token_values.py --responses 200 --runs 1 # a quick check

Writes once under --corpus (reused by later runs) a trait-interp tree of --responses response files
of 500 tokens each (bench/corpora.py's inference records: 1 + 50 prompt tokens, 449 response tokens),
spread over prompt sets of 1,000, with:

* for each response, --traits projection files (the current shape, H9: 2 vectors each, the trait's
  best layer and best+5; per vector a score, the activation's norm and the normalised score per prompt
  and per response token, rounded to 4 decimals, laid out as trait-interp's ``dump_compact`` writes
  them). Norms are those of a mid-size model's residual stream (about 40 + 4 x layer, a massive first
  token); a score is norm x cosine, the cosine a slowly moving walk around the trait's own mean; every
  trait file at the same layer repeats that layer's norms, as trait-interp's do;
* for each prompt set, ``responses/{set}_annotations.json`` with 3 spans of 2 to 8 tokens per response.

Then, each figure the median of --runs rounds (a round ingests the response files alone, then the
whole tree, in an order that rotates; before each run the machine is put in the same state,
``measure.settle``), with the CLI's default --jobs:

* ingest of the response files alone (their directory, annotation files included) against the whole
  tree: wall, CPU, peak RSS (summed over the process tree), responses/s and MB/s of input, and the
  ratio of each (the issue's target: the whole tree at no less than half the speed); and what
  parsing the projection files' JSON alone costs (``orjson.loads`` on a sample, one core), a floor
  under any ingest of them;
* bytes per value of the ``token_values`` Delta table: each list's Parquet column chunks (scores,
  norms, normalised scores, with their float columns) and the whole files, over the number of values;
* "mean per span for one trait and layer" (``span_values``): on one warm connection (first run, median
  of the rest, fetched as Arrow) and from a cold ``warehouse sql`` process (median of --query-runs).

Markdown to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpora  # noqa: E402
from cold_query import environment  # noqa: E402
from ingest import ingest_cmd, size_of  # noqa: E402
from measure import Run, cpu, median_of, run, say, settle  # noqa: E402

PROMPT_TOKENS, RESPONSE_TOKENS = 50, 449  # with the BOS token: 500 tokens a response
SET_SIZE = 1000
EXPERIMENT = "bench"
TRAITS = [f"{category}/{name}" for category, names in (
    ("alignment", ("deception", "sycophancy", "refusal", "power_seeking", "self_preservation")),
    ("starter_traits", ("optimism", "confidence", "formality", "humor", "curiosity")),
    ("emotions", ("anger", "joy", "fear", "sadness", "surprise")),
    ("persona", ("evil", "helpful", "honest", "verbose", "hallucination")),
) for name in names]
#: the query of the issue: one trait, one of its two layers
QUERY = ("SELECT annotation_id, response_id, category, span, mean_value, max_value, argmax_token "
         "FROM span_values WHERE trait = 'alignment/deception' AND layer = {layer}")


def best_layer(t: int) -> int:
    return 10 + t % 8


# --- the tree -------------------------------------------------------------------------------------


def _numbers(values: np.ndarray) -> str:
    """A list of 4-decimal numbers as trait-interp's JSON has them: each the float ``round(x, 4)`` gives
    (k / 10^4 is that very double), written by ``float.__repr__`` as ``json.dumps`` writes it."""
    return "[" + ", ".join(map(repr, (np.round(values * 1e4) / 1e4).tolist())) + "]"


def _compact(obj: dict, lists: list[str]) -> str:
    """``corpora.dump_compact(obj)`` with the markers ``"@@k@@"`` replaced by ``lists[k]``: the layout
    trait-interp writes, without formatting 3,000 numbers a file through json's pure-Python indenter."""
    return re.sub(r'"@@(\d+)@@"', lambda m: lists[int(m.group(1))], corpora.dump_compact(obj))


class Activations:
    """One response's made-up activations: a norm per token for each layer (shared by every trait
    scored at that layer), and per vector a cosine walk."""

    def __init__(self, i: int, n_prompt: int, n_response: int):
        self.rng = np.random.default_rng(i)
        self.n = n_prompt + n_response
        self.n_prompt = n_prompt
        self._norms: dict[int, np.ndarray] = {}

    def norms(self, layer: int) -> np.ndarray:
        if layer not in self._norms:
            x = (40 + 4 * layer) * np.exp(self.rng.normal(0, 0.15, self.n))
            x[0] *= 30  # the first token's massive activation
            self._norms[layer] = np.round(x * 1e4) / 1e4
        return self._norms[layer]

    def scores(self, mean: float, norms: np.ndarray) -> np.ndarray:
        # a slowly moving cosine, as a trait's projection drifts over a text: each step keeps 0.6 of the
        # last one's distance from the mean (the walk's kernel, cut where it no longer changes a 4th decimal)
        steps = self.rng.normal(0, 0.02, self.n)
        cos = mean + np.convolve(steps, 0.6 ** np.arange(32))[:self.n]
        return np.round(norms * cos * 1e4) / 1e4


def projection_file(i: int, prompt_set: str, t: int, act: Activations, n_prompt: int, n_response: int) -> str:
    lists: list[str] = []

    def mark(values: np.ndarray) -> str:
        lists.append(_numbers(values))
        return f"@@{len(lists) - 1}@@"

    entries = []
    trait_rng = random.Random(t)
    mean = trait_rng.uniform(-0.04, 0.06)
    for v, (layer, source) in enumerate(((best_layer(t), "steering"), (best_layer(t) + 5, "layers_arg"))):
        norms = act.norms(layer)
        scores = act.scores(mean + 0.01 * v, norms)
        p, r = slice(0, n_prompt), slice(n_prompt, None)
        entries.append({
            "method": "probe", "layer": layer, "selection_source": source,
            "baseline": round(trait_rng.uniform(-2, 4), 4),
            "prompt": mark(scores[p]), "response": mark(scores[r]),
            "token_norms": {"prompt": mark(norms[p]), "response": mark(norms[r])},
            "normalized_prompt": mark(scores[p] / norms[p].mean()),
            "normalized_response": mark(scores[r] / norms[r].mean()),
        })
    obj = {
        "metadata": {"prompt_id": str(i), "prompt_set": prompt_set, "n_prompt_tokens": n_prompt,
                     "n_response_tokens": n_response, "multi_vector": True, "n_vectors": 2,
                     "component": "residual", "position": "response[:5]", "centered": False,
                     "score_mode": "raw+normalized", "projection_date": "2026-03-26T10:00:00.000000"},
        "projections": entries,
    }
    return _compact(obj, lists)


def _write_responses(args: tuple[Path, int, int, int]) -> list[tuple[str, dict]]:
    """Response files ``start .. stop-1`` and their projection files; returns their annotation entries."""
    tree, start, stop, traits = args
    inference = tree / "experiments" / EXPERIMENT / "inference" / "instruct"
    entries = []
    for i in range(start, stop):
        prompt_set = f"set{i // SET_SIZE}"
        rng = random.Random(i)
        record = corpora.inference_record(rng, i, PROMPT_TOKENS, RESPONSE_TOKENS)
        d = inference / "responses" / prompt_set
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{i}.json").write_text(corpora.dump_compact(record))
        n_prompt = record["prompt_end"]
        n_response = len(record["tokens"]) - n_prompt
        act = Activations(i, n_prompt, n_response)
        for t in range(traits):
            d = inference / "projections" / TRAITS[t] / prompt_set
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{i}.json").write_text(projection_file(i, prompt_set, t, act, n_prompt, n_response))
        response_tokens = record["tokens"][n_prompt:]
        spans = []
        for _ in range(3):
            a = rng.randrange(n_response - 8)
            text = "".join(response_tokens[a:a + rng.randint(2, 8)]).strip()
            spans.append({"span": text, "category": rng.choice(corpora.CATEGORIES)})
        entries.append((prompt_set, {"idx": i, "spans": spans}))
    return entries


def _check_layout(tree: Path) -> None:
    """The first projection file is what ``corpora.dump_compact`` writes of its own content."""
    f = next((tree / "experiments" / EXPERIMENT / "inference" / "instruct" / "projections").rglob("0.json"))
    text = f.read_text()
    if corpora.dump_compact(json.loads(text)) != text:
        raise SystemExit(f"{f}: not in dump_compact's layout")


def build(tree: Path, responses: int, traits: int) -> None:
    if (tree / ".complete").exists():
        return
    shutil.rmtree(tree, ignore_errors=True)
    say(f"writing {responses:,} responses with {traits} projection files each under {tree} ...")
    exp = tree / "experiments" / EXPERIMENT
    exp.mkdir(parents=True)
    (exp / "config.json").write_text(json.dumps({
        "defaults": {"extraction": "base", "application": "instruct"},
        "model_variants": {"base": {"model": "google/gemma-2-2b"}, "instruct": {"model": "google/gemma-2-2b-it"}},
    }, indent=2))
    chunk = 100
    jobs = [(tree, s, min(s + chunk, responses), traits) for s in range(0, responses, chunk)]
    annotations: dict[str, list[dict]] = {}
    t0 = time.monotonic()
    with ProcessPoolExecutor(os.cpu_count()) as pool:  # untimed: as fast as the machine allows
        for done, entries in enumerate(pool.map(_write_responses, jobs), 1):
            for prompt_set, entry in entries:
                annotations.setdefault(prompt_set, []).append(entry)
            if done % 10 == 0 or done == len(jobs):
                say(f"  {min(done * chunk, responses):,} responses ({time.monotonic() - t0:.0f} s)")
    responses_dir = exp / "inference" / "instruct" / "responses"
    for prompt_set, entries in annotations.items():
        (responses_dir / f"{prompt_set}_annotations.json").write_text(json.dumps({"annotations": entries}, indent=2))
    _check_layout(tree)
    (tree / ".complete").touch()


# --- the figures ------------------------------------------------------------------------------------


def bench_ingest(contenders: list[tuple[str, Path]], runs: int, jobs: int | None, work: Path) -> tuple[dict[str, Run], Path]:
    """Median run of each contender; the last root of the last contender is kept for the other figures."""
    results: dict[str, list[Run]] = {label: [] for label, _ in contenders}
    kept = work / "kept"
    for i in range(runs):
        for label, src in contenders[i % len(contenders):] + contenders[:i % len(contenders)]:
            root = work / "wh"
            shutil.rmtree(root, ignore_errors=True)
            say(f"  round {i + 1}/{runs}: {label} (settling first)")
            settle(src)
            r = run(ingest_cmd(src, root, jobs))
            if r.returncode:
                raise SystemExit(f"ingest of {src} failed:\n{r.stderr}")
            say(f"    {r.seconds:.1f} s, CPU {r.cpu_seconds:.1f} s, peak RSS {r.peak_rss_mb:.0f} MB")
            results[label].append(r)
            if label == contenders[-1][0]:
                shutil.rmtree(kept, ignore_errors=True)
                root.rename(kept)
    shutil.rmtree(work / "wh", ignore_errors=True)
    return {label: median_of(rs) for label, rs in results.items()}, kept


def ingest_table(results: dict[str, Run], sizes: dict[str, int], responses: int) -> None:
    print("| ingest (median) | input | wall | CPU | responses/s | MB/s | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for label, r in results.items():
        mb = sizes[label] / 1e6
        print(f"| {label} | {mb:,.0f} MB | {r.seconds:.2f} s | {r.cpu_seconds:.2f} s | {responses / r.seconds:,.0f} | "
              f"{mb / r.seconds:.1f} | {r.peak_rss_mb:,.0f} MB |")
    (alone_label, alone), (all_label, whole) = results.items()
    rps = alone.seconds / whole.seconds
    mbps = (sizes[all_label] / whole.seconds) / (sizes[alone_label] / alone.seconds)
    print(f"\nthe whole tree against the response files alone: {rps:.3f} of the responses/s, {mbps:.2f} of the MB/s "
          f"(target: at least 0.5)\n", flush=True)


def parse_floor(tree: Path, sample: int = 2000) -> None:
    """What parsing the projection files' JSON alone costs (``orjson.loads``, as the reader does): a floor
    under any ingest of them, set against the response files' whole ingest."""
    import orjson

    files = sorted((tree / "experiments" / EXPERIMENT / "inference" / "instruct" / "projections").rglob("*.json"))
    step = max(1, len(files) // sample)
    docs = [p.read_bytes() for p in files[::step]]
    per_file = cpu(lambda: [orjson.loads(d) for d in docs], 3) / len(docs)
    print(f"parsing the {len(files):,} projection files' JSON alone (orjson.loads, one core): "
          f"{per_file * 1000:.2f} ms a file, {per_file * len(files):.1f} CPU-s in all "
          f"({per_file * len(files) / os.cpu_count():.1f} s on {os.cpu_count()} cores)\n", flush=True)


def storage_table(root: Path) -> None:
    import duckdb
    import pyarrow.parquet as pq

    import warehouse.store.readable

    files = warehouse.store.readable.snapshot_files(root)["token_values"]
    con = duckdb.connect()
    rows, values = con.execute(
        "SELECT count(*), sum(len(coalesce(scores_float, CAST(scores AS DOUBLE[])))) FROM read_parquet(?)",
        [files]).fetchone()
    floats = con.execute("SELECT count(*) FILTER (scores_float IS NOT NULL), count(*) FILTER (norms_float IS NOT NULL), "
                         "count(*) FILTER (normalized_float IS NOT NULL) FROM read_parquet(?)", [files]).fetchone()
    chunks: dict[str, int] = {}
    for f in files:
        meta = pq.ParquetFile(f).metadata
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c in range(group.num_columns):
                col = group.column(c)
                top = col.path_in_schema.split(".")[0]
                chunks[top] = chunks.get(top, 0) + col.total_compressed_size
    total = sum(os.path.getsize(f) for f in files)
    print(f"token_values: {len(files)} Parquet files, {total / 1e6:,.0f} MB, {rows:,} lists, {values:,} values "
          f"(lists in the float columns: scores {floats[0]}, norms {floats[1]}, normalized {floats[2]})\n")
    print("| stored | bytes | bytes per value |")
    print("|---|---|---|")
    groups = [("scores", ("scores", "scores_float")), ("norms", ("norms", "norms_float")),
              ("normalised scores", ("normalized", "normalized_float"))]
    for label, cols in groups:
        b = sum(chunks.get(c, 0) for c in cols)
        print(f"| {label} | {b / 1e6:,.1f} MB | {b / values:.2f} |")
    lists = sum(chunks.get(c, 0) for _, cols in groups for c in cols)
    print(f"| the three lists | {lists / 1e6:,.1f} MB | {lists / values:.2f} |")
    print(f"| the whole Parquet files (every column, footers) | {total / 1e6:,.1f} MB | {total / values:.2f} |")
    print("", flush=True)
    alternatives(files[0])


def alternatives(path: str) -> None:
    """Each list of one Parquet file of the table written alone in other layouts, with the writer's
    options (zstd level 1): bytes per value of each, so the stored layout is seen against the others."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from warehouse.decimals import DECIMAL
    from warehouse.store.writer import PARQUET_OPTIONS

    table = pq.read_table(path, columns=["scores", "norms", "normalized"])
    layouts = [("DECIMAL(9,4), byte-stream-split", DECIMAL, True), ("DECIMAL(9,4), dictionary then plain", DECIMAL, False),
               ("float32, byte-stream-split", pa.float32(), True), ("float64, byte-stream-split", pa.float64(), True)]
    print(f"the lists of one Parquet file ({table.num_rows:,} lists) in other layouts, bytes per value:\n")
    print("| layout | " + " | ".join(table.column_names) + " |")
    print("|---|" + "---|" * table.num_columns)
    for label, kind, split in layouts:
        cells = []
        for name in table.column_names:
            column = table.column(name).cast(pa.list_(kind))
            buf = io.BytesIO()
            pq.write_table(pa.table({name: column}), buf, **PARQUET_OPTIONS,
                           **({"use_dictionary": False, "column_encoding": {f"{name}.list.element": "BYTE_STREAM_SPLIT"}}
                              if split else {}))
            cells.append(f"{buf.tell() / pa.compute.sum(pa.compute.list_value_length(column)).as_py():.2f}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("", flush=True)


def query_table(root: Path, base: Path, runs: int) -> None:
    import warehouse.store.storage

    sql = QUERY.format(layer=best_layer(0))
    say(f"query: {sql}")
    con = warehouse.connect(root)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        rows = con.sql(sql).to_arrow_table()  # as a notebook reads it
        times.append(time.perf_counter() - t)
    con.close()
    env = environment(base)
    cmd = [sys.executable, "-m", "warehouse.cli", "sql", sql, "--root", str(root), "--format", "csv"]
    cwd = str(root.parent)  # not a checkout: `-m` puts the working directory first on sys.path
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)  # untimed: bytecode written
    if first.returncode:
        raise SystemExit(f"warehouse sql failed:\n{first.stderr}")
    cold = [run(cmd, env=env, cwd=cwd) for _ in range(runs)]
    print(f"\"mean per span for one trait and layer\": `{sql}` ({rows.num_rows:,} rows)\n")
    print("| where | first | median of the rest | CPU (median) | target |")
    print("|---|---|---|---|---|")
    warm = statistics.median(times[1:]) if len(times) > 1 else times[0]
    print(f"| warm connection (`warehouse.connect`, fetched as Arrow) | {times[0] * 1000:.0f} ms | {warm * 1000:.0f} ms | | < 1 s |")
    c = median_of(cold)
    print(f"| cold `warehouse sql --format csv` process | | {c.seconds * 1000:.0f} ms | {c.cpu_seconds * 1000:.0f} ms | < 1 s |",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--responses", type=int, default=10_000)
    ap.add_argument("--traits", type=int, default=20, choices=range(1, len(TRAITS) + 1), metavar=f"1..{len(TRAITS)}",
                    help="projection files per response (one per trait)")
    ap.add_argument("--runs", type=int, default=3, help="ingest rounds (each: the response files alone, the whole tree)")
    ap.add_argument("--query-runs", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=None, help="ingest worker processes (default: the CLI's, one per core)")
    ap.add_argument("--corpus", default="/tmp/warehouse-bench", help="where the tree and the warehouses are kept")
    a = ap.parse_args()
    base = Path(a.corpus)
    tree = base / f"token-values-{a.responses}x{a.traits}"
    build(tree, a.responses, a.traits)
    responses_dir = tree / "experiments" / EXPERIMENT / "inference" / "instruct" / "responses"
    contenders = [("response files alone (with their annotation files)", responses_dir),
                  (f"response files + {a.traits} projection files each", tree)]
    sizes = {contenders[0][0]: size_of(responses_dir), contenders[1][0]: size_of(tree)}
    say(f"input: {sizes[contenders[0][0]] / 1e6:,.0f} MB of response and annotation files, "
        f"{sizes[contenders[1][0]] / 1e6:,.0f} MB in all")
    work = base / f"token-values-{a.responses}x{a.traits}-work"
    work.mkdir(exist_ok=True)
    results, root = bench_ingest(contenders, a.runs, a.jobs, work)
    print(f"{a.responses:,} responses of {PROMPT_TOKENS + RESPONSE_TOKENS + 1} tokens, {a.traits} projection files each "
          f"(2 vectors), --jobs {a.jobs or 'default'} ({os.cpu_count()} cores), median of {a.runs}\n")
    ingest_table(results, sizes, a.responses)
    parse_floor(tree)
    storage_table(root)
    query_table(root, base, max(a.query_runs, 2))


if __name__ == "__main__":
    main()
