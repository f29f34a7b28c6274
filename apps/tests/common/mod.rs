//! Helpers shared by the apps' integration tests: test files with known
//! SHA-256, the server binary on a free loopback port, and certificates.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// Size of the interop downloads (the issue asks for at least 20 MB).
pub const BIG: usize = 24 << 20;

pub fn certs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/certs")
}

pub fn cert(name: &str) -> String {
    certs().join(name).to_string_lossy().into_owned()
}

/// A fresh directory under the system temp dir, removed when the guard is
/// dropped, passed or failed (tests write up to 1 GiB here; left behind,
/// every run of the suite kept ~800 MB).
pub fn tempdir(tag: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("mpquic-apps-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Deterministic pseudo-random bytes (xorshift), so the content is not
/// compressible or periodic.
pub fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

pub fn sha256(data: &[u8]) -> String {
    Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256_file(p: &Path) -> String {
    sha256(&std::fs::read(p).unwrap_or_default())
}

/// A UDP port free right now on 127.0.0.1.
pub fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running `mpquic-server`; killed (SIGKILL) on drop if still running.
pub struct ServerProc {
    pub child: Child,
    pub addr: SocketAddr,
    pub root: PathBuf,
    pub access_log: PathBuf,
    /// Its stderr lines after the first.
    pub log: std::sync::mpsc::Receiver<String>,
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ServerProc {
    /// Start the server binary serving `root` with `extra` arguments, and
    /// wait until it is listening.
    pub fn start(root: &Path, extra: &[&str]) -> ServerProc {
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let access_log = root.with_extension("access.log");
        let mut child = Command::new(env!("CARGO_BIN_EXE_mpquic-server"))
            .args(["--listen", &addr.to_string(), "--root"])
            .arg(root)
            .args(["--cert", &cert("cert.pem"), "--key", &cert("key.pem"), "--access-log"])
            .arg(&access_log)
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mpquic-server");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stderr);
            let mut line = String::new();
            while r.read_line(&mut line).unwrap_or(0) > 0 {
                eprint!("[server] {line}");
                let _ = tx.send(line.clone());
                line.clear();
            }
        });
        let first = rx.recv_timeout(Duration::from_secs(20)).expect("server did not start");
        assert!(first.contains("serving"), "server said: {first}");
        ServerProc { child, addr, root: root.to_path_buf(), access_log, log: rx }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }
}

/// Run the client binary with `args`.
pub fn client(args: &[&str]) -> Output {
    let out =
        Command::new(env!("CARGO_BIN_EXE_mpquic-client")).args(args).output().expect("run mpquic-client");
    eprintln!("[client] exit {:?}\n{}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    out
}
