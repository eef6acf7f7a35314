#!/usr/bin/env bash
# bench/obs/run.sh — Atelier's OBS against MinIO on the same machine, plus the
# disk's raw sequential speed and a directory upload with `atelier obs cp`,
# awscli and rclone. Writes bench/results/obs.md. See bench/README.md.
#
# Every knob is an environment variable (defaults in brackets):
#   ROUNDS [2]            rounds of the GET and 4 KiB PUT/GET workloads (A, B, A, B, ...)
#   BIG_PUT_ROUNDS [6]    rounds of the large PUT (at least ROUNDS); the server that goes
#                         first alternates (A B, B A, A B, ...)
#   BIG_SIZE [64MiB] BIG_CONC [8] BIG_COUNT [16]
#   SMALL_SIZE [4KiB] SMALL_CONC [32] SMALL_COUNT [20000] SMALL_DURATION [20s]
#   LIST_KEYS [100000] LIST_CONC [64] LIST_RUNS [5] LIST_POP_MAX [600s]
#   UPLOAD_FILES [2000] UPLOAD_KIB [20] UPLOAD_RUNS [2]
#   UPLOAD_REF_RUNS [1]   runs of the reference uploads (awscli and rclone at 16 in parallel)
#   DD_MIB [1024]
#   PERF [0]              1: perf-record Atelier during an extra, unmeasured pass of each workload
#   MINIO_BIN             MinIO binary [$(go env GOPATH)/bin/minio, built if missing]
#   WORK [bench/.work]    scratch space (server data dirs, dd file, upload dir)
#   OUT [bench/results/obs.md]
#   KEEP [0]              1: keep the scratch directory of this run
#   VER_ROUNDS [2]        rounds of the workloads on a versioned bucket (large PUT, cold GET,
#                         4 KiB PUT/GET), run after all the others on a second bucket, benchv
#   WORKLOADS [big small list upload versioned]  the parts to run (for quick partial runs; the
#                         report says "not measured" for the others)
#   PREV [bench/results/obs-raw.jsonl]  the committed raw results the unversioned figures are
#                         compared with (read before this run overwrites it)
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$ROOT/bench/.bin
OUT=${OUT:-$ROOT/bench/results/obs.md}
ROUNDS=${ROUNDS:-2}
BIG_PUT_ROUNDS=${BIG_PUT_ROUNDS:-6}
((BIG_PUT_ROUNDS >= ROUNDS)) || BIG_PUT_ROUNDS=$ROUNDS
WORKLOADS=${WORKLOADS:-big small list upload versioned}
VER_ROUNDS=${VER_ROUNDS:-2}
LIST_TARGET=0.8
BIG_SIZE=${BIG_SIZE:-64MiB} BIG_CONC=${BIG_CONC:-8} BIG_COUNT=${BIG_COUNT:-16}
SMALL_SIZE=${SMALL_SIZE:-4KiB} SMALL_CONC=${SMALL_CONC:-32} SMALL_COUNT=${SMALL_COUNT:-20000} SMALL_DURATION=${SMALL_DURATION:-20s}
LIST_KEYS=${LIST_KEYS:-100000} LIST_CONC=${LIST_CONC:-64} LIST_RUNS=${LIST_RUNS:-5} LIST_POP_MAX=${LIST_POP_MAX:-600s}
UPLOAD_FILES=${UPLOAD_FILES:-2000} UPLOAD_KIB=${UPLOAD_KIB:-20} UPLOAD_RUNS=${UPLOAD_RUNS:-2} UPLOAD_REF_RUNS=${UPLOAD_REF_RUNS:-1}
DD_MIB=${DD_MIB:-1024}
PERF=${PERF:-0}
KEEP=${KEEP:-0}
AWS=${AWS:-/usr/bin/aws}
RCLONE=${RCLONE:-/usr/bin/rclone}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
want() { [[ " $WORKLOADS " == *" $1 "* ]]; }

mkdir -p "$BIN" "${WORK:-$ROOT/bench/.work}" "$(dirname "$OUT")"
WORK=$(mktemp -d "${WORK:-$ROOT/bench/.work}/run-XXXXXX")
RES=$WORK/results.jsonl
: >"$RES"
# The committed run, copied before this one overwrites it.
PREV_SRC=${PREV:-$ROOT/bench/results/obs-raw.jsonl}
PREV=$WORK/prev.jsonl
PREV_COMMIT=""
if [[ -f $PREV_SRC ]]; then
	cp "$PREV_SRC" "$PREV"
	PREV_COMMIT=$(git log -1 --format='%h, %cd' --date=format:'%Y-%m-%d %H:%M' -- "$PREV_SRC" 2>/dev/null || true)
else
	: >"$PREV"
fi
PIDS=()
PERF_PID=""

cleanup() {
	local rc=$?
	[[ -n $PERF_PID ]] && kill -INT "$PERF_PID" 2>/dev/null || true
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	done
	if [[ $KEEP == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- build
log "building atelier and loadgen"
go build -o "$BIN/atelier" ./cmd/atelier
BUILT=$(date -u '+%Y-%m-%d %H:%M UTC')
BUILT_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# What was built: HEAD plus, if the tree was not clean, a digest of the uncommitted changes.
TREE_STATE=""
if [[ -n $(git status --porcelain -- . ':!bench' 2>/dev/null) ]]; then
	TREE_STATE=" + uncommitted changes in $(git status --porcelain -- . ':!bench' | wc -l) files outside bench/ (\`git diff HEAD -- . ':!bench' | sha256sum\` = $( (git diff HEAD -- . ':!bench'; git ls-files -o --exclude-standard -- . ':!bench' | xargs -r cat) | sha256sum | cut -c1-12), untracked files included)"
fi
go build -o "$BIN/loadgen" ./bench/obs/loadgen
ATL=$BIN/atelier
LG=$BIN/loadgen

MINIO_BIN=${MINIO_BIN:-$(go env GOPATH)/bin/minio}
if [[ ! -x $MINIO_BIN ]]; then
	log "building MinIO (go install github.com/minio/minio@latest, takes minutes)"
	if (cd /tmp && GOBIN=$(dirname "$MINIO_BIN") go install github.com/minio/minio@latest) >&2; then :; else
		log "building MinIO failed: MinIO is not measured"
		MINIO_BIN=""
	fi
fi

# ---------------------------------------------------------------- helpers
CAN_DROP=0
if sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then CAN_DROP=1; fi
dropcaches() { if [[ $CAN_DROP == 1 ]]; then sync; echo 3 >/proc/sys/vm/drop_caches; fi; }

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", b-a}'; }

# record JSON: appends one result line with server/workload/round added.
record() { jq -c --arg s "$1" --arg w "$2" --argjson r "$3" '. + {server:$s, workload:$w, round:$r}' >>"$RES"; }

declare -A EP AK SK PID
# lg SERVER WORKLOAD ROUND loadgen-flags...: runs loadgen against SERVER and records its result.
lg() {
	local s=$1 w=$2 r=$3; shift 3
	local out
	if ! out=$("$LG" -endpoint "${EP[$s]}" -access-key "${AK[$s]}" -secret-key "${SK[$s]}" -bucket "${LGBUCKET:-bench}" -label "$s:$w:$r" "$@"); then
		log "loadgen $s $w round $r failed${out:+: $out}"
		[[ -n $out ]] || out='{"ops":0,"errors":1,"failed":true}'
	fi
	printf '%s\n' "$out" | record "$s" "$w" "$r"
	log "$s $w r$r: $(jq -r 'if .mode=="list" then "\(.keys) keys in \(.pages) pages, \(.seconds) s" else "\(.ops) ops \(.mib_per_s) MiB/s \(.ops_per_s) ops/s p50 \(.p50_ms) ms p99 \(.p99_ms) ms, \(.seconds) s, errors \(.errors)" end' <<<"$out")"
}

# perf_start SERVER WORKLOAD / perf_stop: optional CPU profile of Atelier.
perf_start() {
	[[ $PERF == 1 && $1 == atelier ]] || return 0
	perf record -e cpu-clock -F 499 -g -p "${PID[atelier]}" -o "$WORK/perf-$2.data" >/dev/null 2>&1 &
	PERF_PID=$!
	sleep 0.5
}
perf_stop() {
	[[ -n $PERF_PID ]] || return 0
	kill -INT "$PERF_PID" 2>/dev/null || true
	wait "$PERF_PID" 2>/dev/null || true
	PERF_PID=""
}

# ---------------------------------------------------------------- disk
log "disk: dd write/read of $DD_MIB MiB"
ddmib() { # parses dd's "N bytes (...) copied, S s, ..." into MiB/s
	awk '/copied/ { for (i=1;i<=NF;i++) if ($i=="copied,") s=$(i+1); printf "%.1f", $1/1048576/s }'
}
DD_W=$(dd if=/dev/zero of="$WORK/dd.bin" bs=1M count="$DD_MIB" conv=fsync 2>&1 | ddmib)
dropcaches
DD_R=$(dd if="$WORK/dd.bin" of=/dev/null bs=1M 2>&1 | ddmib)
rm -f "$WORK/dd.bin"
log "disk: write $DD_W MiB/s, read $DD_R MiB/s (caches dropped: $CAN_DROP)"

# ---------------------------------------------------------------- servers
log "starting atelier"
mkdir -p "$WORK/atelier"
"$ATL" server --data-dir "$WORK/atelier" --listen 127.0.0.1:0 --s3-listen 127.0.0.1:0 --notebook-listen 127.0.0.1:0 >"$WORK/atelier.log" 2>&1 &
PID[atelier]=$!
PIDS+=("${PID[atelier]}")
for i in $(seq 1 300); do
	if [[ -f $WORK/atelier/admin.yaml ]]; then
		api=$(sed -n 's/^endpoint: *//p' "$WORK/atelier/admin.yaml")
		if [[ -n $api ]] && curl -sf "$api/healthz" >/dev/null 2>&1; then break; fi
	fi
	kill -0 "${PID[atelier]}" 2>/dev/null || { cat "$WORK/atelier.log" >&2; exit 1; }
	[[ $i == 300 ]] && { log "atelier did not come up"; cat "$WORK/atelier.log" >&2; exit 1; }
	sleep 0.1
done
ADMIN=$WORK/atelier/admin.yaml
EP[atelier]=$(sed -n 's/^s3_endpoint: *//p' "$ADMIN")
AK[atelier]=$(sed -n 's/^access_key: *//p' "$ADMIN")
SK[atelier]=$(sed -n 's/^secret_key: *//p' "$ADMIN")
SERVERS=(atelier)

if [[ -n $MINIO_BIN ]]; then
	log "starting minio"
	mkdir -p "$WORK/minio"
	MP=$(freeport); MC=$(freeport)
	while [[ $MC == "$MP" ]]; do MC=$(freeport); done
	AK[minio]=benchadmin
	SK[minio]=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
	EP[minio]=http://127.0.0.1:$MP
	MINIO_ROOT_USER=${AK[minio]} MINIO_ROOT_PASSWORD=${SK[minio]} \
		"$MINIO_BIN" server "$WORK/minio" --address "127.0.0.1:$MP" --console-address "127.0.0.1:$MC" >"$WORK/minio.log" 2>&1 &
	PID[minio]=$!
	PIDS+=("${PID[minio]}")
	for i in $(seq 1 600); do
		curl -sf "${EP[minio]}/minio/health/live" >/dev/null 2>&1 && break
		kill -0 "${PID[minio]}" 2>/dev/null || { cat "$WORK/minio.log" >&2; exit 1; }
		[[ $i == 600 ]] && { log "minio did not come up"; cat "$WORK/minio.log" >&2; exit 1; }
		sleep 0.1
	done
	SERVERS+=(minio)
fi
for s in "${SERVERS[@]}"; do
	"$LG" -endpoint "${EP[$s]}" -access-key "${AK[$s]}" -secret-key "${SK[$s]}" -bucket bench -mode mb
	if want versioned; then "$LG" -endpoint "${EP[$s]}" -access-key "${AK[$s]}" -secret-key "${SK[$s]}" -bucket benchv -mode mb -versioning; fi
done
log "servers: ${SERVERS[*]}"

# ---------------------------------------------------------------- PUT/GET
# The large PUT first, BIG_PUT_ROUNDS rounds. Whichever server writes second
# in a round inherits the first one's dirty page cache (and a disk still busy
# writing it out), so the order alternates: A B, B A, A B, ...
if want big; then
	for r in $(seq 1 "$BIG_PUT_ROUNDS"); do
		order=("${SERVERS[@]}")
		if ((r % 2 == 0)); then order=($(printf '%s\n' "${SERVERS[@]}" | tac)); fi
		for s in "${order[@]}"; do
			lg "$s" big-put "$r" -mode put -size "$BIG_SIZE" -concurrency "$BIG_CONC" -count "$BIG_COUNT" -prefix "big-r$r/"
		done
	done
fi
for r in $(seq 1 "$ROUNDS"); do
	# cold GET of the objects of PUT round r, then at once the warm re-read
	# of the same server (the next server's cache drop would make a later
	# re-read cold again)
	if want big; then
		for s in "${SERVERS[@]}"; do
			dropcaches
			lg "$s" big-get "$r" -mode get -size "$BIG_SIZE" -concurrency "$BIG_CONC" -count "$BIG_COUNT" -objects "$BIG_COUNT" -prefix "big-r$r/"
			lg "$s" big-reget "$r" -mode get -size "$BIG_SIZE" -concurrency "$BIG_CONC" -count "$BIG_COUNT" -objects "$BIG_COUNT" -prefix "big-r$r/"
		done
	fi
	want small || continue
	for s in "${SERVERS[@]}"; do
		lg "$s" small-put "$r" -mode put -size "$SMALL_SIZE" -concurrency "$SMALL_CONC" -count "$SMALL_COUNT" -duration "$SMALL_DURATION" -prefix "small-r$r/"
	done
	for s in "${SERVERS[@]}"; do
		n=$(jq -r --arg s "$s" --argjson r "$r" 'select(.server==$s and .workload=="small-put" and .round==$r) | .ops' "$RES")
		lg "$s" small-get "$r" -mode get -size "$SMALL_SIZE" -concurrency "$SMALL_CONC" -count "$SMALL_COUNT" -duration "$SMALL_DURATION" -objects "$n" -prefix "small-r$r/"
	done
done

# Optional CPU profile of Atelier: one extra, unmeasured pass of each workload.
if [[ $PERF == 1 ]] && want big; then
	log "profiling atelier (extra pass, not in the tables)"
	perf_start atelier big-put
	lg atelier prof-big-put 1 -mode put -size "$BIG_SIZE" -concurrency "$BIG_CONC" -count "$BIG_COUNT" -prefix prof-big/
	perf_stop
	dropcaches
	perf_start atelier big-get
	lg atelier prof-big-get 1 -mode get -size "$BIG_SIZE" -concurrency "$BIG_CONC" -count "$BIG_COUNT" -objects "$BIG_COUNT" -prefix prof-big/
	perf_stop
fi
if [[ $PERF == 1 ]] && want small; then
	perf_start atelier small-put
	lg atelier prof-small-put 1 -mode put -size "$SMALL_SIZE" -concurrency "$SMALL_CONC" -count "$SMALL_COUNT" -duration "$SMALL_DURATION" -prefix prof-small/
	perf_stop
	n=$(jq -r 'select(.server=="atelier" and .workload=="prof-small-put") | .ops' "$RES")
	perf_start atelier small-get
	lg atelier prof-small-get 1 -mode get -size "$SMALL_SIZE" -concurrency "$SMALL_CONC" -count "$SMALL_COUNT" -duration "$SMALL_DURATION" -objects "$n" -prefix prof-small/
	perf_stop
fi

# ---------------------------------------------------------------- LIST
# Populate the slowest-to-write server first (MinIO, if present) under a
# time cap, then the others with exactly as many keys. The listings
# alternate which server goes first, as the large PUT does.
KEYS=$LIST_KEYS
if want list; then
	for s in $(printf '%s\n' "${SERVERS[@]}" | sort -r); do
		log "$s: populating $KEYS keys under list/ (not timed as part of LIST)"
		lg "$s" populate 1 -mode populate -size 1KiB -concurrency "$LIST_CONC" -count "$KEYS" -duration "$LIST_POP_MAX" -prefix list/
		got=$(jq -r --arg s "$s" 'select(.server==$s and .workload=="populate") | .ops' "$RES")
		if ((got < KEYS)); then log "$s wrote only $got keys within $LIST_POP_MAX: listing $got"; KEYS=$got; fi
	done
	for r in $(seq 1 "$LIST_RUNS"); do
		order=("${SERVERS[@]}")
		if ((r % 2 == 0)); then order=($(printf '%s\n' "${SERVERS[@]}" | tac)); fi
		for s in "${order[@]}"; do
			lg "$s" list "$r" -mode list -count 1 -page 1000 -prefix list/ -expect "$KEYS"
		done
	done
	if [[ $PERF == 1 ]]; then
		perf_start atelier list
		lg atelier prof-list 1 -mode list -count 3 -page 1000 -prefix list/ -expect "$KEYS"
		perf_stop
	fi
fi

# ---------------------------------------------------------------- directory upload
made=0
UPLOAD_TOOLS=(atelier-cp awscli rclone awscli-16 rclone-16)
if want upload; then
	log "directory upload: $UPLOAD_FILES files of $UPLOAD_KIB KiB"
	UP=$WORK/upload
	per=$(((UPLOAD_FILES + 19) / 20))
	made=0
	for d in $(seq -w 0 19); do
		mkdir -p "$UP/d$d"
		for f in $(seq -w 0 $((per - 1))); do
			((made < UPLOAD_FILES)) || break
			head -c $((UPLOAD_KIB * 1024)) /dev/urandom >"$UP/d$d/f$f.bin"
			made=$((made + 1))
		done
	done
	export ATELIER_CONFIG=$ADMIN
	"$ATL" obs mb obs://dirup >/dev/null
	AWSENV=(AWS_ACCESS_KEY_ID="${AK[atelier]}" AWS_SECRET_ACCESS_KEY="${SK[atelier]}" AWS_DEFAULT_REGION=us-east-1
		AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true AWS_PAGER=)
	printf '[default]\ns3 =\n  max_concurrent_requests = 16\n' >"$WORK/aws16.cfg"
	RCENV=(RCLONE_CONFIG=/dev/null RCLONE_CONFIG_ATL_TYPE=s3 RCLONE_CONFIG_ATL_PROVIDER=Other
		RCLONE_CONFIG_ATL_ENDPOINT="${EP[atelier]}" RCLONE_CONFIG_ATL_ACCESS_KEY_ID="${AK[atelier]}"
		RCLONE_CONFIG_ATL_SECRET_ACCESS_KEY="${SK[atelier]}" RCLONE_CONFIG_ATL_REGION=us-east-1
		RCLONE_CONFIG_ATL_FORCE_PATH_STYLE=true)
	upload() { # TOOL ROUND
		local tool=$1 r=$2 t0 t1 ok=true
		t0=$(now)
		case $tool in
		atelier-cp) "$ATL" obs cp -r -q "$UP" "obs://dirup/p-$r/" || ok=false ;;
		awscli) env "${AWSENV[@]}" AWS_CONFIG_FILE=/dev/null "$AWS" --endpoint-url "${EP[atelier]}" s3 cp --recursive --only-show-errors "$UP" "s3://dirup/p2-$r/" || ok=false ;;
		awscli-16) env "${AWSENV[@]}" AWS_CONFIG_FILE="$WORK/aws16.cfg" "$AWS" --endpoint-url "${EP[atelier]}" s3 cp --recursive --only-show-errors "$UP" "s3://dirup/p4-$r/" || ok=false ;;
		rclone) env -u AWS_CA_BUNDLE "${RCENV[@]}" "$RCLONE" copy -q "$UP" "atl:dirup/p3-$r" || ok=false ;;
		rclone-16) env -u AWS_CA_BUNDLE "${RCENV[@]}" "$RCLONE" copy -q --transfers 16 --checkers 16 "$UP" "atl:dirup/p5-$r" || ok=false ;;
		esac
		t1=$(now)
		local pfx
		case $tool in atelier-cp) pfx=p-$r/ ;; awscli) pfx=p2-$r/ ;; rclone) pfx=p3-$r/ ;; awscli-16) pfx=p4-$r/ ;; rclone-16) pfx=p5-$r/ ;; esac
		if $ok && ! "$LG" -endpoint "${EP[atelier]}" -access-key "${AK[atelier]}" -secret-key "${SK[atelier]}" -bucket dirup -mode list -prefix "$pfx" -expect "$made" >/dev/null; then ok=false; fi
		$ok || log "upload with $tool round $r FAILED"
		jq -nc --arg t "$tool" --argjson r "$r" --argjson sec "$(elapsed "$t0" "$t1")" --argjson ok "$ok" --argjson n "$made" \
			'{server:"atelier", workload:("upload-"+$t), round:$r, seconds:$sec, ok:$ok, files:$n}' >>"$RES"
		log "upload $tool r$r: $(elapsed "$t0" "$t1") s ok=$ok"
	}
	for r in $(seq 1 "$UPLOAD_RUNS"); do
		for t in atelier-cp awscli rclone; do upload "$t" "$r"; done
		if ((r <= UPLOAD_REF_RUNS)); then for t in awscli-16 rclone-16; do upload "$t" "$r"; done; fi
	done
fi

# ---------------------------------------------------------------- versioned bucket
# The same PUT/GET workloads on a bucket with versioning on (both servers),
# after every unversioned workload so that those run as in earlier runs.
# Each PUT writes new keys, so this measures a versioned write, not the
# keeping of older versions.
if want versioned; then
	for r in $(seq 1 "$VER_ROUNDS"); do
		order=("${SERVERS[@]}")
		if ((r % 2 == 0)); then order=($(printf '%s\n' "${SERVERS[@]}" | tac)); fi
		for s in "${order[@]}"; do
			LGBUCKET=benchv lg "$s" v-big-put "$r" -mode put -size "$BIG_SIZE" -concurrency "$BIG_CONC" -count "$BIG_COUNT" -prefix "big-r$r/"
		done
		for s in "${SERVERS[@]}"; do
			dropcaches
			LGBUCKET=benchv lg "$s" v-big-get "$r" -mode get -size "$BIG_SIZE" -concurrency "$BIG_CONC" -count "$BIG_COUNT" -objects "$BIG_COUNT" -prefix "big-r$r/"
		done
		for s in "${SERVERS[@]}"; do
			LGBUCKET=benchv lg "$s" v-small-put "$r" -mode put -size "$SMALL_SIZE" -concurrency "$SMALL_CONC" -count "$SMALL_COUNT" -duration "$SMALL_DURATION" -prefix "small-r$r/"
		done
		for s in "${SERVERS[@]}"; do
			n=$(jq -r --arg s "$s" --argjson r "$r" 'select(.server==$s and .workload=="v-small-put" and .round==$r) | .ops' "$RES")
			LGBUCKET=benchv lg "$s" v-small-get "$r" -mode get -size "$SMALL_SIZE" -concurrency "$SMALL_CONC" -count "$SMALL_COUNT" -duration "$SMALL_DURATION" -objects "$n" -prefix "small-r$r/"
		done
	done
fi

# ---------------------------------------------------------------- profiles
PERF_TXT=""
# frames every goroutine or the runtime's background work has: not informative
GENERIC='runtime\.(goexit|systemstack|mstart|mcall|park_m|schedule|findRunnable|gcenable|bgscavenge|gcBgMarkWorker|sysmon)|scavengerState|net/http\.\(\*conn\)\.serve|Serve\.gowrap|serverHandler\.ServeHTTP'
if [[ $PERF == 1 ]]; then
	for f in "$WORK"/perf-*.data; do
		[[ -f $f ]] || continue
		w=$(basename "$f" .data); w=${w#perf-}
		PERF_TXT+=$'\n'"#### $w"$'\n\nSelf time, top symbols ([k] kernel, [.] user space; in this VM, kernel time spent with interrupts off is charged to pvm_irq_enable):\n\n```\n'
		PERF_TXT+=$( (perf report -i "$f" --stdio --no-children --sort symbol -g none --percent-limit 1 2>&1 || true) |
			grep -v -e '^#' -e '^$' | sed 's/[[:space:]-]*$//' | head -25 || true)
		PERF_TXT+=$'\n```\n\nInclusive time of Go functions (children included; generic runtime/net/http frames left out), top entries:\n\n```\n'
		PERF_TXT+=$( (perf report -i "$f" --stdio --children --sort symbol -g none --percent-limit 3 2>&1 || true) |
			grep -F '[.]' | grep -v -E "$GENERIC" | sed 's/[[:space:]-]*$//' | head -40 || true)
		PERF_TXT+=$'\n```\n'
	done
fi

# ---------------------------------------------------------------- report
log "writing $OUT"
cp "$RES" "$(dirname "$OUT")/obs-raw.jsonl"

val() { jq -r --arg s "$1" --arg w "$2" --argjson r "$3" --arg f "$4" 'select(.server==$s and .workload==$w and .round==$r) | .[$f] // empty' "$RES"; }
vals() { jq -r --arg s "$1" --arg w "$2" --arg f "$3" 'select(.server==$s and .workload==$w) | .[$f] // empty' "$RES"; }
pvals() { jq -r --arg s "$1" --arg w "$2" --arg f "$3" 'select(.server==$s and .workload==$w) | .[$f] // empty' "$PREV"; }
SUMMARY_PREV=()
mean() { awk '{s+=$1; n++} END {if (n) printf "%.2f", s/n; else printf "n/a"}'; }
median() { sort -g | awk '{v[NR]=$1} END {if (!NR) {print "n/a"; exit} if (NR%2) printf "%.2f", v[(NR+1)/2]; else printf "%.2f", (v[NR/2]+v[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a=="" || b=="" || a=="n/a" || b=="n/a" || b+0==0) print "n/a"; else printf "%.2f", a/b}'; }
verdict() { # RATIO TARGET higher|lower
	awk -v x="$1" -v t="$2" -v d="$3" 'BEGIN {
		if (x=="n/a") {print "not measured"; exit}
		if ((d=="higher" && x+0 >= t+0) || (d=="lower" && x+0 <= t+0)) print "met"; else print "**missed**" }'
}

SUMMARY=()
# wtable WORKLOAD FIELD UNIT TITLE [TARGET [FLOOR]]: per-round table for a
# higher-is-better workload. Without FLOOR the summary judges the ratio of
# the means against TARGET; with FLOOR it judges the median of the per-round
# ratios against TARGET and wants every round at FLOOR or above.
wtable() {
	local w=$1 f=$2 unit=$3 title=$4 target=${5:-} floor=${6:-} rounds a b ratios=()
	rounds=$(jq -r --arg w "$w" 'select(.workload==$w) | .round' "$RES" | sort -nu)
	echo "#### $title"
	echo
	if [[ -z $rounds ]]; then
		echo "Not measured in this run."
		echo
		SUMMARY+=("| $title | n/a | n/a | not measured | ${target:+≥ ${target}×} | — |")
		return
	fi
	echo "| round | first | Atelier $unit | MinIO $unit | Atelier/MinIO | Atelier p50 / p99 ms | MinIO p50 / p99 ms |"
	echo "|---|---|---:|---:|---:|---:|---:|"
	for r in $rounds; do
		a=$(val atelier "$w" "$r" "$f"); b=$(val minio "$w" "$r" "$f")
		ratios+=("$(ratio "$a" "$b")")
		first=$(jq -r --arg w "$w" --argjson r "$r" 'select(.workload==$w and .round==$r) | .server' "$RES" | head -1)
		echo "| $r | $first | $a | ${b:-not measured} | $(ratio "$a" "$b")× | $(val atelier "$w" "$r" p50_ms) / $(val atelier "$w" "$r" p99_ms) | $(val minio "$w" "$r" p50_ms) / $(val minio "$w" "$r" p99_ms) |"
	done
	a=$(vals atelier "$w" "$f" | mean); b=$(vals minio "$w" "$f" | mean)
	local m med lo
	m=$(ratio "$a" "$b")
	med=$(printf '%s\n' "${ratios[@]}" | grep -v n/a | median)
	lo=$(printf '%s\n' "${ratios[@]}" | grep -v n/a | sort -g | head -1 || true)
	echo "| **mean** | | **$a** | **${b:-n/a}** | **${m}×** | | |"
	echo "| **median of the round ratios** | | | | **${med}×** | | |"
	echo
	if [[ -n $target && -n $floor ]]; then
		local v
		v=$(verdict "$med" "$target" higher)
		if [[ $v == met && -n $lo ]] && awk -v x="$lo" -v t="$floor" 'BEGIN {exit !(x+0 < t+0)}'; then
			v="**missed**: a round below ${floor}×"
		fi
		SUMMARY+=("| $title | $a | ${b:-n/a} | median ${med}× (rounds: ${ratios[*]}; ratio of the means ${m}×) | median ≥ ${target}×, every round ≥ ${floor}× | $v |")
	elif [[ -n $target ]]; then
		local v
		v=$(verdict "$m" "$target" higher)
		if [[ $v == met && -n $lo ]] && awk -v x="$lo" -v t="$target" 'BEGIN {exit !(x+0 < t+0)}'; then
			v="met on the mean, **not in every round** (within noise)"
		fi
		SUMMARY+=("| $title | $a | ${b:-n/a} | ${m}× (rounds: ${ratios[*]}) | ≥ ${target}× | $v |")
	else
		SUMMARY+=("| $title (informational) | $a | ${b:-n/a} | ${m}× (rounds: ${ratios[*]}) | — | — |")
	fi
}

{
	echo "# OBS benchmark: Atelier vs MinIO"
	echo
	echo "Generated by \`bench/obs/run.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Both servers ran at the same time on"
	echo "the same machine, with data directories on the same filesystem, and were driven by the same load"
	echo "generator (\`bench/obs/loadgen\`: minio-go v7 Core, one keep-alive transport, path style,"
	echo "UNSIGNED-PAYLOAD PUTs, single-request PUT/GET, no retries). Every workload ran against one server"
	echo "and then the other, round after round, so each ratio compares runs seconds to minutes apart; for the"
	echo "large PUT ($BIG_PUT_ROUNDS rounds) and LIST ($LIST_RUNS runs) the server that goes first alternates (A B, B A, ...),"
	echo "the others run A B, A B. The machine is"
	echo "small and shared: **read the ratios, not the absolute numbers.** Client and server share the same"
	echo "cores, so the load generator's CPU is part of every figure (equally for both servers)."
	echo
	echo "## Machine"
	echo
	echo '```'
	echo "nproc: $(nproc)   cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)   kernel: $(uname -r)"
	free -g
	echo
	df -h "$WORK"
	echo '```'
	echo
	echo "## Versions"
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| atelier | commit $BUILT_COMMIT$TREE_STATE, built $BUILT with \`go build -o bench/.bin/atelier ./cmd/atelier\` |"
	if [[ -n $MINIO_BIN ]]; then
		echo "| minio | $(go version -m "$MINIO_BIN" 2>/dev/null | awk '$1=="mod" {print $2, $3}') (\`$("$MINIO_BIN" --version 2>/dev/null | head -1)\`), $(go version "$MINIO_BIN" | awk '{print $2}') |"
	else
		echo "| minio | **not measured**: no binary and \`go install github.com/minio/minio@latest\` failed |"
	fi
	echo "| awscli | $("$AWS" --version 2>&1 | head -1) |"
	echo "| rclone | $("$RCLONE" version 2>/dev/null | head -1) |"
	echo "| go | $(go version) |"
	echo "| load generator | bench/obs/loadgen, minio-go $(go list -m -f '{{.Version}}' github.com/minio/minio-go/v7 2>/dev/null) |"
	echo
	echo "## Summary"
	echo
	echo "SUMMARY_PLACEHOLDER"
	echo
	echo "## Disk (physical limit)"
	echo
	echo "| | MiB/s | Atelier 64 MiB PUT/GET as a share of it |"
	echo "|---|---:|---:|"
	echo "| \`dd if=/dev/zero of=FILE bs=1M count=$DD_MIB conv=fsync\` (write) | $DD_W | PUT: $(ratio "$(vals atelier big-put mib_per_s | mean)" "$DD_W")× |"
	if [[ $CAN_DROP == 1 ]]; then
		echo "| \`dd if=FILE of=/dev/null bs=1M\` after \`echo 3 > /proc/sys/vm/drop_caches\` (read) | $DD_R | GET (cold): $(ratio "$(vals atelier big-get mib_per_s | mean)" "$DD_R")× |"
		echo
		echo "dd reads one stream; the GETs read $BIG_CONC objects at once, which a virtual disk can serve faster than"
		echo "one sequential stream, so a GET above 1.0× of the dd read is possible."
	else
		echo "| \`dd if=FILE of=/dev/null bs=1M\` (read; **caches could not be dropped**, so this may be a page-cache figure) | $DD_R | GET: $(ratio "$(vals atelier big-get mib_per_s | mean)" "$DD_R")× |"
	fi
	echo
	echo "## Workloads"
	echo
	echo "Throughput is total bytes (or operations) over the wall time of the whole batch; latencies are per"
	echo "request. Ratios are Atelier/MinIO: **higher is better for Atelier**."
	echo
	wtable big-put mib_per_s MiB/s "PUT $BIG_SIZE × $BIG_COUNT, $BIG_CONC concurrent" 1.2 1.0
	if [[ $CAN_DROP == 1 ]]; then dropnote="page cache dropped before each server's run"; else dropnote="page cache could NOT be dropped"; fi
	wtable big-get mib_per_s MiB/s "GET $BIG_SIZE × $BIG_COUNT, $BIG_CONC concurrent, cold ($dropnote)" 1.0
	wtable big-reget mib_per_s MiB/s "GET $BIG_SIZE × $BIG_COUNT, $BIG_CONC concurrent, re-read right after the cold GET"
	wtable small-put ops_per_s ops/s "PUT $SMALL_SIZE, $SMALL_CONC concurrent, $SMALL_COUNT ops or $SMALL_DURATION" 1.0
	wtable small-get ops_per_s ops/s "GET $SMALL_SIZE, $SMALL_CONC concurrent, $SMALL_COUNT ops or $SMALL_DURATION (objects of the PUT)" 1.0
	wtable populate ops_per_s ops/s "PUT 1 KiB, $LIST_CONC concurrent: populating the LIST prefix"
	echo "#### LIST $KEYS keys under one prefix, pages of 1000 (ListObjectsV2)"
	echo
	[[ $KEYS != "$LIST_KEYS" ]] && echo "**Only $KEYS keys (not $LIST_KEYS): populating MinIO took longer than LIST_POP_MAX=$LIST_POP_MAX.**" && echo
	echo "Seconds to list all keys (lower is better). Ratio is Atelier time / MinIO time: **lower is better**"
	echo "for Atelier; the target is a ratio of the median times ≤ $LIST_TARGET."
	echo
	echo "| run | first | Atelier s | MinIO s | Atelier/MinIO time |"
	echo "|---|---|---:|---:|---:|"
	lr=()
	for r in $(seq 1 "$LIST_RUNS"); do
		a=$(val atelier list "$r" seconds); b=$(val minio list "$r" seconds)
		lr+=("$(ratio "$a" "$b")")
		first=$(jq -r --argjson r "$r" 'select(.workload=="list" and .round==$r) | .server' "$RES" | head -1)
		echo "| $r | $first | $a | ${b:-not measured} | $(ratio "$a" "$b")× |"
	done
	a=$(vals atelier list seconds | median); b=$(vals minio list seconds | median)
	m=$(ratio "$a" "$b")
	echo "| **median** | | **$a** | **${b:-n/a}** | **${m}×** |"
	echo
	v=$(verdict "$m" "$LIST_TARGET" lower)
	hi=$(printf '%s\n' "${lr[@]}" | grep -v n/a | sort -g | tail -1 || true)
	if [[ $v == met && -n $hi ]] && awk -v x="$hi" -v t="$LIST_TARGET" 'BEGIN {exit !(x+0 > t+0)}'; then
		v="met on the median, **not in every run** (within noise)"
	fi
	SUMMARY+=("| LIST $KEYS keys, pages of 1000: seconds (**lower is better**) | $a s | ${b:-n/a} s | ${m}× time (runs: ${lr[*]}); = $(ratio "$b" "$a")× MinIO's speed | time ≤ ${LIST_TARGET}× | $v |")
	echo "## Directory upload: $made files of $UPLOAD_KIB KiB to Atelier"
	echo
	echo "Wall time of the whole command (\`date +%s.%N\` before and after), $UPLOAD_RUNS runs each, tools"
	echo "interleaved, each run to a fresh prefix; every upload was checked by listing $made keys afterwards."
	echo "Default settings of each tool (atelier obs cp: 16 files at once; awscli: 10 requests; rclone: 4"
	echo "transfers, 8 checkers), plus both others at 16 in parallel for reference ($UPLOAD_REF_RUNS run(s))."
	echo
	echo "| tool | runs (s) | median s | speed-up of \`atelier obs cp\` |"
	echo "|---|---|---:|---:|"
	atl_up=$(vals atelier upload-atelier-cp seconds | median)
	for t in "${UPLOAD_TOOLS[@]}"; do
		runs=$(jq -r --arg w "upload-$t" 'select(.workload==$w) | "\(.seconds)\(if .ok then "" else " (FAILED)" end)"' "$RES" | paste -sd, | sed 's/,/, /g')
		med=$(vals atelier "upload-$t" seconds | median)
		echo "| $t | $runs | $med | $( [[ $t == atelier-cp ]] && echo — || echo "$(ratio "$med" "$atl_up")×") |"
	done
	echo
	aws_up=$(vals atelier upload-awscli seconds | median); rc_up=$(vals atelier upload-rclone seconds | median)
	SUMMARY+=("| Directory upload $made × $UPLOAD_KIB KiB: \`atelier obs cp\` speed-up over awscli (defaults) | $atl_up s | awscli $aws_up s | $(ratio "$aws_up" "$atl_up")× | ≥ 2× | $(verdict "$(ratio "$aws_up" "$atl_up")" 2.0 higher) |")
	SUMMARY+=("| Directory upload: \`atelier obs cp\` speed-up over rclone (defaults) | $atl_up s | rclone $rc_up s | $(ratio "$rc_up" "$atl_up")× | — | — |")
	echo "## Versioned bucket"
	echo
	echo "The PUT/GET workloads again, $VER_ROUNDS rounds, on a second bucket (\`benchv\`) with versioning on in both"
	echo "servers, after every other workload. Every PUT writes a new key, so each object has one version: this"
	echo "is the cost of writing and reading through a versioned bucket, not of keeping old versions."
	echo
	wtable v-big-put mib_per_s MiB/s "Versioned bucket: PUT $BIG_SIZE × $BIG_COUNT, $BIG_CONC concurrent"
	wtable v-big-get mib_per_s MiB/s "Versioned bucket: GET $BIG_SIZE × $BIG_COUNT, $BIG_CONC concurrent, cold"
	wtable v-small-put ops_per_s ops/s "Versioned bucket: PUT $SMALL_SIZE, $SMALL_CONC concurrent"
	wtable v-small-get ops_per_s ops/s "Versioned bucket: GET $SMALL_SIZE, $SMALL_CONC concurrent"
	echo "#### Versioned beside unversioned, this run"
	echo
	echo "| workload | Atelier unversioned | Atelier versioned | versioned/unversioned | MinIO unversioned | MinIO versioned | versioned/unversioned |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	for pair in "big-put v-big-put mib_per_s MiB/s" "big-get v-big-get mib_per_s MiB/s" "small-put v-small-put ops_per_s ops/s" "small-get v-small-get ops_per_s ops/s"; do
		read -r u v f unit <<<"$pair"
		au=$(vals atelier "$u" "$f" | mean); av=$(vals atelier "$v" "$f" | mean)
		mu=$(vals minio "$u" "$f" | mean); mv=$(vals minio "$v" "$f" | mean)
		echo "| $u ($unit) | $au | $av | $(ratio "$av" "$au")× | $mu | $mv | $(ratio "$mv" "$mu")× |"
	done
	echo
	echo "## Unversioned figures against the committed run"
	echo
	if [[ ! -s $PREV ]]; then
		echo "No committed run to compare with ($PREV_SRC is missing)."
	else
		echo "The committed \`bench/results/obs-raw.jsonl\` (${PREV_COMMIT:-commit unknown}) against this run. The machine is"
		echo "shared, so absolute figures move with its load: the check is on the ratio to MinIO measured in the"
		echo "same run, which must stay within 5 % of the committed one (higher-is-better workloads: change ≥ 0.95×;"
		echo "LIST time: change ≤ 1.05×). The Atelier figures themselves are shown for reference."
		echo
		echo "| workload | Atelier now | Atelier committed | now/committed | Atelier/MinIO now | Atelier/MinIO committed | change | within 5 % |"
		echo "|---|---:|---:|---:|---:|---:|---:|---|"
		for row in "big-put mib_per_s higher" "big-get mib_per_s higher" "small-put ops_per_s higher" "small-get ops_per_s higher" "list seconds lower"; do
			read -r w f dir <<<"$row"
			if [[ $dir == lower ]]; then agg=median; else agg=mean; fi
			an=$(vals atelier "$w" "$f" | $agg); mn=$(vals minio "$w" "$f" | $agg)
			ap=$(pvals atelier "$w" "$f" | $agg); mp=$(pvals minio "$w" "$f" | $agg)
			rn=$(ratio "$an" "$mn"); rp=$(ratio "$ap" "$mp"); ch=$(ratio "$rn" "$rp")
			if [[ $ch == n/a ]]; then ok="not measured"
			elif [[ $dir == higher ]]; then ok=$(awk -v c="$ch" 'BEGIN{print (c+0 >= 0.95) ? "yes" : "**no**"}')
			else ok=$(awk -v c="$ch" 'BEGIN{print (c+0 <= 1.05) ? "yes" : "**no**"}'); fi
			echo "| $w ($f) | $an | $ap | $(ratio "$an" "$ap")× | ${rn}× | ${rp}× | ${ch}× | $ok |"
			SUMMARY_PREV+=("$w:$ok")
		done
	fi
	echo
	echo "## Commands"
	echo
	echo '```sh'
	echo "# servers (data dirs side by side under bench/.work/run-*/)"
	echo "bench/.bin/atelier server --data-dir \$W/atelier --listen 127.0.0.1:0 --s3-listen 127.0.0.1:0 --notebook-listen 127.0.0.1:0"
	echo "MINIO_ROOT_USER=benchadmin MINIO_ROOT_PASSWORD=… $MINIO_BIN server \$W/minio --address 127.0.0.1:\$PORT --console-address 127.0.0.1:\$PORT2"
	echo "# disk"
	echo "dd if=/dev/zero of=\$W/dd.bin bs=1M count=$DD_MIB conv=fsync; echo 3 > /proc/sys/vm/drop_caches; dd if=\$W/dd.bin of=/dev/null bs=1M"
	echo "# L=\"bench/.bin/loadgen -endpoint \$EP -access-key … -secret-key … -bucket bench\""
	echo "# large PUT, rounds r=1..$BIG_PUT_ROUNDS, atelier then minio in odd rounds, minio then atelier in even ones"
	echo "\$L -mode put -size $BIG_SIZE -concurrency $BIG_CONC -count $BIG_COUNT -prefix big-r\$r/"
	echo "# the others, for S in atelier minio, rounds r=1..$ROUNDS"
	echo "echo 3 > /proc/sys/vm/drop_caches; \$L -mode get -size $BIG_SIZE -concurrency $BIG_CONC -count $BIG_COUNT -objects $BIG_COUNT -prefix big-r\$r/   # cold"
	echo "\$L -mode get -size $BIG_SIZE -concurrency $BIG_CONC -count $BIG_COUNT -objects $BIG_COUNT -prefix big-r\$r/   # re-read, right after the same server's cold GET"
	echo "\$L -mode put -size $SMALL_SIZE -concurrency $SMALL_CONC -count $SMALL_COUNT -duration $SMALL_DURATION -prefix small-r\$r/"
	echo "\$L -mode get -size $SMALL_SIZE -concurrency $SMALL_CONC -count $SMALL_COUNT -duration $SMALL_DURATION -objects \$OPS_OF_THE_PUT -prefix small-r\$r/"
	echo "\$L -mode populate -size 1KiB -concurrency $LIST_CONC -count $LIST_KEYS -duration $LIST_POP_MAX -prefix list/"
	echo "\$L -mode list -count 1 -page 1000 -prefix list/ -expect $KEYS   # $LIST_RUNS times, interleaved, first server alternating"
	echo "# versioned bucket, rounds r=1..$VER_ROUNDS: loadgen -mode mb -versioning -bucket benchv, then the PUT/cold GET/4 KiB PUT/GET above with -bucket benchv"
	echo "# directory upload (tools interleaved, $UPLOAD_RUNS runs)"
	echo "ATELIER_CONFIG=\$W/atelier/admin.yaml bench/.bin/atelier obs cp -r -q \$W/upload obs://dirup/p-\$r/"
	echo "AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null $AWS --endpoint-url \$S3 s3 cp --recursive --only-show-errors \$W/upload s3://dirup/p2-\$r/"
	echo "env -u AWS_CA_BUNDLE RCLONE_CONFIG_ATL_TYPE=s3 RCLONE_CONFIG_ATL_PROVIDER=Other RCLONE_CONFIG_ATL_FORCE_PATH_STYLE=true RCLONE_CONFIG_ATL_ENDPOINT=\$S3 … $RCLONE copy -q \$W/upload atl:dirup/p3-\$r"
	echo "# reference: awscli with s3.max_concurrent_requests = 16; rclone copy --transfers 16 --checkers 16"
	echo '```'
	echo
	echo "Raw results (one JSON line per run): \`bench/results/obs-raw.jsonl\`."
	if [[ -n $PERF_TXT ]]; then
		echo
		echo "## CPU profile of the Atelier server"
		echo
		echo "\`perf record -e cpu-clock -F 499 -g -p \$ATELIER_PID\` during one extra, unmeasured pass of each workload"
		echo "against Atelier alone (PERF=1). Whole-machine load from other processes is not in these profiles."
		echo "$PERF_TXT"
	fi
} >"$WORK/obs.md"

{
	echo "| workload | Atelier | MinIO | Atelier/MinIO | target | |"
	echo "|---|---:|---:|---:|---|---|"
	printf '%s\n' "${SUMMARY[@]}"
	if ((${#SUMMARY_PREV[@]})); then
		echo
		echo "Unversioned figures against the committed run (ratio to MinIO within 5 %, see the section below): ${SUMMARY_PREV[*]}."
	fi
} >"$WORK/summary.md"
awk -v f="$WORK/summary.md" '$0=="SUMMARY_PLACEHOLDER" { while ((getline l < f) > 0) print l; next } { print }' "$WORK/obs.md" >"$OUT"
log "done: $OUT"
