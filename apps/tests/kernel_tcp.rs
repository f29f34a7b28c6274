//! `mpquic-tcp` over loopback: byte-exact downloads over kernel TCP and MPTCP,
//! the JSON summary, and the errors (unknown controller, bad arguments, no
//! server, a server gone mid-transfer).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_mpquic-tcp");

/// A running `mpquic-tcp server`; killed on drop.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let mut child = Command::new(BIN)
            .args(["server", "--listen", &addr])
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mpquic-tcp server");
        let mut first = String::new();
        BufReader::new(child.stderr.take().unwrap()).read_line(&mut first).unwrap();
        assert!(first.contains("serving"), "server said: {first}");
        Server { child, addr }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client(args: &[&str]) -> Output {
    let out = Command::new(BIN).arg("client").args(args).output().expect("run mpquic-tcp client");
    eprintln!("[client] exit {:?}\n{}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    out
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "client failed");
    serde_json::from_slice(&out.stdout).expect("JSON summary")
}

fn mptcp_enabled() -> bool {
    std::fs::read_to_string("/proc/sys/net/mptcp/enabled").is_ok_and(|s| s.trim() == "1")
}

#[test]
fn tcp_download_is_byte_exact_with_the_asked_controller() {
    let s = Server::start(&["--cc", "reno"]);
    let j = json(&client(&[&s.addr, "--bytes", "20000000", "--cc", "reno", "--json"]));
    assert_eq!(j["bytes"], 20_000_000, "{j}");
    assert_eq!(
        (j["impl"].as_str(), j["cc"].as_str(), j["multipath"].as_bool()),
        (Some("tcp"), Some("reno"), Some(false))
    );
    let paths = j["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 1, "{j}");
    assert_eq!(paths[0]["peer"], s.addr.as_str(), "{j}");
    // Every body byte crossed this connection (the request went the other way).
    assert!(paths[0]["recv_bytes"].as_u64().unwrap() >= 20_000_000, "{j}");
    assert!(j["goodput_mbps"].as_f64().unwrap() > 0.0, "{j}");
}

#[test]
fn duration_mode_stops_after_the_time_and_checks_what_came() {
    let s = Server::start(&[]);
    let j = json(&client(&[&s.addr, "--duration", "0.5", "--json"]));
    assert!(j["time_s"].as_f64().unwrap() >= 0.5, "{j}");
    assert!(j["bytes"].as_u64().unwrap() > 0, "{j}");
}

#[test]
fn mptcp_download_over_loopback_is_multipath() {
    if !mptcp_enabled() {
        println!("SKIPPED mptcp_download_over_loopback_is_multipath: net.mptcp.enabled is not 1");
        return;
    }
    let s = Server::start(&["--mptcp", "--cc", "cubic"]);
    let j = json(&client(&[&s.addr, "--mptcp", "--bytes", "10000000", "--json"]));
    assert_eq!(j["bytes"], 10_000_000, "{j}");
    assert_eq!(
        (j["impl"].as_str(), j["multipath"].as_bool(), j["fallback"].as_bool()),
        (Some("mptcp"), Some(true), Some(false))
    );
    assert!(!j["paths"].as_array().unwrap().is_empty(), "{j}");
    assert!(j["out_of_order_bytes"].is_null(), "{j}");
}

#[test]
fn mptcp_client_falls_back_against_a_tcp_server() {
    if !mptcp_enabled() {
        println!("SKIPPED mptcp_client_falls_back_against_a_tcp_server: net.mptcp.enabled is not 1");
        return;
    }
    let s = Server::start(&[]);
    let j = json(&client(&[&s.addr, "--mptcp", "--bytes", "1000000", "--json"]));
    assert_eq!((j["multipath"].as_bool(), j["fallback"].as_bool()), (Some(false), Some(true)), "{j}");
    assert_eq!(j["bytes"], 1_000_000, "{j}");
}

#[test]
fn bad_arguments_fail_with_a_clear_message() {
    let s = Server::start(&[]);
    let out = client(&[&s.addr, "--bytes", "10", "--cc", "no-such-cc"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.contains("tcp_available_congestion_control") && err.contains("modprobe tcp_no-such-cc"),
        "{err}"
    );
    // Neither --bytes nor --duration; a non-address; a zero duration.
    for args in
        [vec![s.addr.as_str()], vec!["localhost", "--bytes", "1"], vec![s.addr.as_str(), "--duration", "0"]]
    {
        let out = client(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty());
    }
    let out = client(&[&s.addr, "--bytes", "1", "--subflow-from", "not-an-ip", "--mptcp"]);
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(BIN).args(["server", "--listen", &s.addr, "--cc", "no-such-cc"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn no_server_and_a_server_gone_are_errors_not_panics() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = client(&[&format!("127.0.0.1:{port}"), "--bytes", "10", "--timeout", "1"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot connect"));

    let mut s = Server::start(&[]);
    let c = Command::new(BIN)
        .args(["client", &s.addr, "--bytes", "100000000000", "--timeout", "2"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let the download start, then take the server away.
    std::thread::sleep(std::time::Duration::from_millis(300));
    s.child.kill().unwrap();
    let out = c.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(err.contains("of 100000000000 bytes") || err.contains("connection failed"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
