//! Moves N bytes server→client on one stream through an in-memory lossless
//! wire, in one process, with the same harness driving mpquic or quiche.
//!
//!     cargo run --release --example pairbench -- --bytes 1073741824 --impl mpquic
//!     cargo run --release --example pairbench -- --bytes 1073741824 --paths 2
//!
//! `--zero-copy` has mpquic share the server's body buffer with the stream
//! (`stream_send_bytes`) and the client take data where it lies
//! (`stream_peek` + `stream_consume`) instead of copying it in and out;
//! quiche, which has no such read, copies as before.
//!
//! `--paths 2` (mpquic only) spreads the same transfer over two in-memory
//! paths (round-robin scheduler, two client addresses).
//!
//! Prints one JSON line: {"impl","bytes","wall_s","cpu_s","mb_per_s","packets"}.
//! Settings are the same for both engines: 1350-byte datagrams, at most 64
//! packets per side per turn, 1 GiB flow-control windows, CUBIC, pacing off
//! (the wire ignores release times), path MTU discovery off (mpquic's default
//! is on, quiche's off: with it mpquic sent 1472-byte datagrams), peer
//! verification off.

#![allow(clippy::disallowed_methods)] // test harness: real time is fine outside the engine

#[path = "../tests/common/peers.rs"]
mod peers;

use std::time::Instant;

use peers::{Endpoint, Impl, Settings, Wire};

const DGRAM: usize = 1350;
const BURST: usize = 64;
const WINDOW: u64 = 1 << 30;
const STREAM: u64 = 0;

/// The settings of the module doc, for both engines.
fn settings() -> Settings {
    Settings { window: WINDOW, mss: DGRAM, verify: false, pacing: false, pmtud: false, ..Settings::default() }
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

fn run(client: &mut dyn Endpoint, server: &mut dyn Endpoint, bytes: u64, zero_copy: bool) -> (f64, f64, u64) {
    let mut wire = Wire::new(BURST, DGRAM);
    peers::handshake(&mut wire, client, server);
    // The client opens the stream with a request.
    client.stream_send(STREAM, b"GET", true);
    wire.turn(client, server);
    let mut req = [0u8; 16];
    server.stream_recv(STREAM, &mut req);

    let chunk = mpquic::Bytes::from(vec![0x5au8; 64 * 1024]);
    let mut sink = vec![0u8; 256 * 1024];
    let mut sent = 0u64;
    let mut received = 0u64;
    let mut packets = 0u64;
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    if bytes == 0 {
        // Nothing to send but the end of the stream.
        server.stream_send(STREAM, &[], true);
    }
    let mut done = false;
    while !done {
        // Keep the server's stream buffer topped up (bounded backlog).
        while sent < bytes {
            let n = ((bytes - sent) as usize).min(chunk.len());
            let fin = sent + n as u64 == bytes;
            let w = if zero_copy {
                server.stream_send_shared(STREAM, &chunk.slice(..n), fin)
            } else {
                server.stream_send(STREAM, &chunk[..n], fin)
            };
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
            let (n, fin) = if zero_copy {
                client.stream_take(STREAM, &mut sink)
            } else {
                client.stream_recv(STREAM, &mut sink)
            };
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
            peers::fire_timers(client, server);
        }
    }
    assert_eq!(received, bytes);
    (t0.elapsed().as_secs_f64(), cpu_time() - cpu0, packets)
}

/// Two-path variant: datagrams carry their addresses, so each lands on the
/// path it was sent on.
mod two_paths {
    use super::*;
    use mpquic::{Connection, RecvInfo};
    use std::net::SocketAddr;

    struct Dgram {
        buf: Vec<u8>,
        len: usize,
        from: SocketAddr,
        to: SocketAddr,
    }

    /// Up to BURST datagrams from `from`, delivered to `to`.
    fn turn(bufs: &mut [Dgram], from: &mut Connection, to: &mut Connection) -> usize {
        let mut n = 0;
        while n < bufs.len() {
            let d = &mut bufs[n];
            match from.send(&mut d.buf, Instant::now()) {
                Ok(Some((len, info))) => {
                    d.len = len;
                    d.from = info.from;
                    d.to = info.to;
                    n += 1;
                }
                _ => break,
            }
        }
        for d in &mut bufs[..n] {
            let _ = to.recv(&mut d.buf[..d.len], RecvInfo::new(d.from, d.to), Instant::now());
        }
        n
    }

    fn fire(a: &mut Connection, b: &mut Connection) {
        let t = [a.timeout(), b.timeout()].into_iter().flatten().min();
        if let Some(t) = t {
            let now = Instant::now();
            if t > now {
                std::thread::sleep((t - now).min(std::time::Duration::from_millis(50)));
            }
        }
        a.on_timeout(Instant::now());
        b.on_timeout(Instant::now());
    }

    pub fn run(bytes: u64) -> (f64, f64, u64, Vec<u64>) {
        let settings = Settings { multipath: true, ..settings() };
        let (c1, sv): (SocketAddr, SocketAddr) =
            (peers::CLIENT_ADDR.parse().unwrap(), peers::SERVER_ADDR.parse().unwrap());
        let c2: SocketAddr = "127.0.0.1:40003".parse().unwrap();
        let mut ccfg = peers::mp::config(false, &settings);
        let mut scfg = peers::mp::config(true, &settings);
        for c in [&mut ccfg, &mut scfg] {
            c.set_scheduler("rr").unwrap();
        }
        let mut client =
            mpquic::connect(Some("localhost"), &mpquic::random_cid(16), c1, sv, &ccfg, Instant::now())
                .unwrap();
        let mut bufs: Vec<Dgram> =
            (0..BURST).map(|_| Dgram { buf: vec![0u8; 1500], len: 0, from: c1, to: sv }).collect();
        let n = {
            let d = &mut bufs[0];
            let (len, _) = client.send(&mut d.buf, Instant::now()).unwrap().unwrap();
            len
        };
        let hdr = mpquic::packet::parse_header(&bufs[0].buf[..n], 16).unwrap();
        let mut server =
            mpquic::accept(&mpquic::random_cid(16), &hdr.dcid, None, sv, c1, &scfg, Instant::now()).unwrap();
        server.recv(&mut bufs[0].buf[..n], RecvInfo::new(c1, sv), Instant::now()).unwrap();
        let mut probed = false;
        for _ in 0..10_000 {
            turn(&mut bufs, &mut server, &mut client);
            turn(&mut bufs, &mut client, &mut server);
            if client.is_established() && !probed && client.probe_path(c2, sv, Instant::now()).is_ok() {
                probed = true;
            }
            if probed && client.paths().count() == 2 && client.path_stats().all(|p| p.active) {
                break;
            }
            fire(&mut client, &mut server);
        }
        assert!(client.path_stats().filter(|p| p.active).count() == 2, "second path not validated");
        client.stream_send(STREAM, b"GET", true).unwrap();
        turn(&mut bufs, &mut client, &mut server);
        let mut req = [0u8; 16];
        let _ = server.stream_recv(STREAM, &mut req);

        let chunk = vec![0x5au8; 64 * 1024];
        let mut sink = vec![0u8; 256 * 1024];
        let (mut sent, mut received, mut packets) = (0u64, 0u64, 0u64);
        let cpu0 = cpu_time();
        let t0 = Instant::now();
        if bytes == 0 {
            let _ = server.stream_send(STREAM, &[], true);
        }
        let mut done = false;
        while !done {
            while sent < bytes {
                let n = ((bytes - sent) as usize).min(chunk.len());
                let w = server.stream_send(STREAM, &chunk[..n], sent + n as u64 == bytes).unwrap_or(0);
                sent += w as u64;
                if w < n {
                    break;
                }
            }
            let a = turn(&mut bufs, &mut server, &mut client);
            while let Ok((n, fin)) = client.stream_recv(STREAM, &mut sink) {
                received += n as u64;
                done |= fin;
                if n == 0 {
                    break;
                }
            }
            let b = turn(&mut bufs, &mut client, &mut server);
            packets += (a + b) as u64;
            if a + b == 0 && !done {
                fire(&mut client, &mut server);
            }
        }
        assert_eq!(received, bytes);
        let per_path = server.path_stats().map(|p| p.stream_bytes).collect();
        (t0.elapsed().as_secs_f64(), cpu_time() - cpu0, packets, per_path)
    }
}

fn main() {
    let mut bytes: u64 = 1 << 30;
    let mut imp = String::from("mpquic");
    let mut paths = 1;
    let mut zero_copy = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bytes" => bytes = args.next().and_then(|v| v.parse().ok()).expect("--bytes N"),
            "--impl" => imp = args.next().expect("--impl mpquic|quiche"),
            "--zero-copy" => zero_copy = true,
            "--paths" => paths = args.next().and_then(|v| v.parse().ok()).expect("--paths 1|2"),
            other => {
                eprintln!(
                    "unknown argument {other}; usage: pairbench [--bytes N] [--impl mpquic|quiche] [--paths 1|2] [--zero-copy]"
                );
                std::process::exit(2);
            }
        }
    }
    match (paths, imp.as_str()) {
        (1, _) => {}
        (2, "mpquic") => {
            let (wall, cpu, packets, per_path) = two_paths::run(bytes);
            println!(
                "{{\"impl\":\"mpquic\",\"paths\":2,\"bytes\":{bytes},\"wall_s\":{wall:.3},\"cpu_s\":{cpu:.3},\"mb_per_s\":{:.1},\"packets\":{packets},\"path_stream_bytes\":{per_path:?}}}",
                bytes as f64 / wall / 1e6
            );
            return;
        }
        _ => {
            eprintln!("--paths must be 1, or 2 with --impl mpquic (quiche has no multipath)");
            std::process::exit(2);
        }
    }
    let which = match imp.as_str() {
        "mpquic" => Impl::Mpquic,
        "quiche" => Impl::Quiche,
        other => {
            eprintln!("unknown --impl {other}: use mpquic or quiche");
            std::process::exit(2);
        }
    };
    let settings = settings();
    let mut c = peers::client(which, &settings);
    let mut s = peers::accept(c.as_mut(), which, &settings);
    let (wall, cpu, packets) = run(c.as_mut(), s.as_mut(), bytes, zero_copy);
    println!(
        "{{\"impl\":\"{imp}\",\"zero_copy\":{zero_copy},\"bytes\":{bytes},\"wall_s\":{wall:.3},\"cpu_s\":{cpu:.3},\"mb_per_s\":{:.1},\"packets\":{packets}}}",
        bytes as f64 / wall / 1e6
    );
}
