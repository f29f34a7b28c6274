#!/usr/bin/env bash
# Runs every test of the project. Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
source ci/env.sh

cargo build --release --workspace --all-targets
cargo test --release --workspace --all-targets
