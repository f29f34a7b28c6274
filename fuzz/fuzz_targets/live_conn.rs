//! An established multipath connection (two validated paths, a stream
//! moving data) fed fuzzed frame sequences inside valid 1-RTT packets, where
//! the state machines are rather than the decoders. Never panics; a side
//! that closed did so with a transport error code; unless the server's
//! frames were fuzzed (they may carry STREAM frames of their own for the
//! same offsets, which the receiver may take first), what the client read
//! of the server's answer is a prefix of it, uncorrupted.
//!
//! Input: chunks `op, len, bytes[len]`. `op` bit 0 picks the sender (0: the
//! client's frames go to the server; 1: the other way); bit 1 the path (0 or
//! the second); bits 2-7 how long to run afterwards, in 5 ms steps.
#![no_main]

use std::net::SocketAddr;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mpquic::testing::{config, Pair};
use mpquic::{PathEvent, PathId};

const BODY: usize = 64 * 1024;

fn mp_config(server: bool) -> mpquic::Config {
    let mut c = config(server, b"fz");
    c.set_initial_max_path_id(Some(3));
    c.set_initial_max_streams_bidi(8);
    c.set_initial_max_streams_uni(8);
    c.enable_dgram(true, 16, 16);
    c
}

/// A multipath pair with its second path validated, or `None` if the
/// engine could not set it up (then there is nothing to fuzz).
fn two_paths() -> Option<(Pair, PathId)> {
    let mut p = Pair::new(&mp_config(false), &mp_config(true));
    p.handshake();
    p.run_for(Duration::from_millis(100));
    let local: SocketAddr = "127.0.0.1:3333".parse().ok()?;
    let id = p.c.probe_path(local, p.s_addr, p.now()).ok()?;
    for _ in 0..100 {
        p.run_for(Duration::from_millis(10));
        while let Some(e) = p.c.path_event_next() {
            if e == PathEvent::Validated(id) {
                return Some((p, id));
            }
        }
    }
    None
}

/// A transport error code a connection may close with.
fn transport_code(code: u64) -> bool {
    code <= 0x10 || (0x100..=0x1ff).contains(&code) || code == 0x3e || (0x3e75..=0x3e77).contains(&code)
}

fuzz_target!(|data: &[u8]| {
    let Some((mut p, second)) = two_paths() else { return };
    // A request and its answer in flight while the frames arrive.
    let _ = p.c.stream_send(0, b"get", true);
    let body: Vec<u8> = (0..BODY).map(|i| (i % 251) as u8).collect();
    let mut sent = 0;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    let mut req = [0u8; 16];
    let mut rest = data;
    let mut server_fuzzed = false;
    while let [op, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (frames, next) = tail.split_at(n);
        rest = next;
        let path = if op & 2 == 0 { PathId(0) } else { second };
        server_fuzzed |= op & 1 == 1;
        let side = if op & 1 == 0 { &mut p.c } else { &mut p.s };
        side.fuzz_inject_frames(Some(path), frames.to_vec());
        for _ in 0..=(op >> 2) {
            let _ = p.s.stream_recv(0, &mut req);
            if sent < body.len() {
                sent += p.s.stream_send(0, &body[sent..], true).unwrap_or(0);
            }
            while let Ok((k, _)) = p.c.stream_recv(0, &mut buf) {
                got.extend_from_slice(&buf[..k]);
            }
            p.run_for(Duration::from_millis(5));
        }
    }
    p.run_for(Duration::from_millis(500));
    while let Ok((k, _)) = p.c.stream_recv(0, &mut buf) {
        got.extend_from_slice(&buf[..k]);
    }
    if !server_fuzzed {
        assert!(got.len() <= body.len() && got[..] == body[..got.len()], "stream data corrupted");
    }
    // No application here closes, so a close is the engine's answer to what
    // it received: a transport error code of RFC 9000 §20.1, TLS's range, or
    // the multipath draft's. Whether the peer hears it is not checked: a
    // fuzzed side can make itself unreachable (retire or replace the
    // connection IDs the close would travel on).
    for side in [&p.c, &p.s] {
        if let Some(e) = side.local_error() {
            assert!(!e.is_app && transport_code(e.code), "closed with {e:?}");
        }
    }
});
