#!/usr/bin/env bash
# Create .venv if missing and install the project with its dev extras.
# Idempotent: re-running does nothing unless pyproject.toml changed.
# torch==2.13.0 (the CPU build) goes in first, so nothing that depends on
# torch ever pulls the multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=.venv
STAMP="$VENV/.installed-$(sha256sum pyproject.toml | cut -c1-16)"

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    "$PY" -m venv "$VENV"
fi

if [ -f "$STAMP" ]; then
    exit 0
fi

echo "setup: installing torch==2.13.0 (CPU) and the project"
"$VENV/bin/python" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
"$VENV/bin/python" -m pip install --quiet "torch==2.13.0"
"$VENV/bin/python" -m pip install --quiet -e ".[dev]"
# The notebook test runs a Jupyter kernel: register one that uses this venv.
"$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 >/dev/null
# The default embedding model runs on ONNX Runtime from a file exported once per machine (~10 s) into
# the user cache; doing it here spares the first search the wait.
"$VENV/bin/python" -m langgraph_memory._onnx_cache \
    || echo "setup: could not export the embedding model now; the first embedding will try again" >&2
rm -f "$VENV"/.installed-*
touch "$STAMP"
echo "setup: done"
