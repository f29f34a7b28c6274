//! One harness for driving mpquic and quiche connections the same way: used
//! by the interop tests and by the pairbench example (which includes this
//! file with `#[path]`). quiche reads the clock itself, so this harness runs
//! in real time and gives mpquic `Instant::now()` too.

#![allow(dead_code, clippy::disallowed_methods)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A connection as the harness drives it.
pub trait Endpoint {
    fn recv(&mut self, buf: &mut [u8]);
    fn send(&mut self, out: &mut [u8]) -> Option<usize>;
    fn established(&self) -> bool;
    fn closed(&self) -> bool;
    fn stream_send(&mut self, id: u64, data: &[u8], fin: bool) -> usize;
    /// (bytes read, fin reached).
    fn stream_recv(&mut self, id: u64, buf: &mut [u8]) -> (usize, bool);
    /// As `stream_send`, sharing `data` where the engine can (else a copy).
    fn stream_send_shared(&mut self, id: u64, data: &mpquic::Bytes, fin: bool) -> usize {
        self.stream_send(id, data, fin)
    }
    /// Take readable bytes as an application that looks at them in place
    /// would, where the engine can (else read them into `buf`).
    fn stream_take(&mut self, id: u64, buf: &mut [u8]) -> (usize, bool) {
        self.stream_recv(id, buf)
    }
    fn timeout(&self) -> Option<Instant>;
    fn on_timeout(&mut self);
    fn name(&self) -> &'static str;
    /// Multipath was negotiated (always false for quiche).
    fn multipath(&self) -> bool {
        false
    }
    /// 1-RTT key updates seen (None: the engine does not say).
    fn key_updates(&self) -> Option<u64> {
        None
    }
    /// Queue a DATAGRAM frame (RFC 9221): whether it was taken.
    fn dgram_send(&mut self, data: &[u8]) -> bool;
    /// The next datagram received, if any.
    fn dgram_recv(&mut self, buf: &mut [u8]) -> Option<usize>;
}

/// Which engine plays a role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Impl {
    Mpquic,
    Quiche,
}

/// Settings shared by both engines.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub window: u64,
    pub mss: usize,
    pub verify: bool,
    /// Server answers the first Initial with a Retry.
    pub retry: bool,
    /// mpquic endpoints offer multipath (initial_max_path_id).
    pub multipath: bool,
    /// mpquic endpoints update their keys after this many packets.
    pub key_update_interval: Option<u64>,
    /// Both engines pace (off in pairbench, whose wire ignores release times).
    pub pacing: bool,
    /// mpquic runs path MTU discovery (its default; quiche 0.30 does not, so
    /// pairbench turns it off to keep both at `mss`).
    pub pmtud: bool,
    /// Both engines take DATAGRAM frames (queues of `DGRAM_QUEUE`).
    pub dgram: bool,
}

/// The DATAGRAM queue lengths (each way) when `Settings::dgram` is on.
pub const DGRAM_QUEUE: usize = 1000;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            window: 16 << 20,
            mss: 1350,
            verify: true,
            retry: false,
            multipath: false,
            key_update_interval: None,
            pacing: true,
            pmtud: true,
            dgram: false,
        }
    }
}

pub fn cert_dir() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/certs").to_string()
}

pub const CLIENT_ADDR: &str = "127.0.0.1:40001";
pub const SERVER_ADDR: &str = "127.0.0.1:40002";

pub mod mp {
    use super::*;
    use mpquic::server::{Accept, Validator};
    use mpquic::{Config, Connection, RecvInfo};

    pub struct Ep {
        pub conn: Connection,
        pub local: SocketAddr,
        pub peer: SocketAddr,
    }

    pub fn config(server: bool, s: &Settings) -> Config {
        let d = cert_dir();
        let mut c = Config::new();
        c.set_application_protos(&[b"interop", b"bench"]).unwrap();
        if server {
            c.load_cert_chain_from_pem_file(&format!("{d}/cert.pem")).unwrap();
            c.load_priv_key_from_pem_file(&format!("{d}/key.pem")).unwrap();
        } else if s.verify {
            c.load_verify_locations_from_file(&format!("{d}/rootca.pem")).unwrap();
        } else {
            c.verify_peer(false);
        }
        c.set_max_send_udp_payload_size(s.mss);
        c.set_initial_max_data(s.window);
        c.set_initial_max_stream_data_bidi_local(s.window);
        c.set_initial_max_stream_data_bidi_remote(s.window);
        c.set_initial_max_stream_data_uni(s.window);
        c.set_max_connection_window(s.window);
        c.set_max_stream_window(s.window);
        c.set_cc("cubic").unwrap();
        c.enable_pacing(s.pacing);
        c.enable_pmtud(s.pmtud);
        if s.multipath {
            c.set_initial_max_path_id(Some(4));
        }
        if let Some(n) = s.key_update_interval {
            c.set_key_update_interval(n);
        }
        c.enable_dgram(s.dgram, DGRAM_QUEUE, DGRAM_QUEUE);
        c
    }

    pub fn client(local: SocketAddr, peer: SocketAddr, s: &Settings) -> Ep {
        let cfg = config(false, s);
        let conn =
            mpquic::connect(Some("localhost"), &mpquic::random_cid(16), local, peer, &cfg, Instant::now())
                .expect("mpquic connect");
        Ep { conn, local, peer }
    }

    /// A stateless front end in front of the server: Retry if asked, then
    /// the connection. `first` holds the client's first datagram(s); replies
    /// (Retry) are returned for the harness to deliver.
    pub struct Listener {
        validator: Validator,
        cfg: Config,
        pub local: SocketAddr,
    }

    impl Listener {
        pub fn new(local: SocketAddr, s: &Settings) -> Listener {
            Listener { validator: Validator::new(s.retry).unwrap(), cfg: config(true, s), local }
        }
        /// Either a new server endpoint (having received `dgram`) or a reply.
        pub fn handle(&self, dgram: &mut [u8], from: SocketAddr) -> Result<Ep, Option<Vec<u8>>> {
            let mut out = [0u8; 1500];
            match self.validator.handle(dgram, &from, 0, &mut out) {
                Accept::New { odcid, retry_scid } => {
                    let scid = retry_scid.unwrap_or_else(|| mpquic::random_cid(16));
                    let mut conn = mpquic::accept(
                        &scid,
                        &odcid,
                        retry_scid.as_ref(),
                        self.local,
                        from,
                        &self.cfg,
                        Instant::now(),
                    )
                    .expect("mpquic accept");
                    conn.recv(dgram, RecvInfo::new(from, self.local), Instant::now()).expect("first Initial");
                    Ok(Ep { conn, local: self.local, peer: from })
                }
                Accept::Reply(n) => Err(Some(out[..n].to_vec())),
                Accept::Drop => Err(None),
            }
        }
    }

    impl Endpoint for Ep {
        fn key_updates(&self) -> Option<u64> {
            Some(self.conn.stats().key_updates)
        }
        fn recv(&mut self, buf: &mut [u8]) {
            let _ = self.conn.recv(buf, RecvInfo::new(self.peer, self.local), Instant::now());
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
        fn closed(&self) -> bool {
            self.conn.is_closed()
        }
        fn stream_send(&mut self, id: u64, data: &[u8], fin: bool) -> usize {
            self.conn.stream_send(id, data, fin).unwrap_or(0)
        }
        fn stream_recv(&mut self, id: u64, buf: &mut [u8]) -> (usize, bool) {
            self.conn.stream_recv(id, buf).unwrap_or((0, false))
        }
        fn stream_send_shared(&mut self, id: u64, data: &mpquic::Bytes, fin: bool) -> usize {
            self.conn.stream_send_bytes(id, data, fin).unwrap_or(0)
        }
        fn stream_take(&mut self, id: u64, _buf: &mut [u8]) -> (usize, bool) {
            let Ok((head, _)) = self.conn.stream_peek(id) else {
                return (0, false);
            };
            let n = head.len();
            self.conn.stream_consume(id, n).unwrap_or((0, false))
        }
        fn timeout(&self) -> Option<Instant> {
            self.conn.timeout()
        }
        fn on_timeout(&mut self) {
            self.conn.on_timeout(Instant::now());
        }
        fn name(&self) -> &'static str {
            "mpquic"
        }
        fn dgram_send(&mut self, data: &[u8]) -> bool {
            self.conn.dgram_send(data).is_ok()
        }
        fn dgram_recv(&mut self, buf: &mut [u8]) -> Option<usize> {
            self.conn.dgram_recv(buf).ok()
        }
    }
}

pub mod qc {
    use super::*;

    pub struct Ep {
        pub conn: quiche::Connection,
        pub local: SocketAddr,
        pub peer: SocketAddr,
    }

    pub fn config(server: bool, s: &Settings) -> quiche::Config {
        let d = cert_dir();
        let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
        c.set_application_protos(&[b"interop", b"bench"]).unwrap();
        if server {
            c.load_cert_chain_from_pem_file(&format!("{d}/cert.pem")).unwrap();
            c.load_priv_key_from_pem_file(&format!("{d}/key.pem")).unwrap();
            c.verify_peer(false);
        } else if s.verify {
            c.load_verify_locations_from_file(&format!("{d}/rootca.pem")).unwrap();
            c.verify_peer(true);
        } else {
            c.verify_peer(false);
        }
        c.set_max_send_udp_payload_size(s.mss);
        c.set_max_recv_udp_payload_size(s.mss.max(1350));
        c.set_initial_max_data(s.window);
        c.set_initial_max_stream_data_bidi_local(s.window);
        c.set_initial_max_stream_data_bidi_remote(s.window);
        c.set_initial_max_stream_data_uni(s.window);
        c.set_initial_max_streams_bidi(100);
        c.set_initial_max_streams_uni(100);
        c.set_max_connection_window(s.window);
        c.set_max_stream_window(s.window);
        c.set_cc_algorithm(quiche::CongestionControlAlgorithm::CUBIC);
        c.enable_pacing(s.pacing);
        c.set_max_idle_timeout(30_000);
        c.enable_dgram(s.dgram, DGRAM_QUEUE, DGRAM_QUEUE);
        c
    }

    pub fn client(local: SocketAddr, peer: SocketAddr, s: &Settings) -> Ep {
        let mut cfg = config(false, s);
        let scid_b = mpquic::random_cid(16);
        let scid = quiche::ConnectionId::from_ref(scid_b.as_slice());
        let conn = quiche::connect(Some("localhost"), &scid, local, peer, &mut cfg).expect("quiche connect");
        Ep { conn, local, peer }
    }

    /// quiche's stateless front end (its documented Retry flow; the token is
    /// the original DCID, which is enough on a private in-memory wire).
    pub struct Listener {
        cfg: quiche::Config,
        retry: bool,
        pub local: SocketAddr,
    }

    impl Listener {
        pub fn new(local: SocketAddr, s: &Settings) -> Listener {
            Listener { cfg: config(true, s), retry: s.retry, local }
        }
        pub fn handle(&mut self, dgram: &mut [u8], from: SocketAddr) -> Result<Ep, Option<Vec<u8>>> {
            let hdr = quiche::Header::from_slice(dgram, quiche::MAX_CONN_ID_LEN).map_err(|_| None)?;
            let mut odcid = None;
            let scid_b = mpquic::random_cid(16);
            let mut scid = quiche::ConnectionId::from_vec(scid_b.as_slice().to_vec());
            if self.retry {
                let token = hdr.token.clone().unwrap_or_default();
                if token.is_empty() {
                    let mut out = [0u8; 1500];
                    let tok = hdr.dcid.to_vec();
                    let n = quiche::retry(&hdr.scid, &hdr.dcid, &scid, &tok, hdr.version, &mut out).unwrap();
                    return Err(Some(out[..n].to_vec()));
                }
                odcid = Some(quiche::ConnectionId::from_vec(token));
                scid = hdr.dcid.clone();
            }
            let mut conn =
                quiche::accept(&scid, odcid.as_ref(), self.local, from, &mut self.cfg).expect("accept");
            conn.recv(dgram, quiche::RecvInfo { from, to: self.local }).expect("first Initial");
            Ok(Ep { conn, local: self.local, peer: from })
        }
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
        fn closed(&self) -> bool {
            self.conn.is_closed()
        }
        fn stream_send(&mut self, id: u64, data: &[u8], fin: bool) -> usize {
            self.conn.stream_send(id, data, fin).unwrap_or(0)
        }
        fn stream_recv(&mut self, id: u64, buf: &mut [u8]) -> (usize, bool) {
            self.conn.stream_recv(id, buf).unwrap_or((0, false))
        }
        fn timeout(&self) -> Option<Instant> {
            self.conn.timeout_instant()
        }
        fn on_timeout(&mut self) {
            self.conn.on_timeout();
        }
        fn name(&self) -> &'static str {
            "quiche"
        }
        fn dgram_send(&mut self, data: &[u8]) -> bool {
            self.conn.dgram_send(data).is_ok()
        }
        fn dgram_recv(&mut self, buf: &mut [u8]) -> Option<usize> {
            self.conn.dgram_recv(buf).ok()
        }
    }
}

/// A client endpoint of either engine.
pub fn client(imp: Impl, s: &Settings) -> Box<dyn Endpoint> {
    let (c, sv) = (CLIENT_ADDR.parse().unwrap(), SERVER_ADDR.parse().unwrap());
    match imp {
        Impl::Mpquic => Box::new(mp::client(c, sv, s)),
        Impl::Quiche => Box::new(qc::client(c, sv, s)),
    }
}

/// Run the client's first flight through the chosen server's stateless
/// front end (following a Retry if one comes back) and return the server.
pub fn accept(client: &mut dyn Endpoint, imp: Impl, s: &Settings) -> Box<dyn Endpoint> {
    let (c, sv): (SocketAddr, SocketAddr) = (CLIENT_ADDR.parse().unwrap(), SERVER_ADDR.parse().unwrap());
    let mpl = mp::Listener::new(sv, s);
    let mut qcl = qc::Listener::new(sv, s);
    let mut buf = vec![0u8; 1500];
    for _ in 0..3 {
        let n = client.send(&mut buf).expect("client first flight");
        let res = match imp {
            Impl::Mpquic => mpl.handle(&mut buf[..n], c).map(|e| Box::new(e) as Box<dyn Endpoint>),
            Impl::Quiche => qcl.handle(&mut buf[..n], c).map(|e| Box::new(e) as Box<dyn Endpoint>),
        };
        match res {
            Ok(server) => return server,
            Err(Some(mut reply)) => client.recv(&mut reply),
            Err(None) => panic!("server dropped the client's Initial"),
        }
    }
    panic!("no connection after Retry");
}

/// In-memory wire: bursts of up to `burst` datagrams per side per turn,
/// optional random loss and adjacent-pair reordering.
pub struct Wire {
    pub burst: usize,
    pub loss: f64,
    pub reorder: f64,
    rng: u64,
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    pub dropped: u64,
}

impl Wire {
    pub fn new(burst: usize, mss: usize) -> Wire {
        Wire {
            burst,
            loss: 0.0,
            reorder: 0.0,
            rng: 0x9e37_79b9_7f4a_7c15,
            bufs: vec![vec![0u8; mss.max(1500)]; burst],
            lens: Vec::with_capacity(burst),
            dropped: 0,
        }
    }

    fn rand(&mut self) -> f64 {
        // xorshift64*: deterministic, no dependency.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `from` sends up to `burst` datagrams, delivered to `to`. Returns how
    /// many were sent.
    pub fn turn(&mut self, from: &mut dyn Endpoint, to: &mut dyn Endpoint) -> usize {
        self.lens.clear();
        while self.lens.len() < self.burst {
            let i = self.lens.len();
            match from.send(&mut self.bufs[i]) {
                Some(n) => self.lens.push(n),
                None => break,
            }
        }
        let sent = self.lens.len();
        let mut order: Vec<usize> = (0..sent).collect();
        if self.reorder > 0.0 {
            let mut i = 0;
            while i + 1 < order.len() {
                if self.rand() < self.reorder {
                    order.swap(i, i + 1);
                    i += 1;
                }
                i += 1;
            }
        }
        for i in order {
            if self.loss > 0.0 && self.rand() < self.loss {
                self.dropped += 1;
                continue;
            }
            let n = self.lens[i];
            to.recv(&mut self.bufs[i][..n]);
        }
        sent
    }
}

/// Nothing moved: let the earliest timer fire, sleeping until it is due.
pub fn fire_timers(a: &mut dyn Endpoint, b: &mut dyn Endpoint) {
    let t = [a.timeout(), b.timeout()].into_iter().flatten().min();
    let Some(t) = t else { return };
    let now = Instant::now();
    if t > now {
        std::thread::sleep((t - now).min(Duration::from_millis(50)));
    }
    a.on_timeout();
    b.on_timeout();
}

pub fn handshake(wire: &mut Wire, c: &mut dyn Endpoint, s: &mut dyn Endpoint) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !(c.established() && s.established()) {
        let a = wire.turn(c, s);
        let b = wire.turn(s, c);
        if a + b == 0 {
            fire_timers(c, s);
        }
        assert!(!c.closed() && !s.closed(), "connection closed during handshake");
        assert!(Instant::now() < deadline, "handshake did not complete");
    }
}
