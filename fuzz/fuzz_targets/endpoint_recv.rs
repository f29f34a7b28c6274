//! The server's datagram entry point (`Endpoint::recv`, then serving the
//! connections it wakes), fed a fuzzed sequence of datagrams beside a real
//! client's handshake. Never panics; a reply fits its buffer; an address
//! that never completed a handshake gets at most 3× the bytes it sent
//! (RFC 9000 §8); half-open connections stay counted among connections.
//!
//! Input: one flags byte (bit 0: Retry on; bits 1..: connection ID length),
//! then chunks `op, len_lo, len_hi, bytes[len]`. `op` bits 0-1 pick the
//! source address (0 is the real client's); bits 2-3 the kind: raw bytes,
//! a short header carrying a connection ID the server issued, the client's
//! first Initial with the bytes XORed in, or the client's next datagrams
//! (real handshake progress); bits 4-7 advance the clock by 50 ms steps.
#![no_main]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use mpquic::endpoint::{Endpoint, EndpointConfig, Incoming};
use mpquic::{Config, Connection, RecvInfo};

const SERVER: ([u8; 4], u16) = ([127, 0, 0, 1], 4433);
const CERTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/certs/");

fn server_config() -> Config {
    let mut c = Config::new();
    c.set_application_protos(&[b"h3"]).unwrap();
    c.load_cert_chain_from_pem_file(&format!("{CERTS}cert.pem")).unwrap();
    c.load_priv_key_from_pem_file(&format!("{CERTS}key.pem")).unwrap();
    // Without a CA file the engine loads the system store, most of a run.
    c.load_verify_locations_from_file(&format!("{CERTS}rootca.pem")).unwrap();
    c.set_initial_max_data(1 << 20);
    c.set_initial_max_streams_bidi(16);
    c.set_initial_max_path_id(Some(3));
    c
}

fn client(now: Instant) -> Connection {
    let mut c = Config::new();
    c.set_application_protos(&[b"h3"]).unwrap();
    c.verify_peer(false);
    c.load_verify_locations_from_file(&format!("{CERTS}rootca.pem")).unwrap();
    c.set_initial_max_path_id(Some(3));
    let scid = mpquic::random_cid(8);
    mpquic::connect(Some("localhost"), &scid, addr(0), SERVER.into(), &c, now).unwrap()
}

fn addr(i: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 1 + i], 5000 + u16::from(i)))
}

struct World {
    ep: Endpoint<()>,
    client: Connection,
    /// The client's first datagram, for mutated replays.
    first: Vec<u8>,
    /// Datagrams the server sent to the client, not yet delivered.
    to_client: Vec<Vec<u8>>,
    /// Connection IDs the server issued.
    cids: Vec<Vec<u8>>,
    now: Instant,
    recv_from: HashMap<SocketAddr, usize>,
    sent_to: HashMap<SocketAddr, usize>,
}

impl World {
    fn deliver(&mut self, dgram: &mut [u8], from: SocketAddr) {
        *self.recv_from.entry(from).or_default() += dgram.len();
        let mut out = [0u8; 1500];
        let info = RecvInfo::new(from, SERVER.into());
        if let Incoming::Reply(n) = self.ep.recv(dgram, info, self.now, &mut out) {
            assert!(n <= out.len());
            self.sent(from, &out[..n]);
        }
        self.serve();
        assert!(self.ep.half_open() <= self.ep.len());
    }

    fn sent(&mut self, to: SocketAddr, d: &[u8]) {
        *self.sent_to.entry(to).or_default() += d.len();
        if to == addr(0) && self.to_client.len() < 64 {
            self.to_client.push(d.to_vec());
        }
    }

    /// Let every woken connection send, as a server's loop does.
    fn serve(&mut self) {
        let mut out = [0u8; 1500];
        while let Some(h) = self.ep.poll(self.now) {
            let mut sent = Vec::new();
            if let Some((conn, _)) = self.ep.get(h) {
                while let Ok(Some((n, info))) = conn.send(&mut out, self.now) {
                    sent.push((info.to, out[..n].to_vec()));
                    if sent.len() > 32 {
                        break;
                    }
                }
                for c in conn.local_cids() {
                    if self.cids.len() < 16 && !self.cids.iter().any(|k| k == c.as_slice()) {
                        self.cids.push(c.as_slice().to_vec());
                    }
                }
            }
            for (to, d) in sent {
                self.sent(to, &d);
            }
            self.ep.rearm(h, None);
        }
    }

    /// Real handshake progress: the client reads what it got and answers.
    fn step_client(&mut self) {
        for mut d in std::mem::take(&mut self.to_client) {
            let _ = self.client.recv(&mut d, RecvInfo::new(SERVER.into(), addr(0)), self.now);
        }
        if self.client.timeout().is_some_and(|t| t <= self.now) {
            self.client.on_timeout(self.now);
        }
        let mut out = [0u8; 1500];
        let mut batch = Vec::new();
        while let Ok(Some((n, _))) = self.client.send(&mut out, self.now) {
            batch.push(out[..n].to_vec());
            if batch.len() > 16 {
                break;
            }
        }
        for mut d in batch {
            self.deliver(&mut d, addr(0));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, mut rest)) = data.split_first() else { return };
    let now = Instant::now();
    let cfg = EndpointConfig {
        retry: flags & 1 != 0,
        cid_len: 4 + usize::from(flags >> 1) % 17,
        max_half_open: 4,
        ..EndpointConfig::default()
    };
    let Ok(ep) = Endpoint::new(server_config(), cfg, now) else { return };
    let mut client = client(now);
    let mut first = vec![0u8; 1500];
    let n = client.send(&mut first, now).unwrap().unwrap().0;
    first.truncate(n);
    let mut w = World {
        ep,
        client,
        first: first.clone(),
        to_client: Vec::new(),
        cids: Vec::new(),
        now,
        recv_from: HashMap::new(),
        sent_to: HashMap::new(),
    };
    w.deliver(&mut first, addr(0));
    while let [op, lo, hi, tail @ ..] = rest {
        let len = usize::from(u16::from_le_bytes([*lo, *hi])).min(tail.len());
        let (bytes, next) = tail.split_at(len);
        rest = next;
        w.now += Duration::from_millis(50 * u64::from(op >> 4));
        let from = addr(op & 3);
        match (op >> 2) & 3 {
            0 => w.deliver(&mut bytes.to_vec(), from),
            1 => {
                let Some(cid) = bytes.first().and_then(|&i| w.cids.get(usize::from(i) % w.cids.len().max(1)))
                else {
                    continue;
                };
                let mut d = vec![0x40 | (bytes.first().unwrap_or(&0) & 0x3f)];
                d.extend_from_slice(cid);
                d.extend_from_slice(bytes);
                w.deliver(&mut d, from);
            }
            2 => {
                let mut d = w.first.clone();
                let at = bytes.first().map_or(0, |&b| usize::from(b) * d.len() / 256);
                for (x, b) in d[at..].iter_mut().zip(bytes) {
                    *x ^= b;
                }
                w.deliver(&mut d, from);
            }
            _ => w.step_client(),
        }
    }
    // Addresses that could not have completed a handshake: the fake ones
    // (the real client's handshake packets all come from address 0).
    for i in 1..4 {
        let (got, sent) = (w.recv_from.get(&addr(i)), w.sent_to.get(&addr(i)));
        assert!(sent.unwrap_or(&0) <= &(3 * got.unwrap_or(&0)), "amplification toward {}", addr(i));
    }
});
