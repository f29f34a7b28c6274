//! Speed and memory targets of issue 15, kept as ignored tests with the
//! figures measured: the memory bound is not reached yet; the speed one is,
//! but a speed figure is no test for CI (run with `--ignored`, on an
//! otherwise idle machine).

#![allow(clippy::disallowed_methods)]

mod common;

use common::*;

/// A served directory holding one file of `len` bytes (the directory goes
/// when the guard is dropped).
fn root_with(tag: &str, name: &str, len: usize) -> (TempDir, std::path::PathBuf) {
    let dir = tempdir(tag);
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join(name), content(len, 3)).unwrap();
    (dir, root)
}

fn goodput_mbps(srv: &ServerProc, out: &std::path::Path, locals: &[&str]) -> f64 {
    let mut args = vec![srv.url("/big.bin"), "--insecure".into(), "--json".into(), "-o".into()];
    args.push(out.to_str().unwrap().into());
    for l in locals {
        args.push("--local".into());
        args.push((*l).into());
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = client(&refs);
    assert_eq!(r.status.code(), Some(0));
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    j["transfer_goodput_mbps"].as_f64().unwrap()
}

#[test]
#[ignore = "a speed figure, run by hand (ci/bench-sockets.sh prints it): met in 4 of 4 runs (target: two paths at least 0.9x one), two paths 3.7-6.0 Gbit/s against one 2.2-3.5 to a file; to /dev/null, 3 runs each: 5.0-6.1 against 5.2-7.1 (medians 1.07x)"]
fn two_loopback_paths_reach_nine_tenths_of_one() {
    let (_scratch, root) = root_with("targets", "big.bin", 1 << 30);
    let srv = ServerProc::start(&root, &["--scheduler", "rr"]);
    let out = root.with_extension("out");
    let one = goodput_mbps(&srv, &out, &["127.0.0.1"]);
    let two = goodput_mbps(&srv, &out, &["127.0.0.1", "127.0.0.2"]);
    eprintln!("1 GiB over loopback: two paths {two:.0} Mbit/s, one path {one:.0} ({:.2}x)", two / one);
    assert!(two >= 0.9 * one, "two paths {two:.0} Mbit/s, one path {one:.0}");
}

#[test]
#[ignore = "measured: 500 concurrent 1 MiB downloads peak at 81-151 MB server RSS against a 125 MiB bound (256 KiB each): 83-150 MB in 19 runs, 16 under the bound, 12 of 12 on an idle machine (83-120); glibc settings, a fixed mmap threshold or one arena with trimming, 93-124 MB: no material change; what remains is data in flight (the send buffers, 45 MB of an 88 MB heap peak)"]
fn active_connections_stay_under_256_kib_each() {
    let (_scratch, root) = root_with("targets-mem", "f.bin", 1 << 20);
    let srv = ServerProc::start(&root, &[]);
    let r = std::process::Command::new(env!("CARGO_BIN_EXE_mpquic-load"))
        .arg(srv.url("/f.bin"))
        .args(["--connections", "500", "--insecure"])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0));
    let status = std::fs::read_to_string(format!("/proc/{}/status", srv.child.id())).unwrap();
    let hwm: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    eprintln!("server peak RSS {hwm} kB for 500 concurrent 1 MiB downloads");
    assert!(hwm < 500 * 256, "peak RSS {hwm} kB for 500 connections");
}
