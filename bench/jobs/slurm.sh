#!/usr/bin/env bash
# bench/jobs/slurm.sh — a throwaway single-node Slurm cluster for the jobs
# benchmark, without systemd and without touching /etc: the munge key and
# socket, slurm.conf, the state and spool directories, pid and log files all
# live in DIR.
#
#   bench/jobs/slurm.sh start DIR   start munged, slurmctld and slurmd; wait until
#                                   the node is idle; print the lines to eval:
#                                     export SLURM_CONF=DIR/slurm.conf
#   bench/jobs/slurm.sh stop DIR    stop them (pid files in DIR)
#   bench/jobs/slurm.sh env DIR     print the export line again
#   bench/jobs/slurm.sh status DIR  sinfo of the cluster
#
# Both start and stop are idempotent: start on a running cluster only checks
# it; stop on a stopped cluster does nothing. Needs root (slurmd runs jobs as
# the submitting user and both daemons run as SlurmUser=root here) and the
# Debian packages slurm-wlm (slurmctld, slurmd, client commands) and munge.
#
# Knobs (environment): SLURM_NODE_CPUS [nproc], SLURM_NODE_MEM_MB [MemTotal -
# 512 MiB], SLURM_SCHED_PARAMS [""; e.g. "sched_min_interval=0"],
# SLURM_START_TIMEOUT [60] seconds.
set -euo pipefail

die() { printf 'slurm.sh: error: %s\n' "$*" >&2; exit 1; }
log() { printf 'slurm.sh: %s\n' "$*" >&2; }

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[[ $# == 2 ]] || usage
CMD=$1
DIR=$2
[[ $DIR == /* ]] || DIR=$PWD/$DIR

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# alive PIDFILE: true when the pid in PIDFILE runs the expected program.
alive() {
	local f=$1 prog=$2 pid
	[[ -s $f ]] || return 1
	pid=$(<"$f")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	[[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$prog"* ]]
}

# stopd PIDFILE NAME: SIGTERM, wait up to 10 s, SIGKILL.
stopd() {
	local f=$1 prog=$2 pid
	if ! alive "$f" "$prog"; then rm -f "$f"; return 0; fi
	pid=$(<"$f")
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		log "$prog ($pid) did not stop on SIGTERM within 10 s: SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
	log "stopped $prog ($pid)"
}

envline() { printf 'export SLURM_CONF=%q\n' "$DIR/slurm.conf"; }

do_stop() {
	[[ -d $DIR ]] || { log "$DIR does not exist: nothing to stop"; return 0; }
	# slurmd first (it may have job steps), then the controller, then munge.
	stopd "$DIR/slurmd.pid" slurmd
	stopd "$DIR/slurmctld.pid" slurmctld
	stopd "$DIR/munged.pid" munged
	# slurmstepd of a killed job could outlive slurmd; they are in DIR's spool
	local p
	for p in $(pgrep -x slurmstepd 2>/dev/null || true); do
		if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$DIR"; then kill -KILL "$p" 2>/dev/null || true; fi
	done
}

check_tools() {
	local t missing=()
	for t in munged slurmctld slurmd sinfo sbatch scontrol; do
		command -v "$t" >/dev/null || [[ -x /usr/sbin/$t ]] || missing+=("$t")
	done
	((${#missing[@]} == 0)) || die "missing ${missing[*]}: apt-get install -y slurm-wlm munge"
	[[ $(id -u) == 0 ]] || die "must run as root (slurmd starts jobs as the submitting user, SlurmUser=root here)"
}

do_start() {
	check_tools
	export PATH=$PATH:/usr/sbin
	mkdir -p "$DIR"
	chmod 0700 "$DIR"
	export SLURM_CONF=$DIR/slurm.conf
	if alive "$DIR/munged.pid" munged && alive "$DIR/slurmctld.pid" slurmctld && alive "$DIR/slurmd.pid" slurmd; then
		if sinfo -h -N -o '%T' 2>/dev/null | grep -qx idle; then
			log "already running in $DIR"
			envline
			return 0
		fi
		log "daemons run but the node is not idle: restarting"
	fi
	do_stop 2>/dev/null || true

	# a fresh cluster each start: no saved jobs, job ids from 1
	rm -rf "$DIR/state" "$DIR/spool" "$DIR/log"
	mkdir -p "$DIR/munge" "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/jobs"
	chmod 0700 "$DIR/munge"
	# ---- munge
	if [[ ! -s $DIR/munge/munge.key ]]; then
		if command -v mungekey >/dev/null || [[ -x /usr/sbin/mungekey ]]; then
			mungekey --create --keyfile="$DIR/munge/munge.key" --force >/dev/null 2>&1 ||
				dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
		else
			dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
		fi
	fi
	chmod 0600 "$DIR/munge/munge.key"
	local sock=$DIR/munge/munge.socket
	# a Unix socket path must fit in sun_path (108 bytes with the NUL)
	((${#sock} < 100)) || die "munge socket path $sock is ${#sock} bytes long (limit 99): use a shorter DIR"
	rm -f "$sock" "$sock.lock"
	# --force: munged refuses to start when it finds a stale socket or runs
	# as root with some directory checks it would otherwise fail on.
	if ! munged --force --socket="$sock" --key-file="$DIR/munge/munge.key" \
		--pid-file="$DIR/munged.pid" --log-file="$DIR/log/munged.log" \
		--seed-file="$DIR/munge/munged.seed" --num-threads=4 2>"$DIR/log/munged.err"; then
		cat "$DIR/log/munged.err" "$DIR/log/munged.log" >&2 2>/dev/null || true
		die "munged did not start (log above)"
	fi
	for i in $(seq 1 50); do
		[[ -S $sock ]] && alive "$DIR/munged.pid" munged && break
		[[ $i == 50 ]] && { cat "$DIR/log/munged.log" >&2 2>/dev/null || true; die "munged did not create $sock"; }
		sleep 0.1
	done
	if ! munge -S "$sock" -n </dev/null | unmunge -S "$sock" >/dev/null 2>&1; then
		die "munge round trip through $sock failed (see $DIR/log/munged.log)"
	fi

	# ---- slurm.conf
	local cpus mem ctlport dport host
	cpus=${SLURM_NODE_CPUS:-$(nproc)}
	mem=${SLURM_NODE_MEM_MB:-$(awk '/^MemTotal:/ {m=int($2/1024)-512; if (m<256) m=256; print m}' /proc/meminfo)}
	ctlport=$(freeport)
	dport=$(freeport)
	while [[ $dport == "$ctlport" ]]; do dport=$(freeport); done
	# slurmctld only runs where gethostname() (short) is one of SlurmctldHost.
	host=$(hostname -s)
	cat >"$DIR/slurm.conf" <<EOF
# generated by bench/jobs/slurm.sh — throwaway single-node cluster
ClusterName=atelierbench
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctlport
SlurmdPort=$dport
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/slurmd-%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MailProg=/bin/true
${SLURM_SCHED_PARAMS:+SchedulerParameters=$SLURM_SCHED_PARAMS}
NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF

	# ---- daemons: foreground mode (-D), detached from this shell's session.
	# The pid files are the daemons' own (SlurmctldPidFile, SlurmdPidFile):
	# $! is not their pid when setsid has to fork (a shell with job control).
	# -i: ignore state files (a throwaway cluster); -c: clear previous jobs.
	rm -f "$DIR/slurmctld.pid" "$DIR/slurmd.pid"
	setsid slurmctld -D -i -c -f "$DIR/slurm.conf" >>"$DIR/log/slurmctld.out" 2>&1 </dev/null &
	setsid slurmd -D -N localhost -f "$DIR/slurm.conf" >>"$DIR/log/slurmd.out" 2>&1 </dev/null &

	local timeout=${SLURM_START_TIMEOUT:-60} state="" d
	for i in $(seq 1 $((timeout * 5))); do
		for d in slurmctld slurmd; do
			if [[ -s $DIR/$d.pid ]]; then
				alive "$DIR/$d.pid" "$d" && continue
				tail -n 30 "$DIR/log/$d.out" >&2 2>/dev/null || true
				do_stop
				die "$d exited (log above; all logs in $DIR/log/)"
			fi
			# no pid file yet: give the daemon 15 s to write it
			if ((i > 75)); then
				tail -n 30 "$DIR/log/$d.out" >&2 2>/dev/null || true
				do_stop
				die "$d wrote no pid file ($DIR/$d.pid) within 15 s (log above; all logs in $DIR/log/)"
			fi
		done
		state=$(sinfo -h -N -o '%T' 2>/dev/null | head -1 || true)
		[[ $state == idle ]] && break
		if ((i == timeout * 5)); then
			sinfo -N -l >&2 2>&1 || true
			tail -n 20 "$DIR/log/slurmctld.out" "$DIR/log/slurmd.out" >&2 2>/dev/null || true
			do_stop
			die "node not idle after ${timeout}s (state '${state:-no answer}')"
		fi
		sleep 0.2
	done
	log "cluster up in $DIR: node localhost idle, $cpus CPUs, $mem MB, slurmctld port $ctlport, slurmd port $dport"
	envline
}

case $CMD in
start) do_start ;;
stop) do_stop ;;
env) envline ;;
status) SLURM_CONF=$DIR/slurm.conf sinfo -N -l ;;
*) usage ;;
esac
