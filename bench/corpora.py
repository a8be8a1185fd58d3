"""Realistic benchmark corpora, at a size given on the command line.

    python bench/corpora.py afterimage --mb 1000 --out /tmp/corpus/ai
    python bench/corpora.py inference --files 100000 --out /tmp/corpus/inf
    python bench/corpora.py steering --mb 200 --out /tmp/corpus/steer
    python bench/corpora.py scale --mb 200 --out /tmp/corpus/scale

* afterimage: JSONL of multi-turn evaluated conversations (personas, contexts,
  five judge criteria with feedback), as AfterImage's JSONLStorage writes them.
* inference: one trait-interp file per prompt, ~400 tokens each (tokens and ids),
  written like dump_compact, spread over prompt sets in an experiments tree.
* steering: trait-interp steering and extraction arrays (100 responses a file).
* scale: JSONL of Scale turns with two candidates and ratings.

Deterministic for a given size. Progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path


def _vocabulary(size: int = 12000) -> list[str]:
    """Pseudo-words from syllables: text with a realistic spread of words, so it
    compresses like prose does rather than like a repeated phrase."""
    rng = random.Random(0)
    syllables = [a + b for a in "bcdfghjklmnprstvwz" for b in ("a", "e", "i", "o", "u", "ai", "ou", "ea")]
    words = {"the", "of", "and", "to", "a", "in", "is", "that", "it", "for"}
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.choice([1, 2, 2, 3, 3, 4]))))
    return sorted(words, key=lambda w: (len(w), w))


WORDS = _vocabulary()
#: Zipf weights, cumulated once: a few words are everywhere, most are rare
_CUM = list(__import__("itertools").accumulate(1 / (rank + 1) for rank in range(len(WORDS))))


def sentence(rng: random.Random, n: int) -> str:
    words = rng.choices(WORDS, cum_weights=_CUM, k=n)
    return " ".join(words).capitalize() + rng.choice([".", "!", "?", ","]) + " "


_POOL: list[str] = []


def text(rng: random.Random, words: int) -> str:
    """About ``words`` words of prose: sentences drawn from a large pool (made once), so
    big corpora are quick to write yet rarely repeat within a compressor's window."""
    if not _POOL:
        pool_rng = random.Random(99)
        _POOL.extend(sentence(pool_rng, pool_rng.randint(6, 18)) for _ in range(300_000))
    out, left = [], words
    while left > 0:
        s = rng.choice(_POOL)
        out.append(s)
        left -= s.count(" ")
    return "".join(out).strip()


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- AfterImage ------------------------------------------------------------------------------

PERSONAS = ["A curious beginner", "A retired teacher", "A junior developer", "A data scientist",
            "A homeowner comparing quotes", "A weekend baker", "A scout leader", "A nurse on night shifts"]
GRADES = ["perfect", "good", "needs_improvement", "bad", "not_acceptable"]


def afterimage_row(rng: random.Random, i: int) -> dict:
    turns = rng.choice([1, 1, 2, 3])
    conv = []
    for _ in range(turns):
        conv.append({"role": "user", "content": text(rng, rng.randint(10, 40)), "reasoning_content": None})
        conv.append({"role": "assistant", "content": text(rng, rng.randint(60, 160)),
                     "reasoning_content": text(rng, 30) if rng.random() < 0.2 else None})
    persona = rng.choice(PERSONAS)
    ctx = f"doc-{rng.randint(0, 5000)}"
    scores = {c: round(rng.random(), 3) for c in ("coherence", "factuality", "grounding", "helpfulness", "relevance")}
    return {
        "conversations": conv,
        "metadata": {"context_id": ctx, "context_ids": [ctx, f"doc-{rng.randint(0, 5000)}"], "persona_name": persona,
                     "persona_generation_depth": rng.randint(0, 2)},
        "instruction_context": text(rng, 50),
        "response_context": text(rng, 50),
        "persona": persona,
        "evaluation": {**{c: {"score": s, "feedback": text(rng, 8)} for c, s in scores.items()},
                       "overall_grade": rng.choice(GRADES)},
        "final_score": round(sum(scores.values()) / 5, 3),
    }


def build_afterimage(out: Path, mb: float, files: int = 1) -> None:
    rng = random.Random(1)
    out.mkdir(parents=True, exist_ok=True)
    target = int(mb * 1e6 / files)
    rows = 0
    for k in range(files):
        path = out / f"conversations_{k:03d}.jsonl"
        size = 0
        with open(path, "w") as f:
            while size < target:
                line = json.dumps(afterimage_row(rng, rows), ensure_ascii=False) + "\n"
                f.write(line)
                size += len(line.encode())
                rows += 1
                if rows % 100_000 == 0:
                    say(f"afterimage: {rows} rows")
    say(f"afterimage: {rows} rows, {mb} MB in {files} file(s) under {out}")


# --- trait-interp ------------------------------------------------------------------------------


def dump_compact(obj) -> str:
    import re

    s = json.dumps(obj, indent=2)
    return re.sub(r"\[\s*\n\s*([^\[\]{}]*?)\s*\n\s*\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", s, flags=re.DOTALL)


_INDEX = {w: i for i, w in enumerate(WORDS)}


def tokens_of(rng: random.Random, n: int) -> tuple[list[str], list[int], str]:
    toks = [(" " if rng.random() < 0.8 else "") + w for w in rng.choices(WORDS, cum_weights=_CUM, k=n)]
    return toks, [1000 + _INDEX[t.strip()] * 2 + (t[0] == " ") for t in toks], "".join(toks)


def inference_record(rng: random.Random, i: int, prompt_tokens: int = 50, response_tokens: int = 350) -> dict:
    p_toks, p_ids, p_text = tokens_of(rng, prompt_tokens)
    r_toks, r_ids, r_text = tokens_of(rng, response_tokens)
    return {
        "prompt": "<bos><start_of_turn>user\n" + p_text, "response": r_text, "system_prompt": None,
        "tokens": ["<bos>"] + p_toks + r_toks, "token_ids": [2] + p_ids + r_ids, "prompt_end": 1 + len(p_ids),
        "inference_model": "google/gemma-2-2b-it", "prompt_note": rng.choice(["roleplay", "factual", None]),
        "capture_date": f"2026-01-{rng.randint(1, 28):02d}T00:58:35.871205", "tags": [],
    }


def build_inference(out: Path, files: int) -> None:
    rng = random.Random(2)
    sets = max(1, files // 5000)
    for i in range(files):
        d = out / f"experiments/bench{i % 3}/inference/instruct/responses/set{i % sets}/sub"
        if i < sets * 3:
            d.mkdir(parents=True, exist_ok=True)
        (d / f"{i}.json").write_text(dump_compact(inference_record(rng, i)))
        if (i + 1) % 20000 == 0:
            say(f"inference: {i + 1} files")
    say(f"inference: {files} files under {out}")


CATEGORIES = ("flattery", "agreement", "hedging", "apology", "praise")


def build_steering(out: Path, mb: float, responses: int | None = None, annotate: float = 0.0) -> None:
    """Steering arrays (100 responses a file) over 5 experiments x 20 prompt sets, extraction
    arrays beside them; with ``annotate``, that share of steering files gets an annotation file."""
    rng = random.Random(3)
    size, n, count = 0, 0, 0
    while (responses is None and size < mb * 1e6) or (responses is not None and count < responses):
        layer, coef = rng.choice([10, 15, 20, 25]), rng.choice([2.0, 4.0, 6.0, 8.0])
        d = (out / f"experiments/bench{n % 5}/steering/cat/trait{n % 7}/instruct/response__5/set{n % 20}/responses"
             / "residual/probe")
        d.mkdir(parents=True, exist_ok=True)
        rows = [{"prompt": text(rng, 20), "response": text(rng, 120), "system_prompt": None,
                 "trait_score": round(rng.uniform(0, 100), 2), "coherence_score": round(rng.uniform(0, 100), 1)}
                for _ in range(100)]
        name = f"L{layer}_c{coef:.1f}_2026-01-{n % 28 + 1:02d}_{n // 60 % 24:02d}-{n % 60:02d}-{n // 1440 % 60:02d}"
        data = json.dumps(rows, indent=2)
        (d / f"{name}.json").write_text(data)
        if rng.random() < annotate:
            entries = []
            for i, r in enumerate(rows):
                if rng.random() < 0.3:
                    words = r["response"].split()
                    start = rng.randrange(max(1, len(words) - 4))
                    entries.append({"idx": i, "spans": [{"span": " ".join(words[start:start + 3]),
                                                         "category": rng.choice(CATEGORIES)}]})
            (d / f"{name}_annotations.json").write_text(json.dumps({"annotations": entries}))
        if annotate == 0.0 and n % 2 == 0:
            e = out / f"experiments/bench/extraction/cat/trait{n}/base/responses"
            e.mkdir(parents=True, exist_ok=True)
            (e / "pos.json").write_text(json.dumps([{"prompt": r["prompt"], "response": r["response"], "system_prompt": None}
                                                    for r in rows], indent=2))
            size += len(data) // 2
            count += 100
        size += len(data)
        count += 100
        n += 1
        if n % 1000 == 0:
            say(f"steering: {count} responses")
    say(f"steering: {n} steering files, {count} responses under {out}")


# --- Scale -------------------------------------------------------------------------------------------


def scale_turn(rng: random.Random, i: int) -> dict:
    def ann(key, value, possible):
        return {"id": f"an_{i}_{key}", "key": key, "type": "integer", "title": key, "value": value,
                "possible_values": possible}

    return {
        "id": f"turn_{i}",
        "messages": [
            {"role": "user", "content": {"text": text(rng, 30)}, "source_id": "user", "annotations": []},
            *[{"role": "assistant", "content": {"text": text(rng, 150)}, "source_id": f"model_{k}",
               "model_parameters": {"model": f"model-{k}", "temperature": 0.7, "max_completion_tokens": 1000},
               "annotations": [ann("helpfulness", rng.randint(1, 7), [1, 2, 3, 4, 5, 6, 7])]} for k in (1, 2)],
        ],
        "annotations": [{"key": "selected_model_id", "value": rng.choice(["model_1", "model_2"])},
                        ann("likert_value", rng.randint(1, 7), [1, 2, 3, 4, 5, 6, 7])],
    }


def build_scale(out: Path, mb: float) -> None:
    rng = random.Random(4)
    out.mkdir(parents=True, exist_ok=True)
    size, n = 0, 0
    with open(out / "turns.jsonl", "w") as f:
        while size < mb * 1e6:
            line = json.dumps(scale_turn(rng, n)) + "\n"
            f.write(line)
            size += len(line)
            n += 1
    say(f"scale: {n} turns under {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["afterimage", "inference", "steering", "scale"])
    ap.add_argument("--mb", type=float, default=100.0, help="size in MB (afterimage, steering, scale)")
    ap.add_argument("--files", type=int, default=1000, help="number of files (inference); JSONL files (afterimage)")
    ap.add_argument("--responses", type=int, default=None, help="steering: stop at this many responses instead of --mb")
    ap.add_argument("--annotate", type=float, default=0.0, help="steering: share of files with an annotation file")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out = Path(a.out)
    if a.kind == "afterimage":
        build_afterimage(out, a.mb, files=a.files if a.files != 1000 else 1)
    elif a.kind == "inference":
        build_inference(out, a.files)
    elif a.kind == "steering":
        build_steering(out, a.mb, a.responses, a.annotate)
    else:
        build_scale(out, a.mb)


if __name__ == "__main__":
    main()
