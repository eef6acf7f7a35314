#!/usr/bin/env bash
# bench/jobs/run.sh — Atelier training jobs against a local Slurm, in the same
# run on the same machine:
#   (a) submit → first line of user code, for a job whose input is 2,000 files
#       / 50 MiB: first run (empty content cache) and a second job with the same
#       input (cache); Slurm: `sbatch` → first line of the batch script, plain
#       and with a `cp -r` of the same 2,000 files first (its staging);
#   (b) output sync of a 1 GiB checkpoint written by a job, against
#       `atelier obs cp` of the same file;
#   (c) what each layer of the job sandbox adds to the start of user code,
#       from the sandbox before the isolation work to the full one.
# Writes bench/results/jobs.md. See bench/jobs/README.md.
#
# Every knob is an environment variable (defaults in brackets):
#   RUNS [5]              rounds of (a): Atelier first run, Atelier cached, Slurm plain, Slurm + cp
#   SLURM_RUNS [2*RUNS]   rounds of the Slurm side of (a) (the first RUNS interleaved with Atelier's):
#                         slurmctld's one-second scheduling tick makes single Slurm runs vary by ~1 s
#   SLURM_DEFAULT_RUNS [SLURM_RUNS]  runs of plain sbatch on a Slurm with default SchedulerParameters
#   SYNC_RUNS [2]         rounds of (b)
#   DATA_FILES [2000] DATA_BYTES [52428800]   input data set (bench/jobs/gendata.py, fixed seed)
#   CKPT_MIB [1024]       checkpoint size of (b)
#   LAYER_RUNS [30]       interleaved rounds of (c), each sandbox layer's start cost (bench/jobs/layers; needs root)
#   SANDBOX [bubblewrap]  the server's `sandbox:` setting
#   ENGINE_PYTHON [/usr/bin/python3, resolved]  the interpreter of the job's engine (what make demo configures);
#                         "detect" leaves the server's auto-detection (python3 on PATH, e.g. a pyenv build)
#   CODE_FROM [local]     local: --code-dir DIR (the CLI uploads it); obs: --code-dir obs://bench/code/…
#   SLURM [1]             0: no Slurm (Atelier figures only)
#   SLURM_TUNED_PARAMS [batch_sched_delay=0]  SchedulerParameters of the Slurm the ratios use
#   JOB_TIMEOUT [600]     seconds to wait for one job
#   ATL_BIN               use this atelier binary instead of building bench/.bin/atelier
#   WORK [bench/.work]    scratch space (server data dir, Slurm dir, data set)
#   OUT [bench/results/jobs.md]
#   KEEP [0]              1: keep the scratch directory of this run
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$ROOT/bench/.bin
OUT=${OUT:-$ROOT/bench/results/jobs.md}
RUNS=${RUNS:-5}
SLURM_RUNS=${SLURM_RUNS:-$((2 * RUNS))}
SLURM_DEFAULT_RUNS=${SLURM_DEFAULT_RUNS:-$SLURM_RUNS}
SYNC_RUNS=${SYNC_RUNS:-2}
DATA_FILES=${DATA_FILES:-2000}
DATA_BYTES=${DATA_BYTES:-52428800}
CKPT_MIB=${CKPT_MIB:-1024}
LAYER_RUNS=${LAYER_RUNS:-30}
SANDBOX=${SANDBOX:-bubblewrap}
CODE_FROM=${CODE_FROM:-local}
SLURM=${SLURM:-1}
SLURM_TUNED_PARAMS=${SLURM_TUNED_PARAMS:-batch_sched_delay=0}
JOB_TIMEOUT=${JOB_TIMEOUT:-600}
KEEP=${KEEP:-0}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { if (a=="" || b=="") print ""; else printf "%.3f", a-b }'; }

mkdir -p "$BIN" "${WORK:-$ROOT/bench/.work}" "$(dirname "$OUT")"
WORK=$(mktemp -d "${WORK:-$ROOT/bench/.work}/jobs-XXXXXX")
RES=$WORK/results.jsonl
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$RES"
SERVER_PID=""
SLDIR=$WORK/slurm

cleanup() {
	local rc=$?
	if [[ -n $SERVER_PID ]]; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SERVER_PID" 2>/dev/null || true
	fi
	[[ -d $SLDIR ]] && "$ROOT/bench/jobs/slurm.sh" stop "$SLDIR" >/dev/null 2>&1 || true
	if [[ $KEEP == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# record KEY=VALUE…: one JSON result line; numbers stay numbers, "" becomes null.
record() {
	python3 -c '
import json, sys
d = {}
for a in sys.argv[1:]:
    k, v = a.split("=", 1)
    if v == "":
        d[k] = None
        continue
    try:
        d[k] = json.loads(v)
    except ValueError:
        d[k] = v
print(json.dumps(d))' "$@" >>"$RES"
}

# ---------------------------------------------------------------- build
if [[ -n ${ATL_BIN:-} ]]; then
	ATL=$ATL_BIN
	BUILT="prebuilt $ATL_BIN ($(date -u -r "$ATL_BIN" '+%Y-%m-%d %H:%M UTC'))"
else
	log "building atelier"
	go build -o "$BIN/atelier" ./cmd/atelier
	ATL=$BIN/atelier
	BUILT="built $(date -u '+%Y-%m-%d %H:%M UTC') with \`go build -o bench/.bin/atelier ./cmd/atelier\`"
fi
BUILT_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
TREE_STATE=""
if [[ -n $(git status --porcelain -- . ':!bench' 2>/dev/null) ]]; then
	TREE_STATE=" + uncommitted changes in $(git status --porcelain -- . ':!bench' | wc -l) files outside bench/ (\`git diff HEAD -- . ':!bench' | sha256sum\` = $( (git diff HEAD -- . ':!bench'; git ls-files -o --exclude-standard -- . ':!bench' | xargs -r cat) | sha256sum | cut -c1-12), untracked files included)"
fi

# ---------------------------------------------------------------- data
log "data set: $DATA_FILES files, $DATA_BYTES bytes"
DATA=$WORK/data
GEN=$(python3 "$ROOT/bench/jobs/gendata.py" "$DATA" --files "$DATA_FILES" --bytes "$DATA_BYTES")
log "data: $GEN"
GEN=$(jq -r '"\(.files) files, \(.bytes) bytes (\(.min) to \(.max) bytes per file, seed \(.seed))"' <<<"$GEN")

# ---------------------------------------------------------------- atelier
ATELIER_OK=1
ATELIER_WHY=""
# (no pipes into grep -q or head here: with pipefail, SIGPIPE would end the script)
JOB_HELP=$("$ATL" job create --help 2>&1 || true)
if [[ $JOB_HELP != *--boot-file* ]]; then
	ATELIER_OK=0
	ATELIER_WHY="\`atelier job create --help\` does not list --boot-file: $(printf '%.300s' "$JOB_HELP" | tr '\n' ' ')"
	log "atelier has no job command: Atelier is not measured"
fi

start_server() {
	log "starting atelier server (sandbox: $SANDBOX)"
	mkdir -p "$WORK/atelier"
	printf 'sandbox: %s\n' "$SANDBOX" >"$WORK/atelier.yaml"
	if [ "${ENGINE_PYTHON:-}" != detect ]; then
		printf 'engines:\n  - {name: python3, python: %s}\n' "$(readlink -f "${ENGINE_PYTHON:-/usr/bin/python3}")" >>"$WORK/atelier.yaml"
	fi
	"$ATL" server --data-dir "$WORK/atelier" --listen 127.0.0.1:0 --s3-listen 127.0.0.1:0 --notebook-listen 127.0.0.1:0 \
		--config "$WORK/atelier.yaml" >"$WORK/atelier.log" 2>&1 &
	SERVER_PID=$!
	local i api
	for i in $(seq 1 300); do
		if [[ -f $WORK/atelier/admin.yaml ]]; then
			api=$(sed -n 's/^endpoint: *//p' "$WORK/atelier/admin.yaml")
			if [[ -n $api ]] && curl -sf "$api/healthz" >/dev/null 2>&1; then break; fi
		fi
		kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/atelier.log" >&2; exit 1; }
		[[ $i == 300 ]] && { log "atelier did not come up"; cat "$WORK/atelier.log" >&2; exit 1; }
		sleep 0.1
	done
	export ATELIER_CONFIG=$WORK/atelier/admin.yaml
	ATL_WORKDIR=$WORK/atelier/work
}
start_server

log "uploading the data set to obs://bench/data-r1..r$RUNS/ (not timed)"
"$ATL" obs mb obs://bench >/dev/null
for r in $(seq 1 "$RUNS"); do
	# one prefix per round: a key the content cache has never seen, so the
	# round's first job is a cold start and its second a cached one
	"$ATL" obs cp -r -q "$DATA/" "obs://bench/data-r$r/"
done

# ---------------------------------------------------------------- job code
CODE=$WORK/code
mkdir -p "$CODE/first" "$CODE/ckpt"
# The first statement of each boot file takes the time and prints it.
cat >"$CODE/first/first.py" <<EOF
import time; T0 = time.time(); print("FIRSTLINE %.6f" % T0, flush=True)
import os
import sys

args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
files = size = 0
for d, _, fs in os.walk(args["data_url"]):
    for f in fs:
        files += 1
        size += os.path.getsize(os.path.join(d, f))
print("INPUT files=%d bytes=%d" % (files, size), flush=True)
with open(os.path.join(args["train_url"], "first.txt"), "w") as f:
    f.write("%.6f\n" % T0)
if (files, size) != ($DATA_FILES, $DATA_BYTES):
    sys.exit("input incomplete: %d files, %d bytes; want $DATA_FILES, $DATA_BYTES" % (files, size))
EOF
cat >"$CODE/ckpt/ckpt.py" <<EOF
import time; T0 = time.time(); print("FIRSTLINE %.6f" % T0, flush=True)
import os
import sys

args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
chunk = 64 << 20
buf = bytearray(os.urandom(chunk))
with open(os.path.join(args["train_url"], "ckpt.bin"), "wb") as f:
    for i in range($CKPT_MIB // 64):
        buf[:8] = i.to_bytes(8, "little")  # no two chunks alike
        f.write(buf)
    f.flush()
    os.fsync(f.fileno())
print("USEREND %.6f" % time.time(), flush=True)
EOF
mkdir -p "$CODE/warm"
sed 's/^for d, _, fs in .*/for d, _, fs in []:/; s/^if (files, size) != .*/if False:/' "$CODE/first/first.py" >"$CODE/warm/warm.py"
if [[ $CODE_FROM == obs ]]; then
	for c in first ckpt warm; do "$ATL" obs cp -r -q "$CODE/$c/" "obs://bench/code/$c/"; done
	CODE_FIRST=obs://bench/code/first/ CODE_CKPT=obs://bench/code/ckpt/ CODE_WARM=obs://bench/code/warm/
else
	CODE_FIRST=$CODE/first CODE_CKPT=$CODE/ckpt CODE_WARM=$CODE/warm
fi

# atelier_job KIND ROUND CODE BOOT OUTPUT [INPUT]: runs one job to its end;
# sets JOB_ID JOB_JSON JOB_LOGS JOB_TIMES T_CLI0 T_CLI1 JOB_OK JOB_ERR.
# JOB_EXTRA holds more flags for `job create`. JOB_TIMES is joblog.py's
# reading of the job's log (times of the runner's lines).
JOB_EXTRA=()
atelier_job() {
	local kind=$1 r=$2 code=$3 boot=$4 out=$5 in=${6:-} name
	name=bench-$kind-r$r-$(date +%s%N | tail -c 7)
	local args=(job create --name "$name" --code-dir "$code" --boot-file "$boot" --output "train_url=$out" -o json)
	[[ -n $in ]] && args+=(--input "data_url=$in")
	args+=("${JOB_EXTRA[@]}")
	JOB_ID="" JOB_JSON="" JOB_LOGS="" JOB_TIMES="{}" JOB_OK=true JOB_ERR=""
	T_CLI0=$(now)
	if ! JOB_JSON=$("$ATL" "${args[@]}" 2>"$WORK/create.err"); then
		T_CLI1=$(now)
		JOB_OK=false JOB_ERR="job create: $(head -c 400 "$WORK/create.err" | tr '\n' ' ')"
		log "$kind r$r: $JOB_ERR"
		return 0
	fi
	T_CLI1=$(now)
	JOB_ID=$(jq -r '.metadata.id // empty' <<<"$JOB_JSON" 2>/dev/null || true)
	if [[ -z $JOB_ID ]]; then
		JOB_OK=false JOB_ERR="job create printed no metadata.id: $(head -c 300 <<<"$JOB_JSON" | tr '\n' ' ')"
		log "$kind r$r: $JOB_ERR"
		return 0
	fi
	if ! timeout "$JOB_TIMEOUT" "$ATL" job wait "$JOB_ID" >"$WORK/wait.out" 2>&1; then
		JOB_OK=false JOB_ERR="job wait: $(tail -c 400 "$WORK/wait.out" | tr '\n' ' ')"
	fi
	JOB_JSON=$("$ATL" job get "$JOB_ID" -o json 2>/dev/null || echo "$JOB_JSON")
	JOB_LOGS=$("$ATL" job logs "$JOB_ID" 2>&1 || true)
	printf '%s\n' "$JOB_LOGS" >"$WORK/logs-$kind-r$r.txt"
	printf '%s\n' "$JOB_JSON" >"$WORK/job-$kind-r$r.json"
	"$ATL" job logs "$JOB_ID" -o json >"$WORK/logs-$kind-r$r.json" 2>/dev/null || true
	JOB_TIMES=$(python3 "$ROOT/bench/jobs/joblog.py" "$(jq -r '.metadata.create_time // 0' <<<"$JOB_JSON" 2>/dev/null || echo 0)" \
		<"$WORK/logs-$kind-r$r.json" 2>/dev/null || echo '{}')
	local phase
	phase=$(jq -r '.status.phase // empty' <<<"$JOB_JSON" 2>/dev/null || true)
	if [[ $phase != Completed ]]; then
		JOB_OK=false
		JOB_ERR="${JOB_ERR:+$JOB_ERR; }phase ${phase:-unknown}: $(jq -c '.status.task_statuses // empty' <<<"$JOB_JSON" 2>/dev/null | head -c 400 || true); last log lines: $(tail -n 5 <<<"$JOB_LOGS" | tr '\n' '|' | head -c 600 || true)"
	fi
	$JOB_OK || log "$kind r$r: job $JOB_ID: $JOB_ERR"
}

# firstline: the FIRSTLINE time of the last job, from its log, else from its
# output file first.txt.
firstline() {
	local t
	t=$(grep -o 'FIRSTLINE [0-9.]*' <<<"$JOB_LOGS" | head -1 | cut -d' ' -f2 || true)
	if [[ -z $t && -n ${1:-} ]]; then t=$("$ATL" obs cat "${1}first.txt" 2>/dev/null | head -1 || true); fi
	printf '%s' "$t"
}

jt() { jq -r ".$1 // empty" <<<"$JOB_TIMES" 2>/dev/null || true; }
ms_field() { jq -r "$1 // empty" <<<"$JOB_JSON" 2>/dev/null | awk '{ if ($1+0 > 0) printf "%.3f", $1/1000 }'; }

# srv_cpu: CPU seconds the server process has used; cpu_ticks: "busy total"
# clock ticks of the whole machine (all cores, every tenant).
srv_cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.3f", ($14+$15)/t }' "/proc/$SERVER_PID/stat" 2>/dev/null || echo 0; }
cpu_ticks() { awk '/^cpu / { tot=0; for (i=2; i<=9 && i<=NF; i++) tot+=$i; print tot-$5-$6, tot }' /proc/stat; }

# run_start KIND ROUND DATA_PREFIX: measure (a) for one Atelier job.
run_start() {
	local kind=$1 r=$2 in=$3 out="obs://bench/out/$1-r$2/" c0 c1 b0 b1
	c0=$(srv_cpu) b0=$(cpu_ticks)
	atelier_job "$kind" "$r" "$CODE_FIRST" first.py "$out" "$in"
	c1=$(srv_cpu) b1=$(cpu_ticks)
	local first created started
	first=$(firstline "$out")
	created=$(ms_field .metadata.create_time)
	started=$(ms_field .status.start_time)
	[[ -n $first ]] || { JOB_OK=false; JOB_ERR="${JOB_ERR:+$JOB_ERR; }no FIRSTLINE in the log or first.txt"; }
	record system=atelier kind="$kind" round="$r" ok="$JOB_OK" job="$JOB_ID" \
		cli_s="$(sub "$first" "$T_CLI0")" server_s="$(sub "$first" "$created")" \
		create_call_s="$(sub "$T_CLI1" "$T_CLI0")" reported_start_s="$(sub "$started" "$created")" \
		cli_pre_s="$(sub "$created" "$T_CLI0")" launch_s="$(jt launch_s)" stage_s="$(jt stage_s)" \
		stage_rep_s="$(jt stage_rep_s)" spawn_s="$(jt spawn_s)" exec_s="$(jt exec_s)" cache_hits="$(jt cache_hits)" \
		server_cpu_s="$(sub "$c1" "$c0")" list_s="$(jt list_s)" download_s="$(jt download_s)" link_s="$(jt link_s)" \
		busy_cores="$(awk -v a="$b0" -v b="$b1" -v n="$(nproc)" 'BEGIN { split(a, x, " "); split(b, y, " "); d=y[2]-x[2]; if (d>0) printf "%.2f", (y[1]-x[1])/d*n }')" \
		input="$(grep -o 'INPUT files=[0-9]* bytes=[0-9]*' <<<"$JOB_LOGS" | head -1 || true)" error="$JOB_ERR"
	log "atelier $kind r$r: submit→first line $(sub "$first" "$T_CLI0") s (server create→first line $(sub "$first" "$created") s) ok=$JOB_OK"
}

# ---------------------------------------------------------------- slurm
SLURM_OK=0
SLURM_WHY=""
SLURM_VERSION=""
slurm_up() { # SCHEDULER_PARAMS
	"$ROOT/bench/jobs/slurm.sh" stop "$SLDIR" >/dev/null 2>&1 || true
	if ! SLURM_SCHED_PARAMS=$1 "$ROOT/bench/jobs/slurm.sh" start "$SLDIR" >"$WORK/slurm-start.out" 2>&1; then
		SLURM_WHY="bench/jobs/slurm.sh start failed: $(tail -n 5 "$WORK/slurm-start.out" | tr '\n' ' ')"
		log "$SLURM_WHY"
		return 1
	fi
	export SLURM_CONF=$SLDIR/slurm.conf
	mkdir -p "$SLDIR/jobs" "$SLDIR/stage"
}
if [[ $SLURM == 1 ]]; then
	if command -v sbatch >/dev/null; then
		SLURM_VERSION=$(slurmctld -V 2>/dev/null || dpkg-query -W -f '${Version}' slurm-wlm 2>/dev/null || true)
		slurm_up "$SLURM_TUNED_PARAMS" && SLURM_OK=1
	else
		SLURM_WHY="sbatch not found (apt-get install -y slurm-wlm munge)"
	fi
else
	SLURM_WHY="SLURM=0"
fi
cat >"$WORK/slurm-plain.sh" <<'EOF'
#!/bin/bash
echo "FIRSTLINE $(date +%s.%N)"
EOF
cat >"$WORK/slurm-cp.sh" <<EOF
#!/bin/bash
cp -r "$DATA" "$SLDIR/stage/\$SLURM_JOB_ID" && echo "FIRSTLINE \$(date +%s.%N)"
echo "INPUT files=\$(find "$SLDIR/stage/\$SLURM_JOB_ID" -type f | wc -l)"
rm -rf "$SLDIR/stage/\$SLURM_JOB_ID"
EOF

# slurm_job KIND ROUND SCRIPT: sbatch → first line; KIND names the result.
slurm_job() {
	local kind=$1 r=$2 script=$3 t0 id="" out first="" ok=true err=""
	# slurmctld schedules on a one-second tick: start at a random phase of it
	sleep "0.$(printf '%03d' $((RANDOM % 1000)))"
	t0=$(now)
	if ! id=$(sbatch --parsable -o "$SLDIR/jobs/%j.out" -e "$SLDIR/jobs/%j.err" "$script" 2>"$WORK/sbatch.err"); then
		ok=false err="sbatch: $(head -c 300 "$WORK/sbatch.err" || true)"
	else
		id=${id%%;*}
		out=$SLDIR/jobs/$id.out
		local deadline=$((SECONDS + 120))
		while ((SECONDS < deadline)); do
			[[ -z $(squeue -h -j "$id" -o %i 2>/dev/null) ]] && break
			sleep 0.05
		done
		first=$(sed -n 's/^FIRSTLINE //p' "$out" 2>/dev/null | head -1 || true)
		[[ -n $first ]] || { ok=false; err="no FIRSTLINE in $out: $(head -c 300 "$SLDIR/jobs/$id.err" 2>/dev/null || true)"; }
	fi
	record system=slurm kind="$kind" round="$r" ok="$ok" job="$id" cli_s="$(sub "$first" "$t0")" \
		input="$(grep -o 'INPUT files=[0-9]*' "$SLDIR/jobs/$id.out" 2>/dev/null | head -1 || true)" error="$err"
	log "slurm $kind r$r: sbatch→first line $(sub "$first" "$t0") s ok=$ok"
}
if [[ $SLURM_OK == 1 ]]; then
	log "slurm: warm-up job (the first job after start waits for the node's first registration)"
	slurm_job warmup 0 "$WORK/slurm-plain.sh"
fi

# ---------------------------------------------------------------- (a) submit → first line
if [[ $ATELIER_OK == 1 ]]; then
	log "atelier: warm-up job without input (first job after server start: python/ tree extraction etc.)"
	atelier_job warmup 0 "$CODE_WARM" warm.py obs://bench/out/warmup/
	first=$(firstline obs://bench/out/warmup/)
	record system=atelier kind=warmup round=0 ok="$JOB_OK" job="$JOB_ID" cli_s="$(sub "$first" "$T_CLI0")" \
		server_s="$(sub "$first" "$(ms_field .metadata.create_time)")" error="$JOB_ERR"
	if [[ $JOB_OK != true ]]; then
		ATELIER_OK=0
		ATELIER_WHY="a job without input did not complete: $JOB_ERR"
		log "atelier: $ATELIER_WHY — Atelier is not measured"
	fi
fi
for r in $(seq 1 "$RUNS"); do
	if [[ $ATELIER_OK == 1 ]]; then
		run_start first "$r" "obs://bench/data-r$r/"
		run_start cached "$r" "obs://bench/data-r$r/"
	fi
	if [[ $SLURM_OK == 1 ]] && ((r <= SLURM_RUNS)); then
		slurm_job plain "$r" "$WORK/slurm-plain.sh"
		slurm_job cp "$r" "$WORK/slurm-cp.sh"
	fi
done
if [[ $SLURM_OK == 1 ]]; then
	for r in $(seq $((RUNS + 1)) "$SLURM_RUNS"); do
		slurm_job plain "$r" "$WORK/slurm-plain.sh"
		slurm_job cp "$r" "$WORK/slurm-cp.sh"
	done
fi
# ---------------------------------------------------------------- reference floors
# What parts of the figures cost on their own on this machine (medians of 5).
floor() { # NAME COMMAND...: time COMMAND 5 times, record the median
	local name=$1 i t0 ts=()
	shift
	for i in 1 2 3 4 5; do
		t0=$(now)
		"$@" >/dev/null 2>&1 || true
		ts+=("$(sub "$(now)" "$t0")")
	done
	record system=floor kind="$name" round=0 ok=true cli_s="$(printf '%s\n' "${ts[@]}" | stats | cut -d' ' -f1)"
}
stats() { # median min max of stdin
	sort -g | awk '{v[NR]=$1} END { if (!NR) { print "n/a n/a n/a"; exit }
		m = (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'
}
ENGINE_PY=$("$ATL" job engines -o json 2>/dev/null | jq -r '(.items // .)[0].python // empty' 2>/dev/null || true)
ENGINE_PY=${ENGINE_PY:-python3}
floor python-start "$ENGINE_PY" -c 'import time; print(time.time())'
floor debian-python-start /usr/bin/python3 -c 'import time; print(time.time())'
floor bwrap-python-start bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --tmpfs /tmp "$ENGINE_PY" -c 'import time; print(time.time())'
floor list-2000 "$ATL" obs ls -r obs://bench/data-r1/
floor list-empty "$ATL" obs ls obs://bench/nothing-here/
floor cp-al bash -c "rm -rf '$WORK/floor-ln' && cp -al '$DATA' '$WORK/floor-ln'"
floor cp-r bash -c "rm -rf '$WORK/floor-cp' && cp -r '$DATA' '$WORK/floor-cp'"
floor rm-only bash -c "rm -rf '$WORK/floor-x' && mkdir '$WORK/floor-x'"
rm -rf "$WORK/floor-ln" "$WORK/floor-cp" "$WORK/floor-x"

CACHE_DU=""
[[ -d $ATL_WORKDIR/cache/objects ]] && CACHE_DU=$(du -sh "$ATL_WORKDIR/cache/objects" | cut -f1)
CACHE_FILES=$(find "$ATL_WORKDIR/cache/objects" -type f 2>/dev/null | wc -l || true)

# ---------------------------------------------------------------- (c) sandbox layers
# The same trivial program through bubblewrap command lines that add one
# layer at a time, interleaved (bench/jobs/layers).
LAYERS_OK=0
log "(c) sandbox layers: $LAYER_RUNS rounds"
if go run ./bench/jobs/layers -n "$LAYER_RUNS" -atelier "$ATL" -python "$ENGINE_PY" >"$WORK/layers.md" 2>"$WORK/layers.err"; then
	LAYERS_OK=1
else
	log "layers failed: $(head -c 300 "$WORK/layers.err")"
fi
# The full sandbox's cost over the committed run's (the "full" row's last column).
LAYERS_OVER=$(awk -F'|' '$2 ~ /^ full / { gsub(/[ +ms]/, "", $6); print $6 }' "$WORK/layers.md" 2>/dev/null)
LAYERS_OVER=${LAYERS_OVER:-n/a}

# ---------------------------------------------------------------- (b) output sync
mibs() { awk -v s="$1" -v m="$CKPT_MIB" 'BEGIN { if (s=="" || s+0<=0) print ""; else printf "%.1f", m/s }'; }
if [[ $ATELIER_OK == 1 ]]; then
	for r in $(seq 1 "$SYNC_RUNS"); do
		out="obs://bench/ckpt/r$r/"
		log "atelier: job writing a $CKPT_MIB MiB checkpoint (round $r)"
		# no periodic sync while the file is written: only the final one is timed
		JOB_EXTRA=(--sync-interval 10m)
		atelier_job ckpt "$r" "$CODE_CKPT" ckpt.py "$out"
		JOB_EXTRA=()
		uend=$(grep -o 'USEREND [0-9.]*' <<<"$JOB_LOGS" | head -1 | cut -d' ' -f2 || true)
		jend=$(ms_field .status.end_time)
		sync_s=$(sub "$jend" "$uend")
		sync_rep_s=$(jt sync_rep_s)
		# the runner's own lines about the sync, kept for the report
		grep -i 'sync' <<<"$JOB_LOGS" | head -5 >"$WORK/sync-lines-r$r.txt" || true
		# fetch what the job synced (checks it arrived whole), then upload
		# that same file with `atelier obs cp`, from the page cache as well
		dl=$WORK/ckpt-r$r.bin
		cp_s="" size=""
		if "$ATL" obs cp -q "${out}ckpt.bin" "$dl" 2>"$WORK/dl.err"; then
			size=$(stat -c %s "$dl")
			[[ $size == $((CKPT_MIB << 20)) ]] || { JOB_OK=false; JOB_ERR="${JOB_ERR:+$JOB_ERR; }synced ckpt.bin has $size bytes"; }
			cat "$dl" >/dev/null
			t0=$(now)
			if "$ATL" obs cp -q "$dl" "obs://bench/cp/r$r.bin" 2>"$WORK/cp.err"; then cp_s=$(sub "$(now)" "$t0"); else
				log "obs cp failed: $(head -c 300 "$WORK/cp.err" || true)"
			fi
			rm -f "$dl"
		else
			JOB_OK=false JOB_ERR="${JOB_ERR:+$JOB_ERR; }the synced ${out}ckpt.bin could not be read: $(head -c 300 "$WORK/dl.err" || true)"
		fi
		[[ -n $sync_s ]] || { JOB_OK=false; JOB_ERR="${JOB_ERR:+$JOB_ERR; }no USEREND line or end_time"; }
		record system=atelier kind=sync round="$r" ok="$JOB_OK" job="$JOB_ID" sync_s="$sync_s" sync_mibs="$(mibs "$sync_s")" \
			sync_rep_s="$sync_rep_s" sync_rep_mibs="$(mibs "$sync_rep_s")" write_s="$(sub "$uend" "$(jt first)")" \
			cp_s="$cp_s" cp_mibs="$(mibs "$cp_s")" error="$JOB_ERR"
		log "sync r$r: job sync $sync_s s ($(mibs "$sync_s") MiB/s), obs cp $cp_s s ($(mibs "$cp_s") MiB/s) ok=$JOB_OK"
		[[ -n $JOB_ID ]] && "$ATL" job delete "$JOB_ID" >/dev/null 2>&1 || true
	done
fi

# ---------------------------------------------------------------- slurm with default scheduler settings
if [[ $SLURM_OK == 1 && $SLURM_DEFAULT_RUNS -gt 0 ]]; then
	log "slurm: restarting with default SchedulerParameters (batch_sched_delay=3)"
	if slurm_up ""; then
		slurm_job warmup-default 0 "$WORK/slurm-plain.sh"
		for r in $(seq 1 "$SLURM_DEFAULT_RUNS"); do slurm_job plain-default "$r" "$WORK/slurm-plain.sh"; done
	fi
	"$ROOT/bench/jobs/slurm.sh" stop "$SLDIR" >/dev/null 2>&1 || true
fi

# ---------------------------------------------------------------- report
log "writing $OUT"
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
vals() { jq -r --arg s "$1" --arg k "$2" --arg f "$3" 'select(.system==$s and .kind==$k and .ok==true) | .[$f] // empty' "$RES"; }
nbad() { jq -r --arg s "$1" --arg k "$2" 'select(.system==$s and .kind==$k and .ok!=true) | .round' "$RES" | wc -l; }
med() { vals "$@" | stats | cut -d' ' -f1; }
med1() { vals "$@" | stats | awk '{ if ($1=="n/a") print "n/a"; else printf "%.1f", $1 }'; }
fl() { vals floor "$1" cli_s | head -1; }
# fld A B: floor A minus floor B, or "n/a (noise)" when load made it negative
fld() { awk -v a="$(fl "$1")" -v b="$(fl "$2")" 'BEGIN { if (a=="" || b=="") print "n/a"; else if (a-b < 0) print "n/a (noise)"; else printf "%.3f", a-b }'; }
mm() { vals "$@" | stats | awk '{ if ($1=="n/a") print "n/a"; else printf "%s–%s", $2, $3 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a=="" || b=="" || a=="n/a" || b=="n/a" || b+0==0) print "n/a"; else printf "%.2f", a/b }'; }
verdict() { # VALUE TARGET higher|lower
	awk -v x="$1" -v t="$2" -v d="$3" 'BEGIN { if (x=="n/a" || x=="") { print "not measured"; exit }
		if ((d=="higher" && x+0 >= t+0) || (d=="lower" && x+0 <= t+0)) print "met"; else print "**missed**" }'
}
runs() { # SYSTEM KIND FIELD: the runs in order, failures marked
	jq -r --arg s "$1" --arg k "$2" --arg f "$3" 'select(.system==$s and .kind==$k) | if .ok==true then (.[$f] // "–" | tostring) else "failed" end' "$RES" | paste -sd' ' | sed 's/ /, /g'
}

A_FIRST=$(med atelier first cli_s) A_FIRST_SRV=$(med atelier first server_s)
A_CACHED=$(med atelier cached cli_s) A_CACHED_SRV=$(med atelier cached server_s)
S_PLAIN=$(med slurm plain cli_s) S_CP=$(med slurm cp cli_s) S_DEF=$(med slurm plain-default cli_s)
SYNC_MIBS=$(med1 atelier sync sync_mibs) CP_MIBS=$(med1 atelier sync cp_mibs)
SYNC_RATIO=$(ratio "$SYNC_MIBS" "$CP_MIBS")

{
	echo "# Jobs benchmark: Atelier vs Slurm"
	echo
	echo "Generated by \`bench/jobs/run.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). The Atelier server and a"
	echo "single-node Slurm cluster (\`bench/jobs/slurm.sh\`: munge, slurmctld and slurmd started by hand in a"
	echo "temporary directory) ran on the same machine in the same run; the rounds alternate (Atelier first run,"
	echo "Atelier cached, Slurm plain, Slurm + cp, next round), so each ratio compares runs seconds apart. The"
	echo "machine is small and shared: **read the ratios and the orders of magnitude, not the last digit.**"
	echo
	if [[ $ATELIER_OK != 1 ]]; then
		echo "**Atelier was not measured:** $ATELIER_WHY"
		echo
	fi
	if [[ $SLURM_OK != 1 ]]; then
		echo "**Slurm was not measured:** $SLURM_WHY"
		echo
	fi
	echo "## Machine"
	echo
	echo '```'
	echo "nproc: $(nproc)   cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)   kernel: $(uname -r)"
	echo "load average (1, 5, 15 min) when the run started: $LOAD_START; when it ended: $LOAD_END"
	free -m
	echo
	df -h "$WORK" | tail -n +1
	echo '```'
	echo
	echo "## Versions"
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| atelier | commit $BUILT_COMMIT$TREE_STATE, $BUILT |"
	echo "| sandbox | \`sandbox: $SANDBOX\` ($(bwrap --version 2>/dev/null || echo 'bwrap missing')) |"
	echo "| slurm | ${SLURM_VERSION:-not installed} (Debian slurm-wlm), munge $(munged --version 2>&1 | head -1 | awk '{print $1}') |"
	echo "| go | $(go version) |"
	echo "| python (user code) | $(python3 --version 2>&1) |"
	echo
	echo "## Summary"
	echo
	echo "Medians of $RUNS Atelier and $SLURM_RUNS Slurm runs (min–max in the tables below). Seconds, **lower is better**; Atelier/Slurm below 1"
	echo "means Atelier reaches user code sooner."
	echo
	echo "| figure | Atelier | Slurm | Atelier/Slurm | target | |"
	echo "|---|---:|---:|---:|---|---|"
	echo "| submit → first line, input $DATA_FILES files / $((DATA_BYTES >> 20)) MiB, **first run** (empty cache); Slurm: \`cp -r\` of the same files, then the line | ${A_FIRST} s | ${S_CP} s | $(ratio "$A_FIRST" "$S_CP")× | ≤ 1 s | $(verdict "$A_FIRST" 1.0 lower) |"
	echo "| submit → first line, **second job, same input** (content cache); Slurm: plain \`sbatch\` | ${A_CACHED} s | ${S_PLAIN} s | $(ratio "$A_CACHED" "$S_PLAIN")× | ≤ 0.3 s | $(verdict "$A_CACHED" 0.3 lower) |"
	echo "| the same two, measured from the server's create_time (Atelier only) | ${A_FIRST_SRV} s / ${A_CACHED_SRV} s | | | | |"
	echo "| Slurm plain \`sbatch\` with default SchedulerParameters (batch_sched_delay=3) | | ${S_DEF} s | | | |"
	echo "| output sync of a $CKPT_MIB MiB checkpoint: job's final sync vs \`atelier obs cp\`, MiB/s (**higher is better**) | sync ${SYNC_MIBS} MiB/s | obs cp ${CP_MIBS} MiB/s | ${SYNC_RATIO}× of obs cp | ≥ 0.8× | $(verdict "$SYNC_RATIO" 0.8 higher) |"
	echo "| start cost of the sandbox's layers alone over the sandbox before the isolation work (section (c), interleaved; the end-to-end comparison is \`bench/jobs/ab.sh\`) | +${LAYERS_OVER} ms | | | | |"
	echo
	echo "SUMMARY_NOTES"
	echo
	echo "## (a) Submit → first line of user code"
	echo
	echo "| system, case | runs (s) | median | min–max | failed |"
	echo "|---|---|---:|---:|---:|"
	echo "| Atelier, first run (CLI wall: before \`atelier job create\` → FIRSTLINE) | $(runs atelier first cli_s) | $A_FIRST | $(mm atelier first cli_s) | $(nbad atelier first) |"
	echo "| Atelier, first run (server create_time → FIRSTLINE) | $(runs atelier first server_s) | $A_FIRST_SRV | $(mm atelier first server_s) | |"
	echo "| Atelier, cached (CLI wall) | $(runs atelier cached cli_s) | $A_CACHED | $(mm atelier cached cli_s) | $(nbad atelier cached) |"
	echo "| Atelier, cached (server create_time → FIRSTLINE) | $(runs atelier cached server_s) | $A_CACHED_SRV | $(mm atelier cached server_s) | |"
	echo "| Atelier: \`job create\` call alone (first / cached) | $(runs atelier first create_call_s) / $(runs atelier cached create_call_s) | $(med atelier first create_call_s) / $(med atelier cached create_call_s) | | |"
	echo "| Atelier: status.start_time − create_time (first / cached) | $(runs atelier first reported_start_s) / $(runs atelier cached reported_start_s) | $(med atelier first reported_start_s) / $(med atelier cached reported_start_s) | | |"
	echo "| Slurm plain \`sbatch\` (SchedulerParameters=$SLURM_TUNED_PARAMS) | $(runs slurm plain cli_s) | $S_PLAIN | $(mm slurm plain cli_s) | $(nbad slurm plain) |"
	echo "| Slurm \`sbatch\`, script copies the $DATA_FILES files with \`cp -r\` first | $(runs slurm cp cli_s) | $S_CP | $(mm slurm cp cli_s) | $(nbad slurm cp) |"
	echo "| Slurm plain \`sbatch\`, default SchedulerParameters | $(runs slurm plain-default cli_s) | $S_DEF | $(mm slurm plain-default cli_s) | $(nbad slurm plain-default) |"
	echo "| warm-up, not in the figures: Atelier first job after server start (no input) / Slurm first job after start | $(runs atelier warmup cli_s) / $(runs slurm warmup cli_s) | | | |"
	echo
	echo "Content cache after the runs: ${CACHE_FILES:-0} files, ${CACHE_DU:-0} in \`<work_dir>/cache/objects\`."
	echo
	echo "### Where Atelier's time goes (medians, seconds)"
	echo
	echo "From the times of the runner's own log lines (\`atelier job logs -o json\`) against the job's create_time:"
	echo
	echo "| case | CLI: start, code upload, create call (→ create_time) | create → code staged (executor starts the runner, runner fetches the job and code) | input staging (runner's own figure: list + download + link) | → user process started (the runner opens the gate of the sandbox it started while staging) | → first line (the init starts python) | total (CLI wall) |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	for k in first cached; do
		echo "| $k | $(med atelier $k cli_pre_s) | $(med atelier $k launch_s) | $(med atelier $k stage_s) ($(med atelier $k stage_rep_s): $(med atelier $k list_s) + $(med atelier $k download_s) + $(med atelier $k link_s)) | $(med atelier $k spawn_s) | $(med atelier $k exec_s) | $(med atelier $k cli_s) |"
	done
	echo
	echo "Cache hits reported by the runner: first runs $(runs atelier first cache_hits), cached runs $(runs atelier cached cache_hits) (of $DATA_FILES files)."
	echo
	echo "CPU while each job ran (from \`job create\` to the end of \`job wait\` and fetching its log): the server"
	echo "process used $(runs atelier first server_cpu_s) CPU-s in the first runs and $(runs atelier cached server_cpu_s) in the cached runs; the"
	echo "machine's $(nproc) cores were busy on average $(runs atelier first busy_cores) cores (first runs) and $(runs atelier cached busy_cores)"
	echo "(cached runs), everything on the machine counted."
	echo
	echo "### Reference: what the parts cost alone on this machine (medians of 5, seconds)"
	echo
	echo "| | s |"
	echo "|---|---:|"
	echo "| \`$ENGINE_PY -c 'import time; print(time.time())'\` (the engine's interpreter, bare) | $(fl python-start) |"
	echo "| \`/usr/bin/python3 -c …\` (Debian's $(/usr/bin/python3 --version 2>&1), for comparison) | $(fl debian-python-start) |"
	echo "| the engine's interpreter inside \`bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --tmpfs /tmp\` | $(fl bwrap-python-start) |"
	echo "| \`atelier obs ls -r\` of the $DATA_FILES keys, minus an \`atelier obs ls\` of an empty prefix (CLI start) | $(fld list-2000 list-empty) ($(fl list-2000) − $(fl list-empty)) |"
	echo "| \`cp -al\` of the data set (hard-link $DATA_FILES files, as the cached staging does), minus an empty \`bash -c\` | $(fld cp-al rm-only) |"
	echo "| \`cp -r\` of the data set (Slurm + cp's staging alone), minus an empty \`bash -c\` | $(fld cp-r rm-only) |"
	echo
	echo "## (b) Output sync of a $CKPT_MIB MiB checkpoint"
	echo
	echo "| round | user code writing the file s | job's final sync: end_time − USEREND s | MiB/s | runner's own figure s | MiB/s | \`atelier obs cp\` s | MiB/s | sync/obs cp |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	jq -r 'select(.kind=="sync") | "| \(.round)\(if .ok then "" else " (failed: \(.error))" end) | \(.write_s // "–") | \(.sync_s // "–") | \(.sync_mibs // "–") | \(.sync_rep_s // "–") | \(.sync_rep_mibs // "–") | \(.cp_s // "–") | \(.cp_mibs // "–") | \(if .sync_mibs and .cp_mibs then ((.sync_mibs / .cp_mibs * 100 | round) / 100 | tostring) + "×" else "–" end) |"' "$RES"
	echo "| **median** | | | **$SYNC_MIBS** | | **$(med1 atelier sync sync_rep_mibs)** | | **$CP_MIBS** | **${SYNC_RATIO}×** |"
	echo
	for f in "$WORK"/sync-lines-r*.txt; do
		[[ -s $f ]] || continue
		r=${f##*-r}
		echo "Log lines about the sync (round ${r%.txt}):"
		echo
		echo '```'
		cat "$f"
		echo '```'
		echo
		break
	done
	echo "## (c) What each sandbox layer adds to the start of user code"
	echo
	echo "\`go run ./bench/jobs/layers\`: the same program started through bubblewrap command lines that add one"
	echo "layer at a time, from the sandbox of the committed run before the isolation work (host root read-only,"
	echo "pid/ipc/uts namespaces, as root) to the full sandbox the runner starts; the variants are interleaved"
	echo "round by round (order reversed every other round), so a drifting machine affects them alike."
	echo
	if [[ $LAYERS_OK == 1 ]]; then
		cat "$WORK/layers.md"
	else
		echo "**Not measured:** $(head -c 500 "$WORK/layers.err")"
	fi
	echo
	echo "## How it was measured"
	echo
	echo "- **Data**: \`bench/jobs/gendata.py\`: $GEN, in 20 directories,"
	echo "  pseudo-random contents. Uploaded with \`atelier obs cp -r\` to one prefix per round"
	echo "  (\`obs://bench/data-r1/\` …), not timed. The content cache is keyed by bucket, key and ETag, so each"
	echo "  round's first job misses the cache (first run) and its second job, on the same prefix, hits it."
	echo "- **Atelier job**: \`atelier job create --name … --code-dir $([[ $CODE_FROM == obs ]] && echo 'obs://bench/code/first/' || echo 'DIR (uploaded by the CLI)') --boot-file first.py"
	echo "  --input data_url=obs://bench/data-rN/ --output train_url=obs://bench/out/…/ -o json\`, then \`atelier job wait\`."
	echo "  The boot file's first statement is \`import time; T0 = time.time(); print(\"FIRSTLINE %.6f\" % T0, flush=True)\`;"
	echo "  it then counts the files and bytes under \`--data_url\` and fails unless all $DATA_FILES files and"
	echo "  $DATA_BYTES bytes are there, and writes T0 to \`first.txt\` in the output. The time is read from"
	echo "  \`atelier job logs\` (or \`first.txt\`). **CLI wall** = T0 − the clock (\`\$EPOCHREALTIME\`) right before the"
	echo "  CLI started, so it includes the CLI's start, $([[ $CODE_FROM == obs ]] || echo 'the code upload, ')the create call, admission, the"
	echo "  executor starting the runner, staging and Python's start. **Server** = T0 − \`metadata.create_time\`."
	echo "  Jobs run one at a time; the server is warmed up by one job without input first."
	echo "- **Slurm job**: \`sbatch --parsable -o … script\` where the script's first line is"
	echo "  \`echo \"FIRSTLINE \$(date +%s.%N)\"\` (plain) or \`cp -r DATA STAGE/\$SLURM_JOB_ID && echo \"FIRSTLINE …\"\`"
	echo "  (the staging equivalent: the same $DATA_FILES files copied from a local directory, in the page cache)."
	echo "  Time from the clock right before \`sbatch\`. Each submission waits a random 0–1 s first, because"
	echo "  slurmctld starts jobs on a one-second tick. One warm-up job after each cluster start is left out."
	echo "  The ratios use Slurm with \`SchedulerParameters=$SLURM_TUNED_PARAMS\` (the faster setting); Debian's default"
	echo "  (batch_sched_delay=3) is reported alongside."
	echo "- **Output sync**: a job (\`--sync-interval 10m\`, so that only the final sync runs) writes $CKPT_MIB MiB (64 MiB chunks of \`os.urandom\`, each different) to"
	echo "  \`ckpt.bin\` in its \`train_url\` output, fsyncs, prints \`USEREND <time>\` and exits. Sync time ="
	echo "  \`status.end_time\` − USEREND: the runner noticing the exit, the final upload and reporting the end"
	echo "  (an upper bound of the upload alone). Then the synced object is downloaded (its size checked) and"
	echo "  that file, in the page cache, is uploaded with \`time atelier obs cp FILE obs://bench/cp/\`. MiB/s ="
	echo "  $CKPT_MIB / seconds."
	echo
	echo "## What limits each figure"
	echo
	echo "NOTES_PLACEHOLDER"
	echo
	echo "## Raw results"
	echo
	echo "<details><summary>one JSON line per run</summary>"
	echo
	echo '```json'
	cat "$RES"
	echo '```'
	echo
	echo "</details>"
} >"$WORK/jobs.md"

# Notes that depend on the figures.
fps() { awk -v n="$1" -v s="$2" 'BEGIN { if (s=="" || s=="n/a" || s+0<=0) print "n/a"; else printf "%.0f", n/s }'; }
{
	echo "- **Atelier, first run**: input staging is $(med atelier first stage_s) s of the $(med atelier first cli_s) s"
	echo "  ($(fps "$DATA_FILES" "$(med atelier first stage_s)") files/s; by the runner's count list $(med atelier first list_s) s, download $(med atelier first download_s) s,"
	echo "  link $(med atelier first link_s) s): the runner lists the prefix and GETs the $DATA_FILES objects from the local"
	echo "  OBS with the job's temporary credentials, 32 at a time, each into the content cache, then hard-links"
	echo "  them into the job's input dir. On $(nproc) cores the runner, the server (SigV4 check, SQLite lookup, file"
	echo "  read per GET; $(med atelier first server_cpu_s) CPU-s per job) and everything else on the machine share the CPUs (busy"
	echo "  $(med atelier first busy_cores) of $(nproc) cores on average during these jobs), so staging is CPU-bound here. The"
	echo "  rest: $(med atelier first cli_pre_s) s in the CLI (process start, code upload, create call), $(med atelier first launch_s) s from create_time to"
	echo "  the code being staged (the executor starts the runner, which fetches the job), $(med atelier first exec_s) s from the"
	echo "  user process's start to its first line (the sandbox — bubblewrap, the cgroup, the init — was started"
	echo "  while the inputs staged and waited at its gate; once opened, the init starts python)."
	echo "- **Atelier, cached**: staging still takes $(med atelier cached stage_s) s: the runner lists the prefix"
	echo "  ($(med atelier cached list_s) s by its own count; a LIST of $DATA_FILES keys through the CLI: ~$(fld list-2000 list-empty) s), stats every object's"
	echo "  file in the content cache ($(med atelier cached download_s) s) and hard-links $DATA_FILES files into the job's input dir"
	echo "  ($(med atelier cached link_s) s; \`cp -al\` of the same tree: ~$(fld cp-al rm-only) s). The fixed costs are the same as above: CLI $(med atelier cached cli_pre_s) s, launch"
	echo "  $(med atelier cached launch_s) s, gate → first line $(med atelier cached exec_s) s (the engine's python alone starts in"
	echo "  $(fl python-start) s here, $(fl bwrap-python-start) s inside a bare bwrap)."
	echo "- **Slurm**: submit → start is dominated by slurmctld's scheduling tick: even with"
	echo "  \`batch_sched_delay=0\` a batch job is allocated at the next one-second tick of the main scheduler"
	echo "  (its log shows every allocation at the same sub-second phase), then slurmd forks slurmstepd"
	echo "  (~0.1 s when the machine is quiet); so a single run lands anywhere in ~0.1–1.1 s and the median of a few runs moves by"
	echo "  tenths of a second between runs of this script. With Debian's defaults a batch job may wait up to 3 s"
	echo "  more (\`batch_sched_delay=3\`). The first job after the cluster starts waits for the node's"
	echo "  registration (the warm-up: $(runs slurm warmup cli_s) s, left out). Slurm + cp adds a \`cp -r\` of $DATA_FILES files"
	echo "  from the page cache ($(fld cp-r rm-only) s alone in this run) to the same tick."
	echo "- Both include the start of the interpreter of user code (python3 for Atelier, bash + date for Slurm)."
	echo "  Slurm here runs the script directly (no container, \`task/none\`, \`proctrack/linuxproc\`): no"
	echo "  sandbox, no data movement other than the cp variant."
	echo "- **Output sync**: the runner's final sync and \`atelier obs cp\` use the same transfer code"
	echo "  (\`internal/obsclient\`, 16 MiB parts, 4 in parallel), write to the same local server on the same disk, and both read"
	echo "  the checkpoint from the page cache. The job's figure (end_time − USEREND) also includes the runner"
	echo "  noticing the exit, scanning the output dir and the server recording the end; the runner's own"
	echo "  figure is the upload alone. Both are bound by the server's PUT path on $(nproc) cores (MD5 of every part"
	echo "  for the ETag, the write to disk, fsync)."
} >"$WORK/notes.md"
{
	for x in first cached; do
		n=$(nbad atelier $x)
		((n > 0)) && echo "- **$n Atelier $x run(s) failed**: $(jq -r --arg k $x 'select(.system=="atelier" and .kind==$k and .ok!=true) | .error' "$RES" | head -1 | head -c 500)"
	done
	n=$(nbad atelier sync)
	((n > 0)) && echo "- **$n sync run(s) failed**: $(jq -r 'select(.kind=="sync" and .ok!=true) | .error' "$RES" | head -1 | head -c 500)"
	true
} >"$WORK/summary-notes.md"
awk -v n="$WORK/notes.md" -v s="$WORK/summary-notes.md" '
	$0=="NOTES_PLACEHOLDER" { while ((getline l < n) > 0) print l; next }
	$0=="SUMMARY_NOTES" { while ((getline l < s) > 0) print l; next }
	{ print }' "$WORK/jobs.md" >"$OUT"
log "done: $OUT"
