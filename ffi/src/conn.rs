//! `mpquic_conn`: a QUIC connection driven by the caller's datagrams and
//! clock.

use std::ffi::{c_char, c_void};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use engine::endpoint::{Endpoint, Handle};
use engine::{Connection, ConnectionId, PathId, RecvInfo};
use libc::{sockaddr, sockaddr_storage, socklen_t, ssize_t};

use crate::addr::{from_c, to_c, zeroed_storage};
use crate::config::mpquic_config;
use crate::{
    c_str, conn_error, guard, path_error, slice, slice_mut, stream_error, MPQUIC_ERROR_BUFFER_TOO_SHORT,
    MPQUIC_ERROR_DONE, MPQUIC_ERROR_INTERNAL, MPQUIC_ERROR_INVALID_ARGUMENT, MPQUIC_ERROR_INVALID_STATE,
};

/// Maps the caller's nanosecond clock to `Instant`s: the first value seen is
/// anchored to an `Instant` taken then, and later values are offsets from it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    base: Instant,
    base_ns: u64,
}

impl Clock {
    /// Anchor `now_ns` to the current instant. This is the only clock read
    /// in the library; the engine itself only ever sees derived instants.
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn new(now_ns: u64) -> Clock {
        Clock { base: Instant::now(), base_ns: now_ns }
    }

    /// The instant of caller time `ns`.
    pub(crate) fn at(&self, ns: u64) -> Instant {
        if ns >= self.base_ns {
            self.base + Duration::from_nanos(ns - self.base_ns)
        } else {
            self.base.checked_sub(Duration::from_nanos(self.base_ns - ns)).unwrap_or(self.base)
        }
    }

    /// Caller time of instant `t`.
    pub(crate) fn ns(&self, t: Instant) -> u64 {
        if t >= self.base {
            let d = t.duration_since(self.base).as_nanos();
            self.base_ns.saturating_add(u64::try_from(d).unwrap_or(u64::MAX))
        } else {
            let d = self.base.duration_since(t).as_nanos();
            self.base_ns.saturating_sub(u64::try_from(d).unwrap_or(u64::MAX))
        }
    }
}

/// A QUIC connection (opaque). Create with mpquic_connect or mpquic_accept,
/// free with mpquic_conn_free. Not thread-safe: use from one thread at a
/// time (it may move between threads).
pub struct mpquic_conn {
    pub(crate) inner: ConnSlot,
    pub(crate) clock: Clock,
    /// The latest time the caller gave us, for calls that take no time
    /// argument (HTTP/3 closing the connection on a protocol error).
    pub(crate) last: Instant,
    /// A NEW_TOKEN token that did not fit the caller's buffer.
    pending_token: Option<Vec<u8>>,
    /// A qlog record that did not fit the caller's buffer.
    pending_qlog: Option<Vec<u8>>,
    /// The qlog file's header record was handed out.
    qlog_started: bool,
    /// The caller's pointer (mpquic_conn_set_user_data).
    user: *mut c_void,
}

/// Where an mpquic_conn's connection lives: its own, or inside an
/// mpquic_endpoint, which routes datagrams to it and so must own it; such a
/// connection is reached through the endpoint by handle on every call, so
/// the two never hold references into each other.
pub(crate) enum ConnSlot {
    Own(Box<Connection>),
    InEndpoint(NonNull<Endpoint<()>>, Handle),
}

impl Deref for ConnSlot {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match self {
            ConnSlot::Own(c) => c,
            // SAFETY: the endpoint outlives the mpquic_conn objects it hands
            // out (it frees them when it removes their connection), and C
            // uses both from one thread at a time.
            ConnSlot::InEndpoint(ep, h) => {
                unsafe { ep.as_ref() }.conn(*h).expect("connection left its endpoint")
            }
        }
    }
}

impl DerefMut for ConnSlot {
    fn deref_mut(&mut self) -> &mut Connection {
        match self {
            ConnSlot::Own(c) => c,
            // SAFETY: as for deref.
            ConnSlot::InEndpoint(ep, h) => {
                unsafe { ep.as_mut() }.get(*h).map(|(c, _)| c).expect("connection left its endpoint")
            }
        }
    }
}

impl mpquic_conn {
    fn new(inner: Connection, clock: Clock, now: Instant) -> *mut mpquic_conn {
        Self::boxed(ConnSlot::Own(Box::new(inner)), clock, now)
    }

    /// An mpquic_conn for a connection held by an endpoint.
    pub(crate) fn boxed(inner: ConnSlot, clock: Clock, now: Instant) -> *mut mpquic_conn {
        let user = std::ptr::null_mut();
        Box::into_raw(Box::new(mpquic_conn {
            inner,
            clock,
            last: now,
            pending_token: None,
            pending_qlog: None,
            qlog_started: false,
            user,
        }))
    }

    /// Whether an endpoint owns this connection.
    pub(crate) fn in_endpoint(&self) -> Option<Handle> {
        match self.inner {
            ConnSlot::InEndpoint(_, h) => Some(h),
            ConnSlot::Own(_) => None,
        }
    }

    /// The instant of caller time `ns`, remembered as the latest time.
    pub(crate) fn now(&mut self, ns: u64) -> Instant {
        let t = self.clock.at(ns);
        self.last = self.last.max(t);
        t
    }
}

/// Where a received datagram came from and arrived.
#[repr(C)]
pub struct mpquic_recv_info {
    /// The peer's address (sockaddr_in or sockaddr_in6).
    pub from: *const sockaddr,
    /// Length of `from`.
    pub from_len: socklen_t,
    /// Our local address the datagram arrived on.
    pub to: *const sockaddr,
    /// Length of `to`.
    pub to_len: socklen_t,
    /// The ECN bits of the datagram's IP header, as IP_RECVTOS /
    /// IPV6_RECVTCLASS report them (the low two bits count; 0 if unknown).
    pub ecn: u8,
}

/// How to send a datagram written by mpquic_conn_send.
#[repr(C)]
pub struct mpquic_send_info {
    /// Local address to send from (pick the socket bound to it).
    pub from: sockaddr_storage,
    /// Length of `from`.
    pub from_len: socklen_t,
    /// Peer address to send to.
    pub to: sockaddr_storage,
    /// Length of `to`.
    pub to_len: socklen_t,
    /// Wire Path ID of the path the datagram belongs to (0: the first path).
    pub path_id: u32,
    /// Pacing: do not send before this time (caller's clock, ns).
    pub at_ns: u64,
    /// The ECN bits to put in the datagram's IP header (IP_TOS /
    /// IPV6_TCLASS: 2 is ECT(0), 0 none). A caller that cannot set them
    /// loses nothing: the path stops marking after its test.
    pub ecn: u8,
}

/// Connection-wide counters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mpquic_stats {
    /// Datagrams received.
    pub recv: u64,
    /// Datagrams sent.
    pub sent: u64,
    /// Packets declared lost.
    pub lost: u64,
    /// UDP payload bytes sent.
    pub sent_bytes: u64,
    /// UDP payload bytes received.
    pub recv_bytes: u64,
    /// Stream bytes retransmitted.
    pub retrans_bytes: u64,
    /// Packets dropped (undecryptable or unparsable).
    pub dropped: u64,
    /// Paths opened over the connection's life.
    pub paths: u64,
    /// Stream bytes received that had already been received (redundant
    /// copies, spurious retransmissions).
    pub dup_stream_bytes: u64,
    /// New stream bytes sent ahead of older unsent data (the arp scheduler
    /// giving a slow path data the fast paths will not reach first).
    pub sent_ahead_bytes: u64,
    /// 1-RTT key updates (ours and the peer's).
    pub key_updates: u64,
    /// DATAGRAM frames sent.
    pub dgram_sent: u64,
    /// DATAGRAM frames received (those dropped included).
    pub dgram_recv: u64,
    /// Datagrams received and pushed out of a full receive queue unread.
    pub dgram_dropped: u64,
}

/// Per-path statistics.
#[repr(C)]
pub struct mpquic_path_stats {
    /// Wire Path ID.
    pub path_id: u32,
    /// Local address.
    pub local: sockaddr_storage,
    /// Length of `local`.
    pub local_len: socklen_t,
    /// Peer address.
    pub peer: sockaddr_storage,
    /// Length of `peer`.
    pub peer_len: socklen_t,
    /// Validated and usable.
    pub active: bool,
    /// True if the path is a backup path (used only when no other works).
    pub backup: bool,
    /// Smoothed RTT (ns).
    pub srtt_ns: u64,
    /// Minimum RTT (ns).
    pub min_rtt_ns: u64,
    /// RTT variation (ns).
    pub rttvar_ns: u64,
    /// Congestion window (bytes).
    pub cwnd: u64,
    /// Bytes in flight.
    pub bytes_in_flight: u64,
    /// Pacing rate (bytes/s).
    pub pacing_rate: u64,
    /// Bandwidth estimate (bytes/s).
    pub bandwidth: u64,
    /// Packets sent.
    pub sent: u64,
    /// Packets received.
    pub recv: u64,
    /// Packets declared lost.
    pub lost: u64,
    /// UDP payload bytes sent.
    pub sent_bytes: u64,
    /// UDP payload bytes received.
    pub recv_bytes: u64,
    /// Stream bytes sent for the first time on this path.
    pub stream_bytes: u64,
    /// Stream bytes retransmitted on this path.
    pub retrans_bytes: u64,
    /// Stream bytes sent on this path as redundant copies.
    pub redundant_bytes: u64,
    /// Bytes of this path's packets acknowledged.
    pub acked_bytes: u64,
    /// Bytes of this path's packets declared lost.
    pub lost_bytes: u64,
    /// Times the path went silent while another answered (data resent elsewhere).
    pub suspicions: u64,
    /// Datagram size (UDP payload) the path sends now; path MTU discovery moves it.
    pub mtu: u64,
    /// Congestion-controller state name, NUL-terminated (truncated to fit).
    pub cc_state: [c_char; 32],
}

/// Kinds of path events.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mpquic_path_event_type {
    /// The peer opened a path (addresses in the event).
    MPQUIC_PATH_EVENT_NEW = 0,
    /// Path validation succeeded.
    MPQUIC_PATH_EVENT_VALIDATED = 1,
    /// Path validation failed.
    MPQUIC_PATH_EVENT_FAILED_VALIDATION = 2,
    /// The path was abandoned (by either side, or it went silent).
    MPQUIC_PATH_EVENT_ABANDONED = 3,
    /// The peer changed the path's status (`backup` in the event).
    MPQUIC_PATH_EVENT_STATUS_CHANGED = 4,
    /// The path moved to the address pair in the event (mpquic_conn_migrate,
    /// or the server's preferred address), after validating it.
    MPQUIC_PATH_EVENT_MIGRATED = 5,
}

/// Something that happened to a path (mpquic_conn_path_event_next).
#[repr(C)]
pub struct mpquic_path_event {
    /// What happened.
    pub kind: mpquic_path_event_type,
    /// The path.
    pub path_id: u32,
    /// For MPQUIC_PATH_EVENT_NEW: our local address.
    pub local: sockaddr_storage,
    /// Length of `local` (0 when not set).
    pub local_len: socklen_t,
    /// For MPQUIC_PATH_EVENT_NEW: the peer's address.
    pub peer: sockaddr_storage,
    /// Length of `peer` (0 when not set).
    pub peer_len: socklen_t,
    /// For MPQUIC_PATH_EVENT_STATUS_CHANGED: the new status is backup.
    pub backup: bool,
}

/// Borrow the connection behind `conn` for one call, catching panics.
/// `on_null` is returned for a NULL handle, `on_err` after a panic.
pub(crate) unsafe fn with_conn<R>(
    conn: *mut mpquic_conn,
    on_null: R,
    on_err: R,
    f: impl FnOnce(&mut mpquic_conn) -> R,
) -> R {
    // SAFETY: the caller passes a live connection used by one thread.
    let Some(c) = (unsafe { conn.as_mut() }) else { return on_null };
    // A panic leaves the connection possibly inconsistent; the caller is
    // told MPQUIC_ERROR_INTERNAL (or the `on_err` value) and should free it.
    crate::guard(on_err, move || f(c))
}

/// [`with_conn`] for calls that return a byte count or a negative
/// mpquic_error.
///
/// # Safety
/// As [`with_conn`].
pub(crate) unsafe fn with_conn_len(
    conn: *mut mpquic_conn,
    f: impl FnOnce(&mut mpquic_conn) -> ssize_t,
) -> ssize_t {
    // SAFETY: forwarded contract.
    unsafe {
        with_conn(
            conn,
            MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t,
            MPQUIC_ERROR_INTERNAL.code() as ssize_t,
            f,
        )
    }
}

/// A send's result for C: the datagram's length with `info` filled in, 0
/// when nothing is due, or a negative mpquic_error.
fn sent_len(
    c: &mpquic_conn,
    res: Result<Option<(usize, engine::SendInfo)>, engine::Error>,
    info: &mut mpquic_send_info,
) -> ssize_t {
    match res {
        Ok(Some((n, si))) => {
            fill_send_info(c, &si, info);
            n as ssize_t
        }
        Ok(None) => 0,
        Err(e) => conn_error(&e).code() as ssize_t,
    }
}

unsafe fn cid_arg(p: *const u8, len: usize) -> Option<ConnectionId> {
    // SAFETY: forwarded contract.
    ConnectionId::from_slice(unsafe { slice(p, len) }?)
}

/// Open a client connection from `local` to `peer` (IPv4 or IPv6 socket
/// addresses). `server_name` (may be NULL) is used for SNI and certificate
/// verification. `scid` (may be NULL, then a random 16-byte ID is used) is
/// our connection ID, `scid_len` <= 20. `now_ns` is the caller's monotonic
/// clock; every later time argument of this connection must use the same
/// clock. Returns NULL on invalid arguments or TLS setup failure. The
/// config is only read during the call. Free the result with
/// mpquic_conn_free.
#[no_mangle]
pub unsafe extern "C" fn mpquic_connect(
    server_name: *const c_char,
    scid: *const u8,
    scid_len: usize,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    config: *const mpquic_config,
    now_ns: u64,
) -> *mut mpquic_conn {
    // SAFETY: forwarded contract; no session.
    unsafe {
        mpquic_connect_with_session(
            server_name,
            scid,
            scid_len,
            local,
            local_len,
            peer,
            peer_len,
            std::ptr::null(),
            0,
            config,
            now_ns,
        )
    }
}

/// Like mpquic_connect, resuming the TLS session in `session` (the bytes
/// mpquic_conn_session gave on an earlier connection to the same server;
/// NULL: a full handshake). With mpquic_config_enable_early_data on both
/// sides and a session that allows it, stream data written before the
/// handshake completes leaves in 0-RTT (mpquic_conn_is_in_early_data);
/// mpquic_conn_is_resumed and mpquic_conn_is_early_data_accepted say what
/// the server took. A session the server no longer accepts means a full
/// handshake; bytes that are not a session give NULL.
#[no_mangle]
pub unsafe extern "C" fn mpquic_connect_with_session(
    server_name: *const c_char,
    scid: *const u8,
    scid_len: usize,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    session: *const u8,
    session_len: usize,
    config: *const mpquic_config,
    now_ns: u64,
) -> *mut mpquic_conn {
    guard(std::ptr::null_mut(), || {
        // SAFETY: argument contracts as documented.
        let (local, peer, cfg) =
            unsafe { (from_c(local, local_len), from_c(peer, peer_len), config.as_ref()) };
        let (Some(local), Some(peer), Some(cfg)) = (local, peer, cfg) else { return std::ptr::null_mut() };
        // The C API is for real networks: never the simulator's AEAD.
        if cfg.inner.uses_sim_aead() {
            return std::ptr::null_mut();
        }
        let name = if server_name.is_null() {
            None
        } else {
            // SAFETY: NUL-terminated when not NULL.
            match unsafe { c_str(server_name) } {
                Some(s) => Some(s),
                None => return std::ptr::null_mut(),
            }
        };
        let scid = if scid.is_null() {
            engine::random_cid(16)
        } else {
            // SAFETY: `scid` points to `scid_len` bytes.
            match unsafe { cid_arg(scid, scid_len) } {
                Some(c) => c,
                None => return std::ptr::null_mut(),
            }
        };
        // SAFETY: `session` points to `session_len` bytes when not NULL.
        let session = if session.is_null() { None } else { unsafe { slice(session, session_len) } };
        let clock = Clock::new(now_ns);
        let now = clock.at(now_ns);
        match engine::connect_with_session(name, &scid, local, peer, &cfg.inner, session, now) {
            Ok(inner) => mpquic_conn::new(inner, clock, now),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

/// Accept a client's connection on a server. `scid` is our connection ID
/// (when the client came through a Retry, the Retry's SCID, i.e.
/// `retry_scid`); `odcid` is the DCID of the client's first Initial (see
/// mpquic_validator_handle, which provides both). `retry_scid` may be NULL.
/// Pass the client's Initial to mpquic_conn_recv next. Returns NULL on
/// invalid arguments or TLS setup failure (e.g. no certificate). Free with
/// mpquic_conn_free.
#[no_mangle]
pub unsafe extern "C" fn mpquic_accept(
    scid: *const u8,
    scid_len: usize,
    odcid: *const u8,
    odcid_len: usize,
    retry_scid: *const u8,
    retry_scid_len: usize,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    config: *const mpquic_config,
    now_ns: u64,
) -> *mut mpquic_conn {
    guard(std::ptr::null_mut(), || {
        // SAFETY: argument contracts as documented.
        let (local, peer, cfg) =
            unsafe { (from_c(local, local_len), from_c(peer, peer_len), config.as_ref()) };
        let (Some(local), Some(peer), Some(cfg)) = (local, peer, cfg) else { return std::ptr::null_mut() };
        // The C API is for real networks: never the simulator's AEAD.
        if cfg.inner.uses_sim_aead() {
            return std::ptr::null_mut();
        }
        // SAFETY: pointers to the given lengths.
        let (scid, odcid) = unsafe { (cid_arg(scid, scid_len), cid_arg(odcid, odcid_len)) };
        let (Some(scid), Some(odcid)) = (scid, odcid) else { return std::ptr::null_mut() };
        let retry = if retry_scid.is_null() {
            None
        } else {
            // SAFETY: as above.
            match unsafe { cid_arg(retry_scid, retry_scid_len) } {
                Some(c) => Some(c),
                None => return std::ptr::null_mut(),
            }
        };
        let clock = Clock::new(now_ns);
        let now = clock.at(now_ns);
        match engine::accept(&scid, &odcid, retry.as_ref(), local, peer, &cfg.inner, now) {
            Ok(inner) => mpquic_conn::new(inner, clock, now),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

/// Free a connection (NULL is ignored). Any mpquic_h3_conn used with it
/// must not be used with it again. A connection of an mpquic_endpoint is
/// not freed here (the call does nothing): its endpoint frees it
/// (mpquic_endpoint_rearm once closed, mpquic_endpoint_remove).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_free(conn: *mut mpquic_conn) {
    // SAFETY: a live connection or NULL.
    if unsafe { conn.as_ref() }.is_none_or(|c| c.in_endpoint().is_some()) {
        return;
    }
    // SAFETY: `conn` came from mpquic_connect/accept and is freed once.
    let b = unsafe { Box::from_raw(conn) };
    crate::guard((), move || drop(b));
}

/// Process one received UDP datagram. `buf` is decrypted in place (its
/// contents are clobbered). Returns the number of bytes processed, or a
/// negative mpquic_error: MPQUIC_ERROR_TRANSPORT / MPQUIC_ERROR_PEER_CLOSED
/// when the connection failed (keep calling send to deliver the close),
/// MPQUIC_ERROR_CLOSED once it is closed. Undecryptable or malformed
/// packets are dropped silently, as RFC 9000 requires.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_recv(
    conn: *mut mpquic_conn,
    buf: *mut u8,
    buf_len: usize,
    info: *const mpquic_recv_info,
    now_ns: u64,
) -> ssize_t {
    // SAFETY: see with_conn and each pointer's contract.
    unsafe {
        with_conn_len(conn, |c| {
            let (Some(buf), Some(info)) = (slice_mut(buf, buf_len), info.as_ref()) else {
                return MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t;
            };
            let (Some(from), Some(to)) = (from_c(info.from, info.from_len), from_c(info.to, info.to_len))
            else {
                return MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t;
            };
            let now = c.now(now_ns);
            let info = RecvInfo { ecn: engine::Ecn::from_tos(info.ecn), ..RecvInfo::new(from, to) };
            match c.inner.recv(buf, info, now) {
                Ok(n) => n as ssize_t,
                Err(e) => conn_error(&e).code() as ssize_t,
            }
        })
    }
}

fn fill_send_info(c: &mpquic_conn, si: &engine::SendInfo, out: &mut mpquic_send_info) {
    out.from_len = to_c(&si.from, &mut out.from);
    out.to_len = to_c(&si.to, &mut out.to);
    out.path_id = si.path_id.0;
    out.at_ns = c.clock.ns(si.at);
    out.ecn = si.ecn.tos_bits();
}

/// Write the next datagram to send into `out` (at least 1200 bytes; use
/// the configured max UDP payload size). Returns its length and fills
/// `info` with the path's addresses, Path ID and pacing time; returns 0
/// when there is nothing to send now (wait for a datagram or the timeout),
/// or a negative mpquic_error (MPQUIC_ERROR_CLOSED once closed,
/// MPQUIC_ERROR_BUFFER_TOO_SHORT). With several paths the configured
/// scheduler chooses the path: send from the socket bound to `info->from`.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_send(
    conn: *mut mpquic_conn,
    out: *mut u8,
    out_len: usize,
    info: *mut mpquic_send_info,
    now_ns: u64,
) -> ssize_t {
    // SAFETY: see with_conn and each pointer's contract.
    unsafe {
        with_conn_len(conn, |c| {
            let (Some(out), Some(info)) = (slice_mut(out, out_len), info.as_mut()) else {
                return MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t;
            };
            let now = c.now(now_ns);
            let res = c.inner.send(out, now);
            sent_len(c, res, info)
        })
    }
}

/// Like mpquic_conn_send, but only for path `path_id`. Returns
/// MPQUIC_ERROR_INVALID_PATH for an unknown path.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_send_on_path(
    conn: *mut mpquic_conn,
    out: *mut u8,
    out_len: usize,
    path_id: u32,
    info: *mut mpquic_send_info,
    now_ns: u64,
) -> ssize_t {
    // SAFETY: see with_conn and each pointer's contract.
    unsafe {
        with_conn_len(conn, |c| {
            let (Some(out), Some(info)) = (slice_mut(out, out_len), info.as_mut()) else {
                return MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t;
            };
            let now = c.now(now_ns);
            let res = c.inner.send_on_path(out, PathId(path_id), now);
            sent_len(c, res, info)
        })
    }
}

/// The time (caller's clock, ns) at which mpquic_conn_on_timeout must be
/// called, or UINT64_MAX if no timer is armed (e.g. closed).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_timeout_ns(conn: *const mpquic_conn) -> u64 {
    // SAFETY: only read; see with_conn.
    unsafe {
        with_conn(conn.cast_mut(), u64::MAX, u64::MAX, |c| match c.inner.timeout() {
            Some(t) => c.clock.ns(t),
            None => u64::MAX,
        })
    }
}

/// Handle timer expiry (loss detection, PTO, ACK delay, idle timeout, path
/// validation, closing). Call when the time from mpquic_conn_timeout_ns has
/// come, then call mpquic_conn_send until it returns 0.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_on_timeout(conn: *mut mpquic_conn, now_ns: u64) {
    // SAFETY: see with_conn.
    unsafe {
        with_conn(conn, (), (), |c| {
            let now = c.now(now_ns);
            c.inner.on_timeout(now)
        })
    }
}

/// Write to stream `stream_id`, opening it if needed. Returns how many
/// bytes were accepted (fewer than `len` when buffers or flow control are
/// full; `fin` takes effect only if all were accepted), or a negative
/// mpquic_error (MPQUIC_ERROR_DONE: nothing accepted now).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_stream_send(
    conn: *mut mpquic_conn,
    stream_id: u64,
    buf: *const u8,
    len: usize,
    fin: bool,
) -> ssize_t {
    // SAFETY: see with_conn and slice.
    unsafe {
        with_conn_len(conn, |c| {
            let Some(buf) = slice(buf, len) else {
                return MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t;
            };
            match c.inner.stream_send(stream_id, buf, fin) {
                Ok(n) => n as ssize_t,
                Err(e) => stream_error(&e).code() as ssize_t,
            }
        })
    }
}

/// Read from stream `stream_id` into `out`. Returns the number of bytes
/// read and sets `*fin` (may be NULL) when the stream's end was reached;
/// MPQUIC_ERROR_DONE when nothing is available, MPQUIC_ERROR_STREAM_RESET
/// if the peer reset it, or another negative mpquic_error.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_stream_recv(
    conn: *mut mpquic_conn,
    stream_id: u64,
    out: *mut u8,
    len: usize,
    fin: *mut bool,
) -> ssize_t {
    // SAFETY: see with_conn and slice_mut; `fin` is NULL or writable.
    unsafe {
        with_conn_len(conn, |c| {
            let Some(out) = slice_mut(out, len) else {
                return MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t;
            };
            read_result(c.inner.stream_recv(stream_id, out), fin)
        })
    }
}

/// A read's result for C: the byte count with `*fin` set (`fin` may be
/// NULL), or a negative mpquic_error.
///
/// # Safety
/// `fin` is NULL or writable.
unsafe fn read_result(res: Result<(usize, bool), engine::stream::StreamError>, fin: *mut bool) -> ssize_t {
    match res {
        Ok((n, f)) => {
            // SAFETY: the caller's promise.
            if let Some(fp) = unsafe { fin.as_mut() } {
                *fp = f;
            }
            n as ssize_t
        }
        Err(e) => stream_error(&e).code() as ssize_t,
    }
}

/// Look at stream `stream_id`'s next readable bytes without copying them:
/// sets `*data` to them (valid until the next call on `conn`) and `*fin`
/// (may be NULL) when they end the stream, and returns how many there are
/// (up to one 64 KiB segment). Nothing is released until
/// mpquic_conn_stream_consume. Errors as mpquic_conn_stream_recv.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_stream_peek(
    conn: *mut mpquic_conn,
    stream_id: u64,
    data: *mut *const u8,
    fin: *mut bool,
) -> ssize_t {
    // SAFETY: see with_conn; `data` is checked non-NULL, `fin` is NULL or
    // writable.
    unsafe {
        with_conn_len(conn, |c| {
            let Some(dp) = data.as_mut() else {
                return MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t;
            };
            let res = c.inner.stream_peek(stream_id).map(|(bytes, f)| {
                *dp = bytes.as_ptr();
                (bytes.len(), f)
            });
            read_result(res, fin)
        })
    }
}

/// Release up to `len` readable bytes of stream `stream_id` as read (after
/// mpquic_conn_stream_peek). Returns how many and sets `*fin` (may be
/// NULL) when the stream's end was reached; errors as
/// mpquic_conn_stream_recv.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_stream_consume(
    conn: *mut mpquic_conn,
    stream_id: u64,
    len: usize,
    fin: *mut bool,
) -> ssize_t {
    // SAFETY: see with_conn; `fin` is NULL or writable.
    unsafe { with_conn_len(conn, |c| read_result(c.inner.stream_consume(stream_id, len), fin)) }
}

/// Stop reading (STOP_SENDING, if `read`) and/or writing (RESET_STREAM, if
/// `write`) stream `stream_id` with application error `code`. Returns 0 or
/// a negative mpquic_error.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_stream_shutdown(
    conn: *mut mpquic_conn,
    stream_id: u64,
    read: bool,
    write: bool,
    code: u64,
) -> i32 {
    // SAFETY: see with_conn.
    unsafe {
        with_conn(conn, MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |c| {
            match c.inner.stream_shutdown(stream_id, read, write, code) {
                Ok(()) => 0,
                Err(e) => stream_error(&e).code(),
            }
        })
    }
}

/// Bytes mpquic_conn_stream_send would accept now on the stream, or a
/// negative mpquic_error.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_stream_capacity(conn: *const mpquic_conn, stream_id: u64) -> ssize_t {
    // SAFETY: see with_conn.
    unsafe {
        with_conn_len(conn.cast_mut(), |c| match c.inner.stream_capacity(stream_id) {
            Ok(n) => n as ssize_t,
            Err(e) => stream_error(&e).code() as ssize_t,
        })
    }
}

/// Cap the bytes written to stream `stream_id` and not yet sent at `bytes`
/// (at least 1), from now on: mpquic_config_set_stream_send_unsent for one
/// stream, e.g. more room for a lone download than for each of a thousand.
/// Returns 0 or a negative mpquic_error.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_stream_set_send_unsent(
    conn: *mut mpquic_conn,
    stream_id: u64,
    bytes: usize,
) -> i32 {
    // SAFETY: see with_conn.
    unsafe {
        with_conn(conn, MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |c| {
            match c.inner.set_stream_send_unsent(stream_id, bytes) {
                Ok(()) => 0,
                Err(e) => stream_error(&e).code(),
            }
        })
    }
}

/// Whether all of the stream's data, including its end, has been read.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_stream_finished(conn: *const mpquic_conn, stream_id: u64) -> bool {
    // SAFETY: see with_conn.
    unsafe { with_conn(conn.cast_mut(), false, false, |c| c.inner.stream_finished(stream_id)) }
}

/// Write up to `cap` IDs of streams with data (or an end or reset) to read
/// into `ids`; returns how many streams there are in total (which may
/// exceed `cap`), or a negative mpquic_error.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_readable(
    conn: *const mpquic_conn,
    ids: *mut u64,
    cap: usize,
) -> ssize_t {
    // SAFETY: see with_conn; `ids` holds `cap` entries.
    unsafe { with_conn_len(conn.cast_mut(), |c| copy_ids(c.inner.readable(), ids, cap)) }
}

/// Like mpquic_conn_readable, for streams that can accept more data.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_writable(
    conn: *const mpquic_conn,
    ids: *mut u64,
    cap: usize,
) -> ssize_t {
    // SAFETY: see with_conn; `ids` holds `cap` entries.
    unsafe { with_conn_len(conn.cast_mut(), |c| copy_ids(c.inner.writable(), ids, cap)) }
}

unsafe fn copy_ids(v: Vec<u64>, ids: *mut u64, cap: usize) -> ssize_t {
    if cap > 0 && ids.is_null() {
        return MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t;
    }
    for (i, id) in v.iter().take(cap).enumerate() {
        // SAFETY: i < cap and `ids` holds `cap` entries.
        unsafe { ids.add(i).write(*id) };
    }
    v.len() as ssize_t
}

/// Close the connection with an application (`app`) or transport error
/// `code` and a reason phrase (`reason` may be NULL if `reason_len` is 0).
/// Keep calling mpquic_conn_send / mpquic_conn_on_timeout until
/// mpquic_conn_is_closed. Returns 0, or MPQUIC_ERROR_INVALID_ARGUMENT.
/// Closing twice is harmless.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_close(
    conn: *mut mpquic_conn,
    app: bool,
    code: u64,
    reason: *const u8,
    reason_len: usize,
    now_ns: u64,
) -> i32 {
    // SAFETY: see with_conn and slice.
    unsafe {
        with_conn(conn, MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |c| {
            let Some(reason) = slice(reason, reason_len) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
            let now = c.now(now_ns);
            c.inner.close(app, code, reason, now);
            0
        })
    }
}

/// Start a 1-RTT key update now if allowed (see Connection::update_keys);
/// returns 1 if it started, 0 if not allowed yet, or a negative mpquic_error.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_update_keys(conn: *mut mpquic_conn, now_ns: u64) -> i32 {
    // SAFETY: see with_conn.
    unsafe {
        with_conn(conn, MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |c| {
            let now = c.now(now_ns);
            i32::from(c.inner.update_keys(now))
        })
    }
}

/// Server: send `token` (from mpquic_validator_new_token) in a NEW_TOKEN
/// frame. Returns 0, or MPQUIC_ERROR_INVALID_STATE (a client, an empty or
/// oversized token, too many queued), or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_send_new_token(
    conn: *mut mpquic_conn,
    token: *const u8,
    len: usize,
) -> i32 {
    // SAFETY: see with_conn and slice.
    unsafe {
        with_conn(conn, MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |c| {
            let Some(t) = slice(token, len) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
            if c.inner.send_new_token(t) {
                0
            } else {
                MPQUIC_ERROR_INVALID_STATE.code()
            }
        })
    }
}

/// Client: copy the next NEW_TOKEN token the server sent into `out`.
/// Returns its length, MPQUIC_ERROR_DONE when there is none,
/// MPQUIC_ERROR_BUFFER_TOO_SHORT (the token is kept), or
/// MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_new_token_next(
    conn: *mut mpquic_conn,
    out: *mut u8,
    out_len: usize,
) -> i64 {
    // SAFETY: forwarded contract.
    unsafe {
        with_conn_out(conn, out, out_len, |c, out| {
            let inner = &mut c.inner;
            hand_out(&mut c.pending_token, || inner.new_token_next(), out)
        })
    }
}

/// [`with_conn`] for calls that fill the caller's buffer `out`: a NULL
/// connection or buffer is MPQUIC_ERROR_INVALID_ARGUMENT.
unsafe fn with_conn_out(
    conn: *mut mpquic_conn,
    out: *mut u8,
    out_len: usize,
    f: impl FnOnce(&mut mpquic_conn, &mut [u8]) -> i64,
) -> i64 {
    let invalid = i64::from(MPQUIC_ERROR_INVALID_ARGUMENT.code());
    // SAFETY: forwarded contract (see with_conn and slice_mut).
    unsafe {
        with_conn(conn, invalid, i64::from(MPQUIC_ERROR_INTERNAL.code()), |c| match slice_mut(out, out_len) {
            Some(out) => f(c, out),
            None => invalid,
        })
    }
}

/// Copy the kept item, else `next()`'s, into `out`: its length,
/// MPQUIC_ERROR_DONE when there is none, or MPQUIC_ERROR_BUFFER_TOO_SHORT
/// with the item kept, so a later call with a larger buffer gets it.
fn hand_out(kept: &mut Option<Vec<u8>>, next: impl FnOnce() -> Option<Vec<u8>>, out: &mut [u8]) -> i64 {
    let Some(t) = kept.take().or_else(next) else { return i64::from(MPQUIC_ERROR_DONE.code()) };
    if t.len() > out.len() {
        *kept = Some(t);
        return i64::from(MPQUIC_ERROR_BUFFER_TOO_SHORT.code());
    }
    out[..t.len()].copy_from_slice(&t);
    t.len() as i64
}

/// Copy the next record of the connection's qlog file into `out`, framed
/// as the file holds it (RS, one JSON object, newline: JSON-SEQ, RFC 7464),
/// so appending each record to a `.sqlog` file makes a log qvis loads:
/// the first record is the header (`group_id` is the original destination
/// connection ID), then the events in the order they happened. Needs
/// mpquic_config_enable_qlog. Returns the record's length,
/// MPQUIC_ERROR_DONE when none is queued now (call again after the next
/// recv, send or on_timeout; events not drained are dropped past a bound),
/// MPQUIC_ERROR_BUFFER_TOO_SHORT (the record is kept for a call with a
/// larger buffer), or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_qlog_next(conn: *mut mpquic_conn, out: *mut u8, out_len: usize) -> i64 {
    // SAFETY: forwarded contract.
    unsafe {
        with_conn_out(conn, out, out_len, |c, out| {
            let (inner, started) = (&mut c.inner, &mut c.qlog_started);
            let next = || {
                let json = if *started {
                    inner.qlog_next()?
                } else {
                    *started = true;
                    inner.qlog_header()?.name("libmpquic").to_json()
                };
                let mut record = Vec::with_capacity(json.len() + 2);
                engine::qlog::write_record(&mut record, &json).ok()?;
                Some(record)
            };
            hand_out(&mut c.pending_qlog, next, out)
        })
    }
}

/// Client: present `token` (from an earlier connection's
/// mpquic_conn_new_token_next) in our Initials; only before the first
/// mpquic_conn_send. Returns 0, MPQUIC_ERROR_INVALID_STATE, or
/// MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_set_token(conn: *mut mpquic_conn, token: *const u8, len: usize) -> i32 {
    // SAFETY: see with_conn and slice.
    unsafe {
        with_conn(conn, MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |c| {
            let Some(t) = slice(token, len) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
            if c.inner.set_token(t) {
                0
            } else {
                MPQUIC_ERROR_INVALID_STATE.code()
            }
        })
    }
}

/// Client: copy the TLS session to resume on a later connection
/// (mpquic_connect_with_session) into `out`: it arrives with the server's
/// session ticket, after the handshake (servers with
/// mpquic_config_enable_session_tickets). Returns its length,
/// MPQUIC_ERROR_DONE when there is none yet, MPQUIC_ERROR_BUFFER_TOO_SHORT,
/// or MPQUIC_ERROR_INVALID_ARGUMENT. The bytes hold the server's transport
/// parameters too (for 0-RTT); store them like a password.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_session(conn: *const mpquic_conn, out: *mut u8, out_len: usize) -> i64 {
    // SAFETY: forwarded contract.
    unsafe {
        with_conn_out(conn.cast_mut(), out, out_len, |c, out| {
            let Some(s) = c.inner.session() else { return i64::from(MPQUIC_ERROR_DONE.code()) };
            if s.len() > out.len() {
                return i64::from(MPQUIC_ERROR_BUFFER_TOO_SHORT.code());
            }
            out[..s.len()].copy_from_slice(s);
            s.len() as i64
        })
    }
}

/// The handshake resumed an earlier TLS session (client: the server took
/// the session; server: the client presented a ticket it accepted).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_is_resumed(conn: *const mpquic_conn) -> bool {
    // SAFETY: see with_conn.
    unsafe { with_conn(conn.cast_mut(), false, false, |c| c.inner.is_resumed()) }
}

/// 0-RTT keys are in use and the handshake is not complete: a client may
/// write requests now (they leave in 0-RTT), a server may answer them.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_is_in_early_data(conn: *const mpquic_conn) -> bool {
    // SAFETY: see with_conn.
    unsafe { with_conn(conn.cast_mut(), false, false, |c| c.inner.is_in_early_data()) }
}

/// After the handshake: the server accepted the client's 0-RTT data (when
/// it did not, everything sent in 0-RTT was sent again in 1-RTT).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_is_early_data_accepted(conn: *const mpquic_conn) -> bool {
    // SAFETY: see with_conn.
    unsafe { with_conn(conn.cast_mut(), false, false, |c| c.inner.is_early_data_accepted()) }
}

/// The QUIC version in use on the wire (0x00000001 or 0x6b3343cf), the
/// negotiated one once the server's first Initial has been read.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_version(conn: *const mpquic_conn) -> u32 {
    // SAFETY: see with_conn.
    unsafe { with_conn(conn.cast_mut(), 0, 0, |c| c.inner.version().wire()) }
}

/// The handshake is complete.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_is_established(conn: *const mpquic_conn) -> bool {
    // SAFETY: see with_conn.
    unsafe { with_conn(conn.cast_mut(), false, false, |c| c.inner.is_established()) }
}

/// Nothing more will happen on the connection: free it. (NULL counts as
/// closed.)
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_is_closed(conn: *const mpquic_conn) -> bool {
    // SAFETY: see with_conn.
    unsafe { with_conn(conn.cast_mut(), true, true, |c| c.inner.is_closed()) }
}

/// The connection is closing or draining (no new data is sent).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_is_draining(conn: *const mpquic_conn) -> bool {
    // SAFETY: see with_conn.
    unsafe { with_conn(conn.cast_mut(), false, false, |c| c.inner.is_draining()) }
}

/// Multipath was negotiated (both sides enabled it).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_is_multipath(conn: *const mpquic_conn) -> bool {
    // SAFETY: see with_conn.
    unsafe { with_conn(conn.cast_mut(), false, false, |c| c.inner.is_multipath()) }
}

/// This is the server side of the connection.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_is_server(conn: *const mpquic_conn) -> bool {
    // SAFETY: see with_conn.
    unsafe { with_conn(conn.cast_mut(), false, false, |c| c.inner.is_server()) }
}

/// The negotiated ALPN protocol: `*out` points into the connection (valid
/// until the next call on it), `*out_len` its length (0 if none).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_application_proto(
    conn: *const mpquic_conn,
    out: *mut *const u8,
    out_len: *mut usize,
) {
    // SAFETY: see with_conn; `out`/`out_len` are NULL or writable.
    unsafe {
        with_conn(conn.cast_mut(), (), (), |c| {
            let p = c.inner.application_proto();
            if let (Some(o), Some(l)) = (out.as_mut(), out_len.as_mut()) {
                *o = p.as_ptr();
                *l = p.len();
            }
        })
    }
}

/// How the connection was closed. If `local` is true, our close; else the
/// peer's. Returns false if that side did not close it. Otherwise fills
/// `*is_app`, `*code` and `*reason`/`*reason_len` (pointing into the
/// connection, valid until the next call on it); any out-pointer may be
/// NULL.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_close_info(
    conn: *const mpquic_conn,
    local: bool,
    is_app: *mut bool,
    code: *mut u64,
    reason: *mut *const u8,
    reason_len: *mut usize,
) -> bool {
    // SAFETY: see with_conn; out-pointers are NULL or writable.
    unsafe {
        with_conn(conn.cast_mut(), false, false, |c| {
            let info = if local { c.inner.local_error() } else { c.inner.peer_error() };
            let Some(info) = info else { return false };
            if let Some(p) = is_app.as_mut() {
                *p = info.is_app;
            }
            if let Some(p) = code.as_mut() {
                *p = info.code;
            }
            if let (Some(r), Some(l)) = (reason.as_mut(), reason_len.as_mut()) {
                *r = info.reason.as_ptr();
                *l = info.reason.len();
            }
            true
        })
    }
}

/// Fill `*out` with the connection's counters. Returns 0 or
/// MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_stats(conn: *const mpquic_conn, out: *mut mpquic_stats) -> i32 {
    // SAFETY: see with_conn; `out` is writable.
    unsafe {
        with_conn(conn.cast_mut(), MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |c| {
            let Some(out) = out.as_mut() else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
            let s = c.inner.stats();
            *out = mpquic_stats {
                recv: s.recv,
                sent: s.sent,
                lost: s.lost,
                sent_bytes: s.sent_bytes,
                recv_bytes: s.recv_bytes,
                retrans_bytes: s.retrans_bytes,
                dropped: s.dropped,
                paths: s.paths,
                dup_stream_bytes: s.dup_stream_bytes,
                sent_ahead_bytes: s.sent_ahead_bytes,
                key_updates: s.key_updates,
                dgram_sent: s.dgram_sent,
                dgram_recv: s.dgram_recv,
                dgram_dropped: s.dgram_dropped,
            };
            0
        })
    }
}

/// Number of paths the connection currently has (including abandoned ones
/// not yet discarded); index them with mpquic_conn_path_stats.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_path_count(conn: *const mpquic_conn) -> usize {
    // SAFETY: see with_conn.
    unsafe { with_conn(conn.cast_mut(), 0, 0, |c| c.inner.path_stats().count()) }
}

/// Fill `*out` with the statistics of the `index`-th path (0-based, not
/// the Path ID: that is in `out->path_id`). Returns 0, MPQUIC_ERROR_DONE
/// past the last path, or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_path_stats(
    conn: *const mpquic_conn,
    index: usize,
    out: *mut mpquic_path_stats,
) -> i32 {
    // SAFETY: see with_conn; `out` is writable.
    unsafe {
        with_conn(conn.cast_mut(), MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |c| {
            let Some(out) = out.as_mut() else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
            let Some(p) = c.inner.path_stats().nth(index) else { return MPQUIC_ERROR_DONE.code() };
            let mut cc_state = [0 as c_char; 32];
            for (d, s) in cc_state.iter_mut().zip(p.cc_state.bytes().take(31)) {
                *d = s as c_char;
            }
            let mut local = zeroed_storage();
            let mut peer = zeroed_storage();
            let local_len = to_c(&p.local, &mut local);
            let peer_len = to_c(&p.peer, &mut peer);
            let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            *out = mpquic_path_stats {
                path_id: p.id.0,
                local,
                local_len,
                peer,
                peer_len,
                active: p.active,
                backup: p.status == engine::PathStatus::Backup,
                srtt_ns: ns(p.srtt),
                min_rtt_ns: ns(p.min_rtt),
                rttvar_ns: ns(p.rttvar),
                cwnd: p.cwnd as u64,
                bytes_in_flight: p.bytes_in_flight as u64,
                pacing_rate: p.pacing_rate,
                bandwidth: p.bandwidth,
                sent: p.sent,
                recv: p.recv,
                lost: p.lost,
                sent_bytes: p.sent_bytes,
                recv_bytes: p.recv_bytes,
                stream_bytes: p.stream_bytes,
                retrans_bytes: p.retrans_bytes,
                redundant_bytes: p.redundant_bytes,
                acked_bytes: p.acked_bytes,
                lost_bytes: p.lost_bytes,
                suspicions: p.suspicions,
                mtu: p.mtu as u64,
                cc_state,
            };
            0
        })
    }
}

/// Pop the next path event into `*out`. Returns 0, MPQUIC_ERROR_DONE when
/// there is none, or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_path_event_next(
    conn: *mut mpquic_conn,
    out: *mut mpquic_path_event,
) -> i32 {
    use engine::PathEvent as E;
    use mpquic_path_event_type::*;
    // SAFETY: see with_conn; `out` is writable.
    unsafe {
        with_conn(conn, MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |c| {
            let Some(out) = out.as_mut() else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
            let Some(ev) = c.inner.path_event_next() else { return MPQUIC_ERROR_DONE.code() };
            let mut e = mpquic_path_event {
                kind: MPQUIC_PATH_EVENT_NEW,
                path_id: 0,
                local: zeroed_storage(),
                local_len: 0,
                peer: zeroed_storage(),
                peer_len: 0,
                backup: false,
            };
            match ev {
                E::New(id, local, peer) => {
                    e.path_id = id.0;
                    e.local_len = to_c(&local, &mut e.local);
                    e.peer_len = to_c(&peer, &mut e.peer);
                }
                E::Validated(id) => (e.kind, e.path_id) = (MPQUIC_PATH_EVENT_VALIDATED, id.0),
                E::FailedValidation(id) => (e.kind, e.path_id) = (MPQUIC_PATH_EVENT_FAILED_VALIDATION, id.0),
                E::Abandoned(id) => (e.kind, e.path_id) = (MPQUIC_PATH_EVENT_ABANDONED, id.0),
                E::Migrated(id, local, peer) => {
                    e.kind = MPQUIC_PATH_EVENT_MIGRATED;
                    e.path_id = id.0;
                    e.local_len = to_c(&local, &mut e.local);
                    e.peer_len = to_c(&peer, &mut e.peer);
                }
                E::StatusChanged(id, st) => {
                    e.kind = MPQUIC_PATH_EVENT_STATUS_CHANGED;
                    e.path_id = id.0;
                    e.backup = st == engine::PathStatus::Backup;
                }
            }
            *out = e;
            0
        })
    }
}

/// Client, multipath: open a new path from `local` to `peer` (bind a
/// socket to `local` first and feed its datagrams to mpquic_conn_recv).
/// Returns the new path's ID (>= 0); data flows on it once validated
/// (MPQUIC_PATH_EVENT_VALIDATED). Errors: MPQUIC_ERROR_NOT_MULTIPATH,
/// MPQUIC_ERROR_PATH_LIMIT (retry later), MPQUIC_ERROR_PATH_EXISTS,
/// MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_probe_path(
    conn: *mut mpquic_conn,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    now_ns: u64,
) -> i64 {
    // SAFETY: see with_conn; addresses cover their lengths.
    unsafe {
        with_conn(
            conn,
            MPQUIC_ERROR_INVALID_ARGUMENT.code() as i64,
            MPQUIC_ERROR_INTERNAL.code() as i64,
            |c| {
                let (Some(local), Some(peer)) = (from_c(local, local_len), from_c(peer, peer_len)) else {
                    return MPQUIC_ERROR_INVALID_ARGUMENT.code() as i64;
                };
                let now = c.now(now_ns);
                match c.inner.probe_path(local, peer, now) {
                    Ok(id) => i64::from(id.0),
                    Err(e) => path_error(&e).code() as i64,
                }
            },
        )
    }
}

/// Client: move path `path_id` to the local address `local` (active
/// migration, RFC 9000 §9.2): the new address is validated first while the
/// path keeps the old one; MPQUIC_PATH_EVENT_MIGRATED says when it moved
/// (MPQUIC_PATH_EVENT_FAILED_VALIDATION if it could not). Bind a socket to
/// `local` and feed its datagrams to mpquic_conn_recv. Returns 0,
/// MPQUIC_ERROR_INVALID_PATH, MPQUIC_ERROR_PATH_LIMIT (no spare connection
/// ID of the peer's yet), MPQUIC_ERROR_INVALID_STATE (the server disabled
/// active migration) or MPQUIC_ERROR_NOT_MULTIPATH (a server, or the
/// handshake is not confirmed yet).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_migrate(
    conn: *mut mpquic_conn,
    path_id: u32,
    local: *const sockaddr,
    local_len: socklen_t,
    now_ns: u64,
) -> i32 {
    // SAFETY: see with_conn; the address covers its length.
    unsafe {
        with_conn(conn, MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |c| {
            let Some(local) = from_c(local, local_len) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
            let now = c.now(now_ns);
            match c.inner.migrate(engine::PathId(path_id), local, now) {
                Ok(()) => 0,
                Err(e) => path_error(&e).code(),
            }
        })
    }
}

/// Multipath: abandon path `path_id` with application error `code`
/// (PATH_ABANDON). Returns 0, MPQUIC_ERROR_INVALID_PATH,
/// MPQUIC_ERROR_LAST_PATH or MPQUIC_ERROR_NOT_MULTIPATH.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_abandon_path(
    conn: *mut mpquic_conn,
    path_id: u32,
    code: u64,
    now_ns: u64,
) -> i32 {
    // SAFETY: see with_conn.
    unsafe {
        with_conn(conn, MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |c| {
            let now = c.now(now_ns);
            match c.inner.abandon_path(PathId(path_id), code, now) {
                Ok(()) => 0,
                Err(e) => path_error(&e).code(),
            }
        })
    }
}

/// Multipath: mark path `path_id` as backup (used only when no available
/// path works) or available, and tell the peer. Returns 0 or a negative
/// mpquic_error.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_set_path_status(
    conn: *mut mpquic_conn,
    path_id: u32,
    backup: bool,
    now_ns: u64,
) -> i32 {
    // SAFETY: see with_conn.
    unsafe {
        with_conn(conn, MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |c| {
            let now = c.now(now_ns);
            let st = if backup { engine::PathStatus::Backup } else { engine::PathStatus::Available };
            match c.inner.set_path_status(PathId(path_id), st, now) {
                Ok(()) => 0,
                Err(e) => path_error(&e).code(),
            }
        })
    }
}

/// Attach a pointer of the caller's to the connection (e.g. its per-client
/// state; useful with mpquic_endpoint, which hands out connections).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_set_user_data(conn: *mut mpquic_conn, user: *mut c_void) {
    crate::guard((), || {
        // SAFETY: a live connection or NULL.
        if let Some(c) = unsafe { conn.as_mut() } {
            c.user = user;
        }
    })
}

/// The pointer given to mpquic_conn_set_user_data (NULL before).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_user_data(conn: *const mpquic_conn) -> *mut c_void {
    crate::guard(std::ptr::null_mut(), || {
        // SAFETY: a live connection or NULL.
        unsafe { conn.as_ref() }.map_or(std::ptr::null_mut(), |c| c.user)
    })
}
