#!/usr/bin/env bash
# pg-tmp.sh — a throwaway PostgreSQL cluster for tests.
#
#   scripts/pg-tmp.sh start DIR   initialise and start a cluster in DIR, listening
#                                 on 127.0.0.1 on a free port with trust auth;
#                                 print only its admin DSN on stdout:
#                                 postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
#   scripts/pg-tmp.sh stop DIR    stop it (fast) and remove DIR
#
# Uses Debian's postgresql package (the highest version under
# /usr/lib/postgresql). As root, the server runs as the postgres OS user,
# since initdb refuses to run as root. The cluster trades durability for
# speed (fsync off): it is for tests only.
#
# Example:
#   export ATELIER_TEST_POSTGRES_DSN=$(scripts/pg-tmp.sh start /tmp/atelier-pg)
#   go test ./internal/meta/postgres/
#   scripts/pg-tmp.sh stop /tmp/atelier-pg
set -euo pipefail

die() { echo "pg-tmp.sh: $*" >&2; exit 1; }

usage() { die "usage: $0 start|stop DIR"; }

# pg_bin prints the bin directory of the highest installed PostgreSQL,
# waiting for a package installation that is still running.
pg_bin() {
	local waited=0 bin
	while :; do
		bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
		if [[ -n $bin && -x $bin/pg_ctl && -x $bin/initdb && -x $bin/postgres ]]; then
			echo "$bin"
			return
		fi
		if ((waited < 600)) && pgrep -x 'apt-get|apt|dpkg' >/dev/null; then
			((waited == 0)) && echo "pg-tmp.sh: waiting for a package installation to finish" >&2
			sleep 5
			waited=$((waited + 5))
			continue
		fi
		die "PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql)"
	done
}

# as_pg runs a command as the cluster's owner.
as_pg() {
	if ((EUID == 0)); then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# port_free reports whether nothing listens on 127.0.0.1:$1.
port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

start() {
	local dir=$1 bin port try
	bin=$(pg_bin)
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd -P)
	[[ -e $dir/data ]] && die "$dir/data exists: stop that cluster first ($0 stop $dir)"
	if ((EUID == 0)); then
		id postgres >/dev/null 2>&1 || die "no postgres OS user (is the postgresql package installed?)"
		chown postgres: "$dir"
		chmod 700 "$dir"
		as_pg test -w "$dir" || die "the postgres user cannot write $dir; use a directory it can reach, e.g. under /tmp"
	fi
	if ((${#dir} > 80)); then
		die "$dir is too long for a Unix socket path; use a shorter directory"
	fi

	as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync \
		>"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }

	for try in 1 2 3 4 5 6 7 8 9 10; do
		port=$((20000 + RANDOM % 40000))
		port_free "$port" || continue
		cat >>"$dir/data/postgresql.conf" <<-CONF
			# pg-tmp.sh (try $try)
			listen_addresses = '127.0.0.1'
			port = $port
			unix_socket_directories = '$dir'
			max_connections = 300
			fsync = off
			synchronous_commit = off
			full_page_writes = off
		CONF
		if as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null 2>&1; then
			echo "$port" >"$dir/port"
			break
		fi
		port=""
	done
	[[ -n $port ]] || { tail -n 20 "$dir/server.log" >&2 || true; die "the server did not start"; }
	for _ in $(seq 1 60); do
		"$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres && break
		sleep 0.5
	done
	"$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres ||
		die "the server on port $port does not accept connections; see $dir/server.log"
	echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
}

stop() {
	local dir=$1 bin
	[[ -d $dir ]] || return 0
	if [[ -f $dir/data/postmaster.pid ]]; then
		bin=$(pg_bin)
		as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 ||
			echo "pg-tmp.sh: pg_ctl stop failed; removing $dir anyway" >&2
	fi
	rm -rf "$dir"
}

(($# == 2)) || usage
case $1 in
start) start "$2" ;;
stop) stop "$2" ;;
*) usage ;;
esac
