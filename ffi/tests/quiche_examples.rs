//! quiche 0.30's four C examples (examples/client.c, server.c,
//! http3-client.c, http3-server.c from the quiche crate in cargo's registry,
//! unmodified) built against libmpquic's quiche-compatible API
//! (include/quiche.h), talking to real peers: mpquic-server and
//! mpquic-client, quiche itself (in-process, on UDP sockets), aioquic, and
//! each other. A copy of http3-client.c with a few multipath lines
//! (examples/quiche/http3-client-mp.c) downloads over two loopback paths.
//! One download runs under valgrind. Bodies are compared by SHA-256.
//!
//! libmpquic.a, mpquic-server and mpquic-client are built with a nested
//! `cargo build` in this test's target directory and profile (a no-op when
//! they are built already), the examples with make.

// Real processes on real sockets: deadlines come from the wall clock.
#![allow(clippy::disallowed_methods)]

#[path = "quiche_examples/peers.rs"]
mod peers;

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

mod support;
use support::{build_lib_and_apps, profile_dir, root};

/// Build libmpquic.a, the apps and the examples once; the examples' directory.
fn examples() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = build_lib_and_apps(&["mpquic-server", "mpquic-client"]);
            let out = dir.join("quiche-examples");
            std::fs::create_dir_all(&out).expect("examples dir");
            let make = Command::new("make")
                .arg("-C")
                .arg(root().join("ffi/examples/quiche"))
                .arg("NO_CARGO=1")
                .arg(format!("LIBDIR={}", dir.display()))
                .arg(format!("OUT={}", out.display()))
                .arg("-B")
                .output()
                .expect("run make");
            assert!(make.status.success(), "make failed:\n{}", text(&make));
            out
        })
        .clone()
}

fn text(o: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn sha256(b: &[u8]) -> String {
    Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

/// `len` bytes of printable text (the examples print bodies with printf
/// "%.*s", which stops at a NUL byte), deterministic per `seed`.
fn body(len: usize, seed: u64) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15 ^ seed;
    (0..len)
        .map(|i| {
            if i % 77 == 76 {
                return b'\n';
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b'!' + (x % 90) as u8
        })
        .collect()
}

/// A fresh directory per call: tests run in parallel, and two of them may
/// start the same example server.
fn tempdir(tag: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("mpquic-quiche-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// Run `cmd` to completion, killing it after `limit`; its output.
fn run_for(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let (mut so, mut se) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = so.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = se.read_to_end(&mut v);
        v
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output { status, stdout: out_t.join().unwrap(), stderr: err_t.join().unwrap() }
}

/// A long-running child killed on drop (a server).
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// mpquic-server serving `dir` (as /index.html for "/") with `extra`
/// arguments; its address.
fn mpquic_server(dir: &Path, extra: &[&str]) -> (Proc, String) {
    let certs = root().join("tests/certs");
    let mut child = Command::new(profile_dir().join("mpquic-server"))
        .args(extra)
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
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let addr = first
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .map(|w| w.trim_end_matches(',').to_string())
        .unwrap_or_else(|| panic!("no listening address in {first:?}"));
    std::thread::spawn(move || lines.for_each(drop));
    (Proc(child), addr)
}

/// One of the example servers (server / http3-server) on a free port of
/// 127.0.0.1, run in a directory holding the cert.crt / cert.key it loads.
fn example_server(name: &str) -> (Proc, SocketAddr) {
    let dir = tempdir(name);
    let certs = root().join("tests/certs");
    std::fs::copy(certs.join("cert.pem"), dir.join("cert.crt")).expect("cert");
    std::fs::copy(certs.join("key.pem"), dir.join("cert.key")).expect("key");
    let port = free_port();
    let child = Command::new(examples().join(name))
        .args(["127.0.0.1", &port.to_string()])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start example server");
    // Let it bind (an Initial sent earlier is retransmitted anyway).
    std::thread::sleep(Duration::from_millis(200));
    (Proc(child), SocketAddr::from(([127, 0, 0, 1], port)))
}

/// An example client (client / http3-client / http3-client-mp) run against
/// `addr` ("IP:PORT"), trusting the test CA through SSL_CERT_FILE (the
/// examples load no CA themselves; BoringSSL's default paths honour it).
fn example_client(name: &str, addr: &str, extra: &[&str], wrapper: &[&str]) -> Output {
    let (host, port) = addr.rsplit_once(':').expect("IP:PORT");
    let exe = examples().join(name);
    let mut cmd = match wrapper.split_first() {
        Some((w, rest)) => {
            let mut c = Command::new(w);
            c.args(rest).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    cmd.args([host, port]).args(extra).env("SSL_CERT_FILE", root().join("tests/certs/rootca.pem"));
    run_for(cmd, Duration::from_secs(120))
}

/// The body http3-server.c and server.c send.
const BYEZ: &[u8] = b"byez\n";

/// One test at a time: the examples' 5 s idle timeout, valgrind's 20-50x
/// slowdown and ports picked by binding then releasing do not survive ten
/// servers and clients sharing two cores (they failed about one run in
/// three in parallel).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn http3_client_downloads_from_mpquic_server() {
    let _alone = alone();
    let dir = tempdir("h3c-mpquic");
    let data = body(3 << 20, 1);
    std::fs::write(dir.join("index.html"), &data).expect("write body");
    let (_srv, addr) = mpquic_server(&dir, &[]);
    let out = example_client("http3-client", &addr, &[], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(sha256(&out.stdout), sha256(&data), "body differs ({} bytes)", out.stdout.len());
}

#[test]
fn http3_client_downloads_from_quiche_server() {
    let _alone = alone();
    let data = body(1 << 20, 2);
    examples(); // built before the server starts waiting for its client
    let (addr, t) = peers::h3_server(data.clone());
    let out = example_client("http3-client", &addr.to_string(), &[], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(sha256(&out.stdout), sha256(&data), "body differs ({} bytes)", out.stdout.len());
    t.join().expect("quiche server thread");
}

#[test]
fn http3_server_serves_mpquic_client() {
    let _alone = alone();
    let (_srv, addr) = example_server("http3-server");
    let dir = tempdir("h3s-mpquic");
    let file = dir.join("out");
    let mut cmd = Command::new(profile_dir().join("mpquic-client"));
    cmd.arg(format!("https://{addr}/"))
        .arg("--ca")
        .arg(root().join("tests/certs/rootca.pem"))
        .arg("-o")
        .arg(&file);
    let out = run_for(cmd, Duration::from_secs(60));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(sha256(&std::fs::read(&file).expect("body")), sha256(BYEZ));
}

#[test]
fn http3_server_serves_quiche_client() {
    let _alone = alone();
    let (_srv, addr) = example_server("http3-server");
    let got = peers::h3_get(addr).expect("quiche client finished the request");
    assert_eq!(sha256(&got), sha256(BYEZ));
}

#[test]
fn http3_server_serves_aioquic_client() {
    let _alone = alone();
    let venv = std::env::var_os("MPQUIC_VENV")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/mpquic/venv")))
        .expect("HOME");
    let py = venv.join("bin/python");
    assert!(py.exists(), "{} missing: run ci/setup.sh (aioquic venv)", py.display());
    let (_srv, addr) = example_server("http3-server");
    let dir = tempdir("h3s-aioquic");
    let file = dir.join("out");
    let mut cmd = Command::new(py);
    cmd.arg(root().join("apps/tests/aioquic_client.py"))
        .arg(format!("https://{addr}/"))
        .arg(&file)
        .arg("--ca")
        .arg(root().join("tests/certs/rootca.pem"));
    let out = run_for(cmd, Duration::from_secs(60));
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("status=200 bytes=5"), "{}", text(&out));
    assert_eq!(sha256(&std::fs::read(&file).expect("body")), sha256(BYEZ));
}

#[test]
fn client_and_server_examples_talk_over_libmpquic() {
    let _alone = alone();
    let (_srv, addr) = example_server("server");
    let out = example_client("client", &addr.to_string(), &[], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(sha256(&out.stdout), sha256(BYEZ), "{}", text(&out));
}

#[test]
fn client_example_downloads_from_quiche_hq_server() {
    let _alone = alone();
    // client.c reads at most 65535 bytes per wake-up and only wakes on a
    // datagram, so a larger response would stall it (with quiche too).
    let data = body(60_000, 3);
    examples(); // built before the server starts waiting for its client
    let (addr, t) = peers::hq_server(data.clone());
    let out = example_client("client", &addr.to_string(), &[], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        sha256(&out.stdout),
        sha256(&data),
        "body differs ({} bytes): {}",
        out.stdout.len(),
        text(&out)
    );
    t.join().expect("quiche server thread");
}

#[test]
fn server_example_answers_quiche_hq_client() {
    let _alone = alone();
    let (_srv, addr) = example_server("server");
    let got = peers::hq_get(addr, b"GET /index.html\r\n").expect("quiche client got the response");
    assert_eq!(sha256(&got), sha256(BYEZ));
}

/// Per-path received bytes from the multipath example's stderr lines
/// "path N recv_bytes=B ...".
fn path_bytes(log: &str) -> Vec<(u64, u64)> {
    log.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("path ")?;
            let mut w = rest.split_whitespace();
            let id = w.next()?.parse().ok()?;
            let b = w.next()?.strip_prefix("recv_bytes=")?.parse().ok()?;
            Some((id, b))
        })
        .collect()
}

#[test]
fn multipath_variant_downloads_over_two_paths() {
    let _alone = alone();
    let dir = tempdir("h3c-mp");
    let data = body(8 << 20, 4);
    std::fs::write(dir.join("index.html"), &data).expect("write body");
    // Round-robin: on two loopback paths of equal RTT, minRTT fills the
    // first and uses the second only when the first is window-limited,
    // which a server keeping little unsent data rarely is.
    let (_srv, addr) = mpquic_server(&dir, &["--scheduler", "rr"]);
    let out = example_client("http3-client-mp", &addr, &["127.0.0.2"], &[]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert_eq!(sha256(&out.stdout), sha256(&data), "body differs ({} bytes)", out.stdout.len());
    let paths = path_bytes(&log);
    assert_eq!(paths.len(), 2, "two paths expected: {paths:?}");
    // Both carried a real share of the body, not just path probes.
    for (id, b) in &paths {
        assert!(*b > (data.len() / 10) as u64, "path {id} received only {b} bytes: {paths:?}");
    }
}

#[test]
fn http3_client_is_clean_under_valgrind() {
    let _alone = alone();
    assert!(
        Command::new("valgrind").arg("--version").output().is_ok(),
        "valgrind not installed (ci/setup.sh installs it)"
    );
    let dir = tempdir("h3c-vg");
    let data = body(256 << 10, 5);
    std::fs::write(dir.join("index.html"), &data).expect("write body");
    let (_srv, addr) = mpquic_server(&dir, &[]);
    let vg = [
        "valgrind",
        "--error-exitcode=99",
        "--leak-check=full",
        "--errors-for-leak-kinds=definite,indirect",
        "--show-leak-kinds=definite,indirect",
    ];
    let out = example_client("http3-client", &addr, &[], &vg);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "valgrind reported errors or the download failed:\n{log}");
    assert!(log.contains("ERROR SUMMARY: 0 errors"), "{log}");
    assert_eq!(sha256(&out.stdout), sha256(&data));
}
