//! quiche's path functions over mpquic's paths: sending on a path, path
//! validation state, the peers seen from a local address, and our source
//! connection IDs.

use std::ffi::c_int;
use std::net::SocketAddr;

use libc::{sockaddr, sockaddr_storage, socklen_t, ssize_t};

use super::conn::{conn_mut, conn_ref, quiche_conn, quiche_send_info};
use super::{conn_error, now, timespec_of, QUICHE_ERR_DONE, QUICHE_ERR_INVALID_STATE};
use crate::addr::{from_c, to_c};
use crate::{guard, slice_mut};

/// An optional address from C (NULL: any).
unsafe fn opt_addr(a: *const sockaddr, len: socklen_t) -> Result<Option<SocketAddr>, ()> {
    if a.is_null() {
        return Ok(None);
    }
    // SAFETY: `a` holds `len` bytes.
    unsafe { from_c(a, len) }.map(Some).ok_or(())
}

/// Like quiche_conn_send, for the path from `from` to `to` (either may be
/// NULL: the first path matching the other). QUICHE_ERR_DONE when that
/// path has nothing to send, QUICHE_ERR_INVALID_STATE when there is no such
/// path.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_send_on_path(
    conn: *mut quiche_conn,
    out: *mut u8,
    out_len: usize,
    from: *const sockaddr,
    from_len: socklen_t,
    to: *const sockaddr,
    to_len: socklen_t,
    out_info: *mut quiche_send_info,
) -> ssize_t {
    let c = conn_mut!(conn, QUICHE_ERR_INVALID_STATE.ss());
    guard(QUICHE_ERR_INVALID_STATE.ss(), || {
        // SAFETY: the caller's buffers and addresses cover their lengths.
        let (Some(o), Some(info)) = (unsafe { slice_mut(out, out_len) }, unsafe { out_info.as_mut() }) else {
            return QUICHE_ERR_INVALID_STATE.ss();
        };
        // SAFETY: as above.
        let (Ok(f), Ok(t)) = (unsafe { opt_addr(from, from_len) }, unsafe { opt_addr(to, to_len) }) else {
            return QUICHE_ERR_INVALID_STATE.ss();
        };
        let Some(live) = c.live_mut() else { return QUICHE_ERR_DONE.ss() };
        let found = live.paths().find(|(_, l, p)| f.is_none_or(|f| f == *l) && t.is_none_or(|t| t == *p));
        let Some((id, _, _)) = found else { return QUICHE_ERR_INVALID_STATE.ss() };
        match live.send_on_path(o, id, now()) {
            Ok(Some((n, si))) => {
                info.from_len = to_c(&si.from, &mut info.from);
                info.to_len = to_c(&si.to, &mut info.to);
                info.at = timespec_of(si.at);
                n as ssize_t
            }
            Ok(None) => QUICHE_ERR_DONE.ss(),
            Err(e) => conn_error(&e).ss(),
        }
    })
}

/// One datagram, as quiche_conn_send_quantum (pacing is per packet).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_send_quantum_on_path(
    conn: *const quiche_conn,
    _local_addr: *const sockaddr,
    _local_len: socklen_t,
    _peer_addr: *const sockaddr,
    _peer_len: socklen_t,
) -> usize {
    crate::guard(0, || conn_ref!(conn, 0).max_send)
}

/// 1 if the path from `from` to `to` is validated, 0 if not yet,
/// QUICHE_ERR_INVALID_STATE if there is no such path.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_is_path_validated(
    conn: *const quiche_conn,
    from: *const sockaddr,
    from_len: usize,
    to: *const sockaddr,
    to_len: usize,
) -> c_int {
    let c = conn_ref!(conn, QUICHE_ERR_INVALID_STATE.c());
    guard(QUICHE_ERR_INVALID_STATE.c(), || {
        // SAFETY: the addresses cover their lengths.
        let (Some(l), Some(p)) =
            (unsafe { from_c(from, from_len as socklen_t) }, unsafe { from_c(to, to_len as socklen_t) })
        else {
            return QUICHE_ERR_INVALID_STATE.c();
        };
        let Some(live) = c.live() else { return QUICHE_ERR_INVALID_STATE.c() };
        match live.path_stats().find(|s| s.local == l && s.peer == p) {
            Some(s) => c_int::from(s.active),
            None => QUICHE_ERR_INVALID_STATE.c(),
        }
    })
}

/// A snapshot of peer addresses (opaque). Free with quiche_socket_addr_iter_free.
pub struct quiche_socket_addr_iter {
    addrs: std::vec::IntoIter<SocketAddr>,
}

/// The peer addresses of the paths on local address `from`.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_paths_iter(
    conn: *mut quiche_conn,
    from: *const sockaddr,
    from_len: usize,
) -> *mut quiche_socket_addr_iter {
    let c = conn_ref!(conn, std::ptr::null_mut());
    guard(std::ptr::null_mut(), || {
        // SAFETY: the address covers its length.
        let Some(l) = (unsafe { from_c(from, from_len as socklen_t) }) else { return std::ptr::null_mut() };
        let addrs: Vec<SocketAddr> = c
            .live()
            .map(|x| x.paths().filter(|(_, a, _)| *a == l).map(|(_, _, p)| p).collect())
            .unwrap_or_default();
        Box::into_raw(Box::new(quiche_socket_addr_iter { addrs: addrs.into_iter() }))
    })
}

/// The next address into `*peer` / `*peer_len`; false at the end.
#[no_mangle]
pub unsafe extern "C" fn quiche_socket_addr_iter_next(
    iter: *mut quiche_socket_addr_iter,
    peer: *mut sockaddr_storage,
    peer_len: *mut usize,
) -> bool {
    crate::guard(false, || {
        // SAFETY: a live iterator and valid out pointers.
        let (Some(it), Some(p), Some(pl)) =
            (unsafe { iter.as_mut() }, unsafe { peer.as_mut() }, unsafe { peer_len.as_mut() })
        else {
            return false;
        };
        match it.addrs.next() {
            Some(a) => {
                *pl = to_c(&a, p) as usize;
                true
            }
            None => false,
        }
    })
}

/// Release an address iterator (NULL is accepted).
#[no_mangle]
pub unsafe extern "C" fn quiche_socket_addr_iter_free(iter: *mut quiche_socket_addr_iter) {
    if !iter.is_null() {
        // SAFETY: made by quiche_conn_paths_iter, not freed before.
        guard((), || drop(unsafe { Box::from_raw(iter) }));
    }
}

/// Connection IDs (opaque). Free with quiche_connection_id_iter_free.
pub struct quiche_connection_id_iter {
    ids: Vec<Vec<u8>>,
    next: usize,
}

/// Our source connection IDs. mpquic exposes the first one only (the one
/// given to quiche_connect / quiche_accept, which routes the connection).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_source_ids(conn: *mut quiche_conn) -> *mut quiche_connection_id_iter {
    let c = conn_ref!(conn, std::ptr::null_mut());
    guard(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(quiche_connection_id_iter { ids: vec![c.scid_bytes().to_vec()], next: 0 }))
    })
}

/// Retired source IDs: always empty (mpquic does not expose them).
#[no_mangle]
pub extern "C" fn quiche_conn_retired_scid_iter(_conn: *mut quiche_conn) -> *mut quiche_connection_id_iter {
    guard(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(quiche_connection_id_iter { ids: Vec::new(), next: 0 }))
    })
}

/// The next ID into `*out` / `*out_len` (valid until the iterator is
/// freed); false at the end.
#[no_mangle]
pub unsafe extern "C" fn quiche_connection_id_iter_next(
    iter: *mut quiche_connection_id_iter,
    out: *mut *const u8,
    out_len: *mut usize,
) -> bool {
    crate::guard(false, || {
        // SAFETY: a live iterator or NULL.
        let Some(it) = (unsafe { iter.as_mut() }) else { return false };
        let Some(id) = it.ids.get(it.next) else { return false };
        it.next += 1;
        // SAFETY: forwarded out pointers; the bytes live in the iterator.
        unsafe { super::conn::out_bytes(id, out, out_len) };
        true
    })
}

/// Release an ID iterator (NULL is accepted).
#[no_mangle]
pub unsafe extern "C" fn quiche_connection_id_iter_free(iter: *mut quiche_connection_id_iter) {
    if !iter.is_null() {
        // SAFETY: made by this module, not freed before.
        guard((), || drop(unsafe { Box::from_raw(iter) }));
    }
}
