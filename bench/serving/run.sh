#!/usr/bin/env bash
# bench/serving/run.sh — the inference gateway's overhead: a trivial Go HTTP
# backend called directly, through Atelier's gateway and through nginx
# (Debian, one worker, keep-alive to the upstream), with the proxy and the
# backend pinned to one core and the load generator to another. Writes
# bench/results/serving.md and serving-raw.jsonl. See bench/README.md.
#
# Every knob is an environment variable (defaults in brackets):
#   CONCS ["1 16 64"]     concurrencies (connections of the load generator)
#   DURATION [5s]        measured time of each run; WARMUP [2s] before it, not measured
#   ROUNDS [6]            rounds; each runs every target once per concurrency, in rotated order
#   PROXY_CPU [0] LOAD_CPU [1]   cores for proxy+backend and for the load generator
#   TARGETS ["direct nginx gateway gateway-nolimit gateway-nethttp"]   (also: go-reverseproxy)
#   BODY ['{"inputs":[[1.0,2.0,3.0,4.0]]}']   the POST body (JSON)
#   PPROF [0]             1: CPU-profile the gateway in an extra, unmeasured run at c=16
#   PY [/usr/bin/python3]  for the report (standard library only)
#   WORK [bench/.work]    scratch space; KEEP [0] 1: keep it
#   OUT [bench/results/serving.md]
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$ROOT/bench/.bin
OUT=${OUT:-$ROOT/bench/results/serving.md}
RAW=${OUT%.md}-raw.jsonl
CONCS=${CONCS:-"1 16 64"}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-2s}
ROUNDS=${ROUNDS:-6}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
TARGETS=${TARGETS:-"direct nginx gateway gateway-nolimit gateway-nethttp"}
BODY=${BODY:-'{"inputs":[[1.0,2.0,3.0,4.0]]}'}
PPROF=${PPROF:-0}
KEEP=${KEEP:-0}
PY=${PY:-/usr/bin/python3} # the standard library is enough; /usr/bin avoids slow pyenv shims

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

mkdir -p "$BIN" "${WORK:-$ROOT/bench/.work}" "$(dirname "$OUT")"
WORK=$(mktemp -d "${WORK:-$ROOT/bench/.work}/serving-XXXXXX")
PIDS=()
cleanup() {
	local rc=$?
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	done
	if [[ $KEEP == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ $(nproc) -lt 2 ]]; then log "needs 2 cores (proxy+backend on one, the load generator on another)"; exit 1; fi

# ---------------------------------------------------------------- build
log "building the backend, the gateway and the load generator"
for p in backend gateway loadgen; do go build -o "$BIN/serving-$p" "./bench/serving/$p"; done
BUILT_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
TREE_STATE=""
if [[ -n $(git status --porcelain -- internal/serving bench/serving 2>/dev/null) ]]; then
	TREE_STATE=" + uncommitted changes in internal/serving or bench/serving"
fi
if ! command -v nginx >/dev/null; then
	log "nginx missing: apt-get install -y nginx"
	if ! (apt-get install -y nginx >&2 || (apt-get update >&2 && apt-get install -y nginx >&2)); then
		log "cannot install nginx: it is not measured"
	fi
fi
NGINX=$(command -v nginx || true)
[[ -z $NGINX ]] && TARGETS=${TARGETS//nginx/}

# ---------------------------------------------------------------- servers
waitfile() { for _ in $(seq 1 200); do [[ -s $1 ]] && return 0; sleep 0.05; done; log "no $1"; exit 1; }
freeport() { "$PY" -I -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A URL PID

taskset -c "$PROXY_CPU" "$BIN/serving-backend" -addr-file "$WORK/backend.addr" >"$WORK/backend.log" 2>&1 &
PID[direct]=$!
PIDS+=("${PID[direct]}")
waitfile "$WORK/backend.addr"
BACKEND=$(cat "$WORK/backend.addr")
URL[direct]=http://$BACKEND/

start_gateway() { # name flags...
	local name=$1; shift
	taskset -c "$PROXY_CPU" "$BIN/serving-gateway" -backend "$BACKEND" -addr-file "$WORK/$name.addr" "$@" >"$WORK/$name.log" 2>&1 &
	PID[$name]=$!
	PIDS+=("${PID[$name]}")
	waitfile "$WORK/$name.addr"
	URL[$name]=http://$(cat "$WORK/$name.addr")/v1/infers/bench
}
for t in $TARGETS; do
	case $t in
	gateway) start_gateway gateway ;;                            # Atelier's defaults: 8 requests at a time per instance
	gateway-nolimit) start_gateway gateway-nolimit -concurrency -1 ;; # no per-instance limit, like nginx
	gateway-nethttp) start_gateway gateway-nethttp -nethttp ;;        # inside net/http only, as before the Front
	go-reverseproxy) start_gateway go-reverseproxy -reverseproxy ;;   # net/http/httputil.ReverseProxy, for reference
	esac
done

if [[ -n $NGINX && $TARGETS == *nginx* ]]; then
	NPORT=$(freeport)
	mkdir -p "$WORK/nginx"
	cat >"$WORK/nginx/nginx.conf" <<NGINX
# One worker, no access log, keep-alive to the upstream.
worker_processes 1;
daemon off;
master_process off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $WORK/nginx/body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    keepalive_requests 1000000;
    upstream backend {
        server $BACKEND;
        keepalive 64;
        keepalive_requests 1000000;
    }
    server {
        listen 127.0.0.1:$NPORT;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
NGINX
	taskset -c "$PROXY_CPU" "$NGINX" -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" >"$WORK/nginx.log" 2>&1 &
	PID[nginx]=$!
	PIDS+=("${PID[nginx]}")
	for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$NPORT/" && break; sleep 0.05; done
	URL[nginx]=http://127.0.0.1:$NPORT/
fi
for t in $TARGETS; do
	code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d "$BODY" "${URL[$t]}")
	[[ $code == 200 ]] || { log "$t does not answer 200 ($code) at ${URL[$t]}"; exit 1; }
done

# ---------------------------------------------------------------- machine
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "nproc: $(nproc)   cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)   kernel: $(uname -r)"
	echo "load average before the runs: $LOAD_BEFORE"
	free -g | head -2
} >"$WORK/machine.txt"

# ---------------------------------------------------------------- runs
# cpu_ticks PID: user+system clock ticks of a process so far.
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
: >"$RAW"
targets=($TARGETS)
for round in $(seq 1 "$ROUNDS"); do
	for c in $CONCS; do
		# Rotate the order every round so no target always runs first.
		n=${#targets[@]}
		for i in $(seq 0 $((n - 1))); do
			t=${targets[$(((i + round - 1) % n))]}
			proxy=${PID[$t]}
			a=$(cpu_ticks "$proxy")
			b0=$(cpu_ticks "${PID[direct]}")
			out=$(taskset -c "$LOAD_CPU" "$BIN/serving-loadgen" -url "${URL[$t]}" -c "$c" -d "$DURATION" -warmup "$WARMUP" \
				-method POST -body "$BODY" -header 'Content-Type: application/json' -format json -label "$t") || {
				log "loadgen $t c=$c failed: $out"
				out='{"requests":0,"errors":1}'
			}
			b=$(cpu_ticks "$proxy")
			b1=$(cpu_ticks "${PID[direct]}")
			printf '%s\n' "$out" | "$PY" -I -c '
import json, sys, os
o = json.load(sys.stdin)
hz = os.sysconf("SC_CLK_TCK")
t, c, r, pa, pb, ba, bb, wu, d = sys.argv[1:10]
o.update(target=t, concurrency=int(c), round=int(r))
# CPU of the proxy (and of the backend) per measured request, warm-up included in the CPU time
n = max(o.get("requests", 0), 1)
frac = float(d) / (float(d) + float(wu))
o["proxy_cpu_us"] = (int(pb) - int(pa)) / hz * 1e6 * frac / n if t != "direct" else 0
o["backend_cpu_us"] = (int(bb) - int(ba)) / hz * 1e6 * frac / n
print(json.dumps(o))' "$t" "$c" "$round" "$a" "$b" "$b0" "$b1" "${WARMUP%s}" "${DURATION%s}" >>"$RAW"
			log "round $round c=$c $t: $(tail -1 "$RAW" | "$PY" -I -c 'import json,sys; o=json.load(sys.stdin); print("%.0f req/s  p50 %.3f  p99 %.3f ms  errors %d  proxy %.1f us/req" % (o.get("rps",0), o.get("p50_ms",0), o.get("p99_ms",0), o.get("errors",0)+o.get("non_2xx",0), o["proxy_cpu_us"]))')"
		done
	done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average after the runs: $LOAD_AFTER" >>"$WORK/machine.txt"

# ---------------------------------------------------------------- profile
PROFILE_TXT=""
if [[ $PPROF == 1 && $TARGETS == *gateway* ]]; then
	log "profiling the gateway at c=16 (extra run, not measured)"
	start_gateway gateway-pprof -cpuprofile "$WORK/gateway.pprof"
	taskset -c "$LOAD_CPU" "$BIN/serving-loadgen" -url "${URL[gateway-pprof]}" -c 16 -d "$DURATION" -warmup 0s \
		-method POST -body "$BODY" -header 'Content-Type: application/json' >/dev/null
	kill -TERM "${PID[gateway-pprof]}"
	wait "${PID[gateway-pprof]}" 2>/dev/null || true
	PROFILE_TXT=$(go tool pprof -top -nodecount=25 "$BIN/serving-gateway" "$WORK/gateway.pprof" 2>/dev/null | sed -n '1,40p')
fi

# ---------------------------------------------------------------- report
log "writing $OUT"
VERSIONS=$(
	echo "| go | $(go version) |"
	[[ -n $NGINX ]] && echo "| nginx | $("$NGINX" -v 2>&1 | sed 's/^nginx version: //') (Debian package) |"
	echo "| atelier | commit $BUILT_COMMIT$TREE_STATE, built $(date -u '+%Y-%m-%d %H:%M UTC') |"
)
"$PY" -I - "$RAW" "$OUT" "$WORK/machine.txt" "$DURATION" "$WARMUP" "$ROUNDS" "$BODY" "$VERSIONS" "$PROFILE_TXT" <<'PY'
import json, statistics, sys
raw, out, machine, duration, warmup, rounds, body, versions, profile = sys.argv[1:10]
rows = [json.loads(l) for l in open(raw) if l.strip()]
targets = [t for t in ["direct", "nginx", "gateway", "gateway-nolimit", "gateway-nethttp", "go-reverseproxy"] if any(r["target"] == t for r in rows)]
concs = sorted({r["concurrency"] for r in rows})
def runs(t, c): return [r for r in rows if r["target"] == t and r["concurrency"] == c]
def med(t, c, k):
    v = [r.get(k, 0) for r in runs(t, c)]
    return statistics.median(v) if v else float("nan")
names = {"direct": "direct (no proxy)", "nginx": "nginx", "gateway": "Atelier gateway (default: 8 at a time per instance)",
         "gateway-nolimit": "Atelier gateway, no per-instance limit (as nginx)",
         "gateway-nethttp": "Atelier gateway inside net/http only (no Front; default limit)",
         "go-reverseproxy": "Go httputil.ReverseProxy (reference)"}
L = []
w = L.append
w("# Serving benchmark: the inference gateway against nginx\n")
w(f"Generated by `bench/serving/run.sh`. A trivial Go HTTP backend (`bench/serving/backend`: reads the body, answers "
  f"66 bytes of JSON) is called directly, through Atelier's gateway (`bench/serving/gateway`: `internal/serving/gateway` "
  f"serving one static route, auth none, as mounted in the server — its Front's HTTP/1.1 loop takes the inference "
  f"requests, net/http the rest — but without the REST API around it), through nginx "
  f"(one worker, `access_log off`, upstream `keepalive 64`, `proxy_http_version 1.1`, `proxy_set_header Connection \"\"`) "
  f"and, for reference, through the gateway as a plain `net/http` handler (without the Front, as before it existed). "
  f"Proxy and backend are pinned to core 0 (`taskset`), the load generator (`bench/serving/loadgen`: closed loop, one "
  f"keep-alive connection per worker, POST `{body}`) to core 1. Each run is {warmup} of warm-up then {duration} measured; "
  f"{rounds} rounds, the order of the targets rotated each round; figures are medians over the rounds. "
  f"The Python runtime benchmark (Atelier's instance server against FastAPI/uvicorn) is in `serving-runtime.md`. "
  f"**Read the ratios, not the absolute numbers.**\n")
w("## Machine\n\n```\n" + open(machine).read().rstrip() + "\n```\n")
w("## Versions\n\n| | |\n|---|---|\n" + versions + "\n")
w("## Summary\n")
def ratio(t, c, k="rps"):
    if "nginx" not in targets or t not in targets: return float("nan")
    return med(t, c, k) / med("nginx", c, k)
def added(t, c, k):
    if t not in targets or "direct" not in targets: return float("nan")
    return med(t, c, k) - med("direct", c, k)
def round_ratios(t, c):
    # Each round's ratio pairs runs made minutes apart at most: the machine's
    # drift (a shared VM) cancels out better than in a ratio of medians.
    return [a["rps"] / b["rps"] for a, b in zip(sorted(runs(t, c), key=lambda r: r["round"]),
                                                 sorted(runs("nginx", c), key=lambda r: r["round"])) if b.get("rps")]
def rounds_ratio(t, c):
    return " ".join("%.2f" % x for x in round_ratios(t, c))
def paired(t, c):
    v = round_ratios(t, c)
    return statistics.median(v) if v else float("nan")
w("The throughput target compares like with like: the gateway with nginx's settings (no per-instance concurrency limit: "
  "every request goes straight to the instance). With its default limit (8 requests at a time per instance, the rest "
  "wait in the gateway) the backend never sees more than 8 requests at once, which on a core it shares with the proxy "
  "costs the backend's batching; that column is shown beside it.\n")
w("Ratios are the median over the rounds of each round's throughput ratio (listed); the table of runs below gives "
  "medians of the absolute figures.\n")
w("| concurrency | gateway/nginx, no limit (as nginx) | target ≥ 1.0× | gateway/nginx, default limit 8 | inside net/http only/nginx | proxy CPU per request: no limit, default, nginx |")
w("|---:|---:|---|---:|---:|---:|")
for c in concs:
    g = paired("gateway-nolimit", c)
    w(f"| {c} | {g:.2f}× (rounds: {rounds_ratio('gateway-nolimit', c)}) | {'met' if g >= 1.0 else '**not met**'} | "
      f"{paired('gateway', c):.2f}× (rounds: {rounds_ratio('gateway', c)}) | {paired('gateway-nethttp', c):.2f}× | "
      f"{med('gateway-nolimit', c, 'proxy_cpu_us'):.1f} µs, {med('gateway', c, 'proxy_cpu_us'):.1f} µs, {med('nginx', c, 'proxy_cpu_us'):.1f} µs |")
w("")
w("Latency added to the direct call (medians of the rounds; at 16 and 64 connections every target runs its core flat out, "
  "so latency there is mostly queueing, about concurrency ÷ throughput):\n")
w("| concurrency | P50 added: gateway, no limit | default | nginx | P99 added: gateway, no limit | default | nginx | target (no limit, as nginx) |")
w("|---:|---:|---:|---:|---:|---:|---:|---|")
for c in concs:
    a99 = added("gateway-nolimit", c, "p99_ms")
    tgt = "—"
    if c == 16:
        tgt = "P99 added ≤ 1 ms: " + ("met" if a99 <= 1.0 else "**not met**")
    w(f"| {c} | {added('gateway-nolimit', c, 'p50_ms'):+.3f} ms | {added('gateway', c, 'p50_ms'):+.3f} ms | "
      f"{added('nginx', c, 'p50_ms'):+.3f} ms | {a99:+.3f} ms | {added('gateway', c, 'p99_ms'):+.3f} ms | "
      f"{added('nginx', c, 'p99_ms'):+.3f} ms | {tgt} |")
w("")
w("## Runs (medians over the rounds)\n")
w("| concurrency | target | req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | errors | proxy CPU µs/request | backend CPU µs/request |")
w("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for c in concs:
    for t in targets:
        errs = sum(r.get("errors", 0) + r.get("non_2xx", 0) for r in runs(t, c))
        pc = "—" if t == "direct" else "%.1f" % med(t, c, "proxy_cpu_us")
        w(f"| {c} | {names[t]} | {med(t, c, 'rps'):.0f} | {med(t, c, 'p50_ms'):.3f} | {med(t, c, 'p90_ms'):.3f} | "
          f"{med(t, c, 'p99_ms'):.3f} | {med(t, c, 'p999_ms'):.3f} | {errs} | {pc} | {med(t, c, 'backend_cpu_us'):.1f} |")
w("")
w("Proxy and backend CPU are the processes' user+system time (from `/proc/PID/stat`) over the run, warm-up share "
  "removed, divided by the requests measured. Raw results, one JSON line per run: `bench/results/" +
  out.rsplit("/", 1)[-1].replace(".md", "-raw.jsonl") + "`.\n")
if profile.strip():
    w("## Gateway CPU profile (pprof, c=16, extra run)\n\n```\n" + profile.rstrip() + "\n```\n")
w("## How to run\n\n```sh\nbench/serving/run.sh                      # ~11 min: 3 concurrencies × 5 targets × 6 rounds × 7 s\n"
  "ROUNDS=1 DURATION=3s CONCS=16 bench/serving/run.sh   # a quick, rough run\nPPROF=1 bench/serving/run.sh              # adds the gateway's CPU profile\n```\n")
open(out, "w").write("\n".join(L))
PY
log "done: $OUT"
