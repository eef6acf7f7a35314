#!/usr/bin/env bash
# Python serving runtime benchmark: Atelier's model_service.server against the
# same trivial handler as a FastAPI app under uvicorn, one process each.
#
#   bench/serving/runtime/run.sh                # ~6 min; writes bench/results/serving-runtime.md
#   ROUNDS=1 DURATION=5 bench/serving/runtime/run.sh   # a quick, rough run
#
# Each server is pinned to CPU $SERVER_CPU, the load generator (wrk, one
# thread) to CPU $CLIENT_CPU. Every measurement is DURATION seconds of
# keep-alive POSTs of a small JSON body at a fixed concurrency, after a
# WARMUP-second unmeasured run; systems are interleaved within each round,
# and the median round is reported.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
PY=${PY:-/usr/bin/python3}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-"1 16 64"}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BENCH_BODY=${BENCH_BODY:-'{"instances":[[1.0,2.0,3.0,4.0]],"id":"abc"}'}
OUT=${OUT:-$ROOT/bench/results/serving-runtime.md}
RAW=${RAW:-$ROOT/bench/results/serving-runtime-raw.jsonl}
export BENCH_BODY

need() {
    local what=$1 hint=$2
    echo "run.sh: $what is missing: $hint" >&2
    exit 1
}

# ---- prerequisites
if ! "$PY" -c 'import fastapi, uvicorn' 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y python3-fastapi python3-uvicorn >&2
    else
        need "FastAPI/uvicorn for $PY" "apt-get install -y python3-fastapi python3-uvicorn"
    fi
fi
if ! command -v wrk >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y wrk >&2
    else
        need "wrk" "apt-get install -y wrk"
    fi
fi
command -v taskset >/dev/null || need "taskset" "apt-get install -y util-linux"
ncpu=$(nproc)
if [ "$SERVER_CPU" -ge "$ncpu" ] || [ "$CLIENT_CPU" -ge "$ncpu" ]; then
    need "a second CPU" "this machine has $ncpu CPU(s); set SERVER_CPU and CLIENT_CPU"
fi
STANDARD=0
if "$PY" -c 'import uvloop, httptools' 2>/dev/null; then
    STANDARD=1  # uvicorn's "standard" extras are there: measure that configuration too
fi

WORK=$(mktemp -d /tmp/atelier-bench-serving-runtime.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${PIDS[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() {
    local port=$1 name=$2
    for _ in $(seq 1 300); do
        if "$PY" -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 1).close()" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "run.sh: $name did not start; its log:" >&2
    cat "$WORK/$name.log" >&2
    exit 1
}

# ---- servers (all started up front, all pinned to SERVER_CPU; only the one under load works)
declare -A PORT CMD SPID
SYSTEMS=()
add() {
    local name=$1
    shift
    SYSTEMS+=("$name")
    CMD[$name]="$*"
}
P=$(free_port); PORT[atelier]=$P
add atelier "$PY -m model_service.server --model-dir $HERE/model --model-name echo --host 127.0.0.1 --port $P --no-access-log"
P=$(free_port); PORT[atelier-accesslog]=$P
add atelier-accesslog "$PY -m model_service.server --model-dir $HERE/model --model-name echo --host 127.0.0.1 --port $P"
P=$(free_port); PORT[uvicorn]=$P
add uvicorn "$PY -m uvicorn fastapi_app:app --host 127.0.0.1 --port $P --workers 1 --no-access-log --loop asyncio --http h11"
P=$(free_port); PORT[uvicorn-def]=$P
add uvicorn-def "$PY -m uvicorn fastapi_app:app_sync --host 127.0.0.1 --port $P --workers 1 --no-access-log --loop asyncio --http h11"
if [ "$STANDARD" = 1 ]; then
    P=$(free_port); PORT[uvicorn-std]=$P
    add uvicorn-std "$PY -m uvicorn fastapi_app:app --host 127.0.0.1 --port $P --workers 1 --no-access-log --loop uvloop --http httptools"
    P=$(free_port); PORT[uvicorn-std-def]=$P
    add uvicorn-std-def "$PY -m uvicorn fastapi_app:app_sync --host 127.0.0.1 --port $P --workers 1 --no-access-log --loop uvloop --http httptools"
fi

start_server() {
    local s=$1
    # shellcheck disable=SC2086
    (cd "$HERE" && PYTHONPATH="$ROOT/python" exec taskset -c "$SERVER_CPU" ${CMD[$s]}) >>"$WORK/$s.log" 2>&1 &
    PIDS+=($!)
    SPID[$s]=$!  # taskset execs the server: the same process
}
RESTARTS=0
# a server that died (on a shared machine something else may kill it) is
# started again; the restart is counted in the report
ensure_running() {
    local s=$1
    if ! kill -0 "${SPID[$s]}" 2>/dev/null; then
        echo "run.sh: $s (pid ${SPID[$s]}) is gone; starting it again" >&2
        RESTARTS=$((RESTARTS + 1))
        start_server "$s"
        wait_port "${PORT[$s]}" "$s"
    fi
}
for s in "${SYSTEMS[@]}"; do
    start_server "$s"
done
for s in "${SYSTEMS[@]}"; do
    wait_port "${PORT[$s]}" "$s"
done

# every system must answer the same JSON
want='{"ok":true,"echo":'"$BENCH_BODY"'}'
for s in "${SYSTEMS[@]}"; do
    got=$(curl -s -X POST -H 'Content-Type: application/json' --data-binary "$BENCH_BODY" "http://127.0.0.1:${PORT[$s]}/")
    if ! "$PY" -c 'import json,sys; sys.exit(json.loads(sys.argv[1]) != json.loads(sys.argv[2]))' "$got" "$want"; then
        echo "run.sh: $s answered $got, want $want" >&2
        exit 1
    fi
done

# CPU time (user + system, clock ticks) the process has used: the server's
# cost per request, which other load on the machine does not change much
cpu_ticks() {
    awk '{print $14 + $15}' "/proc/$1/stat"
}
TICK=$(getconf CLK_TCK)

loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$RAW"
LOST=0
total=$((ROUNDS * $(wc -w <<<"$CONCURRENCY") * ${#SYSTEMS[@]}))
n=0
for round in $(seq 1 "$ROUNDS"); do
    for c in $CONCURRENCY; do
        for s in "${SYSTEMS[@]}"; do
            n=$((n + 1))
            url="http://127.0.0.1:${PORT[$s]}/"
            ensure_running "$s"
            taskset -c "$CLIENT_CPU" wrk -t1 -c"$c" -d"${WARMUP}s" -s "$HERE/post.lua" "$url" >/dev/null || true
            t0=$(cpu_ticks "${SPID[$s]}" 2>/dev/null || echo 0)
            line=$(taskset -c "$CLIENT_CPU" wrk -t1 -c"$c" -d"${DURATION}s" -s "$HERE/post.lua" "$url" | grep '^{"requests"' || true)
            t1=$(cpu_ticks "${SPID[$s]}" 2>/dev/null || echo 0)
            if [ -z "$line" ] || ! kill -0 "${SPID[$s]}" 2>/dev/null; then
                echo "run.sh: the measurement of $s at c=$c (round $round) failed: the server went away; not counted" >&2
                LOST=$((LOST + 1))
                continue
            fi
            echo "{\"system\":\"$s\",\"concurrency\":$c,\"round\":$round,\"loadavg\":\"$(cut -d' ' -f1 /proc/loadavg)\",\"server_cpu_s\":$(awk -v a="$t0" -v b="$t1" -v t="$TICK" 'BEGIN{printf "%.3f", (b-a)/t}'),${line#\{}" >>"$RAW"
            rps=$("$PY" -c 'import json,sys; r=json.loads(sys.argv[1]); print("%.0f" % (r["requests"]/(r["duration_us"]/1e6)))' "$line")
            printf '[%d/%d] round %d  c=%-3s %-18s %8s req/s\n' "$n" "$total" "$round" "$c" "$s" "$rps" >&2
        done
    done
done
loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report
versions=$("$PY" - <<'EOF'
import sys, importlib
out = ["Python %s" % sys.version.split()[0]]
for m in ("fastapi", "starlette", "pydantic", "uvicorn", "h11", "uvloop", "httptools"):
    try:
        mod = importlib.import_module(m)
        out.append("%s %s" % (m, getattr(mod, "__version__", getattr(mod, "VERSION", "?"))))
    except ImportError:
        out.append("%s (not installed)" % m)
print(", ".join(out))
EOF
)
"$PY" "$HERE/report.py" --raw "$RAW" --out "$OUT" \
    --cpu "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" --ncpu "$ncpu" --kernel "$(uname -r)" \
    --versions "$versions" --wrk "$(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)" \
    --duration "$DURATION" --warmup "$WARMUP" --rounds "$ROUNDS" --body "$BENCH_BODY" \
    --server-cpu "$SERVER_CPU" --client-cpu "$CLIENT_CPU" \
    --loadavg-start "$loadavg_start" --loadavg-end "$loadavg_end" --restarts "$RESTARTS" --lost "$LOST"
echo "run.sh: wrote $OUT and $RAW" >&2
