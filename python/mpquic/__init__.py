"""mpquic from Python: multipath QUIC experiments.

* ``simulate(scenario, cc=..., scheduler=..., seed=..., duration=...)`` runs the
  deterministic virtual-time simulator over a scenario of ``traces/`` and returns a
  :class:`SimResult` (``.summary`` dict, pandas DataFrames ``.timeseries``, ``.paths``,
  ``.path_summary``).
* ``sweep(grid, processes=N)`` runs many simulations in parallel and returns one
  DataFrame, one row per run.
* ``download(url, locals=[...], cc=..., scheduler=...)`` downloads over real UDP
  sockets (HTTP/3) and returns a summary dict.
* ``congestion_controllers()``, ``schedulers()``, ``scenarios()`` list the names.
* :mod:`mpquic.plot` draws throughput, out-of-order bytes and CDFs.

The native part (``mpquic._native``) is a Rust extension built with maturin; see
``python/README.md``.
"""

from . import _native
from ._native import (
    ConfigError,
    DownloadError,
    ScenarioError,
    SimulationError,
    congestion_controllers,
    load_scenario,
    scenario_toml,
    scenarios,
    schedulers,
)
from .experiment import SimResult, simulate, sweep

try:
    from ._native import download as _native_download
except ImportError:  # built without the HTTP/3 client
    _native_download = None


def download(url, locals=None, cc="cubic", scheduler="minrtt", timeout=30.0,
             insecure=True, output=None):
    """Downloads ``url`` (``https://host:port/path``) over HTTP/3 on real UDP sockets.

    ``locals`` lists the local addresses to bind, one path each (``"ip"`` or
    ``"ip:port"``); the first carries the handshake, more than one needs multipath.
    ``cc`` and ``scheduler`` are names from :func:`congestion_controllers` and
    :func:`schedulers`. ``output``, if given, is a file the body is written to.
    ``insecure`` skips certificate verification (test servers use self-signed
    certificates). Returns a summary dict (``bytes``, ``seconds``, ``goodput_bps``,
    ``status``, ``paths`` ...). Raises ``ValueError`` for a bad URL, ``ConfigError``
    for an unknown cc/scheduler and ``DownloadError`` when the transfer fails.
    """
    if _native_download is None:
        raise NotImplementedError("this build of mpquic has no HTTP/3 client")
    if isinstance(locals, str):
        locals = [locals]
    return _native_download(url, list(locals or []), cc, scheduler, float(timeout),
                            bool(insecure), None if output is None else str(output))


__all__ = [
    "ConfigError",
    "DownloadError",
    "ScenarioError",
    "SimResult",
    "SimulationError",
    "congestion_controllers",
    "download",
    "load_scenario",
    "scenario_toml",
    "scenarios",
    "schedulers",
    "simulate",
    "sweep",
]
