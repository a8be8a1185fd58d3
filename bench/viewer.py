"""The viewer's speed: from the command to the first page of a million responses, the list, one response with 2,000 per-token values, ``--out`` of 500.

    python bench/viewer.py [--responses 1000000] [--runs 5]

Uses the warehouse bench/queries.py builds (steering arrays, a fifth annotated; built here too if missing),
and a small one written here: an inference response of 400 tokens with sentences (cue_p) and spans, whose
per-token values (5 vectors x 400 tokens = 2,000) come through the Reader's ``setup`` seam as a
``token_values`` table. Pages are fetched over HTTP from the viewer's own server (uvicorn, in a thread).
Prints a markdown table: first run and the median of the rest. Progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import say  # noqa: E402

TOKENS = 400
VECTORS = 5


def million(base: Path, responses: int) -> Path:
    src, root = base / f"queries-{responses}", base / f"queries-{responses}-wh"
    if not (src / ".complete").exists():
        say(f"writing {responses:,} steering responses under {src} ...")
        subprocess.run([sys.executable, str(Path(__file__).parent / "corpora.py"), "steering", "--responses",
                        str(responses), "--annotate", "0.2", "--out", str(src)], check=True)
        (src / ".complete").touch()
    if not (root / ".warehouse" / "snapshots").is_dir():
        say(f"ingesting into {root} ...")
        subprocess.run([sys.executable, "-m", "warehouse.cli", "ingest", str(src), "--root", str(root), "-q"], check=True)
    return root


def tokens_warehouse(base: Path) -> Path:
    """One inference response of TOKENS tokens with sentences and spans."""
    import warehouse

    root = base / "viewer-tokens-wh"
    if (root / ".warehouse" / "snapshots").is_dir():
        return root
    d = base / "viewer-tokens" / "experiments" / "bench" / "inference" / "instruct" / "responses"
    words = [f" word{i % 97}" for i in range(TOKENS)]
    response = "".join(words)
    (d / "long").mkdir(parents=True, exist_ok=True)
    (d / "long" / "1.json").write_text(json.dumps({
        "prompt": "<bos>user: say many words\nmodel:", "response": response,
        "tokens": ["<bos>", "user", ":", " say", " many", " words", "\n", "model", ":"] + words,
        "token_ids": list(range(9 + TOKENS)), "prompt_end": 9,
        "sentence_boundaries": [{"sentence_num": i, "token_start": i * 20, "token_end": i * 20 + 20, "cue_p": i / 20}
                                for i in range(TOKENS // 20)]}))
    (d / "long_annotations.json").write_text(json.dumps({"annotations": [{"idx": 1, "spans": [
        {"span": "".join(words[i:i + 3]), "category": f"cat{i % 5}"} for i in range(0, TOKENS - 3, 40)]}]}))
    warehouse.ingest([str(base / "viewer-tokens")], str(root), progress=False)
    return root


def token_values(con) -> None:
    rid = con.execute("SELECT response_id FROM responses").fetchone()[0]
    rows = [(rid, "response", i, f"cat/trait{v}", 10 + v, "probe", ((i * 7 + v * 13) % 50) / 25 - 1)
            for v in range(VECTORS) for i in range(TOKENS)]
    con.execute("DROP VIEW IF EXISTS token_values")  # (the warehouse's own view of them: these stand in its place)
    con.execute("CREATE TABLE token_values (response_id VARCHAR, segment VARCHAR, token_index INTEGER, trait VARCHAR, "
                "layer INTEGER, method VARCHAR, value DOUBLE)")
    con.executemany("INSERT INTO token_values VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


class Serving:
    def __init__(self, reader):
        from warehouse.viewer.server import Server, bind

        self.server = Server(reader, bind(None))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        self.url = self.server.url

    def get(self, path: str) -> float:
        t = time.perf_counter()
        with urllib.request.urlopen(self.url + path, timeout=600) as r:
            r.read()
            assert r.status == 200
        return time.perf_counter() - t

    def close(self) -> None:
        self.server.stop()
        self.thread.join(30)


def from_the_command(root: Path) -> float:
    """Seconds from starting ``warehouse view`` (its own process, bytecode cached) to its first page answered."""
    import signal
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "warehouse.cli", "view", "--root", str(root), "--no-browser",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=600) as r:
                    r.read()
                return time.perf_counter() - t
            except OSError:
                if proc.poll() is not None:
                    raise SystemExit("warehouse view ended before answering") from None
                time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)


def row(name: str, times: list[float], target: str) -> None:
    rest = f"{statistics.median(times[1:]) * 1000:.0f} ms" if len(times) > 1 else ""
    print(f"| {name} | {times[0] * 1000:.0f} ms | {rest} | {target} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--responses", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "warehouse-bench"))
    a = ap.parse_args()
    base = Path(a.corpus)
    big = million(base, a.responses)
    small = tokens_warehouse(base)
    from warehouse.viewer import view
    from warehouse.viewer.data import Reader
    from warehouse.viewer.pages import Links, Pages

    print("| what | first | median of the next | target |\n|---|---|---|---|")
    row("`warehouse view`: from the command to its first page answered (HTTP)",
        [from_the_command(big) for _ in range(max(2, a.runs))], "< 1 s")
    t = time.perf_counter()
    reader = Reader(str(big))
    row(f"open {reader.total:,} responses: the selection's list made (once, before the URL is printed)",
        [time.perf_counter() - t], "")
    s = Serving(reader)
    first = s.get("")  # (reads its own rows' texts; the texts' columns are made from here on)
    t = time.perf_counter()
    reader.texts.wait()
    row("the texts' columns (previews, lengths) made, after the first page", [time.perf_counter() - t], "")
    row("the list's first page, from the request (HTTP)", [first] + [s.get("") for _ in range(a.runs - 1)], "< 1 s")
    row("first page sorted by trait score", [s.get("?sort=trait_score&desc=1") for _ in range(a.runs)], "< 1 s")
    row("first page sorted by response length", [s.get("?sort=response_chars&desc=1") for _ in range(a.runs)], "")
    row("page 10,000 sorted by coherence", [s.get("?sort=coherence_score&page=10000") for _ in range(a.runs)], "")
    annotated = reader.con.execute("SELECT response_id FROM annotations WHERE char_start IS NOT NULL LIMIT 1").fetchone()[0]
    row("one response with its spans, of the million (HTTP)", [s.get(f"responses/{annotated}") for _ in range(a.runs)],
        "")
    s.close()
    reader.close()

    reader = Reader(str(small), setup=token_values)
    rid = reader.con.execute("SELECT response_id FROM responses").fetchone()[0]
    pages = Pages(reader, Links())
    times = []
    for _ in range(a.runs):
        t = time.perf_counter()
        html = pages.response(rid)
        times.append(time.perf_counter() - t)
    assert html.count("<rect") == VECTORS * TOKENS and html.count('class="sentence') == TOKENS // 20
    row(f"one response: {TOKENS} tokens, {TOKENS // 20} sentences, spans, {VECTORS * TOKENS:,} per-token values "
        "(server time: read and render)", times, "< 200 ms")
    s = Serving(reader)
    row("the same over HTTP", [s.get(f"responses/{rid}") for _ in range(a.runs)], "")
    s.close()
    reader.close()

    where = "experiment = 'bench3' AND prompt_set = 'set8'"
    times = []
    for _ in range(max(2, a.runs // 2)):
        out = Path(tempfile.mkdtemp()) / "view.html"
        t = time.perf_counter()
        shown = view(str(big), where, out=out, limit=500)
        times.append(time.perf_counter() - t)
    row(f"--out of {shown.count} responses (of {shown.total:,} selected), {out.stat().st_size / 1e6:.1f} MB, "
        "opening the warehouse included", times, "< 5 s")


if __name__ == "__main__":
    main()
