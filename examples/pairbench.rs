//! Moves N bytes server→client on one stream through an in-memory lossless
//! wire, in one process, with the same harness driving mpquic or quiche.
//!
//!     cargo run --release --example pairbench -- --bytes 1073741824 --impl mpquic
//!
//! Prints one JSON line: {"impl","bytes","wall_s","cpu_s","mb_per_s","packets"}.
//! Settings are the same for both engines: 1350-byte datagrams, at most 64
//! packets per side per turn, 1 GiB flow-control windows, CUBIC, pacing times
//! ignored, peer verification off.

#![allow(clippy::disallowed_methods)] // test harness: real time is fine outside the engine

#[path = "../tests/common/peers.rs"]
mod peers;

use std::time::Instant;

use peers::{Endpoint, Impl, Settings, Wire};

const DGRAM: usize = 1350;
const BURST: usize = 64;
const WINDOW: u64 = 1 << 30;
const STREAM: u64 = 0;

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
    let mut wire = Wire::new(BURST, DGRAM);
    peers::handshake(&mut wire, client, server);
    // The client opens the stream with a request.
    client.stream_send(STREAM, b"GET", true);
    wire.turn(client, server);
    let mut req = [0u8; 16];
    server.stream_recv(STREAM, &mut req);

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
            let w = server.stream_send(STREAM, &chunk[..n], sent + n as u64 == bytes);
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
            let (n, fin) = client.stream_recv(STREAM, &mut sink);
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
    let which = match imp.as_str() {
        "mpquic" => Impl::Mpquic,
        "quiche" => Impl::Quiche,
        other => {
            eprintln!("unknown --impl {other}: use mpquic or quiche");
            std::process::exit(2);
        }
    };
    let settings = Settings { window: WINDOW, mss: DGRAM, verify: false, retry: false, multipath: false };
    let mut c = peers::client(which, &settings);
    let mut s = peers::accept(c.as_mut(), which, &settings);
    let (wall, cpu, packets) = run(c.as_mut(), s.as_mut(), bytes);
    println!(
        "{{\"impl\":\"{imp}\",\"bytes\":{bytes},\"wall_s\":{wall:.3},\"cpu_s\":{cpu:.3},\"mb_per_s\":{:.1},\"packets\":{packets}}}",
        bytes as f64 / wall / 1e6
    );
}
