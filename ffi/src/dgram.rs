//! DATAGRAM frames (RFC 9221) of an `mpquic_conn`: enable them with
//! mpquic_config_enable_dgram on both sides. Unreliable: a datagram lost on
//! the way is not sent again. With several paths each goes on the path the
//! scheduler picks for the packet that carries it.

use libc::ssize_t;

use crate::conn::{mpquic_conn, with_conn, with_conn_len};
use crate::{mpquic_error, slice, slice_mut, MPQUIC_ERROR_BUFFER_TOO_SHORT, MPQUIC_ERROR_DONE};
use crate::{MPQUIC_ERROR_INVALID_ARGUMENT, MPQUIC_ERROR_INVALID_STATE};
use engine::DgramError;

fn dgram_error(e: DgramError) -> mpquic_error {
    match e {
        DgramError::Done => MPQUIC_ERROR_DONE,
        DgramError::BufferTooShort => MPQUIC_ERROR_BUFFER_TOO_SHORT,
        DgramError::InvalidState => MPQUIC_ERROR_INVALID_STATE,
    }
}

/// Queue `len` bytes at `buf` as one datagram (copied). Returns 0,
/// MPQUIC_ERROR_DONE when the send queue is full,
/// MPQUIC_ERROR_BUFFER_TOO_SHORT when it is larger than
/// mpquic_conn_dgram_max_writable_len, MPQUIC_ERROR_INVALID_STATE when the
/// peer does not take datagrams.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_dgram_send(
    conn: *mut mpquic_conn,
    buf: *const u8,
    len: usize,
) -> ssize_t {
    // SAFETY: see with_conn and slice.
    unsafe {
        with_conn_len(conn, |c| {
            let Some(buf) = slice(buf, len) else {
                return MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t;
            };
            match c.inner.dgram_send(buf) {
                Ok(()) => 0,
                Err(e) => dgram_error(e).code() as ssize_t,
            }
        })
    }
}

/// Take the oldest datagram received into `out` (`len` bytes): its
/// length, MPQUIC_ERROR_DONE when none waits, or
/// MPQUIC_ERROR_BUFFER_TOO_SHORT when it does not fit (it stays queued;
/// mpquic_conn_dgram_recv_front_len says how long it is).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_dgram_recv(conn: *mut mpquic_conn, out: *mut u8, len: usize) -> ssize_t {
    // SAFETY: see with_conn and slice_mut.
    unsafe {
        with_conn_len(conn, |c| {
            let Some(out) = slice_mut(out, len) else {
                return MPQUIC_ERROR_INVALID_ARGUMENT.code() as ssize_t;
            };
            match c.inner.dgram_recv(out) {
                Ok(n) => n as ssize_t,
                Err(e) => dgram_error(e).code() as ssize_t,
            }
        })
    }
}

/// The largest datagram mpquic_conn_dgram_send takes now, or
/// MPQUIC_ERROR_INVALID_STATE while the peer's parameters are unknown, if
/// it does not take datagrams, or if they are not enabled here.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_dgram_max_writable_len(conn: *const mpquic_conn) -> ssize_t {
    // SAFETY: see with_conn.
    unsafe {
        with_conn_len(conn.cast_mut(), |c| match c.inner.dgram_max_writable_len() {
            Some(n) => n as ssize_t,
            None => MPQUIC_ERROR_INVALID_STATE.code() as ssize_t,
        })
    }
}

/// The length of the oldest datagram received, or MPQUIC_ERROR_DONE.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_dgram_recv_front_len(conn: *const mpquic_conn) -> ssize_t {
    // SAFETY: see with_conn.
    unsafe {
        with_conn_len(conn.cast_mut(), |c| match c.inner.dgram_recv_front_len() {
            Some(n) => n as ssize_t,
            None => MPQUIC_ERROR_DONE.code() as ssize_t,
        })
    }
}

/// The datagram queues of a connection.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct mpquic_dgram_queues {
    /// Datagrams received and not yet read.
    pub recv_len: usize,
    /// Their bytes.
    pub recv_bytes: usize,
    /// The receive queue is full: the next datagram pushes out the oldest.
    pub recv_full: bool,
    /// Datagrams queued and not yet sent.
    pub send_len: usize,
    /// Their bytes.
    pub send_bytes: usize,
    /// The send queue is full: mpquic_conn_dgram_send refuses.
    pub send_full: bool,
}

/// Fill `*out` with the state of the connection's datagram queues.
/// Returns 0 or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_dgram_queues(
    conn: *const mpquic_conn,
    out: *mut mpquic_dgram_queues,
) -> i32 {
    // SAFETY: `out` is valid when not NULL.
    let Some(out) = (unsafe { out.as_mut() }) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
    let bad = MPQUIC_ERROR_INVALID_ARGUMENT.code();
    // SAFETY: see with_conn.
    unsafe {
        with_conn(conn.cast_mut(), bad, crate::MPQUIC_ERROR_INTERNAL.code(), |c| {
            let i = &c.inner;
            *out = mpquic_dgram_queues {
                recv_len: i.dgram_recv_queue_len(),
                recv_bytes: i.dgram_recv_queue_byte_size(),
                recv_full: i.is_dgram_recv_queue_full(),
                send_len: i.dgram_send_queue_len(),
                send_bytes: i.dgram_send_queue_byte_size(),
                send_full: i.is_dgram_send_queue_full(),
            };
            0
        })
    }
}

/// Drop the queued datagrams for which `f(data, len, user)` returns true
/// (e.g. media past its deadline). `data` is valid during the call only.
/// Returns 0 or MPQUIC_ERROR_INVALID_ARGUMENT (no connection or no `f`).
#[no_mangle]
pub unsafe extern "C" fn mpquic_conn_dgram_purge_outgoing(
    conn: *mut mpquic_conn,
    f: Option<unsafe extern "C" fn(data: *const u8, len: usize, user: *mut std::ffi::c_void) -> bool>,
    user: *mut std::ffi::c_void,
) -> i32 {
    let Some(f) = f else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
    let bad = MPQUIC_ERROR_INVALID_ARGUMENT.code();
    // SAFETY: see with_conn; `f` is the caller's function.
    unsafe {
        with_conn(conn, bad, crate::MPQUIC_ERROR_INTERNAL.code(), |c| {
            // `d` lives for the call; `user` is the caller's.
            c.inner.dgram_purge_outgoing(|d| f(d.as_ptr(), d.len(), user));
            0
        })
    }
}
