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
use mpquic_apps::follow::Follower;
use mpquic_apps::ifwatch;
use mpquic_apps::migrate::Migrator;
use mpquic_apps::net::{self, parse_local_addr, Outbox, Sockets};
use mpquic_apps::qlog::{self, EventLog};
use mpquic_apps::stats::Samples;
use mpquic_apps::target::{self, Target};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::{check_cc, check_scheduler, DownloadError};

/// Longest the loop sleeps before checking for Python signals.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// Why a download stopped early.
enum Failure {
    /// A Python exception (KeyboardInterrupt from a signal handler).
    Py(PyErr),
    /// An argument found unusable only once the download started (session
    /// bytes that are not a session).
    Arg(String),
    /// Local I/O (socket, output file).
    Io(String),
    /// Network, TLS, QUIC or HTTP/3 failure.
    Transfer(String),
}

impl Failure {
    fn into_py(self) -> PyErr {
        match self {
            Failure::Py(e) => e,
            Failure::Arg(m) => PyValueError::new_err(m),
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
    /// The TLS session to resume with next time (from the server's ticket).
    session: Option<Vec<u8>>,
    resumed: bool,
    early_data: bool,
    qlog: Option<PathBuf>,
    migration: Option<Migrator>,
    /// What the followed interfaces did (`Follower::to_json`).
    interfaces: Option<String>,
}

/// What `download` was asked to do besides the URL, checked.
struct Options {
    locals: Vec<Local>,
    cc: String,
    scheduler: String,
    timeout: Duration,
    insecure: bool,
    session: Option<Vec<u8>>,
    early_data: bool,
    qlog_dir: Option<PathBuf>,
    migrate: Option<Migrator>,
    /// ECN marking and validation (RFC 9000 §13.4).
    ecn: bool,
    /// Path MTU discovery (DPLPMTUD) on every path.
    pmtud: bool,
}

/// A `locals` entry: an address, or an interface the path follows.
#[derive(Clone, Debug)]
enum Local {
    Addr(SocketAddr),
    Iface(String),
}

/// An address (`parse_local_addr`), else the name of an existing interface.
fn parse_local(spec: &str) -> Result<Local, String> {
    let named = ifwatch::exists(spec);
    match parse_local_addr(spec) {
        Ok(a) => Ok(Local::Addr(a)),
        Err(_) if named => Ok(Local::Iface(spec.to_owned())),
        Err(e) => Err(format!("{e}, or the name of an interface with an address")),
    }
}

/// Downloads `url`; see the Python wrapper `mpquic.download` for the arguments.
#[pyfunction]
#[pyo3(signature = (url, locals, cc, scheduler, timeout, insecure, output, session, early_data, qlog_dir, migrate_to, migrate_after, ecn, pmtud))]
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
    session: Option<Vec<u8>>,
    early_data: bool,
    qlog_dir: Option<PathBuf>,
    migrate_to: Option<String>,
    migrate_after: u64,
    ecn: bool,
    pmtud: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let t = target::parse(url).map_err(PyValueError::new_err)?;
    let cc = check_cc(cc)?;
    check_scheduler(scheduler)?;
    if !(timeout.is_finite() && timeout > 0.0 && timeout < 1e6) {
        return Err(PyValueError::new_err("timeout must be a positive number of seconds"));
    }
    let locals = locals.iter().map(|l| parse_local(l)).collect::<Result<Vec<_>, _>>();
    let migrate_to = migrate_to.map(|m| parse_local_addr(&m)).transpose();
    if let Some(dir) = &qlog_dir {
        qlog::check_dir(dir).map_err(|e| PyOSError::new_err(format!("qlog_dir {}: {e}", dir.display())))?;
    }
    let mut opts = Options {
        locals: locals.map_err(PyValueError::new_err)?,
        cc: cc.clone(),
        scheduler: scheduler.to_owned(),
        timeout: Duration::from_secs_f64(timeout),
        insecure,
        session,
        early_data,
        qlog_dir,
        migrate: migrate_to.map_err(PyValueError::new_err)?.map(|to| Migrator::new(to, migrate_after)),
        ecn,
        pmtud,
    };
    let out: Option<Box<dyn Write + Send>> = match &output {
        Some(p) => Some(Box::new(BufWriter::with_capacity(
            1 << 20,
            File::create(p).map_err(|e| PyOSError::new_err(format!("{}: {e}", p.display())))?,
        ))),
        None => None,
    };
    let outcome = py.detach(|| run(&t, &mut opts, out)).map_err(Failure::into_py)?;
    summary(py, url, &opts, output, outcome)
}

/// The dict `download` returns.
fn summary<'py>(
    py: Python<'py>,
    url: &str,
    opts: &Options,
    output: Option<PathBuf>,
    outcome: Outcome,
) -> PyResult<Bound<'py, PyDict>> {
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
    d.set_item("cc", &opts.cc)?;
    d.set_item("scheduler", &opts.scheduler)?;
    d.set_item("multipath", outcome.multipath)?;
    d.set_item("lost_packets", outcome.stats.lost)?;
    d.set_item("retrans_bytes", outcome.stats.retrans_bytes)?;
    d.set_item("duplicate_bytes", outcome.stats.dup_stream_bytes)?;
    d.set_item("recv_bytes", outcome.stats.recv_bytes)?;
    d.set_item("ooo_mean", outcome.ooo.mean)?;
    d.set_item("ooo_p95", outcome.ooo.p95)?;
    d.set_item("ooo_max", outcome.ooo.max)?;
    d.set_item("output", output.map(|p| p.to_string_lossy().into_owned()))?;
    d.set_item("session", outcome.session.as_deref().map(|s| PyBytes::new(py, s)))?;
    d.set_item("resumed", outcome.resumed)?;
    d.set_item("early_data", outcome.early_data)?;
    d.set_item("qlog", outcome.qlog.map(|p| p.to_string_lossy().into_owned()))?;
    // The object of mpquic-client's JSON summary, as JSON text: the Python
    // wrapper parses it.
    d.set_item("migration", outcome.migration.map(|m| m.report().to_string()))?;
    d.set_item("interfaces", outcome.interfaces)?;
    d.set_item("paths", path_list(py, &outcome.paths)?)?;
    Ok(d)
}

fn path_list<'py>(py: Python<'py>, paths: &[mpquic::PathStats]) -> PyResult<Bound<'py, PyList>> {
    let recv_total = paths.iter().map(|p| p.recv_bytes).sum::<u64>().max(1);
    let list = PyList::empty(py);
    for p in paths {
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
        pd.set_item("mtu", p.mtu)?;
        pd.set_item("ecn", p.ecn.as_str())?;
        pd.set_item("ecn_ce", p.ecn_ce)?;
        list.append(pd)?;
    }
    Ok(list)
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

/// The client's QUIC configuration for `opts`.
fn config(opts: &Options) -> Result<mpquic::Config, Failure> {
    let mut config = mpquic::Config::new();
    mpquic_apps::set_algorithms(&mut config, &opts.cc, &opts.scheduler).map_err(Failure::Transfer)?;
    let _ = config.set_application_protos(&[mpquic_apps::ALPN]);
    config.verify_peer(!opts.insecure);
    config.set_max_idle_timeout((opts.timeout.as_millis() as u64).max(5_000));
    config.set_initial_max_data(16 << 20);
    config.set_initial_max_stream_data_bidi_local(16 << 20);
    config.set_max_connection_window(32 << 20);
    config.set_max_stream_window(32 << 20);
    if opts.locals.len() > 1 {
        config.set_initial_max_path_id(Some(opts.locals.len() as u32 - 1));
    }
    // Always keep the server's ticket: every download returns a session.
    config.enable_session_tickets(true);
    config.enable_early_data(opts.early_data);
    config.enable_qlog(opts.qlog_dir.is_some());
    config.enable_ecn(opts.ecn);
    config.enable_pmtud(opts.pmtud);
    // This crate links the simulator, whose feature compiles the simulation's
    // AEAD into the engine: a download on a real network refuses it.
    mpquic_apps::check_network_config(&config).map_err(Failure::Transfer)?;
    Ok(config)
}

/// The download loop (no GIL held).
/// The address to bind for `l`: an interface's address of the peer's family.
fn resolve(l: &Local, peer: &SocketAddr) -> Result<SocketAddr, Failure> {
    match l {
        Local::Addr(a) => Ok(*a),
        Local::Iface(name) => {
            ifwatch::usable_address(name, peer.is_ipv6()).map(|ip| SocketAddr::new(ip, 0)).ok_or_else(|| {
                Failure::Arg(format!("{name}: down, or no address of the server's family ({peer})"))
            })
        }
    }
}

/// Follow the interface entries of `locals` (bound in `socks` in order).
fn follow(
    locals: &[Local],
    socks: &mut Sockets,
    peer: SocketAddr,
    started: Instant,
) -> Result<Option<Follower>, Failure> {
    let named: Vec<(String, SocketAddr)> = locals
        .iter()
        .zip(socks.local_addrs())
        .filter_map(|(l, a)| match l {
            Local::Iface(n) => Some((n.clone(), *a)),
            Local::Addr(_) => None,
        })
        .collect();
    if named.is_empty() {
        return Ok(None);
    }
    Follower::start(named, socks, peer, started)
        .map(Some)
        .map_err(|e| Failure::Io(format!("watching interfaces: {e}")))
}

#[allow(clippy::disallowed_methods)] // a real download runs on the wall clock
fn run(t: &Target, opts: &mut Options, out: Option<Box<dyn Write + Send>>) -> Result<Outcome, Failure> {
    let started = Instant::now();
    let mut c = Client::connect(t, opts, out, started)?;
    let r = c.run(opts.timeout);
    if let Some(l) = c.qlog.as_mut() {
        l.engine_events(&mut c.conn);
        l.flush();
    }
    r?;
    c.outcome(t)
}

/// A download in progress.
struct Client {
    conn: Connection,
    socks: Sockets,
    fetch: h3::Fetch,
    outbox: Outbox,
    out: Option<Box<dyn Write + Send>>,
    qlog: Option<EventLog>,
    migrate: Option<Migrator>,
    /// The paths on interface names, following them.
    follower: Option<Follower>,
    /// Further local sockets still to open paths from.
    extra_paths: Vec<SocketAddr>,
    peer: SocketAddr,
    /// The URL's path, to name it in errors.
    path: String,
    started: Instant,
    established_at: Option<Instant>,
    first_byte: Option<Instant>,
    done_at: Option<Instant>,
    close_sent: bool,
    ooo: Samples,
    body: Vec<u8>,
}

#[allow(clippy::disallowed_methods)] // a real download runs on the wall clock
impl Client {
    /// Bind the sockets and open the connection (nothing sent yet).
    fn connect(
        t: &Target,
        opts: &mut Options,
        out: Option<Box<dyn Write + Send>>,
        started: Instant,
    ) -> Result<Client, Failure> {
        let config = config(opts)?;
        let peer = (t.host.as_str(), t.port)
            .to_socket_addrs()
            .map_err(|e| Failure::Transfer(format!("cannot resolve {}: {e}", t.host)))?
            .next()
            .ok_or_else(|| Failure::Transfer(format!("{}: no address", t.host)))?;
        if opts.locals.is_empty() {
            let any: IpAddr =
                if peer.is_ipv4() { [0, 0, 0, 0].into() } else { std::net::Ipv6Addr::UNSPECIFIED.into() };
            opts.locals.push(Local::Addr(SocketAddr::new(any, 0)));
        }
        let addrs = opts.locals.iter().map(|l| resolve(l, &peer)).collect::<Result<Vec<_>, _>>()?;
        let mut socks =
            Sockets::bind(&addrs).map_err(|e| Failure::Io(format!("binding {:?}: {e}", opts.locals)))?;
        let follower = follow(&opts.locals, &mut socks, peer, started)?;
        let local0 = *socks.local_addrs().first().ok_or_else(|| Failure::Io("no local socket".into()))?;
        let scid = mpquic::random_cid(16);
        let session = opts.session.as_deref();
        let conn =
            mpquic::connect_with_session(Some(&t.host), &scid, local0, peer, &config, session, started)
                .map_err(|e| match session {
                    Some(_) => {
                        Failure::Arg(format!("session: not a TLS session from an earlier download ({e})"))
                    }
                    None => Failure::Transfer(format!("TLS setup: {e}")),
                })?;
        let qlog = match &opts.qlog_dir {
            Some(dir) => Some(
                EventLog::create(dir, &conn, "mpquic-python", started)
                    .map_err(|e| Failure::Io(format!("qlog_dir {}: {e}", dir.display())))?,
            ),
            None => None,
        };
        let user_agent = concat!("mpquic-python/", env!("CARGO_PKG_VERSION"));
        Ok(Client {
            conn,
            socks,
            fetch: h3::Fetch::get(&t.authority, &[&t.path], Some(user_agent)),
            outbox: Outbox::default(),
            out,
            qlog,
            migrate: opts.migrate.take(),
            follower,
            extra_paths: Vec::new(),
            peer,
            path: t.path.clone(),
            started,
            established_at: None,
            first_byte: None,
            done_at: None,
            close_sent: false,
            ooo: Samples::default(),
            body: vec![0u8; 256 * 1024],
        })
    }

    fn no_answer(&self, timeout: Duration) -> Failure {
        Failure::Transfer(format!(
            "no answer from {} within {:.1} s (server down, port closed or unreachable)",
            self.peer,
            timeout.as_secs_f64()
        ))
    }

    /// Until the response is in and the connection closed.
    fn run(&mut self, timeout: Duration) -> Result<(), Failure> {
        let mut buf = vec![0u8; net::MAX_DATAGRAM];
        let mut obuf = vec![0u8; net::MAX_DATAGRAM];
        let handshake_deadline = self.started + timeout;
        loop {
            let now = Instant::now();
            // With 0-RTT keys the request leaves with the first flight.
            if self.fetch.h3().is_none() && self.conn.is_in_early_data() {
                self.drive_fetch(now)?;
            }
            let wake = match self.outbox.flush(&mut self.conn, &self.socks, &mut obuf, now) {
                Ok(w) => w,
                Err(_) if self.conn.is_closed() || self.conn.is_draining() => None,
                Err(e) => return Err(Failure::Transfer(format!("QUIC error: {e}"))),
            };
            if let Some(l) = self.qlog.as_mut() {
                l.engine_events(&mut self.conn);
            }
            if self.done_at.is_some() && (self.conn.is_closed() || self.conn.is_draining()) {
                return Ok(());
            }
            if self.conn.is_closed() {
                let silent = self.conn.peer_error().is_none() && self.conn.local_error().is_none();
                if self.established_at.is_none() && silent {
                    return Err(self.no_answer(timeout));
                }
                return Err(Failure::Transfer(describe_close(&self.conn)));
            }
            if self.established_at.is_none() && now >= handshake_deadline {
                return Err(self.no_answer(timeout));
            }
            let mut deadline = net::earliest(self.conn.timeout(), wake);
            if self.established_at.is_none() {
                deadline = net::earliest(deadline, Some(handshake_deadline));
            }
            let wait =
                deadline.map(|d| d.saturating_duration_since(now).min(SIGNAL_CHECK)).unwrap_or(SIGNAL_CHECK);
            self.socks.wait(Some(wait)).map_err(|e| Failure::Io(format!("poll: {e}")))?;
            Python::attach(|py| py.check_signals()).map_err(Failure::Py)?;
            self.step(&mut buf, Instant::now())?;
        }
    }

    /// Take in what arrived, then advance the handshake, the request and
    /// the migration.
    fn step(&mut self, buf: &mut [u8], now: Instant) -> Result<(), Failure> {
        let conn = &mut self.conn;
        self.socks
            .recv_all(buf, |d, info| {
                let _ = conn.recv(d, info, now);
            })
            .map_err(|e| Failure::Io(format!("recv: {e}")))?;
        if let Some(f) = self.follower.as_mut().filter(|_| self.socks.other_ready()) {
            f.on_change(&mut self.conn, &mut self.socks, now);
        }
        if self.conn.timeout().is_some_and(|t| t <= now) {
            self.conn.on_timeout(now);
        }
        self.ooo.push(self.conn.out_of_order_bytes());
        if self.conn.is_established() && self.established_at.is_none() {
            self.established_at = Some(now);
            if self.conn.is_multipath() {
                self.extra_paths = self.socks.local_addrs().iter().skip(1).copied().collect();
            }
        }
        // One extra path per further local socket; a path the server
        // refuses simply stays unused.
        net::open_paths(&mut self.conn, &mut self.extra_paths, self.peer, now, |_, _| {});
        if let Some(f) = self.follower.as_mut() {
            f.poll(&mut self.conn, now);
        }
        if self.established_at.is_none() && !self.conn.is_in_early_data() {
            return Ok(());
        }
        self.drive_fetch(now)?;
        if let Some(m) = self.migrate.as_mut() {
            let received = self.fetch.requests()[0].bytes;
            m.poll(&mut self.conn, &mut self.socks, received, now);
        }
        if self.done_at.is_some() && !self.close_sent {
            self.finish(now)?;
        }
        Ok(())
    }

    /// Run the HTTP/3 exchange: the request, then the body to the output.
    fn drive_fetch(&mut self, now: Instant) -> Result<(), Failure> {
        loop {
            let ev = match self.fetch.poll(&mut Quic::new(&mut self.conn, now), &mut self.body) {
                Ok(Some(ev)) => ev,
                Ok(None) => return Ok(()),
                Err(_) if self.done_at.is_some() => return Ok(()),
                Err(e) => return Err(Failure::Transfer(format!("{}: {e}", self.path))),
            };
            match ev {
                h3::FetchEvent::Response { .. } => {}
                h3::FetchEvent::Body { len, .. } => {
                    self.first_byte.get_or_insert(now);
                    if let Some(o) = self.out.as_mut() {
                        o.write_all(&self.body[..len])
                            .map_err(|e| Failure::Io(format!("writing output: {e}")))?;
                    }
                }
                h3::FetchEvent::Done { .. } => {
                    self.done_at.get_or_insert(now);
                }
            }
        }
    }

    /// The response is complete: flush the output and close.
    fn finish(&mut self, now: Instant) -> Result<(), Failure> {
        self.close_sent = true;
        if let Some(o) = self.out.as_mut() {
            o.flush().map_err(|e| Failure::Io(format!("writing output: {e}")))?;
        }
        if let Some(h) = self.fetch.h3() {
            let _ = h.send_goaway(&mut Quic::new(&mut self.conn, now));
        }
        self.conn.close(true, mpquic_apps::H3_NO_ERROR, b"", now);
        Ok(())
    }

    fn outcome(self, t: &Target) -> Result<Outcome, Failure> {
        let end = self.done_at.unwrap_or_else(Instant::now);
        let (status, bytes) = (self.fetch.requests()[0].status, self.fetch.requests()[0].bytes);
        if let Some(st) = status.filter(|&s| s >= 400) {
            return Err(Failure::Transfer(format!("https://{}{}: HTTP status {st}", t.authority, t.path)));
        }
        Ok(Outcome {
            status,
            bytes,
            elapsed: end.saturating_duration_since(self.started),
            handshake: self.established_at.map(|e| e.saturating_duration_since(self.started)),
            transfer: self.first_byte.map(|f| end.saturating_duration_since(f)).unwrap_or_default(),
            multipath: self.conn.is_multipath(),
            paths: self.conn.path_stats().collect(),
            stats: self.conn.stats(),
            ooo: self.ooo.summary(),
            session: self.conn.session().map(<[u8]>::to_vec),
            resumed: self.conn.is_resumed(),
            early_data: self.conn.is_early_data_accepted(),
            qlog: self.qlog.as_ref().map(|l| l.path().to_path_buf()),
            migration: self.migrate,
            interfaces: self.follower.as_ref().map(|f| f.to_json().to_string()),
        })
    }
}
