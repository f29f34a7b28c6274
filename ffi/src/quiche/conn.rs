//! `quiche_conn`: connection setup, datagrams in and out, timers, close and
//! connection facts.

use std::ffi::{c_char, c_int};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use engine::packet::{self, ConnectionId, PacketType};
use engine::{Config, Connection, RecvInfo};
use libc::{sockaddr, sockaddr_storage, socklen_t, ssize_t};

use super::config::quiche_config;
use super::{
    conn_error, log_line, now, timespec_of, QUICHE_ERR_DONE, QUICHE_ERR_INVALID_PACKET,
    QUICHE_ERR_INVALID_STATE,
};
use crate::addr::{from_c, to_c};
use crate::{c_str, guard, slice, slice_mut};

/// A server connection before its client's first Initial: quiche_accept
/// without an original destination ID learns it from that packet, and the
/// engine needs it to create the connection (Initial keys derive from it).
struct Pending {
    scid: ConnectionId,
    local: SocketAddr,
    peer: SocketAddr,
    config: Arc<Config>,
}

enum State {
    Pending(Pending),
    Live(Box<Connection>),
}

/// A QUIC connection (opaque). Create with quiche_connect / quiche_accept,
/// free with quiche_conn_free. Use from one thread at a time.
pub struct quiche_conn {
    state: State,
    /// Our first source connection ID (quiche_conn_source_id points here).
    scid: ConnectionId,
    /// Hex of `scid`, NUL-terminated (quiche_conn_trace_id).
    trace_id: String,
    /// Largest UDP payload we send (from the config).
    pub(crate) max_send: usize,
    established_logged: bool,
    /// Path state last reported as path events.
    path_watch: super::path_events::PathWatch,
}

impl quiche_conn {
    fn new(state: State, scid: ConnectionId, max_send: usize) -> *mut quiche_conn {
        let trace_id = scid.as_slice().iter().map(|b| format!("{b:02x}")).collect::<String>() + "\0";
        log_line(&format!("{}: new connection", &trace_id[..trace_id.len() - 1]));
        Box::into_raw(Box::new(quiche_conn {
            state,
            scid,
            trace_id,
            max_send,
            established_logged: false,
            path_watch: Default::default(),
        }))
    }

    /// Our first source connection ID.
    pub(crate) fn scid_bytes(&self) -> &[u8] {
        self.scid.as_slice()
    }

    /// The engine connection, once it exists.
    pub(crate) fn live(&self) -> Option<&Connection> {
        match &self.state {
            State::Live(c) => Some(c),
            State::Pending(_) => None,
        }
    }

    pub(crate) fn live_mut(&mut self) -> Option<&mut Connection> {
        match &mut self.state {
            State::Live(c) => Some(c),
            State::Pending(_) => None,
        }
    }

    /// The engine connection and what path events reported of it.
    pub(crate) fn live_with_watch(
        &mut self,
    ) -> Option<(&mut Connection, &mut super::path_events::PathWatch)> {
        match &mut self.state {
            State::Live(c) => Some((&mut **c, &mut self.path_watch)),
            State::Pending(_) => None,
        }
    }

    /// Create the server connection from the client's first datagram.
    fn start(&mut self, buf: &[u8]) -> Result<(), c_int> {
        let State::Pending(p) = &self.state else { return Ok(()) };
        let hdr = packet::parse_header(buf, p.scid.len()).map_err(|_| QUICHE_ERR_INVALID_PACKET.c())?;
        if hdr.ty != PacketType::Initial {
            return Err(QUICHE_ERR_INVALID_PACKET.c());
        }
        let c = engine::accept(&p.scid, &hdr.dcid, None, p.local, p.peer, &p.config, now())
            .map_err(|e| conn_error(&e).c())?;
        self.state = State::Live(Box::new(c));
        Ok(())
    }

    fn log_established(&mut self) {
        let est = self.live().is_some_and(Connection::is_established);
        if est && !self.established_logged {
            self.established_logged = true;
            log_line(&format!("{}: connection established", &self.trace_id[..self.trace_id.len() - 1]));
        }
    }
}

/// Borrow a connection, or return `err` for NULL.
macro_rules! conn_ref {
    ($p:expr) => {
        // SAFETY: the caller passes a live connection used by one thread.
        match unsafe { $p.as_ref() } {
            Some(c) => c,
            None => return,
        }
    };
    ($p:expr, $err:expr) => {
        // SAFETY: the caller passes a live connection used by one thread.
        match unsafe { $p.as_ref() } {
            Some(c) => c,
            None => return $err,
        }
    };
}
macro_rules! conn_mut {
    ($p:expr) => {
        // SAFETY: the caller passes a live connection used by one thread.
        match unsafe { $p.as_mut() } {
            Some(c) => c,
            None => return,
        }
    };
    ($p:expr, $err:expr) => {
        // SAFETY: the caller passes a live connection used by one thread.
        match unsafe { $p.as_mut() } {
            Some(c) => c,
            None => return $err,
        }
    };
}
pub(crate) use {conn_mut, conn_ref};

/// Both addresses of a connection from C, or None.
unsafe fn addrs(
    l: *const sockaddr,
    ll: socklen_t,
    p: *const sockaddr,
    pl: socklen_t,
) -> Option<(SocketAddr, SocketAddr)> {
    // SAFETY: each address holds its length in bytes.
    unsafe { Some((from_c(l, ll)?, from_c(p, pl)?)) }
}

/// The source ID and both addresses of connect/accept; None if any is bad.
///
/// # Safety
/// Each pointer is NULL or covers its length.
unsafe fn endpoints(
    scid: *const u8,
    scid_len: usize,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
) -> Option<(ConnectionId, SocketAddr, SocketAddr)> {
    // SAFETY: forwarded from the caller.
    let (local, peer) = unsafe { addrs(local, local_len, peer, peer_len) }?;
    // SAFETY: as above.
    let scid = unsafe { slice(scid, scid_len) }.and_then(ConnectionId::from_slice)?;
    Some((scid, local, peer))
}

/// Open a client connection from `local` to `peer` with source ID `scid`;
/// `server_name` (may be NULL) is sent as SNI and verified against the
/// server's certificate. NULL on bad arguments or a TLS setup failure.
#[no_mangle]
pub unsafe extern "C" fn quiche_connect(
    server_name: *const c_char,
    scid: *const u8,
    scid_len: usize,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    config: *mut quiche_config,
) -> *mut quiche_conn {
    let cfg = conn_ref!(config, std::ptr::null_mut());
    guard(std::ptr::null_mut(), || {
        // SAFETY: the caller's pointers cover their lengths.
        let Some((scid, local, peer)) =
            (unsafe { endpoints(scid, scid_len, local, local_len, peer, peer_len) })
        else {
            return std::ptr::null_mut();
        };
        // SAFETY: NUL-terminated when not NULL.
        let name = if server_name.is_null() { None } else { unsafe { c_str(server_name) } };
        if cfg.version != packet::QUIC_V1 {
            log_line(&format!("version {:#x} requested: mpquic connects with QUIC v1", cfg.version));
        }
        match engine::connect(name, &scid, local, peer, &cfg.engine(), now()) {
            Ok(c) => quiche_conn::new(State::Live(Box::new(c)), scid, cfg.max_send),
            Err(e) => {
                log_line(&format!("connect failed: {e}"));
                std::ptr::null_mut()
            }
        }
    })
}

/// Accept a client's connection with our source ID `scid`. `odcid` is the
/// destination ID of the client's first Initial when the client came back
/// through a Retry (then `scid` must be the Retry's source ID); NULL (or
/// length 0) when there was no Retry. Call quiche_conn_recv with the
/// client's Initial next. NULL on bad arguments or a TLS setup failure.
#[no_mangle]
pub unsafe extern "C" fn quiche_accept(
    scid: *const u8,
    scid_len: usize,
    odcid: *const u8,
    odcid_len: usize,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    config: *mut quiche_config,
) -> *mut quiche_conn {
    let cfg = conn_ref!(config, std::ptr::null_mut());
    guard(std::ptr::null_mut(), || {
        // SAFETY: the caller's pointers cover their lengths.
        let Some((scid, local, peer)) =
            (unsafe { endpoints(scid, scid_len, local, local_len, peer, peer_len) })
        else {
            return std::ptr::null_mut();
        };
        let config = cfg.engine();
        if odcid.is_null() || odcid_len == 0 {
            return quiche_conn::new(
                State::Pending(Pending { scid, local, peer, config }),
                scid,
                cfg.max_send,
            );
        }
        // SAFETY: as above.
        let Some(odcid) = unsafe { slice(odcid, odcid_len) }.and_then(ConnectionId::from_slice) else {
            return std::ptr::null_mut();
        };
        match engine::accept(&scid, &odcid, Some(&scid), local, peer, &config, now()) {
            Ok(c) => quiche_conn::new(State::Live(Box::new(c)), scid, cfg.max_send),
            Err(e) => {
                log_line(&format!("accept failed: {e}"));
                std::ptr::null_mut()
            }
        }
    })
}

/// Release a connection (NULL is accepted).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_free(conn: *mut quiche_conn) {
    if !conn.is_null() {
        // SAFETY: made by quiche_connect/quiche_accept, not freed before.
        guard((), || drop(unsafe { Box::from_raw(conn) }));
    }
}

/// Where a received datagram came from and arrived.
#[repr(C)]
pub struct quiche_recv_info {
    /// The peer's address.
    pub from: *mut sockaddr,
    /// Length of `from`.
    pub from_len: socklen_t,
    /// Our address it arrived on.
    pub to: *mut sockaddr,
    /// Length of `to`.
    pub to_len: socklen_t,
}

/// How to send a datagram written by quiche_conn_send.
#[repr(C)]
pub struct quiche_send_info {
    /// Our address to send from (with multipath: pick the socket bound to it).
    pub from: sockaddr_storage,
    /// Length of `from`.
    pub from_len: socklen_t,
    /// The peer's address to send to.
    pub to: sockaddr_storage,
    /// Length of `to`.
    pub to_len: socklen_t,
    /// Pacing: do not send before this time (CLOCK_MONOTONIC).
    pub at: libc::timespec,
}

/// Process a received datagram (it is decrypted in place). Returns the
/// bytes processed or a negative error (QUICHE_ERR_DONE once closed).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_recv(
    conn: *mut quiche_conn,
    buf: *mut u8,
    buf_len: usize,
    info: *const quiche_recv_info,
) -> ssize_t {
    let c = conn_mut!(conn, QUICHE_ERR_INVALID_STATE.ss());
    guard(QUICHE_ERR_INVALID_STATE.ss(), || {
        // SAFETY: `info` is valid when not NULL; its addresses cover their lengths.
        let Some(i) = (unsafe { info.as_ref() }) else { return QUICHE_ERR_INVALID_STATE.ss() };
        // SAFETY: as above.
        let Some((to, from)) = (unsafe { addrs(i.to, i.to_len, i.from, i.from_len) }) else {
            return QUICHE_ERR_INVALID_STATE.ss();
        };
        // SAFETY: `buf` holds `buf_len` writable bytes.
        let Some(b) = (unsafe { slice_mut(buf, buf_len) }) else { return QUICHE_ERR_INVALID_STATE.ss() };
        if let Err(e) = c.start(b) {
            return e as ssize_t;
        }
        let Some(live) = c.live_mut() else { return QUICHE_ERR_INVALID_STATE.ss() };
        let res = live.recv(b, RecvInfo::new(from, to), now());
        c.log_established();
        match res {
            Ok(n) => n as ssize_t,
            Err(e) => conn_error(&e).ss(),
        }
    })
}

/// Write the next datagram to send into `out`; `out_info` says from and to
/// which address, and when (pacing). Returns its length, QUICHE_ERR_DONE
/// when there is nothing to send now, or a negative error.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_send(
    conn: *mut quiche_conn,
    out: *mut u8,
    out_len: usize,
    out_info: *mut quiche_send_info,
) -> ssize_t {
    let c = conn_mut!(conn, QUICHE_ERR_INVALID_STATE.ss());
    guard(QUICHE_ERR_INVALID_STATE.ss(), || {
        // SAFETY: `out` holds `out_len` writable bytes; `out_info` is valid.
        let (Some(o), Some(info)) = (unsafe { slice_mut(out, out_len) }, unsafe { out_info.as_mut() }) else {
            return QUICHE_ERR_INVALID_STATE.ss();
        };
        let Some(live) = c.live_mut() else { return QUICHE_ERR_DONE.ss() };
        match live.send(o, now()) {
            Ok(Some((n, si))) => {
                info.from_len = to_c(&si.from, &mut info.from);
                info.to_len = to_c(&si.to, &mut info.to);
                info.at = timespec_of(si.at);
                n as ssize_t
            }
            Ok(None) => QUICHE_ERR_DONE.ss(),
            Err(e) => conn_error(&e).ss(),
        }
    })
}

/// How many bytes to send in one go: mpquic paces itself per packet, so
/// this is one datagram.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_send_quantum(conn: *const quiche_conn) -> usize {
    crate::guard(0, || conn_ref!(conn, 0).max_send)
}

/// The largest UDP payload this connection sends: ours, capped by the
/// peer's limit once known.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_max_send_udp_payload_size(conn: *const quiche_conn) -> usize {
    let c = conn_ref!(conn, 0);
    guard(0, || {
        let peer = c.live().and_then(Connection::peer_transport_params).map(|p| p.max_udp_payload_size);
        peer.map_or(c.max_send, |p| c.max_send.min(usize::try_from(p).unwrap_or(usize::MAX)))
    })
}

/// Time until quiche_conn_on_timeout is due, in ns (UINT64_MAX: none).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_timeout_as_nanos(conn: *const quiche_conn) -> u64 {
    let c = conn_ref!(conn, u64::MAX);
    guard(u64::MAX, || match c.live().and_then(Connection::timeout) {
        Some(t) => nanos_until(t, now()),
        None => u64::MAX,
    })
}

/// Time until quiche_conn_on_timeout is due, in ms rounded up (UINT64_MAX:
/// none), so a pending timer never reads 0 (see [`nanos_until`]).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_timeout_as_millis(conn: *const quiche_conn) -> u64 {
    // SAFETY: forwarded.
    let ns = unsafe { quiche_conn_timeout_as_nanos(conn) };
    if ns == u64::MAX {
        u64::MAX
    } else {
        ns.div_ceil(1_000_000)
    }
}

/// Nanoseconds from `now` to `deadline`, at least 1. Event loops fire timers
/// a little early by our clock (libev measures from the time it cached at
/// the start of its iteration), so on_timeout may find nothing due; if the
/// deadline then passes before the app re-arms, a 0 here would make libev's
/// `ev_timer_again` (quiche's examples) stop the timer for good: a closing
/// connection never closed.
pub(crate) fn nanos_until(deadline: Instant, now: Instant) -> u64 {
    let ns = deadline.saturating_duration_since(now).as_nanos();
    u64::try_from(ns).unwrap_or(u64::MAX).max(1)
}

/// Run the timers that are due (loss detection, idle timeout, pacing).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_on_timeout(conn: *mut quiche_conn) {
    let c = conn_mut!(conn);
    guard((), || {
        if let Some(live) = c.live_mut() {
            live.on_timeout(now());
            if live.is_closed() {
                log_line(&format!("{}: connection closed", &c.trace_id[..c.trace_id.len() - 1]));
            }
        }
    })
}

/// Close the connection with an application (`app`) or transport error
/// `err` and a reason. 0, or QUICHE_ERR_DONE if it is already closing.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_close(
    conn: *mut quiche_conn,
    app: bool,
    err: u64,
    reason: *const u8,
    reason_len: usize,
) -> c_int {
    let c = conn_mut!(conn, QUICHE_ERR_INVALID_STATE.c());
    guard(QUICHE_ERR_INVALID_STATE.c(), || {
        // SAFETY: `reason` holds `reason_len` bytes.
        let Some(r) = (unsafe { slice(reason, reason_len) }) else { return QUICHE_ERR_INVALID_STATE.c() };
        let Some(live) = c.live_mut() else { return QUICHE_ERR_DONE.c() };
        if live.is_closed() || live.is_draining() || live.local_error().is_some() {
            return QUICHE_ERR_DONE.c();
        }
        live.close(app, err, r, now());
        0
    })
}

/// Point `*out` at `b` (`*out_len` bytes; NULL and 0 when empty).
pub(crate) unsafe fn out_bytes(b: &[u8], out: *mut *const u8, out_len: *mut usize) {
    // SAFETY: the out pointers are valid when not NULL.
    unsafe {
        if let Some(o) = out.as_mut() {
            *o = if b.is_empty() { std::ptr::null() } else { b.as_ptr() };
        }
        if let Some(l) = out_len.as_mut() {
            *l = b.len();
        }
    }
}

/// The connection's trace ID (hex of our first source ID; valid while the
/// connection lives).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_trace_id(
    conn: *const quiche_conn,
    out: *mut *const u8,
    out_len: *mut usize,
) {
    crate::guard((), || {
        let c = conn_ref!(conn);
        // SAFETY: forwarded out pointers; the bytes live in the connection.
        unsafe { out_bytes(&c.trace_id.as_bytes()[..c.trace_id.len() - 1], out, out_len) };
    })
}

/// Our first source connection ID.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_source_id(
    conn: *const quiche_conn,
    out: *mut *const u8,
    out_len: *mut usize,
) {
    crate::guard((), || {
        let c = conn_ref!(conn);
        // SAFETY: as above.
        unsafe { out_bytes(c.scid.as_slice(), out, out_len) };
    })
}

/// The negotiated ALPN protocol (empty before the handshake).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_application_proto(
    conn: *const quiche_conn,
    out: *mut *const u8,
    out_len: *mut usize,
) {
    crate::guard((), || {
        let c = conn_ref!(conn);
        // SAFETY: as above.
        unsafe { out_bytes(c.live().map_or(&[], Connection::application_proto), out, out_len) };
    })
}

/// The SNI the client sent (server) or asked for (client).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_server_name(
    conn: *const quiche_conn,
    out: *mut *const u8,
    out_len: *mut usize,
) {
    crate::guard((), || {
        let c = conn_ref!(conn);
        let name = c.live().and_then(Connection::server_name).unwrap_or("");
        // SAFETY: as above.
        unsafe { out_bytes(name.as_bytes(), out, out_len) };
    })
}

/// Not supported: the peer's certificate is not exposed (`*out_len` = 0).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_peer_cert(
    _conn: *const quiche_conn,
    out: *mut *const u8,
    out_len: *mut usize,
) {
    crate::guard((), || {
        // SAFETY: as above.
        unsafe { out_bytes(&[], out, out_len) };
    })
}

/// Not supported (no session resumption): `*out_len` = 0.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_session(
    _conn: *const quiche_conn,
    out: *mut *const u8,
    out_len: *mut usize,
) {
    crate::guard((), || {
        // SAFETY: as above.
        unsafe { out_bytes(&[], out, out_len) };
    })
}

/// Not supported (no session resumption): QUICHE_ERR_TLS_FAIL.
#[no_mangle]
pub extern "C" fn quiche_conn_set_session(
    _conn: *mut quiche_conn,
    _buf: *const u8,
    _buf_len: usize,
) -> c_int {
    crate::guard(crate::quiche::QUICHE_ERR_INVALID_STATE.c(), || super::QUICHE_ERR_TLS_FAIL.c())
}

/// Not supported per connection (use quiche_config_log_keys with
/// SSLKEYLOGFILE): returns false.
#[no_mangle]
pub extern "C" fn quiche_conn_set_keylog_path(_conn: *mut quiche_conn, _path: *const c_char) -> bool {
    crate::guard(false, || false)
}

/// Not supported (mpquic's qlog events are in its Rust and mpquic_* APIs):
/// returns false.
#[no_mangle]
pub extern "C" fn quiche_conn_set_qlog_path(
    _conn: *mut quiche_conn,
    _path: *const c_char,
    _log_title: *const c_char,
    _log_desc: *const c_char,
) -> bool {
    crate::guard(false, || false)
}

/// A bool fact of the engine connection (false before it exists).
unsafe fn is(conn: *const quiche_conn, f: impl FnOnce(&Connection) -> bool) -> bool {
    let c = conn_ref!(conn, false);
    guard(false, || c.live().is_some_and(f))
}

/// The handshake is complete.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_established(conn: *const quiche_conn) -> bool {
    // SAFETY: forwarded.
    unsafe { is(conn, |c| c.is_established()) }
}
/// Always false: no session resumption.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_resumed(conn: *const quiche_conn) -> bool {
    // SAFETY: forwarded.
    unsafe { is(conn, |_| false) }
}
/// Always false: no 0-RTT.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_in_early_data(conn: *const quiche_conn) -> bool {
    // SAFETY: forwarded.
    unsafe { is(conn, |_| false) }
}
/// Some stream has data, a fin or a reset to read.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_readable(conn: *const quiche_conn) -> bool {
    // SAFETY: forwarded.
    unsafe { is(conn, |c| !c.readable().is_empty()) }
}
/// The connection is draining (closed, waiting before it is freed).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_draining(conn: *const quiche_conn) -> bool {
    // SAFETY: forwarded.
    unsafe { is(conn, |c| c.is_draining()) }
}
/// The connection is closed: free it.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_closed(conn: *const quiche_conn) -> bool {
    // SAFETY: forwarded.
    unsafe { is(conn, |c| c.is_closed()) }
}
/// The connection closed because it was idle too long (neither side
/// sent a CONNECTION_CLOSE).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_timed_out(conn: *const quiche_conn) -> bool {
    // SAFETY: forwarded.
    unsafe { is(conn, |c| c.is_closed() && c.peer_error().is_none() && c.local_error().is_none()) }
}
/// mpquic extension: multipath was negotiated.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_multipath(conn: *const quiche_conn) -> bool {
    // SAFETY: forwarded.
    unsafe { is(conn, |c| c.is_multipath()) }
}

/// Whether this is the server side.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_server(conn: *const quiche_conn) -> bool {
    crate::guard(false, || {
        let c = conn_ref!(conn, false);
        match &c.state {
            State::Pending(_) => true,
            State::Live(l) => l.is_server(),
        }
    })
}

/// Copy out a close error; false if there is none.
unsafe fn close_info(
    e: Option<&engine::CloseInfo>,
    is_app: *mut bool,
    error_code: *mut u64,
    reason: *mut *const u8,
    reason_len: *mut usize,
) -> bool {
    let Some(e) = e else { return false };
    // SAFETY: the out pointers are valid when not NULL; the reason lives in
    // the connection.
    unsafe {
        if let Some(a) = is_app.as_mut() {
            *a = e.is_app;
        }
        if let Some(c) = error_code.as_mut() {
            *c = e.code;
        }
        out_bytes(&e.reason, reason, reason_len);
    }
    true
}

/// The error the peer closed the connection with, if it did.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_peer_error(
    conn: *const quiche_conn,
    is_app: *mut bool,
    error_code: *mut u64,
    reason: *mut *const u8,
    reason_len: *mut usize,
) -> bool {
    let c = conn_ref!(conn, false);
    // SAFETY: forwarded.
    guard(false, || unsafe {
        close_info(c.live().and_then(Connection::peer_error), is_app, error_code, reason, reason_len)
    })
}

/// The error we closed the connection with, if we did.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_local_error(
    conn: *const quiche_conn,
    is_app: *mut bool,
    error_code: *mut u64,
    reason: *mut *const u8,
    reason_len: *mut usize,
) -> bool {
    let c = conn_ref!(conn, false);
    // SAFETY: forwarded.
    guard(false, || unsafe {
        close_info(c.live().and_then(Connection::local_error), is_app, error_code, reason, reason_len)
    })
}
