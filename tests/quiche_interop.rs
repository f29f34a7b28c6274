//! mpquic against quiche 0.30, both ways: in memory (with and without loss
//! and reordering, with Retry) and over UDP on loopback. Every transfer is
//! 50 MB each way, checked by SHA-256.

#![allow(clippy::disallowed_methods)] // test harness: real time is fine outside the engine

mod common;

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use common::peers::{self, Endpoint, Impl, Settings, Wire};
use sha2::{Digest, Sha256};

const MB: usize = 1 << 20;

/// Deterministic bytes: a different stream per seed.
struct Source {
    state: u64,
    left: usize,
    buf: Vec<u8>,
    pos: usize,
    hash: Sha256,
}

impl Source {
    fn new(seed: u64, len: usize) -> Source {
        let mut s = Source {
            state: seed | 1,
            left: len,
            buf: vec![0; 64 * 1024],
            pos: 64 * 1024,
            hash: Sha256::new(),
        };
        s.refill();
        s
    }
    fn refill(&mut self) {
        for c in self.buf.chunks_mut(8) {
            self.state = self.state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let b = self.state.to_le_bytes();
            c.copy_from_slice(&b[..c.len()]);
        }
        self.pos = 0;
    }
    /// Offer the next bytes to `send`, which returns how many it took.
    fn pump(&mut self, ep: &mut dyn Endpoint, id: u64) {
        while self.left > 0 {
            if self.pos == self.buf.len() {
                self.refill();
            }
            let n = (self.buf.len() - self.pos).min(self.left);
            let fin = n == self.left;
            let w = ep.stream_send(id, &self.buf[self.pos..self.pos + n], fin);
            self.hash.update(&self.buf[self.pos..self.pos + w]);
            self.pos += w;
            self.left -= w;
            if w < n {
                return;
            }
        }
    }
    fn done(&self) -> bool {
        self.left == 0
    }
}

struct Sink {
    hash: Sha256,
    got: usize,
    fin: bool,
    buf: Vec<u8>,
}

impl Sink {
    fn new() -> Sink {
        Sink { hash: Sha256::new(), got: 0, fin: false, buf: vec![0; 256 * 1024] }
    }
    fn drain(&mut self, ep: &mut dyn Endpoint, id: u64) {
        loop {
            let (n, fin) = ep.stream_recv(id, &mut self.buf);
            self.hash.update(&self.buf[..n]);
            self.got += n;
            self.fin |= fin;
            if n == 0 || fin {
                return;
            }
        }
    }
}

/// Client sends `bytes` to the server and the server `bytes` back on the
/// client's stream 0, both at once; both digests must match.
fn exchange(wire: &mut Wire, c: &mut dyn Endpoint, s: &mut dyn Endpoint, bytes: usize) {
    let mut up = Source::new(1, bytes);
    let mut down = Source::new(2, bytes);
    let (mut at_server, mut at_client) = (Sink::new(), Sink::new());
    let deadline = Instant::now() + Duration::from_secs(240);
    // The server can only write once the stream exists on its side.
    up.pump(c, 0);
    while !(at_server.fin && at_client.fin) {
        up.pump(c, 0);
        if at_server.got > 0 || at_server.fin {
            down.pump(s, 0);
        }
        let a = wire.turn(c, s);
        at_server.drain(s, 0);
        let b = wire.turn(s, c);
        at_client.drain(c, 0);
        if a + b == 0 {
            peers::fire_timers(c, s);
        }
        assert!(!c.closed() && !s.closed(), "connection closed mid-transfer");
        assert!(
            Instant::now() < deadline,
            "transfer stalled: server got {} / client got {} of {bytes}",
            at_server.got,
            at_client.got
        );
    }
    assert!(up.done() && down.done());
    assert_eq!(at_server.got, bytes, "{} -> {}: byte count", c.name(), s.name());
    assert_eq!(at_client.got, bytes, "{} -> {}: byte count", s.name(), c.name());
    assert_eq!(at_server.hash.finalize(), up.hash.finalize(), "client->server data corrupted");
    assert_eq!(at_client.hash.finalize(), down.hash.finalize(), "server->client data corrupted");
}

fn in_memory(client: Impl, server: Impl, settings: Settings, loss: f64, reorder: f64, bytes: usize) {
    let mut c = peers::client(client, &settings);
    let mut s = peers::accept(c.as_mut(), server, &settings);
    let mut wire = Wire::new(64, settings.mss);
    wire.loss = loss;
    wire.reorder = reorder;
    peers::handshake(&mut wire, c.as_mut(), s.as_mut());
    exchange(&mut wire, c.as_mut(), s.as_mut(), bytes);
    if loss > 0.0 {
        assert!(wire.dropped > 0);
    }
    if settings.key_update_interval.is_some() {
        // 50 MB each way is ~40 000 packets per side: updates every 1000,
        // once the previous one is acknowledged and three PTOs old.
        let n = c.key_updates().or(s.key_updates()).unwrap_or(0);
        eprintln!("{} <-> {}: {n} key updates", c.name(), s.name());
        assert!(n >= 5, "{} <-> {}: {n} key updates", c.name(), s.name());
    }
}

/// Our endpoint starts a key update every 1000 packets; quiche follows.
#[test]
fn mpquic_client_updates_keys_with_quiche_server() {
    let s = Settings { key_update_interval: Some(1000), ..Settings::default() };
    in_memory(Impl::Mpquic, Impl::Quiche, s, 0.01, 0.05, 50 * MB);
}

#[test]
fn mpquic_server_updates_keys_with_quiche_client() {
    let s = Settings { key_update_interval: Some(1000), ..Settings::default() };
    in_memory(Impl::Quiche, Impl::Mpquic, s, 0.01, 0.05, 50 * MB);
}

#[test]
fn mpquic_client_quiche_server_in_memory() {
    in_memory(Impl::Mpquic, Impl::Quiche, Settings::default(), 0.0, 0.0, 50 * MB);
}

#[test]
fn quiche_client_mpquic_server_in_memory() {
    in_memory(Impl::Quiche, Impl::Mpquic, Settings::default(), 0.0, 0.0, 50 * MB);
}

#[test]
fn mpquic_client_quiche_server_loss_and_reordering() {
    in_memory(Impl::Mpquic, Impl::Quiche, Settings::default(), 0.01, 0.02, 50 * MB);
}

#[test]
fn quiche_client_mpquic_server_loss_and_reordering() {
    in_memory(Impl::Quiche, Impl::Mpquic, Settings::default(), 0.01, 0.02, 50 * MB);
}

#[test]
fn mpquic_client_through_quiche_retry() {
    let settings = Settings { retry: true, ..Settings::default() };
    in_memory(Impl::Mpquic, Impl::Quiche, settings, 0.0, 0.0, MB);
}

#[test]
fn quiche_client_through_mpquic_retry() {
    let settings = Settings { retry: true, ..Settings::default() };
    in_memory(Impl::Quiche, Impl::Mpquic, settings, 0.0, 0.0, MB);
}

#[test]
fn mpquic_with_itself_through_retry() {
    let settings = Settings { retry: true, ..Settings::default() };
    in_memory(Impl::Mpquic, Impl::Mpquic, settings, 0.0, 0.0, MB);
}

/// Both endpoints on real UDP sockets on loopback, driven from one thread.
fn udp(client: Impl, server: Impl, bytes: usize) {
    let cs = UdpSocket::bind(peers::CLIENT_ADDR.replace(":40001", ":0")).unwrap();
    let ss = UdpSocket::bind(peers::SERVER_ADDR.replace(":40002", ":0")).unwrap();
    // The endpoints believe in fixed addresses; the sockets carry the bytes.
    cs.connect(ss.local_addr().unwrap()).unwrap();
    ss.connect(cs.local_addr().unwrap()).unwrap();
    for s in [&cs, &ss] {
        s.set_nonblocking(true).unwrap();
    }
    let settings = Settings::default();
    let mut c = peers::client(client, &settings);
    let mut s = peers::accept(c.as_mut(), server, &settings);
    let mut link = UdpLink { buf: vec![0u8; 65536] };
    let deadline = Instant::now() + Duration::from_secs(240);
    while !(c.established() && s.established()) {
        let moved = link.turn(c.as_mut(), &cs, s.as_mut(), &ss) + link.turn(s.as_mut(), &ss, c.as_mut(), &cs);
        if moved == 0 {
            peers::fire_timers(c.as_mut(), s.as_mut());
        }
        assert!(Instant::now() < deadline, "UDP handshake stalled");
    }
    let mut up = Source::new(3, bytes);
    let mut down = Source::new(4, bytes);
    let (mut at_server, mut at_client) = (Sink::new(), Sink::new());
    while !(at_server.fin && at_client.fin) {
        up.pump(c.as_mut(), 0);
        if at_server.got > 0 {
            down.pump(s.as_mut(), 0);
        }
        let a = link.turn(c.as_mut(), &cs, s.as_mut(), &ss);
        at_server.drain(s.as_mut(), 0);
        let b = link.turn(s.as_mut(), &ss, c.as_mut(), &cs);
        at_client.drain(c.as_mut(), 0);
        if a + b == 0 {
            peers::fire_timers(c.as_mut(), s.as_mut());
        }
        assert!(!c.closed() && !s.closed(), "connection closed mid-transfer");
        assert!(Instant::now() < deadline, "UDP transfer stalled at {} / {}", at_server.got, at_client.got);
    }
    assert_eq!(at_server.hash.finalize(), up.hash.finalize());
    assert_eq!(at_client.hash.finalize(), down.hash.finalize());
}

struct UdpLink {
    buf: Vec<u8>,
}

impl UdpLink {
    /// Send what `from` has (up to 64 datagrams) over `fs`, then read what
    /// arrived at `ts` into `to`.
    fn turn(
        &mut self,
        from: &mut dyn Endpoint,
        fs: &UdpSocket,
        to: &mut dyn Endpoint,
        ts: &UdpSocket,
    ) -> usize {
        let mut sent = 0;
        while sent < 64 {
            let Some(n) = from.send(&mut self.buf) else { break };
            // A full socket buffer is loss, which QUIC recovers from.
            let _ = fs.send(&self.buf[..n]);
            sent += 1;
        }
        while let Ok(n) = ts.recv(&mut self.buf) {
            to.recv(&mut self.buf[..n]);
        }
        sent
    }
}

#[test]
fn mpquic_client_quiche_server_udp() {
    udp(Impl::Mpquic, Impl::Quiche, 50 * MB);
}

#[test]
fn quiche_client_mpquic_server_udp() {
    udp(Impl::Quiche, Impl::Mpquic, 50 * MB);
}

/// mpquic offering multipath against quiche (which does not) falls back to
/// plain QUIC v1, both ways, and the transfer works.
#[test]
fn multipath_offer_falls_back_to_single_path_with_quiche() {
    let settings = Settings { multipath: true, ..Settings::default() };
    for (client, server) in [(Impl::Mpquic, Impl::Quiche), (Impl::Quiche, Impl::Mpquic)] {
        let mut c = peers::client(client, &settings);
        let mut s = peers::accept(c.as_mut(), server, &settings);
        let mut wire = Wire::new(64, settings.mss);
        peers::handshake(&mut wire, c.as_mut(), s.as_mut());
        assert!(!c.multipath() && !s.multipath(), "multipath negotiated with quiche");
        exchange(&mut wire, c.as_mut(), s.as_mut(), 5 * MB);
    }
}

/// Datagram `i` of a run: its index, then bytes derived from it; 8 to
/// 1107 bytes long.
fn datagram(i: usize) -> Vec<u8> {
    let len = 8 + (i * 37) % 1100;
    let mut d = (i as u64).to_le_bytes().to_vec();
    d.extend((8..len).map(|k| (i * 31 + k) as u8));
    d
}

/// Each side sends `n` DATAGRAM frames as fast as its queue takes them and
/// reads what arrives; the in-memory wire loses and reorders nothing, so
/// every datagram must arrive, intact and in order, and none twice.
fn datagrams(client: Impl, server: Impl, n: usize) {
    let settings = Settings { dgram: true, ..Settings::default() };
    let mut c = peers::client(client, &settings);
    let mut s = peers::accept(c.as_mut(), server, &settings);
    let mut wire = Wire::new(64, settings.mss);
    peers::handshake(&mut wire, c.as_mut(), s.as_mut());
    let (mut up, mut down) = (0, 0);
    let (mut at_server, mut at_client) = (Vec::new(), Vec::new());
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut buf = vec![0u8; 2048];
    let mut read = |ep: &mut dyn Endpoint, into: &mut Vec<Vec<u8>>| {
        while let Some(len) = ep.dgram_recv(&mut buf) {
            into.push(buf[..len].to_vec());
        }
    };
    while at_server.len() < n || at_client.len() < n {
        while up < n && c.dgram_send(&datagram(up)) {
            up += 1;
        }
        while down < n && s.dgram_send(&datagram(down)) {
            down += 1;
        }
        let a = wire.turn(c.as_mut(), s.as_mut());
        read(s.as_mut(), &mut at_server);
        let b = wire.turn(s.as_mut(), c.as_mut());
        read(c.as_mut(), &mut at_client);
        if a + b == 0 {
            peers::fire_timers(c.as_mut(), s.as_mut());
        }
        assert!(!c.closed() && !s.closed(), "connection closed");
        assert!(
            Instant::now() < deadline,
            "stalled: server got {} / client got {} of {n} datagrams",
            at_server.len(),
            at_client.len()
        );
    }
    for (got, who) in [(&at_server, s.name()), (&at_client, c.name())] {
        assert_eq!(got.len(), n, "{who} received");
        for (i, d) in got.iter().enumerate() {
            assert!(d == &datagram(i), "{who}: datagram {i} differs");
        }
    }
}

#[test]
fn mpquic_client_quiche_server_datagrams() {
    datagrams(Impl::Mpquic, Impl::Quiche, 5000);
}

#[test]
fn quiche_client_mpquic_server_datagrams() {
    datagrams(Impl::Quiche, Impl::Mpquic, 5000);
}

/// A peer that did not enable datagrams gets none from either engine.
#[test]
fn datagrams_need_both_sides_with_quiche() {
    let on = Settings { dgram: true, ..Settings::default() };
    for (client, server) in [(Impl::Mpquic, Impl::Quiche), (Impl::Quiche, Impl::Mpquic)] {
        let mut c = peers::client(client, &on);
        let mut s = peers::accept(c.as_mut(), server, &Settings::default());
        let mut wire = Wire::new(64, on.mss);
        peers::handshake(&mut wire, c.as_mut(), s.as_mut());
        assert!(!c.dgram_send(b"x"), "{} sent to a peer without datagrams", c.name());
    }
}
