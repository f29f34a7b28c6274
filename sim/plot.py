#!/usr/bin/env python3
"""Turn mpquic-sim's series.csv into PNGs.

    mpquic-sim --scenario testbed-2x100 --out out/run1
    python3 sim/plot.py out/run1/series.csv            # writes PNGs next to the CSV

Writes <stem>-throughput.png (per-path throughput and goodput over time, one panel per
flow) and <stem>-ooo.png (receiver out-of-order bytes over time), plus <stem>-rtt.png
(sender smoothed RTT per path).
"""
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    paths = defaultdict(lambda: defaultdict(list))  # flow -> path -> [(t, row)]
    flows = defaultdict(dict)  # flow -> t -> (goodput, ooo)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            fl = int(row["flow"])
            t = float(row["t_s"])
            paths[fl][row["path"]].append((t, row))
            flows[fl][t] = (float(row["goodput_bps"]), int(row["ooo_bytes"]))
    return paths, flows


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    src = argv[1]
    out_dir = argv[2] if len(argv) > 2 else os.path.dirname(os.path.abspath(src))
    stem = os.path.splitext(os.path.basename(src))[0]
    paths, flows = load(src)
    if not flows:
        print(f"{src}: no samples", file=sys.stderr)
        return 1
    n = len(flows)

    fig, axes = plt.subplots(n, 1, figsize=(10, 3.2 * n), squeeze=False, sharex=True)
    for ax, fl in zip(axes[:, 0], sorted(flows)):
        for name, pts in sorted(paths[fl].items()):
            ax.plot([t for t, _ in pts], [float(r["throughput_bps"]) / 1e6 for _, r in pts],
                    label=f"path {name}")
        ts = sorted(flows[fl])
        ax.plot(ts, [flows[fl][t][0] / 1e6 for t in ts], "k--", linewidth=1, label="goodput")
        ax.set_ylabel("Mbit/s")
        ax.set_title(f"flow {fl}: throughput per path")
        ax.legend(loc="best", fontsize="small")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    p = os.path.join(out_dir, f"{stem}-throughput.png")
    fig.savefig(p, dpi=120)
    print(p)

    fig, ax = plt.subplots(figsize=(10, 3.2))
    for fl in sorted(flows):
        ts = sorted(flows[fl])
        ax.plot(ts, [flows[fl][t][1] / 1e3 for t in ts], label=f"flow {fl}")
    ax.set_ylabel("out-of-order kB")
    ax.set_xlabel("time (s)")
    ax.set_title("receiver out-of-order bytes")
    ax.legend(loc="best", fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    p = os.path.join(out_dir, f"{stem}-ooo.png")
    fig.savefig(p, dpi=120)
    print(p)

    fig, ax = plt.subplots(figsize=(10, 3.2))
    for fl in sorted(flows):
        for name, pts in sorted(paths[fl].items()):
            ax.plot([t for t, _ in pts], [float(r["srtt_ms"]) for _, r in pts],
                    label=f"flow {fl} path {name}")
    ax.set_ylabel("srtt (ms)")
    ax.set_xlabel("time (s)")
    ax.set_title("sender smoothed RTT per path")
    ax.legend(loc="best", fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    p = os.path.join(out_dir, f"{stem}-rtt.png")
    fig.savefig(p, dpi=120)
    print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
