#!/usr/bin/env bash
# Wheels for bench/gpu_session.sh: the packages the workflow needs that the device machine's
# image lacks (snakemake and its pure-Python needs; the pinned timm and pandas), for its
# Python 3.12, into .whl/ (git-ignored through .git/info/exclude; `carry` it). Run from the
# repository root after `make setup` (versions are read from .venv).
set -euo pipefail
names="annotated-types argparse-dataclass conda-inject configargparse docutils dpath
fastjsonschema gitdb gitpython greenlet humanfriendly immutables jsonschema
jsonschema-specifications jupyter-core nbformat platformdirs pydantic pydantic-core referencing
rpds-py smart-open smmap snakemake snakemake-interface-common
snakemake-interface-executor-plugins snakemake-interface-logger-plugins
snakemake-interface-report-plugins snakemake-interface-scheduler-plugins
snakemake-interface-storage-plugins sqlalchemy sqlmodel tenacity throttler traitlets
typing-inspection yte timm pandas"
pins=$(.venv/bin/python -c 'import importlib.metadata as m, sys; print("\n".join(f"{n}=={m.version(n)}" for n in sys.argv[1:]))' $names)
grep -qx '/.whl/' .git/info/exclude || echo /.whl/ >>.git/info/exclude
rm -rf .whl && mkdir .whl
platforms=""
for p in manylinux_2_17 manylinux2014 manylinux_2_24 manylinux_2_27 manylinux_2_28 manylinux_2_34; do
    platforms+=" --platform ${p}_x86_64"
done
# shellcheck disable=SC2086
echo "$pins" | python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp $platforms -d .whl -r /dev/stdin
.venv/bin/pip wheel -q --no-deps -w .whl connection_pool==0.0.3  # published as source only
du -sh .whl
