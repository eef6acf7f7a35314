#!/usr/bin/env bash
# `make demo`: starts an embedded Atelier server on a temporary data dir with
# free ports, shows that the generated admin config works by driving the CLI
# (and curl with SigV4), then stops the server. KEEP=1 leaves it running.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$PWD/bin/atelier"
[ -x "$bin" ] || { echo "demo: $bin is missing; run 'make demo' (it builds first)" >&2; exit 1; }

# Python packages the digits example uses; bubblewrap sandboxes jobs.
pkgs=(python3-torch python3-torchvision python3-numpy python3-pil python3-sklearn bubblewrap
  jupyter-notebook python3-ipykernel python3-terminado python3-nbclient python3-nbconvert)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "demo: this is not a Debian-like system; install these packages (or their equivalents) and run again:" >&2
    echo "  ${missing[*]}" >&2
    exit 1
  fi
  echo "demo: installing ${missing[*]} (the digits example trains with PyTorch; bubblewrap sandboxes jobs; Jupyter runs notebooks)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
py=$(readlink -f /usr/bin/python3)

start=$(date +%s)
data="$(mktemp -d /tmp/atelier-demo.XXXXXX)"
log="$data/server.log"
pid=""
cleanup() {
  rc=$?
  if [ -n "$pid" ] && [ "${KEEP:-0}" != 1 ]; then
    # Service instances and job runners outlive a server restart by design:
    # stop what is still running, then make sure nothing is left behind.
    if kill -0 "$pid" 2>/dev/null; then
      timeout 30 "$bin" service stop digits >/dev/null 2>&1 || true
      timeout 30 "$bin" notebook stop dev >/dev/null 2>&1 && sleep 2 || true
    fi
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    pkill -TERM -f -- "$data/" 2>/dev/null && sleep 1 && pkill -KILL -f -- "$data/" 2>/dev/null || true
    echo "demo: server stopped"
    [ $rc -eq 0 ] && rm -rf "$data"
  fi
  if [ $rc -eq 0 ] && [ -n "${final:-}" ]; then
    echo "$final"
  fi
  if [ $rc -ne 0 ]; then
    echo "demo: FAILED (exit $rc); server log: $log" >&2
    tail -n 20 "$log" >&2 2>/dev/null || true
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

step "1. start an embedded server (SQLite metadata, free ports, data dir $data)"
# Engines: the Debian interpreter sees python3-torch (the python3 first on
# PATH may be another one).
cat >"$data/server.yaml" <<YAML
engines:
  - {name: pytorch, python: $py}
  - {name: python3, python: $py}
YAML
"$bin" server --data-dir "$data" --config "$data/server.yaml" --listen 127.0.0.1:0 --s3-listen 127.0.0.1:0 --notebook-listen 127.0.0.1:0 >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 200); do
  if [ -f "$data/admin.yaml" ]; then
    endpoint=$(sed -n 's/^endpoint: *//p' "$data/admin.yaml")
    if curl -fsS "$endpoint/healthz" >/dev/null 2>&1; then break; fi
  fi
  kill -0 "$pid" 2>/dev/null || { echo "demo: the server exited during start-up" >&2; cat "$log" >&2; exit 1; }
  sleep 0.1
done
curl -fsS "$endpoint/healthz" >/dev/null || { echo "demo: server not healthy after 20 s" >&2; exit 1; }
echo "server is up at $endpoint; it wrote $data/admin.yaml (mode $(stat -c %a "$data/admin.yaml"))"
export ATELIER_CONFIG="$data/admin.yaml"

step "2. the admin config works at once"
run "$bin" whoami

step "3. create a user and an access key for it"
run "$bin" user create demo-user
key_json=$("$bin" access-key create --user demo-user -o json)
ak=$(printf '%s' "$key_json" | sed -n 's/.*"access_key": *"\([^"]*\)".*/\1/p')
sk=$(printf '%s' "$key_json" | sed -n 's/.*"secret_key": *"\([^"]*\)".*/\1/p')
echo "created access key $ak for demo-user (its secret is shown once, at creation)"
run "$bin" user list
run "$bin" access-key list --user demo-user

step "4. the new user calls the REST API with curl and AWS SigV4 (service \"atelier\")"
printf '$ curl --aws-sigv4 "aws:amz:us-east-1:atelier" --user %s:*** %s/api/v1/whoami\n' "$ak" "$endpoint"
curl -fsS --aws-sigv4 "aws:amz:us-east-1:atelier" --user "$ak:$sk" "$endpoint/api/v1/whoami"; echo

step "5. errors are exact: demo-user may not create users"
ATELIER_CONFIG=/dev/null ATELIER_ENDPOINT="$endpoint" ATELIER_ACCESS_KEY="$ak" ATELIER_SECRET_KEY="$sk" \
  "$bin" user create intruder && { echo "demo: expected a 403" >&2; exit 1; } || true

step "6. upload a sample directory to OBS (the S3 API at $(sed -n 's/^s3_endpoint: *//p' "$data/admin.yaml")) and list it"
sample="$data/sample"
mkdir -p "$sample/train/cat" "$sample/train/dog" "$sample/val/cat" "$sample/.git"
for i in 1 2 3; do
  head -c $((2048 * i)) /dev/urandom >"$sample/train/cat/$i.bin"
  head -c $((1024 * i)) /dev/urandom >"$sample/train/dog/$i.bin"
done
echo "held-out sample" >"$sample/val/cat/1.txt"
echo "ref: refs/heads/main" >"$sample/.git/HEAD"   # skipped: .git is never uploaded unless --all
run "$bin" obs mb obs://demo
run "$bin" obs cp -r "$sample" obs://demo/data/
run "$bin" obs ls -r -l obs://demo/data/
objects=$("$bin" obs ls -r obs://demo/data/ -o json | grep -c '"key"' || true)

step "7. make a real dataset: scikit-learn's handwritten digits as PNGs (ImageFolder layout), upload it"
run /usr/bin/python3 examples/digits/make_dataset.py "$data/digits"
run "$bin" obs cp -r "$data/digits" obs://demo/digits/
echo "register it as a dataset: the layout is detected, the version validates every image header and"
echo "publishes a manifest that references each object with its ETag (nothing is copied)"
run "$bin" dataset create --name digits --type image_classification --source obs://demo/digits/
run "$bin" dataset version digits --follow
run "$bin" dataset get digits --version v1

step "8. train a PyTorch CNN from the dataset version (ModelArts-style --data_url/--train_url), following its log"
run "$bin" job create --name digits-cnn --code-dir examples/digits --boot-file train.py --engine pytorch \
  --input data_url=dataset:digits@v1 --output train_url=obs://demo/output/ --param epochs=6 --retries 1 --max-runtime 10m --follow
run "$bin" job metrics digits-cnn
run "$bin" obs ls -r obs://demo/output/model/

step "9. import the trained model from the job (config.json + customize_service.py subclassing PTServingBaseService)"
model_id=$("$bin" model import --name digits --version 1.0.0 --from-job digits-cnn -o json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["model_id"])')
run "$bin" model get "$model_id"

step "10. deploy it as an online service with 2 instances (ready only after the model loaded and a warm-up request passed)"
run "$bin" service deploy --name digits --model "$model_id" --instances 2 --stop-after 2h --wait
service_json=$("$bin" service get digits -o json)
url=$(printf '%s' "$service_json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["access_address"])')
run "$bin" service get digits

step "11. send every validation image to POST /v1/infers/{service_id} (multipart, X-Auth-Token), as ModelArts clients do"
token=$("$bin" token create --duration 1h -o json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
one=$(ls "$data/digits/val/7" | head -1)
printf '$ curl -F images=@val/7/%s -H "X-Auth-Token: ***" %s\n' "$one" "$url"
curl -fsS -F "images=@$data/digits/val/7/$one" -H "X-Auth-Token: $token" "$url"; echo
accuracy=$(/usr/bin/python3 examples/digits/predict.py --url "$url" --token "$token" --data "$data/digits/val" | tee /dev/stderr | sed -n 's/^accuracy=//p')
run "$bin" service stats digits
stats=$("$bin" service stats digits -o json)
p50=$(printf '%s' "$stats" | /usr/bin/python3 -c 'import json,sys; print(round(json.load(sys.stdin)["p50_ms"]))')
p99=$(printf '%s' "$stats" | /usr/bin/python3 -c 'import json,sys; print(round(json.load(sys.stdin)["p99_ms"]))')

step "12. a notebook on the same engine: Jupyter behind the server, on an origin of its own, stopped when idle"
run "$bin" notebook create --name dev --idle-stop 60m --wait --timeout 3m
run "$bin" notebook get dev
printf '$ %s notebook url dev\n' "$bin"
"$bin" notebook url dev | sed 's/code=.*/code=…  (single use, valid for a minute)/'
run "$bin" notebook stop dev

if [ "${KEEP:-0}" = 1 ]; then
  echo
  echo "KEEP=1: the server keeps running (pid $pid). Use it with:"
  echo "  export ATELIER_CONFIG=$data/admin.yaml; $bin user list"
  endpoint=$(sed -n 's/^endpoint: *//p' "$data/admin.yaml")
  echo "The web console: $endpoint/console/ — sign in with the link that"
  echo "  ATELIER_CONFIG=$data/admin.yaml $bin console"
  echo "prints (single use, valid for a minute), or with the key pair in $data/admin.yaml."
  echo "Stop it with: kill $pid"
fi
echo
echo "Next: atelier job logs digits-cnn · atelier job metrics digits-cnn · atelier model get $model_id ·"
echo "      atelier service stats digits · atelier usage · docs/training.md · docs/serving.md"
if [ "${KEEP:-0}" != 1 ]; then
  "$bin" service stop digits >/dev/null && echo "demo: service stopped"
  "$bin" service delete digits >/dev/null 2>&1 || true
  "$bin" notebook delete dev --yes >/dev/null 2>&1 && sleep 2 || true
fi
final="demo: accuracy=$accuracy p50_ms=$p50 p99_ms=$p99 seconds=$(( $(date +%s) - start ))"
