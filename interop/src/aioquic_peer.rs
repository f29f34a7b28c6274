//! aioquic's side of a cell: `aioquic_peer.py` run by the project's venv
//! python (`$MPQUIC_VENV`, default `~/.cache/mpquic/venv`, made by
//! ci/setup.sh). aioquic has no multipath.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::{cert, ServerHandle, Side, Spec};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/aioquic_peer.py");

/// The venv's python, if it can import aioquic.
pub fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("MPQUIC_VENV")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/mpquic/venv")))?;
    let py = venv.join("bin/python");
    let ok = Command::new(&py).args(["-c", "import aioquic"]).output().is_ok_and(|o| o.status.success());
    ok.then_some(py)
}

fn side_from_json(line: &str) -> Side {
    match serde_json::from_str::<serde_json::Value>(line.trim()) {
        Ok(v) => Side {
            files: v["files"].as_u64().unwrap_or(0) as usize,
            errors: v["errors"]
                .as_array()
                .map(|a| a.iter().filter_map(|e| e.as_str().map(String::from)).collect())
                .unwrap_or_default(),
            early_data: v["early"].as_u64().map(|n| n as usize),
            ..Side::default()
        },
        Err(_) => Side { errors: vec![format!("aioquic said {:?}", line.trim())], ..Side::default() },
    }
}

fn common(cmd: &mut Command, spec: &Spec) {
    if spec.chacha {
        cmd.arg("--chacha");
    }
    if spec.early_data {
        cmd.arg("--early-data");
    }
    if spec.v2 {
        cmd.arg("--v2");
    }
    if spec.h3 {
        cmd.arg("--h3");
    }
}

/// Runs the aioquic client against `servers[0]`.
pub fn client(spec: &Spec, servers: &[SocketAddr]) -> Side {
    let Some(py) = python() else {
        return Side { errors: vec!["no python with aioquic".into()], ..Side::default() };
    };
    let files: Vec<String> = spec.files.iter().map(|f| format!("{}-{}", f.id, f.size)).collect();
    let mut cmd = Command::new(py);
    cmd.arg(SCRIPT)
        .arg("client")
        .arg(servers[0].ip().to_string())
        .arg(servers[0].port().to_string())
        .args(["--ca", &cert("rootca.pem"), "--files", &files.join(",")])
        .args(["--connections", &spec.connections.to_string()]);
    common(&mut cmd, spec);
    if spec.key_update {
        cmd.arg("--key-update");
    }
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let Ok(child) = child else {
        return Side { errors: vec!["cannot run python".into()], ..Side::default() };
    };
    wait_output(child, spec.timeout)
}

/// Waits for the client's JSON line, killing it at the deadline.
fn wait_output(mut child: Child, timeout: Duration) -> Side {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Side { errors: vec!["aioquic client timed out".into()], ..Side::default() };
            }
        }
    }
    let (mut out, mut err) = (String::new(), String::new());
    child.stdout.take().map(|mut s| s.read_to_string(&mut out));
    child.stderr.take().map(|mut s| s.read_to_string(&mut err));
    let mut side = side_from_json(out.lines().last().unwrap_or(""));
    if !side.errors.is_empty() {
        if let Some(last) = err.lines().last() {
            side.errors.push(last.to_string());
        }
    }
    side
}

/// Starts the aioquic server; it stops when its stdin closes.
pub fn server(spec: &Spec) -> Result<ServerHandle, String> {
    let py = python().ok_or("no python with aioquic")?;
    let host = if spec.ipv6 { "::1" } else { "127.0.0.1" };
    let mut cmd = Command::new(py);
    cmd.arg(SCRIPT).args(["server", host, "--cert", &cert("cert.pem"), "--key", &cert("key.pem")]);
    common(&mut cmd, spec);
    if spec.retry {
        cmd.arg("--retry");
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut line = String::new();
    out.read_line(&mut line).map_err(|e| e.to_string())?;
    let port: u16 = line
        .trim()
        .strip_prefix("port ")
        .and_then(|p| p.parse().ok())
        .ok_or(format!("aioquic server said {line:?}"))?;
    let addr = SocketAddr::new(host.parse().map_err(|e: std::net::AddrParseError| e.to_string())?, port);
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let join = std::thread::Builder::new()
        .name("aioquic-server".into())
        .spawn(move || {
            while !s.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(10));
            }
            drop(child.stdin.take());
            let mut rest = String::new();
            let _ = out.read_to_string(&mut rest);
            let _ = child.wait();
            side_from_json(rest.lines().last().unwrap_or(""))
        })
        .map_err(|e| e.to_string())?;
    Ok(ServerHandle::new(vec![addr], stop, join))
}
