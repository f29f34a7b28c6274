//! quiche's path events over mpquic's paths. The engine's events give new,
//! validated, failed and abandoned paths and its own migrations; what the
//! engine keeps as path state instead (the peer moving to a new address, a
//! new path MTU) is found by comparing each path with what was last
//! reported for it.

use std::collections::VecDeque;
use std::net::SocketAddr;

use engine::{Connection, PathEvent, PathId};
use libc::{sockaddr_storage, socklen_t};

use super::conn::{conn_mut, quiche_conn};
use crate::addr::to_c;
use crate::guard;

/// Kinds of path events (quiche's numbering); `enum quiche_path_event_type`
/// in C, written out in the header (its name is also a function's).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathEventType {
    /// The peer opened a path (server side).
    QUICHE_PATH_EVENT_NEW = 0,
    /// A path was validated; also a path that moved to the addresses
    /// given to quiche_conn_migrate* once they were validated.
    QUICHE_PATH_EVENT_VALIDATED = 1,
    /// A path failed validation.
    QUICHE_PATH_EVENT_FAILED_VALIDATION = 2,
    /// A path was closed (abandoned).
    QUICHE_PATH_EVENT_CLOSED = 3,
    /// Never produced by mpquic: every path has connection IDs of its own.
    QUICHE_PATH_EVENT_REUSED_SOURCE_CONNECTION_ID = 4,
    /// Server: the peer moved a path to a new address (NAT rebinding or
    /// the client's migration), reported once the address is validated.
    QUICHE_PATH_EVENT_PEER_MIGRATED = 5,
    /// Path MTU discovery changed a path's datagram size.
    QUICHE_PATH_EVENT_PMTU_UPDATED = 6,
}

/// A path event (opaque). Free with quiche_path_event_free.
pub struct quiche_path_event {
    ty: PathEventType,
    local: Option<SocketAddr>,
    peer: Option<SocketAddr>,
    /// The path's datagram size (PMTU_UPDATED).
    pmtu: usize,
}

impl quiche_path_event {
    fn new(ty: PathEventType, local: Option<SocketAddr>, peer: Option<SocketAddr>) -> Self {
        quiche_path_event { ty, local, peer, pmtu: 0 }
    }
}

/// What was last reported of one path.
struct Seen {
    id: PathId,
    local: SocketAddr,
    peer: SocketAddr,
    mtu: usize,
}

/// A connection's paths as last reported, and events found but not yet
/// handed out.
#[derive(Default)]
pub(crate) struct PathWatch {
    seen: Vec<Seen>,
    queued: VecDeque<quiche_path_event>,
}

impl PathWatch {
    /// The next event: the engine's first, then state changes.
    fn next(&mut self, c: &mut Connection) -> Option<quiche_path_event> {
        while let Some(e) = c.path_event_next() {
            if let Some(ev) = self.translate(c, e) {
                return Some(ev);
            }
        }
        if self.queued.is_empty() {
            self.compare(c);
        }
        self.queued.pop_front()
    }

    /// quiche's event for an engine event (none for status changes).
    fn translate(&mut self, c: &Connection, e: PathEvent) -> Option<quiche_path_event> {
        use PathEventType::*;
        let (ty, id) = match e {
            PathEvent::New(_, l, p) => {
                return Some(quiche_path_event::new(QUICHE_PATH_EVENT_NEW, Some(l), Some(p)))
            }
            PathEvent::Migrated(id, l, p) => {
                // Our own move: quiche reports the new pair as validated.
                if let Some(s) = self.seen.iter_mut().find(|s| s.id == id) {
                    (s.local, s.peer) = (l, p);
                }
                return Some(quiche_path_event::new(QUICHE_PATH_EVENT_VALIDATED, Some(l), Some(p)));
            }
            PathEvent::Validated(id) => (QUICHE_PATH_EVENT_VALIDATED, id),
            PathEvent::FailedValidation(id) => (QUICHE_PATH_EVENT_FAILED_VALIDATION, id),
            PathEvent::Abandoned(id) => (QUICHE_PATH_EVENT_CLOSED, id),
            PathEvent::StatusChanged(..) => return None,
        };
        let addrs = c.paths().find(|(p, _, _)| *p == id);
        Some(quiche_path_event::new(ty, addrs.map(|a| a.1), addrs.map(|a| a.2)))
    }

    /// Queue what changed on each path since it was last seen. A path's
    /// first sighting sets its baseline.
    fn compare(&mut self, c: &Connection) {
        use PathEventType::*;
        let now: Vec<_> = c.path_stats().map(|s| (s.id, s.local, s.peer, s.mtu, s.active)).collect();
        self.seen.retain(|s| now.iter().any(|n| n.0 == s.id));
        for (id, local, peer, mtu, active) in now {
            let Some(s) = self.seen.iter_mut().find(|s| s.id == id) else {
                self.seen.push(Seen { id, local, peer, mtu });
                continue;
            };
            // A client's pairs change only by its own migration (reported
            // from the engine's event); a server waits for validation.
            if (s.local, s.peer) != (local, peer) && (active || !c.is_server()) {
                (s.local, s.peer) = (local, peer);
                if c.is_server() {
                    let ev = quiche_path_event::new(QUICHE_PATH_EVENT_PEER_MIGRATED, Some(local), Some(peer));
                    self.queued.push_back(ev);
                }
            }
            if s.mtu != mtu {
                s.mtu = mtu;
                let ev = quiche_path_event {
                    pmtu: mtu,
                    ..quiche_path_event::new(QUICHE_PATH_EVENT_PMTU_UPDATED, Some(local), Some(peer))
                };
                self.queued.push_back(ev);
            }
        }
    }
}

/// The next path event, or NULL. Status changes of multipath paths are
/// not reported here. A path's MTU and peer address are compared with
/// what was reported before: poll regularly (as quiche's examples do after
/// each batch of datagrams) to see each change.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_path_event_next(conn: *mut quiche_conn) -> *mut quiche_path_event {
    let c = conn_mut!(conn, std::ptr::null_mut());
    guard(std::ptr::null_mut(), || {
        let Some((live, watch)) = c.live_with_watch() else { return std::ptr::null_mut() };
        watch.next(live).map_or(std::ptr::null_mut(), |ev| Box::into_raw(Box::new(ev)))
    })
}

/// The kind of a path event.
#[no_mangle]
pub unsafe extern "C" fn quiche_path_event_type(ev: *const quiche_path_event) -> PathEventType {
    guard(PathEventType::QUICHE_PATH_EVENT_CLOSED, || {
        // SAFETY: a live event or NULL.
        unsafe { ev.as_ref() }.map_or(PathEventType::QUICHE_PATH_EVENT_CLOSED, |e| e.ty)
    })
}

/// Copy an address out (zero length for none or a NULL out pointer).
unsafe fn put_addr(a: Option<SocketAddr>, out: *mut sockaddr_storage, len: *mut socklen_t) {
    // SAFETY: valid out pointers or NULL.
    if let (Some(o), Some(l)) = (unsafe { out.as_mut() }, unsafe { len.as_mut() }) {
        *o = crate::addr::zeroed_storage();
        *l = a.map_or(0, |a| to_c(&a, o));
    }
}

/// Copy an event's addresses out (zeroed when the path is gone).
unsafe fn event_addrs(
    ev: *const quiche_path_event,
    local: *mut sockaddr_storage,
    local_len: *mut socklen_t,
    peer: *mut sockaddr_storage,
    peer_len: *mut socklen_t,
) {
    guard((), || {
        // SAFETY: a live event or NULL; the out pointers as put_addr's.
        let Some(e) = (unsafe { ev.as_ref() }) else { return };
        unsafe {
            put_addr(e.local, local, local_len);
            put_addr(e.peer, peer, peer_len);
        }
    })
}

/// The addresses of a NEW event.
#[no_mangle]
pub unsafe extern "C" fn quiche_path_event_new(
    ev: *const quiche_path_event,
    local: *mut sockaddr_storage,
    local_len: *mut socklen_t,
    peer: *mut sockaddr_storage,
    peer_len: *mut socklen_t,
) {
    // SAFETY: forwarded.
    unsafe { event_addrs(ev, local, local_len, peer, peer_len) }
}

/// The addresses of a VALIDATED event.
#[no_mangle]
pub unsafe extern "C" fn quiche_path_event_validated(
    ev: *const quiche_path_event,
    local: *mut sockaddr_storage,
    local_len: *mut socklen_t,
    peer: *mut sockaddr_storage,
    peer_len: *mut socklen_t,
) {
    // SAFETY: forwarded.
    unsafe { event_addrs(ev, local, local_len, peer, peer_len) }
}

/// The addresses of a FAILED_VALIDATION event.
#[no_mangle]
pub unsafe extern "C" fn quiche_path_event_failed_validation(
    ev: *const quiche_path_event,
    local: *mut sockaddr_storage,
    local_len: *mut socklen_t,
    peer: *mut sockaddr_storage,
    peer_len: *mut socklen_t,
) {
    // SAFETY: forwarded.
    unsafe { event_addrs(ev, local, local_len, peer, peer_len) }
}

/// The addresses of a CLOSED event (zeroed: the path is gone).
#[no_mangle]
pub unsafe extern "C" fn quiche_path_event_closed(
    ev: *const quiche_path_event,
    local: *mut sockaddr_storage,
    local_len: *mut socklen_t,
    peer: *mut sockaddr_storage,
    peer_len: *mut socklen_t,
) {
    // SAFETY: forwarded.
    unsafe { event_addrs(ev, local, local_len, peer, peer_len) }
}

/// A REUSED_SOURCE_CONNECTION_ID event's ID and address pairs. mpquic never
/// produces the event; for any other event `*id` is 0, the old pair empty
/// and the new pair the event's addresses.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn quiche_path_event_reused_source_connection_id(
    ev: *const quiche_path_event,
    id: *mut u64,
    old_local: *mut sockaddr_storage,
    old_local_len: *mut socklen_t,
    old_peer: *mut sockaddr_storage,
    old_peer_len: *mut socklen_t,
    local: *mut sockaddr_storage,
    local_len: *mut socklen_t,
    peer: *mut sockaddr_storage,
    peer_len: *mut socklen_t,
) {
    guard((), || {
        // SAFETY: valid out pointers or NULL (the caller's contract).
        unsafe {
            if let Some(id) = id.as_mut() {
                *id = 0;
            }
            put_addr(None, old_local, old_local_len);
            put_addr(None, old_peer, old_peer_len);
            event_addrs(ev, local, local_len, peer, peer_len);
        }
    })
}

/// The new address pair of a PEER_MIGRATED event.
#[no_mangle]
pub unsafe extern "C" fn quiche_path_event_peer_migrated(
    ev: *const quiche_path_event,
    local: *mut sockaddr_storage,
    local_len: *mut socklen_t,
    peer: *mut sockaddr_storage,
    peer_len: *mut socklen_t,
) {
    // SAFETY: forwarded.
    unsafe { event_addrs(ev, local, local_len, peer, peer_len) }
}

/// The address pair and new datagram size (UDP payload bytes) of a
/// PMTU_UPDATED event; `*pmtu` is 0 for other events.
#[no_mangle]
pub unsafe extern "C" fn quiche_path_event_pmtu_updated(
    ev: *const quiche_path_event,
    local: *mut sockaddr_storage,
    local_len: *mut socklen_t,
    peer: *mut sockaddr_storage,
    peer_len: *mut socklen_t,
    pmtu: *mut usize,
) {
    guard((), || {
        // SAFETY: a live event or NULL; valid out pointers or NULL.
        unsafe {
            event_addrs(ev, local, local_len, peer, peer_len);
            if let Some(out) = pmtu.as_mut() {
                *out = ev.as_ref().map_or(0, |e| e.pmtu);
            }
        }
    })
}

/// Release a path event (NULL is accepted).
#[no_mangle]
pub unsafe extern "C" fn quiche_path_event_free(ev: *mut quiche_path_event) {
    if !ev.is_null() {
        // SAFETY: made by quiche_conn_path_event_next, not freed before.
        guard((), || drop(unsafe { Box::from_raw(ev) }));
    }
}
