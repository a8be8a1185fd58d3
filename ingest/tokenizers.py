"""Re-tokenizing text the way trait-interp does, with a tokenizer from a local directory or the local
Hugging Face cache.

Only used for a record without stored tokens: with the tokenizer the run was given (``--tokenizer DIR``
or ``--tokenizer MODEL``, a model id found in the local Hugging Face cache), or else the one of the
response's own ``inference_model`` when the cache holds it. The cache is read as
``HF_HUB_OFFLINE=1`` reads it: nothing is ever downloaded. transformers and huggingface_hub are
imported here, on first use, never at start-up.

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
import re
from dataclasses import dataclass

from warehouse.errors import UsageError


@dataclass(frozen=True)
class Tokenized:
    prompt_tokens: int | None  # None when there was no prompt text
    offsets: list[tuple[int, int]]  # character span of each response token


@dataclass(frozen=True)
class Located:
    """Where a tokenizer is, or was looked for in vain (``directory`` None), and the files that answer rests on."""

    name: str  # what ``annotations.tokenizer`` records: the folder, or the model id
    directory: str | None  # the folder holding tokenizer.json; None: not there
    depends_on: tuple[str, ...]  # files whose change (or appearance) may change the answer
    revision: str | None = None  # the model's revision in the cache (``annotations.tokenizer_revision``)


#: what to do about a tokenizer that cannot be used, said with each problem
INSTEAD = "give --tokenizer another folder or model, or --no-tokenizer to do without"
#: the file a fast tokenizer's folder holds (save_pretrained writes it): the source of character offsets
TOKENIZER_JSON = "tokenizer.json"
#: a model id as the hub spells one (``org/name`` or ``name``: huggingface_hub's validate_repo_id, without its import)
_MODEL_ID = re.compile(r"(?:[\w.-]+/)?[\w.-]+")
_NO_TRANSFORMERS = "needs transformers, which is not installed: pip install 'response-warehouse[tokenize]'"


class Unusable(Exception):
    """A tokenizer that is there but cannot be used: the message says why."""


def is_model_id(value: str) -> bool:
    return (bool(_MODEL_ID.fullmatch(value)) and len(value) <= 96 and "--" not in value and ".." not in value
            and not value.startswith(("-", ".")) and not value.endswith(("-", ".", ".git")))


def hub_cache() -> str:
    """The local Hugging Face hub cache, as huggingface_hub finds it (``HF_HUB_CACHE``, else ``HF_HOME``/hub,
    else ``~/.cache/huggingface/hub``), read from the environment now: huggingface_hub reads it once, when
    first imported, and a test or a notebook may set it later."""
    env = os.environ
    cache = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    if not cache:
        home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
        cache = os.path.join(home, "hub")
    return os.path.expanduser(cache)


def cached(model: str) -> Located:
    """The tokenizer of ``model`` in the local hub cache (the revision ``refs/main`` names), never downloaded.

    It rests on ``refs/main`` (a new revision moves it) and, while the revision has none, on the
    ``tokenizer.json`` it would hold: a tokenizer downloaded later is found by the next run. A snapshot is
    the content of its revision, so the tokenizer found needs no more.
    """
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.file_download import repo_folder_name

    cache = hub_cache()
    repo = os.path.join(cache, repo_folder_name(repo_id=model, repo_type="model"))
    ref = os.path.join(repo, "refs", "main")
    path = try_to_load_from_cache(model, TOKENIZER_JSON, cache_dir=cache)
    if isinstance(path, str):
        snapshot = os.path.dirname(path)
        return Located(model, snapshot, (ref,), os.path.basename(snapshot))
    try:
        with open(ref, encoding="utf-8") as f:
            revision = f.read().strip()
    except OSError:
        return Located(model, None, (ref,))
    return Located(model, None, (ref, os.path.join(repo, "snapshots", revision, TOKENIZER_JSON)))


def download(model: str) -> str:
    """The command that puts the tokenizer of ``model`` into the cache, on a machine with network."""
    return f"`hf download {model} --include 'tokenizer*'`"


def problem(value: str) -> str | None:
    """Why ``locate(value)`` and ``load`` would fail, as far as can be told without importing transformers
    (seconds): asked of every run that holds a tokenizer, before it reads or changes anything. A model id
    is looked up in the cache (huggingface_hub is imported for it, a fraction of transformers)."""
    if not isinstance(value, str) or not value:
        return "give a local tokenizer directory, or the id of a model in the local Hugging Face cache"
    if os.path.isabs(value):  # a folder (the run made a relative one absolute)
        if not os.path.isdir(value):
            return ("not a directory (give a local tokenizer directory, e.g. one saved with save_pretrained, "
                    "or a model id)")
        if not os.path.isfile(os.path.join(value, TOKENIZER_JSON)):
            return (f"no {TOKENIZER_JSON} in it: a fast tokenizer is needed for character offsets "
                    "(a folder saved with save_pretrained holds one)")
    elif not is_model_id(value):
        return "not a directory, nor a model id (org/name)"
    if not usable():
        return _NO_TRANSFORMERS
    if not os.path.isabs(value) and cached(value).directory is None:
        return (f"not a directory, and not in the local Hugging Face cache ({hub_cache()}): download its tokenizer "
                f"on a machine with network ({download(value)}) into that cache, or give --tokenizer a tokenizer folder")
    return None


def usable() -> bool:
    """Whether tokenizers can be found and loaded here: the ``tokenize`` extra is installed."""
    return _installed("transformers") and _installed("huggingface_hub")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module of that name whose import failed before
        return False


def locate(value: str) -> Located:
    """The tokenizer the run was given: a folder, or a model in the local hub cache.

    Raises: ``UsageError`` when it is not there (it went since the run began: ``problem`` was asked).
    """
    reason = problem(value)
    if reason is not None:
        raise UsageError(f"--tokenizer {value}: {reason}")
    if os.path.isabs(value):
        return Located(value, value, (os.path.join(value, TOKENIZER_JSON),))
    return cached(value)


def load_given(value: str, found: Located):
    """The tokenizer the run was given (``locate``), loaded.

    Raises: ``UsageError`` when it cannot be loaded: the run stops, as for ``problem``'s answers
    (a problem with the tool is no fault of the file being read).
    """
    try:
        return load(found.directory)
    except Unusable as e:
        raise UsageError(f"--tokenizer {value}: {e}; {INSTEAD}") from None


@functools.lru_cache(maxsize=4)
def load(directory: str):
    """A fast tokenizer from a local directory (no hub access).

    Raises: ``Unusable`` saying why it cannot be used.
    """
    if not _installed("transformers"):
        raise Unusable(_NO_TRANSFORMERS)
    # transformers announces at import that torch is missing: not news for a tokenizer
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        from transformers import AutoTokenizer
    except ImportError as e:  # installed but broken, or blocked
        raise Unusable(f"{_NO_TRANSFORMERS} ({e})") from None
    try:
        tok = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    except Exception as e:  # whatever a damaged folder makes transformers raise
        raise Unusable(f"cannot load a tokenizer from it ({type(e).__name__}: {_first_line(e)})") from None
    if not getattr(tok, "is_fast", False):
        raise Unusable(f"a fast tokenizer ({TOKENIZER_JSON}) is needed for character offsets")
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
