#!/usr/bin/env bash
# Stop the daemons .ci/start-slurm.sh started, by the PIDs it recorded, and remove the
# configuration it wrote (safe to rerun).
set -uo pipefail

SLURM_DIR=${JOULEBENCH_SLURM_DIR:-/run/joulebench-slurm}

stop() { # stop NAME: SIGTERM the PID in $SLURM_DIR/NAME.pid, wait, then SIGKILL
    local pidfile=$SLURM_DIR/$1.pid pid
    [[ -s $pidfile ]] || return 0
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$pidfile"
    echo "stop-slurm: stopped $1 ($pid)"
}

# Jobs first (their steps belong to slurmd), then the daemons in reverse order.
if [[ -s $SLURM_DIR/slurmctld.pid ]] && kill -0 "$(cat "$SLURM_DIR/slurmctld.pid")" 2>/dev/null; then
    scancel --user=root 2>/dev/null || true
fi
stop slurmd
stop slurmctld
stop munge/munged

for conf in /etc/slurm/slurm.conf /etc/slurm/gres.conf; do
    if [[ -e $conf ]] && grep -qF "# Written by .ci/start-slurm.sh" "$conf"; then
        rm -f "$conf"
    fi
done
