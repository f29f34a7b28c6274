//! `mpquic-mpshell --backend mahimahi` driving Mahimahi-command-compatible shells: this
//! crate's own `mm-delay`/`mm-link` are put first on `PATH` as the "Mahimahi on PATH".
//! Real Mahimahi could not be installed on the development machine, so this is the
//! check that the runner builds the per-path chains, finds each shell's namespace and
//! lets the command use each path at that path's trace rate.
//!
//! The command is this test binary again (`mm_probe`, `MPQUIC_MM_PROBE` set): it opens
//! one socket per path inside `MPSHELL_NETNS_i`, bound to `MPSHELL_ADDR_i`, and sends
//! paced full-size datagrams to `MPSHELL_PEER_i` above the path's capacity; a receiver
//! in the test's own namespace counts arrivals per path. Skips without root/netns.

// Real-time measurement: reading the clock is the point here.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use shells::netns::NetNs;

const PROBE_ENV: &str = "MPQUIC_MM_PROBE";
/// UDP payload making a 1500-byte IP packet: exactly one 1504-byte opportunity.
const FULL_PAYLOAD: usize = 1472;
const SEND_FOR: Duration = Duration::from_secs(5);

fn data(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name).to_string_lossy().into_owned()
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

/// The program run by the runner (a no-op in a normal test run): one paced sender per
/// path, each socket created inside its path's namespace.
#[test]
fn mm_probe() {
    let Ok(port) = std::env::var(PROBE_ENV) else {
        return;
    };
    let port: u16 = port.parse().expect("port");
    let n: usize = env("MPSHELL_PATHS").parse().expect("MPSHELL_PATHS");
    let pps: Vec<u64> = env("PROBE_PPS").split(',').map(|v| v.parse().expect("pps")).collect();
    let home = NetNs::current().expect("own namespace");
    let mut senders = Vec::new();
    for (i, &pps) in pps.iter().enumerate().take(n) {
        let ns = NetNs::open(Path::new(&env(&format!("MPSHELL_NETNS_{i}")))).expect("path namespace");
        let addr: IpAddr = env(&format!("MPSHELL_ADDR_{i}")).parse().expect("addr");
        let peer: IpAddr = env(&format!("MPSHELL_PEER_{i}")).parse().expect("peer");
        ns.enter().expect("setns");
        let sock = UdpSocket::bind(SocketAddr::new(addr, 0));
        home.enter().expect("setns back");
        let sock = sock.expect("bind in the path's namespace");
        println!("RESULT path{i}={}", sock.local_addr().expect("local"));
        senders.push(thread::spawn(move || {
            let to = SocketAddr::new(peer, port);
            let payload = vec![0x5au8; FULL_PAYLOAD];
            let start = Instant::now();
            let mut sent = 0u64;
            while start.elapsed() < SEND_FOR {
                let due = (start.elapsed().as_secs_f64() * pps as f64) as u64;
                while sent < due {
                    let _ = sock.send_to(&payload, to);
                    sent += 1;
                }
                thread::sleep(Duration::from_millis(1));
            }
        }));
    }
    for s in senders {
        s.join().expect("sender");
    }
}

#[test]
fn mahimahi_backend_paths_run_at_their_trace_rates() {
    if let Err(why) = shells::netns::check_privileges() {
        println!("SKIPPED mahimahi_backend_paths_run_at_their_trace_rates: {why}");
        return;
    }
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_mpquic-mpshell")).parent().expect("bin dir").to_path_buf();
    let path_var = std::env::join_paths(
        std::iter::once(bin_dir.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("PATH");
    let sock = UdpSocket::bind("0.0.0.0:0").expect("bind");
    let port = sock.local_addr().expect("addr").port();
    sock.set_read_timeout(Some(Duration::from_millis(50))).ok();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let receiver = thread::spawn(move || {
        let mut seen: Vec<(Instant, IpAddr)> = Vec::new();
        let mut buf = [0u8; 2048];
        while !stop2.load(Ordering::Relaxed) {
            if let Ok((FULL_PAYLOAD, from)) = sock.recv_from(&mut buf) {
                seen.push((Instant::now(), from.ip()));
            }
        }
        seen
    });
    let (fast, slow) = (data("12mbps.trace"), data("6mbps.trace"));
    let exe = std::env::current_exe().expect("current_exe");
    let out = Command::new(env!("CARGO_BIN_EXE_mpquic-mpshell"))
        .args(["--backend", "mahimahi"])
        .args(["--path", &format!("fast,{fast},{fast},2"), "--path", &format!("slow,{slow},{slow},2"), "--"])
        .arg(exe)
        .args(["--exact", "mm_probe", "--nocapture", "--test-threads=1"])
        .env("PATH", path_var)
        .env(PROBE_ENV, port.to_string())
        // 1.4 and 1.33 times the capacity: both links stay saturated.
        .env("PROBE_PPS", "1400,800")
        .env_remove("MAHIMAHI_BASE")
        .env_remove(shells::shell::EPOCH_ENV)
        .env_remove(shells::netns::CHAIN_ENV)
        .output()
        .expect("run mpquic-mpshell");
    // The queues drain after the senders stop; the window below ends before that.
    thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let seen = receiver.join().expect("receiver");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "runner failed: {}\nstdout: {stdout}\nstderr: {stderr}", out.status);
    // The runner reports a real Mahimahi-style chain per path, each in its namespace.
    assert!(stderr.contains("[mm-delay 2 mm-link"), "{stderr}");
    let src = |i: usize| -> IpAddr {
        stdout
            .lines()
            .find_map(|l| l.split_once(&format!("RESULT path{i}=")).map(|(_, a)| a.trim().to_string()))
            .and_then(|a| a.parse::<SocketAddr>().ok())
            .map(|a| a.ip())
            .unwrap_or_else(|| panic!("no address for path {i}: {stdout}"))
    };
    let (a0, a1) = (src(0), src(1));
    assert_ne!(a0, a1);
    // Per path: arrivals in [1 s, 4 s) after its first one (saturated throughout).
    let mut first: HashMap<IpAddr, Instant> = HashMap::new();
    for (t, ip) in &seen {
        first.entry(*ip).or_insert(*t);
    }
    let count = |ip: IpAddr| -> u64 {
        let Some(&t0) = first.get(&ip) else { return 0 };
        seen.iter()
            .filter(|(t, a)| {
                *a == ip && *t >= t0 + Duration::from_secs(1) && *t < t0 + Duration::from_secs(4)
            })
            .count() as u64
    };
    let (got0, got1) = (count(a0), count(a1));
    println!(
        "mahimahi backend, 3 s windows: path 0 {got0} packets (trace: 3000), path 1 {got1} (trace: 1500)"
    );
    for (what, got, want) in [("path 0 (12 Mbit/s)", got0, 3000u64), ("path 1 (6 Mbit/s)", got1, 1500)] {
        let err = (got as f64 - want as f64).abs() / want as f64;
        assert!(err <= 0.03, "{what}: {got} packets, trace allows {want} ({:.1}% off)", err * 100.0);
    }
}
