//! Targets of issue 15 not reached yet, kept as ignored tests with the
//! figures measured (run with `--ignored`; they need an otherwise idle
//! machine to mean anything).

#![allow(clippy::disallowed_methods)]

mod common;

use common::*;

/// A served directory holding one file of `len` bytes.
/// A test's directory, removed when the test ends, passed or failed: these
/// tests write a 1 GiB body and its download (runs by hand left 69 GB in
/// /tmp and filled the disk).
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn root_with(tag: &str, name: &str, len: usize) -> (Scratch, std::path::PathBuf) {
    let dir = tempdir(tag);
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join(name), content(len, 3)).unwrap();
    (Scratch(dir), root)
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
#[ignore = "measured (session 17, after the refill fix): passes 2 of 4 runs; the other two 1.68-1.76 Gbit/s on two paths (rr) against 1.97-2.14 on one (0.82-0.85x); to /dev/null, alternating builds: 2.65-2.75 against 2.92-3.17 (0.86-0.94x)"]
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
#[ignore = "measured: 500 concurrent 1 MiB downloads peak at 81-147 MB server RSS (median ~100; 17 of 18 runs under the 125 MiB bound; 151 MB in the one run of session 19): what remains is data in flight (the send buffers, 45 MB of an 88 MB heap peak); was 335-351 MB at the start of session 17 (the serving loop read the clock per poll) and 122-130 MB before that"]
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
