//! The interop matrix: every case of quic-interop-runner that mpquic can be
//! asked for, plus multipath cases, with mpquic as client and as server
//! against quiche 0.30 (in-process), noq 1.4 (in-process, tokio) and aioquic
//! (Python), every datagram going through the project's link model
//! (`relay`). `matrix::run` produces the cells; `mpquic-interop` prints them.
#![warn(missing_docs, unreachable_pub)]
// A test harness: real time and real sockets are its job.
#![allow(clippy::disallowed_methods)]

pub mod aioquic_peer;
pub mod cases;
pub mod content;
pub mod hq;
pub mod http3;
pub mod matrix;
pub mod mpquic_peer;
pub mod noq_peer;
pub mod quiche_peer;
pub mod relay;
pub mod sansio;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use content::File;

/// Idle timeout of every side: long enough for a handshake that loses
/// several flights in a row to 30% loss (PTOs back off 1, 2, 4, 8 s...).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The version a peer's client starts in for the vn case with mpquic as
/// the server: reserved for exercising Version Negotiation (RFC 9000 §15,
/// the 0x?a?a?a?a pattern).
pub const GREASE_VERSION: u32 = 0x1a2a_3a4a;

/// The directory of the test certificates (the engine's `tests/certs`).
pub fn cert(name: &str) -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/certs/").to_string() + name
}

/// Multipath behaviour asked of the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mp {
    /// Open a second path, both available.
    Two,
    /// Open a second path marked backup.
    Backup,
    /// Open a second path, abandon it once this many body bytes arrived.
    Abandon(u64),
}

/// What one connection of a cell does (derived from its case).
#[derive(Clone, Debug, Default)]
pub struct Spec {
    /// Files fetched on each connection.
    pub files: Vec<File>,
    /// Connections, one after the other.
    pub connections: usize,
    /// Everything over IPv6 loopback.
    pub ipv6: bool,
    /// The server validates addresses with Retry.
    pub retry: bool,
    /// The peer allows only TLS_CHACHA20_POLY1305_SHA256.
    pub chacha: bool,
    /// mpquic updates its keys often; the peer starts one too if it can.
    pub key_update: bool,
    /// Multipath (client opens a second path).
    pub mp: Option<Mp>,
    /// The client resumes its first connection's TLS session on the next.
    pub resume: bool,
    /// ... and sends its requests in 0-RTT (both sides enable early data).
    pub early_data: bool,
    /// QUIC v2 by compatible version negotiation: the client starts with
    /// v1 and offers v2 first, the server prefers v2 (RFC 9368, RFC 9369).
    pub v2: bool,
    /// Files go over HTTP/3 (ALPN `h3`) instead of hq-interop.
    pub h3: bool,
    /// Incompatible version negotiation: the client starts in v2 (offering
    /// v1 too) against a v1-only server, whose Version Negotiation makes it
    /// start a new attempt in v1 (RFC 9368 §2.1).
    pub vn: bool,
    /// Path MTU discovery: the peer runs it too, where it can (mpquic's is
    /// on by default).
    pub pmtud: bool,
    /// The server offers this address as its preferred address (RFC 9000
    /// §9.6): the relay's front for the server's second address.
    pub preferred: Option<SocketAddr>,
    /// How long the whole cell may take.
    pub timeout: Duration,
}

/// What one side reports.
#[derive(Clone, Debug, Default)]
pub struct Side {
    /// Files received (client) or served (server) to the end.
    pub files: usize,
    /// Failures; empty when the side saw none.
    pub errors: Vec<String>,
    /// 1-RTT key updates, ours and the peer's (mpquic only).
    pub key_updates: Option<u64>,
    /// Key updates mpquic started (by hand as a client, by its interval as
    /// a server).
    pub key_updates_initiated: Option<u64>,
    /// Paths abandoned (mpquic only).
    pub abandoned: Option<u64>,
    /// Connections that resumed a TLS session (mpquic only).
    pub resumed: Option<usize>,
    /// Connections whose 0-RTT was accepted, as this side saw it (`None`:
    /// the side cannot tell).
    pub early_data: Option<usize>,
    /// Connections whose first path validated ECN (mpquic only).
    pub ecn_validated: Option<usize>,
    /// The ALPN of the last connection that negotiated one (mpquic only).
    pub alpn: Option<String>,
    /// Connection attempts made after a Version Negotiation packet (mpquic
    /// client only).
    pub after_vn: Option<usize>,
    /// The last attempt ended on Version Negotiation: (version to try next,
    /// version refused).
    pub vn_next: Option<(mpquic::Version, mpquic::Version)>,
    /// The datagram size the last connection's first path ended with
    /// (`PathStats::mtu`; mpquic only).
    pub mtu: Option<usize>,
    /// Black holes path MTU discovery detected, over every connection and
    /// path (mpquic only).
    pub mtu_black_holes: Option<u32>,
    /// Moves to another address pair, e.g. to the server's preferred
    /// address (`PathEvent::Migrated`; mpquic client only).
    pub migrated: Option<usize>,
    /// Path validations that failed (`PathEvent::FailedValidation`; mpquic
    /// client only).
    pub failed_validations: Option<usize>,
}

/// Runs `spec.connections` client connections one after the other (stopping
/// at the first error): `one(session, side)` runs one, resuming `session`
/// and leaving the next one there.
pub fn connections(
    spec: &Spec,
    mut one: impl FnMut(&mut Option<Vec<u8>>, &mut Side) -> Result<(), String>,
) -> Side {
    let mut side = Side::default();
    let mut session = None;
    for _ in 0..spec.connections {
        if let Err(e) = one(&mut session, &mut side) {
            side.errors.push(e);
            break;
        }
    }
    side
}

/// A server running in its own thread until stopped.
pub struct ServerHandle {
    /// Where it listens (two addresses for multipath cells).
    pub addrs: Vec<SocketAddr>,
    stop: Arc<AtomicBool>,
    join: Option<JoinHandle<Side>>,
}

impl ServerHandle {
    /// Wraps a server thread that returns when `stop` is set.
    pub fn new(addrs: Vec<SocketAddr>, stop: Arc<AtomicBool>, join: JoinHandle<Side>) -> ServerHandle {
        ServerHandle { addrs, stop, join: Some(join) }
    }

    /// Stops the server and returns its report.
    pub fn finish(mut self) -> Side {
        self.stop.store(true, Ordering::Relaxed);
        match self.join.take().map(|j| j.join()) {
            Some(Ok(side)) => side,
            _ => Side { errors: vec!["server thread panicked".into()], ..Side::default() },
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
