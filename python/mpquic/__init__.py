"""mpquic from Python: multipath QUIC experiments.

* ``simulate(scenario, cc=..., scheduler=..., seed=..., duration=...)`` runs the
  deterministic virtual-time simulator over a scenario of ``traces/`` and returns a
  :class:`SimResult` (``.summary`` dict, pandas DataFrames ``.timeseries``, ``.paths``,
  ``.path_summary``).
* ``sweep(grid, processes=N)`` runs many simulations in parallel and returns one
  DataFrame, one row per run.
* ``download(url, locals=[...], cc=..., scheduler=...)`` downloads over real UDP
  sockets (HTTP/3) and returns a summary dict.
* ``Server(root, cert, key, listen=...)`` serves a directory over HTTP/3 (the
  server of ``mpquic-server``); ``.serve(duration)`` runs it.
* ``congestion_controllers()``, ``schedulers()``, ``scenarios()`` list the names.
* :mod:`mpquic.plot` draws throughput, out-of-order bytes and CDFs.

The native part (``mpquic._native``) is a Rust extension built with maturin; see
``python/README.md``.
"""

import json
import os

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

# Scenarios by name are looked up in the checkout this package belongs to.
_native.set_package_dir(os.path.dirname(os.path.abspath(__file__)))

from .experiment import SimResult, simulate, sweep

try:
    from ._native import download as _native_download
except ImportError:  # built without the HTTP/3 client
    _native_download = None


def download(url, locals=None, cc="cubic", scheduler="minrtt", timeout=30.0,
             insecure=True, output=None, session=None, early_data=False,
             qlog_dir=None, migrate_to=None, migrate_after=0, ecn=True, pmtud=True):
    """Downloads ``url`` (``https://host:port/path``) over HTTP/3 on real UDP sockets.

    ``locals`` lists the local addresses to bind, one path each (``"ip"`` or
    ``"ip:port"``, or an interface name); the first carries the handshake, more
    than one needs multipath. A path on an interface name follows it (Linux), as
    ``mpquic-client --local IFNAME`` does: abandoned when the interface goes down
    or loses its address, opened again when it returns; ``"interfaces"`` lists
    those changes.
    ``cc`` and ``scheduler`` are names from :func:`congestion_controllers` and
    :func:`schedulers`. ``output``, if given, is a file the body is written to.
    ``insecure`` skips certificate verification (test servers use self-signed
    certificates).

    ``session`` (bytes) is the ``"session"`` of an earlier download from the same
    server: the TLS handshake resumes it (``"resumed"`` says whether the server
    took it; one it no longer accepts means a full handshake). With
    ``early_data=True`` the request goes in 0-RTT, before the handshake ends,
    when the session allows it; ``"early_data"`` says whether the server accepted
    it (if it refuses, the request is sent again after the handshake).
    ``qlog_dir`` writes the connection's qlog (``<odcid>_client.sqlog``, JSON-SEQ,
    as ``mpquic-client --qlog-dir``); ``"qlog"`` is the file's path.
    ``migrate_to`` (``"ip"`` or ``"ip:port"``) moves the connection to a new
    socket bound there once ``migrate_after`` body bytes have arrived (RFC 9000
    active migration); ``"migration"`` reports it (``outcome`` ``"migrated"``,
    ``"failed_validation"``, ...), as ``mpquic-client --migrate-to`` does.
    ``ecn`` marks packets ECT(0) and validates ECN per path; ``pmtud`` runs path
    MTU discovery per path (``--no-ecn`` / ``--no-pmtud`` of ``mpquic-client``);
    each path's ``"mtu"``, ``"ecn"`` (``"capable"``, ``"failed"``, ...) and
    ``"ecn_ce"`` are in ``paths``.

    Returns a summary dict (``bytes``, ``seconds``, ``goodput_bps``, ``status``,
    ``paths``, ``session``, ``resumed``, ``early_data``, ``qlog``, ``migration``
    ...). Raises ``ValueError`` for a bad URL, address or session,
    ``ConfigError`` for an unknown cc/scheduler and ``DownloadError`` when the
    transfer fails.
    """
    if _native_download is None:
        raise NotImplementedError("this build of mpquic has no HTTP/3 client")
    if isinstance(locals, str):
        locals = [locals]
    if session is not None and not isinstance(session, (bytes, bytearray, memoryview)):
        raise TypeError("session must be bytes (the 'session' of an earlier download) or None")
    if int(migrate_after) < 0:
        raise ValueError("migrate_after must be a number of bytes >= 0")
    r = _native_download(url, list(locals or []), cc, scheduler, float(timeout),
                         bool(insecure), None if output is None else str(output),
                         None if session is None else bytes(session), bool(early_data),
                         None if qlog_dir is None else str(qlog_dir),
                         None if migrate_to is None else str(migrate_to), int(migrate_after),
                         bool(ecn), bool(pmtud))
    for k in ("migration", "interfaces"):
        if r[k] is not None:
            r[k] = json.loads(r[k])
    return r


class Server:
    """An HTTP/3 file server (GET/HEAD of files under ``root``), the one
    ``mpquic-server`` runs, bound at creation to ``listen`` (a ``"IP:PORT"`` or a
    list of them; port 0 picks a free one, see :meth:`addresses`).

    It runs on ``mpquic::Endpoint``: a connection is created only once a client's
    Initial decrypts, so a flood of garbage Initials leaves no state; past
    ``max_half_open`` connections still in their handshake, clients must pass a
    Retry even with ``retry=False``. ``cert`` and ``key`` are PEM files;
    ``access_log`` a file for one line per request (default stderr).
    ``quic_version`` lists the QUIC versions accepted, most preferred first
    (``"v1"``, ``"v2,v1"``: a client offering v2 is switched to it).
    Session tickets are always issued; ``early_data=True`` also accepts
    requests in 0-RTT — an attacker can replay those, so enable it only for
    requests that are safe to repeat (GETs of static files are).
    ``qlog_dir`` writes one qlog file per connection
    (``<odcid>_server.sqlog``, as ``mpquic-server --qlog-dir``).
    ``ecn`` and ``pmtud`` turn ECN and path MTU discovery on or off
    (``--no-ecn`` / ``--no-pmtud`` of ``mpquic-server``).
    Raises ``ValueError`` for unusable options or files, ``OSError`` if a socket
    cannot be bound, ``ConfigError`` for an unknown cc/scheduler.
    """

    def __init__(self, root, cert, key, listen="127.0.0.1:4433", cc="cubic",
                 scheduler="minrtt", retry=True, max_paths=4, max_half_open=256,
                 idle_timeout=30.0, access_log=None, quic_version="v1", early_data=False,
                 qlog_dir=None, ecn=True, pmtud=True):
        if isinstance(listen, str):
            listen = [listen]
        if not (idle_timeout > 0):
            raise ValueError("idle_timeout must be a positive number of seconds")
        self._inner = _native.Server(
            str(root), str(cert), str(key), list(listen), cc, scheduler, bool(retry),
            int(max_paths), int(max_half_open), int(idle_timeout * 1000),
            None if access_log is None else str(access_log), str(quic_version),
            bool(early_data), None if qlog_dir is None else str(qlog_dir),
            bool(ecn), bool(pmtud))

    def addresses(self):
        """The bound addresses, as ``"IP:PORT"`` strings."""
        return self._inner.addresses()

    def serve(self, duration=None):
        """Serves (without holding the GIL) until :meth:`stop` is called from
        another thread or ``duration`` seconds have passed; then closes every
        connection (up to 3 s to drain) and returns. A server serves once."""
        self._inner.serve(None if duration is None else float(duration))

    def stop(self):
        """Makes :meth:`serve` return."""
        self._inner.stop()

    def stats(self):
        """The endpoint's counters (``accepted`` connections, ``undecryptable``
        Initials, ``retries``, ``forced_retries``, ``stateless_resets`` ...), once
        :meth:`serve` has returned."""
        return self._inner.stats()


__all__ = [
    "Server",
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
