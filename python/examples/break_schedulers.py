"""Seed 000 Fig. 10(a)/11(b)-style plots from the `break` scenario (two 20 Mbit/s
paths, 25 ms; path b fails at 15 s): per-path throughput with minRTT, and receiver
out-of-order bytes over time and their CDF for several schedulers.

    python python/examples/break_schedulers.py   # writes PNGs beside this file
"""

import pathlib

import mpquic
from mpquic import plot

HERE = pathlib.Path(__file__).resolve().parent
SCHEDULERS = ["minrtt", "rr", "arp"]

runs = {s: mpquic.simulate("break", cc="cubic", scheduler=s, duration=25, seed=1)
        for s in SCHEDULERS}
for s, r in runs.items():
    print(r, "paths:", dict(zip(r.path_summary["path"], r.path_summary["share"].round(3))))
plot.throughput(runs["minrtt"], save=HERE / "break_throughput.png",
                title="break: per-path throughput (CUBIC, minRTT); path b fails at 15 s")
plot.ooo(runs, save=HERE / "break_ooo.png",
         title="break: receiver out-of-order bytes (CUBIC)")
plot.cdf(runs, xlabel="receiver out-of-order bytes", save=HERE / "break_ooo_cdf.png",
         title="break: CDF of out-of-order bytes (CUBIC)")
