"""Matplotlib helpers in the style of the Coupled BBR / AR&P paper's figures
(seed 000, Fig. 9-11): per-path throughput and goodput over time, receiver
out-of-order bytes over time, CDFs, and bar charts of sweep results.

Every function takes an optional ``ax`` (draws into it) and ``save`` (a PNG path),
and returns the matplotlib ``Figure``. Inputs are :class:`mpquic.SimResult` objects;
comparisons take a dict ``{label: SimResult}`` (e.g. one per scheduler).
"""

import os

import matplotlib

if not os.environ.get("DISPLAY") and not os.environ.get("MPLBACKEND"):
    # Headless machines (CI): draw to files only.
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

_MBIT = 1e6


def _figure(ax, figsize=(6.4, 3.6)):
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize)
    return fig, ax


def _finish(fig, ax, title, save):
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    if save is not None:
        d = os.path.dirname(os.fspath(save))
        if d:
            os.makedirs(d, exist_ok=True)
        fig.savefig(save, dpi=120)
    return fig


def _as_dict(results):
    if isinstance(results, dict):
        return results
    if isinstance(results, (list, tuple)):
        return {_label(r): r for r in results}
    return {_label(results): results}


def _label(r):
    s = r.summary
    return f"{s.get('scheduler')} / {s.get('cc')}"


def throughput(result, ax=None, goodput=True, flow=0, title=None, save=None):
    """Throughput of each path over time (Mbit/s), with the connection's goodput.

    Like seed 000 Fig. 10: a failing or degrading path shows as its curve
    dropping while the others take over.
    """
    fig, ax = _figure(ax)
    df = result.paths[result.paths["flow"] == flow]
    for name, g in df.groupby("path", sort=False):
        ax.plot(g["t"], g["throughput_bps"] / _MBIT, label=f"path {name}")
    if goodput:
        ts = result.timeseries[result.timeseries["flow"] == flow]
        ax.plot(ts["t"], ts["goodput_bps"] / _MBIT, "k--", linewidth=1.2, label="goodput")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="best", fontsize="small")
    if title is None:
        s = result.summary
        title = f"{s.get('scenario')}: {s.get('cc')}, {s.get('scheduler')}"
    return _finish(fig, ax, title, save)


def goodput(results, ax=None, flow=0, title=None, save=None):
    """Goodput over time (Mbit/s) of several runs, e.g. one per scheduler (Fig. 10)."""
    fig, ax = _figure(ax)
    for label, r in _as_dict(results).items():
        ts = r.timeseries[r.timeseries["flow"] == flow]
        ax.plot(ts["t"], ts["goodput_bps"] / _MBIT, label=label)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="best", fontsize="small")
    return _finish(fig, ax, title, save)


def ooo(results, ax=None, flow=0, title=None, save=None):
    """Receiver out-of-order bytes over time, one curve per run (Fig. 11(b))."""
    fig, ax = _figure(ax)
    for label, r in _as_dict(results).items():
        ts = r.timeseries[r.timeseries["flow"] == flow]
        ax.plot(ts["t"], ts["ooo_bytes"] / 1e3, label=label)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("out-of-order bytes (kB)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="best", fontsize="small")
    return _finish(fig, ax, title, save)


def _cdf_xy(values):
    v = np.sort(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    if v.size == 0:
        return v, v
    return v, np.arange(1, v.size + 1) / v.size


def cdf(data, ax=None, xlabel=None, title=None, save=None, column="ooo_bytes"):
    """Empirical CDFs.

    ``data`` is ``{label: values}`` with arrays/Series of values, or
    ``{label: SimResult}`` (then ``column`` of its ``timeseries`` is used, default
    the receiver out-of-order bytes), or a single SimResult.
    """
    fig, ax = _figure(ax)
    if not isinstance(data, dict):
        data = _as_dict(data)
    for label, v in data.items():
        if hasattr(v, "timeseries"):
            v = v.timeseries[column]
        x, y = _cdf_xy(v)
        ax.step(x, y, where="post", label=str(label))
    ax.set_xlabel(xlabel or column.replace("_", " "))
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right", fontsize="small")
    return _finish(fig, ax, title, save)


def rtt_cdf(result, ax=None, flow=0, title=None, save=None):
    """CDF of each path's smoothed RTT samples (ms), one curve per path."""
    df = result.paths[(result.paths["flow"] == flow) & (result.paths["srtt_ms"] > 0)]
    data = {f"path {name}": g["srtt_ms"] for name, g in df.groupby("path", sort=False)}
    return cdf(data, ax=ax, xlabel="smoothed RTT (ms)", title=title, save=save)


def bars(df, x, y, hue, ax=None, scale=1.0, ylabel=None, title=None, save=None):
    """Grouped bar chart of a sweep DataFrame: mean of ``y`` for each ``x`` and ``hue``
    (Fig. 9 / 11(a) style), e.g. ``bars(df, "scenario", "goodput_bps", "scheduler",
    scale=1e-6, ylabel="goodput (Mbit/s)")``. Error bars show the standard deviation
    across seeds when there are several runs per bar.
    """
    fig, ax = _figure(ax, figsize=(7.0, 3.8))
    g = df.groupby([x, hue], sort=False)[y]
    mean = g.mean().unstack(hue) * scale
    std = (g.std().unstack(hue) * scale).fillna(0.0)
    n = max(1, mean.shape[1])
    width = 0.8 / n
    xs = np.arange(mean.shape[0])
    for i, col in enumerate(mean.columns):
        ax.bar(xs + (i - (n - 1) / 2) * width, mean[col], width, yerr=std[col],
               label=str(col), capsize=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(v) for v in mean.index], rotation=0)
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel or y)
    ax.legend(loc="best", fontsize="small", title=hue)
    return _finish(fig, ax, title, save)
