//! End to end over emulated paths: the real `mpquic-server` and `mpquic-client`
//! binaries, the client inside `mpquic-mpshell` with two paths of different traces
//! (constant 12 Mbit/s; the generated time-varying 6 Mbit/s LTE trace), downloading a
//! file of several MB. Checks the SHA-256 of the download and, from the client's
//! `--json` summary, that both paths carried data. Run with both backends: built-in
//! (one namespace, one interface per path) and `--backend mahimahi` with this crate's
//! Mahimahi-compatible `mm-delay`/`mm-link` put first on `PATH` (the client then binds
//! path i's socket in shell i's namespace via `MPSHELL_LOCAL_i`).
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
use std::process::Command;

use sha2::{Digest, Sha256};

/// Runs inside `mm-delay 0`: the server on this namespace's address, then the client
/// inside `mpquic-mpshell` with one `--local` per path.
const SCRIPT: &str = r#"
set -u
server_addr="$MPSHELL_ADDR_0"
"$BIN/mpquic-server" --listen "$server_addr:4433" --root "$DIR/root" \
    --cert "$CERTS/cert.pem" --key "$CERTS/key.pem" --cc "$CC" 2> "$DIR/server.log" &
server=$!
i=0
until grep -q serving "$DIR/server.log" 2>/dev/null; do
    i=$((i + 1))
    if [ "$i" -gt 200 ] || ! kill -0 "$server" 2>/dev/null; then
        echo "mpquic-server did not start" >&2; cat "$DIR/server.log" >&2; exit 90
    fi
    sleep 0.05
done
export server_addr
PATH="$BIN:$PATH" "$BIN/mpquic-mpshell" --backend "$BACKEND" \
    --path "fixed12,$TRACE0_UP,$TRACE0_DOWN,10" \
    --path "lte6,$TRACE1_UP,$TRACE1_DOWN,20" \
    -- sh -c '"$BIN/mpquic-client" "https://$server_addr:4433/file.bin" \
        --local "$MPSHELL_LOCAL_0" --local "$MPSHELL_LOCAL_1" --cc "$CC" \
        --insecure --json --timeout 20 -o "$DIR/out.bin"'
rc=$?
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
exit $rc
"#;

const FILE_BYTES: usize = 8_000_000;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
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

#[test]
fn http3_download_through_mpshell_uses_both_paths() {
    download_through_mpshell("http3_download_through_mpshell_uses_both_paths", "builtin");
}

#[test]
fn http3_download_through_mahimahi_backend_uses_both_paths() {
    download_through_mpshell("http3_download_through_mahimahi_backend_uses_both_paths", "mahimahi");
}

fn download_through_mpshell(test: &str, backend: &str) {
    if let Err(why) = shells::netns::check_privileges() {
        println!("SKIPPED {test}: {why}");
        return;
    }
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_mpquic-mpshell")).parent().expect("target dir").to_path_buf();
    for b in ["mpquic-server", "mpquic-client"] {
        assert!(
            bin_dir.join(b).is_file(),
            "{b} is not in {}: build it first with `cargo build -p mpquic-apps` (same profile and CARGO_TARGET_DIR)",
            bin_dir.display()
        );
    }
    let dir = std::env::temp_dir().join(format!("mpquic-apps-e2e-{backend}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("root")).unwrap();
    let data = content(FILE_BYTES);
    std::fs::write(dir.join("root/file.bin"), &data).unwrap();
    let script = dir.join("run.sh");
    std::fs::write(&script, SCRIPT).unwrap();

    let trace = |rel: &str| repo(rel).to_string_lossy().into_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_mm-delay"))
        .args(["0", "--", "sh"])
        .arg(&script)
        .env("BIN", &bin_dir)
        .env("DIR", &dir)
        .env("CERTS", repo("tests/certs"))
        .env("CC", "cubic")
        .env("BACKEND", backend)
        .env("TRACE0_UP", trace("shells/tests/data/12mbps.trace"))
        .env("TRACE0_DOWN", trace("shells/tests/data/12mbps.trace"))
        .env("TRACE1_UP", trace("shells/tests/data/6mbps.trace"))
        .env("TRACE1_DOWN", trace("traces/data/lte-6mbps.up"))
        // A fresh chain: the shells must not think they are nested in the caller's.
        .env_remove("MAHIMAHI_BASE")
        .env_remove(shells::shell::EPOCH_ENV)
        .env_remove(shells::netns::CHAIN_ENV)
        .output()
        .expect("run mm-delay");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let server_log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
    assert!(
        out.status.success(),
        "run failed: {}\nstdout: {stdout}\nstderr: {stderr}\nserver: {server_log}",
        out.status
    );

    let got = std::fs::read(dir.join("out.bin")).expect("downloaded file");
    assert_eq!(got.len(), FILE_BYTES);
    assert_eq!(sha256(&got), sha256(&data), "downloaded file differs");

    let line = stdout.lines().rev().find(|l| l.starts_with('{')).expect("client JSON summary");
    let j: serde_json::Value = serde_json::from_str(line).expect("client summary is JSON");
    assert_eq!(j["multipath"], true, "{j}");
    assert_eq!(j["downloads"][0]["status"], 200);
    let paths = j["paths"].as_array().expect("paths");
    assert_eq!(paths.len(), 2, "{j}");
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
        assert!(recv > FILE_BYTES as u64 / 20, "path {} carried only {recv} B: {j}", p["id"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
