#!/usr/bin/env bash
# The engines' cost per byte in instructions (machine-independent, unlike
# wall time on a shared VM): callgrind counts pairbench moving BYTES and
# moving 1 byte; the difference over BYTES leaves out the handshake and
# setup. mpquic is counted on one path with the copying stream calls (as
# quiche), on one path with `--zero-copy` (the body shared with the stream,
# data taken where it lies) and on two paths (`--paths 2`).
#
#   bash ci/bench-instructions.sh [BYTES]   # the figures, quiche's beside (64 MiB)
#   bash ci/bench-instructions.sh --check   # CI guard: fails when a figure grew
#   bash ci/bench-instructions.sh --update  # rewrites the guard's baseline
#
# --check and --update measure at 16 MiB (the per-byte figures agree with
# 64 MiB's to 0.5%) the three mpquic figures and the simulator's whole
# `mpquic-sim --bench --duration 3` (total instructions), and compare them
# with ci/instructions.baseline: a figure more than THRESHOLD percent (3 by
# default) above its baseline fails the check, naming it. Over 8 runs the
# figures moved by 0.05% (one path, zero-copy), 1.0% (two paths) and 0.02%
# (the simulator): the programs are deterministic but for their random
# connection IDs and keys. What moves them is the code, the compiler and the
# libraries: refresh the baseline with --update in the commit that changes
# them, saying why. About 25-50 s on 2 cores, after the builds.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
MODE=report
case "${1:-}" in
--check) MODE=check ;;
--update) MODE=update ;;
-*)
    echo "usage: $0 [BYTES | --check | --update]" >&2
    exit 2
    ;;
esac
BASELINE=ci/instructions.baseline
THRESHOLD=${THRESHOLD:-3}
SIM_SECONDS=3
if [ "$MODE" = report ]; then BYTES=${1:-67108864}; else BYTES=16777216; fi
# pairbench alone (the engine without the simulator's feature), then the simulator.
cargo build --release --example pairbench 2>&1 | grep -E "^(warning|error)" || true
PB="$CARGO_TARGET_DIR/release/examples/pairbench"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

count() { # bytes impl [flags] -> instructions
    local n=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.${*// /_}.$n" "$PB" --bytes "$n" --impl "$@" \
        2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

per_byte() { # name impl [flags]: writes "name value" (instructions/byte) to $TMP/fig.name
    local name=$1
    shift
    local big small
    big=$(count "$BYTES" "$@")
    small=$(count 1 "$@")
    python3 -c "import sys; b,s,n=map(int,sys.argv[1:]); print(f'$name {(b-s)/n:.4f}')" \
        "$big" "$small" "$BYTES" >"$TMP/fig.$name"
    if [ "$MODE" = report ]; then
        python3 -c "import sys; b,s,n=map(int,sys.argv[1:]); print(f'$*: {(b-s)/n:.2f} instructions/byte ({b:,} for {n:,} B, {s:,} for 1 B)')" \
            "$big" "$small" "$BYTES"
    fi
}

if [ "$MODE" = report ]; then
    per_byte mpquic mpquic &
    per_byte mpquic-zero-copy mpquic --zero-copy &
    wait
    per_byte mpquic-2-paths mpquic --paths 2 &
    per_byte quiche quiche &
    wait
    exit 0
fi

cargo build --release -p mpquic-sim 2>&1 | grep -E "^(warning|error)" || true
SIM="$CARGO_TARGET_DIR/release/mpquic-sim"
start=$(date +%s)
per_byte mpquic-1-path mpquic &
per_byte mpquic-2-paths mpquic --paths 2 &
wait
per_byte mpquic-zero-copy mpquic --zero-copy &
(valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.sim" "$SIM" --bench --duration "$SIM_SECONDS" \
    2>&1 >/dev/null | sed -n "s/.*Collected : \([0-9]*\).*/sim-bench-${SIM_SECONDS}s \1/p" >"$TMP/fig.sim") &
wait
cat "$TMP"/fig.* | sort >"$TMP/now"
echo "instructions (per byte at $BYTES B; the simulator's total), measured in $(($(date +%s) - start)) s:"
sed 's/^/  /' "$TMP/now"

if [ "$MODE" = update ]; then
    {
        echo "# ci/bench-instructions.sh --check compares with these (--update rewrites them):"
        echo "# mpquic-*: pairbench instructions/byte at $BYTES B; sim-bench-*: mpquic-sim --bench total."
        cat "$TMP/now"
    } >"$BASELINE"
    echo "wrote $BASELINE"
    exit 0
fi

[ -f "$BASELINE" ] || {
    echo "no $BASELINE: run $0 --update" >&2
    exit 1
}
python3 - "$BASELINE" "$TMP/now" "$THRESHOLD" <<'EOF'
import sys
def load(p):
    return {k: float(v) for k, v in (l.split() for l in open(p) if l.strip() and not l.startswith("#"))}
def show(v):
    return f"{v:,.0f}" if v >= 1e6 else f"{v:.4f}"
base, now, limit = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
failed = []
for name in sorted(set(base) | set(now)):
    if name not in now or name not in base:
        failed.append(f"{name}: in {'the baseline' if name in base else 'this run'} only")
        continue
    change = (now[name] / base[name] - 1) * 100
    print(f"  {name}: {show(now[name])} against {show(base[name])} ({change:+.2f}%)")
    if change > limit:
        failed.append(f"{name} grew {change:.2f}% (baseline {show(base[name])}, now {show(now[name])}; threshold {limit:g}%)")
for f in failed:
    print(f"bench-instructions: {f}", file=sys.stderr)
if failed:
    print("bench-instructions: if the growth is expected, run ci/bench-instructions.sh --update and commit ci/instructions.baseline", file=sys.stderr)
    sys.exit(1)
print(f"bench-instructions: every figure within {limit:g}% of its baseline")
EOF
