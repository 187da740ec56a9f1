#!/usr/bin/env bash
# Run the CLI, MCP and ingestion-CLI test files N times in a row, pinned to one core that another process
# keeps busy, and report how many runs passed. A test that waits for a time instead of for readiness fails here.
#
#   bench/load/pinned_core_check.sh [RUNS] [MAX_MINUTES]     (defaults: 20 runs, no time limit)
#
# Environment: PYTHON (default .venv/bin/python, else /work/main/.venv/bin/python), CORE (default 0).
# The run log goes to bench/pinned_core_runs.log; the last line printed is the summary.
set -u
cd "$(dirname "$0")/../.."
RUNS=${1:-20}
MAX_MINUTES=${2:-0}
CORE=${CORE:-0}
PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=/work/main/.venv/bin/python; fi
fi
export PYTHONPATH=$PWD HF_HUB_OFFLINE=1
LOG=${LOG:-bench/pinned_core_runs.log}
FILES=$(ls tests/test_cli*.py tests/test_mcp*.py tests/test_ingest_cli.py)

# The competing load: a busy loop on the same core, for the whole check.
taskset -c "$CORE" sh -c 'while :; do :; done' &
HOG=$!
trap 'kill "$HOG" 2>/dev/null' EXIT INT TERM

: >"$LOG"
echo "files: $(echo $FILES | tr '\n' ' ')" | tee -a "$LOG"
echo "pinned to core $CORE with a busy loop (pid $HOG) on it; $RUNS runs" | tee -a "$LOG"
start=$(date +%s)
passed=0
ran=0
for i in $(seq 1 "$RUNS"); do
    if [ "$MAX_MINUTES" != 0 ] && [ $(( $(date +%s) - start )) -ge $(( MAX_MINUTES * 60 )) ]; then
        echo "time limit of $MAX_MINUTES min reached" | tee -a "$LOG"
        break
    fi
    t0=$(date +%s)
    out=$(taskset -c "$CORE" "$PYTHON" -m pytest -q -p no:cacheprovider $FILES 2>&1)
    rc=$?
    t1=$(date +%s)
    ran=$((ran + 1))
    summary=$(echo "$out" | tail -n 1)
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1))
        echo "run $i: pass in $((t1 - t0)) s ($summary)" | tee -a "$LOG"
    else
        echo "run $i: FAIL (exit $rc) in $((t1 - t0)) s ($summary)" | tee -a "$LOG"
        echo "$out" | grep -E "^(FAILED|ERROR)|Error|assert" | head -n 20 >>"$LOG"
    fi
done
echo "pinned-core check: $passed of $ran runs passed ($RUNS asked), $(( $(date +%s) - start )) s in all" | tee -a "$LOG"
[ "$passed" -eq "$ran" ] && [ "$ran" -gt 0 ]
