#!/usr/bin/env bash
# Start a one-node SLURM on this host for tests/workflow/test_slurm.py (CI, as root).
#
# Installs Debian's slurmctld, slurmd, slurm-client and munge (once), writes a minimal
# slurm.conf (this host as the only node, its real CPUs and memory, fake GPUs, no
# accounting) and starts munged, slurmctld and slurmd, keeping their PIDs in $SLURM_DIR.
# Returns once `sinfo` shows the node idle. Stop everything with .ci/stop-slurm.sh.
#
# The configuration goes where every SLURM command looks without help,
# /etc/slurm/slurm.conf (jobs started by snakemake-executor-plugin-slurm drop SLURM_CONF
# from their environment). An existing slurm.conf that this script did not write is
# never touched: the script stops instead. State, logs and PID files: $SLURM_DIR.
# Settings (environment): JOULEBENCH_SLURM_DIR (default /run/joulebench-slurm),
# JOULEBENCH_FAKE_GPUS (default 2): GPUs of type `fake`.
set -euo pipefail
# the daemons and runuser live in sbin, which a minimal PATH (env -i, cron) leaves out
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

SLURM_DIR=${JOULEBENCH_SLURM_DIR:-/run/joulebench-slurm}
FAKE_GPUS=${JOULEBENCH_FAKE_GPUS:-2}
SLURM_CONF=/etc/slurm/slurm.conf
MARK="# Written by .ci/start-slurm.sh"

if [[ $(id -u) != 0 ]]; then
    echo "start-slurm: must run as root (it installs packages and starts slurmd)" >&2
    exit 1
fi

# 1. Packages (skipped when already installed).
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
    || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
fi

if [[ -e $SLURM_CONF ]] && ! grep -qF "$MARK" "$SLURM_CONF"; then
    echo "start-slurm: $SLURM_CONF exists and is not ours; not touching this host's SLURM" >&2
    exit 1
fi
mkdir -p "$SLURM_DIR"/{state,spool,log} /etc/slurm

# 2. Munge: a key (once), then the daemon, unless one already answers.
if [[ ! -s /etc/munge/munge.key ]]; then
    mungekey --create --keyfile=/etc/munge/munge.key
fi
chown munge:munge /etc/munge/munge.key
chmod 400 /etc/munge/munge.key
install -d -o munge -g munge -m 755 /run/munge "$SLURM_DIR/munge"
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    runuser -u munge -- munged --pid-file="$SLURM_DIR/munge/munged.pid" \
        --log-file="$SLURM_DIR/munge/munged.log"
fi

# 3. slurm.conf: this host, with the CPUs and memory slurmd detects here.
node=$(hostname -s)
hardware=$(slurmd -C | head -n 1 | sed -e 's/^NodeName=[^ ]* //')
cat >"$SLURM_CONF" <<EOF
$MARK (removed by .ci/stop-slurm.sh): a one-node test cluster.
ClusterName=joulebench
SlurmctldHost=$node
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
# No cgroups in containers: plain process tracking, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
# No accounting database: no sacct (the workflow's test uses squeue for job status).
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
# Finished jobs stay visible to squeue for an hour (status checks without sacct).
MinJobAge=3600
ReturnToService=2
SlurmdTimeout=60
NodeName=$node $hardware Gres=gpu:fake:$FAKE_GPUS State=UNKNOWN
PartitionName=main Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF

# Fake GPUs: SLURM counts and hands them out; the first "device" is /dev/null, more
# are empty files (SLURM refuses one file for two GPUs; without cgroups it never opens them).
mkdir -p "$SLURM_DIR/dev"
echo "$MARK (removed by .ci/stop-slurm.sh)" >/etc/slurm/gres.conf
for i in $(seq 0 $((FAKE_GPUS - 1))); do
    file=/dev/null
    if ((i > 0)); then
        file=$SLURM_DIR/dev/fake-gpu$i
        : >"$file"
    fi
    echo "NodeName=$node Name=gpu Type=fake File=$file" >>/etc/slurm/gres.conf
done

# 4. Daemons (each writes its PID file above), unless already running.
running() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
failed() {
    echo "start-slurm: $1 did not start; logs:" >&2
    tail -n 20 "$SLURM_DIR"/log/*.log >&2 || true
    exit 1
}
running "$SLURM_DIR/slurmctld.pid" || slurmctld -c || failed slurmctld
running "$SLURM_DIR/slurmd.pid" || slurmd || failed slurmd

# 5. Wait until the node takes jobs.
for _ in $(seq 60); do
    state=$(sinfo --noheader --nodes="$node" --format=%T 2>/dev/null || true)
    if [[ $state == idle || $state == mixed ]]; then
        echo "start-slurm: node $node $state ($hardware, gpu:fake:$FAKE_GPUS)"
        exit 0
    fi
    sleep 1
done
echo "start-slurm: node $node not idle after 60 s (state: ${state:-none}); logs:" >&2
tail -n 20 "$SLURM_DIR"/log/*.log >&2 || true
exit 1
