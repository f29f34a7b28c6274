#!/usr/bin/env bash
# Fuzz campaign over every cargo-fuzz target of fuzz/ and fuzz-h3/.
#
#   bash ci/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 1800 s, all targets)
#
# Installs what it needs (nightly toolchain, cargo-fuzz). Corpora grow in
# fuzz*/corpus/<target>/ and are minimized (`cargo fuzz cmin`) at the end so the
# committed ones stay small; a crash stops the campaign and leaves its input in
# fuzz*/artifacts/<target>/ (turn each into a unit test).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-1800}"
shift || true
case "$secs" in ''|*[!0-9]*) echo "ci/fuzz.sh: SECONDS must be a whole number, got '$secs'" >&2; exit 2 ;; esac

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked

# Sanitizer flags would rebuild BoringSSL from source (minutes); link the build
# the test target already has instead (uninstrumented crypto is fine: the
# decoders under test are ours).
main_target="${CARGO_TARGET_DIR:-$HOME/.cache/mpquic/target}"
for d in "$main_target"/release/build/boring-sys-*/out; do
    if [ -f "$d/build/libcrypto.a" ] && [ -d "$d/boringssl/include" ]; then
        export BORING_BSSL_PATH="$d/build" BORING_BSSL_INCLUDE_PATH="$d/boringssl/include"
        break
    fi
done
export CARGO_TARGET_DIR="$HOME/.cache/mpquic/fuzz-target"

targets_of() { cargo +nightly fuzz list --fuzz-dir "$1"; }
declare -A dir_of=()
for dir in fuzz fuzz-h3; do
    for t in $(targets_of "$dir"); do dir_of[$t]="$dir"; done
done
wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=("${!dir_of[@]}")

summary=()
for t in "${wanted[@]}"; do
    dir="${dir_of[$t]:-}"
    if [ -z "$dir" ]; then
        echo "ci/fuzz.sh: unknown target '$t' (known: ${!dir_of[*]})" >&2
        exit 2
    fi
    mkdir -p "$dir/corpus/$t"
    echo "ci/fuzz.sh: $t for ${secs}s"
    cargo +nightly fuzz run --fuzz-dir "$dir" --release "$t" "$dir/corpus/$t" -- \
        -max_total_time="$secs" -print_final_stats=1 2>&1 | tail -n 25
    cargo +nightly fuzz cmin --fuzz-dir "$dir" --release "$t" "$dir/corpus/$t" >/dev/null 2>&1 || true
    n=$(find "$dir/corpus/$t" -type f | wc -l)
    summary+=("$t: ${secs}s, corpus $n inputs")
done
printf 'ci/fuzz.sh: %s\n' "${summary[@]}"
