#!/usr/bin/env bash
# Runs every test of the project (what .ci/run runs). Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
source ci/env.sh

cargo build --release --workspace --all-targets
# Lints, with the engine's clock ban (clippy.toml disallowed-methods) enforced.
# --release shares the build scripts' outputs (BoringSSL) with the build above.
cargo clippy --release --workspace --all-targets -- -D warnings
# Everything but the emulation shells: unit tests, interop with quiche, noq and
# aioquic, the simulator's behavioural tests, apps, C API.
cargo test --release --workspace --all-targets --exclude mpquic-shells
# Documentation examples (--all-targets leaves them out): the scheduler written
# outside the crate in mpquic::sched.
cargo test --release --doc -p mpquic
# The shells emulate links in real time: run their measurements one at a time
# so they do not compete for the two cores (they skip without root/netns).
cargo test --release -p mpquic-shells -- --test-threads=1
# Fuzz regressions: every committed corpus input (findings included) runs once
# through its cargo-fuzz target (stable + RUSTC_BOOTSTRAP; installs cargo-fuzz).
bash ci/fuzz.sh --replay
# Instruction counts (callgrind; valgrind comes from ci/setup.sh): fails when
# pairbench's instructions/byte (one path, two paths, zero-copy) or the
# simulator's bench grew more than 3% over ci/instructions.baseline.
bash ci/bench-instructions.sh --check
# Python bindings (maturin + pytest), last: pytest prints the closing summary.
bash ci/python.sh
