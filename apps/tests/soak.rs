//! Hostile soak: while a download runs, mpquic-server is blasted with
//! random bytes, valid-looking v1 long headers with garbage payloads,
//! truncated Initials, short headers with random connection IDs, a replayed
//! captured Initial, version-negotiation triggers and empty datagrams, each
//! kind from its own socket. Asserted: the server stays up, the download is
//! byte-exact, the server's peak RSS stays under `MAX_RSS_KB`, and no source
//! receives more than 3x what it sent (RFC 9000 §8 amplification limit).
//! `MPQUIC_SOAK_SECS` sets the blast's length (default 5 s; the benchmark
//! script runs 60).

#![allow(clippy::disallowed_methods)]

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use rand::{Rng, SeedableRng};

/// Bound on the server's peak resident memory during the soak (it serves
/// one 24 MB download with 32 MB windows besides the flood).
const MAX_RSS_KB: u64 = 200 * 1024;

#[derive(Clone, Copy, Debug)]
enum Kind {
    RandomBytes,
    GarbageLongHeader,
    TruncatedInitial,
    ShortRandomCid,
    ReplayedInitial,
    VersionNegotiation,
    Empty,
}

const KINDS: [Kind; 7] = [
    Kind::RandomBytes,
    Kind::GarbageLongHeader,
    Kind::TruncatedInitial,
    Kind::ShortRandomCid,
    Kind::ReplayedInitial,
    Kind::VersionNegotiation,
    Kind::Empty,
];

/// A real client Initial (padded to at least 1200 bytes, decryptable), as an attacker would
/// capture it.
fn captured_initial(server: SocketAddr) -> Vec<u8> {
    let mut cfg = mpquic::Config::new();
    cfg.set_application_protos(&[b"h3"]).unwrap();
    let local: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let mut c =
        mpquic::connect(Some("localhost"), &mpquic::random_cid(8), local, server, &cfg, Instant::now())
            .unwrap();
    let mut buf = vec![0u8; 1500];
    let (n, _) = c.send(&mut buf, Instant::now()).unwrap().unwrap();
    buf.truncate(n);
    buf
}

fn datagram(kind: Kind, rng: &mut impl Rng, initial: &[u8]) -> Vec<u8> {
    let mut d = vec![0u8; 1200];
    rng.fill(&mut d[..]);
    match kind {
        Kind::RandomBytes => d.truncate(rng.gen_range(1..1400).min(1200)),
        Kind::GarbageLongHeader => {
            d[0] = 0xc0 | (d[0] & 0x0f);
            d[1..5].copy_from_slice(&1u32.to_be_bytes());
            d[5] = 8;
            d[14] = 8;
            d[23] = 0;
            d[24..26].copy_from_slice(&(0x4000u16 | (1200 - 26)).to_be_bytes());
        }
        Kind::TruncatedInitial => {
            d = initial.to_vec();
            d.truncate(rng.gen_range(1..initial.len()));
        }
        Kind::ShortRandomCid => {
            d[0] = 0x40 | (d[0] & 0x3f);
            d.truncate(rng.gen_range(22..1200));
        }
        Kind::ReplayedInitial => d = initial.to_vec(),
        Kind::VersionNegotiation => {
            d[0] |= 0x80;
            d[1..5].copy_from_slice(&0x0a1a_2a3au32.to_be_bytes());
            d[5] = 8;
            d[14] = 8;
        }
        Kind::Empty => d.clear(),
    }
    d
}

/// Blast one kind of datagram until `stop`; returns (bytes sent, bytes
/// received back).
fn blast(kind: Kind, server: SocketAddr, initial: Vec<u8>, stop: Arc<AtomicBool>, seed: u64) -> (u64, u64) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_nonblocking(true).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (mut sent, mut got) = (0u64, 0u64);
    let mut buf = [0u8; 2048];
    let mut drain = |got: &mut u64| {
        while let Ok((n, _)) = sock.recv_from(&mut buf) {
            *got += n as u64;
        }
    };
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let d = datagram(kind, &mut rng, &initial);
        if sock.send_to(&d, server).is_ok() {
            sent += d.len() as u64;
        }
        i += 1;
        // About 4,000 datagrams per second per kind: a flood the 2-core CI
        // machine can produce without starving the download itself.
        if i % 4 == 0 {
            std::thread::sleep(Duration::from_millis(1));
            drain(&mut got);
        }
    }
    // Late answers (e.g. handshake retransmissions) count too.
    std::thread::sleep(Duration::from_millis(500));
    drain(&mut got);
    (sent, got)
}

fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn soak(extra: &[&str], tag: &str) {
    let secs: u64 = std::env::var("MPQUIC_SOAK_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let dir = tempdir(tag);
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let data = content(BIG, 11);
    std::fs::write(root.join("big.bin"), &data).unwrap();
    let mut srv = ServerProc::start(&root, extra);
    let initial = captured_initial(srv.addr);
    assert!(initial.len() >= 1200);
    let stop = Arc::new(AtomicBool::new(false));
    let attackers: Vec<_> = KINDS
        .iter()
        .enumerate()
        .map(|(i, &kind)| {
            let (stop, initial, addr) = (stop.clone(), initial.clone(), srv.addr);
            (kind, std::thread::spawn(move || blast(kind, addr, initial, stop, i as u64)))
        })
        .collect();
    let t0 = Instant::now();
    // Downloads back to back while the flood lasts (at least one).
    let out = root.with_extension("out");
    let mut downloads = 0;
    while downloads == 0 || t0.elapsed() < Duration::from_secs(secs) {
        let r = client(&[
            &srv.url("/big.bin"),
            "--insecure",
            "-q",
            "-o",
            out.to_str().unwrap(),
            "--timeout",
            "10",
        ]);
        assert_eq!(r.status.code(), Some(0), "download under flood failed");
        assert_eq!(sha256_file(&out), sha256(&data), "body differs");
        downloads += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for (kind, t) in attackers {
        let (sent, got) = t.join().unwrap();
        eprintln!("{kind:?}: sent {sent} B, received {got} B");
        assert!(got <= 3 * sent, "{kind:?}: {got} B answered to {sent} B");
    }
    assert!(srv.child.try_wait().unwrap().is_none(), "server died");
    let rss = peak_rss_kb(srv.child.id());
    eprintln!(
        "{tag}: {downloads} downloads in {:.1} s, server peak RSS {rss} kB",
        t0.elapsed().as_secs_f64()
    );
    assert!(rss > 0 && rss < MAX_RSS_KB, "server peak RSS {rss} kB");
}

#[test]
fn hostile_soak_with_retry() {
    soak(&[], "soak-retry");
}

#[test]
fn hostile_soak_without_retry() {
    soak(&["--no-retry"], "soak-noretry");
}
