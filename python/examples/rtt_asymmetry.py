"""Seed 000 Fig. 11(a): receiver out-of-order bytes (and goodput) of minRTT,
round-robin and AR&P on two 20 Mbit/s paths, one with a 50 ms RTT, the other
50-250 ms, under the paper's Coupled BBR (Alg. 1, `coupled-bbr-alg1`: the paper's pairing) and CUBIC.

    python python/examples/rtt_asymmetry.py   # writes PNGs and a CSV beside this file
"""

import pathlib

import mpquic
from mpquic import plot

HERE = pathlib.Path(__file__).resolve().parent
LONG_RTTS = [50, 100, 150, 200, 250]


def scenario(long_rtt_ms):
    def path(name, rtt_ms):
        return {"name": name, "up": "data/const-20mbps", "down": "data/const-20mbps",
                "delay_ms": rtt_ms / 2, "queue": {"kind": "droptail", "bytes": 250_000}}
    return {"name": f"50/{long_rtt_ms}", "duration": 20.0,
            "path": [path("short", 50), path("long", long_rtt_ms)]}


df = mpquic.sweep({"scenario": [scenario(r) for r in LONG_RTTS],
                   "scheduler": ["minrtt", "rr", "arp"],
                   "cc": ["coupled-bbr-alg1", "cubic"]})
df = df.rename(columns={"scenario": "RTTs (ms)"})
df.to_csv(HERE / "rtt_asymmetry.csv", index=False)
cols = ["cc", "RTTs (ms)", "scheduler", "ooo_mean", "goodput_bps", "copy_bytes", "sent_ahead_bytes"]
print(df[cols].to_string(index=False))
for cc in ("coupled-bbr-alg1", "cubic"):
    part = df[df["cc"] == cc]
    plot.bars(part, "RTTs (ms)", "ooo_mean", "scheduler", scale=1e-3,
              ylabel="mean out-of-order (kB)", save=HERE / f"rtt_asymmetry_ooo_{cc}.png",
              title=f"Receiver out-of-order bytes, 2 x 20 Mbit/s ({cc})")
    plot.bars(part, "RTTs (ms)", "goodput_bps", "scheduler", scale=1e-6,
              ylabel="goodput (Mbit/s)", save=HERE / f"rtt_asymmetry_goodput_{cc}.png",
              title=f"Goodput, 2 x 20 Mbit/s ({cc})")
