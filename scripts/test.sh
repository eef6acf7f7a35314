#!/usr/bin/env bash
# The whole test suite: go vet, then every Go test (unit, conformance against
# SQLite and PostgreSQL, end-to-end). PostgreSQL comes from
# ATELIER_TEST_POSTGRES_DSN; when that is unset and Debian's postgresql is
# installed, a throwaway cluster is started for the run.
set -euo pipefail
cd "$(dirname "$0")/.."
go="${GO:-go}"

echo "== go vet"
"$go" vet ./...

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

echo "== Python SDK unit tests (/usr/bin/python3)"
/usr/bin/python3 -m unittest discover -s python/tests

echo "== go test"
"$go" test -count=1 -timeout 30m ./...
