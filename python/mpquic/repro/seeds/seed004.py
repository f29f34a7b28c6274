"""Seed 004 (MPTCP over dual LTE while moving): Table 2 and the driving analysis."""

import pandas as pd

from .. import figs
from ..registry import Cmp, Experiment, Outcome, not_attempted, point, register
from ..scenarios import only_paths, rate_events

MOBILITY = ["stationary", "walking", "driving"]
CCS = ["cubic", "bbr", "lia", "olia", "balia", "coupled-bbr"]
# Table 2: MPTCP and TCP rate (Mbit/s), RTT (ms).
PAPER = {"stationary": (69.2, 42.1, 56, 57), "walking": (42.5, 34.8, 65, 68),
         "driving": (31.9, 31.7, 74, 75)}
# Fig. 3 and its text: effect of one network event.
DROP_SOURCE = ("text: \"increased RTT impacts MPTCP performance more severely compared to regular "
               "TCP (38% vs. 22%)\"")
# Linux's default tcp_rmem maximum: a likely receive buffer for the paper's MPTCP v0.94
# (the paper does not state one).
LINUX_RMEM = 6_291_456


def _points(quick):
    dur = 40.0 if quick else 300.0
    ccs = ["cubic"] if quick else CCS
    pts = []
    for m in MOBILITY:
        scen = f"dual-lte-{m}"
        for cc in ccs:
            pts.append(point({"scenario": scen, "cc": cc, "scheduler": "minrtt",
                              "duration": dur, "seed": 1},
                             series=(m == "driving"), mobility=m, cc=cc, paths="two"))
        pts.append(point({"scenario": scen, "cc": "cubic", "scheduler": "minrtt", "duration": dur,
                          "seed": 1, "recv_window": LINUX_RMEM},
                         mobility=m, cc="cubic", paths="two-6MB"))
        for isp in ("isp-a", "isp-b"):
            pts.append(point({"scenario": only_paths(scen, [isp]), "cc": "cubic",
                              "duration": dur, "seed": 1},
                             series=(m == "driving"), mobility=m, cc="cubic", paths=isp))
    return pts


def _series(row, path=None):
    """Per-path (or whole-flow) throughput and RTT series of the flow under test."""
    p = pd.DataFrame(row["_paths"])
    p = p[p["flow"] == 0]
    if path is not None:
        return p[p["path"] == path].set_index("t")
    return p.groupby("t")["throughput_bps"].sum()


def _window(s, a, b):
    return s[(s.index >= a) & (s.index < b)]


def event_effects(row, scenario, duration):
    """Per event on isp-a: throughput dip of the path and of the flow, RTT spike, recovery.

    Dips compare the mean over the 3 s after the event with the 3 s before; the RTT
    has recovered when the path's srtt is back within 1.2x its pre-event mean.
    """
    pa = _series(row, "isp-a")
    if pa.empty:
        pa = None
    total = _series(row)
    out = []
    for t0, depth, kind in rate_events(scenario, "isp-a"):
        if t0 < 5 or t0 + 5 > duration:
            continue
        before = _window(total, t0 - 3, t0).mean()
        after = _window(total, t0, t0 + 3).mean()
        rec = {"t": t0, "kind": kind, "depth": depth,
               "flow_dip_pct": 100 * (1 - after / before) if before else None}
        if pa is not None:
            b = _window(pa["throughput_bps"], t0 - 3, t0).mean()
            a = _window(pa["throughput_bps"], t0, t0 + 3).mean()
            rec["path_dip_pct"] = 100 * (1 - a / b) if b else None
            rtt0 = _window(pa["srtt_ms"], t0 - 3, t0).mean()
            post = _window(pa["srtt_ms"], t0, t0 + 40)
            rec["rtt_spike_x"] = post.max() / rtt0 if rtt0 else None
            peak = post.idxmax() if len(post) else t0
            back = post[(post.index > peak) & (post <= 1.2 * rtt0)]
            rec["rtt_recovery_s"] = (back.index[0] - t0) if len(back) else None
        out.append(rec)
    return pd.DataFrame(out)


def _rate(df, m, paths, cc="cubic"):
    r = df[(df["mobility"] == m) & (df["paths"] == paths) & (df["cc"] == cc)]
    return r.iloc[0]["goodput_bps"] / 1e6 if len(r) else None


def _analyse(df, out, quick):
    o = Outcome()
    dur = float(df["duration"].iloc[0])
    ccs = [c for c in CCS if c in set(df["cc"])]
    lines = ["Two LTE operators (`traces/dual-lte-*.toml`: base capacity calibrated so one "
             "path saturated for 300 s gives the paper's single-path TCP rate; signal drops and "
             "handovers as rate cuts behind base-station queues of 40 ms of the mean rate). *one path* = cubic over "
             "one ISP; *two paths* = each controller with minRTT, receive window never limiting "
             "(128 MiB); *6 MB rwnd* = cubic/minRTT with a 6 MB receive window (Linux's default "
             "`tcp_rmem` maximum; the paper does not state its receive buffer). Goodput in Mbit/s.", "",
             "| mobility | one path: isp-a | isp-b | " + " | ".join(f"two paths: {c}" for c in ccs)
             + " | cubic, 6 MB rwnd |", "|---" * (4 + len(ccs)) + "|"]
    for m in MOBILITY:
        cells = ([_rate(df, m, "isp-a"), _rate(df, m, "isp-b")] + [_rate(df, m, "two", c) for c in ccs]
                 + [_rate(df, m, "two-6MB")])
        lines.append(f"| {m} | " + " | ".join("–" if v is None else f"{v:.1f}" for v in cells) + " |")
    for m in MOBILITY:
        single = (_rate(df, m, "isp-a") + _rate(df, m, "isp-b")) / 2
        p = PAPER[m]
        cell = f"Table 2, {m} row"
        o.cmps.append(Cmp("Table 2", f"{m}: TCP, one path", p[1], single, "Mbit/s", calibration=True,
                          source=f"{cell}, TCP throughput",
                          why="an input: tracegen sets each operator's base capacity so that one path "
                              "saturated for 300 s gives this rate"))
        two = _rate(df, m, "two")
        why = ("real difference: our receive window never limits; see the 6 MB row and the "
               "driving analysis" if m != "stationary" else
               "our two operators are independent and equal, so two paths add up to twice one "
               "path; the paper's stationary MPTCP gained 64 %, not 100 %")
        o.cmps.append(Cmp("Table 2", f"{m}: MPTCP two paths (cubic/minRTT)", p[0], two, "Mbit/s", why=why,
                          source=f"{cell}, MPTCP throughput"))
        o.cmps.append(Cmp("Table 2", f"{m}: gain of two paths over one", p[0] / p[1], two / single, "×",
                          why=why, claim="=" if m == "driving" else ">",
                          source=f"{cell}, MPTCP ÷ TCP throughput ({p[0]} / {p[1]})"))
        o.cmps.append(Cmp("Table 2", f"{m}: MPTCP two paths, 6 MB receive window", p[0],
                          _rate(df, m, "two-6MB"), "Mbit/s", source=f"{cell}, MPTCP throughput",
                          why="real difference, smaller: what the receive window leaves of the gap "
                              "comes from the events (see the driving analysis)"))
        r = df[(df["mobility"] == m) & (df["paths"] == "two") & (df["cc"] == "cubic")].iloc[0]
        rtt = (r["isp-a.srtt_mean_ms"] + r["isp-b.srtt_mean_ms"]) / 2
        o.cmps.append(Cmp("Table 2", f"{m}: MPTCP RTT", p[2], rtt, "ms", source=f"{cell}, MPTCP RTT",
                          why="the queue (40 ms of the mean rate) and propagation are calibrated on these "
                              "RTTs (traces/README.md), so a miss here is a calibration miss"))
    o.text = "\n".join(lines)
    drive = df[(df["mobility"] == "driving") & (df["cc"] == "cubic")]
    ev_two = event_effects(drive[drive["paths"] == "two"].iloc[0], "dual-lte-driving", dur)
    ev_one = event_effects(drive[drive["paths"] == "isp-a"].iloc[0], "dual-lte-driving", dur)
    o.text += "\n\n" + _driving_text(ev_two, ev_one, o) + "\n\n" + _verdict(df, ev_one, ev_two)
    _figures(df, drive, out, o, ccs)
    return o


def _driving_text(ev_two, ev_one, o):
    lines = ["**Driving: per-event effects on isp-a** (cubic; *one path* = TCP over isp-a "
             "alone, *two paths* = minRTT over both):", "",
             "| t (s) | event | rate floor | one path: dip % | RTT spike × | RTT recovery s | two paths: isp-a dip % | flow dip % |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for (_, a), (_, b) in zip(ev_one.iterrows(), ev_two.iterrows()):
        lines.append(f"| {a['t']:.1f} | {a['kind']} | {a['depth']:.2f} | {a['flow_dip_pct']:.0f} | "
                     f"{a['rtt_spike_x']:.1f} | {_num(a['rtt_recovery_s'])} | {_num(b.get('path_dip_pct'))} | "
                     f"{_num(b['flow_dip_pct'])} |")
    for kind in ("signal drop", "handover"):
        one = ev_one[ev_one["kind"] == kind]
        two = ev_two[ev_two["kind"] == kind]
        if one.empty:
            continue
        if kind == "signal drop":
            tcp, mp = one["flow_dip_pct"].median(), two["flow_dip_pct"].median()
            o.cmps.append(Cmp("Fig. 3(a)", "signal drop: single-path TCP throughput dip", 22, tcp, "%",
                              source=DROP_SOURCE,
                              why="our drops are deeper: 8-14 dB cut the rate to 2-15 % "
                                  "(1.7× per 2 dB applied to the rate), the paper's 8 dB drop cost TCP 22 %"))
            o.cmps.append(Cmp("Fig. 3(a)", "signal drop: MPTCP throughput dip", 38, mp, "%",
                              source=DROP_SOURCE))
            o.cmps.append(Cmp("Fig. 3(a)", "signal drop: MPTCP dip ÷ TCP dip", 38 / 22,
                              mp / tcp if tcp else None, "×", claim=">", source=DROP_SOURCE,
                              why="the TCP dip is deeper than the paper's (row above: our drops cut the "
                                  "rate further), while the two-path flow loses what the paper's MPTCP "
                                  "did: minRTT moves the data to the other operator, which the event "
                                  "does not touch"))
            o.cmps.append(Cmp("Fig. 3(a)", "signal drop: RTT recovery time (driving, max)",
                              12, one["rtt_recovery_s"].max(), "s",
                              source="text: \"we find [the RTT recovery time] to be as large as 7s and "
                                     "12s while walking and driving\"",
                              why="**not explained**"))
        else:
            o.cmps.append(Cmp("Fig. 3(b)", "handover: MPTCP throughput dip", 74,
                              two["flow_dip_pct"].median(), "%",
                              source="text: \"handovers impact the performance of both paths and "
                                     "result in 74% throughput decrease\"",
                              why="real difference: a handover here cuts one path only; the paper saw "
                                  "both subflows fall (receive-buffer stall), which we do not model"))
    return "\n".join(lines)


def _verdict(df, ev_one, ev_two):
    """Which it is: events too gentle, or QUIC recovering better (numbers from the runs)."""
    drops1 = ev_one[ev_one["kind"] == "signal drop"]
    drops2 = ev_two[ev_two["kind"] == "signal drop"]
    d, s = "driving", "stationary"
    one = (_rate(df, d, "isp-a") + _rate(df, d, "isp-b")) / 2
    two, two6 = _rate(df, d, "two"), _rate(df, d, "two-6MB")
    lost = (two - two6) / (two - one) if two > one else 0
    return (
        "**Driving: are the synthetic events too gentle, or does QUIC recover better?** "
        f"Not too gentle: a signal drop costs single-path TCP a median {drops1['flow_dip_pct'].median():.0f} % "
        f"of its rate over the next 3 s (the paper's 8 dB drop: 22 %), with RTT spikes of "
        f"{drops1['rtt_spike_x'].min():.1f}-{drops1['rtt_spike_x'].max():.1f}× and recoveries up to "
        f"{drops1['rtt_recovery_s'].max():.0f} s (paper: up to 12 s driving). The two-path flow loses a "
        f"median {drops2['flow_dip_pct'].median():.0f} % per drop, as the paper's MPTCP did (38 %): "
        "minRTT moves the data to the other operator, whose rate the event does not touch. What the "
        "paper had and our default runs do not is a bounded receive buffer: with >1 s RTT differences "
        "between subflows its out-of-order queue filled and stalled both subflows (its §4.2). With "
        f"Linux's 6 MB receive window our two paths move {_rate(df, s, 'two-6MB'):.1f} Mbit/s stationary "
        f"(paper 69.2) and {_rate(df, d, 'two-6MB'):.1f} Mbit/s driving (paper 31.9; one path "
        f"{one:.1f}), against {two:.1f} with a never-limiting window: the paper's buffer takes "
        f"{100 * lost:.0f} % of our driving gain over one path away. So QUIC's better recovery here is "
        f"partly ({100 * lost:.0f} %) its never-limiting reordering buffer, and the rest, we think, what the scenario does not "
        "model (not tested here): handovers that hit both subflows (the paper's −74 %).")


def _num(v):
    return "–" if v is None or v != v else f"{v:.1f}"


def _figures(df, drive, out, o, ccs):
    fig, ax = figs.new(7, 3.4)
    vals = {}
    for m in MOBILITY:
        vals[(m, "paper TCP")] = PAPER[m][1]
        vals[(m, "paper MPTCP")] = PAPER[m][0]
        vals[(m, "ours one path")] = (_rate(df, m, "isp-a") + _rate(df, m, "isp-b")) / 2
        for c in ccs:
            vals[(m, f"ours two: {c}")] = _rate(df, m, "two", c)
    series = ["paper TCP", "paper MPTCP", "ours one path"] + [f"ours two: {c}" for c in ccs]
    figs.grouped_bars(ax, MOBILITY, series, vals, "throughput (Mbit/s)")
    ax.set_title("Table 2: one LTE path vs two (dual-LTE)")
    figs.save(fig, out, "004-table2.png", o)
    two = drive[drive["paths"] == "two"].iloc[0]
    p = pd.DataFrame(two["_paths"])
    p = p[p["flow"] == 0]
    fig, (a1, a2) = figs.stacked(8, 4.6)
    for name, g in p.groupby("path"):
        a1.plot(g["t"], g["throughput_bps"] / 1e6, lw=0.7, label=name)
        a2.plot(g["t"], g["srtt_ms"] / 1e3, lw=0.7, label=name)
    for t0, _, kind in rate_events("dual-lte-driving", "isp-a"):
        if t0 > p["t"].max():
            continue
        for ax in (a1, a2):
            ax.axvline(t0, color="red" if kind == "handover" else "grey", lw=0.5, alpha=0.6)
    a1.set_ylabel("throughput (Mbit/s)")
    a2.set_ylabel("RTT (s)")
    a2.set_xlabel("time (s); lines: isp-a events (grey drop, red handover)")
    a1.legend(fontsize=7)
    a1.set_title("Driving, cubic/minRTT over two LTE paths (cf. Fig. 3)")
    figs.save(fig, out, "004-driving.png", o)


register(Experiment("004-table2",
                    "Table 2 + driving analysis: one LTE path per ISP vs two paths with each controller, stationary/walking/driving",
                    _points, _analyse))

not_attempted("004", "Figs. 4-8 (in-the-wild throughput, bytes in flight, subflow use, RTT difference, out-of-order queue)",
              "need the paper's in-the-wild traces, which are not published with it")
not_attempted("004", "Fig. 9 (DASH video over dual-LTE)",
              "not built yet: mpquic's video workload has no adaptive bitrate")
not_attempted("004", "Fig. 10 (congestion controllers by mobility, BALIA's +18 %)",
              "not scored yet: 004-table2 runs the six controllers but does not compare them with the figure")
