"""Figures drawn like the papers': grouped bars, time series, CDFs."""

import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def save(fig, out_dir, name, outcome):
    """Writes ``fig`` as ``out_dir/name`` and lists it in the outcome (no-op without a dir)."""
    if out_dir is not None:
        fig.tight_layout()
        fig.savefig(pathlib.Path(out_dir) / name, dpi=90)
        outcome.figures.append(name)
    plt.close(fig)


def grouped_bars(ax, groups, series, values, ylabel, fmt=None):
    """Bars per group (x) and series (colour); ``values[(group, series)]``."""
    n = len(series)
    width = 0.8 / max(n, 1)
    for j, s in enumerate(series):
        xs = [i + (j - (n - 1) / 2) * width for i in range(len(groups))]
        ys = [values.get((g, s), 0) or 0 for g in groups]
        ax.bar(xs, ys, width, label=str(s))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([str(g) for g in groups])
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)


def new(w=6.4, h=3.6, ncols=1):
    fig, axes = plt.subplots(1, ncols, figsize=(w, h))
    return fig, axes


def figure(w, h):
    """An empty figure to add a grid of subplots to."""
    return plt.figure(figsize=(w, h))


def stacked(w=8, h=4.6, rows=2):
    """Rows of axes sharing the time axis."""
    return plt.subplots(rows, 1, figsize=(w, h), sharex=True)


def cdf(ax, values, label):
    xs = sorted(values)
    ys = [(i + 1) / len(xs) for i in range(len(xs))]
    ax.step(xs, ys, where="post", label=label)
