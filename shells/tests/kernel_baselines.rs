//! Kernel baselines through the shells: kernel MPTCP, kernel TCP BBR and mpquic over
//! the same lossy two-path `mpquic-mpshell` (12 Mbit/s, 20 ms RTT; 6 Mbit/s, 40 ms
//! RTT and 1% loss each way), each downloading a body checked byte by byte.
//!
//! As in `apps_e2e.rs`, everything runs inside `mm-delay 0`: the servers bind that
//! shell's address, and the nested `mpquic-mpshell` routes path i out of its own
//! interface to it. The apps binaries must be built in the same target directory
//! (`cargo build --release --workspace`, as `ci/test.sh` does). Skips with a message
//! without root, network namespaces, MPTCP (`net.mptcp.enabled`) or BBR.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

/// Inside `mm-delay 0`: starts `$SERVER` (a command line) in the background, logging
/// to `$DIR/server.log`, waits until it serves, then runs `$CLIENT` inside the
/// two-path shell with its stdout in `$DIR/client.json`.
const SCRIPT: &str = r#"
export host="$MPSHELL_ADDR_0"
eval "$SERVER" 2> "$DIR/server.log" &
server=$!
wait_serving "$server" "$DIR/server.log"
"$BIN/mpquic-mpshell" --backend builtin --seed 7 \
    --path "wifi12,$TRACE12,$TRACE12,10" --path "lte6,$TRACE6,$TRACE6,20,0.01" \
    -- sh -c "$CLIENT" > "$DIR/client.json"
rc=$?
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
exit $rc
"#;

const BYTES: u64 = 6_000_000;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// Why the kernel tests cannot run here, if they cannot.
fn skip_reason(cc: &str) -> Option<String> {
    if let Err(why) = shells::netns::check_privileges() {
        return Some(why);
    }
    let mptcp = std::fs::read_to_string("/proc/sys/net/mptcp/enabled").unwrap_or_default();
    if mptcp.trim() != "1" {
        return Some("MPTCP is off or missing (sysctl net.mptcp.enabled is not 1)".into());
    }
    let available =
        || std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
    if !available().split_whitespace().any(|c| c == cc) {
        let _ = Command::new("modprobe").arg(format!("tcp_{cc}")).status();
        if !available().split_whitespace().any(|c| c == cc) {
            return Some(format!("TCP congestion control {cc} is not available (modprobe tcp_{cc} failed)"));
        }
    }
    None
}

/// Runs `server` and, inside the two-path shell, `client` (both `sh` command
/// lines); returns the client's JSON summary, failing with every log otherwise.
fn run(name: &str, server: &str, client: &str) -> serde_json::Value {
    let bin = Path::new(env!("CARGO_BIN_EXE_mpquic-mpshell")).parent().expect("target dir").to_path_buf();
    for b in ["mpquic-tcp", "mpquic-server", "mpquic-client"] {
        assert!(bin.join(b).is_file(), "{b} is not in {}: build the workspace first", bin.display());
    }
    let dir = std::env::temp_dir().join(format!("mpquic-kernel-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("run.sh");
    std::fs::write(&script, format!("{}\n{SCRIPT}", common::WAIT_SERVING)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mm-delay"))
        .args(["0", "--", "sh"])
        .arg(&script)
        .env("BIN", &bin)
        .env("DIR", &dir)
        .env("CERTS", repo("tests/certs"))
        .env("SERVER", server)
        .env("CLIENT", client)
        .env("TRACE12", repo("shells/tests/data/12mbps.trace"))
        .env("TRACE6", repo("shells/tests/data/6mbps.trace"))
        .env_remove("MAHIMAHI_BASE")
        .env_remove(shells::shell::BASE6_ENV)
        .env_remove(shells::shell::EPOCH_ENV)
        .env_remove(shells::netns::CHAIN_ENV)
        .output()
        .expect("run mm-delay");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let (summary, server_log) = (read("client.json"), read("server.log"));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{name} failed: {}\nclient: {summary}\nstderr: {}\nserver: {server_log}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
    );
    let line = summary.lines().rev().find(|l| l.starts_with('{')).expect("client JSON summary");
    let j: serde_json::Value = serde_json::from_str(line).expect("client summary is JSON");
    println!(
        "{name}: {} B in {:.2} s, goodput {:.2} Mbit/s",
        j["bytes"],
        j["time_s"].as_f64().unwrap_or(0.0),
        j["goodput_mbps"].as_f64().unwrap_or(0.0)
    );
    for p in j["paths"].as_array().into_iter().flatten() {
        println!(
            "  {} -> {}: {} B, srtt {:.1} ms",
            p["local"],
            p["peer"],
            p["recv_bytes"],
            p["srtt_ms"].as_f64().unwrap_or(0.0)
        );
    }
    println!("  server: {server_log}");
    j
}

/// Every path of the summary carried a real part of the body, not just its handshake.
fn assert_both_paths_carry(j: &serde_json::Value) {
    let paths = j["paths"].as_array().expect("paths");
    assert_eq!(paths.len(), 2, "{j}");
    for p in paths {
        let recv = p["recv_bytes"].as_u64().unwrap_or(0);
        assert!(recv > BYTES / 20, "{} carried only {recv} B: {j}", p["local"]);
    }
}

#[test]
fn kernel_mptcp_cubic_uses_both_paths_byte_exact() {
    if let Some(why) = skip_reason("cubic") {
        println!("SKIPPED kernel_mptcp_cubic_uses_both_paths_byte_exact: {why}");
        return;
    }
    let j = run(
        "mptcp-cubic",
        r#"exec "$BIN/mpquic-tcp" server --listen "$host:5201" --mptcp --cc cubic --subflows 2"#,
        &format!(
            r#""$BIN/mpquic-tcp" client "$host:5201" --mptcp --cc cubic --subflow-from "$MPSHELL_ADDR_1@path1" --bytes {BYTES} --json"#
        ),
    );
    // The client exits non-zero unless every byte matched and all arrived.
    assert_eq!(j["bytes"], BYTES, "{j}");
    assert_eq!(j["impl"], "mptcp", "{j}");
    assert_eq!(j["multipath"], true, "fell back to TCP: {j}");
    assert_eq!(j["cc"], "cubic", "{j}");
    assert_both_paths_carry(&j);
}

#[test]
fn kernel_tcp_bbr_on_the_lossy_path_byte_exact() {
    if let Some(why) = skip_reason("bbr") {
        println!("SKIPPED kernel_tcp_bbr_on_the_lossy_path_byte_exact: {why}");
        return;
    }
    let j = run(
        "tcp-bbr",
        r#"exec "$BIN/mpquic-tcp" server --listen "$host:5201" --cc bbr"#,
        &format!(
            r#""$BIN/mpquic-tcp" client "$host:5201" --cc bbr --bind "$MPSHELL_ADDR_1:0" --bytes {BYTES} --json"#
        ),
    );
    assert_eq!(j["bytes"], BYTES, "{j}");
    assert_eq!((j["impl"].as_str(), j["multipath"].as_bool()), (Some("tcp"), Some(false)), "{j}");
    let paths = j["paths"].as_array().expect("paths");
    assert_eq!(paths.len(), 1, "{j}");
    // It went over the 40 ms path (20 ms each way), not the 20 ms one.
    assert!(paths[0]["min_rtt_ms"].as_f64().unwrap_or(0.0) >= 40.0, "{j}");
    // 6 Mbit/s: the body took at least its serialisation time.
    assert!(j["time_s"].as_f64().unwrap_or(0.0) > BYTES as f64 * 8.0 / 6e6, "faster than the link: {j}");
}

#[test]
fn mpquic_over_the_same_lossy_paths_byte_exact() {
    if let Some(why) = skip_reason("cubic") {
        println!("SKIPPED mpquic_over_the_same_lossy_paths_byte_exact: {why}");
        return;
    }
    // The mpquic-tcp client checks the body as it comes; mpquic-client writes it
    // out, and the shell compares it with the file served.
    let j = run(
        "mpquic",
        r#"head -c 6000000 /dev/urandom > "$DIR/body.bin"; exec "$BIN/mpquic-server" --listen "$host:4433" --root "$DIR" --cert "$CERTS/cert.pem" --key "$CERTS/key.pem" --cc cubic"#,
        r#""$BIN/mpquic-client" "https://$host:4433/body.bin" --local "$MPSHELL_ADDR_0" --local "$MPSHELL_ADDR_1" --cc cubic --insecure --json --timeout 20 -o "$DIR/out.bin" && cmp "$DIR/body.bin" "$DIR/out.bin" >&2"#,
    );
    assert_eq!(j["bytes"], BYTES, "{j}");
    assert_eq!(j["downloads"][0]["status"], 200, "{j}");
    assert_eq!(j["multipath"], true, "{j}");
    assert_both_paths_carry(&j);
}
