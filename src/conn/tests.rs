//! Connection tests over an in-memory wire with a virtual clock. The real
//! peers (quiche, noq) are exercised in tests/; these cover our own state
//! machine end to end, deterministically.

#![allow(clippy::disallowed_methods)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use crate::{accept, connect, packet, Config, Connection, RecvInfo};

fn certs() -> (String, String, String) {
    let d = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/certs");
    (format!("{d}/cert.pem"), format!("{d}/key.pem"), format!("{d}/rootca.pem"))
}

pub(crate) fn config(server: bool) -> Config {
    let (cert, key, ca) = certs();
    let mut c = Config::new();
    c.set_application_protos(&[b"test"]).unwrap();
    if server {
        c.load_cert_chain_from_pem_file(&cert).unwrap();
        c.load_priv_key_from_pem_file(&key).unwrap();
    } else {
        c.load_verify_locations_from_file(&ca).unwrap();
    }
    c.set_initial_max_data(8 << 20);
    c.set_initial_max_stream_data_bidi_local(4 << 20);
    c.set_initial_max_stream_data_bidi_remote(4 << 20);
    c
}

struct Datagram {
    at: Instant,
    data: Vec<u8>,
    to_server: bool,
}

/// Client and server joined by a wire with a one-way delay and optional
/// random loss and reordering, on a virtual clock.
pub(crate) struct Pair {
    pub(crate) c: Connection,
    pub(crate) s: Connection,
    pub(crate) now: Instant,
    c_addr: SocketAddr,
    s_addr: SocketAddr,
    delay: Duration,
    loss: f64,
    reorder: f64,
    rng: rand::rngs::StdRng,
    in_flight: Vec<Datagram>,
    pub(crate) delivered: u64,
}

impl Pair {
    pub(crate) fn new(ccfg: &Config, scfg: &Config) -> Pair {
        let now = Instant::now();
        let c_addr: SocketAddr = "127.0.0.1:1111".parse().unwrap();
        let s_addr: SocketAddr = "127.0.0.1:2222".parse().unwrap();
        let mut c = connect(Some("localhost"), &crate::random_cid(8), c_addr, s_addr, ccfg, now).unwrap();
        let mut first = vec![0u8; 1500];
        let (n, _) = c.send(&mut first, now).unwrap().unwrap();
        let hdr = packet::parse_header(&first[..n], 0).unwrap();
        let mut s = accept(&crate::random_cid(8), &hdr.dcid, None, s_addr, c_addr, scfg, now).unwrap();
        s.recv(&mut first[..n], RecvInfo { from: c_addr, to: s_addr }, now).unwrap();
        Pair {
            c,
            s,
            now,
            c_addr,
            s_addr,
            delay: Duration::from_millis(10),
            loss: 0.0,
            reorder: 0.0,
            rng: rand::rngs::StdRng::seed_from_u64(7),
            in_flight: Vec::new(),
            delivered: 0,
        }
    }

    pub(crate) fn default_pair() -> Pair {
        Pair::new(&config(false), &config(true))
    }

    fn flush(&mut self) -> usize {
        let mut n = 0;
        let mut buf = [0u8; 1500];
        for to_server in [true, false] {
            loop {
                let conn = if to_server { &mut self.c } else { &mut self.s };
                match conn.send(&mut buf, self.now) {
                    Ok(Some((len, _))) => {
                        n += 1;
                        if self.rng.gen::<f64>() < self.loss {
                            continue;
                        }
                        let extra = if self.rng.gen::<f64>() < self.reorder { self.delay } else { Duration::ZERO };
                        self.in_flight.push(Datagram {
                            at: self.now + self.delay + extra,
                            data: buf[..len].to_vec(),
                            to_server,
                        });
                    }
                    Ok(None) => break,
                    Err(e) => panic!("send failed: {e}"),
                }
            }
        }
        n
    }

    /// Advance to the next event (datagram arrival or timer) and handle it.
    /// Returns false when nothing is left to happen.
    pub(crate) fn step(&mut self) -> bool {
        self.flush();
        let next_dgram = self.in_flight.iter().map(|d| d.at).min();
        let timers = [self.c.timeout(), self.s.timeout()];
        let next_timer = timers.iter().flatten().min().copied();
        let next = match (next_dgram, next_timer) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return false,
        };
        if next > self.now {
            self.now = next;
        }
        let now = self.now;
        let mut i = 0;
        while i < self.in_flight.len() {
            if self.in_flight[i].at <= now {
                let mut d = self.in_flight.swap_remove(i);
                self.delivered += 1;
                let (conn, info) = if d.to_server {
                    (&mut self.s, RecvInfo { from: self.c_addr, to: self.s_addr })
                } else {
                    (&mut self.c, RecvInfo { from: self.s_addr, to: self.c_addr })
                };
                let _ = conn.recv(&mut d.data, info, now);
            } else {
                i += 1;
            }
        }
        if self.c.timeout().is_some_and(|t| t <= now) {
            self.c.on_timeout(now);
        }
        if self.s.timeout().is_some_and(|t| t <= now) {
            self.s.on_timeout(now);
        }
        true
    }

    pub(crate) fn handshake(&mut self) {
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
    pub(crate) fn transfer(&mut self, id: u64, data: &[u8]) -> Vec<u8> {
        self.c.stream_send(id, b"get", true).unwrap();
        let mut got = Vec::new();
        let mut sent = 0;
        let mut req = [0u8; 16];
        let mut buf = vec![0u8; 65536];
        let start = self.now;
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
            assert!(self.step(), "stalled after {} of {} bytes", got.len(), data.len());
            assert!(self.now - start < Duration::from_secs(600), "transfer too slow");
        }
    }
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn handshake_completes_with_verification() {
    let mut p = Pair::default_pair();
    p.handshake();
    assert_eq!(p.c.application_proto(), b"test");
    assert_eq!(p.s.application_proto(), b"test");
    assert!(p.c.peer_transport_params().is_some());
}

#[test]
fn transfer_lossless() {
    let mut p = Pair::default_pair();
    p.handshake();
    let data = pattern(3 << 20);
    let got = p.transfer(0, &data);
    assert!(got == data, "data corrupted");
}

#[test]
fn transfer_with_loss_and_reordering() {
    let mut p = Pair::default_pair();
    p.handshake();
    p.loss = 0.03;
    p.reorder = 0.05;
    let data = pattern(1 << 20);
    let got = p.transfer(0, &data);
    assert!(got == data, "data corrupted under loss");
    assert!(p.s.stats().lost > 0, "no loss was detected");
}

#[test]
fn handshake_survives_loss() {
    for seed in 0..5 {
        let mut p = Pair::default_pair();
        p.rng = rand::rngs::StdRng::seed_from_u64(seed);
        p.loss = 0.25;
        p.handshake();
        p.loss = 0.0;
        let data = pattern(100_000);
        assert!(p.transfer(0, &data) == data);
    }
}

#[test]
fn application_close_reaches_peer() {
    let mut p = Pair::default_pair();
    p.handshake();
    p.c.close(true, 42, b"bye", p.now);
    while p.step() {}
    let e = p.s.peer_error().expect("server saw the close");
    assert!(e.is_app);
    assert_eq!(e.code, 42);
    assert_eq!(e.reason, b"bye");
    assert!(p.c.is_closed() && p.s.is_closed());
}

#[test]
fn wrong_ca_fails_handshake_with_crypto_error() {
    let d = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/certs");
    let mut ccfg = config(false);
    ccfg.load_verify_locations_from_file(&format!("{d}/otherca.pem")).unwrap();
    let mut p = Pair::new(&ccfg, &config(true));
    for _ in 0..1000 {
        if !p.step() {
            break;
        }
    }
    let e = p.c.local_error().expect("client closed");
    assert!((0x100..0x200).contains(&e.code), "code {:#x}", e.code);
    assert!(!p.c.is_established());
}

#[test]
fn idle_timeout_closes() {
    let mut ccfg = config(false);
    ccfg.set_max_idle_timeout(1000);
    let mut p = Pair::new(&ccfg, &config(true));
    p.handshake();
    while p.step() {}
    assert!(p.c.is_closed() && p.s.is_closed());
    assert!(p.c.peer_error().is_none());
}
