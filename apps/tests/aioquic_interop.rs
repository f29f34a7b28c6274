//! An aioquic (PyPI) HTTP/3 client downloads 24 MB from the mpquic-server
//! binary. The aioquic venv comes from ci/setup.sh
//! ($MPQUIC_VENV, default ~/.cache/mpquic/venv); the test is skipped only
//! when python3 is missing altogether.

mod common;

use std::path::PathBuf;
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

#[test]
fn aioquic_client_downloads_from_mpquic_server() {
    let Some(py) = python() else {
        eprintln!("SKIPPED: python3 not found; install it and run ci/setup.sh for the aioquic interop test");
        return;
    };
    let has = Command::new(&py).args(["-c", "import aioquic"]).output().is_ok_and(|o| o.status.success());
    assert!(
        has,
        "{} cannot import aioquic: run ci/setup.sh (pip install aioquic into the venv)",
        py.display()
    );
    let dir = tempdir("aioquic");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let data = content(BIG, 17);
    std::fs::write(root.join("big.bin"), &data).unwrap();
    let srv = ServerProc::start(&root, &[]);
    let out = dir.join("out.bin");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/aioquic_client.py");
    let r = Command::new(&py)
        .arg(script)
        .arg(srv.url("/big.bin"))
        .arg(&out)
        .args(["--ca", &cert("rootca.pem")])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&r.stdout);
    eprintln!("aioquic: {stdout}{}", String::from_utf8_lossy(&r.stderr));
    assert!(r.status.success());
    assert!(stdout.contains(&format!("status=200 bytes={BIG}")), "{stdout}");
    assert_eq!(sha256_file(&out), sha256(&data));
}
