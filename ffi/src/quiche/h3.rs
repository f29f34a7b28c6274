//! `quiche_h3_*`: HTTP/3 over a `quiche_conn`, with quiche's event model
//! and error codes.

use std::ffi::{c_int, c_void};

use engine::h3::quic::Quic;
use engine::h3::{self, Event, H3Code, Header, StreamError as H3StreamError};
use libc::ssize_t;

use super::conn::quiche_conn;
use super::now;
use crate::{guard, slice, slice_mut};

/// HTTP/3 errors, with quiche's values. Transport failures are reported
/// as the transport's quiche_error minus 1000.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum quiche_h3_error {
    /// Nothing to do now.
    QUICHE_H3_ERR_DONE = -1,
    /// The buffer is too small.
    QUICHE_H3_ERR_BUFFER_TOO_SHORT = -2,
    /// Internal error.
    QUICHE_H3_ERR_INTERNAL_ERROR = -3,
    /// The peer's behaviour costs too much to serve.
    QUICHE_H3_ERR_EXCESSIVE_LOAD = -4,
    /// Bad stream or push ID.
    QUICHE_H3_ERR_ID_ERROR = -5,
    /// A stream the peer may not create.
    QUICHE_H3_ERR_STREAM_CREATION_ERROR = -6,
    /// A critical stream was closed.
    QUICHE_H3_ERR_CLOSED_CRITICAL_STREAM = -7,
    /// No SETTINGS first on the control stream.
    QUICHE_H3_ERR_MISSING_SETTINGS = -8,
    /// A frame where it is not allowed (also: a call that does not fit the
    /// stream's state).
    QUICHE_H3_ERR_FRAME_UNEXPECTED = -9,
    /// A malformed frame.
    QUICHE_H3_ERR_FRAME_ERROR = -10,
    /// QPACK decoding failed.
    QUICHE_H3_ERR_QPACK_DECOMPRESSION_FAILED = -11,
    /// No room on the stream for the header section now: retry later.
    QUICHE_H3_ERR_STREAM_BLOCKED = -13,
    /// Bad SETTINGS.
    QUICHE_H3_ERR_SETTINGS_ERROR = -14,
    /// The request was rejected.
    QUICHE_H3_ERR_REQUEST_REJECTED = -15,
    /// The request was cancelled.
    QUICHE_H3_ERR_REQUEST_CANCELLED = -16,
    /// The request ended early.
    QUICHE_H3_ERR_REQUEST_INCOMPLETE = -17,
    /// A malformed message (also: invalid headers given to send).
    QUICHE_H3_ERR_MESSAGE_ERROR = -18,
    /// CONNECT failed.
    QUICHE_H3_ERR_CONNECT_ERROR = -19,
    /// Retry over HTTP/1.1.
    QUICHE_H3_ERR_VERSION_FALLBACK = -20,
    /// Transport: nothing to do.
    QUICHE_H3_TRANSPORT_ERR_DONE = -1001,
    /// Transport: buffer too short.
    QUICHE_H3_TRANSPORT_ERR_BUFFER_TOO_SHORT = -1002,
    /// Transport: unknown version.
    QUICHE_H3_TRANSPORT_ERR_UNKNOWN_VERSION = -1003,
    /// Transport: invalid frame.
    QUICHE_H3_TRANSPORT_ERR_INVALID_FRAME = -1004,
    /// Transport: invalid packet.
    QUICHE_H3_TRANSPORT_ERR_INVALID_PACKET = -1005,
    /// Transport: invalid state (also: the connection is closed).
    QUICHE_H3_TRANSPORT_ERR_INVALID_STATE = -1006,
    /// Transport: invalid stream state.
    QUICHE_H3_TRANSPORT_ERR_INVALID_STREAM_STATE = -1007,
    /// Transport: invalid transport parameter.
    QUICHE_H3_TRANSPORT_ERR_INVALID_TRANSPORT_PARAM = -1008,
    /// Transport: crypto failure.
    QUICHE_H3_TRANSPORT_ERR_CRYPTO_FAIL = -1009,
    /// Transport: TLS failure.
    QUICHE_H3_TRANSPORT_ERR_TLS_FAIL = -1010,
    /// Transport: flow control.
    QUICHE_H3_TRANSPORT_ERR_FLOW_CONTROL = -1011,
    /// Transport: stream limit.
    QUICHE_H3_TRANSPORT_ERR_STREAM_LIMIT = -1012,
    /// Transport: the peer sent STOP_SENDING.
    QUICHE_H3_TRANSPORT_ERR_STREAM_STOPPED = -1015,
    /// Transport: the peer reset the stream.
    QUICHE_H3_TRANSPORT_ERR_STREAM_RESET = -1016,
    /// Transport: final size.
    QUICHE_H3_TRANSPORT_ERR_FINAL_SIZE = -1013,
    /// Transport: congestion control.
    QUICHE_H3_TRANSPORT_ERR_CONGESTION_CONTROL = -1014,
    /// Transport: connection ID limit.
    QUICHE_H3_TRANSPORT_ERR_ID_LIMIT = -1017,
    /// Transport: out of connection IDs.
    QUICHE_H3_TRANSPORT_ERR_OUT_OF_IDENTIFIERS = -1018,
    /// Transport: key update.
    QUICHE_H3_TRANSPORT_ERR_KEY_UPDATE = -1019,
    /// Transport: crypto buffer exceeded.
    QUICHE_H3_TRANSPORT_ERR_CRYPTO_BUFFER_EXCEEDED = -1020,
    /// Transport: invalid ACK range.
    QUICHE_H3_TRANSPORT_ERR_INVALID_ACK_RANGE = -1021,
    /// Transport: optimistic ACK detected.
    QUICHE_H3_TRANSPORT_ERR_OPTIMISTIC_ACK_DETECTED = -1022,
}

use quiche_h3_error::*;

/// quiche's code for an HTTP/3 wire error code (RFC 9114 §8.1, RFC 9204).
fn wire_code(c: H3Code) -> quiche_h3_error {
    match c {
        H3Code::EXCESSIVE_LOAD => QUICHE_H3_ERR_EXCESSIVE_LOAD,
        H3Code::ID_ERROR => QUICHE_H3_ERR_ID_ERROR,
        H3Code::STREAM_CREATION_ERROR => QUICHE_H3_ERR_STREAM_CREATION_ERROR,
        H3Code::CLOSED_CRITICAL_STREAM => QUICHE_H3_ERR_CLOSED_CRITICAL_STREAM,
        H3Code::MISSING_SETTINGS => QUICHE_H3_ERR_MISSING_SETTINGS,
        H3Code::FRAME_UNEXPECTED => QUICHE_H3_ERR_FRAME_UNEXPECTED,
        H3Code::FRAME_ERROR => QUICHE_H3_ERR_FRAME_ERROR,
        H3Code::SETTINGS_ERROR => QUICHE_H3_ERR_SETTINGS_ERROR,
        H3Code::REQUEST_REJECTED => QUICHE_H3_ERR_REQUEST_REJECTED,
        H3Code::REQUEST_CANCELLED => QUICHE_H3_ERR_REQUEST_CANCELLED,
        H3Code::REQUEST_INCOMPLETE => QUICHE_H3_ERR_REQUEST_INCOMPLETE,
        H3Code::MESSAGE_ERROR => QUICHE_H3_ERR_MESSAGE_ERROR,
        H3Code::CONNECT_ERROR => QUICHE_H3_ERR_CONNECT_ERROR,
        H3Code::VERSION_FALLBACK => QUICHE_H3_ERR_VERSION_FALLBACK,
        H3Code::QPACK_DECOMPRESSION_FAILED
        | H3Code::QPACK_ENCODER_STREAM_ERROR
        | H3Code::QPACK_DECODER_STREAM_ERROR => QUICHE_H3_ERR_QPACK_DECOMPRESSION_FAILED,
        _ => QUICHE_H3_ERR_INTERNAL_ERROR,
    }
}

/// quiche's code for an engine HTTP/3 error; `blocked` is what a stream
/// without room means for this call.
fn h3_error(e: &h3::Error, blocked: quiche_h3_error) -> quiche_h3_error {
    match e {
        h3::Error::Closed(e) => wire_code(e.code),
        h3::Error::Transport(t) => match t {
            H3StreamError::Blocked => blocked,
            H3StreamError::Reset(_) => QUICHE_H3_TRANSPORT_ERR_STREAM_RESET,
            H3StreamError::Stopped(_) => QUICHE_H3_TRANSPORT_ERR_STREAM_STOPPED,
            H3StreamError::InvalidStream => QUICHE_H3_TRANSPORT_ERR_INVALID_STREAM_STATE,
            H3StreamError::Closed => QUICHE_H3_TRANSPORT_ERR_INVALID_STATE,
            H3StreamError::StreamLimit => QUICHE_H3_TRANSPORT_ERR_STREAM_LIMIT,
        },
        h3::Error::InvalidHeaders(_) => QUICHE_H3_ERR_MESSAGE_ERROR,
        h3::Error::InvalidState(_) => QUICHE_H3_ERR_FRAME_UNEXPECTED,
    }
}

/// HTTP/3 settings (opaque).
pub struct quiche_h3_config {
    inner: h3::Config,
}

/// New HTTP/3 settings with defaults. Free with quiche_h3_config_free.
#[no_mangle]
pub extern "C" fn quiche_h3_config_new() -> *mut quiche_h3_config {
    guard(std::ptr::null_mut(), || Box::into_raw(Box::new(quiche_h3_config { inner: h3::Config::default() })))
}

/// Largest header section accepted from the peer.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_config_set_max_field_section_size(config: *mut quiche_h3_config, v: u64) {
    crate::guard((), || {
        // SAFETY: a live config or NULL.
        if let Some(c) = unsafe { config.as_mut() } {
            c.inner.max_field_section_size = v;
        }
    })
}

/// Accepted, no effect: mpquic's QPACK uses no dynamic table.
#[no_mangle]
pub extern "C" fn quiche_h3_config_set_qpack_max_table_capacity(_config: *mut quiche_h3_config, _v: u64) {
    crate::guard((), || {})
}

/// Accepted, no effect: mpquic's QPACK uses no dynamic table.
#[no_mangle]
pub extern "C" fn quiche_h3_config_set_qpack_blocked_streams(_config: *mut quiche_h3_config, _v: u64) {
    crate::guard((), || {})
}

/// Accepted, no effect: extended CONNECT is not supported.
#[no_mangle]
pub extern "C" fn quiche_h3_config_enable_extended_connect(_config: *mut quiche_h3_config, _enabled: bool) {
    crate::guard((), || {})
}

/// Accepted, no effect: PRIORITY_UPDATE frames are ignored.
#[no_mangle]
pub extern "C" fn quiche_h3_config_set_max_priority_update_size(_config: *mut quiche_h3_config, _v: u64) {
    crate::guard((), || {})
}

/// Release HTTP/3 settings (NULL is accepted).
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_config_free(config: *mut quiche_h3_config) {
    if !config.is_null() {
        // SAFETY: made by quiche_h3_config_new, not freed before.
        guard((), || drop(unsafe { Box::from_raw(config) }));
    }
}

/// An HTTP/3 connection (opaque) over a quiche_conn, which every call
/// takes again. Free with quiche_h3_conn_free.
pub struct quiche_h3_conn {
    inner: h3::Connection,
}

/// Start HTTP/3 on an established connection (opens the control and QPACK
/// streams). NULL if the connection is not established or lacks stream
/// credit.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_conn_new_with_transport(
    quiche_conn: *mut quiche_conn,
    config: *mut quiche_h3_config,
) -> *mut quiche_h3_conn {
    // SAFETY: live handles used by one thread.
    let (Some(c), Some(cfg)) = (unsafe { quiche_conn.as_mut() }, unsafe { config.as_ref() }) else {
        return std::ptr::null_mut();
    };
    guard(std::ptr::null_mut(), || {
        let Some(live) = c.live_mut() else { return std::ptr::null_mut() };
        if !live.is_established() {
            return std::ptr::null_mut();
        }
        match h3::Connection::with_transport(&mut Quic::new(live, now()), &cfg.inner) {
            Ok(inner) => Box::into_raw(Box::new(quiche_h3_conn { inner })),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

/// Release an HTTP/3 connection (NULL is accepted).
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_conn_free(conn: *mut quiche_h3_conn) {
    if !conn.is_null() {
        // SAFETY: made by quiche_h3_conn_new_with_transport, not freed before.
        guard((), || drop(unsafe { Box::from_raw(conn) }));
    }
}

/// Run `f` on both handles with the transport borrowed at the current
/// time; `err` for NULL handles, a server connection not started, or a panic.
unsafe fn with<R: Copy>(
    h3: *mut quiche_h3_conn,
    conn: *mut quiche_conn,
    err: R,
    f: impl FnOnce(&mut h3::Connection, &mut Quic<'_>) -> R,
) -> R {
    // SAFETY: live handles used by one thread.
    let (Some(h), Some(c)) = (unsafe { h3.as_mut() }, unsafe { conn.as_mut() }) else { return err };
    guard(err, || match c.live_mut() {
        Some(live) => f(&mut h.inner, &mut Quic::new(live, now())),
        None => err,
    })
}

/// Kinds of HTTP/3 events (quiche's numbering); `enum
/// quiche_h3_event_type` in C, written out in the header (its name is also
/// a function's, so it gets no typedef).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum H3EventType {
    /// A header section arrived.
    QUICHE_H3_EVENT_HEADERS = 0,
    /// Body data can be read with quiche_h3_recv_body.
    QUICHE_H3_EVENT_DATA = 1,
    /// The peer finished the stream.
    QUICHE_H3_EVENT_FINISHED = 2,
    /// The peer sent GOAWAY (poll returned its ID).
    QUICHE_H3_EVENT_GOAWAY = 3,
    /// The peer reset the stream.
    QUICHE_H3_EVENT_RESET = 4,
    /// Never produced: PRIORITY_UPDATE frames are ignored.
    QUICHE_H3_EVENT_PRIORITY_UPDATE = 5,
}

/// An event from quiche_h3_conn_poll (opaque). Free with quiche_h3_event_free.
pub struct quiche_h3_event {
    inner: Event,
}

/// The next event: its stream ID (GOAWAY: the frame's ID) is returned and
/// the event stored in `*ev`. QUICHE_H3_ERR_DONE when there is none, or a
/// negative error when the HTTP/3 connection failed.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_conn_poll(
    conn: *mut quiche_h3_conn,
    quic_conn: *mut quiche_conn,
    ev: *mut *mut quiche_h3_event,
) -> i64 {
    if ev.is_null() {
        return QUICHE_H3_ERR_DONE as i64;
    }
    // SAFETY: forwarded handles.
    unsafe {
        with(conn, quic_conn, QUICHE_H3_ERR_DONE as i64, |h, q| loop {
            let e = match h.poll(q) {
                Ok(Some(e)) => e,
                Ok(None) => return QUICHE_H3_ERR_DONE as i64,
                Err(e) => return h3_error(&e, QUICHE_H3_ERR_DONE) as i64,
            };
            let id = match &e {
                Event::Headers { stream, .. }
                | Event::Data { stream }
                | Event::Finished { stream }
                | Event::Reset { stream, .. } => *stream,
                Event::GoAway { id } => *id,
                // quiche has no such event: the stream was already aborted.
                Event::StreamError { .. } => continue,
            };
            *ev = Box::into_raw(Box::new(quiche_h3_event { inner: e }));
            return id as i64;
        })
    }
}

/// The kind of an event.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_event_type(ev: *mut quiche_h3_event) -> H3EventType {
    crate::guard(H3EventType::QUICHE_H3_EVENT_FINISHED, || {
        use H3EventType::*;
        // SAFETY: a live event or NULL.
        match unsafe { ev.as_ref() }.map(|e| &e.inner) {
            Some(Event::Headers { .. }) => QUICHE_H3_EVENT_HEADERS,
            Some(Event::Data { .. }) => QUICHE_H3_EVENT_DATA,
            Some(Event::Reset { .. }) => QUICHE_H3_EVENT_RESET,
            Some(Event::GoAway { .. }) => QUICHE_H3_EVENT_GOAWAY,
            Some(Event::Finished { .. } | Event::StreamError { .. }) | None => QUICHE_H3_EVENT_FINISHED,
        }
    })
}

/// Call `cb` for each header of a HEADERS event, in order, stopping at the
/// first non-zero return (which is returned). 0 when all were visited,
/// -1 for an event without headers.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_event_for_each_header(
    ev: *mut quiche_h3_event,
    cb: Option<
        unsafe extern "C" fn(
            name: *mut u8,
            name_len: usize,
            value: *mut u8,
            value_len: usize,
            argp: *mut c_void,
        ) -> c_int,
    >,
    argp: *mut c_void,
) -> c_int {
    crate::guard(QUICHE_H3_ERR_INTERNAL_ERROR as c_int, || {
        // SAFETY: a live event or NULL.
        let (Some(e), Some(cb)) = (unsafe { ev.as_mut() }, cb) else { return -1 };
        let Event::Headers { headers, .. } = &mut e.inner else { return -1 };
        for h in headers.iter_mut() {
            let (n, v) = (&mut h.name, &mut h.value);
            // SAFETY: the callback gets pointers into the event, valid for the call.
            let rc = unsafe { cb(n.as_mut_ptr(), n.len(), v.as_mut_ptr(), v.len(), argp) };
            if rc != 0 {
                return rc;
            }
        }
        0
    })
}

/// Whether a HEADERS event may be followed by body data or trailers.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_event_headers_has_more_frames(ev: *mut quiche_h3_event) -> bool {
    crate::guard(false, || {
        // SAFETY: a live event or NULL.
        matches!(unsafe { ev.as_ref() }.map(|e| &e.inner), Some(Event::Headers { has_body: true, .. }))
    })
}

/// Release an event (NULL is accepted).
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_event_free(ev: *mut quiche_h3_event) {
    if !ev.is_null() {
        // SAFETY: made by quiche_h3_conn_poll, not freed before.
        guard((), || drop(unsafe { Box::from_raw(ev) }));
    }
}

/// Call `cb` for each SETTINGS parameter the peer sent, stopping at the
/// first non-zero return (returned). QUICHE_H3_ERR_DONE before SETTINGS arrived.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_for_each_setting(
    conn: *mut quiche_h3_conn,
    cb: Option<unsafe extern "C" fn(identifier: u64, value: u64, argp: *mut c_void) -> c_int>,
    argp: *mut c_void,
) -> c_int {
    crate::guard(QUICHE_H3_ERR_INTERNAL_ERROR as c_int, || {
        // SAFETY: a live connection or NULL.
        let (Some(h), Some(cb)) = (unsafe { conn.as_ref() }, cb) else { return QUICHE_H3_ERR_DONE as c_int };
        let Some(s) = h.inner.peer_settings() else { return QUICHE_H3_ERR_DONE as c_int };
        let known = [
            (0x1, s.qpack_max_table_capacity),
            (0x6, s.max_field_section_size),
            (0x7, s.qpack_blocked_streams),
        ];
        let all = known.into_iter().filter_map(|(id, v)| v.map(|v| (id, v))).chain(s.other.iter().copied());
        for (id, v) in all {
            // SAFETY: the application's callback.
            let rc = unsafe { cb(id, v, argp) };
            if rc != 0 {
                return rc;
            }
        }
        0
    })
}

/// Always false: extended CONNECT is not supported.
#[no_mangle]
pub extern "C" fn quiche_h3_extended_connect_enabled_by_peer(_conn: *mut quiche_h3_conn) -> bool {
    crate::guard(false, || false)
}

/// Always false: HTTP/3 datagrams are not supported.
#[no_mangle]
pub extern "C" fn quiche_h3_dgram_enabled_by_peer(
    _conn: *mut quiche_h3_conn,
    _quic_conn: *mut quiche_conn,
) -> bool {
    crate::guard(false, || false)
}

/// A header field for the send functions.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct quiche_h3_header {
    /// Field name (lowercase).
    pub name: *const u8,
    /// Length of `name`.
    pub name_len: usize,
    /// Field value.
    pub value: *const u8,
    /// Length of `value`.
    pub value_len: usize,
}

/// An extensible priority (RFC 9218); mpquic does not act on it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct quiche_h3_priority {
    /// Urgency, 0 (highest) to 7.
    pub urgency: u8,
    /// Incremental delivery.
    pub incremental: bool,
}

/// Headers from a C array.
unsafe fn headers(hdrs: *const quiche_h3_header, n: usize) -> Option<Vec<Header>> {
    if n == 0 {
        return Some(Vec::new());
    }
    if hdrs.is_null() {
        return None;
    }
    // SAFETY: `hdrs` holds `n` entries whose pointers cover their lengths.
    let arr = unsafe { std::slice::from_raw_parts(hdrs, n) };
    arr.iter()
        .map(|h| unsafe { Some(Header::new(slice(h.name, h.name_len)?, slice(h.value, h.value_len)?)) })
        .collect()
}

/// Send a request on a new stream (`fin`: no body). Returns the stream ID,
/// QUICHE_H3_ERR_STREAM_BLOCKED / QUICHE_H3_TRANSPORT_ERR_STREAM_LIMIT to
/// retry later, or another negative error.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_request(
    conn: *mut quiche_h3_conn,
    quic_conn: *mut quiche_conn,
    headers_: *const quiche_h3_header,
    headers_len: usize,
    fin: bool,
) -> i64 {
    // SAFETY: the array holds `headers_len` entries.
    let Some(hs) = (unsafe { headers(headers_, headers_len) }) else {
        return QUICHE_H3_ERR_MESSAGE_ERROR as i64;
    };
    // SAFETY: forwarded handles.
    unsafe {
        with(conn, quic_conn, QUICHE_H3_ERR_INTERNAL_ERROR as i64, |h, q| match h.send_request(q, &hs, fin) {
            Ok(id) => id as i64,
            Err(e) => h3_error(&e, QUICHE_H3_ERR_STREAM_BLOCKED) as i64,
        })
    }
}

/// Send the response headers on `stream_id` (`fin`: no body). 0 or a
/// negative error.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_response(
    conn: *mut quiche_h3_conn,
    quic_conn: *mut quiche_conn,
    stream_id: u64,
    headers_: *const quiche_h3_header,
    headers_len: usize,
    fin: bool,
) -> c_int {
    // SAFETY: the array holds `headers_len` entries.
    let Some(hs) = (unsafe { headers(headers_, headers_len) }) else {
        return QUICHE_H3_ERR_MESSAGE_ERROR as c_int;
    };
    // SAFETY: forwarded handles.
    unsafe {
        with(conn, quic_conn, QUICHE_H3_ERR_INTERNAL_ERROR as c_int, |h, q| {
            match h.send_response(q, stream_id, &hs, fin) {
                Ok(()) => 0,
                Err(e) => h3_error(&e, QUICHE_H3_ERR_STREAM_BLOCKED) as c_int,
            }
        })
    }
}

/// As quiche_h3_send_response; the priority is not acted on.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_response_with_priority(
    conn: *mut quiche_h3_conn,
    quic_conn: *mut quiche_conn,
    stream_id: u64,
    headers_: *const quiche_h3_header,
    headers_len: usize,
    _priority: *mut quiche_h3_priority,
    fin: bool,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { quiche_h3_send_response(conn, quic_conn, stream_id, headers_, headers_len, fin) }
}

/// Send trailers (`is_trailer_section` true; they end the stream).
/// Additional non-trailer header sections are not supported:
/// QUICHE_H3_ERR_FRAME_UNEXPECTED.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_additional_headers(
    conn: *mut quiche_h3_conn,
    quic_conn: *mut quiche_conn,
    stream_id: u64,
    headers_: *mut quiche_h3_header,
    headers_len: usize,
    is_trailer_section: bool,
    _fin: bool,
) -> c_int {
    if !is_trailer_section {
        return QUICHE_H3_ERR_FRAME_UNEXPECTED as c_int;
    }
    // SAFETY: the array holds `headers_len` entries.
    let Some(hs) = (unsafe { headers(headers_, headers_len) }) else {
        return QUICHE_H3_ERR_MESSAGE_ERROR as c_int;
    };
    // SAFETY: forwarded handles.
    unsafe {
        with(conn, quic_conn, QUICHE_H3_ERR_INTERNAL_ERROR as c_int, |h, q| {
            match h.send_trailers(q, stream_id, &hs) {
                Ok(()) => 0,
                Err(e) => h3_error(&e, QUICHE_H3_ERR_STREAM_BLOCKED) as c_int,
            }
        })
    }
}

/// Send body bytes on `stream_id` (`fin` ends the stream once all are
/// accepted). Returns the bytes accepted, QUICHE_H3_ERR_DONE when there is
/// no room now, or a negative error.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_body(
    conn: *mut quiche_h3_conn,
    quic_conn: *mut quiche_conn,
    stream_id: u64,
    body: *const u8,
    body_len: usize,
    fin: bool,
) -> ssize_t {
    // SAFETY: `body` holds `body_len` bytes.
    let Some(b) = (unsafe { slice(body, body_len) }) else { return QUICHE_H3_ERR_INTERNAL_ERROR as ssize_t };
    // SAFETY: forwarded handles.
    unsafe {
        with(conn, quic_conn, QUICHE_H3_ERR_INTERNAL_ERROR as ssize_t, |h, q| {
            match h.send_body(q, stream_id, b, fin) {
                Ok(0) if !b.is_empty() => QUICHE_H3_ERR_DONE as ssize_t,
                Ok(n) => n as ssize_t,
                Err(e) => h3_error(&e, QUICHE_H3_ERR_DONE) as ssize_t,
            }
        })
    }
}

/// Read body bytes of `stream_id` into `out`. Returns the bytes read,
/// QUICHE_H3_ERR_DONE when none are available, or a negative error.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_recv_body(
    conn: *mut quiche_h3_conn,
    quic_conn: *mut quiche_conn,
    stream_id: u64,
    out: *mut u8,
    out_len: usize,
) -> ssize_t {
    // SAFETY: `out` holds `out_len` writable bytes.
    let Some(o) = (unsafe { slice_mut(out, out_len) }) else {
        return QUICHE_H3_ERR_INTERNAL_ERROR as ssize_t;
    };
    // SAFETY: forwarded handles.
    unsafe {
        with(conn, quic_conn, QUICHE_H3_ERR_INTERNAL_ERROR as ssize_t, |h, q| {
            match h.recv_body(q, stream_id, o) {
                Ok(0) => QUICHE_H3_ERR_DONE as ssize_t,
                Ok(n) => n as ssize_t,
                Err(e) => h3_error(&e, QUICHE_H3_ERR_DONE) as ssize_t,
            }
        })
    }
}

/// Send GOAWAY. mpquic chooses the ID itself (a server: the next request
/// stream it has not seen; `id` is not used). 0 or a negative error.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_send_goaway(
    conn: *mut quiche_h3_conn,
    quic_conn: *mut quiche_conn,
    _id: u64,
) -> c_int {
    // SAFETY: forwarded handles.
    unsafe {
        with(conn, quic_conn, QUICHE_H3_ERR_INTERNAL_ERROR as c_int, |h, q| match h.send_goaway(q) {
            Ok(()) => 0,
            Err(e) => h3_error(&e, QUICHE_H3_ERR_DONE) as c_int,
        })
    }
}

/// Parse an RFC 9218 Priority field value ("u=N", "i", comma-separated)
/// into `*parsed` (defaults: urgency 3, not incremental). 0, or
/// QUICHE_H3_ERR_FRAME_ERROR for a value that does not parse.
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_parse_extensible_priority(
    priority: *mut u8,
    priority_len: usize,
    parsed: *mut quiche_h3_priority,
) -> c_int {
    crate::guard(QUICHE_H3_ERR_INTERNAL_ERROR as c_int, || {
        // SAFETY: `priority` holds `priority_len` bytes; `parsed` is valid.
        let (Some(b), Some(out)) = (unsafe { slice(priority, priority_len) }, unsafe { parsed.as_mut() })
        else {
            return QUICHE_H3_ERR_FRAME_ERROR as c_int;
        };
        let Ok(s) = std::str::from_utf8(b) else { return QUICHE_H3_ERR_FRAME_ERROR as c_int };
        let mut p = quiche_h3_priority { urgency: 3, incremental: false };
        for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            match item.split(';').next().unwrap_or("") {
                "i" | "i=?1" => p.incremental = true,
                "i=?0" => p.incremental = false,
                x => match x.strip_prefix("u=").map(str::parse::<u8>) {
                    Some(Ok(u)) if u <= 7 => p.urgency = u,
                    Some(_) => return QUICHE_H3_ERR_FRAME_ERROR as c_int,
                    // Unknown parameters are ignored (RFC 9218 §4).
                    None => {}
                },
            }
        }
        *out = p;
        0
    })
}

/// Not supported (mpquic sends no PRIORITY_UPDATE):
/// QUICHE_H3_ERR_FRAME_UNEXPECTED.
#[no_mangle]
pub extern "C" fn quiche_h3_send_priority_update_for_request(
    _conn: *mut quiche_h3_conn,
    _quic_conn: *mut quiche_conn,
    _stream_id: u64,
    _priority: *mut quiche_h3_priority,
) -> c_int {
    crate::guard(QUICHE_H3_ERR_INTERNAL_ERROR as c_int, || QUICHE_H3_ERR_FRAME_UNEXPECTED as c_int)
}

/// PRIORITY_UPDATE frames are not kept: QUICHE_H3_ERR_DONE.
#[no_mangle]
pub extern "C" fn quiche_h3_take_last_priority_update(
    _conn: *mut quiche_h3_conn,
    _prioritized_element_id: u64,
    _cb: Option<
        unsafe extern "C" fn(
            priority_field_value: *mut u8,
            priority_field_value_len: u64,
            argp: *mut c_void,
        ) -> c_int,
    >,
    _argp: *mut c_void,
) -> c_int {
    crate::guard(QUICHE_H3_ERR_INTERNAL_ERROR as c_int, || QUICHE_H3_ERR_DONE as c_int)
}

/// HTTP/3 counters.
#[repr(C)]
#[derive(Default)]
pub struct quiche_h3_stats {
    /// 0: not counted by mpquic.
    pub qpack_encoder_stream_recv_bytes: u64,
    /// 0: not counted by mpquic.
    pub qpack_decoder_stream_recv_bytes: u64,
}

/// Fill `out` (mpquic counts nothing here: zeros).
#[no_mangle]
pub unsafe extern "C" fn quiche_h3_conn_stats(_conn: *const quiche_h3_conn, out: *mut quiche_h3_stats) {
    crate::guard((), || {
        // SAFETY: valid when not NULL.
        if let Some(o) = unsafe { out.as_mut() } {
            *o = quiche_h3_stats::default();
        }
    })
}
