#!/usr/bin/env bash
# Builds the Python bindings (python/) into a reused virtualenv and runs their
# pytest suite. Works on a fresh Debian 12 machine with python3 (3.11).
#   MPQUIC_VENV   virtualenv to (re)use (default ~/.cache/mpquic/venv)
#   extra args    passed to pytest (e.g. -k simulate)
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh

VENV="${MPQUIC_VENV:-$HOME/.cache/mpquic/venv}"
PY="${PYTHON:-python3}"
# Pinned so that runs are reproducible; bump together.
# ray: the --ray backend of mpquic.repro and its test (cp311 manylinux wheel).
# jsonschema: tests/test_qlog.py validates mpquic-server's qlog files against
# ci/qlog-schema/.
PIP_PKGS=(maturin==1.16.0 pytest==9.2.0 pandas==3.1.1 matplotlib==3.11.2 tqdm==4.70.1 ray==2.60.0
    jsonschema==4.26.0)

if [ ! -x "$VENV/bin/python" ]; then
    if ! "$PY" -m venv "$VENV" 2>/dev/null; then
        echo "ci/python.sh: '$PY -m venv' failed; installing python3-venv" >&2
        rm -rf "$VENV"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq python3-venv >/dev/null
        "$PY" -m venv "$VENV"
    fi
fi
# Install only what is missing or at another version (pip is slow even when idle).
stamp="$VENV/.mpquic-pins"
if [ "$(cat "$stamp" 2>/dev/null)" != "${PIP_PKGS[*]}" ]; then
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PIP_PKGS[@]}"
    echo "${PIP_PKGS[*]}" >"$stamp"
fi

# The server binary the download test talks to, when the apps crate has one.
if grep -q '"apps"' Cargo.toml; then
    cargo build --release -p mpquic-apps --bins || echo "ci/python.sh: apps did not build; download tests will skip" >&2
fi

(
    cd python
    # maturin needs VIRTUAL_ENV to know where to install.
    export VIRTUAL_ENV="$VENV"
    export PATH="$VENV/bin:$PATH"
    maturin develop --release --quiet
)
cd python
"$VENV/bin/python" -m pytest -q "$@"
