//! End to end over emulated paths: the real `mpquic-server` and `mpquic-client`
//! binaries downloading a file of several MB through the shells, checked by SHA-256.
//!
//! - Multipath: the client inside `mpquic-mpshell` with two paths of different traces
//!   (constant 12 Mbit/s; the generated time-varying 6 Mbit/s LTE trace); the client's
//!   `--json` summary must show both paths carrying data. Run with both backends:
//!   built-in (one namespace, one interface per path) and `--backend mahimahi` with this
//!   crate's Mahimahi-compatible `mm-delay`/`mm-link` put first on `PATH` (the client
//!   then binds path i's socket in shell i's namespace via `MPSHELL_LOCAL_i`).
//! - IPv6: the same apps over the shells' IPv6 addresses (`MPSHELL_ADDR6_0`).
//! - Interfaces followed: the multipath client on interface names (`MPSHELL_IFACE_i`);
//!   one goes down mid-download and returns with a new address.
//! - ECN: a CoDel queue with `ecn=1` on the downlink marks the server's packets CE
//!   instead of dropping them; the client reports the marks (seen in the server's qlog),
//!   both ends validate ECN, and nothing is lost. The same queue without `ecn=1` drops.
//!
//! Wiring: the server must own an address that every path reaches with the same
//! peer address, or the client would see replies from another address on path 1. So
//! the run is `mm-delay 0 -- sh script`: the server binds the `mm-delay` shell's
//! inside address, and `mpquic-mpshell` nested in that namespace routes path i out of
//! its own interface to that address (the nested shell adds the return routes).
//!
//! The apps binaries must be built in the same target directory
//! (`cargo build --release -p mpquic-apps`; `ci/test.sh` builds the workspace first).
//! Skips with a message without root or network namespaces.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

mod common;

/// Starts the server in the background on `$host:4433` (`host` set by the script's
/// first line from the `mm-delay 0` shell's address) and waits until it serves.
const START_SERVER: &str = r#"
export host
"$BIN/mpquic-server" --listen "$host:4433" --root "$DIR/root" \
    --cert "$CERTS/cert.pem" --key "$CERTS/key.pem" --cc "$CC" $SERVER_ARGS 2> "$DIR/server.log" &
server=$!
wait_serving "$server" "$DIR/server.log"
"#;

/// Ends the script with the client's status once the server is stopped.
const STOP_SERVER: &str = r#"
rc=$?
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
exit $rc
"#;

/// The multipath client: inside `mpquic-mpshell`, one `--local` per path.
const MPSHELL_CLIENT: &str = r#"
PATH="$BIN:$PATH" "$BIN/mpquic-mpshell" --backend "$BACKEND" \
    --path "fixed12,$TRACE0_UP,$TRACE0_DOWN,10" \
    --path "lte6,$TRACE1_UP,$TRACE1_DOWN,20" \
    -- sh -c '"$BIN/mpquic-client" "https://$host:4433/file.bin" \
        --local "$MPSHELL_LOCAL_0" --local "$MPSHELL_LOCAL_1" --cc "$CC" \
        --insecure --json --timeout 20 -o "$DIR/out.bin"'
"#;

/// The multipath client on interface names, which it follows, over IPv6: 1.5 s in,
/// path 1's interface goes down (the kernel drops its IPv6 address and routes); 2 s
/// later it comes back with the other free address of its /126, its route and its
/// source rule, as a phone's Wi-Fi rejoining with a new address would.
const FOLLOW_CLIENT: &str = r#"
PATH="$BIN:$PATH" "$BIN/mpquic-mpshell" \
    --path "a,$TRACE,$TRACE,10" --path "b,$TRACE,$TRACE,10" \
    -- sh -c '
"$BIN/mpquic-client" "https://$host:4433/file.bin" \
    --local "$MPSHELL_IFACE_0" --local "$MPSHELL_IFACE_1" --cc "$CC" \
    --insecure --json --timeout 30 -o "$DIR/out.bin" > "$DIR/client.json" &
client=$!
sleep 1.5
ip link set dev "$MPSHELL_IFACE_1" down
sleep 2
last=${MPSHELL_ADDR6_1##*:}
new="${MPSHELL_ADDR6_1%:*}:$(printf %x $((0x$last + 1)))"
ip link set dev "$MPSHELL_IFACE_1" up
ip -6 route replace default dev "$MPSHELL_IFACE_1" table 101
ip -6 rule add from "$new" table 101 priority 999
ip -6 addr add "$new/126" dev "$MPSHELL_IFACE_1" nodad
wait $client
rc=$?
cat "$DIR/client.json"
exit $rc'
"#;

/// A single-path client behind `mm-delay 10` and `mm-link` (12 Mbit/s both ways, the
/// downlink queue from `$DOWN_QUEUE` / `$DOWN_QUEUE_ARGS`).
const LINK_CLIENT: &str = r#"
"$BIN/mm-delay" 10 "$BIN/mm-link" "$TRACE" "$TRACE" \
    "--downlink-queue=$DOWN_QUEUE" "--downlink-queue-args=$DOWN_QUEUE_ARGS" -- \
    "$BIN/mpquic-client" "https://$host:4433/file.bin" --cc "$CC" $CLIENT_ARGS \
        --insecure --json --timeout 20 -o "$DIR/out.bin"
"#;

/// Server addresses as the script's first line: the `mm-delay 0` shell's own address,
/// bracketed for IPv6 URLs and `--listen`.
const HOST_V4: &str = r#"host="$MPSHELL_ADDR_0""#;
const HOST_V6: &str = r#"host="[$MPSHELL_ADDR6_0]""#;

const MP_FILE_BYTES: usize = 8_000_000;
const LINK_FILE_BYTES: usize = 5_000_000;
const FOLLOW_FILE_BYTES: usize = 16_000_000;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn trace(rel: &str) -> String {
    repo(rel).to_string_lossy().into_owned()
}

/// Bytes that do not compress or repeat (xorshift).
fn content(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
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

fn sha256(data: &[u8]) -> String {
    Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}

/// Why `test` cannot run here (printed as a skip), if it cannot.
fn skip_reason(v6: bool) -> Option<String> {
    if let Err(why) = shells::netns::check_privileges() {
        return Some(why);
    }
    (v6 && !shells::netns::ipv6_enabled_here()).then(|| "IPv6 is disabled in this network namespace".into())
}

/// A run's directory with the file to serve, and the apps binaries beside the shells.
struct Fixture {
    dir: PathBuf,
    bin: PathBuf,
    data: Vec<u8>,
}

impl Fixture {
    fn new(name: &str, bytes: usize) -> Fixture {
        let bin = Path::new(env!("CARGO_BIN_EXE_mpquic-mpshell")).parent().expect("target dir").to_path_buf();
        for b in ["mpquic-server", "mpquic-client"] {
            assert!(
                bin.join(b).is_file(),
                "{b} is not in {}: build it first with `cargo build -p mpquic-apps` (same profile and CARGO_TARGET_DIR)",
                bin.display()
            );
        }
        let dir = std::env::temp_dir().join(format!("mpquic-apps-e2e-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("root")).unwrap();
        let data = content(bytes);
        std::fs::write(dir.join("root/file.bin"), &data).unwrap();
        Fixture { dir, bin, data }
    }

    /// Runs `host_line`, the server and `client` in a script inside `mm-delay 0`, so the
    /// server binds that shell's address and nested shells reach it (they add the
    /// return routes). Fails with both programs' output unless the script succeeds.
    fn run(&self, host_line: &str, client: &str, env: &[(&str, String)]) -> Output {
        let script = self.dir.join("run.sh");
        std::fs::write(
            &script,
            format!("set -u\n{}\n{host_line}\n{START_SERVER}\n{client}\n{STOP_SERVER}", common::WAIT_SERVING),
        )
        .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_mm-delay"))
            .args(["0", "--", "sh"])
            .arg(&script)
            .env("BIN", &self.bin)
            .env("DIR", &self.dir)
            .env("CERTS", repo("tests/certs"))
            .env("CC", "cubic")
            .env("SERVER_ARGS", "")
            .envs(env.iter().map(|(k, v)| (*k, v.clone())))
            // A fresh chain: the shells must not think they are nested in the caller's.
            .env_remove("MAHIMAHI_BASE")
            .env_remove(shells::shell::BASE6_ENV)
            .env_remove(shells::shell::EPOCH_ENV)
            .env_remove(shells::netns::CHAIN_ENV)
            .output()
            .expect("run mm-delay");
        let server_log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        assert!(
            out.status.success(),
            "run failed: {}\nstdout: {}\nstderr: {}\nserver: {server_log}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        out
    }

    /// Checks the downloaded file and returns the client's `--json` summary.
    fn check(&self, out: &Output) -> serde_json::Value {
        let got = std::fs::read(self.dir.join("out.bin")).expect("downloaded file");
        assert_eq!(got.len(), self.data.len());
        assert_eq!(sha256(&got), sha256(&self.data), "downloaded file differs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().rev().find(|l| l.starts_with('{')).expect("client JSON summary");
        let j: serde_json::Value = serde_json::from_str(line).expect("client summary is JSON");
        assert_eq!(j["downloads"][0]["status"], 200, "{j}");
        j
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn http3_download_through_mpshell_uses_both_paths() {
    download_through_mpshell("http3_download_through_mpshell_uses_both_paths", "builtin");
}

#[test]
fn http3_download_through_mahimahi_backend_uses_both_paths() {
    download_through_mpshell("http3_download_through_mahimahi_backend_uses_both_paths", "mahimahi");
}

fn download_through_mpshell(test: &str, backend: &str) {
    if let Some(why) = skip_reason(false) {
        println!("SKIPPED {test}: {why}");
        return;
    }
    let fx = Fixture::new(backend, MP_FILE_BYTES);
    let out = fx.run(
        HOST_V4,
        MPSHELL_CLIENT,
        &[
            ("BACKEND", backend.into()),
            ("TRACE0_UP", trace("shells/tests/data/12mbps.trace")),
            ("TRACE0_DOWN", trace("shells/tests/data/12mbps.trace")),
            ("TRACE1_UP", trace("shells/tests/data/6mbps.trace")),
            ("TRACE1_DOWN", trace("traces/data/lte-6mbps.up")),
        ],
    );
    let j = fx.check(&out);
    assert_eq!(j["multipath"], true, "{j}");
    let paths = j["paths"].as_array().expect("paths");
    assert_eq!(paths.len(), 2, "{j}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(if backend == "mahimahi" {
        "/ns/net (MPSHELL_LOCAL_0)"
    } else {
        "(MPSHELL_ADDR_0)"
    }));
    println!(
        "{backend}: 8 MB over fixed 12 + LTE 6 Mbit/s: {:.2} s, goodput {:.2} Mbit/s",
        j["time_s"].as_f64().unwrap_or(0.0),
        j["goodput_mbps"].as_f64().unwrap_or(0.0)
    );
    for p in paths {
        let recv = p["recv_bytes"].as_u64().unwrap_or(0);
        println!(
            "  path {} {}: {recv} B ({:.1}%), srtt {:.1} ms",
            p["id"],
            p["local"],
            p["share"].as_f64().unwrap_or(0.0) * 100.0,
            p["srtt_ms"].as_f64().unwrap_or(0.0)
        );
        // Both paths carried a real part of the body, not just probes and ACKs.
        assert!(recv > MP_FILE_BYTES as u64 / 20, "path {} carried only {recv} B: {j}", p["id"]);
    }
}

/// The environment of [`LINK_CLIENT`]: a 12 Mbit/s link whose downlink queue is
/// `queue` with `args`, and extra client arguments.
fn link_env(queue: &str, args: &str, client_args: &str) -> Vec<(&'static str, String)> {
    vec![
        ("TRACE", trace("shells/tests/data/12mbps.trace")),
        ("DOWN_QUEUE", queue.into()),
        ("DOWN_QUEUE_ARGS", args.into()),
        ("CLIENT_ARGS", client_args.into()),
    ]
}

/// The apps over IPv6 through `mm-delay` and `mm-link`: the server on the `mm-delay 0`
/// shell's IPv6 address, the client connecting to it from two shells further in.
#[test]
fn http3_download_over_ipv6() {
    if let Some(why) = skip_reason(true) {
        println!("SKIPPED http3_download_over_ipv6: {why}");
        return;
    }
    let fx = Fixture::new("ipv6", LINK_FILE_BYTES);
    let out = fx.run(HOST_V6, LINK_CLIENT, &link_env("droptail", "packets=500", ""));
    let j = fx.check(&out);
    let path = &j["paths"][0];
    println!(
        "IPv6: {} B in {:.2} s, goodput {:.2} Mbit/s, {} -> {}, srtt {:.1} ms",
        j["bytes"],
        j["time_s"].as_f64().unwrap_or(0.0),
        j["goodput_mbps"].as_f64().unwrap_or(0.0),
        path["local"],
        path["peer"],
        path["srtt_ms"].as_f64().unwrap_or(0.0)
    );
    let peer = path["peer"].as_str().unwrap_or_default();
    assert!(
        peer.starts_with("[fd6d:7368:656c:6c00::") && peer.ends_with("]:4433"),
        "not the IPv6 server: {j}"
    );
    // 12 Mbit/s link: the 5 MB took at least its serialisation time.
    assert!(j["time_s"].as_f64().unwrap_or(0.0) > 3.0, "faster than the link: {j}");
    assert!(path["min_rtt_ms"].as_f64().unwrap_or(0.0) >= 20.0, "mm-delay 10 each way missing: {j}");
}

/// A path's interface goes down mid-download and comes back with a new address: the
/// client abandons the path at once, opens one from the new address, and that path
/// carries data again; the file arrives intact. Gap and recovery times are printed.
#[test]
fn paths_follow_an_interface_that_goes_down_and_returns_with_a_new_address() {
    let test = "paths_follow_an_interface_that_goes_down_and_returns_with_a_new_address";
    if let Some(why) = skip_reason(true) {
        println!("SKIPPED {test}: {why}");
        return;
    }
    let fx = Fixture::new("follow", FOLLOW_FILE_BYTES);
    let out = fx.run(HOST_V6, FOLLOW_CLIENT, &[("TRACE", trace("shells/tests/data/12mbps.trace"))]);
    let j = fx.check(&out);
    let events = j["interfaces"].as_array().unwrap_or_else(|| panic!("no interface events: {j}"));
    let down = events.iter().find(|e| e["addr"].is_null()).unwrap_or_else(|| panic!("no down event: {j}"));
    assert_eq!(down["abandoned"], 1, "path 1 not abandoned when its interface went down: {j}");
    let up = events
        .iter()
        .find(|e| !e["opened"].is_null())
        .unwrap_or_else(|| panic!("no path opened after the interface returned: {j}"));
    let new_ip = up["addr"].as_str().unwrap_or_default();
    assert!(!new_ip.is_empty() && down["was"].as_str() != Some(new_ip), "not a new address: {j}");
    let opened = up["opened"].as_u64().expect("opened path id");
    let path = j["paths"].as_array().and_then(|p| p.iter().find(|p| p["id"] == opened)).expect("new path");
    let recv = path["recv_bytes"].as_u64().unwrap_or(0);
    assert!(recv > FOLLOW_FILE_BYTES as u64 / 20, "the returned path carried only {recv} B: {j}");
    assert!(path["local"].as_str().unwrap_or_default().contains(new_ip), "{j}");
    println!(
        "interface down at {:.2} s, back at {:.2} s (gap {:.2} s); new path {opened} validated after {:.3} s, \
         {} kB received after {:.3} s; it carried {recv} B; total {:.2} s",
        down["t"].as_f64().unwrap_or(0.0),
        up["t"].as_f64().unwrap_or(0.0),
        up["gap_s"].as_f64().unwrap_or(0.0),
        up["validated_after_s"].as_f64().unwrap_or(-1.0),
        mpquic_apps::follow::CARRYING_BYTES / 1024,
        up["carrying_after_s"].as_f64().unwrap_or(-1.0),
        j["time_s"].as_f64().unwrap_or(0.0),
    );
}

/// What the server's qlog says about one connection's path 0.
#[derive(Debug, Default)]
struct ServerView {
    /// Largest CE count the client reported in its ACKs (RFC 9000 §19.3.2).
    ce: u64,
    /// Largest ECT(0) count it reported: the server's marks crossed the shells.
    ect0: u64,
    /// `quic:packet_lost` events.
    lost: u64,
}

/// Reads the server's qlog (JSON-SEQ, one file per connection) in `dir`.
fn server_view(dir: &Path) -> ServerView {
    let mut v = ServerView::default();
    let files: Vec<_> = std::fs::read_dir(dir).expect("qlog dir").flatten().map(|e| e.path()).collect();
    assert_eq!(files.len(), 1, "one connection, one qlog: {files:?}");
    let text = std::fs::read_to_string(&files[0]).expect("qlog");
    for rec in text.split('\u{1e}').map(str::trim).filter(|r| !r.is_empty()) {
        let e: serde_json::Value = serde_json::from_str(rec).expect("qlog record is JSON");
        match e["name"].as_str() {
            Some("quic:packet_lost") => v.lost += 1,
            Some("quic:packet_received") => {
                for f in e["data"]["frames"].as_array().into_iter().flatten() {
                    v.ce = v.ce.max(f["ce"].as_u64().unwrap_or(0));
                    v.ect0 = v.ect0.max(f["ect0"].as_u64().unwrap_or(0));
                }
            }
            _ => {}
        }
    }
    v
}

/// A 12 Mbit/s link, 20 ms RTT, whose downlink is a small, quick CoDel queue (target
/// 2 ms, interval 20 ms; `ecn=1` when `ecn`): the server's 1-RTT packets are ECT(0),
/// so CoDel marks them CE instead of dropping them. The 1000-packet limit is out of
/// slow start's reach (100 packets tail-dropped some), so any loss is CoDel's. No path
/// MTU discovery, whose lost probes would count as losses.
fn download_through_codel(name: &str, host: &str, ecn: bool) -> (serde_json::Value, ServerView) {
    let fx = Fixture::new(name, LINK_FILE_BYTES);
    let qlog = fx.dir.join("qlog");
    std::fs::create_dir_all(&qlog).unwrap();
    let queue_args = format!("packets=1000,target=2,interval=20,ecn={}", u8::from(ecn));
    let mut env = link_env("codel", &queue_args, "--no-pmtud");
    env.push(("SERVER_ARGS", format!("--no-pmtud --qlog-dir {}", qlog.display())));
    let out = fx.run(host, LINK_CLIENT, &env);
    let j = fx.check(&out);
    let view = server_view(&qlog);
    let path = &j["paths"][0];
    println!(
        "{name}: {:.2} s, goodput {:.2} Mbit/s, srtt {:.1} ms; client ECN {}, CE reported {}, ECT(0) reported {}, server packets lost {}, client packets lost {}",
        j["time_s"].as_f64().unwrap_or(0.0),
        j["goodput_mbps"].as_f64().unwrap_or(0.0),
        path["srtt_ms"].as_f64().unwrap_or(0.0),
        path["ecn"],
        view.ce,
        view.ect0,
        view.lost,
        j["lost_packets"]
    );
    (j, view)
}

fn codel_ecn_marks_instead_of_dropping(test: &str, v6: bool) {
    if let Some(why) = skip_reason(v6) {
        println!("SKIPPED {test}: {why}");
        return;
    }
    let (j, server) = download_through_codel(test, if v6 { HOST_V6 } else { HOST_V4 }, true);
    // The client's ECT(0) came back counted: the uplink keeps the bits.
    assert_eq!(j["paths"][0]["ecn"], "capable", "{j}");
    // The server's ECT(0) arrived as such, and CoDel's marks arrived as CE.
    assert!(server.ect0 > 1000, "{server:?}");
    assert!(server.ce > 0, "no CE mark reached the client: {server:?}");
    // Marked, not dropped: neither end lost a packet.
    assert_eq!(server.lost, 0, "{server:?}");
    assert_eq!(j["lost_packets"], 0, "{j}");
}

#[test]
fn codel_ecn_marks_ce_instead_of_dropping_ipv4() {
    codel_ecn_marks_instead_of_dropping("codel_ecn_marks_ce_instead_of_dropping_ipv4", false);
}

#[test]
fn codel_ecn_marks_ce_instead_of_dropping_ipv6() {
    codel_ecn_marks_instead_of_dropping("codel_ecn_marks_ce_instead_of_dropping_ipv6", true);
}

/// The control: the same queue without `ecn=1` drops where it marked, so the ECN
/// test above cannot pass by a queue that never acted.
#[test]
fn codel_without_ecn_drops() {
    if let Some(why) = skip_reason(false) {
        println!("SKIPPED codel_without_ecn_drops: {why}");
        return;
    }
    let (_, server) = download_through_codel("codel_without_ecn_drops", HOST_V4, false);
    assert_eq!(server.ce, 0, "{server:?}");
    assert!(server.lost > 0, "CoDel dropped nothing: {server:?}");
}
