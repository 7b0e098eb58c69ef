#!/usr/bin/env bash
# For a session lent an NVIDIA GPU: every GPU check of the project in one run, outputs under
# $OUT (at most 8 files come back: gpu.log, the check report, physics.csv/json, rows.tgz).
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
step devices 120 "${JB[@]}" devices
step check 240 python3 bench/gpu_check.py --out "$OUT" --device cuda:0
step physics 240 python3 bench/gpu_physics.py --out "$OUT"
# The README's GPU command, verbatim but for the interpreter.
step readme-profile 180 "${JB[@]}" profile resnet50.a1_in1k --device cuda --method fp16-amp --batch-size 64 -o /tmp/gpu-work/readme-profile.parquet
# A small study through Snakemake on `devices: auto`: catalog, idle, profile, summary, scores,
# figures, page.
cat >/tmp/gpu-work/study.yaml <<'EOF'
models: [resnet18.a1_in1k, mobilenetv3_small_100.lamb_in1k]
methods:
  fp32: {precision: fp32}
  fp16-amp: {precision: fp16}
batch_sizes: [32]
EOF
step study 420 python3 -m snakemake --cores all --scheduler greedy --configfile /tmp/gpu-work/study.yaml
step status 60 "${JB[@]}" status --configfile /tmp/gpu-work/study.yaml
tar czf "$OUT/rows.tgz" results logs /tmp/gpu-work 2>>"$LOG"
echo "done $(date -u +%H:%M:%S)" >>"$LOG"
