//! quiche functions mpquic does not support, answering with quiche's error
//! for them so programs that call them still link and fail cleanly.
//! quiche's single-path migration calls are in migration.rs; multipath
//! paths are opened with quiche_conn_open_path.

use std::ffi::c_int;

use libc::{sockaddr, socklen_t, ssize_t};

use super::conn::quiche_conn;
use super::QUICHE_ERR_INVALID_STATE;

/// Not supported (mpquic manages connection IDs): QUICHE_ERR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn quiche_conn_retire_dcid(_conn: *mut quiche_conn, _dcid_seq: u64) -> c_int {
    crate::guard(crate::quiche::QUICHE_ERR_INVALID_STATE.c(), || QUICHE_ERR_INVALID_STATE.c())
}

/// Not supported (mpquic sends ACK-eliciting probes itself when its timers
/// say so): QUICHE_ERR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn quiche_conn_send_ack_eliciting(_conn: *mut quiche_conn) -> ssize_t {
    crate::guard(crate::quiche::QUICHE_ERR_INVALID_STATE.ss(), || QUICHE_ERR_INVALID_STATE.ss())
}

/// Not supported: QUICHE_ERR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn quiche_conn_send_ack_eliciting_on_path(
    _conn: *mut quiche_conn,
    _local: *const sockaddr,
    _local_len: socklen_t,
    _peer: *const sockaddr,
    _peer_len: socklen_t,
) -> ssize_t {
    crate::guard(crate::quiche::QUICHE_ERR_INVALID_STATE.ss(), || QUICHE_ERR_INVALID_STATE.ss())
}

/// Not supported (the idle timeout is the config's): QUICHE_ERR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn quiche_conn_set_max_idle_timeout(_conn: *mut quiche_conn, _v: u64) -> c_int {
    crate::guard(crate::quiche::QUICHE_ERR_INVALID_STATE.c(), || QUICHE_ERR_INVALID_STATE.c())
}

/// Not supported (mpquic issues its own connection IDs):
/// QUICHE_ERR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn quiche_conn_new_scid(
    _conn: *mut quiche_conn,
    _scid: *const u8,
    _scid_len: usize,
    _reset_token: *const u8,
    _retire_if_needed: bool,
    _scid_seq: *mut u64,
) -> c_int {
    crate::guard(crate::quiche::QUICHE_ERR_INVALID_STATE.c(), || QUICHE_ERR_INVALID_STATE.c())
}

/// Not tracked: 0.
#[no_mangle]
pub extern "C" fn quiche_conn_active_scids(_conn: *mut quiche_conn) -> usize {
    crate::guard(0, || 0)
}

/// Not tracked: 0.
#[no_mangle]
pub extern "C" fn quiche_conn_scids_left(_conn: *mut quiche_conn) -> usize {
    crate::guard(0, || 0)
}

/// Not tracked: 0.
#[no_mangle]
pub extern "C" fn quiche_conn_available_dcids(_conn: *const quiche_conn) -> usize {
    crate::guard(0, || 0)
}

/// Not tracked: 0.
#[no_mangle]
pub extern "C" fn quiche_conn_retired_scids(_conn: *const quiche_conn) -> usize {
    crate::guard(0, || 0)
}

/// Not exposed: `*out_len` = 0.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_destination_id(
    _conn: *const quiche_conn,
    out: *mut *const u8,
    out_len: *mut usize,
) {
    crate::guard((), || {
        // SAFETY: forwarded out pointers.
        unsafe { super::conn::out_bytes(&[], out, out_len) };
    })
}

/// Accepted, no effect (key logging is per config: quiche_config_log_keys).
#[no_mangle]
pub extern "C" fn quiche_conn_set_keylog_fd(_conn: *mut quiche_conn, _fd: c_int) {
    crate::guard((), || {})
}

/// Accepted, no effect (no qlog output from the quiche API).
#[no_mangle]
pub extern "C" fn quiche_conn_set_qlog_fd(
    _conn: *mut quiche_conn,
    _fd: c_int,
    _log_title: *const std::ffi::c_char,
    _log_desc: *const std::ffi::c_char,
) {
    crate::guard((), || {})
}

/// Not supported (mpquic owns its TLS state): NULL.
#[no_mangle]
pub extern "C" fn quiche_conn_new_with_tls(
    _scid: *const u8,
    _scid_len: usize,
    _odcid: *const u8,
    _odcid_len: usize,
    _local: *const sockaddr,
    _local_len: socklen_t,
    _peer: *const sockaddr,
    _peer_len: socklen_t,
    _config: *const super::quiche_config,
    _ssl: *mut std::ffi::c_void,
    _is_server: bool,
) -> *mut quiche_conn {
    crate::guard(std::ptr::null_mut(), std::ptr::null_mut)
}

/// Not supported (mpquic owns its TLS state): NULL.
#[no_mangle]
pub extern "C" fn quiche_conn_new_with_tls_and_client_dcid(
    _scid: *const u8,
    _scid_len: usize,
    _dcid: *const u8,
    _dcid_len: usize,
    _local: *const sockaddr,
    _local_len: socklen_t,
    _peer: *const sockaddr,
    _peer_len: socklen_t,
    _config: *const super::quiche_config,
    _ssl: *mut std::ffi::c_void,
) -> *mut quiche_conn {
    crate::guard(std::ptr::null_mut(), std::ptr::null_mut)
}
