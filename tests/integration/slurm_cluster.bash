# A one-node Slurm on 127.0.0.1 for a test (sourced after dist_common.bash; not a test itself): munged with its own
# key and socket, slurmctld and slurmd (node1, 2 CPUs) with their state, spool, logs and free ports under
# $work/slurm, nothing of the machine's own /etc/slurm or /etc/munge used. start_slurm exits 77 (skipped), saying
# why, where the daemons are missing or cannot start; the EXIT trap cancels the jobs and stops the daemons, whatever
# the test's outcome.

# Fails unless "$@" succeeds within $1 seconds (tried every 0.2 s).
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}

node_idle() { [ "$(sinfo -h -n node1 -o %t 2>/dev/null)" = idle ]; }

skip() {
  echo "SKIPPED: $*"
  exit 77
}

# Skipped, with the end of each daemon's log.
skip_with_logs() {
  local log
  for log in "$cluster"/log/*.log; do
    [ -e "$log" ] && { echo "--- $log"; tail -n 15 "$log"; }
  done
  skip "$@"
}

# Two TCP ports that nothing on 127.0.0.1 listens on now.
free_ports() {
  /usr/bin/python3 - <<'PY'
import socket
sockets = [socket.socket() for _ in range(2)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))
PY
}

start_slurm() {
  local command name
  for command in munged slurmctld slurmd sinfo squeue srun sbatch scancel scontrol; do
    command -v "$command" >/dev/null ||
      skip "no $command: a one-node Slurm needs Debian's munge slurmctld slurmd slurm-client (scripts/install-deps.sh)"
  done
  # A test run inside a Slurm job must not talk to that job's cluster.
  for name in $(compgen -e); do
    [[ $name == SLURM_* ]] && unset "$name"
  done
  cluster=$work/slurm
  mkdir -p "$cluster"/{munge,state,spool,tmp,log}
  trap 'stop_slurm; rm -rf "$work"' EXIT

  head -c 1024 /dev/urandom >"$cluster/munge/munge.key"
  chmod 600 "$cluster/munge/munge.key"
  munge_socket=$cluster/munge/munge.socket
  munged --force --socket="$munge_socket" --key-file="$cluster/munge/munge.key" \
    --pid-file="$cluster/munge/munged.pid" --seed-file="$cluster/munge/munged.seed" \
    --log-file="$cluster/log/munged.log" || skip_with_logs "munged did not start"

  local user ctld_port slurmd_port
  user=$(id -un)
  read -r ctld_port slurmd_port < <(free_ports)
  # cred_expire is also how long a requeued job waits before it may start again (120 s by default);
  # sched_interval=1 lets it start as soon as it may instead of at the next minute's scheduling pass.
  # Job ids unique on this machine (the controller's port is): Open MPI names a step's shared memory and PMIx
  # its directories after the job id, so two of these clusters at once would otherwise join each other's ranks.
  cat >"$cluster/slurm.conf" <<CONF
ClusterName=replica-test
FirstJobId=$((ctld_port * 1000))
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket,cred_expire=10
StateSaveLocation=$cluster/state
SlurmdSpoolDir=$cluster/spool
TmpFS=$cluster/tmp
SlurmctldPidFile=$cluster/slurmctld.pid
SlurmdPidFile=$cluster/slurmd.pid
SlurmctldLogFile=$cluster/log/slurmctld.log
SlurmdLogFile=$cluster/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdParameters=config_overrides
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MpiDefault=none
NodeName=node1 NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=node1 Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$cluster/slurm.conf
  slurmctld -i || skip_with_logs "slurmctld did not start"
  slurmd -N node1 || skip_with_logs "slurmd did not start"
  wait_for 30 node_idle || skip_with_logs "node1 did not come up idle within 30 s: $(sinfo -h -N -o '%N %t' 2>&1)"
  echo "slurm: $(slurmctld -V) on 127.0.0.1, ports $ctld_port/$slurmd_port, node1 idle"
}

no_jobs() { [ -z "$(squeue -h -o %i 2>/dev/null)" ]; }
slurm_daemons_gone() { [ -z "$(running_pid "$cluster/slurmctld.pid")$(running_pid "$cluster/slurmd.pid")" ]; }

# The pid in file $1 if that process still runs.
running_pid() {
  local pid
  pid=$(cat "$1" 2>/dev/null) && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

stop_slurm() {
  local pid pidfile
  if [ -n "$(running_pid "$cluster/slurmctld.pid")" ]; then
    timeout 10 scancel --user="$(id -un)" 2>/dev/null || true
    wait_for 15 no_jobs || echo "stop_slurm: jobs still listed: $(squeue -h 2>&1)"
    timeout 10 scontrol shutdown >/dev/null 2>&1 || true
  fi
  wait_for 10 slurm_daemons_gone || true
  for pidfile in "$cluster/slurmctld.pid" "$cluster/slurmd.pid"; do
    pid=$(running_pid "$pidfile") && kill -9 "$pid" 2>/dev/null
  done
  pid=$(running_pid "$cluster/munge/munged.pid") && kill "$pid" 2>/dev/null
  true
}
