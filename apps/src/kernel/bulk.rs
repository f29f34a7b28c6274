//! The transfer itself. The client sends the number of body bytes it wants
//! (8 bytes, big endian; `u64::MAX`: until the client closes), the server
//! writes that much of the generated body and shuts its side down, and the
//! client checks every byte as it arrives.
// Real sockets measured on the wall clock: a tool, not the sans-IO engine.
#![allow(clippy::disallowed_methods)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use socket2::Socket;

use super::pattern::{Pattern, CHUNK};
use super::sockopt::{self, MptcpInfo, Subflow};
use super::{report, stream_socket};
use crate::exit;

/// How much the client downloads.
#[derive(Clone, Copy, Debug)]
pub enum Amount {
    /// Exactly this many bytes.
    Bytes(u64),
    /// Whatever arrives in this long (from the start of the connect).
    For(Duration),
}

/// What the client connects with.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// The server.
    pub peer: SocketAddr,
    /// Local address of the first subflow.
    pub bind: Option<SocketAddr>,
    /// MPTCP instead of TCP.
    pub mptcp: bool,
    /// Congestion controller.
    pub cc: Option<String>,
    /// Bytes or duration.
    pub amount: Amount,
    /// Longest wait for the connect and, later, for data.
    pub timeout: Duration,
}

/// A finished download, with what the kernel said just before closing.
pub struct Download {
    /// Body bytes received, all checked.
    pub bytes: u64,
    /// From the start to the connect's completion.
    pub connect: Duration,
    /// From the start to the first body byte.
    pub first_byte: Duration,
    /// From the start to the end.
    pub elapsed: Duration,
    /// The controller the socket ran.
    pub cc: String,
    /// Connection-level MPTCP state; `None` for TCP or a fallback to it.
    pub mptcp: Option<MptcpInfo>,
    /// Every subflow (one for TCP).
    pub subflows: Vec<Subflow>,
}

/// A failure, with the exit code it maps to (`mpquic_apps::exit`).
pub type Failure = (i32, String);

/// The request: how many bytes the client wants.
fn request(amount: Amount) -> [u8; 8] {
    match amount {
        Amount::Bytes(n) => n.to_be_bytes(),
        Amount::For(_) => u64::MAX.to_be_bytes(),
    }
}

/// Read-poll granularity: how soon a deadline or a stop request is seen.
const TICK: Duration = Duration::from_millis(100);

fn connect(opts: &ClientOptions) -> Result<Socket, Failure> {
    let sock = stream_socket(&opts.peer, opts.mptcp, opts.cc.as_deref()).map_err(|e| (exit::USAGE, e))?;
    if let Some(b) = opts.bind {
        sock.bind(&b.into()).map_err(|e| (exit::USAGE, format!("--bind {b}: {e}")))?;
    }
    sock.connect_timeout(&opts.peer.into(), opts.timeout)
        .map_err(|e| (exit::NETWORK, format!("cannot connect to {}: {e}", opts.peer)))?;
    sock.set_read_timeout(Some(TICK)).map_err(|e| (exit::IO, e.to_string()))?;
    Ok(sock)
}

/// Downloads and checks the body; `stop` (a signal) ends it early with an error.
pub fn download(opts: &ClientOptions, stop: &AtomicBool) -> Result<Download, Failure> {
    let start = Instant::now();
    let mut sock = connect(opts)?;
    let connect = start.elapsed();
    sock.write_all(&request(opts.amount))
        .map_err(|e| (exit::NETWORK, format!("sending the request: {e}")))?;
    let pattern = Pattern::default();
    let mut buf = vec![0u8; CHUNK];
    let (mut got, mut first_byte, mut last_data) = (0u64, None, Instant::now());
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err((exit::TRANSPORT, format!("interrupted after {got} bytes")));
        }
        if matches!(opts.amount, Amount::For(d) if start.elapsed() >= d) {
            break;
        }
        let n = match sock.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                ) =>
            {
                if last_data.elapsed() > opts.timeout {
                    return Err((
                        exit::NETWORK,
                        format!("no data for {:.1} s after {got} bytes", opts.timeout.as_secs_f64()),
                    ));
                }
                continue;
            }
            Err(e) => return Err((exit::TRANSPORT, format!("connection failed after {got} bytes: {e}"))),
        };
        let bad = pattern.mismatches(got, &buf[..n]);
        if bad > 0 {
            return Err((
                exit::TRANSPORT,
                format!("{bad} of {n} bytes at offset {got} differ from the generated body"),
            ));
        }
        got += n as u64;
        first_byte.get_or_insert_with(|| start.elapsed());
        last_data = Instant::now();
    }
    let elapsed = start.elapsed();
    if let Amount::Bytes(want) = opts.amount {
        if got != want {
            return Err((exit::TRANSPORT, format!("the server closed after {got} of {want} bytes")));
        }
    }
    let subflows = sockopt::subflows(&sock).map_err(|e| (exit::IO, format!("reading TCP_INFO: {e}")))?;
    Ok(Download {
        bytes: got,
        connect,
        first_byte: first_byte.unwrap_or(elapsed),
        elapsed,
        cc: sockopt::congestion(&sock).unwrap_or_default(),
        mptcp: if opts.mptcp { sockopt::mptcp_info(&sock) } else { None },
        subflows,
    })
}

/// Mbit/s of `bytes` in `d`.
pub fn mbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 * 8.0 / d.as_secs_f64().max(1e-9) / 1e6
}

/// The summary in the shape of `mpquic-client --json`.
pub fn summary_json(d: &Download, mptcp: bool) -> serde_json::Value {
    let transfer = d.elapsed.saturating_sub(d.first_byte);
    let (lost, retrans, ooo) = report::totals(&d.subflows);
    json!({
        "impl": if mptcp { "mptcp" } else { "tcp" }, "bytes": d.bytes, "time_s": d.elapsed.as_secs_f64(),
        "handshake_s": d.connect.as_secs_f64(), "transfer_s": transfer.as_secs_f64(),
        "goodput_mbps": mbps(d.bytes, d.elapsed), "transfer_goodput_mbps": mbps(d.bytes, transfer),
        "cc": d.cc, "scheduler": if mptcp { super::mptcp_scheduler() } else { "single-path".into() },
        "multipath": d.mptcp.is_some(), "fallback": mptcp && d.mptcp.is_none(),
        "mptcp_subflows": d.mptcp.map(|m| m.subflows), "mptcp_subflows_max": d.mptcp.map(|m| m.subflows_max),
        "paths": report::path_rows(&d.subflows, false),
        "lost_packets": lost, "retrans_bytes": retrans, "mismatched_bytes": 0,
        "out_of_order_packets": ooo, "out_of_order_bytes": null,
    })
}

/// Serves connections accepted on `listener` forever, one thread each.
pub fn serve(listener: &Socket, mptcp: bool) -> io::Result<()> {
    let pattern = Arc::new(Pattern::default());
    loop {
        let (sock, peer) = match listener.accept() {
            Ok(c) => c,
            // A connection reset before it was accepted is the client's business.
            Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionAborted | io::ErrorKind::Interrupted) => {
                continue
            }
            Err(e) => return Err(e),
        };
        let pattern = pattern.clone();
        let peer = peer.as_socket().map_or_else(|| "?".into(), |a| a.to_string());
        std::thread::spawn(move || serve_one(sock, &peer, &pattern, mptcp));
    }
}

/// Longest wait for a client's request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// One connection; logs one JSON line on stderr with the sender's view.
fn serve_one(mut sock: Socket, peer: &str, pattern: &Pattern, mptcp: bool) {
    let start = Instant::now();
    let mut req = [0u8; 8];
    let _ = sock.set_read_timeout(Some(REQUEST_TIMEOUT));
    if let Err(e) = sock.read_exact(&mut req) {
        eprintln!("mpquic-tcp: {peer}: no request: {e}");
        return;
    }
    let want = u64::from_be_bytes(req);
    let mut sent = 0u64;
    let mut ended = "complete".to_string();
    while sent < want {
        let n = (want - sent).min(CHUNK as u64) as usize;
        match sock.write(pattern.at(sent, n)) {
            Ok(w) => sent += w as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                ended = if super::is_disconnect(&e) { "client closed".into() } else { e.to_string() };
                break;
            }
        }
    }
    let subflows = sockopt::subflows(&sock).unwrap_or_default();
    let line = json!({
        "peer": peer, "bytes": sent, "time_s": start.elapsed().as_secs_f64(), "ended": ended,
        "cc": sockopt::congestion(&sock).unwrap_or_default(), "multipath": mptcp && sockopt::mptcp_info(&sock).is_some(),
        "paths": report::path_rows(&subflows, true),
    });
    eprintln!("{line}");
    let _ = sock.shutdown(Shutdown::Write);
    // Wait for the client's close so the last segments are not cut by a reset.
    let mut sink = [0u8; 64];
    while matches!(sock.read(&mut sink), Ok(n) if n > 0) {}
}
