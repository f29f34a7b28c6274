#!/usr/bin/env bash
# Fuzz campaign over every cargo-fuzz target of fuzz/ and fuzz-h3/.
#
#   bash ci/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 1800 CPU seconds, all targets)
#   bash ci/fuzz.sh --replay [TARGET...]   run each committed corpus once (CI's
#                                          regression check: every input passes)
#
# Installs what it needs (cargo-fuzz from crates.io). No nightly toolchain is
# needed: cargo-fuzz's -Z flags (AddressSanitizer, coverage) are accepted by
# the installed stable compiler with RUSTC_BOOTSTRAP=1; FUZZ_TOOLCHAIN=nightly
# uses a nightly instead. Targets run one after the other under `nice -n 19`.
# Corpora grow in fuzz*/corpus/<target>/ (committed, so each campaign starts
# where the last ended) and are minimized (`cargo fuzz cmin`) after each run;
# a crash stops the campaign and leaves its input in fuzz*/artifacts/<target>/
# (turn each into a unit test). The last line per target: seconds, runs,
# corpus inputs and bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
replay=0
if [ "${1:-}" = "--replay" ]; then replay=1; shift; set -- 0 "$@"; fi
secs="${1:-1800}"
shift || true
case "$secs" in ''|*[!0-9]*) echo "ci/fuzz.sh: SECONDS must be a whole number, got '$secs'" >&2; exit 2 ;; esac

tc=()
if [ -n "${FUZZ_TOOLCHAIN:-}" ]; then
    tc=("+$FUZZ_TOOLCHAIN")
else
    export RUSTC_BOOTSTRAP=1
fi
cargo fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked

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

declare -A dir_of=()
for dir in fuzz fuzz-h3; do
    for t in $(cargo "${tc[@]}" fuzz list --fuzz-dir "$dir"); do dir_of[$t]="$dir"; done
done
wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || mapfile -t wanted < <(printf '%s\n' "${!dir_of[@]}" | sort)

# The budget is the fuzzer's own CPU time, not the wall clock, so that a
# campaign on a busy machine (under nice) still gives each target its share.
# libFuzzer stops on SIGINT with its final stats and exit code 72.
fuzz_for_cpu() { # target dir corpus log
    local t="$1" dir="$2" corpus="$3" log="$4" pid="" cpu=0 tick
    tick=$(getconf CLK_TCK)
    nice -n 19 cargo "${tc[@]}" fuzz run --fuzz-dir "$dir" --release "$t" "$corpus" -- \
        -max_total_time=$((secs * 20)) -print_final_stats=1 >"$log" 2>&1 &
    local job=$!
    while kill -0 "$job" 2>/dev/null; do
        sleep 5
        [ -n "$pid" ] && [ -e "/proc/$pid" ] || pid=$(pgrep -f "^$CARGO_TARGET_DIR/[^ ]*/release/$t( |\$)" | head -n 1 || true)
        [ -n "$pid" ] || continue
        cpu=$(awk -v t="$tick" '{ print int(($14 + $15) / t) }' "/proc/$pid/stat" 2>/dev/null || echo "$cpu")
        if [ "$cpu" -ge "$secs" ]; then kill -INT "$pid" 2>/dev/null || true; fi
    done
    local rc=0
    wait "$job" || rc=$?
    fuzz_cpu="$cpu"
    [ "$rc" = 0 ] || [ "$rc" = 72 ] || grep -q 'run interrupted' "$log"
}

summary=()
for t in "${wanted[@]}"; do
    dir="${dir_of[$t]:-}"
    if [ -z "$dir" ]; then
        echo "ci/fuzz.sh: unknown target '$t' (known: ${!dir_of[*]})" >&2
        exit 2
    fi
    corpus="$dir/corpus/$t"
    mkdir -p "$corpus"
    if [ "$replay" = 1 ]; then
        echo "ci/fuzz.sh: replaying $(find "$corpus" -type f | wc -l) inputs of $t"
        log="$(mktemp)"
        nice -n 19 cargo "${tc[@]}" fuzz run --fuzz-dir "$dir" --release "$t" "$corpus" -- -runs=0 \
            >"$log" 2>&1 || { tail -n 40 "$log"; exit 1; }
        rm -f "$log"
        continue
    fi
    echo "ci/fuzz.sh: $t for ${secs} CPU seconds"
    log="$(mktemp)"
    start=$(date +%s)
    fuzz_for_cpu "$t" "$dir" "$corpus" "$log" || { tail -n 40 "$log"; exit 1; }
    wall=$(( $(date +%s) - start ))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    tail -n 3 "$log"
    rm -f "$log"
    nice -n 19 cargo "${tc[@]}" fuzz cmin --fuzz-dir "$dir" --release "$t" "$corpus" >/dev/null 2>&1 || true
    n=$(find "$corpus" -type f | wc -l)
    bytes=$(du -sb "$corpus" | cut -f1)
    summary+=("$t: ${fuzz_cpu} CPU s (${wall} s wall), ${runs:-?} runs, corpus $n inputs ($bytes bytes)")
done
[ ${#summary[@]} -eq 0 ] || printf 'ci/fuzz.sh: %s\n' "${summary[@]}"
