"""Runs an experiment's points locally (processes) or on a Ray cluster.

Both backends call :func:`run_point`, and the simulator is deterministic per
seed, so the same points give the same rows whichever backend ran them.
"""

import os
from concurrent.futures import ProcessPoolExecutor, as_completed

import pandas as pd
from tqdm.auto import tqdm

from ..experiment import simulate


def _flatten(res):
    """Scalar row of one SimResult: summary, per path, per background flow, per link."""
    row = {k: v for k, v in res.summary.items() if k != "paths"}
    for p in res.summary.get("paths", []):
        for key in ("bytes", "throughput_bps", "share", "srtt_mean_ms", "min_rtt_ms",
                    "lost_packets", "retrans_bytes", "link_drops"):
            row[f"{p['path']}.{key}"] = p.get(key)
    row["lost_packets"] = sum(p.get("lost_packets") or 0 for p in res.summary.get("paths", []))
    bg = [f for f in res.flows if f.get("background")]
    for i, f in enumerate(bg):
        row[f"bg{i}.goodput_bps"] = f.get("goodput_bps")
        row[f"bg{i}.paths"] = ",".join(p["path"] for p in f.get("paths", []))
        row[f"bg{i}.retrans_bytes"] = f.get("retrans_bytes")
    for _, link in res.links.iterrows():
        row[f"link.{link['link']}.down_packets"] = link.get("down_delivered_packets")
        row[f"link.{link['link']}.down_bytes"] = link.get("down_delivered_bytes")
    for k, v in res.summary.items():
        if k.startswith("video_"):
            row[k] = v
    return row


def run_point(pt):
    """Runs one point; returns its row (labels first). Errors become an ``error`` cell."""
    row = dict(pt["labels"])
    try:
        res = simulate(**pt["sim"])
    except Exception as e:  # one failed run must not lose the sweep
        row["error"] = f"{type(e).__name__}: {e}"
        return row
    for k, v in _flatten(res).items():
        row.setdefault(k, v)
    if pt.get("series"):
        # Kept as plain lists so the row pickles cheaply between processes.
        row["_series"] = res.timeseries.to_dict("list")
        row["_paths"] = res.paths.to_dict("list")
    return row


def _local(points, workers, bar):
    rows = [None] * len(points)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futs = {pool.submit(run_point, p): i for i, p in enumerate(points)}
        for fut in as_completed(futs):
            rows[futs[fut]] = fut.result()
            bar.update(1)
    return rows


def _ray(points, bar):
    import ray

    remote = ray.remote(num_cpus=1)(run_point)
    refs = [remote.remote(p) for p in points]
    index = {r: i for i, r in enumerate(refs)}
    rows = [None] * len(points)
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            rows[index[ref]] = ray.get(ref)
            bar.update(1)
    return rows


def run_points(points, backend="local", workers=None, progress=True, desc="runs"):
    """Runs ``points`` and returns one DataFrame row per point, in order.

    ``backend`` is ``"local"`` (``workers`` processes, default all cores) or
    ``"ray"`` (the Ray cluster ``ray.init`` connected to).
    """
    workers = max(1, int(workers or os.cpu_count() or 1))
    with tqdm(total=len(points), desc=desc, unit="run", disable=not progress) as bar:
        if backend == "ray":
            rows = _ray(points, bar)
        elif backend == "local":
            rows = _local(points, workers, bar)
        else:
            raise ValueError(f"unknown backend {backend!r}")
    return pd.DataFrame(rows)
