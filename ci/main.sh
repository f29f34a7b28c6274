#!/usr/bin/env bash
# The main job: a multipath download over emulated LTE + Wi-Fi paths (scenario
# lte-wifi-A1: LTE 12 Mbit/s, RTT 80 ms; Wi-Fi 20 Mbit/s, RTT 40 ms, lossy),
# run on the embedded virtual-time simulator, once per congestion-controller /
# scheduler pair, printing each run's summary table. Installs what it needs.
#
#   bash ci/main.sh [SCENARIO] [DURATION_S]
#
# Results (CSV/JSON time series and summaries) go to out/main/<cc>-<scheduler>/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
source ci/env.sh

scenario="${1:-lte-wifi-A1}"
duration="${2:-30}"
cargo build --release -q -p mpquic-sim
sim="$CARGO_TARGET_DIR/release/mpquic-sim"

for pair in cubic:minrtt lia:minrtt coupled-bbr:minrtt coupled-bbr:arp bbr:rr; do
    cc="${pair%%:*}"
    sched="${pair#*:}"
    echo
    echo "=== $scenario, cc=$cc, scheduler=$sched, ${duration}s simulated ==="
    "$sim" --scenario "$scenario" --cc "$cc" --scheduler "$sched" --duration "$duration" \
        --out "out/main/$cc-$sched"
done
echo
echo "time series and summaries: out/main/; plot one with: python3 sim/plot.py out/main/<run>"
