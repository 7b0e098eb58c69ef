"""Stage 1, the catalog: which models a study measures, and what each one is.

`models` turns the config's `models:` entries (exact names, bare architectures, globs,
all-pretrained, custom workloads) into exact timm names; `workloads` loads a user's own model
(`file.py:function`) beside timm's; `build` makes one catalog row per model (params, input
config, FLOPs, MACs and activations per image, `counting`), of the fused inference form where
timm can re-parameterise the model (`deploy_form`). Output: results/catalog.parquet
(docs/catalog.md, docs/workloads.md). The map of the package: docs/design.md.
"""
