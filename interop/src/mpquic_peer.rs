//! mpquic's side of a cell: a client driven by `sansio`, and a server on
//! `mpquic::Endpoint` (the code path mpquic-server uses); hq-interop, or
//! HTTP/3 with `mpquic::h3`.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mpquic::endpoint::Incoming;
use mpquic::{
    Config, Connection, Ecn, EcnState, Endpoint, EndpointConfig, ErrorCode, PathEvent, PathId, PathStatus,
    RecvInfo, Version,
};
use mpquic_apps::qlog::EventLog;

use crate::hq::{self, Streams};
use crate::http3::{self, Holds};
use crate::relay::{bind, loopback};
use crate::sansio::{self, Engine, ServerApp, Sockets};
use crate::{cert, content, Mp, ServerHandle, Side, Spec};

/// Packets between key updates in the keyupdate case (many per transfer;
/// the least `Config::set_key_update_interval` takes).
const KEY_UPDATE_INTERVAL: u64 = 1000;

/// `MPQUIC_INTEROP_QLOG=DIR`: mpquic's connections write their qlog
/// there, `<odcid>_{client,server}.sqlog` (for looking into a failing cell).
fn qlog_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("MPQUIC_INTEROP_QLOG").map(Into::into)
}

/// The qlog file of `conn`, with `MPQUIC_INTEROP_QLOG` (an error goes to
/// stderr: a debugging aid must not fail the cell).
fn open_qlog(conn: &Connection) -> Option<EventLog> {
    let dir = qlog_dir()?;
    EventLog::create(&dir, conn, "mpquic-interop", Instant::now())
        .map_err(|e| eprintln!("qlog {}: {e}", dir.display()))
        .ok()
}

/// Copy `conn`'s queued events into its log, and flush it when `last`.
fn drain_qlog(log: Option<&mut EventLog>, conn: &mut Connection, last: bool) {
    if let Some(l) = log {
        l.engine_events(conn);
        if last {
            l.flush();
        }
    }
}

fn config(server: bool, spec: &Spec) -> Result<Config, String> {
    let mut c = Config::new();
    c.enable_qlog(qlog_dir().is_some());
    c.set_application_protos(&[content::alpn(spec.h3)]).map_err(|e| e.to_string())?;
    if server {
        c.load_cert_chain_from_pem_file(&cert("cert.pem")).map_err(|e| e.to_string())?;
        c.load_priv_key_from_pem_file(&cert("key.pem")).map_err(|e| e.to_string())?;
    } else {
        c.load_verify_locations_from_file(&cert("rootca.pem")).map_err(|e| e.to_string())?;
    }
    c.set_initial_max_data(32 << 20);
    c.set_initial_max_stream_data_bidi_local(16 << 20);
    c.set_initial_max_stream_data_bidi_remote(16 << 20);
    c.set_initial_max_stream_data_uni(1 << 20);
    c.set_initial_max_streams_bidi(200);
    c.set_initial_max_streams_uni(16);
    c.set_max_idle_timeout(crate::IDLE_TIMEOUT.as_millis() as u64);
    if spec.mp.is_some() {
        c.set_initial_max_path_id(Some(4));
        c.set_scheduler("rr").map_err(|e| e.to_string())?;
    }
    if spec.v2 {
        c.set_versions(&[Version::V2, Version::V1]).map_err(|e| e.to_string())?;
        if !server {
            c.set_initial_version(Version::V1).map_err(|e| e.to_string())?;
        }
    }
    if spec.vn && !server {
        c.set_versions(&[Version::V2, Version::V1]).map_err(|e| e.to_string())?;
    }
    if spec.key_update {
        c.set_key_update_interval(KEY_UPDATE_INTERVAL);
    }
    if let (true, Some(addr)) = (server, spec.preferred) {
        c.set_preferred_address(addr);
    }
    c.enable_session_tickets(spec.resume);
    c.enable_early_data(spec.early_data);
    Ok(c)
}

fn why(conn: &Connection) -> String {
    let show = |c: Option<&mpquic::CloseInfo>| {
        c.map(|c| format!("code {:#x} {:?}", c.code, String::from_utf8_lossy(&c.reason)))
    };
    format!("local {:?}, peer {:?}", show(conn.local_error()), show(conn.peer_error()))
}

impl Streams for Connection {
    fn stream_send(&mut self, id: u64, data: &[u8], fin: bool) -> Option<usize> {
        Connection::stream_send(self, id, data, fin).ok()
    }
    fn stream_recv(&mut self, id: u64, buf: &mut [u8]) -> Option<(usize, bool)> {
        Connection::stream_recv(self, id, buf).ok()
    }
    fn readable(&mut self) -> Vec<u64> {
        Connection::readable(self)
    }
}

/// A client connection and its multipath plan.
struct Client {
    conn: Connection,
    mp: Option<Mp>,
    /// Local address of the second path and the server it goes to.
    second: Option<(SocketAddr, SocketAddr)>,
    path: Option<PathId>,
    abandoned: bool,
    key_update: bool,
    /// Key updates we started.
    initiated: u64,
    /// Moves to another address pair (`PathEvent::Migrated`).
    migrated: usize,
    /// Path validations that failed (`PathEvent::FailedValidation`).
    failed_validations: usize,
    /// Its qlog file (with `MPQUIC_INTEROP_QLOG`).
    qlog: Option<EventLog>,
}

impl Streams for Client {
    fn stream_send(&mut self, id: u64, data: &[u8], fin: bool) -> Option<usize> {
        Streams::stream_send(&mut self.conn, id, data, fin)
    }
    fn stream_recv(&mut self, id: u64, buf: &mut [u8]) -> Option<(usize, bool)> {
        Streams::stream_recv(&mut self.conn, id, buf)
    }
    fn readable(&mut self) -> Vec<u64> {
        self.conn.readable()
    }
}

impl Holds<Connection> for Client {
    fn conn(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

impl Engine for Client {
    fn recv(&mut self, buf: &mut [u8], info: RecvInfo) {
        let _ = self.conn.recv(buf, info, Instant::now());
    }
    fn send(&mut self, out: &mut [u8]) -> Option<(usize, SocketAddr, SocketAddr, Ecn)> {
        match self.conn.send(out, Instant::now()) {
            Ok(Some((n, info))) => Some((n, info.from, info.to, info.ecn)),
            _ => None,
        }
    }
    fn timeout(&self) -> Option<Instant> {
        self.conn.timeout()
    }
    fn on_timeout(&mut self) {
        self.conn.on_timeout(Instant::now());
    }
    fn established(&self) -> bool {
        self.conn.is_established()
    }
    fn closed(&self) -> bool {
        self.conn.is_closed()
    }
    fn why_closed(&self) -> String {
        why(&self.conn)
    }
    fn close(&mut self) {
        self.conn.close(true, 0, b"done", Instant::now());
    }
    fn early_data(&self) -> bool {
        self.conn.is_in_early_data()
    }
    fn tick(&mut self, received: u64, _total: u64) {
        let now = Instant::now();
        // A client that only receives sends no ack-eliciting packets, so the
        // interval rarely triggers (an update needs one of ours acknowledged
        // in the current phase): start updates by hand whenever allowed.
        if self.key_update && self.conn.update_keys(now) {
            self.initiated += 1;
        }
        drain_qlog(self.qlog.as_mut(), &mut self.conn, false);
        while let Some(e) = self.conn.path_event_next() {
            self.migrated += usize::from(matches!(e, PathEvent::Migrated(..)));
            self.failed_validations += usize::from(matches!(e, PathEvent::FailedValidation(_)));
        }
        let (Some(mp), Some((local, peer))) = (self.mp, self.second) else { return };
        if self.path.is_none() {
            // Until the peer's PATH_NEW_CONNECTION_IDs arrive this fails: retry.
            self.path = self.conn.probe_path(local, peer, now).ok();
            if let (Some(id), Mp::Backup) = (self.path, mp) {
                let _ = self.conn.set_path_status(id, PathStatus::Backup, now);
            }
        }
        if let (Some(id), Mp::Abandon(at)) = (self.path, mp) {
            if !self.abandoned && received >= at {
                self.abandoned =
                    self.conn.abandon_path(id, ErrorCode::APPLICATION_ABANDON_PATH.0, now).is_ok();
            }
        }
    }
}

/// Whether the connection's first path validated ECN (the peer's ACKs
/// counted our ECT(0) marks).
fn ecn_validated(conn: &Connection) -> bool {
    conn.path_stats().next().is_some_and(|p| p.ecn == EcnState::Capable)
}

/// Keeps the connection's ALPN, if it negotiated one.
fn note_alpn(conn: &Connection, side: &mut Side) {
    if !conn.application_proto().is_empty() {
        side.alpn = Some(String::from_utf8_lossy(conn.application_proto()).into_owned());
    }
}

/// Keeps the first path's datagram size and adds the connection's black
/// holes (path MTU discovery).
fn note_mtu(conn: &Connection, side: &mut Side) {
    if let Some(p) = conn.path_stats().next() {
        side.mtu = Some(p.mtu);
    }
    *side.mtu_black_holes.get_or_insert(0) += conn.path_stats().map(|p| p.mtu_black_holes).sum::<u32>();
}

fn abandoned(conn: &Connection) -> u64 {
    conn.path_stats().filter(|p| !p.active).count() as u64
}

/// Runs the client's connections against `servers` (relay fronts).
pub fn client(spec: &Spec, servers: &[SocketAddr]) -> Side {
    let deadline = Instant::now() + spec.timeout;
    match config(false, spec) {
        Ok(cfg) => {
            crate::connections(spec, |session, side| one_client(&cfg, spec, servers, deadline, session, side))
        }
        Err(e) => Side { errors: vec![e], ..Side::default() },
    }
}

fn one_client(
    cfg: &Config,
    spec: &Spec,
    servers: &[SocketAddr],
    deadline: Instant,
    session: &mut Option<Vec<u8>>,
    side: &mut Side,
) -> Result<(), String> {
    let res = attempt(cfg, spec, servers, deadline, session, side, None);
    // Version Negotiation: one new attempt in the version it named.
    match side.vn_next.take().filter(|_| res.is_err()) {
        Some((v, refused)) => {
            let mut cfg = cfg.clone();
            cfg.set_initial_version(v).map_err(|e| e.to_string())?;
            *side.after_vn.get_or_insert(0) += 1;
            attempt(&cfg, spec, servers, deadline, session, side, Some(refused))
        }
        None => res,
    }
}

/// One connection attempt (`refused`: it follows a Version Negotiation
/// packet that refused this version).
fn attempt(
    cfg: &Config,
    spec: &Spec,
    servers: &[SocketAddr],
    deadline: Instant,
    session: &mut Option<Vec<u8>>,
    side: &mut Side,
    refused: Option<Version>,
) -> Result<(), String> {
    let ip = loopback(servers[0].ip());
    let mut socks = vec![bind(ip).map_err(|e| e.to_string())?];
    if spec.mp.is_some() {
        socks.push(bind(ip).map_err(|e| e.to_string())?);
    }
    let mut socks = Sockets::new(socks).map_err(|e| e.to_string())?;
    let local = socks.locals()[0];
    let scid = mpquic::random_cid(16);
    let mut conn = mpquic::connect_with_session(
        Some("localhost"),
        &scid,
        local,
        servers[0],
        cfg,
        session.as_deref(),
        Instant::now(),
    )
    .map_err(|e| format!("connect: {e:?}"))?;
    if let Some(r) = refused {
        conn.follows_version_negotiation(r);
    }
    let second = socks.locals().get(1).map(|l| (*l, servers[0]));
    let qlog = open_qlog(&conn);
    let mut c = Client {
        conn,
        mp: spec.mp,
        second,
        path: None,
        abandoned: false,
        key_update: spec.key_update,
        initiated: 0,
        migrated: 0,
        failed_validations: 0,
        qlog,
    };
    let res = sansio::fetch::<_, mpquic::h3::Connection>(&mut c, &mut socks, spec, deadline, side);
    drain_qlog(c.qlog.as_mut(), &mut c.conn, true);
    *side.key_updates.get_or_insert(0) += c.conn.stats().key_updates;
    *side.key_updates_initiated.get_or_insert(0) += c.initiated;
    *side.abandoned.get_or_insert(0) += abandoned(&c.conn).max(u64::from(c.abandoned));
    *side.resumed.get_or_insert(0) += usize::from(c.conn.is_resumed());
    *side.early_data.get_or_insert(0) += usize::from(c.conn.is_early_data_accepted());
    *side.ecn_validated.get_or_insert(0) += usize::from(ecn_validated(&c.conn));
    note_alpn(&c.conn, side);
    note_mtu(&c.conn, side);
    *side.migrated.get_or_insert(0) += c.migrated;
    *side.failed_validations.get_or_insert(0) += c.failed_validations;
    // The next connection resumes this one's ticket. A connection whose
    // answers came in 0.5-RTT may close before the server's ticket arrives
    // (aioquic sends it once the handshake completes): no ticket only
    // matters when another connection follows, whose verdict reports it.
    if let Some(s) = c.conn.session().filter(|_| spec.resume) {
        *session = Some(s.to_vec());
    }
    side.vn_next = c.conn.version_negotiation().map(|v| (v, c.conn.version()));
    res
}

/// Starts a server (two addresses when the case is multipath: a noq client
/// opens its second path towards the second one; or when it offers a
/// preferred address, which the relay forwards to the second).
pub fn server(spec: &Spec) -> Result<ServerHandle, String> {
    let cfg = config(true, spec)?;
    let ip: IpAddr = loopback(if spec.ipv6 { "::1".parse().unwrap() } else { "127.0.0.1".parse().unwrap() });
    let n = if spec.mp.is_some() || spec.preferred.is_some() { 2 } else { 1 };
    let socks = (0..n).map(|_| bind(ip)).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
    let socks = Sockets::new(socks).map_err(|e| e.to_string())?;
    let ep_cfg = EndpointConfig { retry: spec.retry, new_tokens: false, ..EndpointConfig::default() };
    let stop = Arc::new(AtomicBool::new(false));
    let addrs = socks.locals().to_vec();
    let s = stop.clone();
    let thread = std::thread::Builder::new().name("mpquic-server".into());
    let join = if spec.h3 {
        let ep = Endpoint::<http3::Server<mpquic::h3::Connection>>::new(cfg, ep_cfg, Instant::now())
            .map_err(|e| e.to_string())?;
        thread.spawn(move || serve(ep, socks, &s))
    } else {
        let ep = Endpoint::<hq::Server>::new(cfg, ep_cfg, Instant::now()).map_err(|e| e.to_string())?;
        thread.spawn(move || serve(ep, socks, &s))
    };
    Ok(ServerHandle::new(addrs, stop, join.map_err(|e| e.to_string())?))
}

fn serve<A: ServerApp<Connection> + Default>(
    mut ep: Endpoint<A>,
    mut socks: Sockets,
    stop: &AtomicBool,
) -> Side {
    let mut side = Side::default();
    let mut out = vec![0u8; 1500];
    let mut reply = vec![0u8; 1500];
    let mut key_updates = 0;
    let mut initiated = 0;
    let mut gone = 0;
    let mut resumed = 0;
    let mut early = 0;
    let mut ecn = 0;
    let mut replies = Vec::new();
    let mut qlogs = std::collections::HashMap::new();
    while !stop.load(Ordering::Relaxed) {
        socks.input(|buf, info| {
            if let Incoming::Reply(n) = ep.recv(buf, info, Instant::now(), &mut reply) {
                replies.push((reply[..n].to_vec(), info.from, info.to));
            }
        });
        for (d, from, to) in replies.drain(..) {
            socks.send(&d, (to, from), Ecn::NotEct);
        }
        while ep.poll(Instant::now()).is_some() {}
        for h in ep.handles() {
            let Some((conn, app)) = ep.get(h) else { continue };
            // Requests that came in 0-RTT are answered at once (0.5-RTT).
            if conn.is_established() || conn.is_in_early_data() {
                app.step(conn);
            }
            while let Ok(Some((n, info))) = conn.send(&mut out, Instant::now()) {
                socks.send(&out[..n], (info.from, info.to), info.ecn);
            }
            (key_updates, initiated) = key_updates_seen(conn, key_updates, initiated);
            while let Some(e) = conn.path_event_next() {
                gone += u64::from(matches!(e, PathEvent::Abandoned(_)));
            }
            let log = qlogs.entry(h).or_insert_with(|| open_qlog(conn));
            drain_qlog(log.as_mut(), conn, false);
            if let Some((mut conn, mut app)) = ep.rearm(h, None) {
                drain_qlog(qlogs.remove(&h).flatten().as_mut(), &mut conn, true);
                resumed += usize::from(conn.is_resumed());
                early += usize::from(conn.is_early_data_accepted());
                ecn += usize::from(ecn_validated(&conn));
                note_alpn(&conn, &mut side);
                note_mtu(&conn, &mut side);
                side.files += app.served();
                side.errors.extend(app.take_errors());
                (key_updates, initiated) = key_updates_seen(&conn, key_updates, initiated);
            }
        }
        socks.wait(ep.timeout());
    }
    for h in ep.handles() {
        if let Some((conn, app)) = ep.get(h) {
            drain_qlog(qlogs.remove(&h).flatten().as_mut(), conn, true);
            resumed += usize::from(conn.is_resumed());
            early += usize::from(conn.is_early_data_accepted());
            ecn += usize::from(ecn_validated(conn));
            note_alpn(conn, &mut side);
            note_mtu(conn, &mut side);
            side.files += app.served();
            side.errors.extend(app.take_errors());
        }
    }
    side.key_updates = Some(key_updates);
    side.key_updates_initiated = Some(initiated);
    side.abandoned = Some(gone);
    side.resumed = Some(resumed);
    side.early_data = Some(early);
    side.ecn_validated = Some(ecn);
    side
}

/// The most key updates one connection saw, and how many of them it started.
fn key_updates_seen(conn: &Connection, most: u64, initiated: u64) -> (u64, u64) {
    let st = conn.stats();
    if st.key_updates > most {
        (st.key_updates, st.key_updates_initiated)
    } else {
        (most, initiated)
    }
}
