#!/usr/bin/env bash
# A one-node Slurm cluster on localhost, for tests and benchmarks: munged, slurmctld and slurmd, without
# systemd or cgroups, in a fresh directory with its own ports, so it never touches a real cluster's state.
#
#   local_slurm.sh start DIR [CPUS] [GPUS]   prints `export SLURM_CONF=...` on success; exit 1 with the reason
#   local_slurm.sh stop DIR                  stops every daemon this script started in DIR, by PID
#
# GPUs are placeholders: character devices made with `mknod c 1 3` (the same as /dev/null), listed in
# gres.conf, so `--gres=gpu:N` jobs are scheduled and get CUDA_VISIBLE_DEVICES. A count-only gres entry
# would be dropped ("file-less GPU") and the node would go INVALID.
set -euo pipefail

cmd=${1:?usage: local_slurm.sh start|stop DIR [CPUS] [GPUS]}
dir=${2:?usage: local_slurm.sh start|stop DIR [CPUS] [GPUS]}

stop() {
  local pidfile pid
  for pidfile in "$dir"/pids/slurmd.pid "$dir"/pids/slurmctld.pid "$dir"/pids/munged.pid; do
    [ -s "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    # Only a process that is still ours: its command line names this directory.
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$dir"; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
  done
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "unknown command $cmd" >&2; exit 2; }

cpus=${3:-4}
gpus=${4:-2}
for tool in munged mungekey slurmctld slurmd sbatch squeue scontrol; do
  command -v "$tool" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool is not installed (.ci/install-deps.sh installs it)"; exit 1; }
done

rm -rf "$dir"
mkdir -p "$dir"/{munge,state,spool,log,pids,gpu,tmp}
dir=$(cd "$dir" && pwd)
chmod 755 "$dir" "$dir/munge"   # munged wants its socket's directory world-executable
trap 'stop' ERR

# Job ids of their own: two clusters on one host (ctest -j) must not both run "job 1", whose step and PMIx
# directories are named after the id.
first_job_id=$(( (RANDOM << 8 | RANDOM % 256) % 4000000 + 1000 ))
# Free ports: slurmctld and slurmd each need one; ask the kernel for two unused ones.
read -r ctld_port slurmd_port < <(python3 - <<'PY'
import socket
s1, s2 = socket.socket(), socket.socket()
s1.bind(("127.0.0.1", 0)); s2.bind(("127.0.0.1", 0))
print(s1.getsockname()[1], s2.getsockname()[1])
PY
)

mungekey -c -k "$dir/munge/munge.key" >/dev/null 2>&1 || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 600 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/pids/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" \
  >"$dir/log/munged.out" 2>&1 || { echo "munged did not start: $(tail -n 3 "$dir/log/munged.out" "$dir/log/munged.log" 2>/dev/null)"; exit 1; }

gres_line=""
for ((g = 0; g < gpus; g++)); do
  # Without the right to make device nodes (a container without CAP_MKNOD) the cluster still works, GPU-less.
  mknod "$dir/gpu/gpu$g" c 1 3 2>/dev/null || { echo "note: cannot mknod placeholder GPU devices: no GPUs" >&2; gpus=0; }
done
if [ "$gpus" -gt 0 ]; then
  echo "Name=gpu File=$dir/gpu/gpu[0-$((gpus - 1))]" >"$dir/gres.conf"
  gres_line="Gres=gpu:$gpus"
else
  : >"$dir/gres.conf"
fi

user=$(id -un)
cat >"$dir/slurm.conf" <<CONF
ClusterName=aispflowtest
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
TmpFS=$dir/tmp
FirstJobId=$first_job_id
SlurmctldPidFile=$dir/pids/slurmctld.pid
SlurmdPidFile=$dir/pids/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=4000 $gres_line State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
PartitionName=second Nodes=localhost MaxTime=INFINITE State=UP
CONF

export SLURM_CONF=$dir/slurm.conf
slurmctld -i -f "$dir/slurm.conf" >"$dir/log/slurmctld.out" 2>&1 || { echo "slurmctld did not start: $(tail -n 3 "$dir/log/slurmctld.log" 2>/dev/null)"; stop; exit 1; }
slurmd -N localhost -f "$dir/slurm.conf" >"$dir/log/slurmd.out" 2>&1 || { echo "slurmd did not start: $(tail -n 3 "$dir/log/slurmd.log" 2>/dev/null)"; stop; exit 1; }

# Ready when the node is idle (registered, not drained).
for _ in $(seq 100); do
  state=$(sinfo -h -n localhost -o %t 2>/dev/null | head -1 || true)
  case "$state" in idle*|mix*|alloc*) echo "export SLURM_CONF=$dir/slurm.conf"; exit 0 ;; esac
  sleep 0.1
done
echo "the Slurm node did not become idle (state '${state:-none}'): $(tail -n 3 "$dir/log/slurmd.log" "$dir/log/slurmctld.log" 2>/dev/null)"
stop
exit 1
