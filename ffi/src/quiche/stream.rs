//! Stream functions of `quiche_conn` and the stream iterator.

use std::ffi::c_int;

use libc::ssize_t;

use super::conn::{conn_mut, conn_ref, quiche_conn};
use super::{stream_error, QUICHE_ERR_DONE, QUICHE_ERR_INVALID_STATE, QUICHE_ERR_INVALID_STREAM_STATE};
use crate::{guard, slice, slice_mut};

/// Report a stream error: its code, and the peer's code into `out` if any.
unsafe fn fail(e: &engine::stream::StreamError, out: *mut u64) -> ssize_t {
    let (code, app) = stream_error(e);
    if let (Some(a), false) = (app, out.is_null()) {
        // SAFETY: `out` is valid when not NULL.
        unsafe { *out = a };
    }
    code.ss()
}

/// Read from stream `stream_id` into `out`; `*fin` tells whether the
/// stream ended. Returns the bytes read, QUICHE_ERR_DONE when there is
/// nothing to read, or an error (QUICHE_ERR_STREAM_RESET with the peer's
/// code in `*out_error_code`).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_recv(
    conn: *mut quiche_conn,
    stream_id: u64,
    out: *mut u8,
    buf_len: usize,
    fin: *mut bool,
    out_error_code: *mut u64,
) -> ssize_t {
    let c = conn_mut!(conn, QUICHE_ERR_INVALID_STATE.ss());
    guard(QUICHE_ERR_INVALID_STATE.ss(), || {
        // SAFETY: `out` holds `buf_len` writable bytes.
        let Some(o) = (unsafe { slice_mut(out, buf_len) }) else { return QUICHE_ERR_INVALID_STATE.ss() };
        let Some(live) = c.live_mut() else { return QUICHE_ERR_DONE.ss() };
        // quiche forgets a stream once its FIN was read.
        if live.stream_finished(stream_id) {
            return QUICHE_ERR_INVALID_STREAM_STATE.ss();
        }
        match live.stream_recv(stream_id, o) {
            // Nothing read and not the end: quiche says Done.
            Ok((0, false)) => QUICHE_ERR_DONE.ss(),
            Ok((n, f)) => {
                // SAFETY: `fin` is valid when not NULL.
                if let Some(p) = unsafe { fin.as_mut() } {
                    *p = f;
                }
                n as ssize_t
            }
            // SAFETY: forwarded out pointer.
            Err(e) => unsafe { fail(&e, out_error_code) },
        }
    })
}

/// Queue `buf` on stream `stream_id` (opening it if it is ours and new);
/// `fin` ends the stream once all of `buf` is accepted. Returns the bytes
/// accepted, QUICHE_ERR_DONE when there is no room now, or an error
/// (QUICHE_ERR_STREAM_STOPPED with the peer's code in `*out_error_code`).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_send(
    conn: *mut quiche_conn,
    stream_id: u64,
    buf: *const u8,
    buf_len: usize,
    fin: bool,
    out_error_code: *mut u64,
) -> ssize_t {
    let c = conn_mut!(conn, QUICHE_ERR_INVALID_STATE.ss());
    guard(QUICHE_ERR_INVALID_STATE.ss(), || {
        // SAFETY: `buf` holds `buf_len` bytes.
        let Some(b) = (unsafe { slice(buf, buf_len) }) else { return QUICHE_ERR_INVALID_STATE.ss() };
        let Some(live) = c.live_mut() else { return QUICHE_ERR_DONE.ss() };
        match live.stream_send(stream_id, b, fin) {
            Ok(0) if !b.is_empty() => QUICHE_ERR_DONE.ss(),
            Ok(n) => n as ssize_t,
            // SAFETY: forwarded out pointer.
            Err(e) => unsafe { fail(&e, out_error_code) },
        }
    })
}

/// Which side of a stream quiche_conn_stream_shutdown stops.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum quiche_shutdown {
    /// Stop receiving (STOP_SENDING).
    QUICHE_SHUTDOWN_READ = 0,
    /// Stop sending (RESET_STREAM).
    QUICHE_SHUTDOWN_WRITE = 1,
}

/// Stop one direction of a stream with application error `err`.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_shutdown(
    conn: *mut quiche_conn,
    stream_id: u64,
    direction: quiche_shutdown,
    err: u64,
) -> c_int {
    let c = conn_mut!(conn, QUICHE_ERR_INVALID_STATE.c());
    guard(QUICHE_ERR_INVALID_STATE.c(), || {
        let Some(live) = c.live_mut() else { return QUICHE_ERR_INVALID_STATE.c() };
        let read = direction == quiche_shutdown::QUICHE_SHUTDOWN_READ;
        match live.stream_shutdown(stream_id, read, !read, err) {
            Ok(()) => 0,
            Err(e) => stream_error(&e).0.c(),
        }
    })
}

/// Accepted, no effect (mpquic has no stream priorities): returns 0.
#[no_mangle]
pub extern "C" fn quiche_conn_stream_priority(
    _conn: *mut quiche_conn,
    _stream_id: u64,
    _urgency: u8,
    _incremental: bool,
) -> c_int {
    crate::guard(crate::quiche::QUICHE_ERR_INVALID_STATE.c(), || 0)
}

/// Bytes quiche_conn_stream_send would accept now, or an error.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_capacity(conn: *mut quiche_conn, stream_id: u64) -> ssize_t {
    let c = conn_ref!(conn, QUICHE_ERR_INVALID_STATE.ss());
    guard(QUICHE_ERR_INVALID_STATE.ss(), || match c.live().map(|l| l.stream_capacity(stream_id)) {
        Some(Ok(n)) => n as ssize_t,
        Some(Err(e)) => stream_error(&e).0.ss(),
        None => QUICHE_ERR_INVALID_STREAM_STATE.ss(),
    })
}

/// Whether the stream has data, a fin or a reset to read.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_readable(conn: *const quiche_conn, stream_id: u64) -> bool {
    let c = conn_ref!(conn, false);
    guard(false, || c.live().is_some_and(|l| l.stream_readable(stream_id)))
}

/// Whether everything of the stream was read, fin included.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_finished(conn: *const quiche_conn, stream_id: u64) -> bool {
    let c = conn_ref!(conn, false);
    guard(false, || c.live().is_some_and(|l| l.stream_finished(stream_id)))
}

/// 1 if stream `stream_id` can take `len` bytes now, 0 if not, or an error.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_writable(
    conn: *mut quiche_conn,
    stream_id: u64,
    len: usize,
) -> c_int {
    // SAFETY: forwarded.
    match unsafe { quiche_conn_stream_capacity(conn, stream_id) } {
        n if n < 0 => n as c_int,
        n => c_int::from(n as usize >= len),
    }
}

/// The lowest readable stream ID, or -1 (QUICHE_ERR_DONE) if none.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_readable_next(conn: *mut quiche_conn) -> i64 {
    let c = conn_ref!(conn, -1);
    guard(-1, || c.live().and_then(|l| l.readable().into_iter().min()).map_or(-1, |id| id as i64))
}

/// The lowest writable stream ID, or -1 (QUICHE_ERR_DONE) if none.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stream_writable_next(conn: *mut quiche_conn) -> i64 {
    let c = conn_ref!(conn, -1);
    guard(-1, || c.live().and_then(|l| l.writable().into_iter().min()).map_or(-1, |id| id as i64))
}

/// How many more bidirectional streams the peer lets us open now.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_peer_streams_left_bidi(conn: *const quiche_conn) -> u64 {
    let c = conn_ref!(conn, 0);
    guard(0, || c.live().map_or(0, |l| l.peer_streams_left(true)))
}

/// How many more unidirectional streams the peer lets us open now.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_peer_streams_left_uni(conn: *const quiche_conn) -> u64 {
    let c = conn_ref!(conn, 0);
    guard(0, || c.live().map_or(0, |l| l.peer_streams_left(false)))
}

/// A snapshot of stream IDs (opaque). Free with quiche_stream_iter_free.
pub struct quiche_stream_iter {
    ids: std::vec::IntoIter<u64>,
}

fn iter(ids: Vec<u64>) -> *mut quiche_stream_iter {
    Box::into_raw(Box::new(quiche_stream_iter { ids: ids.into_iter() }))
}

/// The streams with something to read, as an iterator.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_readable(conn: *const quiche_conn) -> *mut quiche_stream_iter {
    let c = conn_ref!(conn, std::ptr::null_mut());
    guard(std::ptr::null_mut(), || iter(c.live().map(|l| l.readable()).unwrap_or_default()))
}

/// The streams that can take more data, as an iterator.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_writable(conn: *const quiche_conn) -> *mut quiche_stream_iter {
    let c = conn_ref!(conn, std::ptr::null_mut());
    guard(std::ptr::null_mut(), || iter(c.live().map(|l| l.writable()).unwrap_or_default()))
}

/// The next stream ID into `*stream_id`; false at the end.
#[no_mangle]
pub unsafe extern "C" fn quiche_stream_iter_next(iter: *mut quiche_stream_iter, stream_id: *mut u64) -> bool {
    crate::guard(false, || {
        // SAFETY: a live iterator and a valid out pointer.
        let (Some(it), Some(out)) = (unsafe { iter.as_mut() }, unsafe { stream_id.as_mut() }) else {
            return false;
        };
        match it.ids.next() {
            Some(id) => {
                *out = id;
                true
            }
            None => false,
        }
    })
}

/// Release an iterator (NULL is accepted).
#[no_mangle]
pub unsafe extern "C" fn quiche_stream_iter_free(iter: *mut quiche_stream_iter) {
    if !iter.is_null() {
        // SAFETY: made by quiche_conn_readable/writable, not freed before.
        guard((), || drop(unsafe { Box::from_raw(iter) }));
    }
}
