//! Shared test pieces (feature `testing`; always in the crate's own tests): a
//! virtual [`Clock`], a [`Wire`] of emulated links between addresses (the
//! emulator's delay line, or its whole `Link` with a trace-driven bottleneck
//! when a test sets one), and a client / server [`Pair`] joined by one, with
//! fault injection (loss, reordering, black holes, slow addresses, filters) on
//! a seeded generator.
//!
//! It lives here behind a feature rather than in the emulator because the
//! emulator does not depend on the engine while the pair needs both; crates
//! outside (ffi, apps) enable the feature in their dev-dependencies.

#![allow(clippy::disallowed_methods)] // one real Instant as the clocks' epoch

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use emu::link::{Link, LinkConfig};
use emu::stage::{DelayStage, Packet, Stage};
use rand::{Rng, SeedableRng};

use crate::{accept, connect, packet, Config, Connection, Ecn, RecvInfo, SendInfo};

/// Virtual time: an epoch (one real `Instant`, taken once) plus a offset the
/// test moves forward.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    epoch: Instant,
    now: Instant,
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::new()
    }
}

impl Clock {
    /// A clock at its epoch.
    pub fn new() -> Clock {
        Clock::starting_at(Instant::now())
    }

    /// A clock whose epoch is `epoch` (for connections made before it).
    pub fn starting_at(epoch: Instant) -> Clock {
        Clock { epoch, now: epoch }
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Time since the epoch (the emulator's clock).
    pub fn elapsed(&self) -> Duration {
        self.now - self.epoch
    }

    /// The virtual time `d` after the epoch.
    pub fn at(&self, d: Duration) -> Instant {
        self.epoch + d
    }

    /// Nanoseconds since the epoch (the C API's time).
    pub fn nanos(&self) -> u64 {
        self.elapsed().as_nanos() as u64
    }

    /// Moves forward by `d`.
    pub fn advance(&mut self, d: Duration) {
        self.now += d;
    }

    /// Moves to `t`, if it is later.
    pub fn advance_to(&mut self, t: Instant) {
        self.now = self.now.max(t);
    }
}

/// A link of the wire: from, to, one-way delay.
type LinkKey = (SocketAddr, SocketAddr, Duration);

/// Datagrams in flight between addresses, each over an emulated link per
/// (from, to, one-way delay): datagrams given the same delay stay in order,
/// one given more (reordering, a slow address) is overtaken.
pub struct Wire {
    links: Vec<(LinkKey, Box<dyn Stage>)>,
    /// Every new link is this emulated link (its delay set per datagram);
    /// `None`: a delay line of unlimited rate.
    pub bottleneck: Option<LinkConfig>,
    scratch: Vec<Packet>,
    /// Datagrams delivered so far.
    pub delivered: u64,
}

impl Default for Wire {
    fn default() -> Wire {
        Wire::new()
    }
}

impl Wire {
    /// An empty wire of lossless delay lines.
    pub fn new() -> Wire {
        Wire { links: Vec::new(), bottleneck: None, scratch: Vec::new(), delivered: 0 }
    }

    fn link(&self, delay: Duration) -> Box<dyn Stage> {
        match &self.bottleneck {
            None => Box::new(DelayStage::new(delay)),
            Some(cfg) => Box::new(Link::new(&LinkConfig { delay, ..cfg.clone() })),
        }
    }

    /// Sends `data` with ECN codepoint `ecn` from `from` to `to` at
    /// emulator time `now`, arriving after `delay` (plus the bottleneck's
    /// service, if any) with `tag` (e.g. the receiver).
    pub fn send(
        &mut self,
        (from, to): (SocketAddr, SocketAddr),
        (data, ecn): (&[u8], Ecn),
        delay: Duration,
        tag: u64,
        now: Duration,
    ) {
        let key = (from, to, delay);
        let i = match self.links.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                self.links.push((key, self.link(delay)));
                self.links.len() - 1
            }
        };
        let mut pkt = Packet::new(data.to_vec());
        pkt.tag = tag;
        pkt.ecn = ecn.tos_bits();
        self.links[i].1.enqueue(now, pkt);
    }

    /// When the next datagram may arrive (emulator time).
    pub fn next_arrival(&self) -> Option<Duration> {
        self.links.iter().filter_map(|(_, l)| l.next_wakeup()).min()
    }

    /// Every datagram arrived by `now`, in arrival order: its addresses, tag
    /// and contents.
    pub fn arrivals(&mut self, now: Duration) -> Vec<(RecvInfo, u64, Vec<u8>)> {
        let mut out: Vec<(Duration, RecvInfo, u64, Vec<u8>)> = Vec::new();
        for ((from, to, _), link) in &mut self.links {
            link.dequeue_ready(now, &mut self.scratch);
            let info = RecvInfo::new(*from, *to);
            out.extend(
                self.scratch
                    .drain(..)
                    .map(|p| (p.time, RecvInfo { ecn: Ecn::from_tos(p.ecn), ..info }, p.tag, p.data)),
            );
        }
        out.sort_by_key(|d| d.0);
        self.delivered += out.len() as u64;
        out.into_iter().map(|(_, info, tag, data)| (info, tag, data)).collect()
    }
}

/// The test certificates' directory.
pub fn cert_dir() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/certs")
}

/// A config with the test certificates, ALPN `alpn` and 8 MB of flow-control
/// credit (4 MB per stream).
pub fn config(server: bool, alpn: &[u8]) -> Config {
    let d = cert_dir();
    let mut c = Config::new();
    c.set_application_protos(&[alpn]).unwrap();
    if server {
        c.load_cert_chain_from_pem_file(&format!("{d}/cert.pem")).unwrap();
        c.load_priv_key_from_pem_file(&format!("{d}/key.pem")).unwrap();
    } else {
        c.load_verify_locations_from_file(&format!("{d}/rootca.pem")).unwrap();
    }
    c.set_initial_max_data(8 << 20);
    c.set_initial_max_stream_data_bidi_local(4 << 20);
    c.set_initial_max_stream_data_bidi_remote(4 << 20);
    c
}

/// Decides (from the receiver's state and the datagram's addresses) whether a
/// datagram is dropped.
pub type DropFilter = Box<dyn FnMut(&Connection, &SendInfo) -> bool>;

/// Client and server joined by a [`Wire`] with a one-way delay and optional
/// random loss and reordering, on a virtual [`Clock`].
pub struct Pair {
    /// The client.
    pub c: Connection,
    /// The server.
    pub s: Connection,
    /// Virtual time.
    pub clock: Clock,
    /// The client's first address.
    pub c_addr: SocketAddr,
    /// The server's address.
    pub s_addr: SocketAddr,
    /// The links between them.
    pub wire: Wire,
    /// One-way delay of every datagram.
    pub delay: Duration,
    /// Probability that a datagram is lost.
    pub loss: f64,
    /// Probability that a datagram is held back by one more `delay`.
    pub reorder: f64,
    /// Probability that the network marks an ECT(0) datagram CE.
    pub ce: f64,
    /// Datagrams from or to these addresses lose their ECN bits.
    pub bleach_ecn: Vec<SocketAddr>,
    /// Draws loss and reordering.
    pub rng: rand::rngs::StdRng,
    /// Datagrams from or to these addresses are dropped.
    pub blackhole: Vec<SocketAddr>,
    /// Extra one-way delay for datagrams from or to an address.
    pub slow: Vec<(SocketAddr, Duration)>,
    /// Every datagram the client sent (before any loss), when `Some`.
    pub client_sent: Option<Vec<Vec<u8>>>,
    /// Drops datagrams besides `loss`, when set.
    pub drop_if: Option<DropFilter>,
    /// A NAT rebinding: the client's datagrams from the first address reach
    /// the server from the second, the server's to the second reach the
    /// client's first, and the server's to the first are lost.
    pub nat: Option<(SocketAddr, SocketAddr)>,
    /// The path MTU as UDP payload bytes: larger datagrams are dropped.
    pub mtu: Option<usize>,
}

/// A [`Pair`]'s client address.
pub const C_ADDR: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(LOCALHOST, 1111));
/// A [`Pair`]'s server address.
pub const S_ADDR: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(LOCALHOST, 2222));
const LOCALHOST: std::net::Ipv4Addr = std::net::Ipv4Addr::new(127, 0, 0, 1);

impl Pair {
    /// A client with `ccfg` that sent its first Initial to a server with `scfg`
    /// (127.0.0.1:1111 to 127.0.0.1:2222, 10 ms each way).
    pub fn new(ccfg: &Config, scfg: &Config) -> Pair {
        let now = Instant::now();
        let c = connect(Some("localhost"), &crate::random_cid(8), C_ADDR, S_ADDR, ccfg, now).unwrap();
        Pair::start(c, scfg, now)
    }

    /// A pair whose client `c` (from [`C_ADDR`] to [`S_ADDR`]) has sent
    /// nothing yet: its first datagram creates the server with `scfg`.
    pub fn start(mut c: Connection, scfg: &Config, now: Instant) -> Pair {
        let mut first = vec![0u8; 1500];
        let (n, _) = c.send(&mut first, now).unwrap().unwrap();
        let hdr = packet::parse_header(&first[..n], 0).unwrap();
        let mut s = accept(&crate::random_cid(8), &hdr.dcid, None, S_ADDR, C_ADDR, scfg, now).unwrap();
        s.recv(&mut first[..n], RecvInfo::new(C_ADDR, S_ADDR), now).unwrap();
        Pair::from_conns(c, s, now)
    }

    /// A pair of connections already started, at [`C_ADDR`] and [`S_ADDR`].
    pub fn from_conns(c: Connection, s: Connection, now: Instant) -> Pair {
        Pair {
            c,
            s,
            clock: Clock::starting_at(now),
            c_addr: C_ADDR,
            s_addr: S_ADDR,
            wire: Wire::new(),
            delay: Duration::from_millis(10),
            loss: 0.0,
            reorder: 0.0,
            ce: 0.0,
            bleach_ecn: Vec::new(),
            rng: rand::rngs::StdRng::seed_from_u64(7),
            blackhole: Vec::new(),
            slow: Vec::new(),
            client_sent: None,
            drop_if: None,
            nat: None,
            mtu: None,
        }
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Datagrams delivered so far.
    pub fn delivered(&self) -> u64 {
        self.wire.delivered
    }

    /// Puts every datagram both ends have to send on the wire (or drops it).
    fn flush(&mut self) {
        let mut buf = [0u8; 1500];
        for to_server in [true, false] {
            loop {
                let conn = if to_server { &mut self.c } else { &mut self.s };
                match conn.send(&mut buf, self.clock.now()) {
                    Ok(Some((len, si))) => self.carry(&buf[..len], &si, to_server),
                    Ok(None) => break,
                    Err(e) => panic!("send failed: {e}"),
                }
            }
        }
    }

    fn carry(&mut self, dgram: &[u8], si: &SendInfo, to_server: bool) {
        if let Some(log) = self.client_sent.as_mut().filter(|_| to_server) {
            log.push(dgram.to_vec());
        }
        // The receiver decides (by its own state) what it drops.
        let receiver = if to_server { &self.s } else { &self.c };
        let filtered = self.drop_if.as_mut().is_some_and(|f| f(receiver, si));
        let (from, to) = match self.nat {
            Some((inside, outside)) if to_server && si.from == inside => (outside, si.to),
            Some((inside, outside)) if !to_server && si.to == outside => (si.from, inside),
            Some((inside, _)) if !to_server && si.to == inside => return,
            _ => (si.from, si.to),
        };
        if self.rng.gen::<f64>() < self.loss
            || filtered
            || self.mtu.is_some_and(|m| dgram.len() > m)
            || self.blackhole.contains(&from)
            || self.blackhole.contains(&to)
        {
            return;
        }
        let mut delay = self.delay;
        if self.rng.gen::<f64>() < self.reorder {
            delay += self.delay;
        }
        for (a, d) in &self.slow {
            if *a == from || *a == to {
                delay += *d;
            }
        }
        // The network marks congestion on ECN-capable packets (ECT(0) only:
        // mpquic sends nothing else).
        let ce = self.ce > 0.0 && si.ecn == Ecn::Ect0 && self.rng.gen::<f64>() < self.ce;
        let bleached = self.bleach_ecn.contains(&from) || self.bleach_ecn.contains(&to);
        let ecn = match (ce, bleached) {
            (_, true) => Ecn::NotEct,
            (true, false) => Ecn::Ce,
            (false, false) => si.ecn,
        };
        self.wire.send((from, to), (dgram, ecn), delay, u64::from(to_server), self.clock.elapsed());
    }

    /// Advances to the next event (datagram arrival or timer) and handles it.
    /// Returns false when nothing is left to happen.
    pub fn step(&mut self) -> bool {
        self.step_until(None)
    }

    /// Runs events until virtual time `d` from now has passed (never jumping
    /// to a later timer, e.g. the idle timeout).
    pub fn run_for(&mut self, d: Duration) {
        let end = self.clock.now() + d;
        while self.step_until(Some(end)) {}
        self.clock.advance_to(end);
    }

    fn step_until(&mut self, limit: Option<Instant>) -> bool {
        self.flush();
        let arrival = self.wire.next_arrival().map(|d| self.clock.at(d));
        let next = [arrival, self.c.timeout(), self.s.timeout()].into_iter().flatten().min();
        let Some(next) = next else { return false };
        if limit.is_some_and(|l| next > l) {
            return false;
        }
        self.clock.advance_to(next);
        let now = self.clock.now();
        for (info, to_server, mut data) in self.wire.arrivals(self.clock.elapsed()) {
            let conn = if to_server == 1 { &mut self.s } else { &mut self.c };
            let _ = conn.recv(&mut data, info, now);
        }
        for conn in [&mut self.c, &mut self.s] {
            if conn.timeout().is_some_and(|t| t <= now) {
                conn.on_timeout(now);
            }
        }
        true
    }

    /// Runs until both ends are established.
    pub fn handshake(&mut self) {
        for _ in 0..10_000 {
            if self.c.is_established() && self.s.is_established() {
                return;
            }
            assert!(self.step(), "stalled during handshake");
        }
        panic!("handshake did not complete");
    }

    /// Server sends `data` on stream `id` (opened by the client first);
    /// returns what the client read.
    pub fn transfer(&mut self, id: u64, data: &[u8]) -> Vec<u8> {
        self.transfer_with(id, data, |_, _| {})
    }

    /// Like `transfer`, calling `hook(pair, bytes received so far)` each step.
    pub fn transfer_with(&mut self, id: u64, data: &[u8], mut hook: impl FnMut(&mut Pair, usize)) -> Vec<u8> {
        self.c.stream_send(id, b"get", true).unwrap();
        let mut got = Vec::new();
        let mut sent = 0;
        let mut req = [0u8; 16];
        let mut buf = vec![0u8; 65536];
        let start = self.clock.now();
        loop {
            let _ = self.s.stream_recv(id, &mut req);
            if sent < data.len() {
                if let Ok(n) = self.s.stream_send(id, &data[sent..], true) {
                    sent += n;
                }
            }
            while let Ok((n, fin)) = self.c.stream_recv(id, &mut buf) {
                got.extend_from_slice(&buf[..n]);
                if fin {
                    return got;
                }
                if n == 0 {
                    break;
                }
            }
            hook(self, got.len());
            assert!(self.step(), "stalled after {} of {} bytes", got.len(), data.len());
            assert!(self.clock.now() - start < Duration::from_secs(600), "transfer too slow");
        }
    }
}
