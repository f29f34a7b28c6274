//! 0-RTT between two mpquic endpoints on the virtual wire: accepted,
//! rejected (nothing lost), and 0-RTT packets that overtake the ClientHello.

#![allow(clippy::disallowed_methods)] // a virtual clock starts somewhere

use std::time::{Duration, Instant};

use crate::conn::tests::{config, packet_types, Pair, C_ADDR, S_ADDR};
use crate::packet::{self, PacketType};
use crate::{accept, connect_with_session, Config, Connection, RecvInfo};

fn early_config(server: bool) -> Config {
    let mut c = config(server);
    c.enable_session_tickets(true);
    c.enable_early_data(true);
    c
}

/// A session (with the server's parameters) from a first connection to a
/// server configured by `scfg`.
fn session_from(ccfg: &Config, scfg: &Config) -> Vec<u8> {
    let mut p = Pair::new(ccfg, scfg);
    p.handshake();
    p.run_for(Duration::from_millis(100));
    assert!(!p.c.is_early_data_accepted(), "nothing to accept on a first connection");
    p.c.session().expect("a session ticket").to_vec()
}

/// A client resuming `session` that writes `request` on stream 0 before
/// sending anything.
fn resuming_client(ccfg: &Config, session: &[u8], request: &[u8], now: Instant) -> Connection {
    let mut c = connect_with_session(
        Some("localhost"),
        &crate::random_cid(8),
        C_ADDR,
        S_ADDR,
        ccfg,
        Some(session),
        now,
    )
    .unwrap();
    assert!(c.is_in_early_data(), "0-RTT keys are installed at once");
    assert_eq!(c.stream_send(0, request, true).unwrap(), request.len());
    c
}

/// A resumed client that wrote a request, and its first flight.
struct Resumed {
    scfg: Config,
    c: Connection,
    request: Vec<u8>,
    sent: Vec<Vec<u8>>,
    now: Instant,
}

/// A session from a server with 0-RTT on, and a client resuming it with a
/// request of `len` bytes.
fn resumed(len: usize) -> Resumed {
    let (ccfg, scfg) = (early_config(false), early_config(true));
    let session = session_from(&ccfg, &scfg);
    let now = Instant::now();
    let request = body(len);
    let mut c = resuming_client(&ccfg, &session, &request, now);
    let sent = first_flight(&mut c, now);
    Resumed { scfg, c, request, sent, now }
}

/// Every datagram the client has to send at `now`.
fn first_flight(c: &mut Connection, now: Instant) -> Vec<Vec<u8>> {
    let mut sent = Vec::new();
    let mut buf = vec![0u8; 1500];
    while let Some((n, _)) = c.send(&mut buf, now).unwrap() {
        sent.push(buf[..n].to_vec());
    }
    sent
}

fn body(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 + i / 97) as u8).collect()
}

/// Runs the pair until the server has read all of stream 0; returns what
/// it read and whether all of it came before the server's handshake
/// completed.
fn server_reads(p: &mut Pair) -> (Vec<u8>, bool) {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    let mut early = true;
    for _ in 0..10_000 {
        while let Ok((n, fin)) = p.s.stream_recv(0, &mut buf) {
            got.extend_from_slice(&buf[..n]);
            early &= n == 0 || !p.s.is_established();
            if fin {
                return (got, early);
            }
            if n == 0 {
                break;
            }
        }
        assert!(p.step(), "stalled with {} bytes read", got.len());
    }
    panic!("request not received");
}

/// The server answers `answer` on stream 0; returns what the client read.
fn client_reads(p: &mut Pair, answer: &[u8]) -> Vec<u8> {
    let (mut sent, mut got) = (0, Vec::new());
    let mut buf = vec![0u8; 65536];
    for _ in 0..100_000 {
        if sent < answer.len() {
            sent += p.s.stream_send(0, &answer[sent..], true).unwrap_or(0);
        }
        while let Ok((n, fin)) = p.c.stream_recv(0, &mut buf) {
            got.extend_from_slice(&buf[..n]);
            if fin {
                return got;
            }
            if n == 0 {
                break;
            }
        }
        assert!(p.step(), "stalled with {} bytes read", got.len());
    }
    panic!("answer not received");
}

#[test]
fn early_data_is_accepted_and_read_before_the_handshake_ends() {
    let Resumed { scfg, c, request, mut sent, now } = resumed(3000);
    // The first flight carries the request in 0-RTT after the ClientHello.
    let types: Vec<PacketType> = sent.iter().flat_map(|d| packet_types(d)).collect();
    assert!(types.contains(&PacketType::ZeroRtt), "no 0-RTT packet in {types:?}");
    let with_initial = sent.iter().filter(|d| packet_types(d).contains(&PacketType::Initial));
    assert!(with_initial.into_iter().all(|d| d.len() >= 1200), "datagrams with an Initial are padded");

    let hdr = packet::parse_header(&sent[0], 0).unwrap();
    let mut s = accept(&crate::random_cid(8), &hdr.dcid, None, S_ADDR, C_ADDR, &scfg, now).unwrap();
    for d in &mut sent {
        s.recv(d, RecvInfo::new(C_ADDR, S_ADDR), now).unwrap();
    }
    assert!(s.is_in_early_data());
    let mut p = Pair::from_conns(c, s, now);
    let (got, early) = server_reads(&mut p);
    assert_eq!(got, request);
    assert!(early, "the whole request came before the server's handshake completed");
    p.handshake();
    assert!(p.c.is_resumed() && p.c.is_early_data_accepted() && p.s.is_early_data_accepted());
    // The answer goes the usual way.
    let answer = body(100_000);
    assert_eq!(client_reads(&mut p, &answer), answer);
}

#[test]
fn rejected_early_data_is_sent_again_in_1rtt_and_nothing_is_lost() {
    let ccfg = early_config(false);
    let session = session_from(&ccfg, &early_config(true));
    // Another server (other ticket keys): the session is not resumed and
    // the 0-RTT packets cannot be read.
    let scfg = early_config(true);
    let now = Instant::now();
    let request = body(9000);
    let c = resuming_client(&ccfg, &session, &request, now);
    let mut p = Pair::start(c, &scfg, now);
    p.client_sent = Some(Vec::new());
    let (got, early) = server_reads(&mut p);
    assert_eq!(got, request, "every byte of the request arrives once, in order");
    assert!(!early);
    p.handshake();
    assert!(!p.c.is_resumed() && !p.c.is_early_data_accepted() && !p.s.is_early_data_accepted());
    assert!(p.s.stats().dropped > 0, "the server could not read the 0-RTT packets");
    assert!(p.c.stats().retrans_bytes >= 1000, "0-RTT data went again: {:?}", p.c.stats());
    let answer = body(50_000);
    assert_eq!(client_reads(&mut p, &answer), answer);
}

#[test]
fn server_without_early_data_rejects_it() {
    let ccfg = early_config(false);
    let mut scfg = config(true);
    scfg.enable_session_tickets(true);
    let session = session_from(&ccfg, &early_config(true));
    let now = Instant::now();
    let request = body(500);
    let c = resuming_client(&ccfg, &session, &request, now);
    let mut p = Pair::start(c, &scfg, now);
    let (got, _) = server_reads(&mut p);
    assert_eq!(got, request);
    assert!(!p.c.is_early_data_accepted());
}

#[test]
fn zero_rtt_packets_ahead_of_their_keys_are_buffered() {
    let Resumed { scfg, c, request, mut sent, now } = resumed(6000);
    // The first datagram opens the connection; then the ones with only
    // 0-RTT packets, then the rest of the ClientHello.
    let (zero_only, rest): (Vec<_>, Vec<_>) =
        sent.drain(1..).partition(|d| packet_types(d).iter().all(|t| *t == PacketType::ZeroRtt));
    assert!(!zero_only.is_empty(), "some datagrams hold only 0-RTT");
    let hdr = packet::parse_header(&sent[0], 0).unwrap();
    let mut s = accept(&crate::random_cid(8), &hdr.dcid, None, S_ADDR, C_ADDR, &scfg, now).unwrap();
    let info = RecvInfo::new(C_ADDR, S_ADDR);
    s.recv(&mut sent[0], info, now).unwrap();
    // (BoringSSL's post-quantum key share makes the ClientHello two datagrams.)
    assert!(!s.is_in_early_data(), "the 0-RTT keys wait for the whole ClientHello");
    for mut d in zero_only.into_iter().chain(rest) {
        s.recv(&mut d, info, now).unwrap();
    }
    assert_eq!(s.stats().dropped, 0, "0-RTT that came before its keys was kept");
    let mut p = Pair::from_conns(c, s, now);
    let (got, early) = server_reads(&mut p);
    assert_eq!(got, request);
    assert!(early);
}
