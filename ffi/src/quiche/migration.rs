//! quiche's migration calls over mpquic's (RFC 9000 §9). mpquic moves a
//! client's path to a new local address in one step
//! (`Connection::migrate`): it validates the new pair and moves when the
//! peer answers, reported as a VALIDATED path event with the new
//! addresses. quiche's two steps map onto it: quiche_conn_probe_path on a
//! single-path connection starts the move (on a multipath one it opens a
//! path, as quiche_conn_open_path does), and quiche_conn_migrate* after
//! that finds the path already there. The peer's address is the peer's to
//! change: a pair whose peer address no path has is QUICHE_ERR_INVALID_STATE.
//! mpquic picks the connection ID itself; `*seq` gets the path's wire ID.

use std::ffi::c_int;
use std::net::SocketAddr;

use engine::{Connection, PathError, PathId};
use libc::{sockaddr, socklen_t};

use super::conn::{conn_mut, quiche_conn};
use super::mp::path_result;
use super::{now, QUICHE_ERR_INVALID_STATE};
use crate::addr::from_c;
use crate::guard;

/// Move the path to `peer` (any path when None) to local address `local`;
/// a path already on that pair is left as it is.
fn move_local(c: &mut Connection, local: SocketAddr, peer: Option<SocketAddr>) -> Result<PathId, PathError> {
    let to_peer = |p: &SocketAddr| peer.is_none_or(|want| want == *p);
    if let Some((id, _, _)) = c.paths().find(|(_, l, p)| *l == local && to_peer(p)) {
        return Ok(id);
    }
    let (id, _, _) = c.paths().find(|(_, _, p)| to_peer(p)).ok_or(PathError::UnknownPath)?;
    c.migrate(id, local, now()).map(|()| id)
}

/// Run `f` on the live connection with the C addresses decoded (`peer` may
/// be NULL for "the path's own peer").
///
/// # Safety
/// `conn` is NULL or live; each address NULL or covering its length; `seq`
/// NULL or writable.
unsafe fn with_pair(
    conn: *mut quiche_conn,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: Option<(*const sockaddr, socklen_t)>,
    seq: *mut u64,
    f: impl FnOnce(&mut Connection, SocketAddr, Option<SocketAddr>) -> Result<PathId, PathError>,
) -> c_int {
    let c = conn_mut!(conn, QUICHE_ERR_INVALID_STATE.c());
    guard(QUICHE_ERR_INVALID_STATE.c(), || {
        // SAFETY: the caller's contract.
        let Some(l) = (unsafe { from_c(local, local_len) }) else { return QUICHE_ERR_INVALID_STATE.c() };
        let p = match peer {
            // SAFETY: as above.
            Some((p, len)) => match unsafe { from_c(p, len) } {
                Some(p) => Some(p),
                None => return QUICHE_ERR_INVALID_STATE.c(),
            },
            None => None,
        };
        let Some(live) = c.live_mut() else { return QUICHE_ERR_INVALID_STATE.c() };
        // SAFETY: the caller's contract.
        unsafe { path_result(f(live, l, p), seq) }
    })
}

/// Validate the pair `local` -> `peer`: on a multipath connection a new
/// path (quiche_conn_open_path); otherwise the client's path to `peer`
/// starts moving to `local` and moves once validated (a VALIDATED event
/// with the new pair). 0, QUICHE_ERR_INVALID_STATE (a server, no path to
/// `peer`, migration disabled by the peer, handshake not confirmed) or
/// QUICHE_ERR_OUT_OF_IDENTIFIERS (no spare connection ID of the peer's).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_probe_path(
    conn: *mut quiche_conn,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    seq: *mut u64,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        with_pair(conn, local, local_len, Some((peer, peer_len)), seq, |c, l, p| match p {
            Some(p) if c.is_multipath() => c.probe_path(l, p, now()),
            _ => move_local(c, l, p),
        })
    }
}

/// Move the path to `peer` to local address `local` (validated first, as
/// for quiche_conn_probe_path); 0 at once if a path is on that pair
/// already. Errors as quiche_conn_probe_path.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_migrate(
    conn: *mut quiche_conn,
    local: *const sockaddr,
    local_len: socklen_t,
    peer: *const sockaddr,
    peer_len: socklen_t,
    seq: *mut u64,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { with_pair(conn, local, local_len, Some((peer, peer_len)), seq, move_local) }
}

/// Move the first path to local address `local`, keeping its peer address
/// (as quiche_conn_migrate).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_migrate_source(
    conn: *mut quiche_conn,
    local: *const sockaddr,
    local_len: socklen_t,
    seq: *mut u64,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        with_pair(conn, local, local_len, None, seq, |c, l, _| {
            let first = c.paths().next().map(|(_, _, p)| p);
            move_local(c, l, first)
        })
    }
}
