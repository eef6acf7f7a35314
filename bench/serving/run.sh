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
#   ILEAVE [90s]          measured time of the interleaved run of each concurrency (the
#                         throughput ratios): ILEAVE_TARGETS loaded in turn, SLICE [250ms] each
#   ILEAVE_TARGETS ["gateway-nolimit nginx gateway nginx-rid"]   the first two are the headline pair
#   ROUNDS [3]            rounds of the sequential runs (absolute figures, latency, CPU per
#                         request); each runs every target once per concurrency, in rotated order
#   PROXY_CPU [0] LOAD_CPU [1]   cores for proxy+backend and for the load generator
#   TARGETS ["direct nginx gateway gateway-nolimit gateway-nethttp"]   sequential runs
#                         (also: go-reverseproxy, nginx-rid)
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
ILRAW=${OUT%.md}-interleaved.jsonl
CONCS=${CONCS:-"1 16 64"}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-2s}
ROUNDS=${ROUNDS:-3}
ILEAVE=${ILEAVE:-90s}
SLICE=${SLICE:-250ms}
ILEAVE_TARGETS=${ILEAVE_TARGETS:-"gateway-nolimit nginx gateway nginx-rid"}
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
if [[ -z $NGINX ]]; then
	TARGETS=$(printf '%s\n' $TARGETS | grep -v '^nginx' | xargs || true)
	ILEAVE_TARGETS=$(printf '%s\n' $ILEAVE_TARGETS | grep -v '^nginx' | xargs || true)
fi
# Every server either phase loads, each once.
ALL=$(printf '%s\n' direct $TARGETS $ILEAVE_TARGETS | awk 'NF && !seen[$0]++' | xargs)

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
for t in $ALL; do
	case $t in
	gateway) start_gateway gateway ;;                            # Atelier's defaults: 8 requests at a time per instance
	gateway-nolimit) start_gateway gateway-nolimit -concurrency -1 ;; # no per-instance limit, like nginx
	gateway-nethttp) start_gateway gateway-nethttp -nethttp ;;        # inside net/http only, as before the Front
	go-reverseproxy) start_gateway go-reverseproxy -reverseproxy ;;   # net/http/httputil.ReverseProxy, for reference
	esac
done

start_nginx() { # name [extra directives of the location]
	local name=$1 extra=${2:-} port dir=$WORK/$1
	port=$(freeport)
	mkdir -p "$dir"
	cat >"$dir/nginx.conf" <<NGINX
# One worker, no access log, keep-alive to the upstream.
worker_processes 1;
daemon off;
master_process off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    keepalive_requests 1000000;
    upstream backend {
        server $BACKEND;
        keepalive 64;
        keepalive_requests 1000000;
    }
    server {
        listen 127.0.0.1:$port;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            $extra
        }
    }
}
NGINX
	taskset -c "$PROXY_CPU" "$NGINX" -c "$dir/nginx.conf" -p "$dir" >"$WORK/$name.log" 2>&1 &
	PID[$name]=$!
	PIDS+=("${PID[$name]}")
	for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.05; done
	URL[$name]=http://127.0.0.1:$port/
}
for t in $ALL; do
	case $t in
	nginx) start_nginx nginx ;;
	# The same headers to the backend as the gateway sends: a request id too.
	nginx-rid) start_nginx nginx-rid 'proxy_set_header X-Request-Id $request_id;' ;;
	esac
done
for t in $ALL; do
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

# The throughput ratios: for each concurrency, one interleaved run of the
# load generator (see bench/serving/loadgen/interleave.go): the targets are
# loaded in turn, SLICE at a time, so every cycle's ratio compares
# measurements made within a second of each other, which this shared VM's
# drifting speed (tens of percent within minutes) cannot skew the way it
# skews runs made one after the other. A proxy idles while the others are
# loaded, so its CPU time over the run is its own requests'.
: >"$ILRAW"
ilt=()
for t in $ILEAVE_TARGETS; do [[ -n ${URL[$t]:-} ]] && ilt+=("$t"); done
if [[ ${#ilt[@]} -ge 2 ]]; then
	for c in $CONCS; do
		args=()
		ticks=()
		for t in "${ilt[@]}"; do args+=(-url "${URL[$t]}"); ticks+=("$(cpu_ticks "${PID[$t]}")"); done
		labels=$(IFS=,; echo "${ilt[*]}")
		out=$(taskset -c "$LOAD_CPU" "$BIN/serving-loadgen" "${args[@]}" -label "$labels" -slice "$SLICE" -c "$c" \
			-d "$ILEAVE" -warmup "$WARMUP" -method POST -body "$BODY" -header 'Content-Type: application/json' -format json) || {
			log "interleaved loadgen c=$c failed: $out"
			continue
		}
		after=()
		for t in "${ilt[@]}"; do after+=("$(cpu_ticks "${PID[$t]}")"); done
		printf '%s\n' "$out" | "$PY" -I -c '
import json, sys, os
o = json.load(sys.stdin)
hz = os.sysconf("SC_CLK_TCK")
n = len(o["targets"])
before, after = sys.argv[1:1 + n], sys.argv[1 + n:1 + 2 * n]
wu, d = float(sys.argv[-2]), float(sys.argv[-1])
frac = d / (d + wu)  # the warm-up cycles load every target alike
for t, a, b in zip(o["targets"], before, after):
    # CPU of the proxy per counted request (the few requests left in flight at a slice end are not counted)
    t["proxy_cpu_us"] = (int(b) - int(a)) / hz * 1e6 * frac / max(t.get("requests", 0), 1)
print(json.dumps(o))' "${ticks[@]}" "${after[@]}" "${WARMUP%s}" "${ILEAVE%s}" >>"$ILRAW"
		log "interleaved c=$c: $(tail -1 "$ILRAW" | "$PY" -I -c '
import json, statistics, sys
o = json.load(sys.stdin)
ts = o["targets"]
r = [c["rps"][0] / c["rps"][1] for c in o["cycles"] if c["rps"][1]]
print("%s/%s median cycle ratio %.3f over %d cycles; " % (ts[0]["label"], ts[1]["label"], statistics.median(r), len(r))
      + "  ".join("%s %.0f req/s %.1f us/req" % (t["label"], t["rps"], t["proxy_cpu_us"]) for t in ts))')"
	done
fi

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
"$PY" -I - "$RAW" "$OUT" "$WORK/machine.txt" "$DURATION" "$WARMUP" "$ROUNDS" "$BODY" "$VERSIONS" "$PROFILE_TXT" \
	"$ILRAW" "$ILEAVE" "$SLICE" <<'PY'
import json, statistics, sys
raw, out, machine, duration, warmup, rounds, body, versions, profile, ilraw, ileave, slice_ = sys.argv[1:13]
rows = [json.loads(l) for l in open(raw) if l.strip()]
il = [json.loads(l) for l in open(ilraw) if l.strip()]
targets = [t for t in ["direct", "nginx", "nginx-rid", "gateway", "gateway-nolimit", "gateway-nethttp", "go-reverseproxy"] if any(r["target"] == t for r in rows)]
concs = sorted({r["concurrency"] for r in rows})
def runs(t, c): return [r for r in rows if r["target"] == t and r["concurrency"] == c]
def med(t, c, k):
    v = [r.get(k, 0) for r in runs(t, c)]
    return statistics.median(v) if v else float("nan")
names = {"direct": "direct (no proxy)", "nginx": "nginx", "gateway": "Atelier gateway (default: 8 at a time per instance)",
         "gateway-nolimit": "Atelier gateway, no per-instance limit (as nginx)",
         "gateway-nethttp": "Atelier gateway inside net/http only (no Front; default limit)",
         "go-reverseproxy": "Go httputil.ReverseProxy (reference)",
         "nginx-rid": "nginx sending a request id too (the gateway's headers)"}
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
  f"keep-alive connection per worker, POST `{body}`) to core 1. The throughput ratios come from one interleaved run per "
  f"concurrency: the targets loaded in turn, {slice_} at a time (A B, B A, …), for {ileave} after {warmup} of warm-up, each "
  f"cycle's ratio pairing measurements made within a second of each other. Absolute figures, latency and CPU per "
  f"request also come from runs one after the other: {warmup} of warm-up then {duration} measured, "
  f"{rounds} rounds, the order of the targets rotated each round, medians over the rounds. "
  f"The Python runtime benchmark (Atelier's instance server against FastAPI/uvicorn) is in `serving-runtime.md`. "
  f"**Read the ratios, not the absolute numbers.**\n")
w("## Machine\n\n```\n" + open(machine).read().rstrip() + "\n```\n")
w("## Versions\n\n| | |\n|---|---|\n" + versions + "\n")
w("## Summary\n")
def added(t, c, k):
    if t not in targets or "direct" not in targets: return float("nan")
    return med(t, c, k) - med("direct", c, k)
def quart(v):
    v = sorted(v)
    if not v: return float("nan"), float("nan"), float("nan")
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return q[0], statistics.median(v), q[2]
def cyc(o, a, b):
    labels = [t["label"] for t in o["targets"]]
    if a not in labels or b not in labels: return []
    i, j = labels.index(a), labels.index(b)
    return [c["rps"][i] / c["rps"][j] for c in o["cycles"] if c["rps"][j]]
def icell(o, a, b):
    r = cyc(o, a, b)
    if not r: return "—"
    lo, m, hi = quart(r)
    return f"{m:.3f}× ({lo:.2f}–{hi:.2f})"
def icpu(o, t):
    for x in o["targets"]:
        if x["label"] == t: return "%.1f" % x["proxy_cpu_us"]
    return "—"
if il:
    head = [t["label"] for t in il[0]["targets"]][:2]
    w(f"**Throughput target: {head[0]}/{head[1]} ≥ 1.0×.** It compares like with like: the gateway with nginx's settings "
      "(no per-instance concurrency limit: every request goes straight to the instance). With its default limit "
      "(8 requests at a time per instance, the rest wait in the gateway) the backend never sees more than 8 requests at "
      "once, which on a core it shares with the proxy costs the backend's batching; that column is shown beside it. "
      "The gateway sends the instance one header nginx does not, `X-Request-Id` (the instance's log lines and error "
      "answers carry it), which the backend parses on every request; nginx configured to send one too "
      "(`proxy_set_header X-Request-Id $request_id`) is the like-for-like reference.\n")
    w(f"Each ratio is the median over the cycles of the interleaved run of each cycle's throughput ratio, with the "
      f"quartiles of the cycles' ratios in brackets; proxy CPU is the process's user+system time over the run divided by "
      f"the requests counted.\n")
    w("| concurrency | cycles | gateway/nginx, no limit (as nginx) | target ≥ 1.0× | cycles ≥ 1.0 | gateway/nginx, default limit 8 | "
      "gateway, no limit/nginx sending a request id | proxy CPU µs per request: gateway no limit, default, nginx, nginx with request id |")
    w("|---:|---:|---:|---|---:|---:|---:|---:|")
    for o in il:
        r = cyc(o, "gateway-nolimit", "nginx")
        m = statistics.median(r) if r else float("nan")
        ok = "met" if m >= 1.0 else "**not met**"
        above = "%d%%" % round(100 * sum(x >= 1.0 for x in r) / len(r)) if r else "—"
        w(f"| {o['concurrency']} | {len(o['cycles'])} | {icell(o, 'gateway-nolimit', 'nginx')} | {ok} | {above} | "
          f"{icell(o, 'gateway', 'nginx')} | {icell(o, 'gateway-nolimit', 'nginx-rid')} | "
          f"{icpu(o, 'gateway-nolimit')}, {icpu(o, 'gateway')}, {icpu(o, 'nginx')}, {icpu(o, 'nginx-rid')} |")
    w("")
    w("Requests per second over the interleaved runs (each target's counted requests ÷ its slices' time):\n")
    labs = [t["label"] for t in il[0]["targets"]]
    w("| concurrency | " + " | ".join(names.get(l, l) for l in labs) + " |")
    w("|---:|" + "---:|" * len(labs))
    for o in il:
        w(f"| {o['concurrency']} | " + " | ".join("%.0f" % t["rps"] for t in o["targets"]) + " |")
    w("")
def round_ratios(t, c):
    return [a["rps"] / b["rps"] for a, b in zip(sorted(runs(t, c), key=lambda r: r["round"]),
                                                 sorted(runs("nginx", c), key=lambda r: r["round"])) if b.get("rps")]
def rounds_ratio(t, c):
    return " ".join("%.2f" % x for x in round_ratios(t, c))
def paired(t, c):
    v = round_ratios(t, c)
    return statistics.median(v) if v else float("nan")
if rows:
    w("The runs one after the other give the same ratios with far more noise (each round's ratio pairs runs made up to "
      "a minute apart; listed):\n")
    w("| concurrency | gateway/nginx, no limit | gateway/nginx, default limit 8 | inside net/http only/nginx |")
    w("|---:|---:|---:|---:|")
    for c in concs:
        w(f"| {c} | {paired('gateway-nolimit', c):.2f}× (rounds: {rounds_ratio('gateway-nolimit', c)}) | "
          f"{paired('gateway', c):.2f}× (rounds: {rounds_ratio('gateway', c)}) | {paired('gateway-nethttp', c):.2f}× |")
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
  out.rsplit("/", 1)[-1].replace(".md", "-raw.jsonl") + "`; the interleaved runs, one JSON line per concurrency with "
  "every cycle's figures: `bench/results/" + out.rsplit("/", 1)[-1].replace(".md", "-interleaved.jsonl") + "`.\n")
if profile.strip():
    w("## Gateway CPU profile (pprof, c=16, extra run)\n\n```\n" + profile.rstrip() + "\n```\n")
w("## How to run\n\n```sh\nbench/serving/run.sh                      # ~11 min: 3 × 92 s interleaved, then 3 concurrencies × 5 targets × 3 rounds × 7 s\n"
  "ILEAVE=20s ROUNDS=0 CONCS=16 bench/serving/run.sh   # the headline ratio only, quickly\nPPROF=1 bench/serving/run.sh              # adds the gateway's CPU profile\n```\n")
open(out, "w").write("\n".join(L))
PY
log "done: $OUT"
