#!/usr/bin/env bash
# A one-machine Slurm cluster for the tests, in a folder of its own: munged, slurmctld and
# slurmd (Debian's slurm-wlm and munge packages), as root, on 127.0.0.1, each with its
# configuration, state, logs and socket under DIR. Nothing under /etc is read or written: the
# clients find the cluster through SLURM_CONF.
#
#   scripts/slurm-test-cluster.sh start DIR   # prints `export SLURM_CONF=DIR/slurm.conf`
#   scripts/slurm-test-cluster.sh stop DIR    # stops the three daemons it started (by their pid files)
#
# In a container: no cgroups (proctrack/linuxproc, task/none, jobacct_gather/none), so slurmd
# needs neither systemd nor a writable cgroup tree; SlurmdUser=root, SlurmUser=root.
set -euo pipefail

command=${1:?start or stop}
dir=${2:?a folder}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# A free TCP port on loopback.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop_pidfile() {
	local file=$1 pid
	[ -s "$file" ] || return 0
	pid=$(cat "$file")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$file"
}

case "$command" in
stop)
	stop_pidfile "$dir/slurmd.pid"
	stop_pidfile "$dir/slurmctld.pid"
	stop_pidfile "$dir/munged.pid"
	exit 0
	;;
start) ;;
*) echo "slurm-test-cluster.sh: unknown command '$command' (start or stop)" >&2; exit 1 ;;
esac

for tool in munged mungekey slurmctld slurmd sbatch; do
	command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || { echo "slurm-test-cluster.sh: $tool not found (apt-get install slurm-wlm munge)" >&2; exit 1; }
done
export PATH="/usr/sbin:$PATH"
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
chmod 755 "$dir/munge"

# munge: a key of its own; munged refuses a key others can read.
[ -s "$dir/munge/munge.key" ] || mungekey --create --keyfile="$dir/munge/munge.key" --bits=1024
chmod 600 "$dir/munge/munge.key"
munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
	--pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"

ctld_port=$(free_port)
slurmd_port=$(free_port)
cpus=$(nproc)
cat >"$dir/slurm.conf" <<CONF
# Written by scripts/slurm-test-cluster.sh: one node, on loopback, no cgroups.
ClusterName=narrator-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=600
KillWait=2
InactiveLimit=0
NodeName=narrator1 NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=batch Nodes=narrator1 Default=YES MaxTime=INFINITE State=UP
CONF
# slurmd loads a cgroup plugin whatever the other plugins (22.05 has no "disabled"): cgroup/v1 when
# the container mounts v1 controllers, only loaded, never used by linuxproc and task/none.
echo "CgroupPlugin=autodetect" >"$dir/cgroup.conf"

export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" -i
slurmd -f "$SLURM_CONF" -N narrator1

# Ready when the node is idle.
for _ in $(seq 150); do
	state=$(sinfo -h -N -n narrator1 -o '%t' 2>/dev/null || true)
	case "$state" in idle*) echo "export SLURM_CONF=$SLURM_CONF"; exit 0 ;; esac
	sleep 0.2
done
echo "slurm-test-cluster.sh: the node did not come up (state '${state:-none}'); logs in $dir/log:" >&2
tail -n 20 "$dir"/log/*.log >&2
exit 1
