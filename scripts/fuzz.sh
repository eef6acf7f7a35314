#!/usr/bin/env bash
# Runs every Fuzz target in the module for $FUZZTIME each (a duration such as
# 30s, or a count of executions such as 300x).
set -euo pipefail
cd "$(dirname "$0")/.."
go="${GO:-go}"
for pkg in $("$go" list ./...); do
  dir="$("$go" list -f '{{.Dir}}' "$pkg")"
  for fn in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "== $pkg $fn"
    "$go" test -run '^$' -fuzz "^${fn}\$" -fuzztime "${FUZZTIME:-30s}" "$pkg"
  done
done
