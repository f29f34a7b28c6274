#!/usr/bin/env python3
"""Plots the capacity of every Mahimahi trace in traces/data/ over one period.

Usage: python3 traces/plot_traces.py  (writes traces/plots/<trace>.png)
Capacity counts 1500 bytes per opportunity, in 100 ms bins (or 1 ms bins for traces
shorter than one second). Scenario schedules (loss ramps, rate cuts) are not applied.
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path):
    with open(path) as f:
        return [int(line) for line in f.read().split("\n") if line]


def main():
    data = os.path.join(HERE, "data")
    out = os.path.join(HERE, "plots")
    os.makedirs(out, exist_ok=True)
    for name in sorted(os.listdir(data)):
        times = load(os.path.join(data, name))
        period = times[-1]
        bin_ms = 100 if period >= 1000 else 1
        nbins = max(1, -(-period // bin_ms))
        counts = [0] * nbins
        for t in times:
            counts[min(nbins - 1, max(0, t - 1) // bin_ms)] += 1
        rate = [c * 1500 * 8 / (bin_ms / 1000) / 1e6 for c in counts]
        xs = [i * bin_ms / 1000 for i in range(nbins)]
        mean = len(times) * 1500 * 8 / (period / 1000) / 1e6
        fig, ax = plt.subplots(figsize=(8, 3))
        ax.step(xs, rate, where="post", linewidth=0.8)
        ax.axhline(mean, color="red", linestyle="--", linewidth=0.8, label=f"mean {mean:.3g} Mbit/s")
        ax.set_xlabel("time (s), one period")
        ax.set_ylabel(f"capacity (Mbit/s, {bin_ms} ms bins)")
        ax.set_title(name)
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right")
        fig.tight_layout()
        fig.savefig(os.path.join(out, name + ".png"), dpi=80)
        plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
