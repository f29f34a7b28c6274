#!/usr/bin/env python3
"""Compare several mpquic-sim runs in one set of figures.

    python3 sim/compare.py out/main/cubic-minrtt out/main/coupled-bbr-arp ... [-o DIR]

Each argument is a run directory (mpquic-sim --out) holding series.csv and
summary.json; the run is labelled by its directory name. Writes into DIR (default:
the first run's parent directory):
  compare-goodput.png   goodput over time, one line per run
  compare-ooo.png       receiver out-of-order bytes over time
  compare-summary.png   completion time, mean out-of-order bytes and per-path shares
"""
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(run):
    """(label, {t: (goodput_bps, ooo_bytes)} of flow 0, summary of flow 0)."""
    series = {}
    with open(os.path.join(run, "series.csv"), newline="") as f:
        for row in csv.DictReader(f):
            if row["flow"] == "0":
                series[float(row["t_s"])] = (float(row["goodput_bps"]), int(row["ooo_bytes"]))
    with open(os.path.join(run, "summary.json")) as f:
        summary = json.load(f)["flows"][0]
    return os.path.basename(os.path.normpath(run)), series, summary


def over_time(runs, index, scale, ylabel, title, path):
    fig, ax = plt.subplots(figsize=(10, 3.6))
    for label, series, _ in runs:
        ts = sorted(series)
        ax.plot(ts, [series[t][index] * scale for t in ts], label=label, linewidth=1)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(path)


def summary_bars(runs, path):
    labels = [r[0] for r in runs]
    xs = range(len(runs))
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    done = [r[2]["completion_s"] or 0.0 for r in runs]
    axes[0].bar(xs, done, color="tab:blue")
    axes[0].set_ylabel("completion time (s)")
    axes[1].bar(xs, [r[2]["ooo_mean"] / 1e3 for r in runs], color="tab:orange")
    axes[1].set_ylabel("mean out-of-order (kB)")
    names = sorted({p["name"] for r in runs for p in r[2]["paths"]})
    bottom = [0.0] * len(runs)
    for name in names:
        share = [next((p["share"] for p in r[2]["paths"] if p["name"] == name), 0.0) * 100 for r in runs]
        axes[2].bar(xs, share, bottom=bottom, label=name)
        bottom = [b + s for b, s in zip(bottom, share)]
    axes[2].set_ylabel("share of bytes (%)")
    axes[2].legend(loc="lower right", fontsize="small")
    for ax in axes:
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize="small")
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(path)


def main(argv):
    args = argv[1:]
    out = None
    if "-o" in args:
        i = args.index("-o")
        if i + 1 >= len(args):
            print("compare.py: -o needs a directory", file=sys.stderr)
            return 2
        out = args[i + 1]
        del args[i:i + 2]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args else 2
    try:
        runs = [load(r) for r in args]
    except (OSError, KeyError, ValueError, IndexError) as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 1
    out = out or os.path.dirname(os.path.abspath(os.path.normpath(args[0])))
    os.makedirs(out, exist_ok=True)
    over_time(runs, 0, 1e-6, "goodput (Mbit/s)", "goodput over time",
              os.path.join(out, "compare-goodput.png"))
    over_time(runs, 1, 1e-3, "out-of-order (kB)", "receiver out-of-order bytes",
              os.path.join(out, "compare-ooo.png"))
    summary_bars(runs, os.path.join(out, "compare-summary.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
