#!/usr/bin/env bash
# Installs what building and testing mpquic needs on a fresh Debian 12 machine.
# Idempotent: skips what is already there.
set -euo pipefail

need_apt=()
for pkg in cmake libclang-dev pkg-config libev-dev uthash-dev python3-venv valgrind make; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "ci/setup.sh: installing ${need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "ci/setup.sh: cargo not found; install Rust (rustup) first" >&2
    exit 1
fi

# clippy runs in the test command (the engine's clock ban is a clippy rule).
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy

# aioquic for the HTTP/3 interop test (apps/tests/aioquic_interop.rs), in a
# venv outside the clone so it is built once per machine.
AIOQUIC_VERSION=1.7.2
venv="${MPQUIC_VENV:-$HOME/.cache/mpquic/venv}"
if command -v python3 >/dev/null 2>&1; then
    if ! "$venv/bin/python" -c "import aioquic, sys; sys.exit(aioquic.__version__ != '$AIOQUIC_VERSION')" >/dev/null 2>&1; then
        echo "ci/setup.sh: installing aioquic==$AIOQUIC_VERSION into $venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q "aioquic==$AIOQUIC_VERSION"
    fi
fi
# sim/plot.py (and traces/plot_traces.py) draw with matplotlib.
python3 -c "import matplotlib" 2>/dev/null || pip install matplotlib || pip install --break-system-packages matplotlib
