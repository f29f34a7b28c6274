//! 0-RTT against quiche 0.30, both ways, in memory: a resumed connection
//! sends a request in 0-RTT that the server accepts (it reads the request
//! before its handshake completes) or rejects (a server with other ticket
//! keys: the request arrives in 1-RTT all the same). Request and answer are
//! checked byte for byte. (The interop matrix's `zerortt` cell runs the
//! accepted case over UDP with quiche, noq and aioquic.)

#![allow(clippy::disallowed_methods)] // test harness: quiche reads the clock itself

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::peers::{self, Settings, CLIENT_ADDR, SERVER_ADDR};

/// What the test asks of either engine.
trait Conn {
    fn recv(&mut self, buf: &mut [u8], from: SocketAddr, to: SocketAddr);
    fn send(&mut self, out: &mut [u8]) -> Option<usize>;
    fn stream_send(&mut self, data: &[u8]) -> usize;
    fn stream_recv(&mut self, buf: &mut [u8]) -> Option<(usize, bool)>;
    fn tick(&mut self);
    /// Early data is being sent (client) or received (server) now.
    fn in_early_data(&self) -> bool;
    fn established(&self) -> bool;
}

impl Conn for mpquic::Connection {
    fn recv(&mut self, buf: &mut [u8], from: SocketAddr, to: SocketAddr) {
        let _ = mpquic::Connection::recv(self, buf, mpquic::RecvInfo::new(from, to), Instant::now());
    }
    fn send(&mut self, out: &mut [u8]) -> Option<usize> {
        mpquic::Connection::send(self, out, Instant::now()).ok().flatten().map(|(n, _)| n)
    }
    fn stream_send(&mut self, data: &[u8]) -> usize {
        mpquic::Connection::stream_send(self, 0, data, true).unwrap_or(0)
    }
    fn stream_recv(&mut self, buf: &mut [u8]) -> Option<(usize, bool)> {
        mpquic::Connection::stream_recv(self, 0, buf).ok()
    }
    fn tick(&mut self) {
        let now = Instant::now();
        if self.timeout().is_some_and(|t| t <= now) {
            self.on_timeout(now);
        }
    }
    fn in_early_data(&self) -> bool {
        self.is_in_early_data()
    }
    fn established(&self) -> bool {
        self.is_established()
    }
}

impl Conn for quiche::Connection {
    fn recv(&mut self, buf: &mut [u8], from: SocketAddr, to: SocketAddr) {
        let _ = quiche::Connection::recv(self, buf, quiche::RecvInfo { from, to });
    }
    fn send(&mut self, out: &mut [u8]) -> Option<usize> {
        quiche::Connection::send(self, out).ok().map(|(n, _)| n)
    }
    fn stream_send(&mut self, data: &[u8]) -> usize {
        quiche::Connection::stream_send(self, 0, data, true).unwrap_or(0)
    }
    fn stream_recv(&mut self, buf: &mut [u8]) -> Option<(usize, bool)> {
        quiche::Connection::stream_recv(self, 0, buf).ok()
    }
    fn tick(&mut self) {
        if self.timeout_instant().is_some_and(|t| t <= Instant::now()) {
            self.on_timeout();
        }
    }
    fn in_early_data(&self) -> bool {
        self.is_in_early_data()
    }
    fn established(&self) -> bool {
        self.is_established()
    }
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed ^ (i >> 9) as u8)).collect()
}

/// Datagrams one way: everything `from` has to send, into `to`.
fn flush(from: &mut dyn Conn, to: &mut dyn Conn, src: SocketAddr, dst: SocketAddr) {
    let mut buf = vec![0u8; 1500];
    while let Some(n) = from.send(&mut buf) {
        to.recv(&mut buf[..n], src, dst);
    }
}

/// What a request/answer exchange saw.
struct Outcome {
    request: Vec<u8>,
    answer: Vec<u8>,
    /// The server read request bytes while in early data.
    read_early: bool,
}

/// The client writes `request` on stream 0 (what it has not written yet,
/// `written`), the server answers `answer`: run until the server has read
/// the request and the client the answer.
fn exchange(
    c: &mut dyn Conn,
    s: &mut dyn Conn,
    request: &[u8],
    mut written: usize,
    answer: &[u8],
) -> Outcome {
    let mut o = Outcome { request: Vec::new(), answer: Vec::new(), read_early: false };
    let (mut req_done, mut sent) = (false, 0);
    let mut buf = vec![0u8; 65536];
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if written < request.len() {
            written += c.stream_send(&request[written..]);
        }
        flush(c, s, CLIENT_ADDR.parse().unwrap(), SERVER_ADDR.parse().unwrap());
        while let Some((n, fin)) = s.stream_recv(&mut buf).filter(|_| !req_done) {
            o.request.extend_from_slice(&buf[..n]);
            o.read_early |= n > 0 && s.in_early_data() && !s.established();
            req_done = fin;
            if n == 0 {
                break;
            }
        }
        if req_done && sent < answer.len() {
            sent += s.stream_send(&answer[sent..]);
        }
        flush(s, c, SERVER_ADDR.parse().unwrap(), CLIENT_ADDR.parse().unwrap());
        while let Some((n, fin)) = c.stream_recv(&mut buf) {
            o.answer.extend_from_slice(&buf[..n]);
            if fin {
                return o;
            }
            if n == 0 {
                break;
            }
        }
        c.tick();
        s.tick();
        std::thread::sleep(Duration::from_micros(200));
    }
    panic!(
        "exchange stalled: request {} B, answer {} B, established {} / {}",
        o.request.len(),
        o.answer.len(),
        c.established(),
        s.established()
    );
}

fn mp_config(server: bool) -> mpquic::Config {
    let mut c = peers::mp::config(server, &Settings::default());
    c.enable_session_tickets(true);
    c.enable_early_data(true);
    c
}

fn quiche_config(server: bool) -> quiche::Config {
    let mut c = peers::qc::config(server, &Settings::default());
    c.enable_early_data();
    c
}

fn mp_client(cfg: &mpquic::Config, session: Option<&[u8]>) -> mpquic::Connection {
    let (local, peer) = (CLIENT_ADDR.parse().unwrap(), SERVER_ADDR.parse().unwrap());
    mpquic::connect_with_session(
        Some("localhost"),
        &mpquic::random_cid(16),
        local,
        peer,
        cfg,
        session,
        Instant::now(),
    )
    .unwrap()
}

/// mpquic's first datagram, and a quiche server accepting it.
fn quiche_accepts(c: &mut mpquic::Connection, scfg: &mut quiche::Config) -> quiche::Connection {
    let mut buf = vec![0u8; 1500];
    let n = Conn::send(c, &mut buf).unwrap();
    let scid = quiche::ConnectionId::from_vec(mpquic::random_cid(16).as_slice().to_vec());
    let (local, peer) = (SERVER_ADDR.parse().unwrap(), CLIENT_ADDR.parse().unwrap());
    let mut s = quiche::accept(&scid, None, local, peer, scfg).unwrap();
    Conn::recv(&mut s, &mut buf[..n], peer, local);
    s
}

/// mpquic client, quiche server: the second connection's request goes in
/// 0-RTT; `same_server` says whether the server can read it.
fn mpquic_to_quiche(same_server: bool) {
    let ccfg = mp_config(false);
    let mut scfg = quiche_config(true);
    let mut c = mp_client(&ccfg, None);
    let mut s = quiche_accepts(&mut c, &mut scfg);
    exchange(&mut c, &mut s, b"first", 0, b"ok");
    let session = c.session().expect("a session ticket from quiche").to_vec();

    let mut other = quiche_config(true);
    let scfg = if same_server { &mut scfg } else { &mut other };
    let request = bytes(8000, 1);
    let mut c = mp_client(&ccfg, Some(&session));
    assert!(c.is_in_early_data());
    assert_eq!(Conn::stream_send(&mut c, &request), request.len());
    let mut s = quiche_accepts(&mut c, scfg);
    let answer = bytes(200_000, 2);
    let o = exchange(&mut c, &mut s, &request, request.len(), &answer);
    assert!(o.request == request && o.answer == answer, "request and answer arrive intact");
    assert_eq!(c.is_early_data_accepted(), same_server);
    assert_eq!(o.read_early, same_server, "quiche read the request in early data");
    // quiche: BoringSSL's ssl_early_data_accepted (2) or not.
    assert_eq!(s.early_data_reason() == 2, same_server);
    if !same_server {
        assert!(c.stats().retrans_bytes >= request.len() as u64 / 2, "0-RTT data sent again in 1-RTT");
    }
}

#[test]
fn mpquic_client_early_data_accepted_by_quiche() {
    mpquic_to_quiche(true);
}

#[test]
fn mpquic_client_early_data_rejected_by_quiche_is_resent() {
    mpquic_to_quiche(false);
}

/// quiche client, mpquic server.
fn quiche_to_mpquic(same_server: bool) {
    let mut ccfg = quiche_config(false);
    let scfg = mp_config(true);
    let (local, peer): (SocketAddr, SocketAddr) =
        (CLIENT_ADDR.parse().unwrap(), SERVER_ADDR.parse().unwrap());
    let start = |ccfg: &mut quiche::Config, scfg: &mpquic::Config, session: Option<&[u8]>, request: &[u8]| {
        let scid = quiche::ConnectionId::from_vec(mpquic::random_cid(16).as_slice().to_vec());
        let mut c = quiche::connect(Some("localhost"), &scid, local, peer, ccfg).unwrap();
        if let Some(s) = session {
            c.set_session(s).unwrap();
        }
        let mut buf = vec![0u8; 1500];
        let n = Conn::send(&mut c, &mut buf).unwrap();
        // quiche's ClientHello is out: 0-RTT keys are there now.
        assert_eq!(c.is_in_early_data(), session.is_some());
        let written = Conn::stream_send(&mut c, request);
        let hdr = mpquic::packet::parse_header(&buf[..n], 0).unwrap();
        let mut s =
            mpquic::accept(&mpquic::random_cid(16), &hdr.dcid, None, peer, local, scfg, Instant::now())
                .unwrap();
        Conn::recv(&mut s, &mut buf[..n], local, peer);
        (c, s, written)
    };
    let (mut c, mut s, w) = start(&mut ccfg, &scfg, None, b"first");
    exchange(&mut c, &mut s, b"first", w, b"ok");
    let session = c.session().expect("a session ticket from mpquic").to_vec();

    // A new Config is a new TLS context: other ticket keys.
    let scfg = if same_server { scfg } else { mp_config(true) };
    let request = bytes(6000, 3);
    let (mut c, mut s, w) = start(&mut ccfg, &scfg, Some(&session), &request);
    assert_eq!(w, request.len(), "the request goes in 0-RTT");
    let answer = bytes(200_000, 4);
    let o = exchange(&mut c, &mut s, &request, w, &answer);
    assert!(o.request == request && o.answer == answer, "request and answer arrive intact");
    assert_eq!(s.is_early_data_accepted(), same_server);
    assert_eq!(o.read_early, same_server, "mpquic read the request in early data");
    assert_eq!(c.early_data_reason() == 2, same_server);
}

#[test]
fn quiche_client_early_data_accepted_by_mpquic() {
    quiche_to_mpquic(true);
}

#[test]
fn quiche_client_early_data_rejected_by_mpquic_is_resent() {
    quiche_to_mpquic(false);
}
