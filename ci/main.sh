#!/usr/bin/env bash
# The main job: a multipath HTTP/3 download over emulated LTE + Wi-Fi paths
# (scenario lte-wifi-A1: LTE 12 Mbit/s, RTT 80 ms; Wi-Fi 20 Mbit/s, RTT 40 ms,
# lossy) on the embedded virtual-time simulator: the client sends a GET over
# HTTP/3, the server answers with a generated body that the client checks byte by
# byte. Once per congestion-controller / scheduler pair, printing each run's
# summary table (time, goodput, per-path bytes, share, RTT, losses, retransmitted
# and redundant bytes, receiver out-of-order bytes). Installs what it needs.
#
#   bash ci/main.sh [SCENARIO] [BYTES] [MAX_SIMULATED_S]
#
# Each run downloads BYTES (default 200 MB: about a minute, so the download runs
# through the scenario's first Wi-Fi loss phase, 30-50 s) and stops when the
# response is complete (or at MAX_SIMULATED_S, default 240), so the table shows
# the completion time. The pairs compare mpquic's coupled-bbr (coupled only where
# paths share a bottleneck), the paper's Alg. 1 (coupled-bbr-alg1) and uncoupled
# bbr with cubic and lia.
#
# Results (CSV/JSON time series and summaries, PNG figures) go to
# out/main/<cc>-<scheduler>/; figures comparing the runs to out/main/compare-*.png.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
source ci/env.sh

scenario="${1:-lte-wifi-A1}"
bytes="${2:-200000000}"
duration="${3:-240}"
pairs="cubic:minrtt lia:minrtt bbr:minrtt coupled-bbr:minrtt coupled-bbr:arp coupled-bbr-alg1:arp"
cargo build --release -q -p mpquic-sim
sim="$CARGO_TARGET_DIR/release/mpquic-sim"

for pair in $pairs; do
    cc="${pair%%:*}"
    sched="${pair#*:}"
    echo
    echo "=== HTTP/3 download of $bytes bytes, $scenario, cc=$cc, scheduler=$sched ==="
    "$sim" --workload h3 --scenario "$scenario" --cc "$cc" --scheduler "$sched" \
        --bytes "$bytes" --duration "$duration" --out "out/main/$cc-$sched"
done
echo
runs=()
for pair in $pairs; do
    runs+=("out/main/${pair%%:*}-${pair#*:}")
done
# Figures: each run's per-path throughput, out-of-order bytes and RTT over time,
# and all runs side by side (completion time, out-of-order bytes, path shares).
for run in "${runs[@]}"; do
    python3 sim/plot.py "$run/series.csv" > /dev/null
done
echo "figures:"
python3 sim/compare.py "${runs[@]}" | sed 's/^/  /'
echo "  and out/main/<run>/series-{throughput,ooo,rtt}.png per run"
echo "time series and summaries (CSV, JSON): out/main/<run>/"
