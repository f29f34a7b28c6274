//! Per-packet path schedulers: the public trait, the read-only snapshot it is
//! given, the decision it returns, and the factory that builds schedulers by
//! name.
//!
//! The engine calls [`Scheduler::decide`] each time it could send a packet
//! carrying stream data, with a [`SchedContext`] describing every path. The
//! scheduler answers with a [`Decision`]: new data on a path (optionally
//! duplicated onto other paths, or taken from further along the waiting data
//! so that it arrives in order with what faster paths send first), a redundant
//! copy of the oldest unacknowledged data on a path, or nothing for now. It then hears back through
//! [`Scheduler::on_sent`], [`Scheduler::on_ack`] and [`Scheduler::on_loss`].
//!
//! Schedulers are called once per packet: `decide` must not allocate (per-path
//! state lives in buffers that only grow when a new path appears) and does
//! O(paths) work.
//!
//! Implementing a scheduler outside the crate:
//!
//! ```
//! use mpquic::sched::{Decision, PathList, SchedContext, Scheduler};
//!
//! /// Always the path with the most free congestion window.
//! #[derive(Debug, Default)]
//! struct MostRoom;
//!
//! impl Scheduler for MostRoom {
//!     fn name(&self) -> &'static str {
//!         "most-room"
//!     }
//!     fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision {
//!         ctx.paths
//!             .iter()
//!             .filter(|p| ctx.eligible(p) && p.can_send())
//!             .max_by_key(|p| p.cwnd_space())
//!             .map(|p| Decision::Send { path: p.id, also: PathList::new() })
//!             .unwrap_or(Decision::Wait { until: None })
//!     }
//! }
//!
//! let mut s: Box<dyn Scheduler> = Box::new(MostRoom);
//! let paths = [mpquic::sched::PathSnapshot::new(mpquic::PathId(0))];
//! let ctx = SchedContext::new(std::time::Instant::now(), &paths, Default::default());
//! assert!(matches!(s.decide(&ctx), Decision::Send { .. }));
//!
//! // Every connection made with this configuration uses it...
//! #[derive(Debug)]
//! struct MostRoomFactory;
//! impl mpquic::sched::SchedulerFactory for MostRoomFactory {
//!     fn build(&self) -> Box<dyn Scheduler> {
//!         Box::new(MostRoom)
//!     }
//!     fn name(&self) -> &str {
//!         "most-room"
//!     }
//! }
//! let mut config = mpquic::Config::new();
//! config.set_scheduler_factory(std::sync::Arc::new(MostRoomFactory));
//! // ...or swap it into one connection: `conn.set_scheduler(Box::new(MostRoom))`.
//! ```
//!
//! The engine asks only while stream data waits (or data is in flight, for
//! redundant copies). Whether a path can take a packet now is one rule,
//! [`PathSnapshot::can_send`]: room in the window for a full packet and no
//! pacer hold past a millisecond (the hold shows as
//! [`PathSnapshot::next_release`]; window and in-flight figures are the
//! recovery's own, never adjusted). `Wait` is honoured: nothing
//! but ACKs and control frames leave until the scheduler says otherwise (or
//! `until` passes, which [`Connection::timeout`](crate::Connection::timeout)
//! includes).

use std::fmt;
use std::time::{Duration, Instant};

use crate::PathId;

mod arp;
mod capacity;
mod hetero;
mod meter;
mod rec;
mod simple;
mod sticky;

/// The rec extension's wire pieces, kept under their old name (the codec
/// lives with the other frames, in [`crate::frame::path_dsr`]).
pub use crate::frame::path_dsr as rec_wire;
pub use arp::{
    ar_joins_non_redundant, ar_partition, bytes_arriving_first, ArPath, ArpScheduler, COPY_BUDGET_PERCENT,
    MIN_INFLIGHT_FOR_N,
};
pub use capacity::{CapacityEstimate, CapacityScheduler};
pub use hetero::{blest_should_wait, ecf_decide, BlestScheduler, EcfOutcome, EcfScheduler};
pub use meter::{LossMeter, RateMeter};
pub use rec::{awnd_jitter, DsrEstimator, RecScheduler, AWND_HISTORY};
pub use simple::{LetScheduler, LpcScheduler, MinRttScheduler, RedundantScheduler, RrScheduler};
pub use sticky::{StickyKind, StickyScheduler};

pub use crate::path::{PathSnapshot, PathStatus};

/// What is waiting to be sent on the connection.
#[derive(Clone, Copy, Debug, Default)]
pub struct PendingInfo {
    /// New stream bytes ready to send (within flow control).
    pub new_bytes: u64,
    /// Stream bytes waiting for retransmission.
    pub retransmit_bytes: u64,
    /// If the next data is a retransmission, the path it was first sent on
    /// (the capacity scheduler avoids it).
    pub retransmit_origin: Option<PathId>,
    /// Stream bytes sent and not yet acknowledged (what redundant copies can
    /// duplicate).
    pub unacked_bytes: u64,
    /// Connection-level receive window the peer still allows, if known.
    pub peer_recv_window: Option<u64>,
}

impl PendingInfo {
    /// Bytes waiting in total (new + retransmissions).
    pub fn total(&self) -> u64 {
        self.new_bytes.saturating_add(self.retransmit_bytes)
    }
}

/// Everything a scheduler sees when asked for a decision.
#[derive(Clone, Copy, Debug)]
pub struct SchedContext<'a> {
    /// Current time.
    pub now: Instant,
    /// All paths of the connection, in any order.
    pub paths: &'a [PathSnapshot],
    /// What is waiting to be sent.
    pub pending: PendingInfo,
    /// Some usable path has status Available (computed by [`SchedContext::new`]).
    any_available: bool,
}

impl<'a> SchedContext<'a> {
    /// Build a context.
    pub fn new(now: Instant, paths: &'a [PathSnapshot], pending: PendingInfo) -> Self {
        let any_available = paths.iter().any(|p| p.usable && p.status == PathStatus::Available);
        Self { now, paths, pending, any_available }
    }

    /// The path may be chosen: usable, and either available or a backup while
    /// no available path is usable.
    pub fn eligible(&self, p: &PathSnapshot) -> bool {
        p.usable && (p.status == PathStatus::Available || !self.any_available)
    }

    /// Snapshot of a path by ID.
    pub fn path(&self, id: PathId) -> Option<&'a PathSnapshot> {
        self.paths.iter().find(|p| p.id == id)
    }

    /// Eligible path with cwnd space and the lowest srtt (ties: lowest ID).
    pub fn lowest_rtt_with_space(&self) -> Option<&'a PathSnapshot> {
        self.best_by(|p| self.eligible(p) && p.can_send(), |p| p.srtt)
    }

    /// The eligible path matching `filter` with the smallest `key`, first
    /// in slice order on ties.
    pub fn best_by<K: PartialOrd>(
        &self,
        filter: impl Fn(&PathSnapshot) -> bool,
        key: impl Fn(&PathSnapshot) -> K,
    ) -> Option<&'a PathSnapshot> {
        let mut best: Option<(&PathSnapshot, K)> = None;
        for p in self.paths.iter().filter(|p| filter(p)) {
            let k = key(p);
            if best.as_ref().is_none_or(|(_, bk)| k < *bk) {
                best = Some((p, k));
            }
        }
        best.map(|(p, _)| p)
    }
}

/// Maximum number of extra paths a [`Decision::Send`] can duplicate onto.
pub const MAX_COPIES: usize = 8;

/// A small inline list of paths (no allocation), used for "also copy to".
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PathList {
    len: u8,
    ids: [PathId; MAX_COPIES],
}

impl PathList {
    /// The empty list.
    pub const fn new() -> Self {
        Self { len: 0, ids: [PathId(0); MAX_COPIES] }
    }
    /// Append a path; returns false (and drops it) when the list is full.
    pub fn push(&mut self, id: PathId) -> bool {
        match self.ids.get_mut(self.len as usize) {
            Some(slot) => {
                *slot = id;
                self.len += 1;
                true
            }
            None => false,
        }
    }
    /// The paths, in insertion order.
    pub fn as_slice(&self) -> &[PathId] {
        self.ids.get(..self.len as usize).unwrap_or(&[])
    }
    /// Number of paths.
    pub fn len(&self) -> usize {
        self.len as usize
    }
    /// No paths.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Default for PathList {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for PathList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// What to do with the next packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Send the next pending data (retransmissions first, then new stream
    /// data) on `path`; every path of `also` owes a copy of its STREAM
    /// frames, sent before new data on that path once it can send, unless
    /// acknowledged by then (the redundant scheduler).
    Send {
        /// The path that carries the packet.
        path: PathId,
        /// Paths that carry a copy of the same packet.
        also: PathList,
    },
    /// Send new stream data on `path`, starting `skip` bytes into the data
    /// waiting to be sent (of the stream next in line), at most `max_len`
    /// bytes (P-Scheduling: a slow path carries data the fast paths will not
    /// reach before it arrives). The skipped bytes stay first in line for the
    /// next packets on any path, and so does lost data (the scheduler gives
    /// it to a path with `Send`). When fewer than `skip` bytes wait, this is
    /// a plain `Send`.
    SendAhead {
        /// The path that carries the packet.
        path: PathId,
        /// Bytes of waiting data to leave for other packets.
        skip: u64,
        /// Most new bytes to put in the packet.
        max_len: u64,
    },
    /// Send, on `path`, a copy of the oldest stream data that was sent
    /// elsewhere and is not yet acknowledged.
    Redundant {
        /// The path that carries the copy.
        path: PathId,
    },
    /// Send nothing now; ask again when an ACK, a loss, a pacer release or
    /// new data arrives, or at `until` if given.
    Wait {
        /// Time at which the answer may change by itself (e.g. a pacer release).
        until: Option<Instant>,
    },
}

impl Decision {
    /// The path of a `Send` or `Redundant` decision.
    pub fn path(&self) -> Option<PathId> {
        match *self {
            Decision::Send { path, .. } | Decision::SendAhead { path, .. } | Decision::Redundant { path } => {
                Some(path)
            }
            Decision::Wait { .. } => None,
        }
    }
    /// `Send` on one path, no copies.
    pub fn send(path: PathId) -> Self {
        Decision::Send { path, also: PathList::new() }
    }
    /// `Wait` without a deadline.
    pub const WAIT: Decision = Decision::Wait { until: None };
}

/// How a scheduler currently uses a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathRole {
    /// Carries new data (ARP's set N; the active list of rec).
    NonRedundant,
    /// Carries only redundant copies (ARP's set R).
    Redundant,
    /// Not used (rec's UNUSED paths).
    Unused,
}

/// Per-path numbers a scheduler reports.
#[derive(Clone, Debug, PartialEq)]
pub struct PathSchedMetrics {
    /// The path.
    pub id: PathId,
    /// Its role, for schedulers that assign roles.
    pub role: Option<PathRole>,
    /// What the engine counted of the scheduler's use of the path.
    pub counts: SchedCounts,
    /// Bytes of datagrams sent on it that carried no copy (`counts.bytes -
    /// counts.copy_bytes`).
    pub sent_bytes: u64,
    /// Bytes of datagrams sent on it carrying redundant copies.
    pub redundant_bytes: u64,
    /// Capacity estimate in packets (capacity scheduler).
    pub capacity_estimate: Option<f64>,
    /// Desired sending rate in bytes/s (rec).
    pub dsr: Option<u64>,
}

impl PathSchedMetrics {
    fn new(id: PathId) -> Self {
        Self {
            id,
            role: None,
            counts: SchedCounts::default(),
            sent_bytes: 0,
            redundant_bytes: 0,
            capacity_estimate: None,
            dsr: None,
        }
    }
}

/// A scheduler's use of one path, counted by the engine (schedulers keep no
/// counters of their own). Datagrams are counted on multipath connections
/// only, every one (ACK-only ones too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedCounts {
    /// Decisions that picked the path (`Send`, `SendAhead`, `Redundant`, and
    /// each path a `Send { also }` asked a copy for).
    pub decisions: u64,
    /// Datagrams sent on the path.
    pub packets: u64,
    /// Their bytes (whole UDP payloads).
    pub bytes: u64,
    /// Of those, datagrams carrying copies of data sent before.
    pub copy_packets: u64,
    /// Their bytes.
    pub copy_bytes: u64,
}

/// One datagram sent on a path, as [`Scheduler::on_sent`] reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// The whole UDP payload: headers, ACKs and control frames included.
    pub datagram_bytes: usize,
    /// STREAM data in it: new data, retransmissions and copies.
    pub stream_bytes: usize,
    /// It carried a copy of data sent before.
    pub redundant: bool,
}

/// Numbers of a scheduler for stats and qlog: the engine's counts (decisions,
/// waits, per-path [`SchedCounts`]) with what the scheduler adds (roles,
/// estimates). Not built per packet, so it may allocate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchedMetrics {
    /// Scheduler name.
    pub name: &'static str,
    /// Decisions taken.
    pub decisions: u64,
    /// Decisions that were `Wait`.
    pub waits: u64,
    /// Per-path details.
    pub paths: Vec<PathSchedMetrics>,
}

impl SchedMetrics {
    /// Metrics of the scheduler `name`, no path yet.
    pub fn named(name: &'static str) -> Self {
        SchedMetrics { name, ..SchedMetrics::default() }
    }

    /// The entry of path `id`, added if missing.
    pub fn path_mut(&mut self, id: PathId) -> &mut PathSchedMetrics {
        let i = match self.paths.iter().position(|x| x.id == id) {
            Some(i) => i,
            None => {
                self.paths.push(PathSchedMetrics::new(id));
                self.paths.len() - 1
            }
        };
        &mut self.paths[i]
    }
}

/// A per-connection path scheduler. Hooks have no-op defaults.
pub trait Scheduler: Send + fmt::Debug {
    /// Name as accepted by [`build`].
    fn name(&self) -> &'static str;
    /// Choose what the next packet does. Called per packet: must not allocate
    /// once every path has been seen.
    fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision;
    /// A datagram was sent on `path`: its whole size and its stream bytes
    /// ([`Sent`]). Called for every datagram of a multipath connection,
    /// ACK-only ones too, so it measures what each path carries, not only
    /// what decisions put there. (The engine counts decisions and bytes for
    /// stats: a scheduler needs this only for its own logic.)
    fn on_sent(&mut self, _path: PathId, _sent: Sent) {}
    /// `bytes` sent on `path` were acknowledged.
    fn on_ack(&mut self, _path: PathId, _bytes: usize) {}
    /// `bytes` sent on `path` were declared lost (after the congestion
    /// controller has reacted).
    fn on_loss(&mut self, _path: PathId, _bytes: usize) {}
    /// The peer reported a desired sending rate for `path` in bytes/s (the
    /// rec extension, [`rec_wire`]).
    fn on_rate_feedback(&mut self, _path: PathId, _bytes_per_sec: u64) {}
    /// `path` was abandoned; drop its state.
    fn on_path_closed(&mut self, _path: PathId) {}
    /// The scheduler's own numbers for stats (roles, estimates); the engine
    /// adds its counts.
    fn metrics(&self) -> SchedMetrics {
        SchedMetrics::named(self.name())
    }
}

/// Builds one scheduler per connection. Implement it to plug in a scheduler
/// from outside the crate.
pub trait SchedulerFactory: Send + Sync + fmt::Debug {
    /// Build the scheduler of a new connection.
    fn build(&self) -> Box<dyn Scheduler>;
    /// Name shown in stats.
    fn name(&self) -> &str;
}

/// Tunables of the built-in schedulers (only some apply to each).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SchedParams {
    /// Capacity scheduler: occupancy below which a path is uncongested.
    pub gamma: f64,
    /// Capacity scheduler: occupancy above which a path is not used.
    pub delta: f64,
    /// BLEST: initial scaling factor λ.
    pub lambda: f64,
    /// ECF: hysteresis β.
    pub beta: f64,
}

impl Default for SchedParams {
    fn default() -> Self {
        Self { gamma: 0.5, delta: 1.0, lambda: 1.2, beta: 0.25 }
    }
}

/// Error for an unknown scheduler name or a bad parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownScheduler {
    /// The specification that was given.
    pub spec: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for UnknownScheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad scheduler {:?}: {}", self.spec, self.reason)
    }
}
impl std::error::Error for UnknownScheduler {}

const NAMES: [&str; 14] = [
    "minrtt",
    "rr",
    "redundant",
    "arp",
    "capacity",
    "lpc",
    "let",
    "gr-sty",
    "tp-sty",
    "tr-sty",
    "blest",
    "ecf",
    "rec",
    "lrf",
];

/// Names accepted by [`build`] (`lrf` is an alias of `minrtt`).
pub fn names() -> &'static [&'static str] {
    &NAMES
}

/// Build a scheduler from a specification `name[:key=value,...]`, starting
/// from `params`. Keys: `gamma`, `delta` (capacity), `lambda` (blest),
/// `beta` (ecf); e.g. `"capacity:gamma=0.4,delta=1.0"`.
pub fn build(spec: &str, params: &SchedParams) -> Result<Box<dyn Scheduler>, UnknownScheduler> {
    let err = |reason| UnknownScheduler { spec: spec.to_owned(), reason };
    let (name, args) = match spec.split_once(':') {
        Some((n, a)) => (n.trim(), a),
        None => (spec.trim(), ""),
    };
    let mut p = *params;
    for kv in args.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').ok_or_else(|| err("expected key=value"))?;
        let v: f64 = v.trim().parse().map_err(|_| err("parameter value is not a number"))?;
        if !v.is_finite() || v < 0.0 {
            return Err(err("parameter value must be finite and non-negative"));
        }
        match k.trim() {
            "gamma" => p.gamma = v,
            "delta" => p.delta = v,
            "lambda" => p.lambda = v,
            "beta" => p.beta = v,
            _ => return Err(err("unknown parameter")),
        }
    }
    if p.gamma > p.delta {
        return Err(err("gamma must not exceed delta"));
    }
    let s: Box<dyn Scheduler> = match name.to_ascii_lowercase().as_str() {
        "minrtt" | "lrf" => Box::new(MinRttScheduler::default()),
        "rr" => Box::new(RrScheduler::default()),
        "redundant" => Box::new(RedundantScheduler::default()),
        "arp" => Box::new(ArpScheduler::default()),
        "capacity" => Box::new(CapacityScheduler::new(p.gamma, p.delta)),
        "lpc" => Box::new(LpcScheduler::default()),
        "let" => Box::new(LetScheduler::default()),
        "gr-sty" => Box::new(StickyScheduler::new(StickyKind::Greedy)),
        "tp-sty" => Box::new(StickyScheduler::new(StickyKind::Throughput)),
        "tr-sty" => Box::new(StickyScheduler::new(StickyKind::ThroughputRtt)),
        "blest" => Box::new(BlestScheduler::new(p.lambda)),
        "ecf" => Box::new(EcfScheduler::new(p.beta)),
        "rec" => Box::new(RecScheduler::default()),
        _ => return Err(err("unknown scheduler name")),
    };
    Ok(s)
}

/// Duration in seconds as f64.
pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Per-path state kept by a scheduler: a small vector keyed by path ID with
/// linear lookup (connections have a handful of paths). Grows only when a new
/// path appears, so lookups in `decide` do not allocate afterwards.
#[derive(Clone, Debug)]
pub(crate) struct PerPath<T> {
    items: Vec<(PathId, T)>,
}

impl<T> Default for PerPath<T> {
    fn default() -> Self {
        Self { items: Vec::new() }
    }
}

impl<T: Default> PerPath<T> {
    pub(crate) fn get_or_insert(&mut self, id: PathId) -> &mut T {
        let idx = match self.items.iter().position(|(p, _)| *p == id) {
            Some(i) => i,
            None => {
                self.items.push((id, T::default()));
                self.items.len() - 1
            }
        };
        // `idx` is in range: found above or just pushed.
        &mut self.items[idx].1
    }
}

impl<T> PerPath<T> {
    pub(crate) fn get(&self, id: PathId) -> Option<&T> {
        self.items.iter().find(|(p, _)| *p == id).map(|(_, t)| t)
    }
    pub(crate) fn get_mut(&mut self, id: PathId) -> Option<&mut T> {
        self.items.iter_mut().find(|(p, _)| *p == id).map(|(_, t)| t)
    }
    pub(crate) fn remove(&mut self, id: PathId) {
        self.retain(|p, _| p != id);
    }
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(PathId, &mut T) -> bool) {
        self.items.retain_mut(|(p, t)| keep(*p, t));
    }
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(PathId, T)> {
        self.items.iter()
    }
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut (PathId, T)> {
        self.items.iter_mut()
    }
}

/// What the engine counts of any scheduler's work ([`SchedCounts`] per path).
#[derive(Clone, Debug, Default)]
pub(crate) struct Counters {
    decisions: u64,
    waits: u64,
    per_path: PerPath<SchedCounts>,
}

impl Counters {
    /// A decision was taken.
    pub(crate) fn decided(&mut self, d: Decision) {
        self.decisions += 1;
        match d {
            Decision::Wait { .. } => self.waits += 1,
            Decision::SendAhead { path, .. } | Decision::Redundant { path } => {
                self.per_path.get_or_insert(path).decisions += 1
            }
            Decision::Send { path, also } => {
                self.per_path.get_or_insert(path).decisions += 1;
                for &p in also.as_slice().iter().filter(|&&p| p != path) {
                    self.per_path.get_or_insert(p).decisions += 1;
                }
            }
        }
    }

    /// A datagram went out on `path`.
    pub(crate) fn sent(&mut self, path: PathId, sent: Sent) {
        let e = self.per_path.get_or_insert(path);
        e.packets += 1;
        e.bytes += sent.datagram_bytes as u64;
        if sent.redundant {
            e.copy_packets += 1;
            e.copy_bytes += sent.datagram_bytes as u64;
        }
    }

    /// The counts of `path` (zero if never used).
    pub(crate) fn path(&self, path: PathId) -> SchedCounts {
        self.per_path.get(path).copied().unwrap_or_default()
    }

    /// The scheduler's own metrics with these counts added.
    pub(crate) fn merge(&self, mut m: SchedMetrics) -> SchedMetrics {
        m.decisions = self.decisions;
        m.waits = self.waits;
        for &(id, c) in self.per_path.iter() {
            let pm = m.path_mut(id);
            pm.counts = c;
            pm.sent_bytes = c.bytes - c.copy_bytes;
            pm.redundant_bytes = c.copy_bytes;
        }
        m
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    use super::*;

    /// A path with the given srtt (ms), cwnd and in-flight (packets of 1000 B).
    pub(crate) fn path(id: u32, srtt_ms: u64, cwnd_pkts: usize, inflight_pkts: usize) -> PathSnapshot {
        PathSnapshot {
            srtt: Duration::from_millis(srtt_ms),
            min_rtt: Duration::from_millis(srtt_ms),
            rttvar: Duration::from_millis(srtt_ms / 4),
            cwnd: cwnd_pkts * 1000,
            bytes_in_flight: inflight_pkts * 1000,
            packets_in_flight: inflight_pkts,
            mss: 1000,
            in_slow_start: false,
            ..PathSnapshot::new(PathId(id))
        }
    }

    /// A fixed base time for tests (the engine never reads the clock; a
    /// test needs one `Instant` to start from).
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn t0() -> Instant {
        Instant::now()
    }

    pub(crate) fn pending(new_bytes: u64) -> PendingInfo {
        PendingInfo { new_bytes, ..PendingInfo::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;

    #[test]
    fn factory_builds_every_name() {
        for n in names() {
            let s = build(n, &SchedParams::default()).unwrap();
            let expect = if *n == "lrf" { "minrtt" } else { n };
            assert_eq!(s.name(), expect);
        }
        assert!(build("nope", &SchedParams::default()).is_err());
    }

    #[test]
    fn factory_parses_capacity_params() {
        let s = build("capacity:gamma=0.4,delta=1.0", &SchedParams::default()).unwrap();
        assert!(format!("{s:?}").contains("gamma: 0.4"));
        assert!(build("capacity:gamma=2,delta=1", &SchedParams::default()).is_err());
        assert!(build("capacity:gamma", &SchedParams::default()).is_err());
        assert!(build("capacity:zeta=1", &SchedParams::default()).is_err());
        assert!(build("capacity:gamma=nan", &SchedParams::default()).is_err());
    }

    #[test]
    fn backup_paths_only_when_no_available_path() {
        let mut a = path(0, 10, 10, 0);
        let mut b = path(1, 50, 10, 0);
        b.status = PathStatus::Backup;
        let paths = [a, b];
        let ctx = SchedContext::new(t0(), &paths, pending(1000));
        assert!(ctx.eligible(&paths[0]));
        assert!(!ctx.eligible(&paths[1]));
        a.usable = false;
        let paths = [a, b];
        let ctx = SchedContext::new(t0(), &paths, pending(1000));
        assert!(ctx.eligible(&paths[1]));
    }

    #[test]
    fn engine_counts_decisions_datagrams_and_copies_per_path() {
        let mut c = Counters::default();
        let mut also = PathList::new();
        also.push(PathId(0));
        also.push(PathId(1));
        c.decided(Decision::Send { path: PathId(0), also });
        c.decided(Decision::Redundant { path: PathId(1) });
        c.decided(Decision::WAIT);
        c.sent(PathId(0), Sent { datagram_bytes: 1000, stream_bytes: 900, redundant: false });
        c.sent(PathId(1), Sent { datagram_bytes: 500, stream_bytes: 400, redundant: true });
        c.sent(PathId(1), Sent { datagram_bytes: 40, stream_bytes: 0, redundant: false });
        let mut own = SchedMetrics::named("x");
        own.path_mut(PathId(1)).role = Some(PathRole::Redundant);
        let m = c.merge(own);
        assert_eq!((m.name, m.decisions, m.waits), ("x", 3, 1));
        let p0 = SchedCounts { decisions: 1, packets: 1, bytes: 1000, copy_packets: 0, copy_bytes: 0 };
        let p1 = SchedCounts { decisions: 2, packets: 2, bytes: 540, copy_packets: 1, copy_bytes: 500 };
        assert_eq!(
            (c.path(PathId(0)), c.path(PathId(1)), c.path(PathId(7))),
            (p0, p1, SchedCounts::default())
        );
        let m1 = m.paths.iter().find(|p| p.id == PathId(1)).unwrap();
        assert_eq!((m1.role, m1.sent_bytes, m1.redundant_bytes), (Some(PathRole::Redundant), 40, 500));
    }

    #[test]
    fn path_list_is_bounded() {
        let mut l = PathList::new();
        for i in 0..MAX_COPIES as u32 {
            assert!(l.push(PathId(i)));
        }
        assert!(!l.push(PathId(99)));
        assert_eq!(l.len(), MAX_COPIES);
        assert_eq!(l.as_slice()[3], PathId(3));
    }
}
