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
use mpquic::h3::{self, quic::Quic, Header};
use mpquic::server::{Accept, StatelessResetKey, Validator};
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

struct Client {
    conn: Connection,
    h3: Option<h3::Connection>,
    out: Outbox,
    wake: Option<Instant>,
    responses: HashMap<u64, Response>,
    peer: SocketAddr,
    log: Option<EventLog>,
    cids: Vec<Vec<u8>>,
}

struct Server {
    args: Args,
    root: PathBuf,
    config: mpquic::Config,
    validator: Validator,
    socks: Sockets,
    clients: HashMap<u64, Client>,
    by_cid: HashMap<Vec<u8>, u64>,
    next_handle: u64,
    access: Box<dyn Write>,
    started: Instant,
    /// Tokens of every connection ID we issue derive from it, so packets for
    /// connections we no longer have get a Stateless Reset.
    reset_key: StatelessResetKey,
    resets: ResetBudget,
}

/// Stateless Resets allowed per second (RFC 9000 §10.3.3 suggests a limit;
/// resets are smaller than their triggers, so this only bounds the work).
const RESETS_PER_SEC: u32 = 1000;

#[derive(Default)]
struct ResetBudget {
    second: u64,
    sent: u32,
}

impl ResetBudget {
    fn take(&mut self, second: u64) -> bool {
        if second != self.second {
            self.second = second;
            self.sent = 0;
        }
        self.sent += 1;
        self.sent <= RESETS_PER_SEC
    }
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
    let reset_key = StatelessResetKey::random();
    config.set_stateless_reset_key(reset_key.clone());
    let validator = Validator::new(!args.no_retry).unwrap_or_else(|e| fail(exit::IO, format!("{e:?}")));
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
    let mut server = Server {
        args,
        root,
        config,
        validator,
        socks,
        clients: HashMap::new(),
        by_cid: HashMap::new(),
        next_handle: 0,
        access,
        started: Instant::now(),
        reset_key,
        resets: ResetBudget::default(),
    };
    server.run(&stop);
}

impl Server {
    fn run(&mut self, stop: &AtomicBool) {
        let mut buf = vec![0u8; net::MAX_DATAGRAM];
        let mut out = vec![0u8; net::MAX_DATAGRAM];
        let mut drain_until: Option<Instant> = None;
        loop {
            let now = Instant::now();
            let mut deadline = None;
            for c in self.clients.values() {
                deadline = net::earliest(deadline, c.conn.timeout());
                deadline = net::earliest(deadline, c.wake);
                deadline = net::earliest(deadline, c.log.as_ref().map(|l| l.next_sample()));
            }
            // Wake at least every 100 ms to notice signals.
            let wait = deadline.map_or(Duration::from_millis(100), |d| {
                d.saturating_duration_since(now).min(Duration::from_millis(100))
            });
            if let Err(e) = self.socks.wait(Some(wait)) {
                fail(exit::IO, format!("poll: {e}"));
            }
            if stop.load(Ordering::Relaxed) && drain_until.is_none() {
                eprintln!("mpquic-server: shutting down, closing {} connection(s)", self.clients.len());
                drain_until = Some(Instant::now() + DRAIN_TIME);
                self.close_all(Instant::now());
            }
            let mut incoming = Vec::new();
            let r = self.socks.recv_all(&mut buf, |d, info| incoming.push((d.to_vec(), info)));
            if let Err(e) = r {
                eprintln!("mpquic-server: recv: {e}");
            }
            for (mut d, info) in incoming {
                self.on_datagram(&mut d, info, &mut out, drain_until.is_some());
            }
            let now = Instant::now();
            let handles: Vec<u64> = self.clients.keys().copied().collect();
            for h in handles {
                self.service(h, now, &mut out);
            }
            if let Some(until) = drain_until {
                if self.clients.is_empty() || Instant::now() >= until {
                    eprintln!("mpquic-server: stopped");
                    let _ = self.access.flush();
                    return;
                }
            }
        }
    }

    fn close_all(&mut self, now: Instant) {
        for c in self.clients.values_mut() {
            if let Some(h) = c.h3.as_mut() {
                let _ = h.send_goaway(&mut Quic::new(&mut c.conn, now));
            }
            c.conn.close(true, H3_NO_ERROR, b"server shutting down", now);
        }
    }

    fn on_datagram(&mut self, d: &mut [u8], info: RecvInfo, out: &mut [u8], draining: bool) {
        let now = Instant::now();
        let key = net::dcid(d, CID_LEN).map(<[u8]>::to_vec);
        if let Some(h) = key.as_ref().and_then(|k| self.by_cid.get(k)) {
            if let Some(c) = self.clients.get_mut(h) {
                let _ = c.conn.recv(d, info, now);
            }
            return;
        }
        let long = d.first().is_some_and(|b| b & 0x80 != 0);
        if !long {
            if !self.try_unknown_cid(d, info, key, now) {
                self.send_stateless_reset(d, info, now, out);
            }
            return;
        }
        if draining {
            return;
        }
        let secs = now.saturating_duration_since(self.started).as_secs();
        match self.validator.handle(d, &info.from, secs, out) {
            Accept::Reply(n) => {
                let si =
                    mpquic::SendInfo { from: info.to, to: info.from, path_id: mpquic::PathId::ZERO, at: now };
                let _ = self.socks.send(out.get(..n).unwrap_or_default(), &si);
            }
            Accept::Drop => {}
            Accept::New { odcid, retry_scid } => {
                let scid = retry_scid.unwrap_or_else(|| mpquic::random_cid(CID_LEN));
                let conn = match mpquic::accept(
                    &scid,
                    &odcid,
                    retry_scid.as_ref(),
                    info.to,
                    info.from,
                    &self.config,
                    now,
                ) {
                    Ok(c) => c,
                    Err(e) => {
                        eprintln!("mpquic-server: accept from {}: {e}", info.from);
                        return;
                    }
                };
                let handle = self.next_handle;
                self.next_handle += 1;
                let log = self.args.qlog_dir.as_ref().and_then(|dir| {
                    let name = hex(odcid.as_slice());
                    EventLog::create(dir, &name, now).map_err(|e| eprintln!("mpquic-server: qlog: {e}")).ok()
                });
                let mut c = Client {
                    conn,
                    h3: None,
                    out: Outbox::default(),
                    wake: None,
                    responses: HashMap::new(),
                    peer: info.from,
                    log,
                    cids: Vec::new(),
                };
                if let Some(l) = c.log.as_mut() {
                    l.event(now, "connection_started", json!({"peer": info.from.to_string(), "local": info.to.to_string(), "retry": retry_scid.is_some()}));
                }
                // A token for the client's next connection, so it skips the Retry.
                if !self.args.no_retry {
                    c.conn.send_new_token(&self.validator.new_token(&info.from, secs));
                }
                let _ = c.conn.recv(d, info, now);
                // Route by our SCID and (for the client's further Initials
                // and 0-RTT) by the DCID it used.
                for cid in [scid.as_slice().to_vec(), key.unwrap_or_default()] {
                    if !cid.is_empty() {
                        self.by_cid.insert(cid.clone(), handle);
                        c.cids.push(cid);
                    }
                }
                self.clients.insert(handle, c);
            }
        }
    }

    /// A short-header packet for a connection ID we have not seen: one of
    /// the IDs a connection issued with NEW_CONNECTION_ID (a new path or a
    /// migration). The engine does not list them, so offer the datagram to
    /// each connection and keep the one that accepts it.
    fn try_unknown_cid(&mut self, d: &[u8], info: RecvInfo, key: Option<Vec<u8>>, now: Instant) -> bool {
        let Some(key) = key else { return false };
        for (h, c) in self.clients.iter_mut() {
            let before = c.conn.stats();
            let mut copy = d.to_vec();
            let _ = c.conn.recv(&mut copy, info, now);
            let after = c.conn.stats();
            if after.recv > before.recv && after.dropped == before.dropped {
                self.by_cid.insert(key.clone(), *h);
                c.cids.push(key);
                return true;
            }
        }
        false
    }

    /// A short-header packet no connection took: its connection is gone
    /// (closed, or from before a restart), so tell the peer (RFC 9000 §10.3).
    fn send_stateless_reset(&mut self, d: &[u8], info: RecvInfo, now: Instant, out: &mut [u8]) {
        let second = now.saturating_duration_since(self.started).as_secs();
        if !self.resets.take(second) {
            return;
        }
        if let Some(n) = mpquic::server::stateless_reset(&self.reset_key, d, CID_LEN, out) {
            let si =
                mpquic::SendInfo { from: info.to, to: info.from, path_id: mpquic::PathId::ZERO, at: now };
            let _ = self.socks.send(out.get(..n).unwrap_or_default(), &si);
        }
    }

    fn service(&mut self, handle: u64, now: Instant, out: &mut [u8]) {
        let Some(c) = self.clients.get_mut(&handle) else { return };
        if c.conn.timeout().is_some_and(|t| t <= now) {
            c.conn.on_timeout(now);
        }
        while let Some(ev) = c.conn.path_event_next() {
            if let Some(l) = c.log.as_mut() {
                l.event(now, "path_event", json!({ "detail": format!("{ev:?}") }));
            }
        }
        if c.conn.is_established() && c.h3.is_none() && !c.conn.is_draining() {
            match h3::Connection::with_transport(&mut Quic::new(&mut c.conn, now), &h3::Config::default()) {
                Ok(h) => c.h3 = Some(h),
                Err(e) => {
                    eprintln!("mpquic-server: {}: HTTP/3 setup: {e}", c.peer);
                    c.conn.close(true, 0x101, b"h3 setup", now);
                }
            }
        }
        let root = self.root.clone();
        let mut logs = Vec::new();
        if c.h3.is_some() {
            serve(c, &root, now, &mut logs);
        }
        for line in logs {
            let _ = writeln!(self.access, "{line}");
        }
        if let Some(l) = c.log.as_mut() {
            l.sample(&c.conn, now);
            l.engine_events(&mut c.conn);
        }
        match c.out.flush(&mut c.conn, &self.socks, out, now) {
            Ok(w) => c.wake = w,
            Err(_) => c.wake = None,
        }
        if c.conn.is_closed() {
            if let Some(mut l) = c.log.take() {
                let info = c.conn.peer_error().or(c.conn.local_error()).cloned();
                l.event(
                    now,
                    "closed",
                    json!({
                        "by_peer": c.conn.peer_error().is_some(),
                        "code": info.as_ref().map(|i| i.code), "app": info.as_ref().map(|i| i.is_app),
                        "reason": info.as_ref().map(|i| String::from_utf8_lossy(&i.reason).into_owned()),
                        "stats": format!("{:?}", c.conn.stats()),
                    }),
                );
                l.flush();
            }
            for cid in &c.cids {
                self.by_cid.remove(cid);
            }
            self.clients.remove(&handle);
        }
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
fn serve(c: &mut Client, root: &Path, now: Instant, logs: &mut Vec<String>) {
    let Some(h) = c.h3.as_mut() else { return };
    loop {
        let ev = match h.poll(&mut Quic::new(&mut c.conn, now)) {
            Ok(Some(ev)) => ev,
            Ok(None) => break,
            Err(e) => {
                if !c.conn.is_draining() && !c.conn.is_closed() {
                    eprintln!("mpquic-server: {}: HTTP/3: {e}", c.peer);
                }
                return;
            }
        };
        match ev {
            h3::Event::Headers { stream, headers, .. } => {
                if c.responses.contains_key(&stream) {
                    continue; // trailers
                }
                let r = start_response(h, &mut c.conn, stream, &headers, root, now);
                if r.eof && r.buf.is_empty() {
                    logs.push(access_line(c.peer, &r, now, ""));
                } else {
                    c.responses.insert(stream, r);
                }
            }
            h3::Event::Data { stream } => {
                // Request bodies are not used: read and drop them.
                let mut sink = [0u8; 4096];
                while let Ok(n) = h.recv_body(&mut Quic::new(&mut c.conn, now), stream, &mut sink) {
                    if n == 0 {
                        break;
                    }
                }
            }
            h3::Event::Reset { stream, .. } | h3::Event::StreamError { stream, .. } => {
                if let Some(r) = c.responses.remove(&stream) {
                    logs.push(access_line(c.peer, &r, now, " (reset by client)"));
                }
            }
            h3::Event::Finished { .. } | h3::Event::GoAway { .. } => {}
        }
    }
    let mut done = Vec::new();
    for (&stream, r) in c.responses.iter_mut() {
        match push_body(h, &mut c.conn, stream, r, now) {
            Ok(true) => done.push((stream, "")),
            Ok(false) => {}
            Err(_) => {
                let _ = c.conn.stream_shutdown(stream, false, true, 0x10c);
                done.push((stream, " (aborted)"))
            }
        }
    }
    for (stream, note) in done {
        if let Some(r) = c.responses.remove(&stream) {
            logs.push(access_line(c.peer, &r, now, note));
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
