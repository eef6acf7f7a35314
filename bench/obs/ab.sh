#!/usr/bin/env bash
# bench/obs/ab.sh A_BIN B_BIN — the unversioned OBS path of two atelier
# binaries, side by side in the same run: both servers up at once, each
# workload run against one and then the other, the first alternating round
# by round (A B, B A, ...), so that the machine's load hits both alike.
# Made to answer "did a change slow the unversioned path?" (e.g. A = the
# commit of the committed bench/results/obs.md, B = HEAD), which a
# comparison with a committed run on a shared machine cannot.
#
# Workloads (bench/obs/loadgen, as bench/obs/run.sh runs them): PUT of
# 64 MiB objects (8 concurrent, 16 objects) and their cold GET, PUT and GET
# of 4 KiB objects (32 concurrent), LIST of LIST_KEYS keys in pages of 1000.
#
# Knobs (environment): ROUNDS [4], BIG_COUNT [16], SMALL_COUNT [10000],
# LIST_KEYS [100000], LIST_RUNS [5], LABEL_A [A], LABEL_B [B],
# OUT [bench/results/obs-ab.md], KEEP [0].
set -euo pipefail

if (($# != 2)); then
	echo "usage: $0 A_BIN B_BIN" >&2
	exit 2
fi
A_BIN=$(realpath "$1")
B_BIN=$(realpath "$2")
cd "$(dirname "$0")/../.."
ROOT=$PWD
ROUNDS=${ROUNDS:-4} BIG_COUNT=${BIG_COUNT:-16} SMALL_COUNT=${SMALL_COUNT:-10000}
LIST_KEYS=${LIST_KEYS:-100000} LIST_RUNS=${LIST_RUNS:-5}
LABEL_A=${LABEL_A:-A} LABEL_B=${LABEL_B:-B}
OUT=${OUT:-$ROOT/bench/results/obs-ab.md}
KEEP=${KEEP:-0}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
mkdir -p "$ROOT/bench/.bin" "$ROOT/bench/.work"
go build -o "$ROOT/bench/.bin/loadgen" ./bench/obs/loadgen
LG=$ROOT/bench/.bin/loadgen
WORK=$(mktemp -d "$ROOT/bench/.work/obs-ab-XXXXXX")
RES=$WORK/results.jsonl
: >"$RES"
declare -A PID EP AK SK BINOF
BINOF[a]=$A_BIN BINOF[b]=$B_BIN
cleanup() {
	local rc=$?
	for s in a b; do [[ -n ${PID[$s]:-} ]] && kill "${PID[$s]}" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ $KEEP == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for s in a b; do
	mkdir -p "$WORK/$s"
	extra=()
	if "${BINOF[$s]}" server --help 2>&1 | grep -q -- --notebook-listen; then extra=(--notebook-listen 127.0.0.1:0); fi
	"${BINOF[$s]}" server --data-dir "$WORK/$s" --listen 127.0.0.1:0 --s3-listen 127.0.0.1:0 "${extra[@]}" >"$WORK/$s.log" 2>&1 &
	PID[$s]=$!
	for i in $(seq 1 300); do
		if [[ -f $WORK/$s/admin.yaml ]]; then
			api=$(sed -n 's/^endpoint: *//p' "$WORK/$s/admin.yaml")
			[[ -n $api ]] && curl -sf "$api/healthz" >/dev/null 2>&1 && break
		fi
		kill -0 "${PID[$s]}" 2>/dev/null || { cat "$WORK/$s.log" >&2; exit 1; }
		[[ $i == 300 ]] && { log "server $s did not come up"; exit 1; }
		sleep 0.1
	done
	EP[$s]=$(sed -n 's/^s3_endpoint: *//p' "$WORK/$s/admin.yaml")
	AK[$s]=$(sed -n 's/^access_key: *//p' "$WORK/$s/admin.yaml")
	SK[$s]=$(sed -n 's/^secret_key: *//p' "$WORK/$s/admin.yaml")
	"$LG" -endpoint "${EP[$s]}" -access-key "${AK[$s]}" -secret-key "${SK[$s]}" -bucket bench -mode mb
done

lg() { # SERVER WORKLOAD ROUND loadgen-flags...
	local s=$1 w=$2 r=$3 out
	shift 3
	out=$("$LG" -endpoint "${EP[$s]}" -access-key "${AK[$s]}" -secret-key "${SK[$s]}" -bucket bench "$@") ||
		out='{"failed":true}'
	jq -c --arg s "$s" --arg w "$w" --argjson r "$r" '. + {server:$s, workload:$w, round:$r}' <<<"$out" >>"$RES"
	log "$s $w r$r: $(jq -r 'if .mode=="list" then "\(.seconds) s" else "\(.mib_per_s) MiB/s \(.ops_per_s) ops/s" end' <<<"$out")"
}
order() { if (($1 % 2)); then echo a b; else echo b a; fi; }
# The large GET reads cold: the page cache is dropped before each server's
# run (as root; otherwise it reads whatever is cached, said in the report).
CAN_DROP=0
if sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then CAN_DROP=1; fi
dropcaches() { if [[ $CAN_DROP == 1 ]]; then sync; echo 3 >/proc/sys/vm/drop_caches; fi; }

for r in $(seq 1 "$ROUNDS"); do
	for s in $(order "$r"); do lg "$s" big-put "$r" -mode put -size 64MiB -concurrency 8 -count "$BIG_COUNT" -prefix "big-r$r/"; done
	for s in $(order "$r"); do
		dropcaches
		lg "$s" big-get "$r" -mode get -size 64MiB -concurrency 8 -count "$BIG_COUNT" -objects "$BIG_COUNT" -prefix "big-r$r/"
	done
	for s in $(order "$r"); do lg "$s" small-put "$r" -mode put -size 4KiB -concurrency 32 -count "$SMALL_COUNT" -prefix "small-r$r/"; done
	for s in $(order "$r"); do lg "$s" small-get "$r" -mode get -size 4KiB -concurrency 32 -count "$SMALL_COUNT" -objects "$SMALL_COUNT" -prefix "small-r$r/"; done
done
for s in a b; do lg "$s" populate 1 -mode populate -size 1KiB -concurrency 64 -count "$LIST_KEYS" -prefix list/; done
for r in $(seq 1 "$LIST_RUNS"); do
	for s in $(order "$r"); do lg "$s" list "$r" -mode list -count 1 -page 1000 -prefix list/ -expect "$LIST_KEYS"; done
done

vals() { jq -r --arg s "$1" --arg w "$2" --arg f "$3" 'select(.server==$s and .workload==$w) | .[$f] // empty' "$RES"; }
median() { sort -g | awk '{v[NR]=$1} END {if (!NR) {print "n/a"; exit} if (NR%2) printf "%.2f", v[(NR+1)/2]; else printf "%.2f", (v[NR/2]+v[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a=="n/a" || b=="n/a" || b+0==0) print "n/a"; else printf "%.3f", a/b}'; }
{
	echo "# OBS, unversioned path: $LABEL_A against $LABEL_B"
	echo
	echo "Generated by \`bench/obs/ab.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): two atelier servers up at once on the"
	echo "same machine, each workload against one and then the other, the first alternating round by round;"
	echo "medians. B/A above 1 (below 1 for LIST seconds) means B is faster. Load average at the end:"
	echo "$(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores."
	echo
	echo "| | binary |"
	echo "|---|---|"
	echo "| A ($LABEL_A) | \`$A_BIN\` |"
	echo "| B ($LABEL_B) | \`$B_BIN\` |"
	echo
	echo "| workload | rounds | A | B | B/A |"
	echo "|---|---:|---:|---:|---:|"
	cold="cold: page cache dropped before each server's run"
	[[ $CAN_DROP == 1 ]] || cold="page cache NOT dropped (not root)"
	for row in "big-put mib_per_s PUT 64 MiB × $BIG_COUNT, 8 concurrent (MiB/s)" "big-get mib_per_s GET 64 MiB × $BIG_COUNT, 8 concurrent, $cold (MiB/s)" "small-put ops_per_s PUT 4 KiB, 32 concurrent (ops/s)" \
		"small-get ops_per_s GET 4 KiB, 32 concurrent (ops/s)" "list seconds LIST $LIST_KEYS keys, pages of 1000 (s, lower is better)"; do
		read -r w f title <<<"$row"
		a=$(vals a "$w" "$f" | median) b=$(vals b "$w" "$f" | median)
		echo "| $title | $(vals a "$w" "$f" | wc -l) | $a | $b | $(ratio "$b" "$a")× |"
	done
	echo
	echo "Per round (A, B):"
	echo
	echo '```'
	jq -r '[.workload, .round, .server, (if .workload == "list" then .seconds elif (.workload | startswith("big-")) then .mib_per_s else .ops_per_s end // "failed")] | @tsv' "$RES" | grep -v populate
	echo '```'
} >"$OUT"
log "wrote $OUT"
