//! quiche 0.30's side of a cell, in-process, driven like mpquic by `sansio`
//! (quiche reads its clock itself); hq-interop, or HTTP/3 with `quiche::h3`.
//! quiche cannot restrict TLS 1.3 cipher suites, start a key update, or do
//! multipath (draft-21).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::hq::{self, Streams};
use crate::http3::{self, Holds};
use crate::relay::{bind, loopback};
use crate::sansio::{self, Engine, ServerApp, Sockets};
use crate::{cert, content, ServerHandle, Side, Spec};

fn config(server: bool, spec: &Spec) -> Result<quiche::Config, String> {
    let e = |e: quiche::Error| e.to_string();
    // vn: the client starts in a reserved version (quiche takes those for
    // this purpose) and moves to v1 on the server's Version Negotiation.
    let first = if spec.vn && !server { crate::GREASE_VERSION } else { quiche::PROTOCOL_VERSION };
    let mut c = quiche::Config::new(first).map_err(e)?;
    c.set_application_protos(&[content::alpn(spec.h3)]).map_err(e)?;
    if server {
        c.load_cert_chain_from_pem_file(&cert("cert.pem")).map_err(e)?;
        c.load_priv_key_from_pem_file(&cert("key.pem")).map_err(e)?;
        c.verify_peer(false);
    } else {
        c.load_verify_locations_from_file(&cert("rootca.pem")).map_err(e)?;
        c.verify_peer(true);
    }
    c.set_max_recv_udp_payload_size(1500);
    c.set_initial_max_data(32 << 20);
    c.set_initial_max_stream_data_bidi_local(16 << 20);
    c.set_initial_max_stream_data_bidi_remote(16 << 20);
    c.set_initial_max_stream_data_uni(1 << 20);
    c.set_initial_max_streams_bidi(200);
    c.set_initial_max_streams_uni(16);
    c.set_max_idle_timeout(crate::IDLE_TIMEOUT.as_millis() as u64);
    if spec.early_data {
        c.enable_early_data();
    }
    // quiche probes from 1200 bytes up to its largest send size (1200 by
    // default, and then nothing to discover).
    if spec.pmtud {
        c.discover_pmtu(true);
        c.set_max_send_udp_payload_size(if spec.ipv6 { 1452 } else { 1472 });
    }
    Ok(c)
}

struct Conn(quiche::Connection);

impl Streams for Conn {
    fn stream_send(&mut self, id: u64, data: &[u8], fin: bool) -> Option<usize> {
        self.0.stream_send(id, data, fin).ok()
    }
    fn stream_recv(&mut self, id: u64, buf: &mut [u8]) -> Option<(usize, bool)> {
        self.0.stream_recv(id, buf).ok()
    }
    fn readable(&mut self) -> Vec<u64> {
        self.0.readable().collect()
    }
}

impl Holds<quiche::Connection> for Conn {
    fn conn(&mut self) -> &mut quiche::Connection {
        &mut self.0
    }
}

impl Engine for Conn {
    fn recv(&mut self, buf: &mut [u8], info: mpquic::RecvInfo) {
        let _ = self.0.recv(buf, quiche::RecvInfo { from: info.from, to: info.to });
    }
    // quiche 0.30 sends no ECN.
    fn send(&mut self, out: &mut [u8]) -> Option<(usize, SocketAddr, SocketAddr, mpquic::Ecn)> {
        self.0.send(out).ok().map(|(n, info)| (n, info.from, info.to, mpquic::Ecn::NotEct))
    }
    fn timeout(&self) -> Option<Instant> {
        self.0.timeout_instant()
    }
    fn on_timeout(&mut self) {
        self.0.on_timeout();
    }
    fn established(&self) -> bool {
        self.0.is_established()
    }
    fn closed(&self) -> bool {
        self.0.is_closed()
    }
    fn why_closed(&self) -> String {
        format!(
            "local {:?}, peer {:?}, timed out {}",
            self.0.local_error(),
            self.0.peer_error(),
            self.0.is_timed_out()
        )
    }
    fn close(&mut self) {
        let _ = self.0.close(true, 0, b"done");
    }
    fn early_data(&self) -> bool {
        self.0.is_in_early_data()
    }
}

/// Runs the client's connections against `servers[0]`.
pub fn client(spec: &Spec, servers: &[SocketAddr]) -> Side {
    let deadline = Instant::now() + spec.timeout;
    crate::connections(spec, |session, side| one_client(spec, servers[0], deadline, session, side))
}

fn one_client(
    spec: &Spec,
    server: SocketAddr,
    deadline: Instant,
    session: &mut Option<Vec<u8>>,
    side: &mut Side,
) -> Result<(), String> {
    let mut cfg = config(false, spec)?;
    let sock = bind(loopback(server.ip())).map_err(|e| e.to_string())?;
    let mut socks = Sockets::new(vec![sock]).map_err(|e| e.to_string())?;
    let scid = mpquic::random_cid(16);
    let scid = quiche::ConnectionId::from_ref(scid.as_slice());
    let mut conn = quiche::connect(Some("localhost"), &scid, socks.locals()[0], server, &mut cfg)
        .map_err(|e| format!("connect: {e}"))?;
    if let Some(s) = session.as_deref() {
        conn.set_session(s).map_err(|e| format!("set_session: {e}"))?;
    }
    let mut c = Conn(conn);
    let res = sansio::fetch::<_, quiche::h3::Connection>(&mut c, &mut socks, spec, deadline, side);
    // quiche's client does not say whether the server took its early data;
    // BoringSSL's reason code does (2: ssl_early_data_accepted).
    if spec.early_data {
        *side.early_data.get_or_insert(0) += usize::from(c.0.early_data_reason() == 2);
    }
    if spec.resume {
        *session = Some(c.0.session().ok_or("quiche got no session ticket")?.to_vec());
    }
    res
}

/// Starts a quiche server (Retry as quiche's examples do it: the token is
/// the original DCID, enough on loopback).
pub fn server(spec: &Spec) -> Result<ServerHandle, String> {
    let cfg = config(true, spec)?;
    let ip: IpAddr = if spec.ipv6 { "::1".parse().unwrap() } else { "127.0.0.1".parse().unwrap() };
    let socks = Sockets::new(vec![bind(ip).map_err(|e| e.to_string())?]).map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let addrs = socks.locals().to_vec();
    let (s, retry) = (stop.clone(), spec.retry);
    let thread = std::thread::Builder::new().name("quiche-server".into());
    let join = if spec.h3 {
        thread.spawn(move || Server::<http3::Server<quiche::h3::Connection>>::new(cfg, retry).run(socks, &s))
    } else {
        thread.spawn(move || Server::<hq::Server>::new(cfg, retry).run(socks, &s))
    };
    Ok(ServerHandle::new(addrs, stop, join.map_err(|e| e.to_string())?))
}

/// Length of the server's connection IDs (short headers do not carry it).
const CID_LEN: usize = 16;

struct Server<A> {
    cfg: quiche::Config,
    retry: bool,
    /// Each connection, its application, and whether it ever read in
    /// early data.
    conns: Vec<(Conn, A, bool)>,
    routes: HashMap<Vec<u8>, usize>,
}

impl<A: ServerApp<Conn> + Default> Server<A> {
    fn new(cfg: quiche::Config, retry: bool) -> Server<A> {
        Server { cfg, retry, conns: Vec::new(), routes: HashMap::new() }
    }

    fn run(mut self, mut socks: Sockets, stop: &AtomicBool) -> Side {
        let mut out = [0u8; 1500];
        let mut replies = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            socks.input(|buf, info| {
                if let Some(r) = self.datagram(buf, info.from, info.to) {
                    replies.push((r, info.from, info.to));
                }
            });
            for (d, from, to) in replies.drain(..) {
                socks.send(&d, (to, from), mpquic::Ecn::NotEct);
            }
            for (c, app, early) in &mut self.conns {
                if c.0.timeout_instant().is_some_and(|t| t <= Instant::now()) {
                    c.0.on_timeout();
                }
                // quiche serves 0-RTT requests at once (0.5-RTT).
                if c.0.is_in_early_data() {
                    *early |= c.0.readable().next().is_some();
                    app.step(c);
                } else if c.0.is_established() {
                    app.step(c);
                }
                while let Ok((n, info)) = c.0.send(&mut out) {
                    socks.send(&out[..n], (info.from, info.to), mpquic::Ecn::NotEct);
                }
            }
            let next = self.conns.iter().filter_map(|(c, _, _)| c.0.timeout_instant()).min();
            socks.wait(next);
        }
        let mut side = Side::default();
        for (_, mut app, early) in self.conns {
            side.files += app.served();
            side.errors.extend(app.take_errors());
            *side.early_data.get_or_insert(0) += usize::from(early);
        }
        side
    }

    /// Routes one datagram; returns a Retry to send back, if any.
    fn datagram(&mut self, buf: &mut [u8], from: SocketAddr, to: SocketAddr) -> Option<Vec<u8>> {
        let hdr = quiche::Header::from_slice(buf, CID_LEN).ok()?;
        // As quiche's example server: Version Negotiation for a version it lacks.
        if hdr.ty != quiche::Type::Short && !quiche::version_is_supported(hdr.version) {
            let mut out = [0u8; 1500];
            let n = quiche::negotiate_version(&hdr.scid, &hdr.dcid, &mut out).ok()?;
            return Some(out[..n].to_vec());
        }
        let i = match self.routes.get(hdr.dcid.as_ref()) {
            Some(&i) => i,
            None if hdr.ty == quiche::Type::Initial => {
                let token = hdr.token.clone().unwrap_or_default();
                let new = mpquic::random_cid(CID_LEN);
                let new = quiche::ConnectionId::from_vec(new.as_slice().to_vec());
                if self.retry && token.is_empty() {
                    let mut out = [0u8; 1500];
                    let n =
                        quiche::retry(&hdr.scid, &hdr.dcid, &new, hdr.dcid.as_ref(), hdr.version, &mut out)
                            .ok()?;
                    return Some(out[..n].to_vec());
                }
                let (scid, odcid) = if self.retry {
                    (hdr.dcid.clone(), Some(quiche::ConnectionId::from_vec(token)))
                } else {
                    (new, None)
                };
                let conn = quiche::accept(&scid, odcid.as_ref(), to, from, &mut self.cfg).ok()?;
                self.conns.push((Conn(conn), A::default(), false));
                let i = self.conns.len() - 1;
                self.routes.insert(scid.as_ref().to_vec(), i);
                self.routes.insert(hdr.dcid.as_ref().to_vec(), i);
                i
            }
            None => return None,
        };
        let conn = &mut self.conns[i].0 .0;
        let _ = conn.recv(buf, quiche::RecvInfo { from, to });
        if conn.is_closed() && !conn.is_established() {
            // A first Initial that did not decrypt (corrupted) closed it:
            // the client's next Initial must find a fresh connection.
            self.routes.retain(|_, v| *v != i);
        }
        None
    }
}
