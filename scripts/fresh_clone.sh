#!/usr/bin/env bash
# A new user's first hour, run by a script: clone this repository into a temporary folder and follow the README
# and docs/ literally, timing each step.
#
#   scripts/fresh_clone.sh [REPOSITORY]     default: this checkout (its committed HEAD)
#
# Steps: the README's install (a venv, torch first, `pip install -e .`); its "One line in your graph" example;
# `make run`; the memory browser (`ui --port 0`, one page fetched); the LangGraph app (docs/langgraph_app.md:
# langgraph-cli[inmem] and langgraph-sdk, `langgraph dev`, client.py's two runs through the HTTP API; the clone
# must stay clean); "One machine to many" (the postgres extra, scripts/pg.sh, scripts/chroma_server.sh, migrate,
# search), then the Chroma server killed with SIGKILL and started again, and the same search must still answer.
#
# Where it departs from the text, on purpose:
# - torch: the README's `--index-url https://download.pytorch.org/whl/cpu` is used when that index answers; where
#   it does not, the `--index-url` is dropped, as the README allows when pip already finds a CPU build (a local
#   mirror), and the script then checks that the torch it got is a CPU build.
# - The servers' folders are new `mktemp -d /tmp/lgm-*-XXXXXX` folders instead of /tmp/lgm-pg and /tmp/lgm-chroma,
#   so a run never touches a user's; LANGGRAPH_MEMORY_* variables of the calling shell are cleared (a new shell);
#   langgraph dev runs with analytics and tracing off (LANGGRAPH_CLI_NO_ANALYTICS=1, LANGSMITH_TRACING=false):
#   the machine may have no network beyond its package index.
# Every server it starts is stopped at the end, whatever happened; the clone is removed unless FRESH_CLONE_KEEP=1.
# FRESH_CLONE_TIMEOUT (seconds, default 1800) limits the whole run: past it the run fails (exit 124).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
source=${1:-$root}
limit=${FRESH_CLONE_TIMEOUT:-1800}

# The overall limit: the run re-executes itself under timeout(1), which signals its whole process group.
if [ -z "${_FRESH_CLONE_LIMITED:-}" ]; then
    export _FRESH_CLONE_LIMITED=1
    status=0
    timeout --kill-after=30 "$limit" bash "$0" "$@" || status=$?
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        echo "fresh-clone: FAILED: over the time limit of $limit s (FRESH_CLONE_TIMEOUT)" >&2
        exit 124
    fi
    exit "$status"
fi

for var in $(env | grep -o '^LANGGRAPH_MEMORY_[A-Z_]*' || true); do unset "$var"; done
unset LANGGRAPH_URL VIRTUAL_ENV
export LANGGRAPH_CLI_NO_ANALYTICS=1 LANGSMITH_TRACING=false LANGCHAIN_TRACING_V2=false

server_dirs_before=$(ls -d "$HOME"/.cache/langgraph-memory/server-* 2>/dev/null || true)
work=$(mktemp -d /tmp/lgm-fresh-clone-XXXXXX)
pgdir=$(mktemp -d /tmp/lgm-pg-XXXXXX)
chromadir=$(mktemp -d /tmp/lgm-chroma-XXXXXX)
clone=$work/langgraph-memory
pids=()
t_start=$SECONDS
times=()

cleanup() {
    local rc=$? pid
    if [ "$rc" -ne 0 ] && [ -n "$current" ]; then echo "fresh-clone: FAILED at step: $current (exit $rc)" >&2; fi
    for pid in "${pids[@]}"; do kill -INT -- "-$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL -- "-$pid" 2>/dev/null || true
    done
    if [ -x "$clone/scripts/chroma_server.sh" ]; then bash "$clone/scripts/chroma_server.sh" stop "$chromadir" || true; fi
    if [ -x "$clone/scripts/pg.sh" ]; then bash "$clone/scripts/pg.sh" stop "$pgdir" >/dev/null 2>&1 || true; fi
    rm -rf "$pgdir" "$chromadir"
    # A memory on a server keeps its local files in ~/.cache/langgraph-memory/server-<hash of the address>:
    # remove the folders this run's throwaway server made.
    local d
    for d in "$HOME"/.cache/langgraph-memory/server-*; do
        [ -d "$d" ] && ! grep -qxF "$d" <<<"$server_dirs_before" && rm -rf "$d"
    done
    if [ "${FRESH_CLONE_KEEP:-}" = 1 ]; then echo "fresh-clone: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

fail() {
    echo "fresh-clone: $*" >&2
    exit 1
}

# step NAME COMMAND...: run one step and print its time. Called plainly (not in an `||` list, which would turn
# errexit off inside it), so any failing command ends the run and the exit trap names the step.
current=
step() {
    local t0=$SECONDS
    current=$1
    shift
    echo "fresh-clone: -- $current"
    "$@"
    times+=("$(printf '%5d s  %s' $((SECONDS - t0)) "$current")")
    echo "fresh-clone: ok in $((SECONDS - t0)) s: $current"
    current=
}

# Start a server in a process group of its own, its output in a log; remember it for the cleanup.
background() {
    local log=$1
    shift
    setsid "$@" >"$log" 2>&1 &
    pids+=($!)
}

wait_for() {  # wait_for SECONDS COMMAND...: poll until COMMAND succeeds
    local deadline=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.5
    done
}

readme_block() {  # the Nth ```LANG block of a Markdown file
    python3 - "$1" "$2" "$3" <<'PY'
import re, sys
path, lang, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
print(re.findall(rf"^```{lang}\n(.*?)^```", open(path).read(), flags=re.S | re.M)[n - 1], end="")
PY
}

# ------------------------------------------------------------------------------------------------ install

install_torch() {
    local index=https://download.pytorch.org/whl/cpu
    if python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + '/torch/', timeout=10)" "$index" 2>/dev/null; then
        pip install -q torch==2.13.0 --index-url "$index"
    else
        echo "fresh-clone: $index does not answer here: dropping --index-url, as the README allows where pip finds a CPU build"
        pip install -q torch==2.13.0
    fi
    python -c "import torch; assert torch.version.cuda is None, 'a CUDA build of torch was installed'; print('torch', torch.__version__)"
}

step "git clone" git clone -q "$source" "$clone"
cd "$clone"
step "python3 -m venv .venv" python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
step "pip install torch==2.13.0 (CPU)" install_torch
step "pip install -e ." pip install -q -e .

# ------------------------------------------------------------------------------------------------ one machine

graph_example() {
    readme_block README.md python 1 >"$work/one_line.py"
    (cd "$work" && python one_line.py) | tee "$work/one_line.out"
    grep -q "find a carry trade" "$work/one_line.out"  # the state it printed holds the note it stored
}
step "README: One line in your graph" graph_example
step "make run" make run
[ -d memory ] || fail "make run left no ./memory"

browser() {
    local log=$work/ui.log url
    background "$log" langgraph-memory --data-dir ./memory ui --port 0
    wait_for 120 grep -q "listening on http" "$log" || { cat "$log" >&2; return 1; }
    url=$(grep -o "http://[0-9.:]*" "$log" | head -1)
    python - "$url" <<'PY'
import sys, urllib.parse, urllib.request
base = sys.argv[1]
for path in ("/", "/search?" + urllib.parse.urlencode({"q": "lookback too short"}), "/strategies"):
    with urllib.request.urlopen(base + path, timeout=60) as resp:
        page = resp.read().decode()
    assert resp.status == 200 and "<html" in page.lower(), (path, resp.status)
    print(f"GET {path}: {resp.status}, {len(page)} characters")
PY
}
step "memory browser: ui, three pages fetched" browser

# ------------------------------------------------------------------------------------------------ langgraph dev

step "pip install langgraph-cli[inmem] langgraph-sdk" pip install -q "langgraph-cli[inmem]>=0.4.40" "langgraph-sdk>=0.4"

langgraph_app() {
    local log=$work/langgraph-dev.log url
    cd examples/langgraph_app
    export LANGGRAPH_MEMORY_DIR="$PWD/../../memory-app"
    background "$log" langgraph dev --no-browser --port 2024
    # As docs/langgraph_app.md says: the address is on the "API:" line (2024, or another port if 2024 is taken).
    wait_for 300 grep -q "API:" "$log" || { tail -40 "$log" >&2; return 1; }
    url=$(grep "API:" "$log" | grep -o "http://[0-9.:]*" | head -1)
    echo "langgraph dev serves on $url"
    wait_for 600 python -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + '/ok', timeout=5)" "$url" \
        || { tail -40 "$log" >&2; return 1; }
    LANGGRAPH_URL=$url python client.py | tee "$work/client.out"
    head -1 "$work/client.out" | grep -qx "3 -> 1" || { echo "expected '3 -> 1' from a new memory" >&2; return 1; }
    kill -INT -- "-${pids[-1]}"  # Ctrl-C: the server closes the store and the checkpointer
    wait_for 120 bash -c "! kill -0 ${pids[-1]}" || { echo "langgraph dev did not stop on SIGINT" >&2; return 1; }
    unset LANGGRAPH_MEMORY_DIR
    cd ../..
    [ -d memory-app ] || { echo "no memory in memory-app/" >&2; return 1; }
    local dirty
    dirty=$(git status --porcelain)
    [ -z "$dirty" ] || { echo "the run left files git sees: $dirty" >&2; return 1; }
}
step "langgraph dev + client.py: two runs through the HTTP API" langgraph_app

# ------------------------------------------------------------------------------------------------ many machines

step 'pip install -e ".[postgres]"' pip install -q -e ".[postgres]"
pg_url=
chroma_url=
servers() {
    pg_url=$(scripts/pg.sh start "$pgdir")
    chroma_url=$(scripts/chroma_server.sh start "$chromadir")
    echo "$pg_url $chroma_url"
}
step "scripts/pg.sh start; scripts/chroma_server.sh start" servers
step "langgraph-memory migrate ./memory postgresql://..." langgraph-memory migrate ./memory "$pg_url"
export LANGGRAPH_MEMORY_URL=$pg_url LANGGRAPH_MEMORY_CHROMA_URL=$chroma_url

search() {
    langgraph-memory search "position sizing" | tee "$work/search-$1.out"
    [ -s "$work/search-$1.out" ] && ! grep -q "No matches" "$work/search-$1.out"
}
step 'langgraph-memory search "position sizing" (PostgreSQL + Chroma server)' search before

# "the memory still answers": one process keeps the memory open, as an agent would, while its Chroma server is
# killed with SIGKILL and started again with the same command; it must answer throughout, at the same address.
chroma_crash() {
    python - "$pg_url" "$chroma_url" "$chromadir" <<'PY'
import subprocess, sys
from urllib.parse import urlsplit

import chromadb

from langgraph_memory import Memory

pg_url, chroma_url, chroma_dir = sys.argv[1:]
address = urlsplit(chroma_url)
client = chromadb.HttpClient(host=address.hostname, port=address.port)


def top(mem: Memory) -> list[str]:
    return [item.key for item in mem.store.search(("lessons",), query="position sizing", limit=3)]


with Memory.open(pg_url, chroma_client=client) as mem:
    before = top(mem)
    assert before, "no lesson found before the crash"
    pid = int(open(f"{chroma_dir}/pid").read())
    subprocess.run(["kill", "-KILL", str(pid)], check=True)
    during = top(mem)
    print("while the server is down:", during == before and "same answer" or during)
    again = subprocess.run(
        ["scripts/chroma_server.sh", "start", chroma_dir], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert again == chroma_url, f"the Chroma server came back at {again}, not {chroma_url}"
    after = top(mem)
    assert during == before and after == before, (before, during, after)
    print("after the restart at the same address:", "same answer")
PY
}
step "one process open across a Chroma server killed (SIGKILL) and restarted: same answers" chroma_crash
search_again() {
    search after
    diff "$work/search-before.out" "$work/search-after.out"
}
step "a new langgraph-memory search after the restart: same answer" search_again

echo
echo "fresh-clone: every step passed in $((SECONDS - t_start)) s (limit $limit s)"
printf '%s\n' "${times[@]}"
