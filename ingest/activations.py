"""The activations catalog: trait-interp ``.pt`` tensors, from their paths alone.

The files are never opened (they can be gigabytes, and reading them would need
torch); each becomes one ``activations`` row with its size and mtime. What the
path says (experiment, model variant, prompt set and id, position, component,
layer) is derived in SQL like every other path field (``sql/10_path_fields.sql``),
and the ``activations`` view links each file to its responses.

Locations (trait-interp ``docs/response_schema.md`` and ``config/paths.yaml``):

* inference: ``experiments/{exp}/inference/{variant}/raw/residual/{prompt_set}/{prompt_id}.pt``
  (and ``raw/internals/{prompt_set}/{prompt_id}_L{layer}.pt``);
* extraction: ``experiments/{exp}/extraction/{trait}/{variant}/activations/{position}/{component}/
  {train,val}_all_layers.pt`` (also per-layer ``train_layer{N}.pt``, and the older
  ``activations/all_layers.pt`` and ``val_activations/val_{pos,neg}_layer{N}.pt``).

Other ``.pt`` files (steering vectors, probes) are not activations and are not catalogued.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from warehouse.ingestor import Ingestor
from warehouse.readers import SourceFile
from warehouse.records import Mapped, Record, RecordContext
from warehouse.tables import I64, C, Table, provenance

_LAYOUTS = re.compile(
    r"(?:^|/)experiments/[^/]+/(?:"
    r"inference/(?:[^/]+/)?raw/(?:residual|internals)/.+\.pt"
    r"|extraction/.+/activations/(?:[^/]+/[^/]+/(?:train|val)_(?:all_layers|layer[0-9]+)|all_layers)\.pt"
    r"|extraction/.+/val_activations/val_(?:pos|neg)_layer[0-9]+\.pt"
    r")$",
    re.DOTALL,  # a folder's name may hold a newline
)

ACTIVATIONS = Table(
    "activations",
    grain="one activation file (.pt) found beside responses",
    doc=(
        "Catalog of activation tensors, read from paths alone (no torch needed, the files are not opened). "
        "The view derives experiment, model variant, prompt set, prompt id, position, component, layer "
        "and the link to responses from the path."
    ),
    columns=(
        C("size_bytes", I64, "file size in bytes"),
        C("mtime_ns", I64, "modification time (ns)"),
        *provenance("empty: the whole file is one tensor dump"),
    ),
)


class Activations(Ingestor):
    name = "activations"
    description = "trait-interp activation tensors (.pt), catalogued from their paths without opening them"
    suffixes = (".pt",)
    reads_content = False
    priority = 10  # from the path alone, before any file is opened
    tables = (ACTIVATIONS,)

    def sniff(self, path: str, head: bytes) -> bool:
        return _LAYOUTS.search(path) is not None

    def records(self, src: SourceFile) -> Iterator[Record]:
        # The runner does not open these files (reads_content = False) and builds this
        # same record from a stat; here for callers that hold an open SourceFile.
        yield Record("", {"size": src.size, "mtime_ns": src.mtime_ns})

    def map(self, record: Record, ctx: RecordContext) -> Mapped:
        return {"activations": [{"size_bytes": record.value["size"], "mtime_ns": record.value["mtime_ns"]}]}
