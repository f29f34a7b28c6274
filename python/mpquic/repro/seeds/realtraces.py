"""Beyond the papers: dual-LTE on two operators' real Mahimahi driving traces."""

from .. import figs
from ..registry import Experiment, Outcome, point, register
from ..scenarios import as_dict, only_paths

SCENARIOS = ["real-verizon-tmobile-driving", "real-att-verizon-driving", "dual-lte-driving"]
CCS = ["cubic", "bbr", "lia", "olia", "balia", "coupled-bbr"]
SCHEDS = ["minrtt", "arp"]


def _points(quick):
    dur = 60.0 if quick else 300.0
    ccs = ["cubic"] if quick else CCS
    pts = []
    for scen in SCENARIOS:
        for cc in ccs:
            for s in SCHEDS:
                pts.append(point({"scenario": scen, "cc": cc, "scheduler": s, "duration": dur,
                                  "seed": 1}, scen=scen, cc=cc, sched=s, paths="two"))
        for p in as_dict(scen)["path"]:
            pts.append(point({"scenario": only_paths(scen, [p["name"]]), "cc": "cubic",
                              "duration": dur, "seed": 1},
                             scen=scen, cc="cubic", sched="-", paths=p["name"]))
    return pts


def _analyse(df, out, quick):
    o = Outcome()
    two = df[df["paths"] == "two"]
    lines = ["Two operators' real LTE driving traces as the two paths of a dual-SIM phone "
             "(`traces/real-*.toml`, Mahimahi traces read from `../shared/traces/mahimahi`, "
             "25 ms one-way, 1 MB drop-tail), beside the synthetic `dual-lte-driving`. "
             "Goodput in Mbit/s; *one path* is cubic over that operator alone. No paper "
             "has these numbers: they extend seed 004 to real traces.", ""]
    for scen in SCENARIOS:
        single = df[(df["scen"] == scen) & (df["paths"] != "two")]
        one = ", ".join(f"{r['paths']} {r['goodput_bps'] / 1e6:.1f}" for _, r in single.iterrows())
        lines += [f"**{scen}** — one path: {one}", "",
                  "| cc | " + " | ".join(SCHEDS) + " | ooo mean kB (minrtt / arp) |",
                  "|---|" + "---:|" * (len(SCHEDS) + 1)]
        d = two[two["scen"] == scen]
        for cc in dict.fromkeys(d["cc"]):
            g = {r["sched"]: r for _, r in d[d["cc"] == cc].iterrows()}
            lines.append(f"| {cc} | " + " | ".join(f"{g[s]['goodput_bps'] / 1e6:.1f}" for s in SCHEDS)
                         + f" | {g['minrtt']['ooo_mean'] / 1e3:.0f} / {g['arp']['ooo_mean'] / 1e3:.0f} |")
        lines.append("")
    o.text = "\n".join(lines)
    fig, axes = figs.new(12, 3.4, len(SCENARIOS))
    for ax, scen in zip(axes, SCENARIOS):
        d = two[two["scen"] == scen]
        ccs = list(dict.fromkeys(d["cc"]))
        figs.grouped_bars(ax, ccs, SCHEDS, {(r["cc"], r["sched"]): r["goodput_bps"] / 1e6
                                            for _, r in d.iterrows()}, "goodput (Mbit/s)")
        ax.tick_params(axis="x", labelsize=6, rotation=30)
        ax.set_title(scen, fontsize=8)
    figs.save(fig, out, "004-real-dual-lte.png", o)
    return o


register(Experiment("004-real-dual-lte",
                    "beyond the papers: dual-LTE on real Mahimahi traces (Verizon+TMobile, ATT+Verizon) vs synthetic dual-lte-driving, every cc x minrtt/arp",
                    _points, _analyse))
