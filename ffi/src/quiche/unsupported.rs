//! quiche functions mpquic does not support, answering with quiche's error
//! for them so programs that call them still link and fail cleanly.
//! DATAGRAM frames (RFC 9221) and quiche's single-path migration API are
//! not implemented; multipath paths are opened with quiche_conn_open_path.

use std::ffi::c_int;

use libc::{sockaddr, socklen_t, ssize_t};

use super::conn::quiche_conn;
use super::{QUICHE_ERR_DONE, QUICHE_ERR_INVALID_STATE};

/// No DATAGRAM support: QUICHE_ERR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn quiche_conn_dgram_send(
    _conn: *mut quiche_conn,
    _buf: *const u8,
    _buf_len: usize,
) -> ssize_t {
    QUICHE_ERR_INVALID_STATE.ss()
}

/// No DATAGRAM support: QUICHE_ERR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn quiche_conn_dgram_recv(_conn: *mut quiche_conn, _buf: *mut u8, _buf_len: usize) -> ssize_t {
    QUICHE_ERR_INVALID_STATE.ss()
}

/// No DATAGRAM support: QUICHE_ERR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn quiche_conn_dgram_max_writable_len(_conn: *const quiche_conn) -> ssize_t {
    QUICHE_ERR_INVALID_STATE.ss()
}

/// No DATAGRAM support: QUICHE_ERR_DONE (nothing queued).
#[no_mangle]
pub extern "C" fn quiche_conn_dgram_recv_front_len(_conn: *const quiche_conn) -> ssize_t {
    QUICHE_ERR_DONE.ss()
}

/// No DATAGRAM support: 0.
#[no_mangle]
pub extern "C" fn quiche_conn_dgram_recv_queue_len(_conn: *const quiche_conn) -> ssize_t {
    0
}

/// No DATAGRAM support: 0.
#[no_mangle]
pub extern "C" fn quiche_conn_dgram_send_queue_len(_conn: *const quiche_conn) -> ssize_t {
    0
}

/// Single-path migration is not supported (open multipath paths with
/// quiche_conn_open_path): QUICHE_ERR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn quiche_conn_probe_path(
    _conn: *mut quiche_conn,
    _local: *const sockaddr,
    _local_len: socklen_t,
    _peer: *const sockaddr,
    _peer_len: socklen_t,
    _seq: *mut u64,
) -> c_int {
    QUICHE_ERR_INVALID_STATE.c()
}

/// Not supported: QUICHE_ERR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn quiche_conn_migrate(
    _conn: *mut quiche_conn,
    _local: *const sockaddr,
    _local_len: socklen_t,
    _peer: *const sockaddr,
    _peer_len: socklen_t,
    _seq: *mut u64,
) -> c_int {
    QUICHE_ERR_INVALID_STATE.c()
}

/// Not supported: QUICHE_ERR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn quiche_conn_migrate_source(
    _conn: *mut quiche_conn,
    _local: *const sockaddr,
    _local_len: socklen_t,
    _seq: *mut u64,
) -> c_int {
    QUICHE_ERR_INVALID_STATE.c()
}

/// Not supported (mpquic manages connection IDs): QUICHE_ERR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn quiche_conn_retire_dcid(_conn: *mut quiche_conn, _dcid_seq: u64) -> c_int {
    QUICHE_ERR_INVALID_STATE.c()
}
