//! mpquic extensions to the quiche API: open a path on another local
//! address and read per-path multipath statistics. (Offering multipath and
//! choosing the scheduler are config functions: quiche_config_set_initial_max_path_id,
//! quiche_config_set_scheduler_name; quiche_config_set_cc_algorithm_name
//! takes mpquic's controller names.)

use std::ffi::{c_char, c_int};

use engine::{PathError, PathId, PathStatus};
use libc::{sockaddr, socklen_t};

use super::conn::{conn_mut, conn_ref, quiche_conn};
use super::{now, QUICHE_ERR_DONE, QUICHE_ERR_INVALID_STATE, QUICHE_ERR_OUT_OF_IDENTIFIERS};
use crate::addr::from_c;
use crate::guard;

/// mpquic extension: open a new path from `local` to `peer` on a client
/// whose multipath offer was accepted (quiche_conn_is_multipath); its
/// wire path ID goes to `*path_id` (may be NULL). Data flows on it once the
/// peer answers its PATH_CHALLENGE; send what quiche_conn_send writes from
/// the socket bound to quiche_send_info.from. 0, QUICHE_ERR_INVALID_STATE
/// (no multipath, a server, or the path exists) or
/// QUICHE_ERR_OUT_OF_IDENTIFIERS (the peer's path or connection ID limit;
/// retry after more packets were exchanged).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_open_path(
    conn: *mut quiche_conn,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    path_id: *mut u64,
) -> c_int {
    let c = conn_mut!(conn, QUICHE_ERR_INVALID_STATE.c());
    guard(QUICHE_ERR_INVALID_STATE.c(), || {
        // SAFETY: each address holds its length in bytes.
        let (Some(l), Some(p)) = (unsafe { from_c(local, local_len) }, unsafe { from_c(peer, peer_len) })
        else {
            return QUICHE_ERR_INVALID_STATE.c();
        };
        let Some(live) = c.live_mut() else { return QUICHE_ERR_INVALID_STATE.c() };
        // SAFETY: valid when not NULL.
        unsafe { path_result(live.probe_path(l, p, now()), path_id) }
    })
}

/// A path call's result for C: 0 with the path's wire ID in `*out` (may be
/// NULL), or quiche's code for the error.
///
/// # Safety
/// `out` is NULL or writable.
pub(crate) unsafe fn path_result(r: Result<PathId, PathError>, out: *mut u64) -> c_int {
    match r {
        Ok(id) => {
            // SAFETY: the caller's contract.
            if let Some(out) = unsafe { out.as_mut() } {
                *out = u64::from(id.0);
            }
            0
        }
        Err(PathError::PathIdLimit | PathError::NoConnectionId) => QUICHE_ERR_OUT_OF_IDENTIFIERS.c(),
        Err(_) => QUICHE_ERR_INVALID_STATE.c(),
    }
}

/// mpquic extension: how many paths the connection has now.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_path_count(conn: *const quiche_conn) -> usize {
    let c = conn_ref!(conn, 0);
    guard(0, || c.live().map_or(0, |l| l.path_stats().count()))
}

/// mpquic extension: a path's multipath statistics.
#[repr(C)]
pub struct quiche_mp_path_stats {
    /// Wire path ID (0: the handshake's path).
    pub path_id: u64,
    /// Validated and usable.
    pub active: bool,
    /// A backup path (used when no other works).
    pub backup: bool,
    /// Smoothed RTT (ns).
    pub rtt: u64,
    /// Congestion window (bytes).
    pub cwnd: u64,
    /// Bytes in flight.
    pub bytes_in_flight: u64,
    /// Pacing rate (bytes/s).
    pub pacing_rate: u64,
    /// UDP payload bytes sent.
    pub sent_bytes: u64,
    /// UDP payload bytes received.
    pub recv_bytes: u64,
    /// Stream bytes sent for the first time on this path.
    pub stream_bytes: u64,
    /// Stream bytes retransmitted on this path.
    pub retrans_bytes: u64,
    /// Stream bytes sent as redundant copies on this path.
    pub redundant_bytes: u64,
    /// Bytes of this path's packets acknowledged.
    pub acked_bytes: u64,
    /// Bytes of this path's packets declared lost.
    pub lost_bytes: u64,
    /// Shared-bottleneck group (coupled-bbr).
    pub group: u32,
    /// Congestion-controller state, NUL-terminated.
    pub cc_state: [c_char; 32],
}

/// mpquic extension: fill `out` for the `idx`-th path (the order of
/// quiche_conn_path_stats). 0, or QUICHE_ERR_DONE if there is no such path.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_mp_path_stats(
    conn: *const quiche_conn,
    idx: usize,
    out: *mut quiche_mp_path_stats,
) -> c_int {
    let c = conn_ref!(conn, QUICHE_ERR_INVALID_STATE.c());
    // SAFETY: valid when not NULL.
    let Some(out) = (unsafe { out.as_mut() }) else { return QUICHE_ERR_INVALID_STATE.c() };
    guard(QUICHE_ERR_INVALID_STATE.c(), || {
        let Some(p) = c.live().and_then(|l| l.path_stats().nth(idx)) else { return QUICHE_ERR_DONE.c() };
        let mut cc_state = [0 as c_char; 32];
        for (d, s) in cc_state.iter_mut().zip(p.cc_state.bytes().take(31)) {
            *d = s as c_char;
        }
        *out = quiche_mp_path_stats {
            path_id: u64::from(p.id.0),
            active: p.active,
            backup: p.status == PathStatus::Backup,
            rtt: p.srtt.as_nanos() as u64,
            cwnd: p.cwnd as u64,
            bytes_in_flight: p.bytes_in_flight as u64,
            pacing_rate: p.pacing_rate,
            sent_bytes: p.sent_bytes,
            recv_bytes: p.recv_bytes,
            stream_bytes: p.stream_bytes,
            retrans_bytes: p.retrans_bytes,
            redundant_bytes: p.redundant_bytes,
            acked_bytes: p.acked_bytes,
            lost_bytes: p.lost_bytes,
            group: p.group,
            cc_state,
        };
        0
    })
}
