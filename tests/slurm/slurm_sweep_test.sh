#!/usr/bin/env bash
# The Slurm test (ctest label `slurm`, run by .ci/run): a one-node Slurm cluster on this machine
# runs a 4-task array of examples/slurm/sweep.sbatch, and the merged shards must be byte for byte
# what a local `lagom sweep` writes. It installs slurmctld, slurmd, slurm-client and munge from
# Debian when they are missing (root only), starts munged, slurmctld and slurmd with their own
# configuration under a temporary directory, and stops what it started by their pid files.
# Exit 77 (a skip) only where Slurm cannot be installed or started.
#
#   slurm_sweep_test.sh LAGOM SWEEP.json SWEEP.sbatch
set -euo pipefail
lagom=$(readlink -f "$1")
sweep=$(readlink -f "$2")
sbatch_file=$(readlink -f "$3")
skip() { echo "SKIP: $*"; exit 77; }

work=$(mktemp -d /tmp/lagom-slurm-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do
    [ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null || true
  done
  sleep 0.5
  rm -rf "$work"
}
trap cleanup EXIT

# 1. Slurm and munge, from Debian when missing.
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
   ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  [ "$(id -u)" = 0 ] || skip "Slurm is not installed, and installing it needs root"
  command -v apt-get >/dev/null || skip "Slurm is not installed and there is no apt-get"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends slurmctld slurmd slurm-client munge \
      >"$work/apt.log" 2>&1; then
    apt-get update -q >>"$work/apt.log" 2>&1 || true
    apt-get install -y -q --no-install-recommends slurmctld slurmd slurm-client munge \
      >>"$work/apt.log" 2>&1 || skip "apt-get could not install Slurm: $(tail -n 1 "$work/apt.log")"
  fi
fi
[ "$(id -u)" = 0 ] || skip "starting slurmd needs root"

# 2. munged (systemd would create /run/munge; without it we do).
if ! munge -n >/dev/null 2>&1; then
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
  fi
  install -d -o munge -g munge -m 755 /run/munge
  runuser -u munge -- /usr/sbin/munged
  pids+=(/run/munge/munged.pid)
  for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n | unmunge >/dev/null || skip "munged did not start"
fi

# 3. A one-node cluster with its own configuration, state and logs.
host=$(hostname -s)
getent hosts "$host" >/dev/null || skip "the host name '$host' does not resolve"
export SLURM_CONF="$work/slurm.conf"
mkdir -p "$work/state" "$work/spool" "$work/log"
cat >"$SLURM_CONF" <<CONF
ClusterName=lagomci
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$(nproc) RealMemory=2000 State=UNKNOWN
PartitionName=lagom Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
pids+=("$work/slurmd.pid" "$work/slurmctld.pid")
/usr/sbin/slurmctld -f "$SLURM_CONF" || skip "slurmctld did not start"
/usr/sbin/slurmd -f "$SLURM_CONF" || skip "slurmd did not start"
for _ in $(seq 60); do
  [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && break
  sleep 0.5
done
[ "$(sinfo -h -o %t)" = idle ] || { cat "$work/log/"*.log; echo "FAIL: the node never became idle"; exit 1; }

# 4. The array, the merge, and the local run.
cd "$work"
sbatch --wait --array=0-3 --output="$work/task-%a.log" "$sbatch_file" "$sweep" "$work/shards" \
  "$lagom" >/dev/null || { cat "$work"/task-*.log; echo "FAIL: the array job failed"; exit 1; }
"$lagom" sweep merge "$work/merged.csv" "$work"/shards/shard-*.csv
"$lagom" sweep "$sweep" --out "$work/local.csv" 2>/dev/null
if ! cmp "$work/merged.csv" "$work/local.csv"; then
  diff "$work/merged.csv" "$work/local.csv" || true
  echo "FAIL: the merged shards differ from the local run"
  exit 1
fi
echo "OK: $(($(wc -l <"$work/merged.csv") - 2)) points from 4 Slurm array tasks merge to the local run's bytes"
