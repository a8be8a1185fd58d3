"""Which responses a trait-interp annotation file annotates, and their text and tokens.

The target responses are read from disk as *dependencies* of the annotation
file (``SourceFile.read_dependency``): when one of them changes, appears or
disappears, the annotation file is ingested again. So an annotation file may be
ingested before or after its responses, and the rows come out the same.

Where the targets are (NOTES.md):

* array files: ``X_annotations.json`` beside ``X.json``, ``idx`` = array index;
* inference prompt sets: ``responses/{prompt_set}_annotations.json`` beside the
  directory ``responses/{prompt_set}/``, ``idx`` = prompt id (int or string);
* token-range files keyed by prompt id may name their responses in
  ``metadata.response_source`` (a path relative to the project root, looked up
  under every parent directory of the annotation file inside the ingested tree).

Every path built from the file's data (``idx``, ``response_source``) is read
through ``SourceFile``, which refuses one outside the tree being ingested; the
refusal becomes the target's ``unresolved_reason``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from warehouse.errors import ReferenceRefused, where
from warehouse.formatkit.opening import normpath
from warehouse.formatkit.readers import decode_json
from warehouse.formatkit.records import RecordContext, RecordError, stable_id
from warehouse.formatkit.source import SourceFile

from .. import spans as spanlib
from .. import tokenizers
from .responses import map_response

#: ``X_annotations.json`` annotates ``X.json`` (so do ``X_annotations_chars.json``, ``X_annotations_v2.json``, ...)
_SUFFIX = re.compile(r"_annotations(?:_[A-Za-z0-9]+)*\.json$")


@dataclass
class Target:
    """One annotated response, as far as it could be found."""

    response_id: str | None
    where: str | None  # the response's place (file[idx] or file), or what was looked for
    text: str | None = None  # the response text
    tokens: list[str] | None = None  # the full stored token sequence
    offsets: list[tuple[int, int]] | None = None  # character span of each response token
    token_source: str | None = None  # stored_tokens or tokenizer
    tokenizer: tokenizers.Located | None = None  # the tokenizer that made the offsets (token_source tokenizer)
    prompt_tokens: int | None = None
    missing: str | None = None  # why there is no text
    no_tokens: str | None = None  # why there are no token offsets


@dataclass
class Resolver:
    src: SourceFile
    mode: str | None  # "array", "dir" or None (unknown)
    location: str | None  # the array file or the prompt-set directory
    why_unknown: str | None = None
    #: the run's ``--tokenizer`` (as given, and where it is): used for every response without stored tokens
    given: tuple[str, tokenizers.Located] | None = None
    _array: list | None = field(default=None, repr=False)
    _models: dict[str, tokenizers.Located] = field(default_factory=dict, repr=False)  # looked up in the cache
    _array_error: str | None = None

    def describe(self) -> str | None:
        return self.location

    def target(self, idx: Any) -> Target:
        if self.mode is None:
            return Target(None, None, missing=self.why_unknown)
        if self.mode == "array":
            return self._array_target(idx)
        return self._dir_target(idx)

    # --- array files -----------------------------------------------------------------

    def load_array(self) -> None:
        try:
            data = self.src.read_dependency(self.location)
        except ReferenceRefused as e:
            self._array_error = e.message
            return
        if data is None:
            self._array_error = f"response file not found: {self.location}"
            return
        try:
            value = decode_json(data)
        except RecordError as e:
            self._array_error = f"response file {self.location} is not readable JSON ({e.message})"
            return
        self._array = value if isinstance(value, list) else [value]

    def _array_target(self, idx: Any) -> Target:
        index = as_index(idx)
        locator = f"[{index}]" if index is not None else f"[{idx!r}]"
        t = Target(stable_id(self.location, locator) if index is not None else None, where(self.location, locator))
        if index is None:
            t.missing = f"idx {idx!r} is not an array index"
        elif self._array_error:
            t.missing = self._array_error
        elif not 0 <= index < len(self._array):
            t.missing = f"no element [{index}] in {self.location} ({len(self._array)} elements)"
        else:
            self._fill(t, self._array[index])
        return t

    # --- one file per prompt id -------------------------------------------------------

    def _dir_target(self, idx: Any) -> Target:
        pid = str(idx)
        path = os.path.join(self.location, f"{pid}.json")
        t = Target(stable_id(path, ""), path)
        try:
            data = self.src.read_dependency(path)
        except ReferenceRefused as e:
            t.missing = e.message
            return t
        if data is None:
            t.missing = f"response file not found: {path}"
            return t
        try:
            value = decode_json(data)
        except RecordError as e:
            t.missing = f"response file {path} is not readable JSON ({e.message})"
            return t
        self._fill(t, value[0] if isinstance(value, list) and len(value) == 1 else value)
        return t

    # --- text and tokens of one response ----------------------------------------------------

    def _fill(self, t: Target, value: Any) -> None:
        try:
            row = map_response(value, RecordContext("", "", None, "trait_interp"))["responses"][0]
        except RecordError as e:
            t.missing = f"the target is not a response record ({e.message})"
            return
        text, tokens, prompt_end = row.get("response"), row.get("tokens"), row.get("prompt_end")
        t.text, t.tokens = text, tokens
        if text is None:
            t.missing = "the target response has no text"
            return
        if tokens is not None and prompt_end is not None:
            offsets = spanlib.align_tokens(text, tokens[prompt_end:])
            if offsets is not None:
                t.offsets, t.token_source, t.prompt_tokens = offsets, "stored_tokens", prompt_end
                return
            t.no_tokens = "the stored tokens do not spell the response"
        if self.given is not None:
            tok = tokenizers.load_given(*self.given)
            self._tokenize(t, tok, self.given[1], row)
            return
        # none given: the tokenizer of the response's own model, when the local hub cache holds it
        model = row.get("inference_model")
        why = t.no_tokens or "the response has no stored tokens"
        if model is None or not tokenizers.is_model_id(model):
            t.no_tokens = f"{why} and names no model; ingest with --tokenizer DIR or MODEL for token ranges"
            return
        if not tokenizers.usable():
            t.no_tokens = (f"{why}; ingest with --tokenizer DIR or MODEL for token ranges, or install "
                           f"'response-warehouse[tokenize]' to use the tokenizer of its model {model} when the local "
                           "Hugging Face cache holds it")
            return
        found = self._cached(model)
        if found.directory is None:
            t.no_tokens = (f"{why}, and the local Hugging Face cache holds no tokenizer of its model {model}: download "
                           f"it ({tokenizers.download(model)}) and ingest again, or ingest with --tokenizer DIR or MODEL")
            return
        try:
            tok = tokenizers.load(found.directory)
        except tokenizers.Unusable as e:  # not asked for: the spans say so, and the run goes on
            t.no_tokens = f"{why}, and the tokenizer of its model {model} in the local Hugging Face cache: {e}"
            return
        self._tokenize(t, tok, found, row)

    @staticmethod
    def _tokenize(t: Target, tok, found: tokenizers.Located, row: dict) -> None:
        tk = tokenizers.tokenize(tok, row.get("prompt"), t.text)
        t.offsets, t.token_source, t.prompt_tokens = tk.offsets, "tokenizer", tk.prompt_tokens
        t.tokenizer, t.no_tokens = found, None

    def _cached(self, model: str) -> tokenizers.Located:
        """The tokenizer of the response's own model in the local hub cache, looked up once per file; what the
        answer rests on is a dependency of the file, so a tokenizer downloaded (or updated) later is used."""
        if model not in self._models:
            found = self._models[model] = tokenizers.cached(model)
            for path in found.depends_on:
                self.src.read_dependency(path, from_data=False)
        return self._models[model]


def as_index(idx: Any) -> int | None:
    """The response position or prompt id an entry's ``idx`` names when it is an integer (``"35"`` too)."""
    if isinstance(idx, bool):
        return None
    if isinstance(idx, int):
        return idx
    if isinstance(idx, str) and idx.strip().lstrip("-").isdigit():
        return int(idx)
    return None


def base_name(path: str) -> tuple[str, str]:
    """(directory, name) of what ``.../name_annotations.json`` annotates."""
    d, file = os.path.split(path)
    match = _SUFFIX.search(file)
    return d, file[: match.start()] if match else os.path.splitext(file)[0]


def resolver_for(src: SourceFile, form: str, root: dict) -> Resolver:
    r = _resolver_for(src, form, root)
    # The tokenizer is a dependency too: another one, a retrained one or a new revision in the cache redoes the file.
    value = src.option("tokenizer")
    if value:
        found = tokenizers.locate(value)
        for path in found.depends_on:
            src.read_dependency(path, from_data=False)
        r.given = (value, found)
    return r


def _resolver_for(src: SourceFile, form: str, root: dict) -> Resolver:
    d, name = base_name(src.path)
    array_file, set_dir = os.path.join(d, f"{name}.json"), os.path.join(d, name)
    if form in ("unified", "dense", "hacks", "biases"):
        # Array files and prompt-set directories both use idx; what is on disk decides,
        # and both places are dependencies, so the choice is made again when they appear.
        r = Resolver(src, "array", array_file)
        r.load_array()
        src.list_dependency_dir(set_dir)
        if r._array_error and (src.filesystems.isdir(set_dir) or "/inference/" in src.path):
            return Resolver(src, "dir", set_dir)
        return r
    if form in ("detailed", "audit"):
        metadata = root.get("metadata") if isinstance(root.get("metadata"), dict) else {}
        source = metadata.get("response_source")
        if isinstance(source, str) and source.strip():
            for parent in _parents(d, src.tree):
                candidate = normpath(os.path.join(parent, source))  # a bucket URL stays one
                try:
                    src.list_dependency_dir(candidate)  # so the responses are found when they appear
                except ReferenceRefused as e:
                    return Resolver(src, None, None, f"metadata.response_source {source!r}: {e.message}")
                if src.filesystems.isdir(candidate):
                    return Resolver(src, "dir", candidate)
            return Resolver(
                src, None, None,
                f"metadata.response_source {source!r} was not found under any parent directory of the annotation "
                f"file inside {src.tree}",
            )
        src.list_dependency_dir(set_dir)
        if src.filesystems.isdir(set_dir) or "/inference/" in src.path:
            return Resolver(src, "dir", set_dir)
        return Resolver(
            src, None, None,
            "the file does not say which responses it annotates (no metadata.response_source, "
            "and it is not beside a prompt-set directory)",
        )
    return Resolver(src, None, None, "sentence categories are keyed by problem and condition, not by response")


def _parents(d: str, tree: str):
    """``d`` and its parents, up to ``tree`` (the files above it are not the run's to read)."""
    d = normpath(d)
    while True:
        yield d
        parent = os.path.dirname(d)
        if parent == d or d == tree or not d.startswith(tree):
            return
        d = parent

