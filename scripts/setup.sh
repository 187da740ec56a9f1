#!/usr/bin/env bash
# Create .venv if missing and install into it, quietly.
#   scripts/setup.sh         the runtime dependencies only (pip install -e .): what `make run` needs
#   scripts/setup.sh dev     the above plus the dev extra (tests, docs): what `make test` needs
# Idempotent: each part is stamped with a hash of pyproject.toml, so re-running does nothing until it changes,
# and going from `make run` to `make test` installs only the dev extra.
# torch==2.13.0 goes in first, so nothing that depends on torch pulls a CUDA build. Set TORCH_INDEX_URL to
# PyTorch's CPU wheel index when your pip would otherwise find only the CUDA build (Linux on PyPI).
# pip's output goes to .venv/setup.log; its tail is shown when something fails.
set -euo pipefail
cd "$(dirname "$0")/.."

WHAT=${1:-runtime}
case "$WHAT" in
    runtime|dev) ;;
    *) echo "usage: scripts/setup.sh [runtime|dev]" >&2; exit 2 ;;
esac

PY=${PYTHON:-python3}
VENV=.venv
LOG="$VENV/setup.log"
HASH=$(sha256sum pyproject.toml | cut -c1-16)
RUNTIME_STAMP="$VENV/.installed-runtime-$HASH"
DEV_STAMP="$VENV/.installed-dev-$HASH"
DID=

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    "$PY" -m venv "$VENV"
fi

pip_quiet() {
    # Every pip line goes to the log; on failure the user sees why, not hundreds of lines of progress.
    echo "+ pip $*" >>"$LOG"
    if ! "$VENV/bin/python" -m pip install --disable-pip-version-check "$@" >>"$LOG" 2>&1; then
        echo "setup: pip install $* failed; the end of $LOG:" >&2
        tail -n 25 "$LOG" >&2
        exit 1
    fi
}

if [ ! -f "$RUNTIME_STAMP" ]; then
    : >"$LOG"
    pip_quiet --upgrade pip
    DID=1
    echo "setup: installing torch 2.13.0 (CPU build)"
    pip_quiet "torch==2.13.0" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
    echo "setup: installing the runtime dependencies (pip install -e .)"
    pip_quiet -e .
    rm -f "$VENV"/.installed-*
    touch "$RUNTIME_STAMP"
fi

if [ "$WHAT" = dev ] && [ ! -f "$DEV_STAMP" ]; then
    DID=1
    echo "setup: adding the dev extra (tests, docs)"
    # Only the extra's own requirements: the project and its runtime dependencies are already in.
    "$VENV/bin/python" - >"$VENV/dev-requirements.txt" <<'EOF'
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["dev"]))
EOF
    pip_quiet -r "$VENV/dev-requirements.txt"
    # The notebook test runs a Jupyter kernel: register one that uses this venv.
    "$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 >>"$LOG" 2>&1
    touch "$DEV_STAMP"
fi

if [ -n "$DID" ]; then
    # The default embedding model runs on ONNX Runtime from a file exported once per machine (~10 s) into
    # the user cache; doing it here spares the first search the wait.
    "$VENV/bin/python" -m langgraph_memory.embeddings._onnx_cache >>"$LOG" 2>&1 \
        || echo "setup: could not export the embedding model now; the first embedding will try again" >&2
    echo "setup: done in ${SECONDS} s (pip's log: $LOG)"
fi
