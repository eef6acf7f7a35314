#!/usr/bin/env bash
# The whole test suite: gofmt, go vet and the linters, then every Go test — the
# packages under internal/ with the race detector, the end-to-end tests and
# the rest without it — and the Python SDK's unit tests. PostgreSQL comes
# from ATELIER_TEST_POSTGRES_DSN; when that is unset and Debian's postgresql
# is installed, a throwaway cluster is started for the run. With CI=true a
# missing linter or PostgreSQL fails the run instead of being skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
go="${GO:-go}"
ci="${CI:-}"

stage_start=$SECONDS
stage() { # prints how long the previous stage took, then names the next
  if [ -n "${stage_name:-}" ]; then
    printf '   (%s: %ds)\n' "$stage_name" $((SECONDS - stage_start))
  fi
  stage_name=$1
  stage_start=$SECONDS
  if [ -n "$1" ]; then echo "== $1"; fi
}
need() { # what is missing: fail in CI, skip elsewhere
  if [ "$ci" = true ]; then
    echo "test.sh: $1 (.ci/run installs it)" >&2
    exit 1
  fi
  echo "   skipped: $1"
}

stage "gofmt"
unformatted="$("$("$go" env GOROOT)/bin/gofmt" -l cmd internal python test $(find bench -name '*.go' -not -path 'bench/.work/*'))"
if [ -n "$unformatted" ]; then
  echo "test.sh: not formatted with gofmt (run gofmt -w on them):" >&2
  echo "$unformatted" >&2
  exit 1
fi

stage "go vet"
"$go" vet ./...

stage "staticcheck"
staticcheck="$(command -v staticcheck || true)"
[ -z "$staticcheck" ] && [ -x "$("$go" env GOPATH)/bin/staticcheck" ] && staticcheck="$("$go" env GOPATH)/bin/staticcheck"
if [ -n "$staticcheck" ]; then
  "$staticcheck" ./...
else
  need "staticcheck is not installed (go install honnef.co/go/tools/cmd/staticcheck@v0.8.2)"
fi

stage "pyflakes (the Python we ship and the examples)"
if /usr/bin/python3 -m pyflakes --version >/dev/null 2>&1; then
  /usr/bin/python3 -m pyflakes python/ examples/ bench/
else
  need "pyflakes is not installed (Debian package python3-pyflakes)"
fi

if [ -z "${ATELIER_TEST_POSTGRES_DSN:-}" ] && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  pgdir="$(mktemp -d /tmp/atelier-pg.XXXXXX)"
  trap 'scripts/pg-tmp.sh stop "$pgdir" >/dev/null 2>&1 || true' EXIT
  ATELIER_TEST_POSTGRES_DSN="$(scripts/pg-tmp.sh start "$pgdir")"
  export ATELIER_TEST_POSTGRES_DSN
  echo "== started a throwaway PostgreSQL for the tests"
fi
if [ -z "${ATELIER_TEST_POSTGRES_DSN:-}" ]; then
  echo "== PostgreSQL not available: its conformance run is skipped (it fails instead when CI=true)"
fi

stage "Python SDK unit tests (/usr/bin/python3)"
/usr/bin/python3 -m unittest discover -s python/tests

stage "go test -race ./internal/..."
"$go" test -race -count=1 -timeout 30m ./internal/...

stage "go test (end to end, the Python tree, commands, benchmarks' tools)"
"$go" test -count=1 -timeout 30m -skip '^TestConsole' $("$go" list ./... | grep -v '/internal/')

stage "the web console in Chromium (test/e2e TestConsole*)"
if [ "$ci" != true ] && ! command -v chromium >/dev/null 2>&1; then
  need "chromium is not installed (Debian package chromium)"
else
  "$go" test -count=1 -timeout 20m -run '^TestConsole' ./test/e2e
fi
stage ""
