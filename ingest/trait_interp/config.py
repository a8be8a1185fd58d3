"""An experiment's ``config.json`` into ``model_variants``: which model each variant runs.

trait-interp keeps one per experiment (``experiments/{experiment}/config.json``, read by
``utils/paths.py`` ``get_model_variant``/``get_default_variant``)::

    {"defaults": {"extraction": "base", "application": "instruct"},
     "model_variants": {"base": {"model": "Qwen/Qwen2.5-7B"}, "instruct": {"model": "...", "lora": "..."}}}

Each variant is one record (``.model_variants["instruct"]``): its model, its LoRA adapter, and the
``defaults`` naming it (``default_for``). Whatever else the file holds is kept in every row's
``extra`` (under ``config``), and so is a default naming no variant of the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from warehouse.formatkit.readers import json_whole_record
from warehouse.formatkit.records import Mapped, Record, RecordContext, RecordError, key_step
from warehouse.formatkit.source import SourceFile

from ..fields import as_fields, json_type, preview
from .kinds import EXPERIMENT_CONFIG, KIND, experiment_of_config


def config_records(src: SourceFile) -> Iterator[Record]:
    doc = json_whole_record(src)
    if doc.error is not None:
        yield doc
        return
    if not isinstance(doc.value, dict):
        yield Record("", doc.value, error=RecordError(
            f"experiment config: expected an object with model_variants, got {json_type(doc.value)} {preview(doc.value)}"))
        return
    variants = doc.value.get("model_variants")
    if variants is not None and not isinstance(variants, dict):
        yield Record("", doc.value, error=RecordError(
            f"model_variants: expected an object {{variant: {{model, lora?}}}}, got {json_type(variants)} {preview(variants)}",
            sub_locator=".model_variants"))
        return
    defaults = doc.value.get("defaults")
    if defaults is not None and not isinstance(defaults, dict):
        yield Record("", doc.value, error=RecordError(
            f"defaults: expected an object {{pipeline: variant}}, got {json_type(defaults)} {preview(defaults)}",
            sub_locator=".defaults"))
        return
    config = {k: v for k, v in doc.value.items() if k != "model_variants"}
    envelope = {KIND: EXPERIMENT_CONFIG, "config": config, "variants": sorted(variants or ())}
    if not variants:  # no variant to carry the file: one row of its own, variant NULL
        yield Record("", None, envelope=envelope)
        return
    for i, (name, spec) in enumerate(variants.items()):
        yield Record(".model_variants" + key_step(name), spec, index=i, envelope={**envelope, "variant": name})


def map_model_variant(record: Record, ctx: RecordContext) -> Mapped:
    env = record.envelope
    config = dict(env["config"])
    variant = env.get("variant")
    defaults = config.pop("defaults", None)
    row: dict[str, Any] = {"experiment": experiment_of_config(ctx.path), "variant": variant}
    extra: dict[str, Any] = {}
    if variant is not None:
        spec = record.value
        if isinstance(spec, str):  # a bare model id
            row["model"] = spec
        else:
            v = as_fields(spec, "model variant")
            row["model"], row["lora"] = v.text("model"), v.text("lora")
            extra.update(v.rest() or {})
    if defaults is not None:
        row["default_for"] = [k for k, v in defaults.items() if v == variant] or None
        unnamed = {k: v for k, v in defaults.items() if v not in env["variants"]}
        if unnamed:  # a default naming no variant of the file: kept as written
            config["defaults"] = unnamed
    if config:
        extra["config"] = config
    row["extra"] = extra or None
    return {"model_variants": [row]}
