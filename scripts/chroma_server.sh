#!/usr/bin/env bash
# A throwaway Chroma server for development, tests and CI.
#
#   scripts/chroma_server.sh start DIR   start `chroma run` on DIR/chroma, on a free loopback
#                                        port; wait until it answers; print its URL
#   scripts/chroma_server.sh url DIR     print the URL of the running server
#   scripts/chroma_server.sh stop DIR    stop it (SIGTERM, then SIGKILL after 10 s)
#   scripts/chroma_server.sh status DIR  exit 0 if it answers
#
# Binds 127.0.0.1 only, no auth. CHROMA_BIN overrides the executable
# (default: .venv/bin/chroma of this checkout, else `chroma` on PATH).
set -euo pipefail

usage() { echo "usage: $0 start|stop|url|status DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$2
root=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${CHROMA_BIN:-}" ]; then
    if [ -x "$root/.venv/bin/chroma" ]; then CHROMA_BIN=$root/.venv/bin/chroma
    else CHROMA_BIN=$(command -v chroma || true); fi
fi

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

answers() {
    [ -f "$dir/port" ] && python3 - "$(cat "$dir/port")" <<'PY'
import sys, urllib.request
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/v2/heartbeat", timeout=2).read()
except Exception:
    sys.exit(1)
PY
}

case "$cmd" in
start)
    if [ -z "$CHROMA_BIN" ] || [ ! -x "$CHROMA_BIN" ]; then
        echo "chroma_server.sh: the chroma executable was not found (pip install chromadb, or set CHROMA_BIN)" >&2
        exit 3
    fi
    mkdir -p "$dir/chroma"
    if answers; then echo "http://127.0.0.1:$(cat "$dir/port")"; exit 0; fi
    port=$(free_port)
    nohup "$CHROMA_BIN" run --path "$dir/chroma" --host 127.0.0.1 --port "$port" >"$dir/server.log" 2>&1 &
    echo $! >"$dir/pid"
    echo "$port" >"$dir/port"
    # Wait for readiness (the heartbeat answers), at most 120 s on a loaded machine.
    for _ in $(seq 1 600); do
        if answers; then echo "http://127.0.0.1:$port"; exit 0; fi
        if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then break; fi
        sleep 0.2
    done
    tail -20 "$dir/server.log" >&2 || true
    exit 1
    ;;
stop)
    [ -f "$dir/pid" ] || exit 0
    pid=$(cat "$dir/pid")
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/pid"
    ;;
url)
    answers || { echo "chroma_server.sh: no server answering for $dir" >&2; exit 1; }
    echo "http://127.0.0.1:$(cat "$dir/port")"
    ;;
status)
    answers
    ;;
*)
    usage
    ;;
esac
