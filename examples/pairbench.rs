//! Moves N bytes server→client on one stream through an in-memory lossless
//! wire, in one process, with the same harness driving mpquic or quiche.
//!
//!     cargo run --release --example pairbench -- --bytes 1073741824 --impl mpquic
//!
//! Prints one JSON line: {"impl","bytes","wall_s","cpu_s","mb_per_s","packets"}.
//! Settings are the same for both engines: 1350-byte datagrams, at most 64
//! packets per side per turn, 1 GiB flow-control windows, CUBIC, pacing times
//! ignored, peer verification off.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

const DGRAM: usize = 1350;
const BURST: usize = 64;
const WINDOW: u64 = 1 << 30;
const STREAM: u64 = 0;

/// One engine's connection as the harness drives it.
trait Endpoint {
    fn recv(&mut self, buf: &mut [u8]);
    fn send(&mut self, out: &mut [u8]) -> Option<usize>;
    fn established(&self) -> bool;
    fn stream_send(&mut self, data: &[u8], fin: bool) -> usize;
    /// Returns (bytes, fin).
    fn stream_recv(&mut self, buf: &mut [u8]) -> (usize, bool);
    fn timeout(&self) -> Option<Instant>;
    fn on_timeout(&mut self);
}

fn certs() -> (String, String) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/certs");
    (format!("{dir}/cert.pem"), format!("{dir}/key.pem"))
}

fn addrs() -> (SocketAddr, SocketAddr) {
    ("127.0.0.1:4433".parse().unwrap(), "127.0.0.1:5544".parse().unwrap())
}

mod mp {
    use super::*;
    use mpquic::{Config, Connection, RecvInfo};

    pub(super) struct Ep {
        pub(super) conn: Connection,
        local: SocketAddr,
        peer: SocketAddr,
    }

    fn config(server: bool) -> Config {
        let mut c = Config::new();
        c.set_application_protos(&[b"bench"]).unwrap();
        if server {
            let (cert, key) = certs();
            c.load_cert_chain_from_pem_file(&cert).unwrap();
            c.load_priv_key_from_pem_file(&key).unwrap();
        }
        c.verify_peer(false);
        c.set_max_send_udp_payload_size(DGRAM);
        c.set_initial_max_data(WINDOW);
        c.set_initial_max_stream_data_bidi_local(WINDOW);
        c.set_initial_max_stream_data_bidi_remote(WINDOW);
        c.set_max_connection_window(WINDOW);
        c.set_max_stream_window(WINDOW);
        c.set_cc("cubic").unwrap();
        c
    }

    pub(super) fn pair() -> (Ep, Ep) {
        let (s, c) = addrs();
        let now = Instant::now();
        let ccfg = config(false);
        let scfg = config(true);
        let cscid = mpquic::random_cid(16);
        let client = mpquic::connect(Some("localhost"), &cscid, c, s, &ccfg, now).unwrap();
        // The server learns the client's DCID from its first Initial: peek it.
        let mut client = Ep { conn: client, local: c, peer: s };
        let mut first = vec![0u8; 1500];
        let n = client.send(&mut first).unwrap();
        let hdr = mpquic::packet::parse_header(&first[..n], 0).unwrap();
        let sscid = mpquic::random_cid(16);
        let server = mpquic::accept(&sscid, &hdr.dcid, None, s, c, &scfg, now).unwrap();
        let mut server = Ep { conn: server, local: s, peer: c };
        server.recv(&mut first[..n]);
        (client, server)
    }

    impl Endpoint for Ep {
        fn recv(&mut self, buf: &mut [u8]) {
            let info = RecvInfo { from: self.peer, to: self.local };
            let _ = self.conn.recv(buf, info, Instant::now());
        }
        fn send(&mut self, out: &mut [u8]) -> Option<usize> {
            match self.conn.send(out, Instant::now()) {
                Ok(Some((n, _))) => Some(n),
                _ => None,
            }
        }
        fn established(&self) -> bool {
            self.conn.is_established()
        }
        fn stream_send(&mut self, data: &[u8], fin: bool) -> usize {
            self.conn.stream_send(STREAM, data, fin).unwrap_or(0)
        }
        fn stream_recv(&mut self, buf: &mut [u8]) -> (usize, bool) {
            self.conn.stream_recv(STREAM, buf).unwrap_or((0, false))
        }
        fn timeout(&self) -> Option<Instant> {
            self.conn.timeout()
        }
        fn on_timeout(&mut self) {
            self.conn.on_timeout(Instant::now());
        }
    }
}

mod qc {
    use super::*;

    pub(super) struct Ep {
        conn: quiche::Connection,
        local: SocketAddr,
        peer: SocketAddr,
    }

    fn config(server: bool) -> quiche::Config {
        let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
        c.set_application_protos(&[b"bench"]).unwrap();
        if server {
            let (cert, key) = certs();
            c.load_cert_chain_from_pem_file(&cert).unwrap();
            c.load_priv_key_from_pem_file(&key).unwrap();
        }
        c.verify_peer(false);
        c.set_max_send_udp_payload_size(DGRAM);
        c.set_max_recv_udp_payload_size(DGRAM);
        c.set_initial_max_data(WINDOW);
        c.set_initial_max_stream_data_bidi_local(WINDOW);
        c.set_initial_max_stream_data_bidi_remote(WINDOW);
        c.set_initial_max_streams_bidi(100);
        c.set_max_connection_window(WINDOW);
        c.set_max_stream_window(WINDOW);
        c.set_cc_algorithm(quiche::CongestionControlAlgorithm::CUBIC);
        c.set_max_idle_timeout(30_000);
        c
    }

    pub(super) fn pair() -> (Ep, Ep) {
        let (s, c) = addrs();
        let mut ccfg = config(false);
        let mut scfg = config(true);
        let cscid_b = mpquic::random_cid(16);
        let cscid = quiche::ConnectionId::from_ref(cscid_b.as_slice());
        let client = quiche::connect(Some("localhost"), &cscid, c, s, &mut ccfg).unwrap();
        let mut client = Ep { conn: client, local: c, peer: s };
        let mut first = vec![0u8; 1500];
        let n = client.send(&mut first).unwrap();
        let hdr = quiche::Header::from_slice(&mut first[..n], 16).unwrap();
        let sscid_b = mpquic::random_cid(16);
        let sscid = quiche::ConnectionId::from_ref(sscid_b.as_slice());
        let server = quiche::accept(&sscid, None, s, c, &mut scfg).unwrap();
        let _ = hdr;
        let mut server = Ep { conn: server, local: s, peer: c };
        server.recv(&mut first[..n]);
        (client, server)
    }

    impl Endpoint for Ep {
        fn recv(&mut self, buf: &mut [u8]) {
            let _ = self.conn.recv(buf, quiche::RecvInfo { from: self.peer, to: self.local });
        }
        fn send(&mut self, out: &mut [u8]) -> Option<usize> {
            self.conn.send(out).ok().map(|(n, _)| n)
        }
        fn established(&self) -> bool {
            self.conn.is_established()
        }
        fn stream_send(&mut self, data: &[u8], fin: bool) -> usize {
            self.conn.stream_send(STREAM, data, fin).unwrap_or(0)
        }
        fn stream_recv(&mut self, buf: &mut [u8]) -> (usize, bool) {
            self.conn.stream_recv(STREAM, buf).unwrap_or((0, false))
        }
        fn timeout(&self) -> Option<Instant> {
            self.conn.timeout_instant()
        }
        fn on_timeout(&mut self) {
            self.conn.on_timeout();
        }
    }
}

/// A fixed set of datagram buffers: no allocation per packet.
struct Wire {
    bufs: Vec<[u8; DGRAM]>,
    lens: Vec<usize>,
}

impl Wire {
    fn new() -> Self {
        Wire { bufs: vec![[0u8; DGRAM]; BURST], lens: Vec::with_capacity(BURST) }
    }
    /// Let `from` send up to BURST datagrams, then deliver them to `to`.
    fn turn(&mut self, from: &mut dyn Endpoint, to: &mut dyn Endpoint) -> usize {
        self.lens.clear();
        while self.lens.len() < BURST {
            let i = self.lens.len();
            match from.send(&mut self.bufs[i]) {
                Some(n) => self.lens.push(n),
                None => break,
            }
        }
        for (i, &n) in self.lens.iter().enumerate() {
            to.recv(&mut self.bufs[i][..n]);
        }
        self.lens.len()
    }
}

fn cpu_time() -> f64 {
    let mut ru: libc_rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we own.
    unsafe { getrusage(0, &mut ru) };
    let t = |tv: Timeval| tv.sec as f64 + tv.usec as f64 / 1e6;
    t(ru.utime) + t(ru.stime)
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Timeval {
    sec: i64,
    usec: i64,
}
#[repr(C)]
struct libc_rusage {
    utime: Timeval,
    stime: Timeval,
    rest: [i64; 14],
}
extern "C" {
    fn getrusage(who: i32, usage: *mut libc_rusage) -> i32;
}

fn run(client: &mut dyn Endpoint, server: &mut dyn Endpoint, bytes: u64) -> (f64, f64, u64) {
    let mut wire = Wire::new();
    // Handshake.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(client.established() && server.established()) {
        let a = wire.turn(client, server);
        let b = wire.turn(server, client);
        if a + b == 0 {
            fire_timers(client, server);
        }
        assert!(Instant::now() < deadline, "handshake did not complete");
    }
    // The client opens the stream with a request.
    client.stream_send(b"GET", true);
    wire.turn(client, server);
    let mut req = [0u8; 16];
    server.stream_recv(&mut req);

    let chunk = vec![0x5au8; 64 * 1024];
    let mut sink = vec![0u8; 256 * 1024];
    let mut sent = 0u64;
    let mut received = 0u64;
    let mut packets = 0u64;
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    let mut done = false;
    while !done {
        // Keep the server's stream buffer topped up (bounded backlog).
        while sent < bytes {
            let n = ((bytes - sent) as usize).min(chunk.len());
            let w = server.stream_send(&chunk[..n], sent + n as u64 == bytes);
            if w == 0 {
                break;
            }
            sent += w as u64;
            if w < n {
                break;
            }
        }
        let a = wire.turn(server, client);
        packets += a as u64;
        loop {
            let (n, fin) = client.stream_recv(&mut sink);
            received += n as u64;
            if fin {
                done = true;
            }
            if n == 0 {
                break;
            }
        }
        let b = wire.turn(client, server);
        packets += b as u64;
        if a + b == 0 && !done {
            fire_timers(client, server);
        }
    }
    assert_eq!(received, bytes);
    (t0.elapsed().as_secs_f64(), cpu_time() - cpu0, packets)
}

/// Nothing moved: let the earliest timer fire (sleeping only if it is in
/// the future, which quiche requires since it reads the clock itself).
fn fire_timers(client: &mut dyn Endpoint, server: &mut dyn Endpoint) {
    let tc = client.timeout();
    let ts = server.timeout();
    let t = match (tc, ts) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return,
    };
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
    client.on_timeout();
    server.on_timeout();
}

fn main() {
    let mut bytes: u64 = 1 << 30;
    let mut imp = String::from("mpquic");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bytes" => bytes = args.next().and_then(|v| v.parse().ok()).expect("--bytes N"),
            "--impl" => imp = args.next().expect("--impl mpquic|quiche"),
            other => {
                eprintln!("unknown argument {other}; usage: pairbench [--bytes N] [--impl mpquic|quiche]");
                std::process::exit(2);
            }
        }
    }
    let (wall, cpu, packets) = match imp.as_str() {
        "mpquic" => {
            let (mut c, mut s) = mp::pair();
            run(&mut c, &mut s, bytes)
        }
        "quiche" => {
            let (mut c, mut s) = qc::pair();
            run(&mut c, &mut s, bytes)
        }
        other => {
            eprintln!("unknown --impl {other}: use mpquic or quiche");
            std::process::exit(2);
        }
    };
    println!(
        "{{\"impl\":\"{imp}\",\"bytes\":{bytes},\"wall_s\":{wall:.3},\"cpu_s\":{cpu:.3},\"mb_per_s\":{:.1},\"packets\":{packets}}}",
        bytes as f64 / wall / 1e6
    );
}
