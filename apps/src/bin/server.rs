//! `mpquic-server`: serves a directory over HTTP/3 on one or more UDP
//! addresses, with multipath, Retry and an access log.

// The binaries are where the clock is read: they pass `now` to the engine.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use mpquic::endpoint::{Endpoint, EndpointConfig, Handle, Incoming};
use mpquic::h3::{self, quic::Quic, Header};
use mpquic::{Connection, RecvInfo};
use mpquic_apps::files::{self, Refused};
use mpquic_apps::net::{self, Outbox, Sockets};
use mpquic_apps::qlog::EventLog;
use mpquic_apps::{exit, H3_NO_ERROR};
use serde_json::json;

/// Serve a directory over HTTP/3 (multipath QUIC).
#[derive(Parser, Debug)]
#[command(name = "mpquic-server", version)]
struct Args {
    /// UDP address to listen on; repeat for several (one socket each).
    #[arg(long, default_value = "127.0.0.1:4433")]
    listen: Vec<SocketAddr>,
    /// Directory to serve.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Certificate chain (PEM).
    #[arg(long)]
    cert: Option<String>,
    /// Private key (PEM).
    #[arg(long)]
    key: Option<String>,
    /// Do not answer new clients with Retry (no address validation).
    #[arg(long)]
    no_retry: bool,
    /// Congestion controller.
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// Path scheduler (`name[:key=value,...]`).
    #[arg(long, default_value = "minrtt")]
    scheduler: String,
    /// Most paths a client may open (sets initial_max_path_id); 0 disables multipath.
    #[arg(long, default_value_t = 4)]
    max_paths: u32,
    /// Write the access log here instead of stderr.
    #[arg(long)]
    access_log: Option<PathBuf>,
    /// Write per-connection JSON-lines event logs into this directory.
    #[arg(long)]
    qlog_dir: Option<PathBuf>,
    /// Idle timeout in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    idle_timeout: u64,
    /// Connections still in their handshake beyond which new clients must
    /// pass a Retry, even with --no-retry.
    #[arg(long, default_value_t = 256)]
    max_half_open: usize,
}

/// How long connections get to close after SIGINT/SIGTERM.
const DRAIN_TIME: Duration = Duration::from_secs(3);
/// Body bytes read from a file at a time.
const CHUNK: usize = 256 * 1024;
/// Length of the connection IDs we issue (the engine keeps this length).
const CID_LEN: usize = 16;

/// One response being sent.
struct Response {
    file: Option<File>,
    /// File bytes not yet read.
    file_left: u64,
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

struct Server {
    args: Args,
    root: PathBuf,
    ep: Endpoint<Client>,
    socks: Sockets,
    access: Box<dyn Write>,
}

fn fail(code: i32, msg: impl std::fmt::Display) -> ! {
    eprintln!("mpquic-server: {msg}");
    std::process::exit(code)
}

fn main() {
    let args = Args::parse();
    let (Some(cert), Some(key)) = (args.cert.clone(), args.key.clone()) else {
        fail(exit::USAGE, "a certificate and key are required: --cert FILE --key FILE (PEM)")
    };
    let root = match args.root.canonicalize() {
        Ok(r) if r.is_dir() => r,
        _ => fail(exit::USAGE, format!("--root {}: not a directory", args.root.display())),
    };
    let mut config = mpquic::Config::new();
    let setup = (|| -> Result<(), String> {
        config.set_application_protos(&[mpquic_apps::ALPN]).map_err(|e| e.to_string())?;
        config.load_cert_chain_from_pem_file(&cert).map_err(|e| e.to_string())?;
        config.load_priv_key_from_pem_file(&key).map_err(|e| e.to_string())?;
        mpquic_apps::set_algorithms(&mut config, &args.cc, &args.scheduler)?;
        Ok(())
    })();
    if let Err(e) = setup {
        fail(exit::USAGE, e);
    }
    // Session tickets let clients resume (mpquic-client --session-file);
    // there is no 0-RTT, so no replay risk.
    config.enable_session_tickets(true);
    config.set_max_idle_timeout(args.idle_timeout);
    config.set_initial_max_path_id(args.max_paths.checked_sub(1));
    config.set_max_connection_window(32 << 20);
    config.set_max_stream_window(32 << 20);
    config.set_stream_send_buffer(1 << 20);
    // The engine's own events (metrics, losses, path events) join the log.
    config.enable_qlog(args.qlog_dir.is_some());
    // Fail on a bad certificate now, not at the first client.
    if let Err(e) = mpquic::accept(
        &mpquic::random_cid(CID_LEN),
        &mpquic::random_cid(CID_LEN),
        None,
        args.listen[0],
        args.listen[0],
        &config,
        Instant::now(),
    ) {
        fail(exit::USAGE, format!("cannot use --cert/--key: {e}"));
    }
    let ep_config = EndpointConfig {
        cid_len: CID_LEN,
        retry: !args.no_retry,
        max_half_open: args.max_half_open,
        ..EndpointConfig::default()
    };
    let ep = Endpoint::new(config, ep_config, Instant::now()).unwrap_or_else(|e| fail(exit::IO, e));
    let socks = Sockets::bind(&args.listen).unwrap_or_else(|e| fail(exit::IO, e));
    let access: Box<dyn Write> = match &args.access_log {
        Some(p) => match std::fs::OpenOptions::new().create(true).append(true).open(p) {
            Ok(f) => Box::new(f),
            Err(e) => fail(exit::IO, format!("--access-log {}: {e}", p.display())),
        },
        None => Box::new(std::io::stderr()),
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
            fail(exit::IO, format!("signal handler: {e}"));
        }
    }
    let listening: Vec<String> = socks.local_addrs().iter().map(|a| a.to_string()).collect();
    eprintln!(
        "mpquic-server: serving {} on {} (cc {}, scheduler {}, retry {}, max paths {})",
        root.display(),
        listening.join(", "),
        args.cc,
        args.scheduler,
        if args.no_retry { "off" } else { "on" },
        args.max_paths
    );
    let mut server = Server { args, root, ep, socks, access };
    server.run(&stop);
}

impl Server {
    fn run(&mut self, stop: &AtomicBool) {
        let mut buf = vec![0u8; net::MAX_DATAGRAM];
        let mut out = vec![0u8; net::MAX_DATAGRAM];
        let mut drain_until: Option<Instant> = None;
        loop {
            let now = Instant::now();
            // Wake at least every 100 ms to notice signals.
            let wait = self.ep.timeout().map_or(Duration::from_millis(100), |d| {
                d.saturating_duration_since(now).min(Duration::from_millis(100))
            });
            if let Err(e) = self.socks.wait(Some(wait)) {
                fail(exit::IO, format!("poll: {e}"));
            }
            if stop.load(Ordering::Relaxed) && drain_until.is_none() {
                eprintln!("mpquic-server: shutting down, closing {} connection(s)", self.ep.len());
                drain_until = Some(Instant::now() + DRAIN_TIME);
                self.ep.set_accept(false);
                self.close_all(Instant::now());
            }
            self.receive(&mut buf, &mut out);
            let now = Instant::now();
            let before = self.ep.len();
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
                    return;
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
                let si =
                    mpquic::SendInfo { from: info.to, to: info.from, path_id: mpquic::PathId::ZERO, at: now };
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
        let qlog_dir = self.args.qlog_dir.clone();
        let Some((conn, c)) = self.ep.get(h) else { return };
        c.peer = Some(info.from);
        c.log = qlog_dir.as_ref().and_then(|dir| {
            let name = hex(conn.source_id().as_slice());
            EventLog::create(dir, &name, now).map_err(|e| eprintln!("mpquic-server: qlog: {e}")).ok()
        });
        if let Some(l) = c.log.as_mut() {
            l.event(now, "connection_started", json!({"peer": info.from.to_string(), "local": info.to.to_string(), "retry": !self.args.no_retry}));
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
        let Some((conn, c)) = self.ep.get(handle) else { return };
        let peer = c.peer.or_else(|| conn.paths().next().map(|p| p.2)).unwrap_or(self.args.listen[0]);
        while let Some(ev) = conn.path_event_next() {
            if let Some(l) = c.log.as_mut() {
                l.event(now, "path_event", json!({ "detail": format!("{ev:?}") }));
            }
        }
        if conn.is_established() && c.h3.is_none() && !conn.is_draining() {
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
            serve(conn, c, peer, &self.root, now, &mut logs);
        }
        if let Some(l) = c.log.as_mut() {
            l.sample(conn, now);
            l.engine_events(conn);
        }
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
    fn closed(&mut self, conn: Connection, mut c: Client, peer: SocketAddr, now: Instant) {
        for r in c.responses.values() {
            let _ = writeln!(self.access, "{}", access_line(peer, r, now, " (connection closed)"));
        }
        if let Some(mut l) = c.log.take() {
            let info = conn.peer_error().or(conn.local_error()).cloned();
            l.event(
                now,
                "closed",
                json!({
                    "by_peer": conn.peer_error().is_some(),
                    "code": info.as_ref().map(|i| i.code), "app": info.as_ref().map(|i| i.is_app),
                    "reason": info.as_ref().map(|i| String::from_utf8_lossy(&i.reason).into_owned()),
                    "stats": format!("{:?}", conn.stats()),
                }),
            );
            l.flush();
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

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
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
    let mut done = Vec::new();
    for (&stream, r) in c.responses.iter_mut() {
        match push_body(h, conn, stream, r, now) {
            Ok(true) => done.push((stream, "")),
            Ok(false) => {}
            Err(_) => {
                let _ = conn.stream_shutdown(stream, false, true, 0x10c);
                done.push((stream, " (aborted)"))
            }
        }
    }
    for (stream, note) in done {
        if let Some(r) = c.responses.remove(&stream) {
            logs.push(access_line(peer, &r, now, note));
        }
    }
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

/// Send as much body as flow control allows; `Ok(true)` when finished.
fn push_body(
    h: &mut h3::Connection,
    conn: &mut Connection,
    stream: u64,
    r: &mut Response,
    now: Instant,
) -> Result<bool, h3::Error> {
    loop {
        if r.pos >= r.buf.len() && !r.eof {
            let want = r.file_left.min(CHUNK as u64) as usize;
            r.buf.resize(want, 0);
            r.pos = 0;
            match r.file.as_mut().map(|f| f.read_exact(&mut r.buf)) {
                Some(Ok(())) => {}
                // The file shrank or failed under us: abort the stream
                // rather than send a body shorter than content-length.
                _ => return Err(h3::Error::InvalidState("file read failed")),
            }
            r.file_left -= want as u64;
            if r.file_left == 0 {
                r.eof = true;
                r.file = None;
            }
        }
        let data = r.buf.get(r.pos..).unwrap_or_default();
        let n = h.send_body(&mut Quic::new(conn, now), stream, data, r.eof)?;
        r.pos += n;
        r.sent += n as u64;
        // The FIN went with the last byte (send_body sets it only when
        // every byte offered was taken).
        if r.eof && r.pos >= r.buf.len() {
            return Ok(true);
        }
        if n == 0 {
            return Ok(false);
        }
    }
}
