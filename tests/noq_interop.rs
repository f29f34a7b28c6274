//! mpquic against noq 1.4 (a quinn fork implementing draft-ietf-quic-multipath-21)
//! over two paths on loopback UDP, in both roles: 50 MB checked by SHA-256 with
//! data on both paths, then the same with one path black-holed mid-transfer.
//! The arp runs shape our side's datagrams with the project's link model
//! (two 96 Mbit/s paths, 5 and 15 ms): arp needs paths that differ.

#![allow(clippy::disallowed_methods)] // test harness: real time is fine outside the engine

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use emu::queue::{QueueConfig, QueueKind};
use emu::{Link, LinkConfig, Packet, Stage, Trace};
use mpquic::{Config, Connection, PathEvent, PathId, RecvInfo};
use sha2::{Digest, Sha256};

const MB: usize = 1 << 20;
const TOTAL: usize = 50 * MB;
const ALPN: &[u8] = b"test";

fn cert_dir() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/certs").to_string()
}

/// Deterministic payload: byte i of the stream.
fn fill(buf: &mut [u8], offset: usize) {
    for (i, b) in buf.iter_mut().enumerate() {
        let x = (offset + i) as u64;
        *b = (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8;
    }
}

fn expected_hash() -> [u8; 32] {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; MB];
    for k in 0..TOTAL / MB {
        fill(&mut buf, k * MB);
        h.update(&buf);
    }
    h.finalize().into()
}

fn mpquic_config(server: bool) -> Config {
    let d = cert_dir();
    let mut c = Config::new();
    c.set_application_protos(&[ALPN]).unwrap();
    if server {
        c.load_cert_chain_from_pem_file(&format!("{d}/cert.pem")).unwrap();
        c.load_priv_key_from_pem_file(&format!("{d}/key.pem")).unwrap();
    } else {
        c.load_verify_locations_from_file(&format!("{d}/rootca.pem")).unwrap();
    }
    c.set_initial_max_data(16 << 20);
    c.set_initial_max_stream_data_bidi_local(8 << 20);
    c.set_initial_max_stream_data_bidi_remote(8 << 20);
    c.set_initial_max_streams_bidi(16);
    c.set_max_idle_timeout(10_000);
    c.set_initial_max_path_id(Some(4));
    c.set_scheduler("rr").unwrap();
    c
}

fn noq_transport() -> Arc<noq::TransportConfig> {
    let mut t = noq::TransportConfig::default();
    t.max_concurrent_multipath_paths(5);
    t.max_idle_timeout(Some(Duration::from_secs(10).try_into().unwrap()));
    // Under 2048 full packets: noq 1.4's reassembly keeps each well-filled
    // packet as its own chunk and gives up ("too many gaps in stream
    // buffer") past 1024 of them after 2048, gaps or not (quinn issue #2809,
    // fixed upstream by PR #2814). With 8 MiB it ended the arp run in both
    // tries of one CI run and in 1 of 5 local runs of this file.
    t.stream_receive_window((2u32 << 20).into());
    t.receive_window((16u32 << 20).into());
    Arc::new(t)
}

fn noq_server_config() -> noq::ServerConfig {
    use rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
    let d = cert_dir();
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(format!("{d}/cert.pem")).unwrap().map(|c| c.unwrap()).collect();
    let key = PrivateKeyDer::from_pem_file(format!("{d}/key.pem")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = noq::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let mut sc = noq::ServerConfig::with_crypto(Arc::new(crypto));
    sc.transport_config(noq_transport());
    sc
}

fn noq_client_config() -> noq::ClientConfig {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let d = cert_dir();
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(format!("{d}/rootca.pem")).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = noq::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut cc = noq::ClientConfig::new(Arc::new(crypto));
    cc.transport_config(noq_transport());
    cc
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// A noq server endpoint on loopback.
fn noq_server_endpoint(rt: &tokio::runtime::Runtime) -> noq::Endpoint {
    let _g = rt.enter();
    noq::Endpoint::server(noq_server_config(), "127.0.0.1:0".parse().unwrap()).unwrap()
}

/// A noq client endpoint (call inside the runtime).
fn noq_client_endpoint() -> noq::Endpoint {
    let ep = noq::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    ep.set_default_client_config(noq_client_config());
    ep
}

/// mpquic's side of the wire: a connection and its UDP sockets (one per
/// local address). `dead` sockets neither send nor deliver (black hole).
/// A socket with a link sends through it (the project's link model), so
/// that path gets a rate, a delay and a queue instead of loopback's.
struct Driver {
    conn: Connection,
    socks: Vec<UdpSocket>,
    dead: Vec<SocketAddr>,
    buf: Vec<u8>,
    links: Vec<Option<Link>>,
    /// Where the datagrams in the links go (`Packet::tag` indexes it).
    dests: Vec<SocketAddr>,
    epoch: Instant,
    ready: Vec<Packet>,
}

impl Driver {
    fn new(conn: Connection, socks: Vec<UdpSocket>) -> Driver {
        let links = socks.iter().map(|_| None).collect();
        let (dead, dests, ready) = (Vec::new(), Vec::new(), Vec::new());
        Driver { conn, socks, dead, buf: vec![0u8; 65536], links, dests, epoch: Instant::now(), ready }
    }

    /// Our datagrams from socket `i` go through a link of `mbps` (a multiple
    /// of 12), one-way delay `delay` and a 100-packet drop-tail queue.
    fn shape(&mut self, i: usize, mbps: usize, delay: Duration) {
        let mut cfg = LinkConfig::new(Arc::new(Trace::constant(mbps / 12)));
        cfg.delay = delay;
        cfg.queue = QueueConfig { kind: QueueKind::DropTail, packets: Some(100), bytes: None };
        self.links[i] = Some(Link::new(&cfg));
    }

    /// Sends a datagram from socket `i`, through its link if it has one.
    fn transmit(&mut self, i: usize, dgram: &[u8], to: SocketAddr) {
        let Some(link) = &mut self.links[i] else {
            let _ = self.socks[i].send_to(dgram, to);
            return;
        };
        let tag = match self.dests.iter().position(|&d| d == to) {
            Some(t) => t,
            None => {
                self.dests.push(to);
                self.dests.len() - 1
            }
        };
        // Charged with its IP and UDP headers, as the simulator charges it.
        let pkt = Packet { size: dgram.len() as u32 + 28, tag: tag as u64, ..Packet::new(dgram.to_vec()) };
        link.enqueue(self.epoch.elapsed(), pkt);
    }

    /// Sends what the links deliver by now.
    fn deliver(&mut self) {
        let now = self.epoch.elapsed();
        for (i, link) in self.links.iter_mut().enumerate() {
            let Some(link) = link else { continue };
            link.dequeue_ready(now, &mut self.ready);
            for p in self.ready.drain(..) {
                let _ = self.socks[i].send_to(&p.data, self.dests[p.tag as usize]);
            }
        }
    }

    fn sock_index(&self, local: SocketAddr) -> Option<usize> {
        self.socks.iter().position(|s| s.local_addr().ok() == Some(local))
    }

    /// One round: read what arrived, handle timers, send what is due.
    /// Returns whether anything happened.
    fn poll(&mut self) -> bool {
        let mut busy = false;
        for i in 0..self.socks.len() {
            let local = self.socks[i].local_addr().unwrap();
            for _ in 0..64 {
                match self.socks[i].recv_from(&mut self.buf) {
                    Ok((n, from)) => {
                        busy = true;
                        if self.dead.contains(&local) {
                            continue;
                        }
                        let _ =
                            self.conn.recv(&mut self.buf[..n], RecvInfo::new(from, local), Instant::now());
                    }
                    Err(_) => break,
                }
            }
        }
        if self.conn.timeout().is_some_and(|t| t <= Instant::now()) {
            self.conn.on_timeout(Instant::now());
        }
        let mut out = [0u8; 1500];
        for _ in 0..64 {
            match self.conn.send(&mut out, Instant::now()) {
                Ok(Some((n, info))) => {
                    busy = true;
                    if self.dead.contains(&info.from) {
                        continue;
                    }
                    if let Some(i) = self.sock_index(info.from) {
                        self.transmit(i, &out[..n], info.to);
                    }
                }
                _ => break,
            }
        }
        self.deliver();
        if !busy {
            std::thread::sleep(Duration::from_micros(200));
        }
        busy
    }
}

fn udp(addr: &str) -> UdpSocket {
    let s = UdpSocket::bind(addr).unwrap();
    s.set_nonblocking(true).unwrap();
    s
}

fn path_shares(conn: &Connection) -> Vec<(PathId, u64)> {
    conn.path_stats().map(|s| (s.id, s.recv_bytes.max(s.sent_bytes))).collect()
}

/// mpquic client downloads 50 MB from a noq server over two paths.
fn mpquic_client_noq_server(blackhole_at: Option<usize>) {
    let rt = runtime();
    let ep = noq_server_endpoint(&rt);
    let server_addr = ep.local_addr().unwrap();
    let server = rt.spawn(async move {
        let conn = ep.accept().await.unwrap().await.unwrap();
        let (mut send, mut recv) = conn.accept_bi().await.unwrap();
        let _ = recv.read_to_end(64).await.unwrap();
        let mut buf = vec![0u8; MB];
        for k in 0..TOTAL / MB {
            fill(&mut buf, k * MB);
            send.write_all(&buf).await.unwrap();
        }
        send.finish().unwrap();
        let _ = tokio::time::timeout(Duration::from_secs(20), conn.closed()).await;
        ep.wait_idle().await;
    });

    let a = udp("127.0.0.1:0");
    let b = udp("127.0.0.1:0");
    let (la, lb) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    let cfg = mpquic_config(false);
    let conn =
        mpquic::connect(Some("localhost"), &mpquic::random_cid(8), la, server_addr, &cfg, Instant::now())
            .unwrap();
    let mut d = Driver::new(conn, vec![a, b]);
    let start = Instant::now();
    let mut probed = false;
    let mut requested = false;
    let mut got = 0usize;
    let mut hash = Sha256::new();
    let mut rbuf = vec![0u8; 256 * 1024];
    let mut abandoned = Vec::new();
    loop {
        assert!(start.elapsed() < Duration::from_secs(120), "timed out after {got} bytes");
        assert!(
            !d.conn.is_closed(),
            "closed after {got} bytes: {:?} {:?}; paths {:?}",
            d.conn.local_error(),
            d.conn.peer_error(),
            d.conn.path_stats().map(|s| (s.id, s.active, s.sent, s.recv, s.lost)).collect::<Vec<_>>()
        );
        d.poll();
        if !d.conn.is_established() {
            continue;
        }
        if !probed {
            assert!(d.conn.is_multipath(), "noq did not negotiate multipath");
            match d.conn.probe_path(lb, server_addr, Instant::now()) {
                Ok(_) => probed = true,
                Err(mpquic::PathError::NoConnectionId) => {}
                Err(e) => panic!("probe_path: {e}"),
            }
        }
        if !requested {
            d.conn.stream_send(0, b"GET", true).unwrap();
            requested = true;
        }
        while let Some(e) = d.conn.path_event_next() {
            if let PathEvent::Abandoned(id) = e {
                abandoned.push(id);
            }
        }
        while let Ok((n, fin)) = d.conn.stream_recv(0, &mut rbuf) {
            hash.update(&rbuf[..n]);
            got += n;
            if fin || n == 0 {
                break;
            }
        }
        if blackhole_at.is_some_and(|at| got >= at) && d.dead.is_empty() {
            d.dead.push(lb);
        }
        if got >= TOTAL && d.conn.stream_finished(0) {
            break;
        }
    }
    let h: [u8; 32] = hash.finalize().into();
    assert_eq!(got, TOTAL);
    assert_eq!(h, expected_hash(), "SHA-256 mismatch");
    let shares = path_shares(&d.conn);
    eprintln!("mpquic client <- noq server: {:?} abandoned {abandoned:?} in {:?}", shares, start.elapsed());
    report_shares(&shares, blackhole_at.is_none());
    d.conn.close(true, 0, b"done", Instant::now());
    for _ in 0..50 {
        d.poll();
    }
    rt.block_on(async { tokio::time::timeout(Duration::from_secs(30), server).await.ok() });
}

fn report_shares(shares: &[(PathId, u64)], require_balance: bool) {
    let total: u64 = shares.iter().map(|s| s.1).sum();
    for (id, b) in shares {
        eprintln!("  path {}: {:.1}% of {} bytes", id.0, 100.0 * *b as f64 / total as f64, total);
    }
    if require_balance {
        assert!(shares.len() >= 2, "only one path was used: {shares:?}");
        for (id, b) in shares {
            assert!(*b as f64 >= 0.2 * total as f64, "path {} carried under 20%: {shares:?}", id.0);
        }
    }
}

/// A noq client downloads 50 MB from an mpquic server with two addresses,
/// scheduled by `sched`; `key_update` sets the server's key update interval.
fn noq_client_mpquic_server(
    blackhole_at: Option<usize>,
    sched: &str,
    key_update: Option<u64>,
    cc: &str,
    shaped: bool,
) -> mpquic::Stats {
    let s1 = udp("127.0.0.1:0");
    let s2 = udp("127.0.0.1:0");
    let (a1, a2) = (s1.local_addr().unwrap(), s2.local_addr().unwrap());
    let rt = runtime();
    let client = rt.spawn(async move {
        let ep = noq_client_endpoint();
        let conn = ep.connect(a1, "localhost").unwrap().await.unwrap();
        assert!(conn.is_multipath_enabled(), "multipath not negotiated");
        // Our PATH_NEW_CONNECTION_IDs arrive just after the handshake.
        let mut tries = 0;
        loop {
            let open = conn.open_path(a2, noq::PathStatus::Available);
            match tokio::time::timeout(Duration::from_secs(10), open).await.expect("open_path timed out") {
                Ok(_) => break,
                Err(_) if tries < 50 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("open_path: {e:?}"),
            }
        }
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        send.write_all(b"GET").await.unwrap();
        send.finish().unwrap();
        let mut hash = Sha256::new();
        let mut got = 0usize;
        let mut buf = vec![0u8; 256 * 1024];
        while let Some(n) = recv.read(&mut buf).await.unwrap() {
            hash.update(&buf[..n]);
            got += n;
        }
        let h: [u8; 32] = hash.finalize().into();
        conn.close(0u32.into(), b"done");
        ep.wait_idle().await;
        (got, h)
    });

    // Wait for the first Initial to create the server connection.
    let mut cfg = mpquic_config(true);
    cfg.set_scheduler(sched).unwrap();
    cfg.set_cc(cc).unwrap();
    if let Some(n) = key_update {
        cfg.set_key_update_interval(n);
    }
    let mut buf = vec![0u8; 65536];
    let start = Instant::now();
    let (conn, first, from) = loop {
        assert!(start.elapsed() < Duration::from_secs(10), "no Initial");
        if let Ok((n, from)) = s1.recv_from(&mut buf) {
            let hdr = mpquic::packet::parse_header(&buf[..n], 0).unwrap();
            let dcid = hdr.dcid;
            let conn =
                mpquic::accept(&mpquic::random_cid(8), &dcid, None, a1, from, &cfg, Instant::now()).unwrap();
            break (conn, n, from);
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let mut d = Driver::new(conn, vec![s1, s2]);
    d.buf = buf;
    if shaped {
        d.shape(0, 96, Duration::from_millis(5));
        d.shape(1, 96, Duration::from_millis(15));
    }
    let mut first_buf = d.buf[..first].to_vec();
    d.conn.recv(&mut first_buf, RecvInfo::new(from, a1), Instant::now()).unwrap();
    let mut sent = 0usize;
    let mut chunk = vec![0u8; 64 * 1024];
    let mut req = [0u8; 16];
    let mut new_paths = Vec::new();
    let mut abandoned = Vec::new();
    while !client.is_finished() {
        assert!(start.elapsed() < Duration::from_secs(120), "timed out after {sent} bytes sent");
        d.poll();
        while let Some(e) = d.conn.path_event_next() {
            match e {
                PathEvent::New(id, ..) => new_paths.push(id),
                PathEvent::Abandoned(id) => abandoned.push(id),
                _ => {}
            }
        }
        if !d.conn.is_established() {
            continue;
        }
        let _ = d.conn.stream_recv(0, &mut req);
        while sent < TOTAL {
            let n = chunk.len().min(TOTAL - sent);
            fill(&mut chunk[..n], sent);
            match d.conn.stream_send(0, &chunk[..n], sent + n == TOTAL) {
                Ok(w) if w > 0 => sent += w,
                _ => break,
            }
            if sent % chunk.len() != 0 {
                // Partial write: refill from the new offset next time.
                break;
            }
        }
        if blackhole_at.is_some_and(|at| sent >= at) && d.dead.is_empty() {
            d.dead.push(a2);
        }
    }
    let (got, h) = rt.block_on(client).unwrap();
    assert_eq!(got, TOTAL);
    assert_eq!(h, expected_hash(), "SHA-256 mismatch");
    let shares = path_shares(&d.conn);
    eprintln!(
        "noq client <- mpquic server ({sched}): new {new_paths:?} abandoned {abandoned:?} {:?} in {:?}, {:?}",
        shares,
        start.elapsed(),
        d.conn.stats()
    );
    assert!(!new_paths.is_empty(), "noq never opened a second path");
    // Round-robin promises balance, and so do two equal shaped paths; on
    // loopback arp splits by noisy predicted arrivals.
    report_shares(&shares, blackhole_at.is_none() && (sched == "rr" || shaped));
    d.conn.stats()
}

/// Runs a transfer whose timing-dependent outcome is asserted once more if
/// it fails, as the interop matrix's cells are: on real sockets of a loaded
/// 2-core machine a single run's round-robin share dipped just under 20%
/// (19.6% and 19.9% in 2 of 11 runs beside a fuzz campaign). A second
/// failure fails.
fn with_one_retry<T>(run: impl Fn() -> T + std::panic::RefUnwindSafe) -> T {
    match std::panic::catch_unwind(&run) {
        Ok(t) => t,
        Err(_) => {
            eprintln!("FLAKY: the first run failed; running once more");
            run()
        }
    }
}

#[test]
fn mpquic_client_noq_server_two_paths() {
    with_one_retry(|| mpquic_client_noq_server(None));
}

#[test]
fn mpquic_client_noq_server_blackhole() {
    mpquic_client_noq_server(Some(15 * MB));
}

#[test]
fn noq_client_mpquic_server_two_paths() {
    with_one_retry(|| noq_client_mpquic_server(None, "rr", None, "cubic", false));
}

/// Our server updates its keys every 1000 packets over both paths: noq must
/// follow every update (and answer in the new phase) for 50 MB.
#[test]
fn noq_client_follows_mpquic_server_key_updates() {
    let st = with_one_retry(|| noq_client_mpquic_server(None, "rr", Some(1000), "cubic", false));
    assert!(st.key_updates >= 5, "only {} key updates", st.key_updates);
}

/// arp sends data ahead of older unsent data (held ranges filled later):
/// noq must reassemble it byte for byte. The paths are shaped (96 Mbit/s
/// each, 5 and 15 ms): on bare loopback the paths' RTTs differ by noise
/// only, and arp sent nothing ahead in 5 of 8 runs.
#[test]
fn noq_client_mpquic_server_arp() {
    let st = noq_client_mpquic_server(None, "arp", None, "cubic", true);
    assert!(st.sent_ahead_bytes > 0, "arp never sent ahead: {st:?}");
}

/// coupled-bbr over two paths with a peer that knows nothing of it: the
/// shared-bottleneck detector runs on RTT samples less noq's ACK delays
/// (the fallback one-way delay), and the body arrives byte for byte.
#[test]
fn noq_client_mpquic_server_coupled_bbr() {
    noq_client_mpquic_server(None, "arp", None, "coupled-bbr", true);
}

#[test]
fn noq_client_mpquic_server_blackhole() {
    noq_client_mpquic_server(Some(15 * MB), "rr", None, "cubic", false);
}

/// A server that lost a connection's state answers the client's next packets
/// with a Stateless Reset (RFC 9000 §10.3); noq must recognise the token our
/// connection issued and end the connection with `Reset`, long before its idle
/// timeout (10 s).
#[test]
fn noq_client_is_reset_by_mpquic_server_without_state() {
    let sock = udp("127.0.0.1:0");
    let addr = sock.local_addr().unwrap();
    let rt = runtime();
    let client = rt.spawn(async move {
        let ep = noq_client_endpoint();
        let conn = ep.connect(addr, "localhost").unwrap().await.unwrap();
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        send.write_all(b"GET").await.unwrap();
        send.finish().unwrap();
        let started = tokio::time::Instant::now();
        let read = recv.read_to_end(1 << 20).await;
        (read.is_err(), conn.close_reason(), started.elapsed())
    });
    let key = mpquic::server::StatelessResetKey::random();
    let mut cfg = mpquic_config(true);
    cfg.set_stateless_reset_key(key.clone());
    let mut buf = vec![0u8; 65536];
    let start = Instant::now();
    let (conn, first, from) = loop {
        assert!(start.elapsed() < Duration::from_secs(10), "no Initial");
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            let hdr = mpquic::packet::parse_header(&buf[..n], 0).unwrap();
            let dcid = hdr.dcid;
            let conn = mpquic::accept(&mpquic::random_cid(8), &dcid, None, addr, from, &cfg, Instant::now())
                .unwrap();
            break (conn, n, from);
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let mut d = Driver::new(conn, vec![sock]);
    d.buf = buf;
    let mut first_buf = d.buf[..first].to_vec();
    d.conn.recv(&mut first_buf, RecvInfo::new(from, addr), Instant::now()).unwrap();
    // Serve until the request is in, then forget the connection.
    let mut req = [0u8; 16];
    loop {
        assert!(start.elapsed() < Duration::from_secs(10), "no request");
        d.poll();
        if d.conn.is_established() && matches!(d.conn.stream_recv(0, &mut req), Ok((n, _)) if n > 0) {
            break;
        }
    }
    let Driver { socks, mut buf, .. } = d;
    let mut out = [0u8; 1500];
    let mut resets = 0;
    while !client.is_finished() {
        assert!(start.elapsed() < Duration::from_secs(8), "client not reset after {resets} resets");
        match socks[0].recv_from(&mut buf) {
            Ok((n, from)) => {
                if let Some(len) = mpquic::server::stateless_reset(&key, &buf[..n], 8, &mut out) {
                    socks[0].send_to(&out[..len], from).unwrap();
                    resets += 1;
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    let (read_failed, reason, waited) = rt.block_on(client).unwrap();
    eprintln!("noq after {resets} stateless resets: {reason:?} after {waited:?}");
    assert!(read_failed, "the response read should fail");
    assert!(matches!(reason, Some(noq::ConnectionError::Reset)), "{reason:?}");
}

/// Our server (Retry on) sends a NEW_TOKEN; noq keeps it and presents it on
/// its next connection, which is then accepted without a Retry.
#[test]
fn noq_client_reuses_our_new_token_and_skips_retry() {
    use mpquic::server::{Accept, Validator};
    let sock = udp("127.0.0.1:0");
    let addr = sock.local_addr().unwrap();
    let rt = runtime();
    let client = rt.spawn(async move {
        let ep = noq_client_endpoint();
        for _ in 0..2 {
            let conn = ep.connect(addr, "localhost").unwrap().await.unwrap();
            let (mut send, mut recv) = conn.open_bi().await.unwrap();
            send.write_all(b"GET").await.unwrap();
            send.finish().unwrap();
            assert_eq!(recv.read_to_end(1 << 10).await.unwrap(), b"ok");
            conn.close(0u32.into(), b"done");
        }
        ep.wait_idle().await;
    });
    let v = Validator::new(true).unwrap();
    let cfg = mpquic_config(true);
    let mut conns: Vec<Connection> = Vec::new();
    let (mut retries, mut without_retry) = (0, 0);
    let (mut buf, mut out) = (vec![0u8; 65536], [0u8; 1500]);
    let start = Instant::now();
    while !client.is_finished() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out");
        let now = Instant::now();
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            let info = RecvInfo::new(from, addr);
            // Offer the datagram to each connection; a new Initial goes to the validator.
            let taken = conns.iter_mut().any(|c| {
                let before = c.stats().recv;
                let mut copy = buf[..n].to_vec();
                let _ = c.recv(&mut copy, info, now);
                c.stats().recv > before
            });
            if taken || buf[0] & 0x80 == 0 {
                continue;
            }
            match v.handle(&buf[..n], &from, 0, &mut out) {
                Accept::Reply(len) => {
                    retries += 1;
                    sock.send_to(&out[..len], from).unwrap();
                }
                Accept::New { odcid, retry_scid } => {
                    without_retry += usize::from(retry_scid.is_none());
                    let scid = retry_scid.unwrap_or_else(|| mpquic::random_cid(16));
                    let mut c =
                        mpquic::accept(&scid, &odcid, retry_scid.as_ref(), addr, from, &cfg, now).unwrap();
                    assert!(c.send_new_token(&v.new_token(&from, 0)));
                    c.recv(&mut buf[..n], info, now).unwrap();
                    conns.push(c);
                }
                Accept::Drop => {}
            }
        }
        for c in conns.iter_mut() {
            if c.timeout().is_some_and(|t| t <= now) {
                c.on_timeout(now);
            }
            let mut req = [0u8; 16];
            if matches!(c.stream_recv(0, &mut req), Ok((_, true))) {
                c.stream_send(0, b"ok", true).unwrap();
            }
            while let Ok(Some((n, si))) = c.send(&mut out, now) {
                sock.send_to(&out[..n], si.to).unwrap();
            }
        }
        std::thread::sleep(Duration::from_micros(300));
    }
    rt.block_on(client).unwrap();
    eprintln!("two noq connections: {retries} Retry, {without_retry} accepted on a NEW_TOKEN token");
    assert_eq!((conns.len(), retries, without_retry), (2, 1, 1));
}

/// Datagram `i` of a run: its index, then bytes derived from it.
fn datagram(i: usize) -> Vec<u8> {
    let len = 8 + (i * 37) % 1000;
    let mut d = (i as u64).to_le_bytes().to_vec();
    d.extend((8..len).map(|k| (i * 31 + k) as u8));
    d
}

/// mpquic's client sends DATAGRAM frames over two paths to a noq server,
/// which echoes each one back, at most 100 in flight. Datagrams are
/// unreliable and loopback sockets may drop a few, so the test asks for nine
/// in ten each way, each intact and none twice, and a share of them on each
/// path.
#[test]
fn mpquic_client_noq_server_datagrams_on_two_paths() {
    const N: usize = 400;
    const WINDOW: usize = 100;
    let rt = runtime();
    let ep = noq_server_endpoint(&rt);
    let server_addr = ep.local_addr().unwrap();
    let server = rt.spawn(async move {
        let conn = ep.accept().await.unwrap().await.unwrap();
        let mut echoed = 0usize;
        let wait = Duration::from_secs(3);
        while let Ok(Ok(d)) = tokio::time::timeout(wait, conn.read_datagram()).await {
            conn.send_datagram(d).unwrap();
            echoed += 1;
        }
        echoed
    });
    let a = udp("127.0.0.1:0");
    let b = udp("127.0.0.1:0");
    let (la, lb) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    let mut cfg = mpquic_config(false);
    cfg.enable_dgram(true, 1000, 1000);
    let conn =
        mpquic::connect(Some("localhost"), &mpquic::random_cid(8), la, server_addr, &cfg, Instant::now())
            .unwrap();
    let mut d = Driver::new(conn, vec![a, b]);
    let start = Instant::now();
    let mut two_paths = false;
    let mut sent = 0;
    let mut got = vec![0u32; N];
    let mut buf = vec![0u8; 2048];
    let mut last_arrival = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        d.poll();
        if !d.conn.is_established() {
            continue;
        }
        if !two_paths {
            assert!(d.conn.is_multipath(), "noq did not negotiate multipath");
            if d.conn.probe_path(lb, server_addr, Instant::now()).is_ok() {
                two_paths = true;
            }
            continue;
        }
        // Start once the second path is validated and can carry datagrams.
        let validated = d.conn.path_stats().filter(|s| s.active).count() == 2;
        // At most WINDOW not yet echoed: a burst of all N would overflow the
        // sockets' and noq's receive buffers on a loaded machine, and lost
        // datagrams are not sent again.
        let echoed_so_far = got.iter().filter(|&&n| n > 0).count();
        while sent < N
            && sent - echoed_so_far < WINDOW
            && (sent > 0 || validated)
            && d.conn.dgram_send(&datagram(sent)).is_ok()
        {
            sent += 1;
        }
        while let Ok(len) = d.conn.dgram_recv(&mut buf) {
            let i = u64::from_le_bytes(buf[..8].try_into().unwrap()) as usize;
            assert!(i < N && buf[..len] == datagram(i)[..], "echo {i} differs");
            got[i] += 1;
            last_arrival = Instant::now();
        }
        let all = got.iter().all(|&n| n > 0);
        if sent == N && (all || last_arrival.elapsed() > Duration::from_secs(2)) {
            break;
        }
    }
    assert_eq!(sent, N, "not all datagrams queued");
    let echoes = got.iter().filter(|&&n| n > 0).count();
    assert!(got.iter().all(|&n| n <= 1), "an echo arrived twice");
    let shares = path_shares(&d.conn);
    let stats = d.conn.stats();
    eprintln!(
        "mpquic client <-> noq server datagrams: {echoes}/{N} echoed, sent {} recv {}; paths {shares:?}",
        stats.dgram_sent, stats.dgram_recv
    );
    d.conn.close(true, 0, b"done", Instant::now());
    for _ in 0..50 {
        d.poll();
    }
    let echoed = rt.block_on(async { tokio::time::timeout(Duration::from_secs(30), server).await });
    let echoed = echoed.expect("server finished").expect("server task");
    assert!(echoed >= N * 9 / 10, "noq received {echoed} of {N}");
    assert!(echoes >= N * 9 / 10, "{echoes} of {N} echoes came back");
    // Round-robin put a share of the 200 KB each way on each path.
    for (id, bytes) in shares {
        assert!(bytes > 40_000, "path {id:?} carried {bytes} bytes");
    }
}
