#!/usr/bin/env bash
# bench/datasets/run.sh — making and checking a dataset version of 100,000
# objects, against what a peer tool spends on the same objects, in the same run
# on the same server:
#   (a) `atelier dataset version --follow` (list, read every image header,
#       validate, write the manifest) — against `aws s3 ls --recursive` of the
#       prefix (the listing alone, the floor of any tool that looks at every
#       object) and against a copy-based snapshot, `aws s3 cp --recursive` of the
#       prefix to another (server-side copies: what a version that copies costs);
#   (b) `atelier dataset validate` (the same reads, no manifest);
#   (c) `atelier dataset get --version` (the tamper check: every object's ETag
#       against the version's);
#   (d) `atelier dataset diff` of two versions;
#   (e) with VERSIONED=1, (a) and (c) again over a copy of the data in a
#       versioned bucket, where the version pins every object's version id
#       and records those pins (the rows lifecycle rules consult) — against
#       (a) and (c) over the unversioned bucket, in the same rounds.
# Writes bench/results/datasets.md.
#
# Knobs (defaults in brackets):
#   OBJECTS [100000] CLASSES [100]   the data set (bench/datasets/gendata.py)
#   ROUNDS [3]           interleaved rounds of (a)–(d) and the listing peer
#   VERSIONED [1]        also measure (e)
#   COPY_OBJECTS [10000] objects the copy peer copies (a prefix of the data set;
#                        its time is scaled to OBJECTS in the ratio, and said so)
#   ATL_BIN              use this atelier binary instead of building bench/.bin/atelier
#   WORK [bench/.work]   scratch space;  OUT [bench/results/datasets.md];  KEEP [0]
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$ROOT/bench/.bin
OUT=${OUT:-$ROOT/bench/results/datasets.md}
OBJECTS=${OBJECTS:-100000}
CLASSES=${CLASSES:-100}
ROUNDS=${ROUNDS:-3}
COPY_OBJECTS=${COPY_OBJECTS:-10000}
KEEP=${KEEP:-0}
VERSIONED=${VERSIONED:-1}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
now() { printf '%s' "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a-b }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR+1)/2]; else printf "%.3f\n", (v[NR/2]+v[NR/2+1])/2 }'; }

mkdir -p "$BIN" "${WORK:-$ROOT/bench/.work}" "$(dirname "$OUT")"
WORK=$(mktemp -d "${WORK:-$ROOT/bench/.work}/datasets-XXXXXX")
SERVER_PID=""
cleanup() {
	local rc=$?
	if [[ -n $SERVER_PID ]]; then
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
command -v aws >/dev/null || { echo "bench/datasets: awscli is missing (apt-get install awscli)" >&2; exit 1; }

log "starting atelier server"
"$ATL" server --data-dir "$WORK/atelier" --listen 127.0.0.1:0 --s3-listen 127.0.0.1:0 --notebook-listen 127.0.0.1:0 >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 200); do
	if [[ -f $WORK/atelier/admin.yaml ]]; then
		api=$(sed -n 's/^endpoint: *//p' "$WORK/atelier/admin.yaml")
		curl -fsS "$api/healthz" >/dev/null 2>&1 && break
	fi
	sleep 0.1
done
export ATELIER_CONFIG=$WORK/atelier/admin.yaml
s3=$(sed -n 's/^s3_endpoint: *//p' "$ATELIER_CONFIG")
export AWS_ACCESS_KEY_ID=$(sed -n 's/^access_key: *//p' "$ATELIER_CONFIG")
export AWS_SECRET_ACCESS_KEY=$(sed -n 's/^secret_key: *//p' "$ATELIER_CONFIG")
export AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
awss3() { aws --endpoint-url "$s3" s3 "$@"; }

log "generating $OBJECTS images in $CLASSES classes"
/usr/bin/python3 bench/datasets/gendata.py "$WORK/data" "$OBJECTS" "$CLASSES" >/dev/null
"$ATL" obs mb obs://bench >/dev/null
t0=$(now)
"$ATL" obs cp -r "$WORK/data" obs://bench/data/ >/dev/null
UPLOAD=$(sub "$(now)" "$t0")
log "uploaded in ${UPLOAD}s"
"$ATL" dataset create --name big --type image_classification --source obs://bench/data/ -o json >"$WORK/create.json"
if [[ $VERSIONED == 1 ]]; then
	"$ATL" obs mb obs://vbench >/dev/null
	"$ATL" obs versioning enable obs://vbench >/dev/null
	t0=$(now)
	"$ATL" obs cp -r "$WORK/data" obs://vbench/data/ >/dev/null
	log "uploaded to the versioned bucket in $(sub "$(now)" "$t0")s"
	"$ATL" dataset create --name vbig --type image_classification --source obs://vbench/data/ -o json >/dev/null
fi
FORMAT=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["data_format"], round(d["detection"]["confidence"], 2))' "$WORK/create.json")

: >"$WORK/times"
rec() { printf '%s %s\n' "$1" "$2" >>"$WORK/times"; }
for r in $(seq 1 "$ROUNDS"); do
	log "round $r/$ROUNDS"
	t0=$(now)
	n=$(awss3 ls --recursive s3://bench/data/ | wc -l)
	rec list "$(sub "$(now)" "$t0")"
	[[ $n -eq $OBJECTS ]] || { echo "aws s3 ls listed $n objects, want $OBJECTS" >&2; exit 1; }

	t0=$(now)
	"$ATL" dataset version big --name "r$r" --follow -o json >"$WORK/v$r.json" 2>/dev/null
	rec version "$(sub "$(now)" "$t0")"
	/usr/bin/python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); assert v["status"]=="published" and v["total_sample_count"]==int(sys.argv[2]), v' "$WORK/v$r.json" "$OBJECTS"

	t0=$(now)
	"$ATL" dataset validate big -o json >"$WORK/val$r.json"
	rec validate "$(sub "$(now)" "$t0")"

	t0=$(now)
	"$ATL" dataset get big --version "r$r" -o json >"$WORK/get$r.json"
	rec check "$(sub "$(now)" "$t0")"

	if [[ $VERSIONED == 1 ]]; then
		t0=$(now)
		"$ATL" dataset version vbig --name "r$r" --follow -o json >"$WORK/vv$r.json" 2>/dev/null
		rec vversion "$(sub "$(now)" "$t0")"
		/usr/bin/python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); n=int(sys.argv[2]); assert v["status"]=="published" and v["pinned_objects"]==n and v["held_objects"]==n, v' "$WORK/vv$r.json" "$OBJECTS"
		t0=$(now)
		"$ATL" dataset get vbig --version "r$r" -o json >/dev/null
		rec vcheck "$(sub "$(now)" "$t0")"
	fi

	if [[ $r -gt 1 ]]; then
		t0=$(now)
		"$ATL" dataset diff big "r$((r - 1))" "r$r" -o json >/dev/null
		rec diff "$(sub "$(now)" "$t0")"
	fi
done

log "copy peer: aws s3 cp --recursive of whole classes, about $COPY_OBJECTS objects"
ncls=$(( (COPY_OBJECTS * CLASSES + OBJECTS - 1) / OBJECTS ))
[[ $ncls -ge 1 ]] || ncls=1
t0=$(now)
for c in $(seq 0 $((ncls - 1))); do
	cls=$(printf 'class%03d' "$c")
	awss3 cp --recursive --quiet "s3://bench/data/$cls/" "s3://bench/snap/$cls/"
done
COPY=$(sub "$(now)" "$t0")
copied=$(awss3 ls --recursive s3://bench/snap/ | wc -l)
COPY_SCALED=$(awk -v t="$COPY" -v n="$copied" -v N="$OBJECTS" 'BEGIN { printf "%.1f", t * N / n }')

m() { awk -v k="$1" '$1 == k { print $2 }' "$WORK/times" | median; }
LIST=$(m list) VERSION=$(m version) VALIDATE=$(m validate) CHECK=$(m check) DIFF=$(m diff) VVERSION=$(m vversion) VCHECK=$(m vcheck)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
rounds() { awk -v k="$1" '$1 == k { printf "%s%.2f", sep, $2; sep = ", " }' "$WORK/times"; }
VERR=$(/usr/bin/python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); print("%d errors and %d warnings" % (v["errors"], v["warnings"]))' "$WORK/val1.json")

VSECTION=""
if [[ $VERSIONED == 1 ]]; then
	VSECTION=$(cat <<VMD
Over a versioned bucket (the same $OBJECTS objects, uploaded again to a bucket with versioning
Enabled): each version pins every object's version id and, the bucket being its owner's, records
$OBJECTS pins that lifecycle rules consult before they expire a noncurrent version.

| what | seconds | against the same over the unversioned bucket | rounds |
|---|---:|---:|---|
| \`atelier dataset version --follow\`, $OBJECTS pins recorded | $VVERSION | $(ratio "$VVERSION" "$VERSION")× | $(rounds vversion) |
| \`atelier dataset get --version\` (every pinned version checked) | $VCHECK | $(ratio "$VCHECK" "$CHECK")× | $(rounds vcheck) |


VMD
)
fi

cat >"$OUT" <<MD
# Datasets: a version of $OBJECTS objects

\`bench/datasets/run.sh\` on $(date -u +%F), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), one Atelier
server (SQLite, local disk). The data: $OBJECTS distinct PNGs (8–12×8 px) in $CLASSES ImageFolder classes,
uploaded with \`atelier obs cp -r\` in ${UPLOAD}s; \`--format auto\` detected: $FORMAT.
Medians of $ROUNDS interleaved rounds (each round's figures in brackets); seconds, wall clock, from
the CLI.

| what | seconds | against the listing | rounds |
|---|---:|---:|---|
| \`aws s3 ls --recursive\` of the prefix (peer: the listing alone) | $LIST | 1.00× | $(rounds list) |
| \`atelier dataset version --follow\` (list, read $OBJECTS image headers, validate, manifest) | $VERSION | $(ratio "$VERSION" "$LIST")× | $(rounds version) |
| \`atelier dataset validate\` (the same reads, no manifest) | $VALIDATE | $(ratio "$VALIDATE" "$LIST")× | $(rounds validate) |
| \`atelier dataset get --version\` (every ETag against the version's) | $CHECK | $(ratio "$CHECK" "$LIST")× | $(rounds check) |
| \`atelier dataset diff\` of two versions | ${DIFF:-n/a} | $( [[ -n $DIFF ]] && ratio "$DIFF" "$LIST" || echo n/a)× | $(rounds diff) |

A version that copies its objects (ModelArts' export, or a tool that snapshots by copying): \`aws s3 cp
--recursive\` copied $copied objects server-side in ${COPY}s, **${COPY_SCALED}s for $OBJECTS** at that rate — the
Atelier version is **$(ratio "$COPY_SCALED" "$VERSION")× faster** and keeps no bytes alive.

${VSECTION}

Validation of the data found $VERR. \`--follow\` polls the version every 150 ms, so the
version's figure includes up to that much waiting.
MD
log "wrote $OUT"
cat "$OUT"
