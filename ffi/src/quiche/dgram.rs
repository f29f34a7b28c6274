//! DATAGRAM functions of `quiche_conn` (RFC 9221), over the engine's
//! `Connection::dgram_*`. Enable them with quiche_config_enable_dgram.

use libc::ssize_t;

use super::conn::{conn_mut, conn_ref, quiche_conn};
use super::{quiche_error, QUICHE_ERR_BUFFER_TOO_SHORT, QUICHE_ERR_DONE, QUICHE_ERR_INVALID_STATE};
use crate::{guard, slice, slice_mut};
use engine::DgramError;

fn dgram_error(e: DgramError) -> quiche_error {
    match e {
        DgramError::Done => QUICHE_ERR_DONE,
        DgramError::BufferTooShort => QUICHE_ERR_BUFFER_TOO_SHORT,
        DgramError::InvalidState => QUICHE_ERR_INVALID_STATE,
    }
}

/// A count of the engine connection (0 before it exists).
unsafe fn count(conn: *const quiche_conn, f: impl FnOnce(&engine::Connection) -> usize) -> ssize_t {
    let c = conn_ref!(conn, 0);
    guard(0, || c.live().map_or(0, f) as ssize_t)
}

/// Queue `buf` as a datagram: `buf_len`, QUICHE_ERR_DONE when the send
/// queue is full, QUICHE_ERR_BUFFER_TOO_SHORT when it is larger than
/// quiche_conn_dgram_max_writable_len, QUICHE_ERR_INVALID_STATE when the
/// peer does not take datagrams.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_send(
    conn: *mut quiche_conn,
    buf: *const u8,
    buf_len: usize,
) -> ssize_t {
    let c = conn_mut!(conn, QUICHE_ERR_INVALID_STATE.ss());
    guard(QUICHE_ERR_INVALID_STATE.ss(), || {
        // SAFETY: `buf` holds `buf_len` readable bytes.
        let Some(b) = (unsafe { slice(buf, buf_len) }) else { return QUICHE_ERR_INVALID_STATE.ss() };
        let Some(live) = c.live_mut() else { return QUICHE_ERR_INVALID_STATE.ss() };
        match live.dgram_send(b) {
            Ok(()) => buf_len as ssize_t,
            Err(e) => dgram_error(e).ss(),
        }
    })
}

/// Take the oldest datagram received into `buf`: its length,
/// QUICHE_ERR_DONE when none waits, QUICHE_ERR_BUFFER_TOO_SHORT when it
/// does not fit (it stays queued).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_recv(
    conn: *mut quiche_conn,
    buf: *mut u8,
    buf_len: usize,
) -> ssize_t {
    let c = conn_mut!(conn, QUICHE_ERR_INVALID_STATE.ss());
    guard(QUICHE_ERR_INVALID_STATE.ss(), || {
        // SAFETY: `buf` holds `buf_len` writable bytes.
        let Some(b) = (unsafe { slice_mut(buf, buf_len) }) else { return QUICHE_ERR_INVALID_STATE.ss() };
        let Some(live) = c.live_mut() else { return QUICHE_ERR_DONE.ss() };
        match live.dgram_recv(b) {
            Ok(n) => n as ssize_t,
            Err(e) => dgram_error(e).ss(),
        }
    })
}

/// The largest datagram quiche_conn_dgram_send takes now, or
/// QUICHE_ERR_DONE when the peer does not take datagrams (or its
/// parameters are not known yet), as quiche answers.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_max_writable_len(conn: *const quiche_conn) -> ssize_t {
    let c = conn_ref!(conn, QUICHE_ERR_DONE.ss());
    guard(QUICHE_ERR_DONE.ss(), || match c.live().and_then(|l| l.dgram_max_writable_len()) {
        Some(n) => n as ssize_t,
        None => QUICHE_ERR_DONE.ss(),
    })
}

/// The length of the oldest datagram received, or QUICHE_ERR_DONE.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_recv_front_len(conn: *const quiche_conn) -> ssize_t {
    let c = conn_ref!(conn, QUICHE_ERR_DONE.ss());
    guard(QUICHE_ERR_DONE.ss(), || match c.live().and_then(|l| l.dgram_recv_front_len()) {
        Some(n) => n as ssize_t,
        None => QUICHE_ERR_DONE.ss(),
    })
}

/// Datagrams received and not yet read.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_recv_queue_len(conn: *const quiche_conn) -> ssize_t {
    // SAFETY: forwarded.
    unsafe { count(conn, |l| l.dgram_recv_queue_len()) }
}

/// Bytes of the datagrams received and not yet read.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_recv_queue_byte_size(conn: *const quiche_conn) -> ssize_t {
    // SAFETY: forwarded.
    unsafe { count(conn, |l| l.dgram_recv_queue_byte_size()) }
}

/// Datagrams queued and not yet sent.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_send_queue_len(conn: *const quiche_conn) -> ssize_t {
    // SAFETY: forwarded.
    unsafe { count(conn, |l| l.dgram_send_queue_len()) }
}

/// Bytes of the datagrams queued and not yet sent.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_send_queue_byte_size(conn: *const quiche_conn) -> ssize_t {
    // SAFETY: forwarded.
    unsafe { count(conn, |l| l.dgram_send_queue_byte_size()) }
}

/// The send queue is full.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_dgram_send_queue_full(conn: *const quiche_conn) -> bool {
    let c = conn_ref!(conn, false);
    guard(false, || c.live().is_some_and(|l| l.is_dgram_send_queue_full()))
}

/// The receive queue is full (the next datagram pushes out the oldest).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_dgram_recv_queue_full(conn: *const quiche_conn) -> bool {
    let c = conn_ref!(conn, false);
    guard(false, || c.live().is_some_and(|l| l.is_dgram_recv_queue_full()))
}

/// Drop the queued datagrams for which `f` returns true. `f` sees a copy
/// of each (the queue's buffers are shared and must not change).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_dgram_purge_outgoing(
    conn: *mut quiche_conn,
    f: Option<extern "C" fn(*mut u8, usize) -> bool>,
) {
    let c = conn_mut!(conn);
    let Some(f) = f else { return };
    guard((), || {
        let Some(live) = c.live_mut() else { return };
        let mut scratch = Vec::new();
        live.dgram_purge_outgoing(|d| {
            scratch.clear();
            scratch.extend_from_slice(d);
            f(scratch.as_mut_ptr(), scratch.len())
        });
    })
}
