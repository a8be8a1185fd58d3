"""trait-interp's path grammar: the statement of the view ``path_fields`` (``Ingestor.defines``).

It replaces the core's default (``sql/10_path_fields.sql``: the same columns, NULL) wherever that
would run: in the ingest, which materialises it per source file, and in every connection. Its text is
what the file ``sql/10_path_fields.sql`` held before formats defined it, to the byte: a warehouse keeps
the copy of path_fields it materialised then (the copy is read while the statement's hash is the same).
"""

PATH_FIELDS = r"""-- path_fields: the fields trait-interp encodes in file paths, one row per source file.
--
-- Keyed on the last `experiments/` segment of the path (layouts: docs/paths.md):
--   inference   experiments/{exp}/inference/[{variant}/]responses/{prompt_set...}/{prompt_id}.json
-- per-token projections (trait exactly {category}/{name}):
--   inference   experiments/{exp}/inference/[{variant}/]projections/{trait}/{prompt_set...}/{prompt_id}.json
--               (older: experiments/{exp}/inference/[{variant}/]{trait}/{residual|attn}_stream/{prompt_set...}/{prompt_id}.json)
--   extraction  experiments/{exp}/extraction/{trait...}/[{variant}/][val_]responses/{pos|neg}.json
--   steering    experiments/{exp}/steering/{trait...}/[{variant}/]{position}/[{prompt_set...}/]responses/
--                 baseline.json | [{component}/{method}/]L{layers}_c{coefs}[_{timestamp}].json
--                 | ablation/L{layer}_{component}_{method}.json
-- activation tensors (.pt, catalogued by path):
--   inference   experiments/{exp}/inference/[{variant}/]raw/{residual|internals}/{prompt_set...}/{prompt_id}[_L{layer}].pt
--   extraction  experiments/{exp}/extraction/{trait...}/[{variant}/]activations/{position}/{component}/{train|val}_{all_layers|layer{N}}.pt
--               (older: .../activations/all_layers.pt, .../val_activations/val_{pos|neg}_layer{N}.pt)
-- trait and prompt_set may contain `/`. Between the pipeline directory and the
-- position (steering) or `responses` (extraction), three or more segments mean
-- the last one is the model variant (`{category}/{name}/{variant}`); two mean an
-- older layout without a variant. Files outside such a tree get NULLs. Every pattern
-- with a '.' starts (?s): a folder's name may hold a newline, which RE2's '.' does not
-- match otherwise (every field of such a path was NULL).
--
-- The ingest runner materialises this view per source file after each run (it
-- is cheap to read, costly to compute over a million paths) and `connect()`
-- uses that cache only while this file's text is unchanged.
CREATE OR REPLACE VIEW path_fields AS
WITH p AS (
    SELECT
        source_path,
        regexp_replace(source_path, '/[^/]*$', '') AS source_dir,
        nullif(regexp_extract(source_path,
            '(?s)^.*(?:^|/)experiments/([^/]+/(?:inference|extraction|steering)/.+)$', 1), '') AS rel
    FROM raw.sources
),
m AS (
    -- each layout's pattern only on the rows of its pipeline and suffix (CASE evaluates THEN for
    -- those rows alone); elsewhere NULL where a failed match gave '': read through nullif or a pipe test
    SELECT
        *,
        split_part(rel, '/', 1) AS exp,
        split_part(rel, '/', 2) AS pipe,
        CASE WHEN pipe = 'inference' AND rel LIKE '%.json' THEN regexp_extract(rel,
            '(?s)^[^/]+/inference/(?:([^/]+)/)?responses/(.+)/([^/]+)\.json$',
            ['variant', 'prompt_set', 'prompt_id']) END AS inf,
        CASE WHEN pipe = 'extraction' AND rel LIKE '%.json' THEN regexp_extract(rel,
            '(?s)^[^/]+/extraction/(.+)/(val_)?responses/([^/]+)\.json$',
            ['mid', 'val', 'stem']) END AS ext,
        CASE WHEN pipe = 'steering' THEN regexp_extract(rel,
            '(?s)^[^/]+/steering/(.+?)/((?:response|prompt|all)_(?:all|-?[0-9]*_?-?[0-9]*))/(?:(.+)/)?responses/(.+)$',
            ['mid', 'position', 'prompt_set', 'sub']) END AS ste,
        CASE WHEN pipe = 'inference' AND rel LIKE '%.json' AND rel LIKE '%/projections/%' THEN regexp_extract(rel,
            '(?s)^[^/]+/inference/(?:([^/]+)/)?projections/([^/]+/[^/]+)/(.+)/([^/]+)\.json$',
            ['variant', 'trait', 'prompt_set', 'prompt_id']) END AS prj,
        CASE WHEN pipe = 'inference' AND rel LIKE '%.json' AND rel LIKE '%_stream/%' THEN regexp_extract(rel,
            '(?s)^[^/]+/inference/(?:([^/]+)/)?([^/]+/[^/]+)/(?:residual|attn)_stream/(.+)/([^/]+)\.json$',
            ['variant', 'trait', 'prompt_set', 'prompt_id']) END AS stm,
        CASE WHEN pipe = 'inference' AND rel LIKE '%.pt' THEN regexp_extract(rel,
            '(?s)^[^/]+/inference/(?:([^/]+)/)?raw/(residual|internals)/(.+)/([^/]+?)(?:_L([0-9]+))?\.pt$',
            ['variant', 'component', 'prompt_set', 'prompt_id', 'layer']) END AS ainf,
        CASE WHEN pipe = 'extraction' AND rel LIKE '%.pt' THEN regexp_extract(rel,
            '(?s)^[^/]+/extraction/(.+)/activations/([^/]+)/([^/]+)/(train|val)_(?:all_layers|layer([0-9]+))\.pt$',
            ['mid', 'position', 'component', 'split', 'layer']) END AS aext,
        CASE WHEN pipe = 'extraction' AND rel LIKE '%.pt' THEN regexp_extract(rel,
            '(?s)^[^/]+/extraction/(.+)/(val_)?activations/(?:all_layers|val_(?:pos|neg)_layer([0-9]+))\.pt$',
            ['mid', 'val', 'layer']) END AS aold
    FROM p
),
s AS (
    SELECT
        *,
        CASE pipe
            WHEN 'extraction' THEN coalesce(nullif(ext.mid, ''), nullif(aext.mid, ''), nullif(aold.mid, ''))
            WHEN 'steering' THEN nullif(ste.mid, '')
        END AS mid,
        regexp_extract(ste.sub, '[^/]+$') AS steer_file,
        regexp_extract(ste.sub,
            '^(?:([^/]+)/([^/]+)/)?L([0-9]+(?:_[0-9]+)*)_c(-?[0-9][0-9.eE+-]*(?:_-?[0-9][0-9.eE+-]*)*?)(?:_([0-9]{4}-[0-9]{2}-[0-9]{2}_[0-9]{2}-[0-9]{2}-[0-9]{2}))?\.json$',
            ['component', 'method', 'layers', 'coefs', 'ts']) AS steered,
        regexp_extract(ste.sub,
            '(?s)^ablation/L([0-9]+)_(.+?)_(mean_diff|probe|gradient|ica|pca|random|[^_]+)\.json$',
            ['layer', 'component', 'method']) AS ablation
    FROM m
)
SELECT
    source_path,
    source_dir,
    CASE WHEN rel IS NOT NULL THEN exp END AS experiment,
    CASE WHEN rel IS NOT NULL THEN pipe END AS pipeline,
    CASE
        WHEN pipe = 'inference' THEN coalesce(nullif(inf.variant, ''), nullif(ainf.variant, ''),
                                              nullif(prj.variant, ''), nullif(stm.variant, ''))
        WHEN len(string_split(mid, '/')) >= 3 THEN regexp_extract(mid, '[^/]+$')
    END AS model_variant,
    CASE
        WHEN pipe = 'inference' THEN coalesce(nullif(prj.trait, ''), nullif(stm.trait, ''))
        WHEN len(string_split(mid, '/')) >= 3 THEN regexp_extract(mid, '(?s)^(.+)/[^/]+$', 1)
        ELSE mid
    END AS trait,
    CASE
        WHEN pipe = 'steering' THEN nullif(ste.position, '')
        WHEN pipe = 'extraction' THEN nullif(aext.position, '')
    END AS position,
    CASE
        WHEN pipe = 'inference' THEN coalesce(nullif(inf.prompt_set, ''), nullif(ainf.prompt_set, ''),
                                              nullif(prj.prompt_set, ''), nullif(stm.prompt_set, ''))
        WHEN pipe = 'steering' THEN nullif(ste.prompt_set, '')
    END AS prompt_set,
    CASE WHEN pipe = 'inference' THEN coalesce(nullif(inf.prompt_id, ''), nullif(ainf.prompt_id, ''),
                                               nullif(prj.prompt_id, ''), nullif(stm.prompt_id, '')) END AS prompt_id,
    CASE
        WHEN pipe = 'extraction' AND ext.stem IN ('pos', 'neg') THEN ext.stem
        WHEN pipe = 'extraction' THEN nullif(regexp_extract(source_path, 'val_(pos|neg)_layer[0-9]+\.pt$', 1), '')
    END AS polarity,
    CASE
        WHEN pipe <> 'extraction' THEN NULL
        WHEN ext.stem <> '' THEN (CASE WHEN ext.val = 'val_' THEN 'val' ELSE 'train' END)
        WHEN aext.split <> '' THEN aext.split
        WHEN aold.mid <> '' THEN (CASE WHEN aold.val = 'val_' THEN 'val' ELSE 'train' END)
    END AS split,
    CASE
        WHEN pipe <> 'steering' OR ste.sub = '' THEN NULL
        WHEN ste.sub = 'baseline.json' THEN 'baseline'
        WHEN ablation.layer <> '' THEN 'ablation'
        WHEN steered.layers <> '' THEN 'steered'
    END AS run_kind,
    CASE
        WHEN pipe = 'inference' THEN nullif(ainf.component, '')
        WHEN pipe = 'extraction' THEN nullif(aext.component, '')
        WHEN pipe <> 'steering' THEN NULL
        WHEN ablation.layer <> '' THEN ablation.component
        ELSE nullif(steered.component, '')
    END AS component,
    CASE
        WHEN pipe <> 'steering' THEN NULL
        WHEN ablation.layer <> '' THEN ablation.method
        ELSE nullif(steered.method, '')
    END AS method,
    CASE
        WHEN pipe <> 'steering' THEN NULL
        WHEN ablation.layer <> '' THEN [TRY_CAST(ablation.layer AS INTEGER)]
        WHEN steered.layers <> '' THEN list_transform(string_split(steered.layers, '_'), lambda x: TRY_CAST(x AS INTEGER))
    END AS layers,
    CASE
        WHEN pipe = 'steering' AND steered.coefs <> ''
        THEN list_transform(string_split(steered.coefs, '_'), lambda x: TRY_CAST(x AS DOUBLE))
    END AS coefficients,
    CASE
        WHEN pipe = 'steering' AND steered.ts <> '' THEN strptime(steered.ts, '%Y-%m-%d_%H-%M-%S')
    END AS run_timestamp,
    TRY_CAST(coalesce(nullif(ainf.layer, ''), nullif(aext.layer, ''), nullif(aold.layer, '')) AS INTEGER) AS layer
FROM s;
"""
