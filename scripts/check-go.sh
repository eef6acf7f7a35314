#!/usr/bin/env bash
# Checks that Go of at least the go.mod version is on PATH; explains what to do if not.
set -euo pipefail
want="${1:?usage: check-go.sh VERSION}"
go="${GO:-go}"
if ! command -v "$go" >/dev/null 2>&1; then
  if [ -x /usr/local/go/bin/go ]; then
    echo "check-go: Go is at /usr/local/go/bin/go but not on PATH; run: export PATH=/usr/local/go/bin:\$PATH" >&2
  else
    echo "check-go: Atelier needs Go $want or newer (the version in go.mod), and no 'go' is on PATH." >&2
    echo "check-go: install Go $want+ (https://go.dev/doc/install) and put its bin directory on PATH." >&2
  fi
  exit 1
fi
have="$("$go" env GOVERSION 2>/dev/null | sed 's/^go//')"
have="${have%%[-+ ]*}"
ver() { local IFS=.; set -- $1; printf '%05d%05d%05d' "${1:-0}" "${2:-0}" "${3:-0}"; }
if [[ "$(ver "$have")" < "$(ver "$want")" ]]; then
  echo "check-go: Atelier needs Go $want or newer (go.mod); $(command -v "$go") is Go $have." >&2
  echo "check-go: install a newer Go (https://go.dev/doc/install) or set GOTOOLCHAIN=go$want." >&2
  exit 1
fi
