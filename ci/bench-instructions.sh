#!/usr/bin/env bash
# The engines' cost per byte in instructions (machine-independent, unlike
# wall time on a shared VM): callgrind counts pairbench moving 64 MiB and
# moving 1 byte; the difference over 64 MiB leaves out the handshake and
# setup. mpquic is counted twice: with the copying stream calls (as quiche)
# and with `--zero-copy` (the body shared with the stream, data taken where
# it lies). Usage: bash ci/bench-instructions.sh [BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
BYTES=${1:-67108864}
cargo build --release --example pairbench 2>&1 | grep -E "^(warning|error)" || true
PB="$CARGO_TARGET_DIR/release/examples/pairbench"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

count() { # bytes impl [flags] -> instructions
    local n=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.$*.$n" "$PB" --bytes "$n" --impl "$@" \
        2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

for run in "mpquic" "mpquic --zero-copy" "quiche"; do
    # shellcheck disable=SC2086 # $run is the engine and its flags
    big=$(count "$BYTES" $run) &&
        small=$(count 1 $run) &&
        python3 -c "import sys; b,s,n=map(int,sys.argv[1:]); print(f'$run: {(b-s)/n:.2f} instructions/byte ({b:,} for {n:,} B, {s:,} for 1 B)')" \
            "$big" "$small" "$BYTES" &
done
wait
