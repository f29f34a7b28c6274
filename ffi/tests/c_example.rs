//! Builds the C example (ffi/examples, with make, against libmpquic.a) and
//! downloads a file with it from the mpquic-server binary over two local
//! addresses (multipath), comparing the bytes; then runs it once under
//! valgrind and requires no leaks and no invalid accesses.
//!
//! libmpquic.a and mpquic-server are built first with a nested `cargo
//! build` in this test's own target directory and profile (cargo has
//! released its build lock by the time tests run; with everything built
//! already it is a no-op).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

mod support;
use support::{build_lib_and_apps, profile_dir, root};

/// Build the example once (tests may run in parallel); returns its path.
fn example() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = build_lib_and_apps(&["mpquic-server"]);
            let out = Command::new("make")
                .arg("-C")
                .arg(root().join("ffi/examples"))
                .arg("NO_CARGO=1")
                .arg(format!("LIBDIR={}", dir.display()))
                .arg("-B")
                .output()
                .expect("run make");
            assert!(
                out.status.success(),
                "make failed:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            root().join("ffi/examples/h3_client")
        })
        .clone()
}

/// A file of `len` deterministic pseudo-random bytes in a fresh directory.
fn content(tag: &str, len: usize) -> (PathBuf, Vec<u8>) {
    let dir = std::env::temp_dir().join(format!("mpquic-ffi-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let body: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(dir.join("blob.bin"), &body).expect("write content");
    (dir, body)
}

/// The mpquic-server binary serving `dir` on a kernel-chosen port.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(dir: &Path) -> Server {
        let bin = profile_dir().join("mpquic-server");
        assert!(bin.exists(), "{} missing", bin.display());
        let certs = root().join("tests/certs");
        let mut child = Command::new(bin)
            .args(["--listen", "127.0.0.1:0", "--root"])
            .arg(dir)
            .arg("--cert")
            .arg(certs.join("cert.pem"))
            .arg("--key")
            .arg(certs.join("key.pem"))
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("start mpquic-server");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let addr = first
            .split_whitespace()
            .find(|w| w.starts_with("127.0.0.1:"))
            .map(|w| w.trim_end_matches(',').to_string())
            .unwrap_or_else(|| panic!("no listening address in {first:?}"));
        // Keep draining the access log so the server never blocks on it.
        std::thread::spawn(move || lines.for_each(drop));
        Server { child, addr }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client_args(server: &Server, out: &Path) -> Vec<String> {
    let ca = root().join("tests/certs/rootca.pem");
    vec![
        "-A".into(),
        ca.display().to_string(),
        "-l".into(),
        "127.0.0.1:0".into(),
        "-l".into(),
        "127.0.0.2:0".into(),
        "-t".into(),
        "120".into(),
        "-o".into(),
        out.display().to_string(),
        format!("https://{}/blob.bin", server.addr),
    ]
}

#[test]
fn c_client_downloads_over_two_paths() {
    let client = example();
    let (dir, body) = content("dl", 3 << 20);
    let server = Server::start(&dir);
    let out_file = dir.join("downloaded");
    let out = Command::new(&client).args(client_args(&server, &out_file)).output().expect("run h3_client");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "h3_client failed:\n{log}");
    let got = std::fs::read(&out_file).expect("downloaded file");
    assert_eq!(got.len(), body.len(), "{log}");
    assert!(got == body, "downloaded bytes differ\n{log}");
    // Per-path statistics for both paths, and both carried data.
    for id in ["path 0 ", "path 1 "] {
        let line =
            log.lines().find(|l| l.starts_with(id)).unwrap_or_else(|| panic!("no `{id}` stats:\n{log}"));
        assert!(!line.contains("recv 0 pkts"), "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn c_client_is_clean_under_valgrind() {
    if Command::new("valgrind").arg("--version").output().is_err() {
        panic!("valgrind not installed (ci/setup.sh installs it)");
    }
    let client = example();
    let (dir, body) = content("vg", 256 << 10);
    let server = Server::start(&dir);
    let out_file = dir.join("downloaded");
    let out = Command::new("valgrind")
        .args([
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect",
            "--show-leak-kinds=definite,indirect",
        ])
        .arg(&client)
        .args(client_args(&server, &out_file))
        .output()
        .expect("run valgrind");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "valgrind reported errors or the download failed:\n{log}");
    assert!(log.contains("ERROR SUMMARY: 0 errors"), "{log}");
    assert_eq!(std::fs::read(&out_file).expect("downloaded file"), body);
    let _ = std::fs::remove_dir_all(&dir);
}
