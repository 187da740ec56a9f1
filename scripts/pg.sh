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
# Trust authentication on 127.0.0.1 only: never point it at data you care about. As root the server runs
# as the `postgres` user, which must be able to reach DIR (use a folder made with mktemp -d under /tmp).
# PG_BIN overrides the server's folder (default: the newest /usr/lib/postgresql/*/bin).
# PG_SERVER_OPTIONS adds server settings (e.g. "-c fsync=off" for a test run whose server never crashes).
#
# The work is done by langgraph_memory/_infra/pg_cluster.py, the helper the tests and benches import too.
# It needs only the standard library, so any python3 runs it; -P keeps its folder off sys.path.
set -euo pipefail
exec "${PYTHON:-python3}" -P "$(dirname "$0")/../langgraph_memory/_infra/pg_cluster.py" "$@"
