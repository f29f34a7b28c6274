//! Fidelity of the shells on real namespaces and TUN devices: delivered rate against the
//! trace's capacity, added delay, loss rate, and per-path rates of `mpquic-mpshell`.
//!
//! Traffic stays on this machine: receivers outside bind the test's own namespace and
//! programs inside only send to `MAHIMAHI_BASE` (a shell's own egress device). The
//! program inside a shell is this test binary again, running the `probe` test with
//! `MPQUIC_SHELLS_PROBE` set. Tests skip with a message where root/namespaces are
//! unavailable.

// Real-time measurements: reading the clock is the point here.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use emu::Trace;
use mpquic::Ecn;
use mpquic_apps::batch::{self, Gso};
use shells::shell::{monotonic_ns, BASE6_ENV, EPOCH_ENV};

const PROBE_ENV: &str = "MPQUIC_SHELLS_PROBE";
/// UDP payload making a 1500-byte IP packet: exactly one 1504-byte opportunity.
const FULL_PAYLOAD: usize = 1472;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn can_run(test: &str) -> bool {
    match shells::netns::check_privileges() {
        Ok(()) => true,
        Err(why) => {
            println!("SKIPPED {test}: {why}");
            false
        }
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn env_str(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

/// Milliseconds since the shell's link epoch (as seen from inside).
fn since_epoch_ms(epoch_ns: u64) -> f64 {
    monotonic_ns().unwrap_or(0).saturating_sub(epoch_ns) as f64 / 1e6
}

/// Calls `send(seq)` for `pps` datagrams per second, numbered from 0, for `run_for` or
/// until `stop`; returns how many it sent.
fn pace(pps: u64, run_for: Duration, stop: &AtomicBool, mut send: impl FnMut(u64)) -> u64 {
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < run_for && !stop.load(Ordering::Relaxed) {
        let due = (start.elapsed().as_secs_f64() * pps as f64) as u64;
        while sent < due {
            send(sent);
            sent += 1;
        }
        thread::sleep(Duration::from_millis(1));
    }
    sent
}

/// Sends `pps` full-size datagrams per second from `bind` to `to` until `deadline`.
fn paced_send(bind: IpAddr, to: SocketAddr, pps: u64, run_for: Duration, stop: &AtomicBool) {
    let Ok(sock) = UdpSocket::bind(SocketAddr::new(bind, 0)) else {
        return;
    };
    let payload = vec![0x5au8; FULL_PAYLOAD];
    pace(pps, run_for, stop, |_| {
        let _ = sock.send_to(&payload, to);
    });
}

/// The ECN codepoint the `ecn` probe gives datagram `seq`: the four in turn.
fn codepoint(seq: u64) -> Ecn {
    [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce][(seq % 4) as usize]
}

/// Sends 1500-byte IP packets (either family) numbered in their first 8 bytes, each
/// with its [`codepoint`], at `pps` for `run_for`; then waits `drain` so the link's
/// queue empties before the shell ends with this probe. Returns how many it sent.
fn send_ecn_probe(to: SocketAddr, pps: u64, run_for: Duration, drain: Duration) -> u64 {
    let any: IpAddr = if to.is_ipv6() { Ipv6Addr::UNSPECIFIED.into() } else { Ipv4Addr::UNSPECIFIED.into() };
    let sock = UdpSocket::bind(SocketAddr::new(any, 0)).expect("bind");
    let mut payload = vec![0u8; if to.is_ipv6() { FULL_PAYLOAD - 20 } else { FULL_PAYLOAD }];
    let gso = Gso::without_gso();
    let sent = pace(pps, run_for, &AtomicBool::new(false), |seq| {
        payload[..8].copy_from_slice(&seq.to_be_bytes());
        let _ = gso.send(&sock, &payload, payload.len(), to, codepoint(seq));
    });
    thread::sleep(drain);
    sent
}

/// The program run inside the shells (a no-op in a normal test run).
#[test]
fn probe() {
    let Ok(mode) = std::env::var(PROBE_ENV) else {
        return;
    };
    // PROBE_FAMILY=6: talk over the shells' IPv6 addresses instead.
    let v6 = env_str("PROBE_FAMILY") == "6";
    let base: IpAddr = env_str(if v6 { BASE6_ENV } else { "MAHIMAHI_BASE" }).parse().expect("base address");
    let any = if v6 { IpAddr::V6(Ipv6Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::UNSPECIFIED) };
    let six = if v6 { "6" } else { "" };
    let port = env_u64("PROBE_PORT", 0) as u16;
    let server = SocketAddr::new(base, port);
    let epoch_ns = env_u64(EPOCH_ENV, 0);
    println!("RESULT epoch_ns={epoch_ns}");
    match mode.as_str() {
        // Paced senders, one per `ADDR_INDEX:PPS` item (index of MPSHELL_ADDR_i, or
        // `-` for the default route), for PROBE_MS.
        "send" => {
            let run_for = Duration::from_millis(env_u64("PROBE_MS", 1000));
            let stop = Arc::new(AtomicBool::new(false));
            let flows: Vec<_> = env_str("PROBE_FLOWS")
                .split(',')
                .filter_map(|f| {
                    let (idx, pps) = f.split_once(':')?;
                    let bind = if idx == "-" {
                        any
                    } else {
                        env_str(&format!("MPSHELL_ADDR_{idx}")).parse().ok()?
                    };
                    let pps: u64 = pps.parse().ok()?;
                    let stop = stop.clone();
                    Some(thread::spawn(move || paced_send(bind, server, pps, run_for, &stop)))
                })
                .collect();
            for f in flows {
                let _ = f.join();
            }
        }
        // Says hello to the server, then counts full-size datagrams arriving within
        // [PROBE_FROM_MS, PROBE_TO_MS) of the link epoch.
        "recv" => {
            let (from, to) = (env_u64("PROBE_FROM_MS", 0), env_u64("PROBE_TO_MS", 1000));
            let sock = UdpSocket::bind("0.0.0.0:0").expect("bind");
            sock.set_read_timeout(Some(Duration::from_millis(50))).ok();
            let mut buf = [0u8; 2048];
            let (mut counted, mut got_any) = (0u64, false);
            while since_epoch_ms(epoch_ns) < to as f64 + 200.0 {
                if !got_any {
                    let _ = sock.send_to(b"hello", server);
                }
                if let Ok(n) = sock.recv(&mut buf) {
                    got_any = true;
                    let t = since_epoch_ms(epoch_ns);
                    if n == FULL_PAYLOAD && t >= from as f64 && t < to as f64 {
                        counted += 1;
                    }
                }
            }
            println!("RESULT counted={counted}");
        }
        // PROBE_COUNT numbered echoes PROBE_GAP_US apart; reports replies and RTTs.
        "echo" => {
            let count = env_u64("PROBE_COUNT", 100);
            let gap = Duration::from_micros(env_u64("PROBE_GAP_US", 10_000));
            // On path i, talk to the path's own outside address: a server bound to the
            // wildcard address answers from there, which a connected socket requires.
            let (bind, server) = match std::env::var("PROBE_BIND_INDEX") {
                Ok(i) => {
                    let addr = env_str(&format!("MPSHELL_ADDR{six}_{i}")).parse().expect("addr");
                    let peer = env_str(&format!("MPSHELL_PEER{six}_{i}")).parse().expect("peer");
                    (addr, SocketAddr::new(peer, port))
                }
                Err(_) => (any, server),
            };
            let sock = UdpSocket::bind(SocketAddr::new(bind, 0)).expect("bind");
            sock.connect(server).expect("connect");
            let rx = sock.try_clone().expect("clone");
            rx.set_read_timeout(Some(Duration::from_millis(100))).ok();
            let start = Instant::now();
            let done = Arc::new(AtomicBool::new(false));
            let done2 = done.clone();
            let reader = thread::spawn(move || {
                let mut rtts = HashMap::new();
                let mut buf = [0u8; 64];
                let mut idle_since: Option<Instant> = None;
                loop {
                    match rx.recv(&mut buf) {
                        Ok(16) => {
                            let seq = u64::from_be_bytes(buf[..8].try_into().unwrap());
                            let sent = u64::from_be_bytes(buf[8..16].try_into().unwrap());
                            let now = start.elapsed().as_micros() as u64;
                            rtts.entry(seq).or_insert(now.saturating_sub(sent));
                        }
                        Ok(_) => {}
                        Err(_) => {
                            if done2.load(Ordering::Relaxed) {
                                let t = idle_since.get_or_insert_with(Instant::now);
                                if t.elapsed() > Duration::from_millis(400) {
                                    break;
                                }
                            }
                        }
                    }
                }
                rtts
            });
            for seq in 0..count {
                let due = gap * seq as u32;
                if let Some(wait) = due.checked_sub(start.elapsed()) {
                    thread::sleep(wait);
                }
                let mut msg = [0u8; 16];
                msg[..8].copy_from_slice(&seq.to_be_bytes());
                let now = start.elapsed().as_micros() as u64;
                msg[8..].copy_from_slice(&now.to_be_bytes());
                let _ = sock.send(&msg);
            }
            done.store(true, Ordering::Relaxed);
            let rtts = reader.join().expect("reader");
            let mut v: Vec<u64> = rtts.values().copied().collect();
            v.sort_unstable();
            let median = v.get(v.len() / 2).copied().unwrap_or(0);
            let min = v.first().copied().unwrap_or(0);
            println!("RESULT sent={count} received={} median_us={median} min_us={min}", v.len());
        }
        // Numbered datagrams cycling through the ECN codepoints (`codepoint`).
        "ecn" => {
            let run_for = Duration::from_millis(env_u64("PROBE_MS", 3000));
            let drain = Duration::from_millis(env_u64("PROBE_DRAIN_MS", 1500));
            let sent = send_ecn_probe(server, env_u64("PROBE_PPS", 1200), run_for, drain);
            println!("RESULT sent={sent}");
        }
        other => panic!("unknown probe mode {other}"),
    }
}

/// `key=value` pairs from the probe's `RESULT` lines.
fn results(out: &Output) -> HashMap<String, u64> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once("RESULT ").map(|(_, r)| r))
        .flat_map(|l| l.split_whitespace())
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// Runs `shell_argv` (a chain of shells ending in this binary's probe) with probe env.
fn run_shells(shell_argv: &[String], probe_env: &[(&str, String)]) -> Output {
    let exe = std::env::current_exe().expect("current_exe");
    let (prog, args) = shell_argv.split_first().expect("argv");
    let out = Command::new(prog)
        .args(args)
        .arg(exe)
        .args(["--exact", "probe", "--nocapture", "--test-threads=1"])
        .envs(probe_env.iter().map(|(k, v)| (*k, v.clone())))
        .env_remove("MAHIMAHI_BASE")
        .env_remove(EPOCH_ENV)
        .env_remove(shells::netns::CHAIN_ENV)
        .output()
        .expect("run shell");
    assert!(
        out.status.success(),
        "shell failed: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn bin(name: &str) -> String {
    match name {
        "mm-delay" => env!("CARGO_BIN_EXE_mm-delay"),
        "mm-loss" => env!("CARGO_BIN_EXE_mm-loss"),
        "mm-link" => env!("CARGO_BIN_EXE_mm-link"),
        _ => env!("CARGO_BIN_EXE_mpquic-mpshell"),
    }
    .to_string()
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// Collects (monotonic ns, source address) of full-size datagrams until `stop`.
fn spawn_receiver(sock: UdpSocket, stop: Arc<AtomicBool>) -> thread::JoinHandle<Vec<(u64, IpAddr)>> {
    sock.set_read_timeout(Some(Duration::from_millis(50))).ok();
    thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            if let Ok((n, from)) = sock.recv_from(&mut buf) {
                if n == FULL_PAYLOAD {
                    seen.push((monotonic_ns().unwrap_or(0), from.ip()));
                }
            }
        }
        seen
    })
}

/// Echoes every datagram back until `stop`.
fn spawn_echo(sock: UdpSocket, stop: Arc<AtomicBool>) -> thread::JoinHandle<()> {
    sock.set_read_timeout(Some(Duration::from_millis(50))).ok();
    thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            if let Ok((n, from)) = sock.recv_from(&mut buf) {
                let _ = sock.send_to(&buf[..n], from);
            }
        }
    })
}

/// Opportunities of `trace` in `[from_ms, to_ms)` of its clock: full-size packets it can
/// deliver there.
fn capacity(trace: &Trace, from_ms: u64, to_ms: u64) -> u64 {
    // first_index_after(t) counts opportunities at times <= t.
    trace.first_index_after(to_ms.saturating_sub(1)) - trace.first_index_after(from_ms.saturating_sub(1))
}

fn assert_within(what: &str, got: u64, want: u64, tolerance: f64) {
    let err = (got as f64 - want as f64) / want as f64;
    println!("{what}: delivered {got}, capacity {want}, error {:+.2}%", err * 100.0);
    assert!(
        err.abs() <= tolerance,
        "{what}: delivered {got} packets, trace capacity {want} ({:+.2}% > ±{:.0}%)",
        err * 100.0,
        tolerance * 100.0
    );
}

/// A constant 12 Mbit/s trace, saturated uplink for 20 s: delivered = capacity ± 3%.
#[test]
fn link_constant_trace_uplink_rate() {
    if !can_run("link_constant_trace_uplink_rate") {
        return;
    }
    let trace = data("12mbps.trace");
    let sock = UdpSocket::bind("0.0.0.0:0").expect("bind");
    let port = sock.local_addr().expect("addr").port();
    let stop = Arc::new(AtomicBool::new(false));
    let rx = spawn_receiver(sock, stop.clone());
    let t = trace.to_str().expect("utf8 path");
    let shell =
        argv(&[&bin("mm-link"), t, t, "--uplink-queue=droptail", "--uplink-queue-args=packets=300", "--"]);
    let out = run_shells(
        &shell,
        &[
            (PROBE_ENV, "send".into()),
            ("PROBE_PORT", port.to_string()),
            ("PROBE_FLOWS", "-:1500".into()),
            ("PROBE_MS", "20500".into()),
        ],
    );
    stop.store(true, Ordering::Relaxed);
    let seen = rx.join().expect("receiver");
    let epoch = results(&out)["epoch_ns"];
    let (from, to) = (500u64, 20_000u64);
    let got = seen
        .iter()
        .filter(|(ns, _)| {
            let ms = ns.saturating_sub(epoch) / 1_000_000;
            ms >= from && ms < to
        })
        .count() as u64;
    let want = capacity(&Trace::load(&trace).expect("trace"), from, to);
    assert_eq!(want, 19_500);
    assert_within("12 Mbit/s uplink", got, want, 0.03);
}

/// A real LTE downlink trace, saturated for 20 s: delivered = capacity ± 3% over the
/// same interval of the trace clock.
#[test]
fn link_lte_trace_downlink_rate() {
    if !can_run("link_lte_trace_downlink_rate") {
        return;
    }
    let lte = data("TMobile-LTE-driving-25s.down");
    let constant = data("12mbps.trace");
    let server = UdpSocket::bind("0.0.0.0:0").expect("bind");
    let port = server.local_addr().expect("addr").port();
    server.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    // Waits for the probe's hello, then saturates the downlink (2400 pps, well above
    // the trace's rate after its first second; the droptail queue keeps a backlog).
    let sender = thread::spawn(move || {
        let mut buf = [0u8; 64];
        let Ok((_, peer)) = server.recv_from(&mut buf) else {
            return;
        };
        paced_send(IpAddr::V4(Ipv4Addr::UNSPECIFIED), peer, 2400, Duration::from_secs(22), &stop2);
    });
    let shell = argv(&[
        &bin("mm-link"),
        constant.to_str().expect("utf8"),
        lte.to_str().expect("utf8"),
        "--downlink-queue=droptail",
        "--downlink-queue-args=packets=1000",
        "--",
    ]);
    let (from, to) = (2000u64, 20_000u64);
    let out = run_shells(
        &shell,
        &[
            (PROBE_ENV, "recv".into()),
            ("PROBE_PORT", port.to_string()),
            ("PROBE_FROM_MS", from.to_string()),
            ("PROBE_TO_MS", to.to_string()),
        ],
    );
    stop.store(true, Ordering::Relaxed);
    let _ = sender.join();
    let got = results(&out)["counted"];
    let want = capacity(&Trace::load(&lte).expect("trace"), from, to);
    assert_within("LTE downlink", got, want, 0.03);
}

/// Runs an echo probe inside `shell` against an echo server here.
fn echo_through(shell: &[String], count: u64, gap_us: u64) -> HashMap<String, u64> {
    echo_through_env(shell, count, gap_us, false, &[])
}

/// Skips (with the reason) where shells cannot run or this namespace has no IPv6.
fn can_run_v6(test: &str) -> bool {
    if !can_run(test) {
        return false;
    }
    if !shells::netns::ipv6_enabled_here() {
        println!("SKIPPED {test}: IPv6 is disabled in this network namespace");
        return false;
    }
    true
}

/// Runs `check` for one address family where the shells (and IPv6, for `v6`) can run.
fn for_family(test: &str, v6: bool, check: fn(bool)) {
    if if v6 { can_run_v6(test) } else { can_run(test) } {
        check(v6);
    }
}

/// Declares an IPv4 and an IPv6 test running `check(v6)` (see [`for_family`]).
macro_rules! both_families {
    ($v4:ident, $v6:ident, $check:ident) => {
        #[test]
        fn $v4() {
            for_family(stringify!($v4), false, $check);
        }

        #[test]
        fn $v6() {
            for_family(stringify!($v6), true, $check);
        }
    };
}

/// An echo probe with `extra` environment, over the shells' IPv6 addresses when `v6`.
fn echo_through_env(
    shell: &[String],
    count: u64,
    gap_us: u64,
    v6: bool,
    extra: &[(&str, String)],
) -> HashMap<String, u64> {
    let sock = UdpSocket::bind(if v6 { "[::]:0" } else { "0.0.0.0:0" }).expect("bind");
    let port = sock.local_addr().expect("addr").port();
    let stop = Arc::new(AtomicBool::new(false));
    let echo = spawn_echo(sock, stop.clone());
    let mut env = vec![
        (PROBE_ENV, "echo".to_string()),
        ("PROBE_PORT", port.to_string()),
        ("PROBE_COUNT", count.to_string()),
        ("PROBE_GAP_US", gap_us.to_string()),
        ("PROBE_FAMILY", if v6 { "6" } else { "4" }.to_string()),
    ];
    env.extend(extra.iter().cloned());
    let out = run_shells(shell, &env);
    stop.store(true, Ordering::Relaxed);
    let _ = echo.join();
    results(&out)
}

/// `mm-delay 20` adds 20 ms ± 1 ms each way: the median RTT of small echoes is within
/// [40, 42] ms (no propagation delay of its own here); over IPv6 as well.
fn check_delay_20ms(v6: bool) {
    let r = echo_through_env(&argv(&[&bin("mm-delay"), "20"]), 150, 10_000, v6, &[]);
    println!("mm-delay 20 (IPv{}): {r:?}", if v6 { 6 } else { 4 });
    assert_eq!(r["received"], r["sent"], "mm-delay must not lose packets");
    let (median, min) = (r["median_us"], r["min_us"]);
    assert!(min >= 40_000, "RTT {min} us is below 2 x 20 ms");
    assert!((40_000..=42_000).contains(&median), "median RTT {median} us not within 40..42 ms");
}

both_families!(delay_adds_fixed_latency, delay_adds_fixed_latency_ipv6, check_delay_20ms);

/// `mm-loss downlink 0.1` drops replies independently with p = 0.1: the loss count is
/// within 4.5 standard deviations of the binomial mean.
#[test]
fn loss_downlink_rate_is_binomial() {
    if !can_run("loss_downlink_rate_is_binomial") {
        return;
    }
    let n = 3000u64;
    let r = echo_through(&argv(&[&bin("mm-loss"), "downlink", "0.1"]), n, 300);
    let lost = r["sent"] - r["received"];
    let (mean, sd) = (n as f64 * 0.1, (n as f64 * 0.1 * 0.9).sqrt());
    println!("mm-loss downlink 0.1: lost {lost} of {n} (mean {mean}, sd {sd:.1})");
    assert!((lost as f64 - mean).abs() <= 4.5 * sd, "lost {lost} of {n}, expected {mean} ± {:.0}", 4.5 * sd);
}

/// Nesting: `mm-delay 5 mm-loss uplink 0 mm-delay 5` reaches the outermost host side
/// through both namespaces; the delays add up. Over IPv6, the inner shell's IPv6 routes
/// in the enclosing namespaces and IPv6 forwarding in the middle one carry the echoes.
fn check_nested_chain(v6: bool) {
    let shell = argv(&[&bin("mm-delay"), "5", &bin("mm-loss"), "uplink", "0", &bin("mm-delay"), "5"]);
    let r = echo_through_env(&shell, 60, 10_000, v6, &[]);
    println!("nested (IPv{}): {r:?}", if v6 { 6 } else { 4 });
    assert_eq!(r["received"], r["sent"]);
    assert!((20_000..=23_000).contains(&r["median_us"]), "nested RTT {} us, expected ~20 ms", r["median_us"]);
}

both_families!(nested_shells_compose, nested_shells_compose_ipv6, check_nested_chain);

/// Two paths with 12 and 6 Mbit/s traces: a process sending from each interface's
/// address gets each path's own rate.
#[test]
fn mpshell_paths_have_their_own_rates() {
    if !can_run("mpshell_paths_have_their_own_rates") {
        return;
    }
    let fast = data("12mbps.trace");
    let slow = data("6mbps.trace");
    let (f, s) = (fast.to_str().expect("utf8"), slow.to_str().expect("utf8"));
    let sock = UdpSocket::bind("0.0.0.0:0").expect("bind");
    let port = sock.local_addr().expect("addr").port();
    let stop = Arc::new(AtomicBool::new(false));
    let rx = spawn_receiver(sock, stop.clone());
    let shell = argv(&[
        &bin("mpquic-mpshell"),
        "--path",
        &format!("fast,{f},{f},2"),
        "--path",
        &format!("slow,{s},{s},2"),
        "--",
    ]);
    let out = run_shells(
        &shell,
        &[
            (PROBE_ENV, "send".into()),
            ("PROBE_PORT", port.to_string()),
            ("PROBE_FLOWS", "0:1400,1:800".into()),
            ("PROBE_MS", "5000".into()),
        ],
    );
    stop.store(true, Ordering::Relaxed);
    let seen = rx.join().expect("receiver");
    let epoch = results(&out)["epoch_ns"];
    // Delay 2 ms: count what left the bottleneck in [1000, 5000) ms.
    let (from, to) = (1002u64, 5002u64);
    let mut per_source: HashMap<IpAddr, u64> = HashMap::new();
    for (ns, src) in &seen {
        let ms = ns.saturating_sub(epoch) / 1_000_000;
        if ms >= from && ms < to {
            *per_source.entry(*src).or_default() += 1;
        }
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let addr_of = |i: usize| -> IpAddr {
        stderr
            .lines()
            .find(|l| l.starts_with(&format!("mpshell: path {i} ")))
            .and_then(|l| l.split_whitespace().nth(4))
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address for path {i} in {stderr}"))
    };
    let fast_got = per_source.get(&addr_of(0)).copied().unwrap_or(0);
    let slow_got = per_source.get(&addr_of(1)).copied().unwrap_or(0);
    assert_within("mpshell path 0 (12 Mbit/s)", fast_got, 4000, 0.03);
    assert_within("mpshell path 1 (6 Mbit/s)", slow_got, 2000, 0.03);
}

/// Scenario mode: the committed `testbed-2x100` scenario (25 ms one-way, 100 Mbit/s);
/// echoes from path 1's address travel path 1 both ways and see its delay.
#[test]
fn mpshell_scenario_path_delay() {
    if !can_run("mpshell_scenario_path_delay") {
        return;
    }
    let scenario = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces/testbed-2x100.toml");
    let shell = argv(&[&bin("mpquic-mpshell"), "--scenario", scenario.to_str().expect("utf8"), "--"]);
    let r = echo_through_env(&shell, 40, 10_000, false, &[("PROBE_BIND_INDEX", "1".into())]);
    println!("scenario path 1: {r:?}");
    assert_eq!(r["received"], r["sent"]);
    assert!((50_000..=55_000).contains(&r["median_us"]), "RTT {} us, expected ~50 ms", r["median_us"]);
}

/// IPv6 source-address routing in `mpquic-mpshell`: echoes from path 1's IPv6
/// address travel path 1 (25 ms each way) both ways, not path 0 (5 ms), which carries
/// the default route.
#[test]
fn mpshell_ipv6_source_address_picks_the_path() {
    if !can_run_v6("mpshell_ipv6_source_address_picks_the_path") {
        return;
    }
    let t = data("12mbps.trace");
    let t = t.to_str().expect("utf8");
    let shell = argv(&[
        &bin("mpquic-mpshell"),
        "--path",
        &format!("near,{t},{t},5"),
        "--path",
        &format!("far,{t},{t},25"),
        "--",
    ]);
    let r = echo_through_env(&shell, 40, 10_000, true, &[("PROBE_BIND_INDEX", "1".into())]);
    println!("mpshell path 1 over IPv6: {r:?}");
    assert_eq!(r["received"], r["sent"]);
    // The quickest echo tells the route (30 ms if either way took path 0); the median
    // would also measure a loaded machine's scheduling delays.
    assert!((50_000..=55_000).contains(&r["min_us"]), "RTT {} us, expected ~50 ms", r["min_us"]);
}

/// Receives the `ecn` probe's datagrams with their ECN codepoints until `stop`.
fn spawn_ecn_receiver(
    sock: UdpSocket,
    v6: bool,
    stop: Arc<AtomicBool>,
) -> thread::JoinHandle<HashMap<u64, Ecn>> {
    assert!(batch::enable_ecn_recv(&sock, v6), "the kernel does not report TOS / traffic class");
    sock.set_read_timeout(Some(Duration::from_millis(50))).ok();
    thread::spawn(move || {
        let mut got = HashMap::new();
        let mut buf = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            if let Ok(r) = batch::recv(&sock, &mut buf) {
                if let Some(seq) = buf.get(..8).filter(|_| r.len >= 8) {
                    got.insert(u64::from_be_bytes(seq.try_into().unwrap_or_default()), r.ecn);
                }
            }
        }
        got
    })
}

/// Per sent codepoint: sent, arrived unchanged, arrived marked CE, lost.
#[derive(Debug, Default, Clone, Copy)]
struct Fate {
    sent: u64,
    kept: u64,
    marked: u64,
    lost: u64,
}

/// Tallies what became of datagrams `0..sent`; panics on any arrival with a codepoint
/// other than the one sent or, for ECT(0) / ECT(1), CE.
fn ecn_fates(sent: u64, got: &HashMap<u64, Ecn>) -> [Fate; 4] {
    let mut fates = [Fate::default(); 4];
    for seq in 0..sent {
        let want = codepoint(seq);
        let f = &mut fates[(seq % 4) as usize];
        f.sent += 1;
        match got.get(&seq) {
            None => f.lost += 1,
            Some(&e) if e == want => f.kept += 1,
            Some(&Ecn::Ce) if matches!(want, Ecn::Ect0 | Ecn::Ect1) => f.marked += 1,
            Some(e) => panic!("datagram {seq} sent {want:?} arrived {e:?}"),
        }
    }
    fates
}

/// The IP ECN bits through a shell whose uplink is a CoDel queue with `ecn=1`, loaded
/// at 1.2 times its 12 Mbit/s for 3 s: every codepoint crosses as sent, except that
/// CoDel marks ECT(0) and ECT(1) packets CE where it drops Not-ECT ones; CE stays CE.
/// The 1000-packet limit is never reached (the queue grows by 200 packets a second),
/// so the queue loses no ECN-capable packet.
fn check_codel_ecn_on_the_wire(v6: bool) {
    let t = data("12mbps.trace");
    let t = t.to_str().expect("utf8");
    let sock = UdpSocket::bind(if v6 { "[::]:0" } else { "0.0.0.0:0" }).expect("bind");
    let port = sock.local_addr().expect("addr").port();
    let stop = Arc::new(AtomicBool::new(false));
    let rx = spawn_ecn_receiver(sock, v6, stop.clone());
    let shell = argv(&[
        &bin("mm-link"),
        t,
        t,
        "--uplink-queue=codel",
        "--uplink-queue-args=packets=1000,target=2,interval=20,ecn=1",
        "--",
    ]);
    let family = if v6 { "6" } else { "4" };
    let out = run_shells(
        &shell,
        &[(PROBE_ENV, "ecn".into()), ("PROBE_PORT", port.to_string()), ("PROBE_FAMILY", family.into())],
    );
    stop.store(true, Ordering::Relaxed);
    let got = rx.join().expect("receiver");
    let [not_ect, ect0, ect1, ce] = ecn_fates(results(&out)["sent"], &got);
    println!(
        "IPv{family} through CoDel-ECN: Not-ECT {not_ect:?}, ECT(0) {ect0:?}, ECT(1) {ect1:?}, CE {ce:?}"
    );
    assert!(ect0.marked > 0 && ect1.marked > 0, "CoDel marked nothing");
    assert_eq!((not_ect.marked, ce.marked), (0, 0));
    // CoDel never drops an ECN-capable packet here; the host may, when the loaded
    // machine starves the loop or the receiver (seen: 4 of 2700), hence a 1% allowance.
    let ect_lost = ect0.lost + ect1.lost + ce.lost;
    assert!(ect_lost * 100 <= ect0.sent + ect1.sent + ce.sent, "ECN-capable packets lost: {ect_lost}");
    assert!(not_ect.lost >= 100 && not_ect.lost >= 10 * ect_lost, "CoDel dropped too few Not-ECT packets");
}

both_families!(codel_ecn_on_the_wire, codel_ecn_on_the_wire_ipv6, check_codel_ecn_on_the_wire);

/// `--once`: the shell ends when the traces have played once (here 500 ms), even if
/// the command would run longer, with status 0.
#[test]
fn link_once_ends_with_the_trace() {
    if !can_run("link_once_ends_with_the_trace") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("mpquic-shells-once-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let trace = dir.join("half-second.trace");
    std::fs::write(&trace, "1\n500\n").expect("write");
    let t = trace.to_str().expect("utf8");
    let start = Instant::now();
    let out = Command::new(bin("mm-link")).args([t, t, "--once", "sleep", "10"]).output().expect("run");
    let took = start.elapsed();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(5),
        "--once shell took {took:?}"
    );
}

/// Usage errors exit with status 2 before touching the system (no root needed).
#[test]
fn usage_errors_exit_2() {
    for (b, args) in [
        ("mm-delay", vec!["x"]),
        ("mm-loss", vec!["sideways", "0.1"]),
        ("mm-link", vec!["only-one-trace"]),
        ("mpquic-mpshell", vec!["--", "true"]),
    ] {
        let out = Command::new(bin(b)).args(&args).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{b} {args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("Usage:"));
    }
}
