//! The HTTP/3 file server behind `mpquic-server` (and Python's
//! `mpquic.serve`): an event loop on `mpquic::Endpoint` serving GET/HEAD of
//! files under a root directory, with an access log and per-connection
//! event logs.

// The server loop is where the clock is read: it passes `now` to the engine.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mpquic::endpoint::{Endpoint, EndpointConfig, EndpointStats, Handle, Incoming};
use mpquic::h3::{self, quic::Quic, Header};
use mpquic::{Connection, RecvInfo};
use serde_json::json;

use crate::files::{self, Refused};
use crate::net::{self, Outbox, Sockets};
use crate::qlog::{self, EventLog};
use crate::{exit, pem, H3_NO_ERROR};

/// What to serve and how (the server's command line).
#[derive(Clone, Debug)]
pub struct Options {
    /// UDP addresses to listen on (one socket each).
    pub listen: Vec<SocketAddr>,
    /// Directory to serve.
    pub root: PathBuf,
    /// Certificate chain (PEM).
    pub cert: String,
    /// Private key (PEM).
    pub key: String,
    /// Answer new clients with Retry (address validation first).
    pub retry: bool,
    /// Congestion controller name.
    pub cc: String,
    /// Path scheduler (`name[:key=value,...]`).
    pub scheduler: String,
    /// Most paths a client may open; 0 disables multipath.
    pub max_paths: u32,
    /// Access log file (stderr if `None`).
    pub access_log: Option<PathBuf>,
    /// Directory for per-connection JSON-lines event logs.
    pub qlog_dir: Option<PathBuf>,
    /// Idle timeout in milliseconds.
    pub idle_timeout: u64,
    /// Connections still in their handshake beyond which new clients must
    /// pass a Retry, even without `retry`.
    pub max_half_open: usize,
    /// Accept 0-RTT (requests replayable: see `Config::enable_early_data`).
    pub early_data: bool,
    /// Mark ECT(0) and validate ECN on every path (`Config::enable_ecn`).
    pub ecn: bool,
    /// Path MTU discovery on every path (`Config::enable_pmtud`).
    pub pmtud: bool,
    /// QUIC versions accepted, most preferred first.
    pub versions: Vec<mpquic::Version>,
}

/// How long connections get to close after SIGINT/SIGTERM.
const DRAIN_TIME: Duration = Duration::from_secs(3);
/// Bytes of a response the engine holds before they are sent: at least
/// UNSENT, up to UNSENT_MAX while the server's UNSENT_BUDGET shared by its
/// connections allows (one download reads its file in larger pieces; many
/// hold little each).
const UNSENT: usize = 32 << 10;
const UNSENT_MAX: usize = 256 << 10;
const UNSENT_BUDGET: usize = 8 << 20;
/// Datagrams a service of one connection sends at most (~1 MiB), so that
/// one connection cannot starve the rest.
const SERVICE_DATAGRAMS: usize = 768;

/// The unsent cap of each response while `connections` are open.
fn unsent_cap(connections: usize) -> usize {
    (UNSENT_BUDGET / connections.max(1)).clamp(UNSENT, UNSENT_MAX)
}
/// Length of the connection IDs we issue (the engine keeps this length).
const CID_LEN: usize = 16;

/// One response being sent.
struct Response {
    file: Option<File>,
    /// File bytes not yet read.
    file_left: u64,
    /// An in-memory body (error pages), or file bytes the stream did not
    /// take yet; `pos` is how far it was sent.
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    sent: u64,
    status: u16,
    method: String,
    path: String,
    start: Instant,
}

/// What the server keeps per connection beside the engine's state.
#[derive(Default)]
struct Client {
    h3: Option<h3::Connection>,
    out: Outbox,
    responses: HashMap<u64, Response>,
    peer: Option<SocketAddr>,
    log: Option<EventLog>,
}

/// A server bound to its sockets; [`Server::run`] serves until stopped.
pub struct Server {
    opts: Options,
    root: PathBuf,
    ep: Endpoint<Client>,
    socks: Sockets,
    access: Box<dyn Write + Send>,
    /// File bytes on their way into a response stream.
    scratch: Vec<u8>,
}

/// Why a server could not start: the exit code (`exit::USAGE` for bad
/// options, `exit::IO` for sockets and files) and one line.
pub type StartError = (i32, String);

impl Server {
    /// Check the options, bind the sockets and open the logs. Unusable
    /// files are reported now, one line each, rather than at the first
    /// client.
    pub fn new(opts: Options) -> Result<Server, StartError> {
        let socks = Sockets::bind(&opts.listen).map_err(|e| (exit::IO, e.to_string()))?;
        Server::with_sockets(opts, socks, None)
    }

    /// `n` servers sharing the listening addresses, one per worker thread
    /// (run each with [`Server::run`]): datagrams reach the worker that
    /// holds their connection (see [`crate::workers`]); the workers share
    /// their token and reset keys, so a client's token from one passes at
    /// another. The error says why the kernel refused, if it did.
    pub fn workers(opts: Options, n: usize) -> Result<Vec<Server>, StartError> {
        let groups = crate::workers::bind(&opts.listen, n).map_err(|e| (exit::IO, e.to_string()))?;
        let secret = mpquic::EndpointSecret::random();
        let mut servers = Vec::new();
        for (i, socks) in groups.into_iter().enumerate() {
            let mut opts = opts.clone();
            let socks = Sockets::adopt(socks).map_err(|e| (exit::IO, e.to_string()))?;
            opts.listen = socks.local_addrs().to_vec();
            servers.push(Server::with_sockets(opts, socks, Some((i as u8, secret.clone())))?);
        }
        Ok(servers)
    }

    fn with_sockets(
        opts: Options,
        socks: Sockets,
        worker: Option<(u8, mpquic::EndpointSecret)>,
    ) -> Result<Server, StartError> {
        let usage = |e: String| (exit::USAGE, e);
        pem::check("--cert", &opts.cert, pem::Want::Certificates).map_err(usage)?;
        pem::check("--key", &opts.key, pem::Want::PrivateKey).map_err(usage)?;
        if let Some(dir) = &opts.qlog_dir {
            qlog::check_dir(dir).map_err(|e| usage(format!("--qlog-dir {}: {e}", dir.display())))?;
        }
        let root = match opts.root.canonicalize() {
            Ok(r) if r.is_dir() => r,
            _ => return Err(usage(format!("--root {}: not a directory", opts.root.display()))),
        };
        let Some(&first) = opts.listen.first() else {
            return Err(usage("no address to listen on".into()));
        };
        let mut config = config(&opts, first)?;
        config.set_cid_prefix(worker.as_ref().map(|w| w.0));
        let ep_config = EndpointConfig {
            cid_len: CID_LEN,
            retry: opts.retry,
            max_half_open: opts.max_half_open,
            secret: worker.map(|w| w.1),
            ..EndpointConfig::default()
        };
        let ep = Endpoint::new(config, ep_config, Instant::now()).map_err(|e| (exit::IO, e.to_string()))?;
        let access: Box<dyn Write + Send> = match &opts.access_log {
            Some(p) => match std::fs::OpenOptions::new().create(true).append(true).open(p) {
                Ok(f) => Box::new(f),
                Err(e) => return Err((exit::IO, format!("--access-log {}: {e}", p.display()))),
            },
            None => Box::new(std::io::stderr()),
        };
        Ok(Server { opts, root, ep, socks, access, scratch: vec![0; UNSENT_MAX] })
    }

    /// The addresses the sockets are bound to (port 0 resolved).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.socks.local_addrs().to_vec()
    }

    /// The serving directory, canonical.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The endpoint's counters (connections accepted, Initials that did
    /// not decrypt, Retries, ...).
    pub fn stats(&self) -> EndpointStats {
        self.ep.stats()
    }

    /// Serve until `stop` is set; then GOAWAY and CONNECTION_CLOSE to
    /// every connection and up to 3 s for them to drain.
    pub fn run(&mut self, stop: &AtomicBool) -> Result<(), String> {
        let mut buf = vec![0u8; net::MAX_DATAGRAM];
        let mut out = vec![0u8; net::MAX_DATAGRAM];
        let mut drain_until: Option<Instant> = None;
        loop {
            let now = Instant::now();
            // Wake at least every 100 ms to notice signals.
            let wait = self.ep.timeout().map_or(Duration::from_millis(100), |d| {
                d.saturating_duration_since(now).min(Duration::from_millis(100))
            });
            self.socks.wait(Some(wait)).map_err(|e| format!("poll: {e}"))?;
            if stop.load(Ordering::Relaxed) && drain_until.is_none() {
                eprintln!("mpquic-server: shutting down, closing {} connection(s)", self.ep.len());
                drain_until = Some(Instant::now() + DRAIN_TIME);
                self.ep.set_accept(false);
                self.close_all(Instant::now());
            }
            self.receive(&mut buf, &mut out);
            let before = self.ep.len();
            // One instant per pass: the endpoint serves a connection once
            // per instant (no spin on a deadline left due), and the next
            // pass reads the sockets first. Reading the clock per poll kept
            // paced connections serving while ACKs waited unread, and
            // tripled peak memory (500 downloads: 134 -> 350 MB).
            let now = Instant::now();
            while let Some(h) = self.ep.poll(now) {
                self.service(h, now, &mut out);
            }
            if self.ep.is_empty() && before > 0 {
                release_freed_memory();
            }
            if let Some(until) = drain_until {
                if self.ep.is_empty() || Instant::now() >= until {
                    eprintln!("mpquic-server: stopped");
                    let _ = self.access.flush();
                    return Ok(());
                }
            }
        }
    }

    /// Hand every queued datagram to the endpoint; send its stateless
    /// replies; set up the connections it accepts.
    fn receive(&mut self, buf: &mut [u8], out: &mut [u8]) {
        let (ep, socks) = (&mut self.ep, &self.socks);
        let mut accepted = Vec::new();
        let now = Instant::now();
        let r = socks.recv_all(buf, |d, info| match ep.recv(d, info, now, out) {
            Incoming::Reply(n) => {
                let si = mpquic::SendInfo {
                    from: info.to,
                    to: info.from,
                    path_id: mpquic::PathId::ZERO,
                    at: now,
                    ecn: mpquic::Ecn::NotEct,
                };
                let _ = socks.send(out.get(..n).unwrap_or_default(), &si);
            }
            Incoming::Accepted(h) => accepted.push((h, info)),
            Incoming::Routed(_) | Incoming::Dropped => {}
        });
        if let Err(e) = r {
            eprintln!("mpquic-server: recv: {e}");
        }
        for (h, info) in accepted {
            self.on_accept(h, info, now);
        }
    }

    fn on_accept(&mut self, h: Handle, info: RecvInfo, now: Instant) {
        let qlog_dir = self.opts.qlog_dir.clone();
        let Some((conn, c)) = self.ep.get(h) else { return };
        c.peer = Some(info.from);
        c.log = qlog_dir.as_ref().and_then(|dir| {
            EventLog::create(dir, conn, "mpquic-server", now)
                .map_err(|e| eprintln!("mpquic-server: qlog: {e}"))
                .ok()
        });
        if let Some(l) = c.log.as_mut() {
            l.engine_events(conn);
            l.event(now, "accepted", json!({"peer": info.from.to_string(), "local": info.to.to_string(), "retry": self.opts.retry}));
        }
    }

    fn close_all(&mut self, now: Instant) {
        for h in self.ep.handles() {
            if let Some((conn, c)) = self.ep.get(h) {
                if let Some(h3) = c.h3.as_mut() {
                    let _ = h3.send_goaway(&mut Quic::new(conn, now));
                }
                conn.close(true, H3_NO_ERROR, b"server shutting down", now);
            }
            let mut out = vec![0u8; net::MAX_DATAGRAM];
            self.service(h, now, &mut out);
        }
    }

    fn service(&mut self, handle: Handle, now: Instant, out: &mut [u8]) {
        let cap = unsent_cap(self.ep.len());
        let Some((conn, c)) = self.ep.get(handle) else { return };
        let peer = c.peer.or_else(|| conn.paths().next().map(|p| p.2)).unwrap_or(self.opts.listen[0]);
        // Path events are in the qlog already (the engine's
        // `mpquic:path_event`); nothing else here wants them.
        while conn.path_event_next().is_some() {}
        // Requests that came in 0-RTT are answered at once (0.5-RTT).
        let ready = conn.is_established() || conn.is_in_early_data();
        if ready && c.h3.is_none() && !conn.is_draining() {
            match h3::Connection::with_transport(&mut Quic::new(conn, now), &h3::Config::default()) {
                Ok(h) => c.h3 = Some(h),
                Err(e) => {
                    eprintln!("mpquic-server: {peer}: HTTP/3 setup: {e}");
                    conn.close(true, 0x101, b"h3 setup", now);
                }
            }
        }
        let mut logs = Vec::new();
        if c.h3.is_some() {
            serve(conn, c, peer, &self.root, &mut self.scratch, now, &mut logs);
        }
        if let Some(l) = c.log.as_mut() {
            // The engine's events happened before `now`: they go first.
            l.engine_events(conn);
            l.sample(conn, now);
        }
        // A response waits in the engine only up to its unsent cap: send
        // half a cap's worth of datagrams, top the responses up, and again
        // while the window has room (else one cap's worth per wake-up: half
        // the loopback speed). Topped up before they run dry, streams fill
        // every packet, so GSO batches stay whole (a short packet ends
        // one).
        for &stream in c.responses.keys() {
            let _ = conn.set_stream_send_unsent(stream, cap);
        }
        let round = cap / 2 / 1500;
        for _ in 0..SERVICE_DATAGRAMS / round {
            let (_, taken) = c.out.queue(conn, &self.socks, out, now, round).unwrap_or((None, 0));
            let refilled = push_bodies(conn, c, peer, &mut self.scratch, now, &mut logs);
            if taken < round && !refilled {
                break;
            }
        }
        // Whatever the engine can still send goes now: nothing would
        // wake this connection for it.
        let wake = c.out.flush(conn, &self.socks, out, now).unwrap_or(None);
        let wake = net::earliest(wake, c.log.as_ref().map(|l| l.next_sample()));
        for line in logs {
            let _ = writeln!(self.access, "{line}");
        }
        if let Some((conn, c)) = self.ep.rearm(handle, wake) {
            self.closed(conn, c, peer, now);
        }
    }

    /// The connection is gone: log the requests it left unfinished (one
    /// access-log line per request) and close its event log.
    fn closed(&mut self, mut conn: Connection, mut c: Client, peer: SocketAddr, now: Instant) {
        for r in c.responses.values() {
            let _ = writeln!(self.access, "{}", access_line(peer, r, now, " (connection closed)"));
        }
        if let Some(mut l) = c.log.take() {
            l.closed(&mut conn, now);
        }
    }
}

/// Hand memory freed by closed connections back to the system: glibc's
/// malloc keeps freed blocks of its per-thread arenas mapped, so after a
/// burst of connections the process would otherwise keep its peak size.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: plain call; trims free memory at the top of every arena.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn header<'a>(headers: &'a [Header], name: &str) -> Option<&'a str> {
    headers.iter().find(|h| h.name == name.as_bytes()).and_then(|h| std::str::from_utf8(&h.value).ok())
}

fn access_line(peer: SocketAddr, r: &Response, now: Instant, note: &str) -> String {
    let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    format!(
        "{}.{:03} {peer} \"{} {} HTTP/3\" {} {} {:.1}ms{note}",
        t.as_secs(),
        t.subsec_millis(),
        r.method,
        r.path,
        r.status,
        r.sent,
        now.saturating_duration_since(r.start).as_secs_f64() * 1e3
    )
}

/// Handle HTTP/3 events and push response bodies.
fn serve(
    conn: &mut Connection,
    c: &mut Client,
    peer: SocketAddr,
    root: &Path,
    scratch: &mut [u8],
    now: Instant,
    logs: &mut Vec<String>,
) {
    let Some(h) = c.h3.as_mut() else { return };
    loop {
        let ev = match h.poll(&mut Quic::new(conn, now)) {
            Ok(Some(ev)) => ev,
            Ok(None) => break,
            Err(e) => {
                if !conn.is_draining() && !conn.is_closed() {
                    eprintln!("mpquic-server: {}: HTTP/3: {e}", peer);
                }
                return;
            }
        };
        match ev {
            h3::Event::Headers { stream, headers, .. } => {
                if c.responses.contains_key(&stream) {
                    continue; // trailers
                }
                let r = start_response(h, conn, stream, &headers, root, now);
                if r.eof && r.buf.is_empty() {
                    logs.push(access_line(peer, &r, now, ""));
                } else {
                    c.responses.insert(stream, r);
                }
            }
            h3::Event::Data { stream } => {
                // Request bodies are not used: read and drop them.
                let mut sink = [0u8; 4096];
                while let Ok(n) = h.recv_body(&mut Quic::new(conn, now), stream, &mut sink) {
                    if n == 0 {
                        break;
                    }
                }
            }
            h3::Event::Reset { stream, .. } | h3::Event::StreamError { stream, .. } => {
                if let Some(r) = c.responses.remove(&stream) {
                    logs.push(access_line(peer, &r, now, " (reset by client)"));
                }
            }
            h3::Event::Finished { .. } | h3::Event::GoAway { .. } => {}
        }
    }
    push_bodies(conn, c, peer, scratch, now, logs);
}

/// Push response bodies as far as the streams take them; whether any body
/// byte was taken.
fn push_bodies(
    conn: &mut Connection,
    c: &mut Client,
    peer: SocketAddr,
    scratch: &mut [u8],
    now: Instant,
    logs: &mut Vec<String>,
) -> bool {
    let Some(h) = c.h3.as_mut() else { return false };
    let mut done = Vec::new();
    let mut took = false;
    for (&stream, r) in c.responses.iter_mut() {
        let before = r.sent;
        match push_body(h, conn, stream, r, scratch, now) {
            Ok(true) => done.push((stream, "")),
            Ok(false) => {}
            Err(_) => {
                let _ = conn.stream_shutdown(stream, false, true, 0x10c);
                done.push((stream, " (aborted)"))
            }
        }
        took |= r.sent > before;
    }
    for (stream, note) in done {
        if let Some(r) = c.responses.remove(&stream) {
            logs.push(access_line(peer, &r, now, note));
        }
    }
    took
}

fn start_response(
    h: &mut h3::Connection,
    conn: &mut Connection,
    stream: u64,
    headers: &[Header],
    root: &Path,
    now: Instant,
) -> Response {
    let method = header(headers, ":method").unwrap_or("?").to_string();
    let path = header(headers, ":path").unwrap_or("?").to_string();
    let mut r = Response {
        file: None,
        file_left: 0,
        buf: Vec::new(),
        pos: 0,
        eof: true,
        sent: 0,
        status: 200,
        method: method.clone(),
        path: path.clone(),
        start: now,
    };
    let mut resp = Vec::new();
    let mut len = 0u64;
    let mut ctype = "text/plain; charset=utf-8";
    if method != "GET" && method != "HEAD" {
        r.status = 405;
        r.buf = b"method not allowed\n".to_vec();
        resp.push(Header::new("allow", "GET, HEAD"));
    } else {
        match files::resolve(root, &path) {
            Ok(p) => match File::open(&p).and_then(|f| f.metadata().map(|m| (f, m.len()))) {
                Ok((f, l)) => {
                    len = l;
                    ctype = files::content_type(&p);
                    r.file = Some(f);
                    r.file_left = l;
                    r.eof = l == 0;
                }
                Err(_) => {
                    r.status = 404;
                    r.buf = b"not found\n".to_vec();
                }
            },
            Err(Refused::NotFound) => {
                r.status = 404;
                r.buf = b"not found\n".to_vec();
            }
            Err(Refused::BadRequest) => {
                r.status = 400;
                r.buf = b"bad request\n".to_vec();
            }
        }
    }
    if r.file.is_none() {
        len = r.buf.len() as u64;
    }
    let head = method == "HEAD";
    if head {
        r.buf.clear();
        r.file = None;
        r.eof = true;
    }
    let mut all = vec![
        Header::new(":status", r.status.to_string()),
        Header::new("server", "mpquic"),
        Header::new("content-type", ctype),
        Header::new("content-length", len.to_string()),
    ];
    all.append(&mut resp);
    // The body goes out with FIN on its last DATA frame; an empty one ends
    // with the headers.
    let fin = head || len == 0;
    if fin {
        r.buf.clear();
        r.file = None;
        r.eof = true;
    }
    if let Err(e) = h.send_response(&mut Quic::new(conn, now), stream, &all, fin) {
        eprintln!("mpquic-server: response on stream {stream}: {e}");
        r.buf.clear();
        r.file = None;
        r.eof = true;
    }
    r
}

/// Send as much body as the stream takes; `Ok(true)` when finished. File
/// bytes are read into `scratch` only as far as the stream has room, so
/// they go on at once and a response holds no buffer of its own (except
/// for the rare bytes the stream did not take).
fn push_body(
    h: &mut h3::Connection,
    conn: &mut Connection,
    stream: u64,
    r: &mut Response,
    scratch: &mut [u8],
    now: Instant,
) -> Result<bool, h3::Error> {
    loop {
        if r.pos < r.buf.len() || r.eof {
            // An in-memory body, or file bytes not taken before. The FIN
            // goes with the last byte (send_body sets it only when every
            // byte offered was taken).
            let data = r.buf.get(r.pos..).unwrap_or_default();
            let n = h.send_body(&mut Quic::new(conn, now), stream, data, r.eof)?;
            r.pos += n;
            r.sent += n as u64;
            if r.pos < r.buf.len() {
                return Ok(false);
            }
            r.buf = Vec::new();
            r.pos = 0;
            if r.eof {
                return Ok(true);
            }
        }
        let Some(file) = r.file.as_mut() else { return Ok(true) };
        // Room for the body after a DATA frame header (at most 9 bytes).
        let room = conn.stream_capacity(stream).unwrap_or(0).saturating_sub(9);
        let want = r.file_left.min(room.min(scratch.len()) as u64) as usize;
        if want == 0 {
            return Ok(false);
        }
        let chunk = scratch.get_mut(..want).unwrap_or_default();
        // The file shrank or failed under us: abort the stream rather
        // than send a body shorter than content-length.
        file.read_exact(chunk).map_err(|_| h3::Error::InvalidState("file read failed"))?;
        r.file_left -= want as u64;
        if r.file_left == 0 {
            r.eof = true;
            r.file = None;
        }
        let n = h.send_body(&mut Quic::new(conn, now), stream, chunk, r.eof)?;
        r.sent += n as u64;
        if n < want {
            r.buf = chunk.get(n..).unwrap_or_default().to_vec();
            return Ok(false);
        }
        if r.eof {
            return Ok(true);
        }
    }
}

/// The connection settings `opts` ask for; a certificate and key that
/// BoringSSL refuses are reported here, before any client comes.
fn config(opts: &Options, first: SocketAddr) -> Result<mpquic::Config, StartError> {
    let mut config = mpquic::Config::new();
    let setup = (|| -> Result<(), String> {
        config.set_application_protos(&[crate::ALPN]).map_err(|e| e.to_string())?;
        config.load_cert_chain_from_pem_file(&opts.cert).map_err(|e| e.to_string())?;
        config.load_priv_key_from_pem_file(&opts.key).map_err(|e| e.to_string())?;
        crate::set_algorithms(&mut config, &opts.cc, &opts.scheduler)?;
        config.set_versions(&opts.versions).map_err(|e| e.to_string())?;
        Ok(())
    })();
    setup.map_err(|e| (exit::USAGE, e))?;
    config.set_max_idle_timeout(opts.idle_timeout);
    config.set_initial_max_path_id(opts.max_paths.checked_sub(1));
    config.set_max_connection_window(32 << 20);
    config.set_max_stream_window(32 << 20);
    // Session tickets let clients resume (mpquic-client --session-file);
    // 0-RTT only when asked (a GET replayed is served twice, no worse).
    config.enable_session_tickets(true);
    config.enable_early_data(opts.early_data);
    config.enable_ecn(opts.ecn);
    config.enable_pmtud(opts.pmtud);
    config.set_stream_send_buffer(1 << 20);
    // Memory by need: a response waits in the engine only as far as its
    // connection is sending it (what is in flight plus this), not whole.
    config.set_stream_send_unsent(UNSENT);
    // The engine's own events (metrics, losses, path events) join the log.
    config.enable_qlog(opts.qlog_dir.is_some());
    // Fail on a bad certificate now, not at the first client.
    if mpquic::accept(
        &mpquic::random_cid(CID_LEN),
        &mpquic::random_cid(CID_LEN),
        None,
        first,
        first,
        &config,
        Instant::now(),
    )
    .is_err()
    {
        // Both files are well-formed PEM (checked above): BoringSSL refused
        // their content, most often a key that does not match the certificate.
        let (cert, key) = (&opts.cert, &opts.key);
        return Err((
            exit::USAGE,
            format!("--cert {cert} / --key {key}: not a usable certificate chain and matching private key"),
        ));
    }
    Ok(config)
}
