#!/usr/bin/env bash
# bench/jobs/ab.sh A_BIN B_BIN — submit → first line of user code for two
# atelier binaries, interleaved on the same machine at the same time.
#
# Both servers run side by side (each with its own data dir, content cache
# and a copy of the data set); jobs run one at a time, alternating A and B
# within each round (A first in odd rounds, B first in even ones), so that
# load from anything else on the machine hits both alike. Each round runs,
# per server, a job on a prefix the content cache has never seen (first)
# and a second job on the same prefix (cached), as bench/jobs/run.sh does.
# Prints a Markdown table of medians (and writes it to OUT when set).
# The CPU columns are load-independent: the server process's own CPU time
# during the job, and that of its waited-for children (the runner and,
# through it, user code).
#
# Knobs (environment): RUNS [5], DATA_FILES [2000], DATA_BYTES [52428800],
# SANDBOX [bubblewrap], LABEL_A [A], LABEL_B [B], WORK [bench/.work],
# KEEP [0] (1: keep the scratch dir), OUT [none], JOB_TIMEOUT [300].
set -euo pipefail

if (($# != 2)); then
	echo "usage: $0 A_BIN B_BIN" >&2
	exit 2
fi
A_BIN=$(realpath "$1")
B_BIN=$(realpath "$2")
cd "$(dirname "$0")/../.."
ROOT=$PWD
RUNS=${RUNS:-5}
DATA_FILES=${DATA_FILES:-2000}
DATA_BYTES=${DATA_BYTES:-52428800}
SANDBOX=${SANDBOX:-bubblewrap}
LABEL_A=${LABEL_A:-A}
LABEL_B=${LABEL_B:-B}
JOB_TIMEOUT=${JOB_TIMEOUT:-300}
KEEP=${KEEP:-0}
OUT=${OUT:-}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
now() { printf '%s' "$EPOCHREALTIME"; }

mkdir -p "${WORK:-$ROOT/bench/.work}"
WORK=$(mktemp -d "${WORK:-$ROOT/bench/.work}/ab-XXXXXX")
RES=$WORK/results.jsonl
: >"$RES"
declare -A PID CONF

cleanup() {
	local rc=$? s
	for s in "${!PID[@]}"; do
		kill -TERM "${PID[$s]}" 2>/dev/null || true
	done
	for s in "${!PID[@]}"; do
		for _ in $(seq 1 100); do kill -0 "${PID[$s]}" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "${PID[$s]}" 2>/dev/null || true
	done
	if [[ $KEEP == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "data set: $DATA_FILES files, $DATA_BYTES bytes"
python3 "$ROOT/bench/jobs/gendata.py" "$WORK/data" --files "$DATA_FILES" --bytes "$DATA_BYTES" >/dev/null

# start NAME BIN: a server in $WORK/NAME; sets PID[NAME] and CONF[NAME].
start() {
	local name=$1 bin=$2 dir=$WORK/$1 i api
	mkdir -p "$dir/data"
	printf 'sandbox: %s\n' "$SANDBOX" >"$dir/server.yaml"
	"$bin" server --data-dir "$dir/data" --listen 127.0.0.1:0 --s3-listen 127.0.0.1:0 --notebook-listen 127.0.0.1:0 --config "$dir/server.yaml" >"$dir/server.log" 2>&1 &
	PID[$name]=$!
	for i in $(seq 1 300); do
		if [[ -f $dir/data/admin.yaml ]]; then
			api=$(sed -n 's/^endpoint: *//p' "$dir/data/admin.yaml")
			if [[ -n $api ]] && curl -sf "$api/healthz" >/dev/null 2>&1; then break; fi
		fi
		kill -0 "${PID[$name]}" 2>/dev/null || { cat "$dir/server.log" >&2; exit 1; }
		((i < 300)) || { log "$name did not come up"; cat "$dir/server.log" >&2; exit 1; }
		sleep 0.1
	done
	CONF[$name]=$dir/data/admin.yaml
}

declare -A BIN=([a]=$A_BIN [b]=$B_BIN)
for s in a b; do
	log "server $s: ${BIN[$s]}"
	start "$s" "${BIN[$s]}"
	ATELIER_CONFIG=${CONF[$s]} "${BIN[$s]}" obs mb obs://bench >/dev/null
	for r in $(seq 1 "$RUNS"); do
		ATELIER_CONFIG=${CONF[$s]} "${BIN[$s]}" obs cp -r -q "$WORK/data/" "obs://bench/data-r$r/"
	done
done

CODE=$WORK/code
mkdir -p "$CODE"
cat >"$CODE/first.py" <<EOF
import time; T0 = time.time(); print("FIRSTLINE %.6f" % T0, flush=True)
import os
import sys

args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
files = size = 0
for d, _, fs in os.walk(args.get("data_url", "/nonexistent")):
    for f in fs:
        files += 1
        size += os.path.getsize(os.path.join(d, f))
print("INPUT files=%d bytes=%d" % (files, size), flush=True)
if "data_url" in args and (files, size) != ($DATA_FILES, $DATA_BYTES):
    sys.exit("input incomplete: %d files, %d bytes" % (files, size))
EOF

# cpu PID: "own children" CPU seconds of a process: its own, and that of
# its waited-for children (the runner, and through it user code).
cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.3f %.3f", ($14+$15)/t, ($16+$17)/t }' "/proc/$1/stat"; }

# job SERVER KIND ROUND [INPUT]: one job to its end; appends a result line.
job() {
	local s=$1 kind=$2 r=$3 in=${4:-} t0 out id json logs ok=true c0 c1
	local atl=${BIN[$s]}
	export ATELIER_CONFIG=${CONF[$s]}
	local args=(job create --name "ab-$kind-r$r-$RANDOM" --code-dir "$CODE" --boot-file first.py --output "train_url=obs://bench/out/$kind-r$r/" -o json)
	[[ -n $in ]] && args+=(--input "data_url=$in")
	c0=$(cpu "${PID[$s]}")
	t0=$(now)
	json=$("$atl" "${args[@]}")
	id=$(jq -r .metadata.id <<<"$json")
	timeout "$JOB_TIMEOUT" "$atl" job wait "$id" >/dev/null 2>&1 || ok=false
	json=$("$atl" job get "$id" -o json)
	sleep 0.2 # the runner is reaped
	c1=$(cpu "${PID[$s]}")
	[[ $(jq -r .status.phase <<<"$json") == Completed ]] || ok=false
	"$atl" job logs "$id" -o json >"$WORK/$s-$kind-r$r.json"
	python3 - "$s" "$kind" "$r" "$t0" "$ok" "$(jq -r .metadata.create_time <<<"$json")" "$WORK/$s-$kind-r$r.json" "$ROOT/bench/jobs" "$c0" "$c1" >>"$RES" <<'PY'
import json, sys
s, kind, r, t0, ok, created, path, lib, c0, c1 = sys.argv[1:]
sys.path.insert(0, lib)
import joblog
ls = joblog.lines(open(path).read())
out = joblog.parse(ls, int(created))
out.update(server=s, kind=kind, round=int(r), ok=ok == "true")
out["cli_s"] = round(out["first"] - float(t0), 4) if out.get("first") else None
out["server_s"] = round(out["first"] - int(created) / 1000, 4) if out.get("first") else None
(s0, k0), (s1, k1) = (map(float, c.split()) for c in (c0, c1))
out["server_cpu_s"], out["runner_cpu_s"] = round(s1 - s0, 3), round(k1 - k0, 3)
print(json.dumps(out))
PY
	log "$s $kind r$r: $(tail -1 "$RES" | jq -r '"cli \(.cli_s) s, server \(.server_s) s, staging \(.stage_rep_s) s, ok \(.ok)"')"
}

for s in a b; do job "$s" warmup 0; done
for r in $(seq 1 "$RUNS"); do
	order=(a b)
	((r % 2 == 0)) && order=(b a)
	for s in "${order[@]}"; do job "$s" first "$r" "obs://bench/data-r$r/"; done
	for s in "${order[@]}"; do job "$s" cached "$r" "obs://bench/data-r$r/"; done
done

table=$(python3 - "$RES" "$LABEL_A" "$LABEL_B" "$RUNS" <<'PY'
import json, statistics, sys
res = [json.loads(l) for l in open(sys.argv[1])]
label = {"a": sys.argv[2], "b": sys.argv[3]}
cols = [("cli_s", "submit → first line (CLI wall)"), ("server_s", "create_time → first line"),
        ("launch_s", "create → code staged"), ("stage_rep_s", "input staging"), ("list_s", "list"),
        ("download_s", "download"), ("link_s", "link"), ("exec_s", "process start → first line"),
        ("server_cpu_s", "server CPU s"), ("runner_cpu_s", "runner + user code CPU s")]
print("Medians of %s rounds, seconds (lower is better); `bench/jobs/ab.sh`." % sys.argv[4])
print()
print("| binary | case | " + " | ".join(c[1] for c in cols) + " | failed |")
print("|---|---|" + "---:|" * len(cols) + "---:|")
for kind in ("first", "cached"):
    for s in ("a", "b"):
        rows = [x for x in res if x["server"] == s and x["kind"] == kind]
        def med(k):
            v = [x[k] for x in rows if x.get(k) is not None]
            return "%.3f" % statistics.median(v) if v else "–"
        print("| %s | %s | " % (label[s], kind) + " | ".join(med(c[0]) for c in cols) + " | %d |" % sum(not x["ok"] for x in rows))
PY
)
printf '%s\n' "$table"
[[ -n $OUT ]] && printf '%s\n' "$table" >"$OUT"
exit 0
