//! `mpquic_h3_conn`: HTTP/3 over an `mpquic_conn`.
//!
//! As in the Rust API (and quiche), the HTTP/3 connection borrows the QUIC
//! connection on every call, so both handles are passed each time.

use std::panic::AssertUnwindSafe;

use engine::h3::quic::Quic;
use engine::h3::{self, Event, Header, StreamError as H3StreamError};
use libc::ssize_t;

use crate::conn::mpquic_conn;
use crate::{
    mpquic_error, slice, slice_mut, MPQUIC_ERROR_CLOSED, MPQUIC_ERROR_DONE, MPQUIC_ERROR_H3_CLOSED,
    MPQUIC_ERROR_H3_INVALID_HEADERS, MPQUIC_ERROR_INTERNAL, MPQUIC_ERROR_INVALID_ARGUMENT,
    MPQUIC_ERROR_INVALID_STATE, MPQUIC_ERROR_STREAM_LIMIT, MPQUIC_ERROR_STREAM_RESET,
    MPQUIC_ERROR_STREAM_STOPPED, MPQUIC_ERROR_UNKNOWN_STREAM,
};

/// An HTTP/3 connection (opaque) over an mpquic_conn. Create with
/// mpquic_h3_conn_new once the QUIC handshake is complete; free with
/// mpquic_h3_conn_free. Every call takes the same mpquic_conn it was
/// created on. Not thread-safe (use with its mpquic_conn from one thread at
/// a time).
pub struct mpquic_h3_conn {
    inner: h3::Connection,
}

/// An event from mpquic_h3_conn_poll (opaque). Owned by the caller: free
/// with mpquic_h3_event_free. Header pointers obtained from it stay valid
/// until then.
pub struct mpquic_h3_event {
    inner: Event,
}

/// A header field: name and value as byte strings (not NUL-terminated).
/// Names must be lowercase; pseudo-headers (":method", ":path", ...) first.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct mpquic_h3_header {
    /// Field name.
    pub name: *const u8,
    /// Length of `name`.
    pub name_len: usize,
    /// Field value.
    pub value: *const u8,
    /// Length of `value`.
    pub value_len: usize,
}

/// Kinds of HTTP/3 events.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mpquic_h3_event_type {
    /// A header section arrived (request, response or trailers): read it
    /// with mpquic_h3_event_header / mpquic_h3_event_for_each_header.
    MPQUIC_H3_EVENT_HEADERS = 0,
    /// Body data can be read with mpquic_h3_recv_body (not repeated until
    /// what was available has been read).
    MPQUIC_H3_EVENT_DATA = 1,
    /// The peer finished the stream; nothing more will arrive.
    MPQUIC_H3_EVENT_FINISHED = 2,
    /// The peer reset the stream (code: mpquic_h3_event_error_code).
    MPQUIC_H3_EVENT_RESET = 3,
    /// The peer's message was malformed; the stream was aborted with the
    /// code from mpquic_h3_event_error_code.
    MPQUIC_H3_EVENT_STREAM_ERROR = 4,
    /// The peer sent GOAWAY; poll returned its ID instead of a stream ID.
    MPQUIC_H3_EVENT_GOAWAY = 5,
}

pub(crate) fn h3_error(e: &h3::Error) -> mpquic_error {
    match e {
        h3::Error::Closed(_) => MPQUIC_ERROR_H3_CLOSED,
        h3::Error::Transport(t) => match t {
            H3StreamError::Blocked => MPQUIC_ERROR_DONE,
            H3StreamError::Reset(_) => MPQUIC_ERROR_STREAM_RESET,
            H3StreamError::Stopped(_) => MPQUIC_ERROR_STREAM_STOPPED,
            H3StreamError::InvalidStream => MPQUIC_ERROR_UNKNOWN_STREAM,
            H3StreamError::Closed => MPQUIC_ERROR_CLOSED,
            H3StreamError::StreamLimit => MPQUIC_ERROR_STREAM_LIMIT,
        },
        h3::Error::InvalidHeaders(_) => MPQUIC_ERROR_H3_INVALID_HEADERS,
        h3::Error::InvalidState(_) => MPQUIC_ERROR_INVALID_STATE,
    }
}

/// Run `f` with both handles borrowed, catching panics (`on_err`);
/// `on_null` if either handle is NULL.
unsafe fn with_h3<R>(
    h3: *mut mpquic_h3_conn,
    conn: *mut mpquic_conn,
    on_null: R,
    on_err: R,
    f: impl FnOnce(&mut h3::Connection, &mut Quic<'_>) -> R,
) -> R {
    // SAFETY: the caller passes live handles used by one thread.
    let (Some(h), Some(c)) = (unsafe { h3.as_mut() }, unsafe { conn.as_mut() }) else { return on_null };
    crate::guard(on_err, move || {
        let now = c.last;
        let mut q = Quic::new(&mut c.inner, now);
        f(&mut h.inner, &mut q)
    })
}

/// Headers from a C array (`n` entries at `hdrs`).
unsafe fn headers(hdrs: *const mpquic_h3_header, n: usize) -> Option<Vec<Header>> {
    if n == 0 {
        return Some(Vec::new());
    }
    if hdrs.is_null() {
        return None;
    }
    // SAFETY: `hdrs` holds `n` entries.
    let arr = unsafe { std::slice::from_raw_parts(hdrs, n) };
    arr.iter()
        .map(|h| {
            // SAFETY: each entry's pointers cover their lengths.
            let (name, value) = unsafe { (slice(h.name, h.name_len)?, slice(h.value, h.value_len)?) };
            Some(Header::new(name, value))
        })
        .collect()
}

/// Start HTTP/3 on an established connection: opens the control and QPACK
/// streams (SETTINGS is sent with the next mpquic_conn_send). Returns NULL
/// if the connection is not established or has no stream credit. Free with
/// mpquic_h3_conn_free.
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_conn_new(conn: *mut mpquic_conn) -> *mut mpquic_h3_conn {
    // SAFETY: the caller passes a live connection used by one thread.
    let Some(c) = (unsafe { conn.as_mut() }) else { return std::ptr::null_mut() };
    crate::guard(std::ptr::null_mut(), move || {
        if !c.inner.is_established() {
            return std::ptr::null_mut();
        }
        let now = c.last;
        let mut q = Quic::new(&mut c.inner, now);
        match h3::Connection::with_transport(&mut q, &h3::Config::default()) {
            Ok(inner) => Box::into_raw(Box::new(mpquic_h3_conn { inner })),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

/// Free an HTTP/3 connection (NULL is ignored). The QUIC connection is not
/// affected.
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_conn_free(h3: *mut mpquic_h3_conn) {
    if h3.is_null() {
        return;
    }
    // SAFETY: `h3` came from mpquic_h3_conn_new and is freed once.
    let b = unsafe { Box::from_raw(h3) };
    crate::guard((), move || drop(b));
}

/// Client: send a request with `n` headers (`:method`, `:scheme`,
/// `:authority`, `:path` first) on a new stream. With `fin` the request
/// has no body; otherwise follow with mpquic_h3_send_body. The headers are
/// copied. Returns the stream ID (>= 0) or a negative mpquic_error
/// (MPQUIC_ERROR_STREAM_LIMIT: retry once the peer allows more streams).
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_send_request(
    h3: *mut mpquic_h3_conn,
    conn: *mut mpquic_conn,
    hdrs: *const mpquic_h3_header,
    n: usize,
    fin: bool,
) -> i64 {
    // SAFETY: see with_h3 and headers.
    unsafe {
        with_h3(
            h3,
            conn,
            MPQUIC_ERROR_INVALID_ARGUMENT.code() as i64,
            MPQUIC_ERROR_INTERNAL.code() as i64,
            |h, q| {
                let Some(hs) = headers(hdrs, n) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() as i64 };
                match h.send_request(q, &hs, fin) {
                    Ok(id) => id as i64,
                    Err(e) => h3_error(&e).code() as i64,
                }
            },
        )
    }
}

/// Server: send a response header section (`:status` first) on request
/// stream `stream_id`. Returns 0 or a negative mpquic_error.
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_send_response(
    h3: *mut mpquic_h3_conn,
    conn: *mut mpquic_conn,
    stream_id: u64,
    hdrs: *const mpquic_h3_header,
    n: usize,
    fin: bool,
) -> i32 {
    // SAFETY: see with_h3 and headers.
    unsafe {
        with_h3(h3, conn, MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |h, q| {
            let Some(hs) = headers(hdrs, n) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
            match h.send_response(q, stream_id, &hs, fin) {
                Ok(()) => 0,
                Err(e) => h3_error(&e).code(),
            }
        })
    }
}

/// Send body bytes on `stream_id` (after its headers). Returns how many
/// bytes were taken (possibly fewer than `len`, or MPQUIC_ERROR_DONE when
/// none fit now: retry after the next datagrams); `fin` ends the stream
/// once all of `body` is taken (with `len` 0, just ends it).
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_send_body(
    h3: *mut mpquic_h3_conn,
    conn: *mut mpquic_conn,
    stream_id: u64,
    body: *const u8,
    len: usize,
    fin: bool,
) -> ssize_t {
    // SAFETY: see with_h3 and slice.
    unsafe {
        with_h3(
            h3,
            conn,
            MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t,
            MPQUIC_ERROR_INTERNAL.code() as ssize_t,
            |h, q| {
                let Some(body) = slice(body, len) else {
                    return MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t;
                };
                match h.send_body(q, stream_id, body, fin) {
                    Ok(0) if len > 0 => MPQUIC_ERROR_DONE.code() as ssize_t,
                    Ok(n) => n as ssize_t,
                    Err(e) => h3_error(&e).code() as ssize_t,
                }
            },
        )
    }
}

/// Read body bytes of `stream_id` into `out`. Returns the number read, or
/// MPQUIC_ERROR_DONE when none are available now (a later
/// MPQUIC_H3_EVENT_DATA says when), or a negative mpquic_error.
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_recv_body(
    h3: *mut mpquic_h3_conn,
    conn: *mut mpquic_conn,
    stream_id: u64,
    out: *mut u8,
    len: usize,
) -> ssize_t {
    // SAFETY: see with_h3 and slice_mut.
    unsafe {
        with_h3(
            h3,
            conn,
            MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t,
            MPQUIC_ERROR_INTERNAL.code() as ssize_t,
            |h, q| {
                let Some(out) = slice_mut(out, len) else {
                    return MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t;
                };
                match h.recv_body(q, stream_id, out) {
                    Ok(0) if len > 0 => MPQUIC_ERROR_DONE.code() as ssize_t,
                    Ok(n) => n as ssize_t,
                    Err(e) => h3_error(&e).code() as ssize_t,
                }
            },
        )
    }
}

/// Send GOAWAY. Returns 0 or a negative mpquic_error.
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_send_goaway(h3: *mut mpquic_h3_conn, conn: *mut mpquic_conn) -> i32 {
    // SAFETY: see with_h3.
    unsafe {
        with_h3(h3, conn, MPQUIC_ERROR_INVALID_ARGUMENT.code(), MPQUIC_ERROR_INTERNAL.code(), |h, q| match h
            .send_goaway(q)
        {
            Ok(()) => 0,
            Err(e) => h3_error(&e).code(),
        })
    }
}

/// Process what the peer sent and return the next event. On success
/// stores a new event in `*ev` (free it with mpquic_h3_event_free) and
/// returns its stream ID (for MPQUIC_H3_EVENT_GOAWAY, the GOAWAY ID);
/// returns MPQUIC_ERROR_DONE when there is no event (then `*ev` is NULL),
/// MPQUIC_ERROR_H3_CLOSED when the peer broke HTTP/3 (the connection is
/// being closed), or another negative mpquic_error. Call after each batch
/// of mpquic_conn_recv until it returns MPQUIC_ERROR_DONE.
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_conn_poll(
    h3: *mut mpquic_h3_conn,
    conn: *mut mpquic_conn,
    ev: *mut *mut mpquic_h3_event,
) -> i64 {
    // SAFETY: `ev` is writable (checked for NULL).
    let Some(ev) = (unsafe { ev.as_mut() }) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() as i64 };
    *ev = std::ptr::null_mut();
    let ev = AssertUnwindSafe(ev);
    // SAFETY: see with_h3.
    unsafe {
        with_h3(
            h3,
            conn,
            MPQUIC_ERROR_INVALID_ARGUMENT.code() as i64,
            MPQUIC_ERROR_INTERNAL.code() as i64,
            move |h, q| {
                let ev = ev;
                match h.poll(q) {
                    Ok(Some(e)) => {
                        let id = match &e {
                            Event::Headers { stream, .. }
                            | Event::Data { stream }
                            | Event::Finished { stream }
                            | Event::Reset { stream, .. }
                            | Event::StreamError { stream, .. } => *stream,
                            Event::GoAway { id } => *id,
                        };
                        *ev.0 = Box::into_raw(Box::new(mpquic_h3_event { inner: e }));
                        id as i64
                    }
                    Ok(None) => MPQUIC_ERROR_DONE.code() as i64,
                    Err(e) => h3_error(&e).code() as i64,
                }
            },
        )
    }
}

/// Free an event (NULL is ignored).
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_event_free(ev: *mut mpquic_h3_event) {
    if ev.is_null() {
        return;
    }
    // SAFETY: `ev` came from mpquic_h3_conn_poll and is freed once.
    let b = unsafe { Box::from_raw(ev) };
    crate::guard((), move || drop(b));
}

/// The event's kind. (A NULL event reads as MPQUIC_H3_EVENT_FINISHED.)
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_event_kind(ev: *const mpquic_h3_event) -> mpquic_h3_event_type {
    crate::guard(mpquic_h3_event_type::MPQUIC_H3_EVENT_FINISHED, || {
        use mpquic_h3_event_type::*;
        // SAFETY: NULL or a live event.
        match unsafe { ev.as_ref() }.map(|e| &e.inner) {
            Some(Event::Headers { .. }) => MPQUIC_H3_EVENT_HEADERS,
            Some(Event::Data { .. }) => MPQUIC_H3_EVENT_DATA,
            Some(Event::Finished { .. }) | None => MPQUIC_H3_EVENT_FINISHED,
            Some(Event::Reset { .. }) => MPQUIC_H3_EVENT_RESET,
            Some(Event::StreamError { .. }) => MPQUIC_H3_EVENT_STREAM_ERROR,
            Some(Event::GoAway { .. }) => MPQUIC_H3_EVENT_GOAWAY,
        }
    })
}

/// The headers of a Headers event (empty for others). The caller picks
/// the lifetime: the event must outlive its use.
unsafe fn event_headers<'a>(ev: *const mpquic_h3_event) -> &'a [Header] {
    // SAFETY: NULL or a live event (caller's contract).
    match unsafe { ev.as_ref() }.map(|e| &e.inner) {
        Some(Event::Headers { headers, .. }) => headers,
        _ => &[],
    }
}

fn c_header(h: &Header) -> mpquic_h3_header {
    mpquic_h3_header {
        name: h.name.as_ptr(),
        name_len: h.name.len(),
        value: h.value.as_ptr(),
        value_len: h.value.len(),
    }
}

/// Number of header fields of an MPQUIC_H3_EVENT_HEADERS event (0 for
/// other events).
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_event_header_count(ev: *const mpquic_h3_event) -> usize {
    // SAFETY: NULL or a live event.
    crate::guard(0, || unsafe { event_headers(ev) }.len())
}

/// The `index`-th header field of the event into `*out`; its pointers stay
/// valid until the event is freed. Returns 0, MPQUIC_ERROR_DONE past the
/// last, or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_event_header(
    ev: *const mpquic_h3_event,
    index: usize,
    out: *mut mpquic_h3_header,
) -> i32 {
    // SAFETY: `out` is NULL or writable.
    let Some(out) = (unsafe { out.as_mut() }) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
    let out = AssertUnwindSafe(out);
    crate::guard(MPQUIC_ERROR_INTERNAL.code(), move || {
        let out = out;
        // SAFETY: NULL or a live event.
        match unsafe { event_headers(ev) }.get(index) {
            Some(h) => {
                *out.0 = c_header(h);
                0
            }
            None => MPQUIC_ERROR_DONE.code(),
        }
    })
}

/// Call `cb(name, name_len, value, value_len, argp)` for each header field
/// of the event, in order, until it returns non-zero. Returns 0, or the
/// callback's non-zero value. The pointers are valid during the callback.
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_event_for_each_header(
    ev: *const mpquic_h3_event,
    cb: Option<
        unsafe extern "C" fn(
            name: *const u8,
            name_len: usize,
            value: *const u8,
            value_len: usize,
            argp: *mut libc::c_void,
        ) -> i32,
    >,
    argp: *mut libc::c_void,
) -> i32 {
    let Some(cb) = cb else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
    let argp = AssertUnwindSafe(argp);
    crate::guard(MPQUIC_ERROR_INTERNAL.code(), move || {
        let argp = argp;
        // SAFETY: NULL or a live event.
        for h in unsafe { event_headers(ev) } {
            // SAFETY: the caller's callback gets pointers valid for the
            // call.
            let r = unsafe { cb(h.name.as_ptr(), h.name.len(), h.value.as_ptr(), h.value.len(), argp.0) };
            if r != 0 {
                return r;
            }
        }
        0
    })
}

/// For MPQUIC_H3_EVENT_HEADERS: whether a body (or trailers) may follow.
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_event_headers_has_body(ev: *const mpquic_h3_event) -> bool {
    crate::guard(false, || {
        // SAFETY: NULL or a live event.
        matches!(unsafe { ev.as_ref() }.map(|e| &e.inner), Some(Event::Headers { has_body: true, .. }))
    })
}

/// For MPQUIC_H3_EVENT_RESET: the peer's code; for
/// MPQUIC_H3_EVENT_STREAM_ERROR: the HTTP/3 code we aborted the stream
/// with; 0 otherwise.
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_event_error_code(ev: *const mpquic_h3_event) -> u64 {
    crate::guard(0, || {
        // SAFETY: NULL or a live event.
        match unsafe { ev.as_ref() }.map(|e| &e.inner) {
            Some(Event::Reset { code, .. }) => *code,
            Some(Event::StreamError { error, .. }) => error.code.0,
            _ => 0,
        }
    })
}
