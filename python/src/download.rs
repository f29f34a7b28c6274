//! `mpquic.download`: one HTTP/3 GET over real UDP sockets, using the apps' socket
//! loop (`mpquic_apps::net`) and the engine's HTTP/3 layer. Runs without the GIL and
//! checks for Ctrl-C (Python signals) between socket waits.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mpquic::h3::{self, quic::Quic};
use mpquic::Connection;
use mpquic_apps::net::{self, Outbox, Sockets};
use mpquic_apps::stats::Samples;
use mpquic_apps::target::{self, Target};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::{check_cc, check_scheduler, DownloadError};

/// Longest the loop sleeps before checking for Python signals.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// Why a download stopped early.
enum Failure {
    /// A Python exception (KeyboardInterrupt from a signal handler).
    Py(PyErr),
    /// Local I/O (socket, output file).
    Io(String),
    /// Network, TLS, QUIC or HTTP/3 failure.
    Transfer(String),
}

impl Failure {
    fn into_py(self) -> PyErr {
        match self {
            Failure::Py(e) => e,
            Failure::Io(m) => PyOSError::new_err(m),
            Failure::Transfer(m) => DownloadError::new_err(m),
        }
    }
}

/// What a finished download reports.
struct Outcome {
    status: Option<u16>,
    bytes: u64,
    elapsed: Duration,
    handshake: Option<Duration>,
    transfer: Duration,
    multipath: bool,
    paths: Vec<mpquic::PathStats>,
    stats: mpquic::Stats,
    ooo: mpquic_apps::stats::Summary,
}

fn parse_local(spec: &str) -> PyResult<SocketAddr> {
    if let Ok(a) = spec.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Ok(ip) = spec.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, 0));
    }
    Err(PyValueError::new_err(format!("bad local address {spec:?}: expected an IP address or IP:PORT")))
}

/// Downloads `url`; see the Python wrapper `mpquic.download` for the arguments.
#[pyfunction]
#[pyo3(signature = (url, locals, cc, scheduler, timeout, insecure, output))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn download<'py>(
    py: Python<'py>,
    url: &str,
    locals: Vec<String>,
    cc: &str,
    scheduler: &str,
    timeout: f64,
    insecure: bool,
    output: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let t = target::parse(url).map_err(PyValueError::new_err)?;
    let cc = check_cc(cc)?;
    check_scheduler(scheduler)?;
    if !(timeout.is_finite() && timeout > 0.0 && timeout < 1e6) {
        return Err(PyValueError::new_err("timeout must be a positive number of seconds"));
    }
    let mut local_addrs = locals.iter().map(|l| parse_local(l)).collect::<PyResult<Vec<_>>>()?;
    let timeout = Duration::from_secs_f64(timeout);
    let out: Option<Box<dyn Write + Send>> = match &output {
        Some(p) => Some(Box::new(BufWriter::with_capacity(
            1 << 20,
            File::create(p).map_err(|e| PyOSError::new_err(format!("{}: {e}", p.display())))?,
        ))),
        None => None,
    };
    let sched = scheduler.to_owned();
    let cc2 = cc.clone();
    let tgt = t.clone();
    let outcome = py
        .detach(move || run(&tgt, &mut local_addrs, &cc2, &sched, timeout, insecure, out))
        .map_err(Failure::into_py)?;

    let d = PyDict::new(py);
    d.set_item("url", url)?;
    d.set_item("status", outcome.status)?;
    d.set_item("bytes", outcome.bytes)?;
    d.set_item("seconds", outcome.elapsed.as_secs_f64())?;
    d.set_item("handshake_s", outcome.handshake.map(|h| h.as_secs_f64()))?;
    d.set_item("transfer_s", outcome.transfer.as_secs_f64())?;
    let goodput = |dur: Duration| {
        if dur.is_zero() {
            0.0
        } else {
            outcome.bytes as f64 * 8.0 / dur.as_secs_f64()
        }
    };
    d.set_item("goodput_bps", goodput(outcome.elapsed))?;
    d.set_item("transfer_goodput_bps", goodput(outcome.transfer))?;
    d.set_item("cc", cc)?;
    d.set_item("scheduler", scheduler)?;
    d.set_item("multipath", outcome.multipath)?;
    d.set_item("lost_packets", outcome.stats.lost)?;
    d.set_item("retrans_bytes", outcome.stats.retrans_bytes)?;
    d.set_item("duplicate_bytes", outcome.stats.dup_stream_bytes)?;
    d.set_item("recv_bytes", outcome.stats.recv_bytes)?;
    d.set_item("ooo_mean", outcome.ooo.mean)?;
    d.set_item("ooo_p95", outcome.ooo.p95)?;
    d.set_item("ooo_max", outcome.ooo.max)?;
    d.set_item("output", output.map(|p| p.to_string_lossy().into_owned()))?;
    let recv_total = outcome.paths.iter().map(|p| p.recv_bytes).sum::<u64>().max(1);
    let paths = PyList::empty(py);
    for p in &outcome.paths {
        let pd = PyDict::new(py);
        pd.set_item("id", p.id.0)?;
        pd.set_item("local", p.local.to_string())?;
        pd.set_item("peer", p.peer.to_string())?;
        pd.set_item("active", p.active)?;
        pd.set_item("recv_bytes", p.recv_bytes)?;
        pd.set_item("sent_bytes", p.sent_bytes)?;
        pd.set_item("share", p.recv_bytes as f64 / recv_total as f64)?;
        pd.set_item("srtt_ms", p.srtt.as_secs_f64() * 1e3)?;
        pd.set_item("min_rtt_ms", p.min_rtt.as_secs_f64() * 1e3)?;
        pd.set_item("lost_packets", p.lost)?;
        pd.set_item("retrans_bytes", p.retrans_bytes)?;
        pd.set_item("redundant_bytes", p.redundant_bytes)?;
        pd.set_item("cwnd", p.cwnd)?;
        paths.append(pd)?;
    }
    d.set_item("paths", paths)?;
    Ok(d)
}

fn describe_close(conn: &Connection) -> String {
    let info = conn.peer_error().map(|i| ("server", i)).or(conn.local_error().map(|i| ("local", i)));
    match info {
        Some((who, i)) if !i.is_app && (0x100..=0x1ff).contains(&i.code) => format!(
            "TLS handshake failed ({who} alert {}){}",
            i.code - 0x100,
            if matches!(i.code - 0x100, 42..=46 | 48) {
                " — certificate not trusted (pass insecure=True for test servers)"
            } else {
                ""
            }
        ),
        Some((who, i)) => {
            format!("connection closed by {who}: code {:#x} {}", i.code, String::from_utf8_lossy(&i.reason))
        }
        None => "connection timed out (no packets for the idle timeout)".into(),
    }
}

/// The download loop (no GIL held).
#[allow(clippy::disallowed_methods)] // a real download runs on the wall clock
fn run(
    t: &Target,
    locals: &mut Vec<SocketAddr>,
    cc: &str,
    scheduler: &str,
    timeout: Duration,
    insecure: bool,
    mut out: Option<Box<dyn Write + Send>>,
) -> Result<Outcome, Failure> {
    let started = Instant::now();
    let mut config = mpquic::Config::new();
    mpquic_apps::set_algorithms(&mut config, cc, scheduler).map_err(Failure::Transfer)?;
    let _ = config.set_application_protos(&[mpquic_apps::ALPN]);
    config.verify_peer(!insecure);
    config.set_max_idle_timeout((timeout.as_millis() as u64).max(5_000));
    config.set_initial_max_data(16 << 20);
    config.set_initial_max_stream_data_bidi_local(16 << 20);
    config.set_max_connection_window(32 << 20);
    config.set_max_stream_window(32 << 20);
    if locals.len() > 1 {
        config.set_initial_max_path_id(Some(locals.len() as u32 - 1));
    }
    let peer = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| Failure::Transfer(format!("cannot resolve {}: {e}", t.host)))?
        .next()
        .ok_or_else(|| Failure::Transfer(format!("{}: no address", t.host)))?;
    if locals.is_empty() {
        let any: IpAddr =
            if peer.is_ipv4() { [0, 0, 0, 0].into() } else { std::net::Ipv6Addr::UNSPECIFIED.into() };
        locals.push(SocketAddr::new(any, 0));
    }
    let mut socks = Sockets::bind(locals).map_err(|e| Failure::Io(format!("binding {locals:?}: {e}")))?;
    let local0 = *socks.local_addrs().first().ok_or_else(|| Failure::Io("no local socket".into()))?;
    let mut conn = mpquic::connect(Some(&t.host), &mpquic::random_cid(16), local0, peer, &config, started)
        .map_err(|e| Failure::Transfer(format!("TLS setup: {e}")))?;

    let mut outbox = Outbox::default();
    let user_agent = concat!("mpquic-python/", env!("CARGO_PKG_VERSION"));
    let mut fetch = h3::Fetch::get(&t.authority, &[&t.path], Some(user_agent));
    let mut done_at: Option<Instant> = None;
    let mut close_sent = false;
    let mut established_at: Option<Instant> = None;
    let mut first_byte: Option<Instant> = None;
    let mut ooo = Samples::default();
    let mut buf = vec![0u8; net::MAX_DATAGRAM];
    let mut obuf = vec![0u8; net::MAX_DATAGRAM];
    let mut body = vec![0u8; 256 * 1024];
    let handshake_deadline = started + timeout;
    loop {
        let now = Instant::now();
        let wake = match outbox.flush(&mut conn, &socks, &mut obuf, now) {
            Ok(w) => w,
            Err(_) if conn.is_closed() || conn.is_draining() => None,
            Err(e) => return Err(Failure::Transfer(format!("QUIC error: {e}"))),
        };
        if done_at.is_some() && (conn.is_closed() || conn.is_draining()) {
            break;
        }
        if conn.is_closed() {
            if established_at.is_none() && conn.peer_error().is_none() && conn.local_error().is_none() {
                return Err(Failure::Transfer(format!(
                    "no answer from {peer} within {:.1} s (server down, port closed or unreachable)",
                    timeout.as_secs_f64()
                )));
            }
            return Err(Failure::Transfer(describe_close(&conn)));
        }
        if established_at.is_none() && now >= handshake_deadline {
            return Err(Failure::Transfer(format!(
                "no answer from {peer} within {:.1} s (server down, port closed or unreachable)",
                timeout.as_secs_f64()
            )));
        }
        let mut deadline = net::earliest(conn.timeout(), wake);
        if established_at.is_none() {
            deadline = net::earliest(deadline, Some(handshake_deadline));
        }
        let wait =
            deadline.map(|d| d.saturating_duration_since(now).min(SIGNAL_CHECK)).unwrap_or(SIGNAL_CHECK);
        socks.wait(Some(wait)).map_err(|e| Failure::Io(format!("poll: {e}")))?;
        Python::attach(|py| py.check_signals()).map_err(Failure::Py)?;
        let now = Instant::now();
        socks
            .recv_all(&mut buf, |d, info| {
                let _ = conn.recv(d, info, now);
            })
            .map_err(|e| Failure::Io(format!("recv: {e}")))?;
        if conn.timeout().is_some_and(|t| t <= now) {
            conn.on_timeout(now);
        }
        ooo.push(conn.out_of_order_bytes());
        if conn.is_established() && established_at.is_none() {
            established_at = Some(now);
            // One extra path per further local socket (draft-ietf-quic-multipath-21);
            // a path the server refuses simply stays unused.
            if conn.is_multipath() {
                for &local in socks.local_addrs().iter().skip(1) {
                    let _ = conn.probe_path(local, peer, now);
                }
            }
        }
        if established_at.is_none() {
            continue;
        }
        loop {
            let ev = match fetch.poll(&mut Quic::new(&mut conn, now), &mut body) {
                Ok(Some(ev)) => ev,
                Ok(None) => break,
                Err(_) if done_at.is_some() => break,
                Err(e) => return Err(Failure::Transfer(format!("{}: {e}", t.path))),
            };
            match ev {
                h3::FetchEvent::Response { .. } => {}
                h3::FetchEvent::Body { len, .. } => {
                    first_byte.get_or_insert(now);
                    if let Some(o) = out.as_mut() {
                        o.write_all(&body[..len]).map_err(|e| Failure::Io(format!("writing output: {e}")))?;
                    }
                }
                h3::FetchEvent::Done { .. } => {
                    done_at.get_or_insert(now);
                }
            }
        }
        if done_at.is_some() && !close_sent {
            close_sent = true;
            if let Some(o) = out.as_mut() {
                o.flush().map_err(|e| Failure::Io(format!("writing output: {e}")))?;
            }
            if let Some(h) = fetch.h3() {
                let _ = h.send_goaway(&mut Quic::new(&mut conn, now));
            }
            conn.close(true, mpquic_apps::H3_NO_ERROR, b"", now);
        }
    }
    let end = done_at.unwrap_or_else(Instant::now);
    let (status, bytes) = (fetch.requests()[0].status, fetch.requests()[0].bytes);
    if let Some(st) = status.filter(|&s| s >= 400) {
        return Err(Failure::Transfer(format!("https://{}{}: HTTP status {st}", t.authority, t.path)));
    }
    Ok(Outcome {
        status,
        bytes,
        elapsed: end.saturating_duration_since(started),
        handshake: established_at.map(|e| e.saturating_duration_since(started)),
        transfer: first_byte.map(|f| end.saturating_duration_since(f)).unwrap_or_default(),
        multipath: conn.is_multipath(),
        paths: conn.path_stats().collect(),
        stats: conn.stats(),
        ooo: ooo.summary(),
    })
}
