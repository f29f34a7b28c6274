//! mpquic-client ↔ mpquic-server over loopback, and the CLIs' error paths.

#![allow(clippy::disallowed_methods)]

mod common;

use common::*;

/// A served directory with big.bin and small.txt, its guard and big.bin's hash.
fn served(tag: &str) -> (TempDir, std::path::PathBuf, String) {
    let dir = tempdir(tag);
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let data = content(BIG, 7);
    std::fs::write(root.join("big.bin"), &data).unwrap();
    std::fs::write(root.join("small.txt"), b"hello\n").unwrap();
    (dir, root, sha256(&data))
}

#[test]
fn download_20mb_with_summary_and_access_log() {
    let (_dir, root, sum) = served("e2e");
    let srv = ServerProc::start(&root, &["--qlog-dir", root.with_extension("qlog").to_str().unwrap()]);
    let out = root.with_extension("out");
    let small = root.with_extension("small");
    let r = client(&[
        &srv.url("/big.bin"),
        &srv.url("/small.txt"),
        "--ca",
        &cert("rootca.pem"),
        "-o",
        out.to_str().unwrap(),
        "-o",
        small.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0));
    assert_eq!(sha256_file(&out), sum);
    assert_eq!(std::fs::read(&small).unwrap(), b"hello\n");
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("goodput"), "{err}");
    assert!(err.contains("out-of-order bytes"), "{err}");
    assert!(err.contains("100.0%"), "single path carries everything: {err}");
    // The access log has one line per request, with status and size.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let log = std::fs::read_to_string(&srv.access_log).unwrap();
    assert!(log.contains(&format!("\"GET /big.bin HTTP/3\" 200 {BIG}")), "{log}");
    assert!(log.contains("\"GET /small.txt HTTP/3\" 200 6"), "{log}");
    // The qlog file is JSON-SEQ (RS, JSON, newline per record), its first
    // record the main schema's header...
    let qdir = root.with_extension("qlog");
    let f = std::fs::read_dir(&qdir).unwrap().next().unwrap().unwrap().path();
    assert!(f.to_str().unwrap().ends_with("_server.sqlog"), "{f:?}");
    let text = std::fs::read_to_string(f).unwrap();
    assert!(text.starts_with('\u{1e}') && text.ends_with('\n'));
    let records: Vec<serde_json::Value> = text
        .split('\u{1e}')
        .skip(1)
        .map(|r| serde_json::from_str(r.strip_suffix('\n').expect("newline after each record")).unwrap())
        .collect();
    assert_eq!(records[0]["file_schema"], "urn:ietf:params:qlog:file:sequential");
    assert_eq!(records[0]["trace"]["vantage_point"]["type"], "server");
    // ...then events in time order: the application's path statistics...
    let events = &records[1..];
    assert!(events.windows(2).all(|w| w[0]["time"].as_f64() <= w[1]["time"].as_f64()), "time order");
    assert!(events.iter().any(|e| e["name"] == "mpquic:path_stats"));
    // ...and the engine's events.
    let metrics: Vec<_> = events.iter().filter(|v| v["name"] == "quic:recovery_metrics_updated").collect();
    assert!(!metrics.is_empty(), "no engine metrics in the event log");
    assert!(metrics.iter().all(|m| m["data"]["congestion_window"].as_u64().is_some_and(|c| c > 0)));
    assert!(events.iter().any(|e| e["name"] == "quic:packet_sent"));
    assert!(events
        .iter()
        .any(|e| e["name"] == "quic:connection_state_updated" && e["data"]["new"] == "closed"));
}

#[test]
fn json_summary_and_no_retry() {
    let (_dir, root, _) = served("json");
    let srv = ServerProc::start(&root, &["--no-retry", "--cc", "newreno", "--scheduler", "rr"]);
    let out = root.with_extension("out");
    let r =
        client(&[&srv.url("/small.txt"), "--insecure", "--json", "-o", out.to_str().unwrap(), "--cc", "bbr"]);
    assert_eq!(r.status.code(), Some(0));
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON summary");
    assert_eq!(j["bytes"], 6);
    assert_eq!(j["downloads"][0]["status"], 200);
    assert_eq!(j["paths"][0]["share"], 1.0);
    assert!(j["out_of_order_bytes"]["p95"].is_u64());
    assert_eq!(j["duplicate_bytes"], 0, "a lossless single-path download has no duplicates");
    assert_eq!(j["retry"], false);
}

/// A client that starts in QUIC v2 against a v1-only server gets Version
/// Negotiation and makes one new attempt in v1 (RFC 9368 §2.1); a client
/// that accepts v2 only has nothing to retry with.
#[test]
fn version_negotiation_starts_a_new_attempt() {
    let (_dir, root, _) = served("vn");
    let srv = ServerProc::start(&root, &[]);
    let out = root.with_extension("out");
    let r = client(&[
        &srv.url("/small.txt"),
        "--insecure",
        "-o",
        out.to_str().unwrap(),
        "--quic-version",
        "v2,v1",
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(0), "{err}");
    assert!(err.contains("does not take QUIC v2; trying v1"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"hello\n");
    let r =
        client(&[&srv.url("/small.txt"), "--insecure", "-o", out.to_str().unwrap(), "--quic-version", "v2"]);
    assert_ne!(r.status.code(), Some(0), "v2 alone cannot talk to a v1 server");
}

/// The server's NEW_TOKEN token, kept with --token-file, lets the next run
/// skip the Retry.
#[test]
fn token_file_skips_retry_next_time() {
    let (_dir, root, _) = served("token");
    let srv = ServerProc::start(&root, &[]);
    let out = root.with_extension("out");
    let tok = root.with_extension("token");
    let run = || {
        let r = client(&[
            &srv.url("/small.txt"),
            "--insecure",
            "--json",
            "-o",
            out.to_str().unwrap(),
            "--token-file",
            tok.to_str().unwrap(),
        ]);
        assert_eq!(r.status.code(), Some(0));
        serde_json::from_slice::<serde_json::Value>(&r.stdout).expect("JSON summary")
    };
    assert_eq!(run()["retry"], true, "no token yet: Retry");
    assert!(std::fs::metadata(&tok).map(|m| m.len() > 0).unwrap_or(false), "token not saved");
    assert_eq!(run()["retry"], false, "token presented: no Retry");
}

/// A token file too long for an Initial is reported in one line and
/// skipped; the run succeeds and leaves the server's token in the file.
#[test]
fn oversized_token_file_is_skipped() {
    let (_dir, root, _) = served("bigtoken");
    let srv = ServerProc::start(&root, &[]);
    let out = root.with_extension("out");
    let tok = root.with_extension("token");
    std::fs::write(&tok, content(1300, 3)).unwrap();
    let r = client(&[
        &srv.url("/small.txt"),
        "--insecure",
        "-q",
        "-o",
        out.to_str().unwrap(),
        "--token-file",
        tok.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("no usable token (1300 bytes") && err.lines().count() == 1, "{err}");
    let saved = std::fs::metadata(&tok).unwrap().len();
    assert!(saved > 0 && saved < 1300, "the server's token replaces it: {saved} bytes");
}

/// mpquic-client fetches /small.txt into `out` keeping its session in
/// `ses`; its JSON summary.
fn resume_small(
    srv: &ServerProc,
    out: &std::path::Path,
    ses: &std::path::Path,
    extra: &[&str],
) -> serde_json::Value {
    let url = srv.url("/small.txt");
    let ca = cert("rootca.pem");
    let (out, ses) = (out.to_str().unwrap(), ses.to_str().unwrap());
    let mut args = vec![url.as_str(), "--ca", &ca, "--json", "-o", out, "--session-file", ses];
    args.extend_from_slice(extra);
    let r = client(&args);
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    serde_json::from_slice::<serde_json::Value>(&r.stdout).expect("JSON summary")
}

/// The server's TLS session ticket, kept with --session-file, lets the next
/// run resume the session.
#[test]
fn session_file_resumes_next_time() {
    let (_dir, root, _) = served("session");
    let srv = ServerProc::start(&root, &[]);
    let out = root.with_extension("out");
    let ses = root.with_extension("session");
    let run = || resume_small(&srv, &out, &ses, &[]);
    assert_eq!(run()["resumed"], false, "no session yet: full handshake");
    assert!(std::fs::metadata(&ses).map(|m| m.len() > 0).unwrap_or(false), "session not saved");
    assert_eq!(run()["resumed"], true, "session presented: resumed");
    // A damaged session file is reported, and the handshake is a full one.
    std::fs::write(&ses, b"garbage").unwrap();
    assert_eq!(run()["resumed"], false, "garbage session: full handshake");
}

/// With --early-data the resumed run sends its request in 0-RTT: a server
/// with --early-data takes it, one without refuses it and the request is
/// sent again after the handshake.
#[test]
fn early_data_with_a_session_file() {
    let (_dir, root, _) = served("early");
    let out = root.with_extension("out");
    for accept in [true, false] {
        let srv = ServerProc::start(&root, if accept { &["--early-data"] } else { &[] });
        let ses = root.with_extension(format!("session-{accept}"));
        let run = || {
            let j = resume_small(&srv, &out, &ses, &["--early-data"]);
            assert_eq!(std::fs::read(&out).unwrap(), b"hello\n");
            j
        };
        assert_eq!(run()["early_data"], false, "no session yet");
        let second = run();
        assert_eq!(second["resumed"], true);
        assert_eq!(second["early_data"], accept, "0-RTT accepted only by a server that takes it");
    }
}

#[test]
fn http_errors_and_traversal() {
    let (_dir, root, _) = served("404");
    std::fs::write(root.parent().unwrap().join("secret"), b"no").unwrap();
    let srv = ServerProc::start(&root, &[]);
    let out = root.with_extension("out");
    let r = client(&[&srv.url("/missing"), "--ca", &cert("rootca.pem"), "-o", out.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&r.stderr).contains("HTTP status 404"));
    let r = client(&[&srv.url("/%2e%2e/secret"), "--ca", &cert("rootca.pem"), "-o", out.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(5));
    assert_ne!(std::fs::read(&out).unwrap(), b"no");
}

#[test]
fn client_bad_inputs() {
    let r = client(&["localhost:4433/x"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("bad URL"));
    let r = client(&["https://localhost:4433/x", "--scheduler", "fastest"]);
    assert_eq!(r.status.code(), Some(2));
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(e.contains("unknown scheduler \"fastest\"") && e.contains("minrtt"), "{e}");
    let r = client(&["https://localhost:4433/x", "--cc", "reno2"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("cubic"));
    let r = client(&["https://localhost:4433/x", "--local", "no-such-iface0"]);
    assert_eq!(r.status.code(), Some(2));
    // An IPv6 socket cannot reach an IPv4 server: said so, not "server down".
    let r = client(&["https://127.0.0.1:4433/x", "--local", "::1"]);
    assert_eq!(r.status.code(), Some(2));
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(e.contains("--local ::1: an IPv6 address cannot reach the server's IPv4 address"), "{e}");
    // A --ca file that is not certificates: one line naming it.
    let key = cert("key.pem");
    let r = client(&["https://127.0.0.1:4433/x", "--ca", &key]);
    assert_eq!(r.status.code(), Some(2));
    let e = String::from_utf8_lossy(&r.stderr);
    assert_eq!(
        e.trim_end(),
        format!("mpquic-client: --ca {key}: not a PEM file of certificates (found: PRIVATE KEY)")
    );
    let r = client(&["https://host.invalid/x"]);
    assert_eq!(r.status.code(), Some(3));
    // Nothing listens on this port: the handshake times out.
    let port = free_port();
    let t = std::time::Instant::now();
    let r = client(&[&format!("https://127.0.0.1:{port}/x"), "--timeout", "1", "--insecure"]);
    assert_eq!(r.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&r.stderr).contains("no answer"));
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn untrusted_certificate_is_a_tls_error() {
    let (_dir, root, _) = served("tls");
    let srv = ServerProc::start(&root, &[]);
    // No --ca: the test CA is not in the system store.
    let r = client(&[&srv.url("/small.txt"), "--timeout", "5"]);
    assert_eq!(r.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&r.stderr).contains("certificate"));
}

#[test]
fn server_bad_inputs() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_mpquic-server")).args(args).output().unwrap()
    };
    let r = run(&["--listen", "127.0.0.1:0"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("--cert"));
    let c = cert("cert.pem");
    let k = cert("key.pem");
    let r = run(&["--listen", "127.0.0.1:0", "--cert", &c, "--key", &k, "--scheduler", "nope"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("valid: minrtt"));
    let r = run(&["--listen", "127.0.0.1:0", "--cert", &c, "--key", &k, "--root", "/no/such/dir"]);
    assert_eq!(r.status.code(), Some(2));
    // Wrong TLS files and an unusable --qlog-dir: one line each, at start.
    let one_line = |r: &std::process::Output, want: &str| {
        assert_eq!(r.status.code(), Some(2));
        let e = String::from_utf8_lossy(&r.stderr);
        assert!(e.contains(want) && e.lines().count() == 1 && !e.contains("TlsError"), "{e}");
    };
    one_line(&run(&["--listen", "127.0.0.1:0", "--cert", &k, "--key", &k]), "not a PEM file of certificates");
    one_line(&run(&["--listen", "127.0.0.1:0", "--cert", &c, "--key", &c]), "not a PEM private key");
    let ca = cert("rootca.pem");
    one_line(
        &run(&["--listen", "127.0.0.1:0", "--cert", &ca, "--key", &k]),
        "not a usable certificate chain and matching private key",
    );
    one_line(&run(&["--listen", "127.0.0.1:0", "--cert", &c, "--key", &k, "--qlog-dir", &c]), "--qlog-dir");
}

#[test]
fn sigterm_closes_connections_and_exits_cleanly() {
    let (_dir, root, _) = served("sig");
    let mut srv = ServerProc::start(&root, &[]);
    let out = root.with_extension("out");
    let r = client(&[&srv.url("/small.txt"), "--ca", &cert("rootca.pem"), "-o", out.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(0));
    let pid = srv.child.id() as i32;
    // SAFETY: signalling the child process we started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let t = std::time::Instant::now();
    loop {
        if let Some(st) = srv.child.try_wait().unwrap() {
            assert_eq!(st.code(), Some(0));
            break;
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(6), "server did not stop");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// mpquic-client fetches /big.bin into `out` with `extra` options; checks
/// it exits 0 with the body intact and returns its JSON summary.
fn big_json(srv: &ServerProc, sum: &str, out: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let (url, ca) = (srv.url("/big.bin"), cert("rootca.pem"));
    let mut args = vec![url.as_str(), "--ca", &ca, "--json", "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let r = client(&args);
    assert_eq!(r.status.code(), Some(0));
    assert_eq!(sha256_file(out), sum);
    serde_json::from_slice(&r.stdout).expect("JSON summary")
}

#[test]
fn two_paths_over_loopback() {
    let (_dir, root, sum) = served("mp");
    let srv = ServerProc::start(&root, &["--scheduler", "rr"]);
    let out = root.with_extension("out");
    let j = big_json(&srv, &sum, &out, &["--local", "127.0.0.1", "--local", "127.0.0.2"]);
    assert_eq!(j["multipath"], true, "{j}");
    let paths = j["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 2, "{j}");
    // Round-robin on the server spreads the body over both paths; loopback
    // carries the ECN bits, so each of the client's paths validated ECN
    // (the server's ACKs counted its ECT(0) marks).
    for p in paths {
        assert!(p["recv_bytes"].as_u64().unwrap() > 1_000_000, "{j}");
        assert_eq!(p["ecn"], "capable", "{j}");
    }
    let total: f64 = paths.iter().map(|p| p["share"].as_f64().unwrap()).sum();
    assert!((total - 1.0).abs() < 1e-9);
}

/// AR&P's copies pay for themselves: over two lossless loopback paths,
/// coupled-bbr/arp delivers the body with at most 5% of it in duplicate stream
/// bytes (#12's target; 18% when it was filed, 0 bytes in 3 runs of 50 MB
/// measured since) and both paths carry data. Copies the kernel's drops under
/// load would justify are loss, not waste: the bound is on what arrives twice.
/// How much the second path carries is AR&P's call: on loopback the RTTs
/// are tenths of a millisecond of the receiver's scheduling, and a path whose
/// RTT is over 3x the other's is rightly redundant (Alg. 2), carrying copies
/// and little new data (0.8-6 MB of the 24 MiB measured).
#[test]
fn coupled_bbr_arp_copies_little_where_nothing_is_lost() {
    let (_dir, root, sum) = served("arp-copies");
    let srv = ServerProc::start(&root, &["--cc", "coupled-bbr", "--scheduler", "arp"]);
    let out = root.with_extension("out");
    let j = big_json(&srv, &sum, &out, &["--local", "127.0.0.1", "--local", "127.0.0.2"]);
    let body = j["bytes"].as_u64().unwrap();
    let dup = j["duplicate_bytes"].as_u64().unwrap();
    println!("coupled-bbr/arp over two loopback paths: {dup} duplicate bytes for {body} bytes");
    assert!(dup * 20 <= body, "{dup} duplicate bytes for a {body}-byte body: {j}");
    for p in j["paths"].as_array().unwrap() {
        assert!(p["recv_bytes"].as_u64().unwrap() > 100_000, "{j}");
    }
}

/// --migrate-to: after 4 MB of the 24 MB body the client moves its one path
/// from 127.0.0.1 to a new socket on 127.0.0.2 (RFC 9000 §9.2); the server
/// validates the new address and goes on sending there, the body arrives
/// intact, and the summary reports the move.
#[test]
fn migration_mid_download() {
    let (_dir, root, sum) = served("migrate");
    let srv = ServerProc::start(&root, &[]);
    let out = root.with_extension("out");
    let extra = ["--local", "127.0.0.1", "--migrate-to", "127.0.0.2", "--migrate-after", "4000000"];
    let j = big_json(&srv, &sum, &out, &extra);
    let m = &j["migration"];
    assert_eq!(m["outcome"], "migrated", "{j}");
    assert!(m["from"].as_str().unwrap().starts_with("127.0.0.1:"), "{j}");
    assert!(m["to"].as_str().unwrap().starts_with("127.0.0.2:"), "{j}");
    let at = m["started_at_bytes"].as_u64().unwrap();
    assert!((4_000_000..BIG as u64).contains(&at), "moved mid-download: {j}");
    // One path, now on the new address; it received most of the body.
    let paths = j["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 1, "{j}");
    assert_eq!(paths[0]["local"], m["to"], "{j}");
    assert!(paths[0]["recv_bytes"].as_u64().unwrap() > BIG as u64, "{j}");
}

#[test]
fn migrate_bad_inputs() {
    let r = client(&["https://127.0.0.1:4433/x", "--migrate-to", "nowhere"]);
    assert_eq!(r.status.code(), Some(2));
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(e.contains("bad local address \"nowhere\": expected an IP address or IP:PORT"), "{e}");
    let r = client(&["https://127.0.0.1:4433/x", "--migrate-after", "10"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("--migrate-to"));
    let r = client(&["https://127.0.0.1:4433/x", "--migrate-to", "::1"]);
    assert_eq!(r.status.code(), Some(2));
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(
        e.contains("--migrate-to [::1]:0: an IPv6 address cannot reach the server's IPv4 address"),
        "{e}"
    );
}

#[test]
fn local_in_another_network_namespace() {
    // Bad `--local ADDR@NETNS` forms are usage errors that name the problem.
    let r = client(&["https://127.0.0.1:4433/x", "--local", "127.0.0.1@/no/such/netns", "--insecure"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("/no/such/netns"));
    let r = client(&["https://127.0.0.1:4433/x", "--local", "lo@/proc/self/ns/net", "--insecure"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("must be an IP"));
    let r = client(&["https://127.0.0.1:4433/x", "--local", "127.0.0.1@", "--insecure"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("empty network namespace"));
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED the download part of local_in_another_network_namespace: needs root (setns)");
        return;
    }
    // Our own namespace named by its file: setns there and back, then a normal download
    // on two paths, one of them bound through the namespace file.
    let (_dir, root, sum) = served("netns");
    let srv = ServerProc::start(&root, &[]);
    let out = root.with_extension("out");
    let r = client(&[
        &srv.url("/big.bin"),
        "--ca",
        &cert("rootca.pem"),
        "--local",
        "127.0.0.1@/proc/self/ns/net",
        "--local",
        "127.0.0.2",
        "--json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0));
    assert_eq!(sha256_file(&out), sum);
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON summary");
    assert!(j["paths"][0]["local"].as_str().unwrap_or_default().starts_with("127.0.0.1:"), "{j}");
}

/// A short-header packet for a connection the server does not have gets a
/// Stateless Reset: shorter than the packet, formatted as a short header.
/// Packets too small to answer with a smaller reset get nothing.
#[test]
fn unknown_connection_gets_a_stateless_reset() {
    let (_dir, root, _) = served("reset");
    let srv = ServerProc::start(&root, &[]);
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(std::time::Duration::from_millis(500))).unwrap();
    let mut pkt = vec![0x5au8; 100];
    pkt[1..17].copy_from_slice(mpquic::random_cid(16).as_slice());
    let mut buf = [0u8; 1500];
    sock.send_to(&pkt, srv.addr).unwrap();
    let (n, from) = sock.recv_from(&mut buf).expect("no stateless reset");
    assert_eq!(from, srv.addr);
    assert!((21..100).contains(&n), "reset of {n} bytes");
    assert_eq!(buf[0] & 0xc0, 0x40);
    sock.send_to(&pkt[..21], srv.addr).unwrap();
    assert!(sock.recv_from(&mut buf).is_err(), "a 21-byte packet must not be answered");
}

/// Two workers on one address (SO_REUSEPORT): 16 concurrent two-path
/// downloads all arrive byte-exact with both paths carrying data — each
/// client's second path is a new 4-tuple, which reaches the worker holding
/// its connection only through the connection-ID steering — and both
/// workers accept connections (all 16 on one would happen 2 times in 65,536).
#[test]
fn two_workers_serve_multipath_clients() {
    let (_dir, root, _) = served("workers");
    let data = content(1 << 20, 11);
    std::fs::write(root.join("one.bin"), &data).unwrap();
    let srv = ServerProc::start(&root, &["--workers", "2", "--scheduler", "rr"]);
    let url = srv.url("/one.bin");
    let clients: Vec<_> = (0..16)
        .map(|i| {
            let (url, out) = (url.clone(), root.with_extension(format!("out{i}")));
            std::thread::spawn(move || {
                let o = out.to_str().unwrap();
                let args =
                    [&url, "--ca", &cert("rootca.pem"), "--local", "127.0.0.1", "--local", "127.0.0.2"];
                let r = client(&[&args[..], &["--json", "-o", o]].concat());
                (r, out)
            })
        })
        .collect();
    for t in clients {
        let (r, out) = t.join().unwrap();
        assert_eq!(r.status.code(), Some(0));
        assert_eq!(sha256_file(&out), sha256(&data));
        let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON summary");
        // Stream data on both paths, so the second 4-tuple reached the
        // worker owning the connection: the handshake and probes are under
        // 10 kB. How much each path carries is timing: with 16 clients on
        // two cores a path whose RTT sample stays at 12 ms had carried
        // 87 kB of the 1 MiB when the other (0.2 ms) had finished.
        for p in j["paths"].as_array().unwrap() {
            assert!(p["recv_bytes"].as_u64().unwrap() > 32_000, "a path carried no data: {j}");
        }
    }
    let pid = srv.child.id() as i32;
    // SAFETY: signalling the child process we started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let line = std::iter::from_fn(|| srv.log.recv_timeout(std::time::Duration::from_secs(10)).ok())
        .find(|l| l.contains("accepted per worker"))
        .expect("per-worker counts");
    let counts: Vec<u64> =
        line.split(':').nth(2).unwrap().split_whitespace().map(|n| n.parse().unwrap()).collect();
    assert_eq!((counts.len(), counts.iter().sum::<u64>()), (2, 16), "{line}");
    assert!(counts.iter().all(|&n| n > 0), "{line}");
}
