"""Which kind of trait-interp file a path is, from the path alone.

trait-interp keeps several kinds of JSON side by side (layouts in docs/paths.md):

* response files: arrays (extraction, steering) or single objects (inference, rollouts);
* generation parameters: ``responses/metadata.json`` (and the older
  ``{trait}/generation_metadata.json``);
* prompt sets, the inputs: ``datasets/inference/{prompt_set}.json`` (or the older
  ``inference/prompts/``) and steering question sets
  ``datasets/traits/{trait}/steering.json`` (or ``analysis/steering/prompts/{trait}.json``);
* annotation files: ``X_annotations.json`` beside ``X.json``, or any file whose content
  says it is one (``metadata.response_source``, ``detailed_annotations``), whatever its
  name (``bias_exploitation_annotations_v2.json``, ``..._auto.json``).
"""

from __future__ import annotations

import functools
import os
import re

RESPONSES = "responses"
GENERATION_METADATA = "generation_metadata"
PROMPT_SET = "prompt_set"
ANNOTATIONS = "annotations"

#: the envelope key that carries a record's kind from ``records`` to ``map``, decided once per
#: file; a record without it (a response file's records carry no envelope) is a response
KIND = "kind"

#: A pattern that starts ``(?:^|/)`` is tried at every character of a path (1-2 us a path, for every
#: file, in several patterns: ~0.1 CPU-s per 20,000 files); each is asked only when the path holds a
#: literal every match of it holds (a substring test, far cheaper): ``_search``.
_PROMPT_SET_DIRS = re.compile(r"(?:^|/)(?:datasets/inference|inference/prompts|analysis/steering/prompts)/")
_STEERING_QUESTIONS = re.compile(r"(?:^|/)datasets/traits/.+/steering\.json$", re.DOTALL)  # a name may hold a newline
_ANNOTATION_SUFFIX = re.compile(r"_annotations(?:_chars|_tokens)?\.json$")
#: keys only annotation files have (a key, not text inside a string: no backslash before the quote)
_ANNOTATION_CONTENT = re.compile(rb'(?<!\\)"(?:response_source|detailed_annotations)"\s*:')
#: the regex can match only where one of these is: a substring test (memchr speed) rules most files
#: out first. The lookbehind keeps the regex from skipping ahead to a literal: 75 us on an 8 KB head,
#: asked twice per file (sniff, records): 15 s of CPU over 100,000 inference files.
_ANNOTATION_KEYS = (b'"response_source"', b'"detailed_annotations"')


def kind_of(path: str, head: bytes = b"") -> str:
    """The kind by the path, or by the content (``head``: the file's first bytes) for an
    annotation file with another name. Without ``head`` the path alone decides."""
    kind = kind_of_path(path)
    if kind == RESPONSES and head and any(k in head for k in _ANNOTATION_KEYS) and _ANNOTATION_CONTENT.search(head):
        return ANNOTATIONS
    return kind


@functools.lru_cache(maxsize=8192)  # asked by sniff and records for every file
def kind_of_path(path: str) -> str:
    name = os.path.basename(path)
    parent = os.path.basename(os.path.dirname(path))
    if _ANNOTATION_SUFFIX.search(name):
        return ANNOTATIONS
    if name == "generation_metadata.json" or (name == "metadata.json" and parent in ("responses", "val_responses")):
        return GENERATION_METADATA
    if (_search(_PROMPT_SET_DIRS, path, "datasets/inference/", "prompts/")
            or _search(_STEERING_QUESTIONS, path, "steering.json")):
        return PROMPT_SET
    return RESPONSES


def record_keys(head: bytes) -> set[str]:
    """The keys of a file's first record as far as its first bytes show them: the top-level object's,
    or the first element's of a top-level array (the shapes of a response file)."""
    import ijson  # a C parser; imported here, for the few files their path does not decide

    keys: set[str] = set()
    try:  # text that is not UTF-8 is the record path's to report (decode stage), not a reason to look away
        for prefix, event, value in ijson.parse(head.decode("utf-8", "replace").encode()):
            if event == "map_key" and prefix in ("", "item"):
                keys.add(value)
            elif event == "end_map" and prefix in ("", "item"):
                break  # the first record is whole
    except ijson.JSONError:  # the head ends mid-file, or is no JSON
        pass
    return keys


def responses_dir_of_metadata(path: str) -> str:
    """The directory of response files a generation-parameters file describes."""
    d = os.path.dirname(path)
    if os.path.basename(path) == "generation_metadata.json":
        return os.path.join(d, "responses")
    return d


def in_experiments_tree(path: str) -> bool:
    return "/experiments/" in path or path.startswith("experiments/")


# Files trait-interp writes beside its records that hold none (NOTES.md, "Exact paths"):
# catalogued with the reason, never quarantined, so --strict passes over them.
_STEERING_RESULTS = re.compile(r"(?:^|/)experiments/[^/]+/steering/(?:.+/)?results\.jsonl?$", re.DOTALL)
_EXPERIMENT_CONFIG = re.compile(r"(?:^|/)experiments/[^/]+/config\.json$")


def not_records(path: str) -> str | None:
    """Why a trait-interp file holds no records, or None."""
    if _search(_STEERING_RESULTS, path, "/steering/"):
        return ("trait-interp steering results: per-run aggregate scores by layer and coefficient, "
                "not response records (the responses are in the responses/ folder beside it)")
    if _search(_EXPERIMENT_CONFIG, path, "config.json"):
        return "trait-interp experiment config (model variants): settings, not records"
    return None


def _search(pattern: re.Pattern, path: str, *needed: str) -> bool:
    """``pattern.search(path)``, asked only when ``path`` holds one of ``needed``: literals one of
    which every match of ``pattern`` holds."""
    for literal in needed:
        if literal in path:
            return pattern.search(path) is not None
    return False
