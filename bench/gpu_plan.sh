#!/usr/bin/env bash
# For a session lent a GPU, after bench/gpu_session.sh (its wheels installed under /tmp/site):
# the plan's two GPU unknowns (docs/plan.md "Assumptions"): warm-up on a GPU (WARMUP_EXTRA_S
# was measured on a busy CPU) and torch.compile's first calls per configuration (COMPILE_S,
# 40 s, assumed). resnet50 eager and compiled at four batch sizes, the default protocol:
# 8 configurations, about 6 min on an H200 (an estimate). Outputs under $OUT.
#   bash bench/gpu_plan.sh [DEVICE]   (DEVICE: cuda, the default; sim:h100 for a dry run here)
set -u
OUT=${OUT:-/tmp/gpu-out}
DEVICE=${1:-cuda}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}:/tmp/site"
PYTHON=${PYTHON:-python3}
batches=()
for b in ${BATCHES:-1 8 64 256}; do batches+=(--batch-size "$b"); done
timeout --kill-after=5 "${LIMIT_S:-480}" "$PYTHON" -m joulebench profile "${MODEL:-resnet50.a1_in1k}" \
    --device "$DEVICE" --method fp32 --method fp32-compile "${batches[@]}" \
    -o "$OUT/plan_rows.parquet" >"$OUT/plan_profile.log" 2>&1
echo "profile: exit $?" >>"$OUT/plan_profile.log"
"$PYTHON" bench/bench_plan.py constants --rows "$OUT/plan_rows.parquet" | tee "$OUT/plan_constants.md"
