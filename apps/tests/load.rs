//! Load: mpquic-load opens 200 concurrent connections to one mpquic-server,
//! each downloading 1 MB, every body checked byte for byte (the benchmark
//! script runs the full 1,000).

#![allow(clippy::disallowed_methods)]

mod common;

use std::process::Command;

use common::*;

#[test]
fn two_hundred_concurrent_downloads_all_byte_exact() {
    let dir = tempdir("load");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let data = content(1 << 20, 5);
    std::fs::write(root.join("f.bin"), &data).unwrap();
    let srv = ServerProc::start(&root, &[]);
    let out = Command::new(env!("CARGO_BIN_EXE_mpquic-load"))
        .arg(srv.url("/f.bin"))
        .args(["--connections", "200", "--insecure", "--json", "--check"])
        .arg(root.join("f.bin"))
        .output()
        .expect("run mpquic-load");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    eprintln!("{j}");
    assert_eq!(out.status.code(), Some(0), "{j}");
    assert_eq!(j["completed"], 200);
    assert_eq!(j["bytes"], 200 << 20);
    assert!(j["failures"].as_object().unwrap().is_empty());
    // One access-log line per request.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let log = std::fs::read_to_string(&srv.access_log).unwrap();
    assert_eq!(log.lines().filter(|l| l.contains("\"GET /f.bin HTTP/3\" 200 1048576")).count(), 200);
}

#[test]
fn load_generator_reports_failures_by_cause() {
    let dir = tempdir("load404");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let srv = ServerProc::start(&root, &[]);
    let out = Command::new(env!("CARGO_BIN_EXE_mpquic-load"))
        .arg(srv.url("/missing-{i}"))
        .args(["--connections", "5", "--insecure"])
        .output()
        .expect("run mpquic-load");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(6), "{text}");
    assert!(text.contains("0 of 5 downloads completed"), "{text}");
    assert!(text.contains("failed: 5 x HTTP 404"), "{text}");
    let bad = Command::new(env!("CARGO_BIN_EXE_mpquic-load"))
        .args(["nope", "--connections", "0"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
