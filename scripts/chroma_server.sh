#!/usr/bin/env bash
# A throwaway Chroma server for development, tests and CI.
#
#   scripts/chroma_server.sh start DIR   start `chroma run` on DIR/chroma on a loopback port; wait
#                                        until it answers; print its URL. The first start takes a
#                                        free port and keeps it in DIR/port; every later start (after
#                                        stop, or after a crash) reuses it, so clients given the URL
#                                        reconnect. If another program holds that port, start fails
#                                        and says so (remove DIR/port to take a new one).
#   scripts/chroma_server.sh url DIR     print the URL of the running server
#   scripts/chroma_server.sh stop DIR    stop it (SIGTERM, then SIGKILL after 10 s); DIR/port stays
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

# Whether nothing listens on 127.0.0.1:$1, waiting up to $2 seconds (default 0) for it to be freed.
# SO_REUSEADDR, as the server binds: connections of a killed server left in TIME_WAIT do not keep it
# from listening again.
port_free() {
    python3 - "$1" "${2:-0}" <<'PY'
import socket, sys, time
deadline = time.monotonic() + float(sys.argv[2])
while True:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", int(sys.argv[1])))
        sys.exit(0)
    except OSError:
        if time.monotonic() >= deadline:
            sys.exit(1)
        time.sleep(0.2)
    finally:
        s.close()
PY
}

# Whether the server this script started for DIR is alive: the pid in DIR/pid runs `chroma run` on
# DIR/chroma (a pid file left by a crash may name another program by now).
ours() {
    [ -f "$dir/pid" ] || return 1
    local pid
    pid=$(cat "$dir/pid")
    kill -0 "$pid" 2>/dev/null && ps -ww -o args= -p "$pid" 2>/dev/null | grep -qF -- "--path $dir/chroma"
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

# Wait until our server answers (at most 120 s on a loaded machine); print its URL.
wait_ready() {
    for _ in $(seq 1 600); do
        if answers; then echo "http://127.0.0.1:$(cat "$dir/port")"; exit 0; fi
        ours || break
        sleep 0.2
    done
    tail -20 "$dir/server.log" >&2 || true
    exit 1
}

[ "$cmd" = start ] && mkdir -p "$dir/chroma"
[ -d "$dir" ] && dir=$(cd "$dir" && pwd)  # absolute, as the server's command line shows it

case "$cmd" in
start)
    if [ -z "$CHROMA_BIN" ] || [ ! -x "$CHROMA_BIN" ]; then
        echo "chroma_server.sh: the chroma executable was not found (pip install chromadb, or set CHROMA_BIN)" >&2
        exit 3
    fi
    if ours; then wait_ready; fi
    if [ -f "$dir/port" ]; then
        # The port of the first start: clients configured with this URL find the server again.
        port=$(cat "$dir/port")
        # A server killed a moment ago may hold its socket a little longer.
        if ! port_free "$port" 5; then
            echo "chroma_server.sh: port $port (kept in $dir/port, so that clients find this folder's server at" \
                "the same address) is taken by another program. Stop that program, or remove $dir/port to start" \
                "on a new port and give the clients its URL." >&2
            exit 4
        fi
    else
        port=$(free_port)
    fi
    nohup "$CHROMA_BIN" run --path "$dir/chroma" --host 127.0.0.1 --port "$port" >"$dir/server.log" 2>&1 &
    echo $! >"$dir/pid"
    echo "$port" >"$dir/port"
    wait_ready
    ;;
stop)
    ours || { rm -f "$dir/pid"; exit 0; }
    pid=$(cat "$dir/pid")
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/pid"
    ;;
url)
    { ours && answers; } || { echo "chroma_server.sh: no server answering for $dir" >&2; exit 1; }
    echo "http://127.0.0.1:$(cat "$dir/port")"
    ;;
status)
    ours && answers
    ;;
*)
    usage
    ;;
esac
