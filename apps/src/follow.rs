//! Paths that follow interfaces: `mpquic-client --local IFNAME` keeps a
//! path on each named interface while it is up with an address of the
//! server's family. When the interface goes down or loses that address the
//! path is abandoned at once (PATH_ABANDON with APPLICATION_ABANDON_PATH;
//! the engine sends its unacknowledged data again on the other paths)
//! instead of waiting for timeouts to judge it dead. When it comes back,
//! with the same address or a new one, a socket is bound there and a new
//! path opened (a fresh path ID and connection ID, validated as any). The
//! last path left is never abandoned: the engine's timers decide its fate.
//! Every change is kept as an [`Event`] for the client's summary.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use mpquic::{Connection, ErrorCode, PathError, PathId};
use serde_json::{json, Value};

use crate::ifwatch::{usable_address, IfWatch};
use crate::net::Sockets;

/// A change of one followed interface and what became of it.
#[derive(Clone, Debug)]
pub struct Event {
    /// Seconds since the client started.
    pub t: f64,
    /// The interface.
    pub iface: String,
    /// Its usable address before the change.
    pub was: Option<IpAddr>,
    /// Its usable address after the change (`None`: down or no address).
    pub addr: Option<IpAddr>,
    /// The path abandoned because of it, if any.
    pub abandoned: Option<PathId>,
    /// Why the old path was kept, if it could not be abandoned.
    pub kept: Option<String>,
    /// The path opened from the new address, once the engine took it.
    pub opened: Option<PathId>,
    /// Seconds from the change until the new path was validated.
    pub validated_after: Option<f64>,
    /// Seconds from the change until the new path had received
    /// [`CARRYING_BYTES`].
    pub carrying_after: Option<f64>,
    /// The new path closed before it carried that much.
    pub opened_gone: bool,
}

/// Bytes a new path must have received to count as carrying data again
/// (more than its validation and a few ACKs).
pub const CARRYING_BYTES: u64 = 64 * 1024;

struct Iface {
    name: String,
    ip: Option<IpAddr>,
    /// The socket bound on it now.
    local: Option<SocketAddr>,
    /// Waiting for the engine to open a path from `local` (it needs a
    /// connection ID of the server's for a new path ID first).
    pending: Option<usize>,
}

impl std::fmt::Display for Event {
    /// One line for the client's summary.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2} s"));
        match self.addr {
            None => write!(f, "{:.2} s: {} down", self.t, self.iface)?,
            Some(a) => write!(f, "{:.2} s: {} up at {a}", self.t, self.iface)?,
        }
        if let Some(p) = self.abandoned {
            write!(f, ", path {} abandoned", p.0)?;
        }
        if let Some(k) = &self.kept {
            write!(f, ", kept {k}")?;
        }
        if let Some(p) = self.opened {
            let (v, c) = (secs(self.validated_after), secs(self.carrying_after));
            write!(f, ", path {} opened (validated after {v}, carrying data after {c})", p.0)?;
        }
        Ok(())
    }
}

/// The followed interfaces of one connection.
pub struct Follower {
    watch: IfWatch,
    v6: bool,
    peer: SocketAddr,
    started: Instant,
    ifaces: Vec<Iface>,
    events: Vec<Event>,
}

impl Follower {
    /// Follow `bound`: (interface name, the socket bound on it at start),
    /// with `socks` polling the netlink socket too.
    pub fn start(
        bound: Vec<(String, SocketAddr)>,
        socks: &mut Sockets,
        peer: SocketAddr,
        started: Instant,
    ) -> std::io::Result<Follower> {
        let watch = IfWatch::open()?;
        socks.watch_other(watch.raw_fd())?;
        let ifaces = bound
            .into_iter()
            .map(|(name, local)| Iface { name, ip: Some(local.ip()), local: Some(local), pending: None })
            .collect();
        Ok(Follower { watch, v6: peer.is_ipv6(), peer, started, ifaces, events: Vec::new() })
    }

    /// After the netlink socket polled readable: compare every followed
    /// interface with what it was, and abandon or open paths.
    pub fn on_change(&mut self, conn: &mut Connection, socks: &mut Sockets, now: Instant) {
        if !self.watch.drain().unwrap_or(true) {
            return;
        }
        for i in 0..self.ifaces.len() {
            let now_ip = usable_address(&self.ifaces[i].name, self.v6);
            if now_ip != self.ifaces[i].ip {
                self.change(i, now_ip, conn, socks, now);
            }
        }
    }

    fn change(
        &mut self,
        i: usize,
        ip: Option<IpAddr>,
        conn: &mut Connection,
        socks: &mut Sockets,
        now: Instant,
    ) {
        let t = now.saturating_duration_since(self.started).as_secs_f64();
        let iface = &mut self.ifaces[i];
        let mut ev = Event {
            t,
            iface: iface.name.clone(),
            was: iface.ip,
            addr: ip,
            abandoned: None,
            kept: None,
            opened: None,
            validated_after: None,
            carrying_after: None,
            opened_gone: false,
        };
        if let Some(old) = iface.local.take() {
            let path = conn.path_stats().find(|p| p.local == old && p.active).map(|p| p.id);
            if let Some(id) = path {
                match conn.abandon_path(id, ErrorCode::APPLICATION_ABANDON_PATH.0, now) {
                    Ok(()) => ev.abandoned = Some(id),
                    Err(e) => ev.kept = Some(format!("path {}: {e}", id.0)),
                }
            }
        }
        iface.ip = ip;
        iface.pending = None;
        if let Some(ip) = ip {
            match socks.add(SocketAddr::new(ip, 0)) {
                Ok(bound) => {
                    iface.local = Some(bound);
                    iface.pending = Some(self.events.len());
                }
                Err(e) => eprintln!("mpquic-client: {}: cannot bind {ip}: {e}", iface.name),
            }
        }
        self.events.push(ev);
        self.open(conn, now);
    }

    /// Open the paths waiting for the engine, and note when new paths
    /// validate and carry data. Call once per loop turn.
    pub fn poll(&mut self, conn: &mut Connection, now: Instant) {
        if self.ifaces.iter().any(|f| f.pending.is_some()) {
            self.open(conn, now);
        }
        let t = now.saturating_duration_since(self.started).as_secs_f64();
        let waiting = |e: &&mut Event| e.opened.is_some() && e.carrying_after.is_none() && !e.opened_gone;
        for ev in self.events.iter_mut().filter(waiting) {
            let Some(p) = conn.path_stats().find(|p| Some(p.id) == ev.opened) else {
                // Closed before it carried data: nothing left to wait for.
                ev.opened_gone = true;
                continue;
            };
            if p.active && ev.validated_after.is_none() {
                ev.validated_after = Some(t - ev.t);
            }
            if p.recv_bytes >= CARRYING_BYTES {
                ev.carrying_after = Some(t - ev.t);
            }
        }
    }

    fn open(&mut self, conn: &mut Connection, now: Instant) {
        for f in &mut self.ifaces {
            let (Some(e), Some(local)) = (f.pending, f.local) else { continue };
            match conn.probe_path(local, self.peer, now) {
                Ok(id) => {
                    self.events[e].opened = Some(id);
                    f.pending = None;
                }
                Err(PathError::NoConnectionId) => {}
                Err(err) => {
                    eprintln!("mpquic-client: {}: cannot open a path from {local}: {err}", f.name);
                    f.pending = None;
                }
            }
        }
    }

    /// The events so far, for the client's summary.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The events as JSON: an array of `{t, iface, was, addr, abandoned, kept,
    /// opened, validated_after_s, carrying_after_s}`; and the gap of each
    /// interface that came back (seconds from its loss to its return).
    pub fn to_json(&self) -> Value {
        let opt_id = |p: Option<PathId>| p.map(|p| p.0);
        let mut down_at: Vec<(&str, f64)> = Vec::new();
        let events: Vec<Value> = self
            .events
            .iter()
            .map(|e| {
                let gap = match e.addr {
                    None => {
                        down_at.push((&e.iface, e.t));
                        None
                    }
                    Some(_) => down_at.iter().rev().find(|(n, _)| *n == e.iface).map(|(_, t)| e.t - t),
                };
                json!({
                    "t": e.t, "iface": e.iface, "was": e.was.map(|a| a.to_string()),
                    "addr": e.addr.map(|a| a.to_string()),
                    "abandoned": opt_id(e.abandoned), "kept": e.kept, "opened": opt_id(e.opened),
                    "gap_s": gap, "validated_after_s": e.validated_after, "carrying_after_s": e.carrying_after,
                })
            })
            .collect();
        Value::Array(events)
    }
}
