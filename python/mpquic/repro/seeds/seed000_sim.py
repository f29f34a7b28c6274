"""Seed 000 simulation figures (three paths, Fig. 16 topology): Fig. 17-20."""

import random

import pandas as pd

from .. import figs, topo
from ..registry import Cmp, Experiment, Outcome, point, register

# The paper's controllers with their background flows' (Alg. 1 is the paper's Coupled
# BBR; mpquic's coupled-bbr, with shared-bottleneck detection, is shown beside it).
PAIRS = {"coupled-bbr-alg1": "bbr", "coupled-bbr": "bbr", "balia": "newreno", "olia": "newreno",
         "lia": "newreno"}
COMBOS = [("coupled-bbr-alg1", "arp"), ("coupled-bbr-alg1", "minrtt"), ("balia", "minrtt"),
          ("olia", "minrtt"), ("lia", "minrtt"), ("coupled-bbr", "arp")]


def _three(name, dur, bg, mbps=100, delay=20, loss=0.0, schedules=None):
    schedules = schedules or [None, None, None]
    paths = [topo.path(f"p{i + 1}", mbps, delay, loss, schedules[i]) for i in range(3)]
    return topo.scenario(name, paths, dur, background=bg)


FIG17_LOSS = [0.0, 0.001, 0.01, 0.1, 0.5]  # %
FIG17_DELAY = [2, 10, 50, 100]  # ms


def _fig17_points(quick):
    dur = 8.0 if quick else 30.0
    loss = [0.0, 0.1] if quick else FIG17_LOSS
    delay = [10, 100] if quick else FIG17_DELAY
    pts = []
    for cc, bg in PAIRS.items():
        for p in loss:
            pts.append(point({"scenario": _three(f"fig17a-{p}", dur, bg, loss=p / 100), "cc": cc,
                              "duration": dur, "seed": 1}, fig="a", x=p, cc=cc))
        for d in delay:
            pts.append(point({"scenario": _three(f"fig17b-{d}", dur, bg, delay=d, loss=0.0005), "cc": cc,
                              "duration": dur, "seed": 1}, fig="b", x=d, cc=cc))
    return pts


def _bg_mean(r):
    return sum(r[f"bg{i}.goodput_bps"] for i in range(3)) / 3 / 1e6


def _fig17_analyse(df, out, quick):
    o = Outcome()
    lines = ["Three 100 Mbit/s paths, one single-path background flow each (TCP BBR beside "
             "Coupled BBR, NewReno beside LIA/OLIA/BALIA, as in the paper); (a) loss 0-0.5 % at "
             "20 ms, (b) one-way delay 2-100 ms at 0.05 % loss. Throughput of the multipath flow "
             "(Mbit/s) / mean background flow; the figure draws 0 % loss at 10^-4 %.", "", "| fig | x | " + " | ".join(PAIRS) + " |",
             "|---|---|" + "---:|" * len(PAIRS)]
    for (f, x), g in df.groupby(["fig", "x"]):
        cells = {r["cc"]: f"{r['goodput_bps'] / 1e6:.1f} / {_bg_mean(r):.1f}" for _, r in g.iterrows()}
        lines.append(f"| {f} | {x} | " + " | ".join(cells.get(c, "–") for c in PAIRS) + " |")
    o.text = "\n".join(lines)
    a = df[df["fig"] == "a"]
    lo, hi = a["x"].min(), a["x"].max()

    def keep(cc):
        g = a[a["cc"] == cc].set_index("x")["goodput_bps"]
        return g[hi] / g[lo]
    cb, lia = keep("coupled-bbr-alg1"), keep("lia")
    o.cmps.append(Cmp("Fig. 17(a)", f"Coupled BBR (Alg. 1) throughput at {hi} % loss ÷ at {lo} %", None, cb,
                      "×", check="≥ 0.9 (\"almost does not decline\")", passed=cb >= 0.9,
                      source="text: \"With the increase of random loss rate, the throughput of Coupled "
                             "BBR almost does not decline\""))
    o.cmps.append(Cmp("Fig. 17(a)", f"LIA throughput at {hi} % loss ÷ at {lo} %", None, lia, "×",
                      check="≤ 0.5 (\"declines significantly\")", passed=lia <= 0.5,
                      source="text: \"The throughput of other MPTCP congestion control algorithms "
                             "declines significantly\""))
    for fig_id, col, xlabel, log in [("a", "x", "random loss rate (%)", True), ("b", "x", "path delay (ms)", True)]:
        fig, ax = figs.new(6, 3.4)
        for cc in PAIRS:
            g = df[(df["fig"] == fig_id) & (df["cc"] == cc)].sort_values(col)
            ax.plot(g[col].replace(0, 1e-4 if fig_id == "a" else 1), g["goodput_bps"] / 1e6, marker="o", label=cc)
        if log:
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("throughput (Mbit/s)")
        ax.set_title(f"Fig. 17({fig_id})")
        ax.legend(fontsize=7)
        figs.save(fig, out, f"000-fig17{fig_id}.png", o)
    return o


def _fig18_points(quick):
    dur = 15.0 if quick else 30.0
    ramp = [topo.ramp("loss", 10.0, 30.0, 0.0001, 0.01)]
    return [point({"scenario": _three("fig18", dur, None, loss=0.0, schedules=[ramp] * 3), "cc": cc,
                   "duration": dur, "seed": 1}, series=True, cc=cc) for cc in PAIRS]


def _goodput(r):
    s = pd.DataFrame(r["_series"])
    return s[s["flow"] == 0].set_index("t")


def _fig18_analyse(df, out, quick):
    o = Outcome()
    fig, axes = figs.new(12, 2.8, len(df))
    lines = ["Three 100 Mbit/s, 20 ms paths; loss 0.01 % rising linearly to 1 % from 10 s to 30 s on "
             "all three. Mean goodput (Mbit/s) in 0-10 s and in the last 5 s.", "",
             "| cc | 0-10 s | last 5 s |", "|---|---:|---:|"]
    for ax, (_, r) in zip(axes, df.iterrows()):
        g = _goodput(r)["goodput_bps"] / 1e6
        end = g.index.max()
        lines.append(f"| {r['cc']} | {g[g.index <= 10].mean():.1f} | {g[g.index > end - 5].mean():.1f} |")
        ax.plot(g.index, g.values, lw=0.7)
        ax.set_title(r["cc"], fontsize=8)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("goodput (Mbit/s)")
    o.text = "\n".join(lines)
    figs.save(fig, out, "000-fig18.png", o)
    return o


def fig19_space(n, seed=19):
    """``n`` random points of the paper's space: B 10-100 Mbit/s, d 1-100 ms, p 0-5 % per path."""
    rng = random.Random(seed)
    return [[(rng.uniform(10, 100), rng.uniform(1, 100), rng.uniform(0, 0.05)) for _ in range(3)]
            for _ in range(n)]


def _fig19_points(quick):
    n, dur = (6, 5.0) if quick else (100, 15.0)
    pts = []
    for k, space in enumerate(fig19_space(n)):
        paths = [topo.path(f"p{i + 1}", b, d, p) for i, (b, d, p) in enumerate(space)]
        sc = topo.scenario(f"fig19-{k}", paths, dur)
        for cc, s in COMBOS:
            pts.append(point({"scenario": sc, "cc": cc, "scheduler": s, "duration": dur, "seed": 1},
                             k=k, combo=f"{cc} + {s}"))
    return pts


def _fig19_why(df):
    """Rules out AR&P's copies as the cost: their median share of the bytes delivered."""
    g = df[df["combo"] == "coupled-bbr-alg1 + arp"]
    share = (g["copy_bytes"] / g["app_bytes"].clip(lower=1)).median()
    return (f"**not explained**; not AR&P's copies: they are a median {100 * share:.1f} % of the bytes "
            "delivered (copy_bytes in 000-fig19.csv), too few to cost what is lost")


def _fig19_analyse(df, out, quick):
    o = Outcome()
    med = df.groupby("combo")[["goodput_bps", "ooo_mean"]].median()
    lines = ["100 random points (B 10-100 Mbit/s, d 1-100 ms, p 0-5 % per path, seeded), three "
             "paths, no background flows, 15 s each; medians over the points.", "",
             "| combination | median goodput Mbit/s | median out-of-order kB |", "|---|---:|---:|"]
    for c, r in med.iterrows():
        lines.append(f"| {c} | {r['goodput_bps'] / 1e6:.1f} | {r['ooo_mean'] / 1e3:.1f} |")
    o.text = "\n".join(lines)
    cb_arp, cb_min = med.loc["coupled-bbr-alg1 + arp"], med.loc["coupled-bbr-alg1 + minrtt"]
    best_old = max(med.loc[f"{cc} + minrtt"]["goodput_bps"] for cc in ("lia", "olia", "balia"))
    much = cb_min["goodput_bps"] / best_old
    o.cmps.append(Cmp("Fig. 19(a)", "Coupled BBR+minRTT median goodput ÷ the best of LIA, OLIA, BALIA "
                      "(+minRTT)", None, much, "×", check="≥ 1.5 (\"much higher\")", passed=much >= 1.5,
                      source="text: \"the throughput of Coupled BBR with both minRTT and AR&P is much "
                             "higher than that of BALIA, OLIA, and LIA\""))
    gain = cb_arp["goodput_bps"] / cb_min["goodput_bps"]
    o.cmps.append(Cmp("Fig. 19(a)", "AR&P / minRTT median goodput under Coupled BBR", None, gain, "×",
                      check="> 1 (\"further improves\")", passed=gain > 1,
                      source="text: \"AR&P further improves the throughput based on Coupled BBR\"",
                      why=_fig19_why(df)))
    ooo_ratio = cb_arp["ooo_mean"] / cb_min["ooo_mean"] if cb_min["ooo_mean"] else None
    o.cmps.append(Cmp("Fig. 19(b)", "AR&P / minRTT median out-of-order bytes under Coupled BBR", None,
                      ooo_ratio, "×", check="< 1 (\"reduce the number of out-of-order packets\")",
                      passed=None if ooo_ratio is None else ooo_ratio < 1,
                      source="text: \"AR&P scheduler further improves the goodput and reduce the number "
                             "of out-of-order packets on the basis of Coupled BBR\""))
    fig, (a1, a2) = figs.new(10, 3.4, 2)
    for c, g in df.groupby("combo"):
        figs.cdf(a1, g["goodput_bps"] / 1e6, c)
        figs.cdf(a2, g["ooo_mean"] / 1e3, c)
    a1.set_xlabel("goodput (Mbit/s)")
    a2.set_xlabel("out-of-order (kB)")
    for ax in (a1, a2):
        ax.set_ylabel("CDF")
        ax.legend(fontsize=6)
    a1.set_title("Fig. 19(a)")
    a2.set_title("Fig. 19(b)")
    figs.save(fig, out, "000-fig19.png", o)
    return o


def _fig20_points(quick):
    dur = 30.0
    def bad(t0, t1):
        return [{"param": "rate", "interp": "step", "points": [[t0, 0.1], [t1, 1.0]]},
                {"param": "delay_ms", "interp": "step", "points": [[t0, 80.0], [t1, 0.0]]},
                {"param": "loss", "interp": "step", "points": [[t0, 0.01], [t1, 0.0001]]}]
    sc = _three("fig20", dur, None, loss=0.0001, schedules=[None, bad(10.0, 15.0), bad(20.0, 25.0)])
    return [point({"scenario": sc, "cc": cc, "scheduler": s, "duration": 20.0 if quick else dur, "seed": 1},
                  series=True, combo=f"{cc} + {s}") for cc, s in COMBOS]


def _fig20_analyse(df, out, quick):
    o = Outcome()
    lines = ["Three 100 Mbit/s, 20 ms paths with 0.01 % loss; path 2 becomes 10 Mbit/s, 100 ms, 1 % "
             "loss from 10 to 15 s, path 3 from 20 to 25 s. Mean goodput (Mbit/s) and mean out-of-order "
             "bytes (kB) while a path is bad vs while all are good.", "",
             "| combination | goodput good | goodput bad | out-of-order good | out-of-order bad |",
             "|---|---:|---:|---:|---:|"]
    fig = figs.figure(12, 4.8)
    for i, (_, r) in enumerate(df.iterrows()):
        g = _goodput(r)
        bad = ((g.index > 10) & (g.index <= 15)) | ((g.index > 20) & (g.index <= 25))
        good = (g.index > 3) & ~bad
        lines.append(f"| {r['combo']} | {g['goodput_bps'][good].mean() / 1e6:.1f} | "
                     f"{g['goodput_bps'][bad].mean() / 1e6:.1f} | {g['ooo_bytes'][good].mean() / 1e3:.0f} | "
                     f"{g['ooo_bytes'][bad].mean() / 1e3:.0f} |")
        a1 = fig.add_subplot(2, len(df), i + 1)
        a2 = fig.add_subplot(2, len(df), len(df) + i + 1)
        a1.plot(g.index, g["goodput_bps"] / 1e6, lw=0.6)
        a2.plot(g.index, g["ooo_bytes"] / 1e3, lw=0.6, color="tab:red")
        a1.set_title(r["combo"], fontsize=7)
        a1.set_ylabel("goodput (Mbit/s)", fontsize=7)
        a2.set_ylabel("out-of-order (kB)", fontsize=7)
        a2.set_xlabel("time (s)", fontsize=7)
    o.text = "\n".join(lines)
    figs.save(fig, out, "000-fig20.png", o)
    return o


register(Experiment("000-fig17", "Fig. 17(a)(b): Coupled BBR vs LIA/OLIA/BALIA on three 100 Mbit/s paths as loss and delay grow",
                    _fig17_points, _fig17_analyse))
register(Experiment("000-fig18", "Fig. 18: goodput over time as loss rises from 0.01 % to 1 % on three paths",
                    _fig18_points, _fig18_analyse))
register(Experiment("000-fig19", "Fig. 19(a)(b): CDFs of goodput and out-of-order bytes over 100 random 3-path networks, five cc+scheduler combinations",
                    _fig19_points, _fig19_analyse))
register(Experiment("000-fig20", "Fig. 20: goodput and out-of-order bytes over time as paths 2 then 3 turn bad",
                    _fig20_points, _fig20_analyse))
