//! `mpquic_h3_fetch`: a client's GETs over an `mpquic_conn`, the same sans-IO
//! state machine (`h3::Fetch`) as the Rust client, the Python download and the
//! simulator use; the C caller only moves datagrams and writes the body.

use engine::h3::quic::Quic;
use engine::h3::{self, FetchError, FetchEvent};

use crate::conn::mpquic_conn;
use crate::h3::h3_error;
use crate::{
    c_str, guard, mpquic_error, slice_mut, MPQUIC_ERROR_DONE, MPQUIC_ERROR_INTERNAL,
    MPQUIC_ERROR_INVALID_ARGUMENT, MPQUIC_ERROR_INVALID_STATE, MPQUIC_ERROR_STREAM_RESET,
};

/// The GET requests of one connection (opaque). Create with
/// mpquic_h3_fetch_new, drive with mpquic_h3_fetch_poll once the connection
/// is established, free with mpquic_h3_fetch_free.
pub struct mpquic_h3_fetch {
    inner: h3::Fetch,
}

/// Kinds of fetch events.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mpquic_h3_fetch_event_type {
    /// The final response's headers arrived (mpquic_h3_fetch_status).
    MPQUIC_H3_FETCH_RESPONSE = 0,
    /// `len` body bytes were read into the caller's buffer.
    MPQUIC_H3_FETCH_BODY = 1,
    /// The response is complete.
    MPQUIC_H3_FETCH_DONE = 2,
}

/// What mpquic_h3_fetch_poll produced.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mpquic_h3_fetch_event {
    /// What happened.
    pub kind: mpquic_h3_fetch_event_type,
    /// Index of the request (order of the paths given to mpquic_h3_fetch_new).
    pub request: usize,
    /// Body bytes in the buffer (MPQUIC_H3_FETCH_BODY), else 0.
    pub len: usize,
}

/// GETs of the `n` NUL-terminated `paths` on `authority`, with a `user-agent`
/// if `user_agent` is not NULL. Returns NULL on a NULL or non-UTF-8 argument.
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_fetch_new(
    authority: *const libc::c_char,
    paths: *const *const libc::c_char,
    n: usize,
    user_agent: *const libc::c_char,
) -> *mut mpquic_h3_fetch {
    guard(std::ptr::null_mut(), || {
        // SAFETY: the caller passes NUL-terminated strings and `n` path pointers.
        let Some(authority) = (unsafe { c_str(authority) }) else { return std::ptr::null_mut() };
        let ua = if user_agent.is_null() { None } else { unsafe { c_str(user_agent) } };
        if paths.is_null() || (!user_agent.is_null() && ua.is_none()) {
            return std::ptr::null_mut();
        }
        let list: Option<Vec<&str>> =
            unsafe { std::slice::from_raw_parts(paths, n) }.iter().map(|&p| unsafe { c_str(p) }).collect();
        let Some(list) = list else { return std::ptr::null_mut() };
        Box::into_raw(Box::new(mpquic_h3_fetch { inner: h3::Fetch::get(authority, &list, ua) }))
    })
}

/// Free a fetch (NULL is ignored).
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_fetch_free(f: *mut mpquic_h3_fetch) {
    if !f.is_null() {
        // SAFETY: `f` came from mpquic_h3_fetch_new and is freed once.
        guard((), || drop(unsafe { Box::from_raw(f) }));
    }
}

fn fetch_error(e: &FetchError) -> mpquic_error {
    match e {
        FetchError::H3(e) | FetchError::Request(_, e) | FetchError::Body(_, e) => h3_error(e),
        FetchError::Reset(..) | FetchError::Stream(..) => MPQUIC_ERROR_STREAM_RESET,
        FetchError::NoStatus(_) | FetchError::Length { .. } => MPQUIC_ERROR_INVALID_STATE,
    }
}

/// Advance the requests on established connection `conn` (sent by the first
/// call): 0 with `*ev` filled, MPQUIC_ERROR_DONE when nothing more can happen
/// until more datagrams arrive, or another negative mpquic_error when the
/// exchange failed (MPQUIC_ERROR_STREAM_RESET: a response was reset;
/// MPQUIC_ERROR_INVALID_STATE: a response without a status, or whose body
/// does not match its content-length). Body bytes go to `buf`.
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_fetch_poll(
    f: *mut mpquic_h3_fetch,
    conn: *mut mpquic_conn,
    buf: *mut u8,
    buf_len: usize,
    ev: *mut mpquic_h3_fetch_event,
) -> i32 {
    // SAFETY: live handles used by one thread; `buf` holds `buf_len` bytes.
    let (Some(f), Some(c), Some(buf), Some(ev)) =
        (unsafe { f.as_mut() }, unsafe { conn.as_mut() }, unsafe { slice_mut(buf, buf_len) }, unsafe {
            ev.as_mut()
        })
    else {
        return MPQUIC_ERROR_INVALID_ARGUMENT.code();
    };
    guard(MPQUIC_ERROR_INTERNAL.code(), || {
        if !c.inner.is_established() {
            return MPQUIC_ERROR_INVALID_STATE.code();
        }
        let now = c.last;
        let (kind, request, len) = match f.inner.poll(&mut Quic::new(&mut c.inner, now), buf) {
            Ok(None) => return MPQUIC_ERROR_DONE.code(),
            Err(e) => return fetch_error(&e).code(),
            Ok(Some(FetchEvent::Response { request })) => {
                (mpquic_h3_fetch_event_type::MPQUIC_H3_FETCH_RESPONSE, request, 0)
            }
            Ok(Some(FetchEvent::Body { request, len })) => {
                (mpquic_h3_fetch_event_type::MPQUIC_H3_FETCH_BODY, request, len)
            }
            Ok(Some(FetchEvent::Done { request })) => {
                (mpquic_h3_fetch_event_type::MPQUIC_H3_FETCH_DONE, request, 0)
            }
        };
        *ev = mpquic_h3_fetch_event { kind, request, len };
        0
    })
}

/// The final response status of request `i`, 0 while none (or a bad index).
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_fetch_status(f: *const mpquic_h3_fetch, i: usize) -> u16 {
    crate::guard(0, || {
        // SAFETY: a live handle.
        unsafe { f.as_ref() }.and_then(|f| f.inner.requests().get(i)?.status).unwrap_or(0)
    })
}

/// Body bytes received for request `i` (0 for a bad index).
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_fetch_bytes(f: *const mpquic_h3_fetch, i: usize) -> u64 {
    crate::guard(0, || {
        // SAFETY: a live handle.
        unsafe { f.as_ref() }.and_then(|f| f.inner.requests().get(i)).map_or(0, |r| r.bytes)
    })
}

/// Whether every response is complete (false for NULL).
#[no_mangle]
pub unsafe extern "C" fn mpquic_h3_fetch_is_done(f: *const mpquic_h3_fetch) -> bool {
    crate::guard(false, || {
        // SAFETY: a live handle.
        unsafe { f.as_ref() }.is_some_and(|f| f.inner.is_done())
    })
}
