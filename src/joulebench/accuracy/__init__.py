"""Stages 2 and 6, accuracy: top-1/top-5 for every model, each value with its source.

`reference` reads timm's published accuracy tables, shipped in `reference_data/` at a pinned
commit (checked by sha256: no network needed); `datasets` lists a local ImageNet-val (or
image folder) and `shards` preprocesses it once per input configuration; `measured`
evaluates models whose pretrained weights are on this machine. Output:
results/accuracy.parquet (docs/accuracy.md, docs/datasets.md). The map of the package:
docs/design.md.
"""
