"""Scenario dicts for parameter sweeps (the seed 000 testbed and simulation topology).

Rates other than the committed constant traces are the 100 Mbit/s trace scaled by
a constant ``rate`` schedule; queues hold one bandwidth-delay product.
"""


def path(name, mbps, delay_ms, loss=0.0, schedule=None):
    bdp = int(mbps * 1e6 / 8 * 2 * delay_ms / 1e3)
    p = {"name": name, "up": "data/const-100mbps", "down": "data/const-100mbps",
         "delay_ms": float(delay_ms), "queue": {"kind": "droptail", "bytes": max(bdp, 30_000)},
         "schedule": [{"param": "rate", "interp": "step", "points": [[0.0, mbps / 100]]}]}
    if loss:
        p["loss"] = {"model": "bernoulli", "p": loss}
    p["schedule"] += schedule or []
    return p


def scenario(name, paths, duration, background=None, per_path=1):
    """``background``: controller of ``per_path`` single-path flows on each path (None: no flows)."""
    d = {"name": name, "duration": float(duration), "seed": 1, "path": paths}
    if background:
        d["flow"] = [{"paths": [p["name"]], "cc": background} for p in paths for _ in range(per_path)]
        d["test_paths"] = [p["name"] for p in paths]
    return d


def ramp(param, t0, t1, v0, v1, back_at=None):
    """A linear change of ``param`` from v0 at t0 to v1 at t1 (back to v0 at back_at)."""
    pts = [[t0, v0], [t1, v1]]
    if back_at is not None:
        pts += [[back_at, v1], [back_at, v0]]
    return {"param": param, "interp": "linear", "points": pts}
