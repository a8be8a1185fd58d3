"""Re-tokenizing text the way trait-interp does, with a tokenizer from a local directory.

Only used when a record has no stored tokens and ``--tokenizer DIR`` was given.
transformers is imported here, on first use, never at start-up.

trait-interp tokenizes the prompt and the response separately
(``utils/model.py::tokenize_batch``): for the prompt, special tokens are added
unless the text already starts with the tokenizer's BOS token (one BOS-prefixed
text turns them off for the whole batch; tokenizers without a BOS token always
add them), and a doubled BOS is an error; the response is encoded with
``add_special_tokens=False``. Token ranges are response-relative, so the
prompt's token count (``prompt_tokens``) is what turns them into positions in the
full sequence, e.g. of an activation tensor.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass

from warehouse.errors import UsageError


@dataclass(frozen=True)
class Tokenized:
    prompt_tokens: int | None  # None when there was no prompt text
    offsets: list[tuple[int, int]]  # character span of each response token


#: what to do about a tokenizer that cannot be used, said with each problem
INSTEAD = "give --tokenizer another folder, or --no-tokenizer to do without"
#: the file a fast tokenizer's folder holds (save_pretrained writes it): the source of character offsets
TOKENIZER_JSON = "tokenizer.json"


def problem(directory: str) -> str | None:
    """Why ``load(directory)`` would fail, as far as can be told without importing transformers
    (seconds): asked of every run that holds a tokenizer, before it reads or changes anything."""
    if not isinstance(directory, str) or not os.path.isdir(directory):
        return "not a directory (give a local tokenizer directory, e.g. one saved with save_pretrained)"
    if not os.path.isfile(os.path.join(directory, TOKENIZER_JSON)):
        return (f"no {TOKENIZER_JSON} in it: a fast tokenizer is needed for character offsets "
                "(a folder saved with save_pretrained holds one)")
    try:
        missing = importlib.util.find_spec("transformers") is None
    except (ImportError, ValueError):  # a module of that name whose import failed before
        missing = True
    return _NO_TRANSFORMERS if missing else None


_NO_TRANSFORMERS = "needs transformers, which is not installed: pip install 'response-warehouse[tokenize]'"


@functools.lru_cache(maxsize=4)
def load(directory: str):
    """A fast tokenizer from a local directory (no hub access).

    Raises: ``UsageError`` when it cannot be loaded: the run stops, as for ``problem``'s answers
    (a problem with the tool is no fault of the file being read).
    """
    reason = problem(directory)
    if reason is not None:
        raise UsageError(f"--tokenizer {directory}: {reason}")
    # transformers announces at import that torch is missing: not news for a tokenizer
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        from transformers import AutoTokenizer
    except ImportError as e:  # installed but broken, or blocked
        raise UsageError(f"--tokenizer {directory}: {_NO_TRANSFORMERS} ({e})") from None
    try:
        tok = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    except Exception as e:  # whatever a damaged folder makes transformers raise
        raise UsageError(f"--tokenizer {directory}: cannot load a tokenizer from it "
                         f"({type(e).__name__}: {_first_line(e)}); {INSTEAD}") from None
    if not getattr(tok, "is_fast", False):
        raise UsageError(f"--tokenizer {directory}: a fast tokenizer ({TOKENIZER_JSON}) is needed for character "
                         f"offsets; {INSTEAD}")
    return tok


def _first_line(e: Exception) -> str:
    """The first line of an exception's message: the error stays one line."""
    return next(iter(str(e).strip().splitlines()), "")


def prompt_ids(tok, prompts: list[str]) -> list[list[int]]:
    """Token ids of prompts under tokenize_batch's BOS rule."""
    bos = tok.bos_token
    has_bos = bool(bos) and any(p.startswith(bos) for p in prompts)
    ids = tok(prompts, add_special_tokens=not has_bos)["input_ids"]
    if ids and len(ids[0]) >= 2 and tok.bos_token_id is not None and ids[0][0] == ids[0][1] == tok.bos_token_id:
        raise ValueError("Double BOS: the prompt starts with a BOS token and another was added")
    return ids


def tokenize(tok, prompt: str | None, response: str) -> Tokenized:
    enc = tok(response, add_special_tokens=False, return_offsets_mapping=True)
    offsets = [tuple(o) for o in enc["offset_mapping"]]
    count = len(prompt_ids(tok, [prompt])[0]) if prompt is not None else None
    return Tokenized(count, offsets)
