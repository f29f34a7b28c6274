"""Seed 003 (MPTCP-rec, receiver-centric scheduling on heterogeneous wireless paths)."""

import pandas as pd

from .. import figs
from ..registry import Cmp, Experiment, Outcome, not_attempted, point, register

SCHEDS = ["rec", "minrtt", "rr", "lpc", "let", "blest", "ecf", "arp"]
# The paper's Fig. 7 peak out-of-order DSN (3e5 vs 1.8e5) and text (+40.93 % throughput,
# -48.73 % end-to-end delay), rec against standard MPTCP.
PAPER = {"ooo_peak": 1.8 / 3.0, "throughput": 1.4093, "delay": 1 - 0.4873}
THROUGHPUT_SOURCE = ("text: \"the MPTCP-rec throughput is about 40.93% higher than that of the "
                     "standard MPTCP\" (1 + 0.4093)")


def _points(quick):
    dur = 30.0 if quick else 120.0
    scheds = ["rec", "minrtt"] if quick else SCHEDS
    return [point({"scenario": "hetero-3path", "cc": "lia", "scheduler": s, "duration": dur,
                   "seed": 1}, series=True, sched=s) for s in scheds]


def _delay_jitter(row):
    """Share-weighted path delay (srtt/2) and its jitter (std over samples), ms."""
    p = pd.DataFrame(row["_paths"])
    p = p[(p["flow"] == 0) & (p["throughput_bps"] > 0)]
    if p.empty:
        return None, None
    w = p["throughput_bps"]
    per_t = (p.assign(wd=p["srtt_ms"] / 2 * w).groupby("t")["wd"].sum()
             / w.groupby(p["t"]).sum())
    return per_t.mean(), per_t.diff().abs().mean()


def _analyse(df, out, quick):
    o = Outcome()
    rows = {}
    for _, r in df.iterrows():
        d, j = _delay_jitter(r)
        rows[r["sched"]] = {"goodput": r["goodput_bps"] / 1e6, "ooo_max": r["ooo_max"],
                            "ooo_mean": r["ooo_mean"], "delay": d, "jitter": j}
    lines = ["`traces/hetero-3path.toml` (the paper's Table 1: Wi-Fi 11 Mbit/s, WiMax 10 Mbit/s, "
             "UMTS 384 kbit/s, uniform + Markov loss), LIA, 120 s. Out-of-order is the receiver's "
             "out-of-order bytes (the paper's O3-DSN is a DSN offset, also in bytes); end-to-end "
             "delay is the throughput-weighted one-way path delay (srtt/2), jitter its mean change "
             "between 100 ms samples.", "",
             "| scheduler | goodput Mbit/s | out-of-order peak kB | mean kB | delay ms | jitter ms |",
             "|---|---:|---:|---:|---:|---:|"]
    for s, v in rows.items():
        lines.append(f"| {s} | {v['goodput']:.2f} | {v['ooo_max'] / 1e3:.0f} | {v['ooo_mean'] / 1e3:.0f} | "
                     f"{v['delay']:.0f} | {v['jitter']:.1f} |")
    lines += ["", "Every scheduler is loss-bound here: 2.5 % uniform plus 1 % burst loss at 220-420 ms "
              "RTT give a Reno-style flow about 0.3 Mbit/s per path (Mathis), far below the paths' "
              "rates, so the receive buffer never fills and buffer blocking — what rec avoids — "
              "never happens. The paper's gains come from that blocking."]
    o.text = "\n".join(lines)
    rec, std = rows["rec"], rows["minrtt"]
    o.cmps.append(Cmp("Fig. 7", "rec / standard: peak out-of-order", PAPER["ooo_peak"],
                      rec["ooo_max"] / std["ooo_max"], "×", claim="<",
                      source="text: peak out-of-order reception \"close to 3×10^5 using the standard "
                             "MPTCP, while it is approximately 1.8×10^5 when using the proposed MPTCP-rec\"",
                      why="real difference: loss-bound flows (see above) keep little data out of order with any scheduler"))
    o.cmps.append(Cmp("Fig. 8", "rec / standard: throughput", PAPER["throughput"],
                      rec["goodput"] / std["goodput"], "×", claim=">", source=THROUGHPUT_SOURCE,
                      why="real difference: the paper's standard MPTCP blocked its receive buffer; "
                          "our loss-bound flows never fill it (see above)"))
    o.cmps.append(Cmp("Fig. 9", "rec / standard: end-to-end delay", PAPER["delay"],
                      rec["delay"] / std["delay"], "×", claim="<",
                      source="text: \"MPTCP-rec's end-to-end delay is about 48.73% lower than that of "
                             "the standard MPTCP\" (1 − 0.4873)",
                      why="real difference: delay here is the paths' propagation and queueing, "
                          "the same for every scheduler when no buffer blocks (see above)"))
    o.cmps.append(Cmp("Fig. 8", "rec / round-robin: throughput", PAPER["throughput"],
                      rows["rec"]["goodput"] / rows["rr"]["goodput"] if "rr" in rows else None, "×",
                      claim=">", source=THROUGHPUT_SOURCE,
                      why="round-robin is the closest to the paper's \"blind\" standard scheduler"))
    fig, axes = figs.new(10, 3.2, 3)
    for ax, key, lab in zip(axes, ["ooo_max", "goodput", "delay"],
                            ["peak out-of-order (kB)", "goodput (Mbit/s)", "delay (ms)"]):
        scale = 1e-3 if key == "ooo_max" else 1
        ax.bar(list(rows), [rows[s][key] * scale for s in rows])
        ax.set_ylabel(lab)
        ax.tick_params(axis="x", labelsize=7, rotation=45)
    axes[0].set_title("Fig. 7-9 (ours)")
    figs.save(fig, out, "003-figs.png", o)
    fig, ax = figs.new(7, 3.2)
    for _, r in df[df["sched"].isin(["rec", "minrtt", "rr"])].iterrows():
        s = pd.DataFrame(r["_series"])
        s = s[s["flow"] == 0]
        ax.plot(s["t"], s["ooo_bytes"] / 1e3, lw=0.7, label=r["sched"])
    ax.set_xlabel("time (s)")
    ax.set_ylabel("out-of-order (kB)")
    ax.set_title("Fig. 7: out-of-order data over time")
    ax.legend()
    figs.save(fig, out, "003-ooo.png", o)
    return o


register(Experiment("003-figs",
                    "Fig. 6-10: rec vs minRTT and the other schedulers on hetero-3path (out-of-order, throughput, delay, jitter)",
                    _points, _analyse))

not_attempted("003", "Fig. 6 (sending vs receiving DSN over time)",
              "not built yet: needs per-packet DSN traces from the simulator")
not_attempted("003", "a constrained receive buffer run and the VBR background traffic",
              "not built yet: the hetero-3path scenario runs with an unbounded receive window and no background traffic")
