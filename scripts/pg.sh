#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for development, tests and CI.
#
#   scripts/pg.sh start DIR     create the cluster in DIR if needed, start it on a free
#                               loopback port, print its URL (postgresql://postgres@127.0.0.1:PORT/postgres)
#   scripts/pg.sh url DIR       print the URL of the running cluster
#   scripts/pg.sh stop DIR      stop it (fast shutdown); DIR stays, start reuses it and its port
#   scripts/pg.sh crash DIR     stop it the way a crash would (pg_ctl stop -m immediate)
#   scripts/pg.sh status DIR    exit 0 if it is running
#
# Trust authentication on 127.0.0.1 only (listen_addresses=127.0.0.1, no TCP
# entry for any other host): never point it at data you care about.
# initdb refuses to run as root, so as root everything runs as the `postgres`
# user, which must own DIR; every parent of DIR must be traversable by it
# (pytest's /tmp/pytest-of-root is not: use a folder made with mktemp -d under /tmp).
# PG_BIN overrides the server's folder (default: the newest /usr/lib/postgresql/*/bin).
# PG_SERVER_OPTIONS adds server settings (e.g. "-c fsync=off" for a test run whose server never crashes).
set -euo pipefail

usage() { echo "usage: $0 start|stop|crash|url|status DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$2

if [ -z "${PG_BIN:-}" ]; then
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
fi
if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/pg_ctl" ]; then
    echo "pg.sh: PostgreSQL server binaries not found (apt-get install postgresql, or set PG_BIN)" >&2
    exit 3
fi

as_pg() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

url() {
    echo "postgresql://postgres@127.0.0.1:$(cat "$dir/port")/postgres"
}

running() {
    [ -f "$dir/port" ] && as_pg "$PG_BIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1
}

case "$cmd" in
start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres "$dir"
    fi
    chmod 700 "$dir"
    if ! as_pg test -w "$dir"; then
        echo "pg.sh: the postgres user cannot write $dir (a parent folder is private?)" >&2
        exit 3
    fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        as_pg "$PG_BIN/initdb" -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log" 2>&1 || {
            cat "$dir/initdb.log" >&2; exit 1; }
    fi
    if running; then
        url
        exit 0
    fi
    for attempt in 1 2 3 4 5; do
        # Reuse the port of an earlier start (clients reconnect to the same URL after a restart).
        if [ -f "$dir/port" ] && [ "$attempt" -eq 1 ]; then port=$(cat "$dir/port"); else port=$(free_port); fi
        if as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
            -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 ${PG_SERVER_OPTIONS:-}" start >/dev/null; then
            echo "$port" >"$dir/port"
            url
            exit 0
        fi
    done
    tail -20 "$dir/server.log" >&2 || true
    exit 1
    ;;
stop|crash)
    [ -d "$dir/data" ] || exit 0
    mode=fast
    [ "$cmd" = crash ] && mode=immediate
    if as_pg "$PG_BIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m "$mode" -w -t 60 stop >/dev/null
    fi
    ;;
url)
    running || { echo "pg.sh: no cluster running in $dir" >&2; exit 1; }
    url
    ;;
status)
    running
    ;;
*)
    usage
    ;;
esac
