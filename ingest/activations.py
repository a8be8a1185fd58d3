"""The activations catalog: trait-interp ``.pt`` tensors, from their paths alone.

The files are never opened (they can be gigabytes, and reading them would need
torch); each becomes one ``activations`` row with its size and mtime. What the
path says (experiment, model variant, prompt set and id, position, component,
layer) is derived in SQL like every other path field (``path_fields``, trait-interp's path grammar),
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

from warehouse.formatkit.ingestor import Ingestor
from warehouse.formatkit.records import Mapped, Record, RecordContext
from warehouse.formatkit.source import SourceFile
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

#: the activations view: each file with what its path says (path_fields) and the response it belongs to
VIEW = """
-- activations: one row per activation file (.pt), with what its path says and its link to responses.
--
-- Inference files hold one prompt each: response_id is the response with the same experiment,
-- model variant, prompt set and prompt id. Extraction files hold every response of a trait
-- (rows in the order the extraction pipeline kept them): responses_dir names the directory of
-- those responses, to be joined with responses.source_path and ordered by record_index.
CREATE OR REPLACE VIEW activations AS
SELECT
    a.source_path AS activation_path,
    pf.experiment,
    pf.pipeline,
    pf.model_variant,
    pf.trait,
    pf.position,
    pf.component,
    pf.split,
    pf.polarity,
    pf.layer,
    pf.prompt_set,
    pf.prompt_id,
    r.response_id,
    CASE WHEN pf.pipeline = 'extraction'
        THEN regexp_replace(a.source_path, '(?s)/(?:val_)?activations/.*$', '/responses')
    END AS responses_dir,
    a.size_bytes,
    a.mtime_ns,
    a.source_path,
    a.source_locator
FROM raw.activations AS a
LEFT JOIN path_fields AS pf USING (source_path)
LEFT JOIN (
    SELECT rp.response_id, pr.experiment, pr.model_variant, pr.prompt_set, pr.prompt_id
    FROM raw.responses AS rp
    JOIN path_fields AS pr USING (source_path)
    WHERE pr.pipeline = 'inference' AND pr.prompt_id IS NOT NULL
) AS r
    ON pf.pipeline = 'inference'
   AND r.experiment = pf.experiment
   AND r.model_variant IS NOT DISTINCT FROM pf.model_variant
   AND r.prompt_set = pf.prompt_set
   AND r.prompt_id = pf.prompt_id;
"""


class Activations(Ingestor):
    name = "activations"
    description = "trait-interp activation tensors (.pt), catalogued from their paths without opening them"
    suffixes = (".pt",)
    reads_content = False
    priority = 10  # from the path alone, before any file is opened
    tables = (ACTIVATIONS,)
    views = (VIEW,)

    def sniff(self, path: str, head: bytes) -> bool:
        return _LAYOUTS.search(path) is not None

    def records(self, src: SourceFile) -> Iterator[Record]:
        # The runner does not open these files (reads_content = False) and builds this
        # same record from a stat; here for callers that hold an open SourceFile.
        yield Record("", {"size": src.size, "mtime_ns": src.mtime_ns})

    def map(self, record: Record, ctx: RecordContext) -> Mapped:
        return {"activations": [{"size_bytes": record.value["size"], "mtime_ns": record.value["mtime_ns"]}]}
