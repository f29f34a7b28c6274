//! `mpquic_endpoint`: the engine's server endpoint for C programs. It routes
//! every datagram by its destination connection ID (every ID of every path
//! of every connection, so a multipath client's new paths need no lookup by
//! the program), answers what matches no connection (Version Negotiation,
//! Retry, Stateless Reset), creates a connection only for a client Initial
//! that decrypts, and keeps the connections' deadlines in a heap.

use std::collections::HashMap;
use std::ptr::NonNull;

use engine::endpoint::{Endpoint, EndpointConfig, Handle, Incoming};
use engine::RecvInfo;

use crate::addr::from_c;
use crate::config::mpquic_config;
use crate::conn::{mpquic_conn, mpquic_recv_info, Clock, ConnSlot};
use crate::{guard, slice_mut, MPQUIC_ERROR_INTERNAL, MPQUIC_ERROR_INVALID_ARGUMENT};

/// A server endpoint (opaque): create with mpquic_endpoint_new, free with
/// mpquic_endpoint_free. It owns its connections: the mpquic_conn pointers
/// it hands out stay valid until mpquic_endpoint_rearm reports the
/// connection closed, mpquic_endpoint_remove, or mpquic_endpoint_free.
/// Use from one thread at a time.
pub struct mpquic_endpoint {
    ep: Endpoint<()>,
    clock: Clock,
    /// The mpquic_conn handed out for each connection.
    conns: HashMap<Handle, NonNull<mpquic_conn>>,
}

/// Settings of an endpoint; mpquic_endpoint_config_default fills in the
/// defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mpquic_endpoint_config {
    /// Length of the connection IDs the endpoint issues, 4 to 20 (16).
    pub cid_len: usize,
    /// Validate addresses with Retry before keeping any state (true).
    pub retry: bool,
    /// Connections still in their handshake; past this many, Retry is
    /// forced even with `retry` off (256).
    pub max_half_open: usize,
    /// Stateless Resets sent per second at most (1000).
    pub resets_per_sec: u32,
    /// Give each new connection a NEW_TOKEN token so the client's next
    /// connection skips the Retry (true).
    pub new_tokens: bool,
}

/// What became of a datagram given to mpquic_endpoint_recv.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mpquic_incoming_kind {
    /// Given to an existing connection (`conn`).
    MPQUIC_INCOMING_ROUTED = 0,
    /// A new connection (`conn`) was created for it.
    MPQUIC_INCOMING_ACCEPTED = 1,
    /// Send the first `reply_len` bytes of the output buffer back to the
    /// sender (Version Negotiation, Retry or Stateless Reset).
    MPQUIC_INCOMING_REPLY = 2,
    /// Dropped; nothing was kept.
    MPQUIC_INCOMING_DROPPED = 3,
}

/// The result of mpquic_endpoint_recv.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mpquic_incoming {
    /// What happened.
    pub kind: mpquic_incoming_kind,
    /// ROUTED and ACCEPTED: the connection (mpquic_endpoint_poll returns it
    /// too); NULL otherwise.
    pub conn: *mut mpquic_conn,
    /// REPLY: bytes of the output buffer to send.
    pub reply_len: usize,
}

/// An endpoint's counters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mpquic_endpoint_counters {
    /// Connections now held.
    pub connections: u64,
    /// Connections whose handshake has not completed.
    pub half_open: u64,
    /// Datagrams given to existing connections.
    pub routed: u64,
    /// Connections created.
    pub accepted: u64,
    /// Initials refused because they did not decrypt (no state kept).
    pub undecryptable: u64,
    /// Short-header datagrams for unknown connection IDs.
    pub unknown_cid: u64,
    /// Version Negotiation packets sent.
    pub version_negotiations: u64,
    /// Retry packets sent (including forced ones).
    pub retries: u64,
    /// Stateless Resets sent.
    pub stateless_resets: u64,
    /// Other datagrams dropped.
    pub dropped: u64,
}

/// Fill `out` with the default settings. Returns 0, or
/// MPQUIC_ERROR_INVALID_ARGUMENT for NULL.
#[no_mangle]
pub unsafe extern "C" fn mpquic_endpoint_config_default(out: *mut mpquic_endpoint_config) -> i32 {
    crate::guard(crate::MPQUIC_ERROR_INTERNAL.code(), || {
        // SAFETY: NULL or writable.
        let Some(out) = (unsafe { out.as_mut() }) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
        let d = EndpointConfig::default();
        *out = mpquic_endpoint_config {
            cid_len: d.cid_len,
            retry: d.retry,
            max_half_open: d.max_half_open,
            resets_per_sec: d.resets_per_sec,
            new_tokens: d.new_tokens,
        };
        0
    })
}

/// A server endpoint accepting connections with `config` (read during the
/// call only; it needs a certificate and key) and `settings` (NULL: the
/// defaults). `now_ns` is the caller's monotonic clock, the clock of every
/// later call on the endpoint and its connections. Returns NULL on invalid
/// arguments (e.g. a connection ID length outside 4..=20).
#[no_mangle]
pub unsafe extern "C" fn mpquic_endpoint_new(
    config: *const mpquic_config,
    settings: *const mpquic_endpoint_config,
    now_ns: u64,
) -> *mut mpquic_endpoint {
    guard(std::ptr::null_mut(), || {
        // SAFETY: NULL or live objects.
        let (Some(cfg), settings) = (unsafe { config.as_ref() }, unsafe { settings.as_ref() }) else {
            return std::ptr::null_mut();
        };
        let mut ep_cfg = EndpointConfig::default();
        if let Some(s) = settings {
            ep_cfg.cid_len = s.cid_len;
            ep_cfg.retry = s.retry;
            ep_cfg.max_half_open = s.max_half_open;
            ep_cfg.resets_per_sec = s.resets_per_sec;
            ep_cfg.new_tokens = s.new_tokens;
        }
        let clock = Clock::new(now_ns);
        match Endpoint::new(cfg.inner.clone(), ep_cfg, clock.at(now_ns)) {
            Ok(ep) => Box::into_raw(Box::new(mpquic_endpoint { ep, clock, conns: HashMap::new() })),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

/// Free an endpoint and every connection it holds (NULL is ignored).
#[no_mangle]
pub unsafe extern "C" fn mpquic_endpoint_free(ep: *mut mpquic_endpoint) {
    if ep.is_null() {
        return;
    }
    // SAFETY: `ep` came from mpquic_endpoint_new and is freed once.
    let b = unsafe { Box::from_raw(ep) };
    crate::guard((), move || {
        for c in b.conns.values() {
            // SAFETY: each came from mpquic_conn::boxed and is freed once.
            drop(unsafe { Box::from_raw(c.as_ptr()) });
        }
        drop(b)
    });
}

/// Run `f` on a live endpoint; `on_err` for NULL or a panic.
unsafe fn with_ep<R>(ep: *mut mpquic_endpoint, on_err: R, f: impl FnOnce(&mut mpquic_endpoint) -> R) -> R {
    // SAFETY: the caller passes a live endpoint used by one thread.
    let Some(e) = (unsafe { ep.as_mut() }) else { return on_err };
    guard(on_err, move || f(e))
}

impl mpquic_endpoint {
    /// The mpquic_conn of `h`, made on first sight.
    fn conn_of(&mut self, h: Handle, now: std::time::Instant) -> *mut mpquic_conn {
        let ep = NonNull::from(&mut self.ep);
        let clock = self.clock;
        self.conns
            .entry(h)
            .or_insert_with(|| {
                let c = mpquic_conn::boxed(ConnSlot::InEndpoint(ep, h), clock, now);
                // SAFETY: Box::into_raw never returns NULL.
                unsafe { NonNull::new_unchecked(c) }
            })
            .as_ptr()
    }

    /// The handle of `conn` if it is one of this endpoint's connections.
    fn handle_of(&self, conn: *mut mpquic_conn) -> Option<Handle> {
        // SAFETY: NULL or a live connection, as the C functions require.
        let h = unsafe { conn.as_ref() }?.in_endpoint()?;
        self.conns.get(&h).is_some_and(|c| c.as_ptr() == conn).then_some(h)
    }

    /// Forget `h`'s mpquic_conn and free it.
    fn drop_conn(&mut self, h: Handle) {
        if let Some(c) = self.conns.remove(&h) {
            // SAFETY: made by conn_of, freed once.
            drop(unsafe { Box::from_raw(c.as_ptr()) });
        }
    }
}

/// Give the endpoint one received datagram (`buf` is decrypted in place).
/// Replies are written to `out` (`out_len` >= 1200). Fills `res`; returns 0,
/// or MPQUIC_ERROR_INVALID_ARGUMENT. Serve the connections it reports with
/// mpquic_endpoint_poll.
#[no_mangle]
pub unsafe extern "C" fn mpquic_endpoint_recv(
    ep: *mut mpquic_endpoint,
    buf: *mut u8,
    buf_len: usize,
    info: *const mpquic_recv_info,
    now_ns: u64,
    out: *mut u8,
    out_len: usize,
    res: *mut mpquic_incoming,
) -> i32 {
    let invalid = MPQUIC_ERROR_INVALID_ARGUMENT.code();
    // SAFETY: see with_ep and each pointer's contract.
    unsafe {
        with_ep(ep, MPQUIC_ERROR_INTERNAL.code(), |e| {
            let (Some(buf), Some(out), Some(info), Some(res)) =
                (slice_mut(buf, buf_len), slice_mut(out, out_len), info.as_ref(), res.as_mut())
            else {
                return invalid;
            };
            let (Some(from), Some(to)) = (from_c(info.from, info.from_len), from_c(info.to, info.to_len))
            else {
                return invalid;
            };
            let now = e.clock.at(now_ns);
            *res = mpquic_incoming {
                kind: mpquic_incoming_kind::MPQUIC_INCOMING_DROPPED,
                conn: std::ptr::null_mut(),
                reply_len: 0,
            };
            let info = RecvInfo { ecn: engine::Ecn::from_tos(info.ecn), ..RecvInfo::new(from, to) };
            match e.ep.recv(buf, info, now, out) {
                Incoming::Routed(h) => {
                    res.kind = mpquic_incoming_kind::MPQUIC_INCOMING_ROUTED;
                    res.conn = e.conn_of(h, now);
                }
                Incoming::Accepted(h) => {
                    res.kind = mpquic_incoming_kind::MPQUIC_INCOMING_ACCEPTED;
                    res.conn = e.conn_of(h, now);
                }
                Incoming::Reply(n) => {
                    res.kind = mpquic_incoming_kind::MPQUIC_INCOMING_REPLY;
                    res.reply_len = n;
                }
                Incoming::Dropped => {}
            }
            0
        })
    }
}

/// The next connection that needs the program (it received datagrams, or
/// its timer was due and has been handled), or NULL. Serve it (HTTP/3,
/// mpquic_conn_send until it returns 0), then give it back with
/// mpquic_endpoint_rearm.
#[no_mangle]
pub unsafe extern "C" fn mpquic_endpoint_poll(ep: *mut mpquic_endpoint, now_ns: u64) -> *mut mpquic_conn {
    // SAFETY: see with_ep.
    unsafe {
        with_ep(ep, std::ptr::null_mut(), |e| {
            let now = e.clock.at(now_ns);
            match e.ep.poll(now) {
                Some(h) => e.conn_of(h, now),
                None => std::ptr::null_mut(),
            }
        })
    }
}

/// After serving `conn`: update its routes (connection IDs it issued) and
/// its deadline, the earlier of its own timer and `wake_ns` (the caller's
/// own reason to come back, e.g. a paced datagram; UINT64_MAX for none).
/// Returns 1 when the connection has closed: it is removed and `conn` is
/// freed (do not use it again); 0 otherwise; a negative mpquic_error for a
/// connection that is not this endpoint's.
#[no_mangle]
pub unsafe extern "C" fn mpquic_endpoint_rearm(
    ep: *mut mpquic_endpoint,
    conn: *mut mpquic_conn,
    wake_ns: u64,
) -> i32 {
    // SAFETY: see with_ep.
    unsafe {
        with_ep(ep, MPQUIC_ERROR_INTERNAL.code(), |e| {
            let Some(h) = e.handle_of(conn) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
            let wake = (wake_ns != u64::MAX).then(|| e.clock.at(wake_ns));
            if e.ep.rearm(h, wake).is_some() {
                e.drop_conn(h);
                return 1;
            }
            0
        })
    }
}

/// Remove `conn` now and free it (its later packets get a Stateless
/// Reset). Returns 0, or MPQUIC_ERROR_INVALID_ARGUMENT for a connection
/// that is not this endpoint's.
#[no_mangle]
pub unsafe extern "C" fn mpquic_endpoint_remove(ep: *mut mpquic_endpoint, conn: *mut mpquic_conn) -> i32 {
    // SAFETY: see with_ep.
    unsafe {
        with_ep(ep, MPQUIC_ERROR_INTERNAL.code(), |e| {
            let Some(h) = e.handle_of(conn) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
            e.ep.remove(h);
            e.drop_conn(h);
            0
        })
    }
}

/// When mpquic_endpoint_poll next has work if nothing arrives before
/// (caller's clock, ns), or UINT64_MAX when no connection has a deadline.
#[no_mangle]
pub unsafe extern "C" fn mpquic_endpoint_timeout_ns(ep: *mut mpquic_endpoint) -> u64 {
    // SAFETY: see with_ep.
    unsafe { with_ep(ep, u64::MAX, |e| e.ep.timeout().map_or(u64::MAX, |t| e.clock.ns(t))) }
}

/// Stop (false) or resume (true) accepting new connections, e.g. while
/// shutting down.
#[no_mangle]
pub unsafe extern "C" fn mpquic_endpoint_set_accept(ep: *mut mpquic_endpoint, on: bool) {
    // SAFETY: see with_ep.
    unsafe { with_ep(ep, (), |e| e.ep.set_accept(on)) }
}

/// The endpoint's counters. Returns 0, or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_endpoint_stats(
    ep: *mut mpquic_endpoint,
    out: *mut mpquic_endpoint_counters,
) -> i32 {
    // SAFETY: NULL or writable.
    let Some(out) = (unsafe { out.as_mut() }) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
    // SAFETY: see with_ep.
    unsafe {
        with_ep(ep, MPQUIC_ERROR_INVALID_ARGUMENT.code(), |e| {
            let s = e.ep.stats();
            *out = mpquic_endpoint_counters {
                connections: e.ep.len() as u64,
                half_open: e.ep.half_open() as u64,
                routed: s.routed,
                accepted: s.accepted,
                undecryptable: s.undecryptable,
                unknown_cid: s.unknown_cid,
                version_negotiations: s.version_negotiations,
                retries: s.retries,
                stateless_resets: s.stateless_resets,
                dropped: s.dropped,
            };
            0
        })
    }
}
