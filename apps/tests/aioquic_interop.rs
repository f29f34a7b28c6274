//! An aioquic (PyPI) HTTP/3 client downloads 24 MB from the mpquic-server
//! binary. The aioquic venv comes from ci/setup.sh
//! ($MPQUIC_VENV, default ~/.cache/mpquic/venv); the test is skipped only
//! when python3 is missing altogether.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("MPQUIC_VENV")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/mpquic/venv")));
    if let Some(p) = venv.map(|v| v.join("bin/python")).filter(|p| p.exists()) {
        return Some(p);
    }
    let ok = Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success());
    ok.then(|| PathBuf::from("python3"))
}

/// The venv's python with aioquic, or `None` (test skipped) without python3.
fn aioquic_python() -> Option<PathBuf> {
    let Some(py) = python() else {
        eprintln!("SKIPPED: python3 not found; install it and run ci/setup.sh for the aioquic interop test");
        return None;
    };
    let has = Command::new(&py).args(["-c", "import aioquic"]).output().is_ok_and(|o| o.status.success());
    assert!(
        has,
        "{} cannot import aioquic: run ci/setup.sh (pip install aioquic into the venv)",
        py.display()
    );
    Some(py)
}

/// aioquic's client fetches `url` into `out`; its stdout and whether it
/// exited successfully.
fn aioquic_get(py: &Path, url: &str, out: &Path, extra: &[&str]) -> (String, bool) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/aioquic_client.py");
    let r = Command::new(py)
        .arg(script)
        .arg(url)
        .arg(out)
        .args(["--ca", &cert("rootca.pem")])
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&r.stdout).into_owned();
    eprintln!("aioquic: {stdout}{}", String::from_utf8_lossy(&r.stderr));
    (stdout, r.status.success())
}

#[test]
fn aioquic_client_downloads_from_mpquic_server() {
    let Some(py) = aioquic_python() else { return };
    let dir = tempdir("aioquic");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let data = content(BIG, 17);
    std::fs::write(root.join("big.bin"), &data).unwrap();
    let srv = ServerProc::start(&root, &[]);
    let out = dir.join("out.bin");
    let (stdout, ok) = aioquic_get(&py, &srv.url("/big.bin"), &out, &[]);
    assert!(ok);
    assert!(stdout.contains(&format!("status=200 bytes={BIG}")), "{stdout}");
    assert_eq!(sha256_file(&out), sha256(&data));
}

/// aioquic's client updates keys the moment its handshake is confirmed,
/// often before it acknowledged any 1-RTT packet of ours: a legitimate
/// first update (RFC 9001 §6.2), which the server must follow every time.
#[test]
fn aioquic_client_key_update_downloads_from_mpquic_server() {
    const RUNS: usize = 10;
    let Some(py) = aioquic_python() else { return };
    let dir = tempdir("aioquic-ku");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let data = content(1 << 20, 23);
    std::fs::write(root.join("one.bin"), &data).unwrap();
    let srv = ServerProc::start(&root, &[]);
    let mut failed = Vec::new();
    for run in 0..RUNS {
        let out = dir.join(format!("out{run}.bin"));
        let (stdout, ok) = aioquic_get(&py, &srv.url("/one.bin"), &out, &["--key-update"]);
        let complete = stdout.contains(&format!("status=200 bytes={} key_phase=1", data.len()));
        if !(ok && complete && sha256_file(&out) == sha256(&data)) {
            failed.push((run, stdout));
        }
    }
    assert!(failed.is_empty(), "{} of {RUNS} key-update downloads failed: {failed:?}", failed.len());
}
