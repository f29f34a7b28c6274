#!/usr/bin/env bash
# The full randomized faulty-transfer campaign (issue: hardening): N seeded
# simulated transfers (default 1000) over 1-3 paths with loss, reordering,
# duplication, corruption and path failures, every controller and scheduler.
# CI runs 300 of them inside `cargo test`; a failure prints its seed, and
# MPQUIC_FAULTY_SEED=<seed> reruns that one case.
#   bash ci/faulty.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
n="${1:-1000}"
case "$n" in ''|*[!0-9]*) echo "ci/faulty.sh: N must be a whole number, got '$n'" >&2; exit 2 ;; esac
MPQUIC_FAULTY_CASES="$n" cargo test --release -p mpquic-sim --test faulty -- --nocapture
