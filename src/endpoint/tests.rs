//! Endpoint tests: real client connections against an endpoint over an
//! in-memory wire on a virtual clock.

#![allow(clippy::disallowed_methods)]

use std::net::SocketAddr;
use std::time::Instant;

use rand::{Rng, SeedableRng};

use super::*;
use crate::conn::tests::config;
use crate::{connect, PathEvent};

const SERVER: &str = "127.0.0.1:4433";

fn server_addr() -> SocketAddr {
    SERVER.parse().unwrap()
}

fn endpoint(retry: bool, max_half_open: usize, now: Instant) -> Endpoint<u32> {
    let mut cfg = config(true);
    cfg.set_initial_max_path_id(Some(3));
    let ep = EndpointConfig { retry, max_half_open, ..EndpointConfig::default() };
    Endpoint::new(cfg, ep, now).unwrap()
}

fn client_config() -> Config {
    let mut cfg = config(false);
    cfg.set_initial_max_path_id(Some(3));
    cfg
}

fn client(port: u16, now: Instant) -> Connection {
    client_with(&client_config(), port, now)
}

fn client_with(cfg: &Config, port: u16, now: Instant) -> Connection {
    let local = SocketAddr::from(([127, 0, 0, 1], port));
    connect(Some("localhost"), &crate::random_cid(8), local, server_addr(), cfg, now).unwrap()
}

/// Clients and an endpoint joined by a lossless, zero-delay wire.
struct World {
    ep: Endpoint<u32>,
    clients: Vec<Connection>,
    now: Instant,
    /// Bytes the endpoint sent to each address.
    sent_to: HashMap<SocketAddr, usize>,
}

impl World {
    fn new(retry: bool, max_half_open: usize) -> World {
        let now = Instant::now();
        World::with(endpoint(retry, max_half_open, now), now)
    }

    fn with(ep: Endpoint<u32>, now: Instant) -> World {
        World { ep, clients: Vec::new(), now, sent_to: HashMap::new() }
    }

    fn send_to_endpoint(&mut self, d: &mut [u8], from: SocketAddr, to: SocketAddr) -> Incoming {
        let mut out = [0u8; 1500];
        let r = self.ep.recv(d, RecvInfo::new(from, to), self.now, &mut out);
        if let Incoming::Reply(n) = r {
            *self.sent_to.entry(from).or_default() += n;
            self.deliver(&mut out[..n], server_addr(), from);
        }
        r
    }

    fn deliver(&mut self, d: &mut [u8], from: SocketAddr, to: SocketAddr) {
        if let Some(c) = self.clients.iter_mut().find(|c| c.paths().any(|(_, l, _)| l == to)) {
            let _ = c.recv(d, RecvInfo::new(from, to), self.now);
        }
    }

    /// Move datagrams both ways and fire timers for `ms` of virtual time.
    fn run(&mut self, ms: u64) {
        let mut buf = [0u8; 1500];
        let end = self.now + std::time::Duration::from_millis(ms);
        while self.now < end {
            loop {
                let mut moved = false;
                for i in 0..self.clients.len() {
                    while let Ok(Some((n, info))) = self.clients[i].send(&mut buf, self.now) {
                        moved = true;
                        self.send_to_endpoint(&mut buf[..n], info.from, info.to);
                    }
                }
                while let Some(h) = self.ep.poll(self.now) {
                    let mut out = Vec::new();
                    if let Some((conn, _)) = self.ep.get(h) {
                        loop {
                            match conn.send(&mut buf, self.now) {
                                Ok(Some((n, info))) => out.push((buf[..n].to_vec(), info)),
                                Ok(None) => break,
                                Err(e) => panic!("server send: {e:?}"),
                            }
                        }
                    }
                    self.ep.rearm(h, None);
                    for (mut d, info) in out {
                        moved = true;
                        *self.sent_to.entry(info.to).or_default() += d.len();
                        self.deliver(&mut d, info.from, info.to);
                    }
                }
                if !moved {
                    break;
                }
            }
            let next = self.clients.iter().filter_map(|c| c.timeout()).chain(self.ep.timeout()).min();
            self.now = self.now.max(next.unwrap_or(end).min(end));
            for c in &mut self.clients {
                if c.timeout().is_some_and(|t| t <= self.now) {
                    c.on_timeout(self.now);
                }
            }
        }
    }

    fn connect(&mut self, port: u16) -> usize {
        self.clients.push(client(port, self.now));
        self.run(100);
        self.clients.len() - 1
    }
}

#[test]
fn handshake_through_retry_then_second_path_routes_by_its_ids() {
    let mut w = World::new(true, 256);
    let c = w.connect(5000);
    assert!(w.clients[c].is_established() && w.clients[c].is_multipath());
    let s = w.ep.stats();
    assert_eq!((s.retries, s.accepted, s.undecryptable), (1, 1, 0));
    w.run(100);
    assert_eq!(w.ep.half_open(), 0, "handshake done");
    let routes = w.ep.routes();
    assert!(routes >= 2, "first path's IDs and the spares for new paths: {routes}");
    // A new path from another address: its packets carry a new ID of ours.
    let local2: SocketAddr = "127.0.0.2:5001".parse().unwrap();
    let now = w.now;
    let id = w.clients[c].probe_path(local2, server_addr(), now).unwrap();
    w.run(100);
    let mut validated = false;
    while let Some(ev) = w.clients[c].path_event_next() {
        validated |= ev == PathEvent::Validated(id);
    }
    assert!(validated, "second path validated through the endpoint");
    let s = w.ep.stats();
    assert_eq!((s.unknown_cid, s.stateless_resets, s.accepted), (0, 0, 1));
    // Data on the new path: the server receives on both 4-tuples.
    let h = w.ep.handles()[0];
    let (conn, _) = w.ep.get(h).unwrap();
    assert_eq!(conn.paths().count(), 2);
    // Closing removes every route.
    let now = w.now;
    w.clients[c].close(false, 0, b"bye", now);
    w.run(1000);
    assert!(w.ep.is_empty(), "closed connection removed after draining");
    assert_eq!(w.ep.routes(), 0);
}

fn garbage_initial(rng: &mut impl Rng, len: usize) -> Vec<u8> {
    let mut d = vec![0u8; len];
    rng.fill(&mut d[..]);
    d[0] = 0xc0 | (d[0] & 0x0f); // long header, Initial, version 1
    d[1..5].copy_from_slice(&1u32.to_be_bytes());
    d[5] = 8; // DCID length
    d[14] = 8; // SCID length
    d[23] = 0; // no token
    d[24..26].copy_from_slice(&(0x4000u16 | (len as u16 - 26)).to_be_bytes());
    d
}

#[test]
fn undecryptable_initials_leave_no_state() {
    let mut w = World::new(false, 256);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let from: SocketAddr = "10.0.0.9:999".parse().unwrap();
    for _ in 0..500 {
        let mut d = garbage_initial(&mut rng, 1200);
        assert!(packet::parse_header(&d, 0).is_ok(), "valid-looking header");
        assert_eq!(w.send_to_endpoint(&mut d, from, server_addr()), Incoming::Dropped);
    }
    assert_eq!((w.ep.len(), w.ep.stats().undecryptable), (0, 500));
    assert_eq!(w.sent_to.get(&from), None, "nothing answered");
    // A real Initial truncated below 1200 bytes: dropped too.
    let mut c = client(6000, w.now);
    let mut buf = [0u8; 1500];
    let (n, info) = c.send(&mut buf, w.now).unwrap().unwrap();
    assert_eq!(w.send_to_endpoint(&mut buf[..n / 2], info.from, info.to), Incoming::Dropped);
    assert_eq!(w.ep.len(), 0);
    // Empty datagram, VN trigger (unknown version), short header with random ID.
    assert_eq!(w.send_to_endpoint(&mut [], from, server_addr()), Incoming::Dropped);
    let mut vn = garbage_initial(&mut rng, 1200);
    vn[1..5].copy_from_slice(&0x1a2a_3a4au32.to_be_bytes());
    assert!(matches!(w.send_to_endpoint(&mut vn, from, server_addr()), Incoming::Reply(_)));
    assert_eq!(w.ep.stats().version_negotiations, 1);
    assert_eq!(w.ep.len(), 0);
}

#[test]
fn half_open_bound_forces_retry() {
    let mut w = World::new(false, 2);
    let mut buf = [0u8; 1500];
    let mut outcomes = Vec::new();
    for port in 7000..7003 {
        let mut c = client(port, w.now);
        let (n, info) = c.send(&mut buf, w.now).unwrap().unwrap();
        outcomes.push(w.send_to_endpoint(&mut buf[..n], info.from, info.to));
    }
    assert!(matches!(outcomes[0], Incoming::Accepted(_)));
    assert!(matches!(outcomes[1], Incoming::Accepted(_)));
    assert!(matches!(outcomes[2], Incoming::Reply(_)), "third gets a Retry: {outcomes:?}");
    let s = w.ep.stats();
    assert_eq!((s.accepted, s.retries, s.forced_retries, w.ep.half_open()), (2, 1, 1, 2));
    // A client that goes through the forced Retry still connects.
    let c = w.connect(7010);
    assert!(w.clients[c].is_established());
}

#[test]
fn replayed_initial_from_another_address_does_not_take_over() {
    let mut w = World::new(false, 256);
    w.clients.push(client(8000, w.now));
    let mut buf = [0u8; 1500];
    let (n, info) = w.clients[0].send(&mut buf, w.now).unwrap().unwrap();
    let mut copy = buf[..n].to_vec();
    let attacker: SocketAddr = "10.9.9.9:8000".parse().unwrap();
    assert!(matches!(w.send_to_endpoint(&mut copy, attacker, info.to), Incoming::Accepted(_)));
    assert!(matches!(w.send_to_endpoint(&mut buf[..n], info.from, info.to), Incoming::Accepted(_)));
    w.run(200);
    assert!(w.clients[0].is_established(), "the real client completes its handshake");
    // The attacker's address got at most 3x the replayed datagram.
    assert!(w.sent_to.get(&attacker).copied().unwrap_or(0) <= 3 * n);
}

#[test]
fn unknown_ids_cost_no_connection_work_among_1000_connections() {
    let mut w = World::new(false, 2000);
    let mut buf = [0u8; 1500];
    let cfg = client_config();
    for i in 0..1000u16 {
        let mut c = client_with(&cfg, 10_000 + i, w.now);
        let (n, info) = c.send(&mut buf, w.now).unwrap().unwrap();
        assert!(matches!(w.send_to_endpoint(&mut buf[..n], info.from, info.to), Incoming::Accepted(_)));
    }
    // Each connection answers its Initial (the answers are lost).
    while let Some(h) = w.ep.poll(w.now) {
        let (conn, _) = w.ep.get(h).unwrap();
        while let Ok(Some(_)) = conn.send(&mut buf, w.now) {}
        w.ep.rearm(h, None);
    }
    let handles = w.ep.handles();
    assert_eq!(handles.len(), 1000);
    let before: Vec<_> = handles.iter().map(|&h| w.ep.get(h).unwrap().0.stats()).collect();
    let routed = w.ep.stats().routed;
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let from: SocketAddr = "10.1.1.1:1".parse().unwrap();
    for _ in 0..10_000 {
        let mut d = vec![0u8; rng.gen_range(30..1300)];
        rng.fill(&mut d[..]);
        d[0] = 0x40 | (d[0] & 0x3f);
        w.send_to_endpoint(&mut d, from, server_addr());
    }
    let s = w.ep.stats();
    assert_eq!((s.unknown_cid, s.routed), (10_000, routed));
    assert!(s.stateless_resets <= 1000, "rate-limited: {}", s.stateless_resets);
    assert_eq!(w.ep.poll(w.now), None, "no connection was woken");
    let after: Vec<_> = handles.iter().map(|&h| w.ep.get(h).unwrap().0.stats()).collect();
    for (b, a) in before.iter().zip(&after) {
        assert_eq!((b.recv, b.recv_bytes, b.dropped), (a.recv, a.recv_bytes, a.dropped));
    }
    // Resets are smaller than their triggers: no amplification.
    assert!(w.sent_to[&from] < 10_000 * 30);
}

/// A caller that polls in a loop at one instant and asks to be woken at
/// that instant again (an application holding a datagram paced for now)
/// gets the connection once per instant, not forever.
#[test]
fn a_deadline_left_due_waits_for_a_later_instant() {
    let mut w = World::new(false, 256);
    w.connect(9000);
    w.run(100);
    let h = w.ep.handles()[0];
    w.ep.rearm(h, Some(w.now));
    assert_eq!(w.ep.poll(w.now), Some(h), "due at once");
    w.ep.rearm(h, Some(w.now));
    assert_eq!(w.ep.poll(w.now), None, "returned twice at one instant");
    assert_eq!(w.ep.timeout(), Some(w.now), "still due");
    assert_eq!(w.ep.poll(w.now + std::time::Duration::from_millis(1)), Some(h));
}

#[test]
fn idle_connection_times_out_through_the_timer_heap() {
    let mut w = World::new(true, 256);
    let c = w.connect(9000);
    assert!(w.clients[c].is_established());
    w.run(100);
    assert_eq!(w.ep.len(), 1);
    // The client goes silent: the server's idle timer alone removes it.
    w.clients.clear();
    let mut removed = None;
    for _ in 0..100 {
        let Some(t) = w.ep.timeout() else { break };
        w.now = w.now.max(t);
        while let Some(h) = w.ep.poll(w.now) {
            if let Some(gone) = w.ep.rearm(h, None) {
                removed = Some(gone);
            }
        }
    }
    assert!(removed.is_some_and(|(conn, _)| conn.is_closed()));
    assert!(w.ep.is_empty() && w.ep.timeout().is_none() && w.ep.routes() == 0);
}

#[test]
fn bad_cid_length_is_refused() {
    let now = Instant::now();
    let ep = EndpointConfig { cid_len: 2, ..EndpointConfig::default() };
    let e = Endpoint::<()>::new(config(true), ep, now).err().unwrap();
    assert!(e.to_string().contains("not in 4..=20"));
}

/// An endpoint whose connection IDs start with `prefix`, `cid_len` bytes
/// long, sharing `secret`.
fn tagged_endpoint(prefix: u8, cid_len: usize, secret: &EndpointSecret, now: Instant) -> Endpoint<u32> {
    let mut cfg = config(true);
    cfg.set_initial_max_path_id(Some(3));
    cfg.set_cid_prefix(Some(prefix));
    let ep = EndpointConfig { cid_len, secret: Some(secret.clone()), ..EndpointConfig::default() };
    Endpoint::new(cfg, ep, now).unwrap()
}

/// Every ID the endpoint routes — the Retry's SCID, the first path's and a
/// second path's — starts with the configured byte and has the endpoint's
/// length (8 here: the Retry SCID used to be 16 bytes whatever the length).
#[test]
fn issued_ids_carry_the_prefix_through_retry_and_new_paths() {
    let now = Instant::now();
    let mut w = World::with(tagged_endpoint(0xa7, 8, &EndpointSecret::random(), now), now);
    let c = w.connect(5000);
    assert!(w.clients[c].is_established());
    assert_eq!(w.ep.stats().retries, 1);
    let now = w.now;
    let id = w.clients[c].probe_path("127.0.0.2:5001".parse().unwrap(), server_addr(), now).unwrap();
    w.run(200);
    assert!(std::iter::from_fn(|| w.clients[c].path_event_next()).any(|e| e == PathEvent::Validated(id)));
    assert!(w.ep.routes() >= 3, "{}", w.ep.routes());
    for cid in w.ep.by_cid.keys() {
        assert_eq!((cid.len(), cid.as_slice()[0]), (8, 0xa7), "{cid:?}");
    }
}

/// Endpoints sharing a secret (workers behind one address) accept each
/// other's NEW_TOKEN tokens: no Retry for a client coming back to the other.
#[test]
fn endpoints_sharing_a_secret_accept_each_others_tokens() {
    let now = Instant::now();
    let secret = EndpointSecret::random();
    let a = tagged_endpoint(0, 16, &secret, now);
    let token = a.new_token(&"127.0.0.1:5000".parse().unwrap(), now);
    let mut w = World::with(tagged_endpoint(1, 16, &secret, now), now);
    let mut cl = client(5000, now);
    cl.set_token(&token);
    w.clients.push(cl);
    w.run(100);
    assert!(w.clients[0].is_established());
    assert_eq!((w.ep.stats().retries, w.ep.stats().accepted), (0, 1), "the other worker's token passed");
    // A different secret: the token means nothing, the client must pass a Retry.
    let mut w = World::with(tagged_endpoint(1, 16, &EndpointSecret::random(), now), now);
    let mut cl = client(5000, now);
    cl.set_token(&token);
    w.clients.push(cl);
    w.run(100);
    assert_eq!(w.ep.stats().retries, 1);
}

/// A server endpoint serves a real network: it refuses the simulator's AEAD.
#[cfg(feature = "sim-aead")]
#[test]
fn endpoint_refuses_the_simulators_aead() {
    let mut cfg = config(true);
    cfg.use_sim_aead(true);
    let e = Endpoint::<u32>::new(cfg, EndpointConfig::default(), Instant::now()).err().expect("refused");
    assert_eq!(e.to_string(), SIM_AEAD_REFUSED);
    assert!(Endpoint::<u32>::new(config(true), EndpointConfig::default(), Instant::now()).is_ok());
}
