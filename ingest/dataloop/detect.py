"""Which Dataloop document a file is, from its first bytes.

Two families share the ``shebang`` marker, written two ways:

* documents, the item's own bytes: ``{"shebang": "dataloop", "metadata": {"dltype": ...}, ...}``:
  prompt files (``prompts``) and ``llm_trace`` documents (``messages``; the real
  ones have no ``metadata`` at all, the SDK adds it on load);
* platform item JSON, what the platform says about an item (export, ``json/``
  folder of a dataset download): the shebang is an object,
  ``metadata.system.shebang = {"dltype": "prompt"}``.

trait-interp refuses any file holding ``"shebang"``; its prompt sets have a
``prompts`` list, never a shebang.
"""

from __future__ import annotations

import re

_DOCUMENT = re.compile(rb'"shebang"\s*:\s*"dataloop"')
_PLATFORM = re.compile(rb'"shebang"\s*:\s*\{\s*"dltype"\s*:\s*"([^"\\]*)"')
#: a document's declared type: the first ``dltype`` key (its ``metadata`` comes before its content)
_DLTYPE = re.compile(rb'(?<!\\)"dltype"\s*:\s*"([^"\\]*)"')

PROMPT = "prompt"
LLM_TRACE = "llm_trace"
#: the item types this format reads; a Dataloop file of another (``PCDFrames``: a LiDAR scene, ``link``,
#: ``filter``) holds no responses, and is left to the other formats like any file not of theirs
READ = (PROMPT, LLM_TRACE)


def is_document(head: bytes) -> bool:
    """A Dataloop document of a type this format reads (an llm_trace document may declare none)."""
    if _DOCUMENT.search(head) is None:
        return False
    declared = _DLTYPE.search(head)
    return declared is None or declared.group(1).decode("utf-8", "replace") in READ


def is_platform_item(head: bytes) -> bool:
    """The platform's item JSON of an item of a type this format reads."""
    found = _PLATFORM.search(head)
    return found is not None and found.group(1).decode("utf-8", "replace") in READ


def is_platform_value(obj: dict) -> bool:
    """A decoded platform item JSON (rather than a document)."""
    system = (obj.get("metadata") or {}).get("system") if isinstance(obj.get("metadata"), dict) else None
    return "shebang" not in obj and isinstance(system, dict) and isinstance(system.get("shebang"), dict)


def document_dltype(obj: dict) -> str | None:
    """The dltype a document declares, or the one its shape shows (llm_trace files carry none)."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and metadata.get("dltype") is not None:
        return metadata["dltype"]
    if "prompts" in obj:
        return PROMPT
    if "messages" in obj:
        return LLM_TRACE
    return None
