#!/usr/bin/env bash
# For a session lent an NVIDIA GPU: every GPU check of the project in one run, <= 10 min on one
# H100/H200, outputs under $OUT (gpu.log, the check report and table, host.csv/md,
# arithmetic.csv/md, rows.tgz). bench/gpu_physics.py (raw NVML: heat, power limits, clocks)
# and bench/gpu_knobs.py ran in earlier sessions and are left out for time.
# The device machine has torch and timm but no snakemake: the pure-Python packages the
# workflow needs travel as wheels in .whl/ (bench/gpu_wheels.sh makes them) and are
# installed under /tmp/site. Each step has its own time limit; a failed step is logged and
# the next one runs.
#   bash bench/gpu_session.sh        (OUT=/some/folder; run from the repository root)
set -u
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT" /tmp/gpu-work
LOG="$OUT/gpu.log"
step() {  # step NAME SECONDS COMMAND...: run with a limit, log its output and its time
    local name=$1 limit=$2
    shift 2
    echo "=== $name (limit ${limit}s) $(date -u +%H:%M:%S)" >>"$LOG"
    local t0=$SECONDS
    timeout --kill-after=5 "$limit" "$@" >>"$LOG" 2>&1
    echo "=== $name: exit $? after $((SECONDS - t0)) s" >>"$LOG"
}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >>"$LOG" 2>&1
export PYTHONPATH="$PWD/src:/tmp/site"
JB=(python3 -m joulebench)

step env 60 bash -c 'nvidia-smi; python3 -c "import torch, timm, pandas, pyarrow, pynvml; print(torch.__version__, torch.version.cuda, timm.__version__, pandas.__version__, pyarrow.__version__)"; nproc; free -g'
step devices 60 "${JB[@]}" devices
# The full check with a short heat step (an H200's die settled within 6 s of a load step),
# its power-tail step included; kept where a profile job looks for its GPU's check first
# (jobs/first_check.py), so no job below checks the GPU again.
step check 240 python3 bench/gpu_check.py --out "$OUT" --device cuda:0 --heat-s 40 --heat-idle-s 10 --keep results/check
# Issue 33: the GPU's busy share of a step at batch 1 / 8 / 64 of three small models.
step host 120 python3 bench/gpu_host.py --out "$OUT" --device cuda
# Issue 33: fp32 (IEEE) vs tf32 vs fp16, cuDNN autotuning on vs off, CUDA graphs vs eager.
step arithmetic 300 python3 bench/gpu_arithmetic.py --out "$OUT" --device cuda:0
# A small study through Snakemake on `devices: auto`, its rows stated by the kept check:
# catalog, idle, profile, summary, scores, figures, page; host-bound rows at batch 1.
cat >/tmp/gpu-work/study.yaml <<'EOF'
models: [resnet18.a1_in1k, mobilenetv3_small_100.lamb_in1k]
methods:
  tf32: {precision: tf32}
batch_sizes: [1, 64]
protocol: {preset: fast}
EOF
step study 240 python3 -m snakemake --cores all --scheduler greedy --configfile /tmp/gpu-work/study.yaml
tar czf "$OUT/rows.tgz" results logs /tmp/gpu-work 2>>"$LOG"
echo "done $(date -u +%H:%M:%S)" >>"$LOG"
