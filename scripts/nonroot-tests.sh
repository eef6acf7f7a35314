#!/usr/bin/env bash
# Runs the sandbox tests and the e2e attack suite as a server that is NOT
# root, the way docs/security.md tells an operator to prepare one: an
# account in no other group, a subordinate uid/gid range, and a cgroup
# subtree it owns (v1: the atelier group of each controller; v2: a
# delegated /sys/fs/cgroup/atelier with the tests in atelier/server).
# Needs root to prepare; the tests themselves run as that account.
set -euo pipefail
cd "$(dirname "$0")/.."
go="${GO:-go}"
user="${ATELIER_NONROOT_USER:-atelier-ci}"

if [ "$(id -u)" != 0 ]; then
  echo "nonroot-tests: needs root to prepare the account and the cgroup subtree" >&2
  exit 1
fi
if ! id "$user" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/sh --user-group "$user"
fi
usermod -G "" "$user"
grep -q "^$user:" /etc/subuid || usermod --add-subuids 300000-365535 "$user"
grep -q "^$user:" /etc/subgid || usermod --add-subgids 300000-365535 "$user"

if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
  mkdir -p /sys/fs/cgroup/atelier/server
  for c in memory cpu; do
    grep -qw "$c" /sys/fs/cgroup/cgroup.subtree_control || echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control
  done
  chown -R "$user:" /sys/fs/cgroup/atelier
  cgroup_v2=1
else
  for c in memory cpu cpuacct; do
    if [ -d "/sys/fs/cgroup/$c" ]; then
      mkdir -p "/sys/fs/cgroup/$c/atelier"
      chown -R "$user:" "/sys/fs/cgroup/$c/atelier"
    fi
  done
  cgroup_v2=0
fi

# Binaries built as root, where the account can run them.
out="$(mktemp -d /tmp/atelier-nonroot.XXXXXX)"
chmod 0755 "$out"
trap 'rm -rf "$out"' EXIT
"$go" build -o "$out/atelier" ./cmd/atelier
"$go" test -c -o "$out/sandbox.test" ./internal/sandbox
"$go" test -c -o "$out/runner.test" ./internal/runner
"$go" test -c -o "$out/e2e.test" ./test/e2e
mkdir -p "$out/tmp"
chown "$user:" "$out/tmp"

run_as() { # dir, command…
  local dir=$1
  shift
  local cmd="cd '$dir' && exec env TMPDIR='$out/tmp' HOME='$out/tmp' PATH=/usr/local/bin:/usr/bin:/bin CI='${CI:-}' ATELIER_TEST_NONROOT=1 $*"
  if [ "$cgroup_v2" = 1 ]; then
    # The tests (and the servers they start) run in the delegated subtree.
    cmd="echo \$\$ > /sys/fs/cgroup/atelier/server/cgroup.procs && $cmd"
  fi
  su "$user" -s /bin/sh -c "$cmd"
}

echo "== sandbox tests as $user (uid $(id -u "$user"))"
run_as internal/sandbox "$out/sandbox.test" -test.count=1
echo "== runner tests as $user"
run_as internal/runner "$out/runner.test" -test.count=1 -test.run "'Bubblewrap|Install|Instance|Notebook'"
echo "== e2e attack suite as $user"
run_as test/e2e ATELIER_E2E_BIN="$out/atelier" "$out/e2e.test" -test.count=1 -test.timeout 20m \
  -test.run "'TestAttack|TestJobSeedScriptCompletes|TestServiceDeployPredictAndLimits|TestNotebookEndToEnd'"
