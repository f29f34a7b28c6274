"""Simulations and sweeps over the virtual-time simulator."""

import itertools
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed

import pandas as pd

from . import _native


class SimResult:
    """The outcome of one :func:`simulate` run.

    Attributes:
        summary: dict of scalars for the (first) flow — ``goodput_bps``,
            ``app_bytes``, ``completion_s`` (None when unbounded or unfinished),
            ``retrans_bytes``, ``redundant_bytes``, ``copy_bytes`` (scheduler
            copies), ``sent_ahead_bytes`` (arp's P-Scheduling),
            ``ooo_mean``/``ooo_p95``/``ooo_max``
            (receiver out-of-order bytes), ``established``, ``multipath``, ``error``,
            ``cc``, ``scheduler``, ``scenario``, ``seed``, ``duration`` — plus
            ``paths``, a list of per-path dicts (also in :attr:`path_summary`).
        timeseries: DataFrame, one row per sample: ``t`` (s), ``flow``,
            ``goodput_bps`` (in-order bytes to the application), ``ooo_bytes``.
        paths: DataFrame, one row per sample and path: ``t``, ``flow``, ``path``
            (name), ``throughput_bps``, ``srtt_ms``, ``cwnd``, ``bytes_in_flight``,
            ``pacing_bps``.
        path_summary: DataFrame, one row per path: ``path``, ``bytes``,
            ``throughput_bps``, ``share``, ``srtt_mean_ms``, ``min_rtt_ms``,
            ``lost_packets``, ``retrans_bytes``, ``copy_bytes``, ``link_drops``,
            ``group`` (shared-bottleneck group), ``ecn_ce``, ``mtu`` (datagram size
            at the end).
        flows: list of summary dicts, one per flow: the flow under test
            (``summary``) first, then the scenario's background flows
            (``background`` True).
        flow_summary: DataFrame, one row per flow: ``flow``, ``background``,
            ``cc``, ``scheduler``, ``paths`` (names, comma-separated),
            ``goodput_bps``, ``app_bytes``, ``completion_s``, ``retrans_bytes``.
        links: DataFrame, one row per network link (each path's own link, then
            the scenario's shared links): ``link``, ``up_/down_delivered_bytes``
            (charged sizes, UDP payload + 28 header bytes),
            ``up_/down_delivered_packets``, ``up_/down_dropped``,
            ``failure_drops``.
    """

    def __init__(self, raw):
        self.flows = raw["flows"]
        self.summary = dict(raw["summary"])
        self.timeseries = pd.DataFrame(raw["series"])
        self.paths = pd.DataFrame(raw["path_series"])
        self.path_summary = pd.DataFrame(self.summary.get("paths", []))
        cols = ["flow", "background", "cc", "scheduler", "paths", "goodput_bps",
                "app_bytes", "completion_s", "retrans_bytes"]
        rows = [{**{k: f.get(k) for k in cols},
                 "paths": ",".join(p["path"] for p in f.get("paths", []))}
                for f in self.flows]
        self.flow_summary = pd.DataFrame(rows, columns=cols)
        self.links = pd.DataFrame(raw.get("links", []))

    def __repr__(self):
        s = self.summary
        return (f"<SimResult {s.get('scenario')} cc={s.get('cc')} "
                f"scheduler={s.get('scheduler')} goodput={s.get('goodput_bps', 0) / 1e6:.2f} Mbit/s>")


def simulate(scenario, cc="cubic", scheduler="minrtt", seed=None, duration=None,
             sample_interval=0.1, bytes=None, base_dir=None, workload="h3",
             recv_window=None, ecn=False, pmtud=False, qlog_dir=None, timestamps=True):
    """Runs one download in the virtual-time simulator and returns a :class:`SimResult`.

    Args:
        scenario: a scenario name from ``traces/`` (see :func:`mpquic.scenarios`), a
            path to a scenario ``.toml``, or a dict with the keys of a scenario file
            (``duration``, ``path`` = list of path dicts with ``up``, ``down``,
            ``delay_ms``, ``loss``, ``queue``, ``schedule``...). A dict's trace paths
            are relative to ``base_dir`` (default: the repository's ``traces/``).
        cc: congestion controller (:func:`mpquic.congestion_controllers`).
        scheduler: path scheduler, optionally with parameters
            (``"capacity:gamma=0.4"``; :func:`mpquic.schedulers`).
        seed: seed of the links' random loss (default: the scenario's).
        duration: simulated seconds (default: the scenario's).
        sample_interval: seconds between time-series samples.
        bytes: size of the download; None downloads for the whole duration.
        workload: ``"h3"`` (HTTP/3 GET), ``"stream"`` (plain stream), ``"upload"``,
            or ``"video"``: 5.24 Mbit/s constant-bitrate video for 3 minutes, 25
            pictures/s due at fixed playout times after a 1 s playout buffer (seed
            002); its summary adds ``video_frames``, ``video_played``,
            ``video_discarded`` (pictures late for their playout time) and
            ``video_underflows`` (times the playout buffer ran dry).
        recv_window: the receiver's connection and stream window in bytes (default:
            128 MiB, never limiting); a small one makes out-of-order data stall the
            sender, as a full MPTCP receive buffer does.
        ecn: both endpoints mark ECT(0) and validate ECN; a scenario queue with
            ``ecn = true`` (CoDel, PIE) then marks CE instead of dropping. Off by
            default, as in ``mpquic-sim``.
        pmtud: both endpoints run path MTU discovery (up to 1500-byte IP packets,
            limited by a scenario path's ``mtu``); each path's ``mtu`` is in the
            result. Off by default: every datagram has the same size.
        qlog_dir: write every endpoint's qlog there (``flow<i>_client.sqlog``,
            ``flow<i>_server.sqlog``, background flows included; event times are
            simulated). An unusable directory raises ``SimulationError``.
        timestamps: both endpoints offer the timestamp extension, so that
            coupled-bbr's shared-bottleneck detection reads one-way delays; False
            makes it read RTT samples, as it must with peers other than mpquic
            (``--no-timestamps`` of ``mpquic-sim``).

    The run is deterministic for a given seed and releases the GIL.
    Raises ``ScenarioError``, ``ConfigError`` or ``SimulationError``.
    """
    raw = _native.simulate(scenario, cc, scheduler, seed,
                           None if duration is None else float(duration),
                           float(sample_interval), bytes,
                           None if base_dir is None else os.fspath(base_dir), workload,
                           None if recv_window is None else int(recv_window),
                           bool(ecn), bool(pmtud),
                           None if qlog_dir is None else os.fspath(qlog_dir),
                           bool(timestamps))
    return SimResult(raw)


def _grid_runs(grid):
    """Expands a grid (dict of lists, or list of dicts) into a list of kwargs dicts."""
    if isinstance(grid, dict):
        keys = list(grid)
        values = []
        for k in keys:
            v = grid[k]
            # A scalar (or a scenario dict) is one value, not a list of values.
            if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__iter__"):
                v = [v]
            values.append(list(v))
        return [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    runs = [dict(r) for r in grid]
    for r in runs:
        if not isinstance(r, dict):
            raise TypeError("sweep: a list grid must hold dicts of simulate() arguments")
    return runs


_SIM_ARGS = {"scenario", "cc", "scheduler", "seed", "duration", "sample_interval",
             "bytes", "base_dir", "workload", "recv_window"}


def _run_one(kwargs):
    """Runs one sweep point; returns (row dict, error message or None)."""
    row = {}
    for k, v in kwargs.items():
        # Scenario dicts are summarised by name in the table.
        row[k] = v.get("name", "<dict>") if isinstance(v, dict) else v
    try:
        res = simulate(**kwargs)
    except Exception as e:  # reported per row; see errors= in sweep()
        row["error"] = f"{type(e).__name__}: {e}"
        return row, e
    s = res.summary
    for k, v in s.items():
        if k == "paths":
            continue
        # The arguments win over summary fields of the same name (e.g. scenario).
        row.setdefault(k, v)
    for p in s.get("paths", []):
        name = p.get("path")
        for key in ("throughput_bps", "share", "srtt_mean_ms", "retrans_bytes"):
            row[f"{name}.{key}"] = p.get(key)
    return row, None


class _Progress:
    """tqdm when installed, else one rewritten stderr line."""

    def __init__(self, total, enabled):
        self.total, self.done, self.enabled = total, 0, enabled
        self.bar = None
        self.start = time.monotonic()
        if enabled:
            try:
                from tqdm.auto import tqdm
                self.bar = tqdm(total=total, desc="sweep", unit="run")
            except ImportError:
                self.bar = None
                self._line()

    def _line(self):
        el = time.monotonic() - self.start
        sys.stderr.write(f"\rsweep: {self.done}/{self.total} runs, {el:.1f} s")
        sys.stderr.flush()

    def update(self):
        self.done += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(1)
        else:
            self._line()

    def close(self):
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.close()
        else:
            sys.stderr.write("\n")
            sys.stderr.flush()


def sweep(grid, processes=None, progress=True, errors="raise", backend="threads",
          **common):
    """Runs :func:`simulate` for every point of ``grid`` in parallel; returns a DataFrame.

    Args:
        grid: either a dict mapping :func:`simulate` argument names to lists of values
            (their cartesian product is run, e.g. ``{"scheduler": ["minrtt", "arp"],
            "seed": [1, 2, 3]}``), or a list of dicts of arguments.
        processes: number of runs at once (default: the number of CPUs).
        progress: show a progress bar (tqdm if installed, else a stderr line).
        errors: ``"raise"`` re-raises the first failed run's exception after all
            runs finished; ``"record"`` keeps it in an ``error`` column.
        backend: ``"threads"`` (default: the simulator releases the GIL, so threads
            use all cores without pickling) or ``"processes"``.
        **common: arguments passed to every run (overridden by the grid).

    The DataFrame has one row per run, in grid order: the run's arguments, the
    scalar fields of its summary, and ``<path>.throughput_bps`` / ``.share`` /
    ``.srtt_mean_ms`` / ``.retrans_bytes`` per path.
    """
    if errors not in ("raise", "record"):
        raise ValueError("sweep: errors must be 'raise' or 'record'")
    runs = []
    for point in _grid_runs(grid):
        kw = dict(common)
        kw.update(point)
        unknown = set(kw) - _SIM_ARGS
        if unknown:
            raise TypeError(f"sweep: unknown simulate() argument(s) {sorted(unknown)}")
        if "scenario" not in kw:
            raise TypeError("sweep: every run needs a scenario (in the grid or as a keyword)")
        runs.append(kw)
    workers = max(1, int(processes or os.cpu_count() or 1))
    if backend == "threads":
        pool_cls = ThreadPoolExecutor
    elif backend == "processes":
        pool_cls = ProcessPoolExecutor
    else:
        raise ValueError("sweep: backend must be 'threads' or 'processes'")
    rows = [None] * len(runs)
    first_error = None
    bar = _Progress(len(runs), progress)
    try:
        with pool_cls(max_workers=workers) as pool:
            futures = {pool.submit(_run_one, kw): i for i, kw in enumerate(runs)}
            for fut in as_completed(futures):
                i = futures[fut]
                row, err = fut.result()
                rows[i] = row
                if err is not None and first_error is None:
                    first_error = err
                bar.update()
    finally:
        bar.close()
    if first_error is not None and errors == "raise":
        raise first_error
    return pd.DataFrame(rows)
