#!/usr/bin/env bash
# bench/notebooks/run.sh — how long from `atelier notebook create` to a kernel
# that has run a cell, through the proxy, against the peer: a bare Jupyter
# server (the same classic Notebook 6, `python3 -m notebook`) started by hand
# and asked the same thing, in the same run on the same machine.
#
# Atelier's figure covers the create call, admission, the runner's start
# (volume, venv, credentials, sandbox), Jupyter's start, a login link redeemed
# through the notebook listener, a kernel started and `1+1` run over its
# websocket. The first notebook of a server warms the engine (the Python
# tree is extracted, the sandbox account made); it is reported apart, and the
# median is of the warm rounds. Target: under 3 s warm.
#
# Knobs: ROUNDS [5]  ATL_BIN (use this binary)  WORK [bench/.work]
#        OUT [bench/results/notebooks.md]  KEEP [0]
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$ROOT/bench/.bin
OUT=${OUT:-$ROOT/bench/results/notebooks.md}
ROUNDS=${ROUNDS:-5}
KEEP=${KEEP:-0}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a-b }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR+1)/2]; else printf "%.3f\n", (v[NR/2]+v[NR/2+1])/2 }'; }
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

mkdir -p "$BIN" "${WORK:-$ROOT/bench/.work}" "$(dirname "$OUT")"
WORK=$(mktemp -d "${WORK:-$ROOT/bench/.work}/notebooks-XXXXXX")
SERVER_PID=""
PEER_PID=""
cleanup() {
	local rc=$?
	[[ -n $PEER_PID ]] && kill "$PEER_PID" 2>/dev/null || true
	if [[ -n $SERVER_PID ]]; then
		ATELIER_CONFIG=$WORK/atelier/admin.yaml "$ATL" notebook list -o json 2>/dev/null |
			python3 -c 'import json,sys; [print(n["id"]) for n in json.load(sys.stdin)["items"]]' 2>/dev/null |
			while read -r id; do ATELIER_CONFIG=$WORK/atelier/admin.yaml "$ATL" notebook delete "$id" --yes >/dev/null 2>&1 || true; done
		sleep 2
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	if [[ $KEEP == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -n ${ATL_BIN:-} ]]; then
	ATL=$ATL_BIN
else
	log "building atelier"
	go build -o "$BIN/atelier" ./cmd/atelier
	ATL=$BIN/atelier
fi
go build -o "$BIN/nbprobe" ./bench/notebooks/probe
PROBE=$BIN/nbprobe

py=$(readlink -f /usr/bin/python3)
cat >"$WORK/server.yaml" <<YAML
flavors:
  - {id: cpu.1, cpu: 1, memory: 2GiB}
engines:
  - {name: pytorch, python: $py}
quotas: {notebooks_per_user: 0}
YAML
log "starting the server"
"$ATL" server --data-dir "$WORK/atelier" --config "$WORK/server.yaml" --listen 127.0.0.1:0 --s3-listen 127.0.0.1:0 --notebook-listen 127.0.0.1:0 >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 300); do [[ -f $WORK/atelier/admin.yaml ]] && break; sleep 0.1; done
export ATELIER_CONFIG=$WORK/atelier/admin.yaml
for _ in $(seq 300); do "$ATL" whoami >/dev/null 2>&1 && break; sleep 0.1; done

atelier_round() { # name → seconds from create to a cell run
	local t0 out
	t0=$(now)
	"$ATL" notebook create --name "$1" --flavor cpu.1 --volume 256MiB -o json >/dev/null
	out=$("$PROBE" -login "$("$ATL" notebook url "$1")")
	sub "$(field kernel <<<"$out")" "$t0"
	"$ATL" notebook delete "$1" --yes >/dev/null
}
peer_round() { # → seconds from starting jupyter to a cell run
	local t0 out port
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	mkdir -p "$WORK/peer"
	t0=$(now)
	HOME=$WORK/peer "$py" -m notebook --no-browser --ip 127.0.0.1 --port "$port" --NotebookApp.token=bench --allow-root \
		--notebook-dir "$WORK/peer" >"$WORK/peer.log" 2>&1 &
	PEER_PID=$!
	out=$("$PROBE" -base "http://127.0.0.1:$port/" -token bench)
	sub "$(field kernel <<<"$out")" "$t0"
	kill "$PEER_PID"; wait "$PEER_PID" 2>/dev/null || true; PEER_PID=""
}

log "first notebook (warms the engine)"
first=$(atelier_round nb-first)
log "first: ${first}s"
atl=() peer=()
for r in $(seq "$ROUNDS"); do
	a=$(atelier_round "nb-$r"); p=$(peer_round)
	log "round $r: atelier ${a}s, bare jupyter ${p}s"
	atl+=("$a"); peer+=("$p")
done
am=$(printf '%s\n' "${atl[@]}" | median)
pm=$(printf '%s\n' "${peer[@]}" | median)
ratio=$(awk -v a="$am" -v p="$pm" 'BEGIN { printf "%.2f", a/p }')
{
	echo "# Notebooks: create to a kernel that ran a cell"
	echo
	echo "Run on $(date -u +%Y-%m-%d) — $(nproc) cores, $(uname -r); \`bash bench/notebooks/run.sh\` (ROUNDS=$ROUNDS)."
	echo
	echo "Atelier: \`notebook create\` → admission → runner (volume, venv, credentials, sandbox) → Jupyter →"
	echo "login link through the notebook listener → kernel started → \`1+1\` answered over its websocket."
	echo "Peer: \`python3 -m notebook\` started by hand → the same kernel start and cell, with its token."
	echo
	echo "| | median (s) | rounds (s) |"
	echo "|---|---|---|"
	echo "| Atelier, warm engine | $am | ${atl[*]} |"
	echo "| bare Jupyter (peer) | $pm | ${peer[*]} |"
	echo "| Atelier, first notebook of the server | $first | |"
	echo
	echo "Atelier / peer: ${ratio}× (target: Atelier under 3 s warm)."
} >"$OUT"
cat "$OUT"
