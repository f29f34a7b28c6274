//! The dispatcher: asks the path scheduler what the next datagram carries
//! and keeps what its decisions leave to do (copies owed to other paths,
//! the redundant-copy cursor, a wait), then hands the decision down to the
//! packet writer as a [`Job`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::sched::{
    Counters, Decision, PathSnapshot, PendingInfo, PerPath, SchedContext, SchedCounts, SchedMetrics,
    Scheduler, Sent,
};
use crate::stream::StreamId;
use crate::PathId;

use super::{Connection, Error, SendInfo};

/// How far ahead of its pacer a path may be given a packet when there are
/// several paths (the caller holds it until `SendInfo::at`).
const PACING_HORIZON: Duration = Duration::from_millis(1);

/// STREAM ranges (id, offset, len, fin) of one packet.
pub(super) type CopyFrames = smallvec::SmallVec<[(u64, u64, u32, bool); 2]>;

/// What stream data a datagram may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DataMode {
    /// Retransmissions, then new data (the ranges written are kept in
    /// [`Job::ranges`] when `collect` is set, for redundant copies).
    Normal { collect: bool },
    /// New data from `skip` bytes into what waits, at most `max_len`
    /// (`Decision::SendAhead`); `Normal` when that is not possible.
    Ahead { skip: u64, max_len: u64 },
    /// ACKs and control frames only: the scheduler did not pick this path.
    NoStream,
    /// A copy of the STREAM ranges in [`Job::ranges`].
    Copy,
    /// A copy of the oldest unacknowledged data from [`Job::cursor`] on.
    Redundant,
}

/// One decision as the packet writer carries it out.
#[derive(Debug)]
pub(super) struct Job {
    pub(super) mode: DataMode,
    /// The STREAM ranges written (`Normal { collect: true }`) or to copy
    /// (`Copy`).
    pub(super) ranges: CopyFrames,
    /// Where the next redundant copy starts (`Redundant`); advanced by the
    /// writer.
    pub(super) cursor: (StreamId, u64),
    /// STREAM bytes the datagram carries (multipath only; for `on_sent`).
    pub(super) stream_bytes: usize,
}

impl DataMode {
    pub(super) const NORMAL: DataMode = DataMode::Normal { collect: false };
}

impl Job {
    pub(super) fn new(mode: DataMode) -> Job {
        Job { mode, ranges: CopyFrames::new(), cursor: (StreamId(0), 0), stream_bytes: 0 }
    }
    /// The datagram repeats data already sent.
    pub(super) fn is_copy(&self) -> bool {
        matches!(self.mode, DataMode::Copy | DataMode::Redundant)
    }
}

/// The scheduler, the state its decisions leave behind, and the counts of
/// its decisions and of what they sent.
pub(super) struct Dispatcher {
    pub(super) sched: Box<dyn Scheduler>,
    counts: Counters,
    /// Copies each path owes (`Decision::Send`'s `also`): the STREAM ranges
    /// of packets sent elsewhere, oldest first, sent when the path can send
    /// and dropped once acknowledged.
    owed: PerPath<VecDeque<CopyFrames>>,
    /// Where the next copy of unacknowledged data starts (stream, offset).
    cursor: (StreamId, u64),
    /// The scheduler has asked for redundant copies at least once.
    made_copies: bool,
    /// The scheduler asked to be asked again at this time.
    pub(super) until: Option<Instant>,
    /// Snapshot buffer, reused so no packet allocates.
    snapshots: Vec<PathSnapshot>,
    /// The path whose packet was last declared lost (retransmissions avoid
    /// it under the capacity scheduler).
    pub(super) last_loss_path: Option<PathId>,
}

impl Dispatcher {
    pub(super) fn new(sched: Box<dyn Scheduler>) -> Dispatcher {
        Dispatcher {
            sched,
            counts: Counters::default(),
            owed: PerPath::default(),
            cursor: (StreamId(0), 0),
            made_copies: false,
            until: None,
            snapshots: Vec::with_capacity(4),
            last_loss_path: None,
        }
    }

    /// Replace the scheduler (its copies are its own business).
    pub(super) fn set_scheduler(&mut self, sched: Box<dyn Scheduler>) {
        self.sched = sched;
        self.made_copies = false;
    }

    /// A datagram went out on `path` (multipath connections).
    pub(super) fn on_sent(&mut self, path: PathId, sent: Sent) {
        self.counts.sent(path, sent);
        self.sched.on_sent(path, sent);
    }

    /// The scheduler's metrics with the engine's counts.
    pub(super) fn metrics(&self) -> SchedMetrics {
        self.counts.merge(self.sched.metrics())
    }

    /// What the scheduler did with `path`.
    pub(super) fn counts(&self, path: PathId) -> SchedCounts {
        self.counts.path(path)
    }

    /// The wait the scheduler asked for is over.
    pub(super) fn on_timeout(&mut self, now: Instant) {
        if self.until.is_some_and(|t| t <= now) {
            // The next `send` asks the scheduler again.
            self.until = None;
        }
    }
}

type Datagram = Option<(usize, SendInfo)>;

impl Connection {
    /// The next datagram on any path: copies owed, path validation and
    /// probes, then what the scheduler decides, then ACKs and control
    /// frames anywhere.
    pub(super) fn send_next(&mut self, out: &mut [u8], now: Instant) -> Result<Datagram, Error> {
        if self.paths.len() == 1 {
            return self.send_on_index(out, 0, &mut Job::new(DataMode::NORMAL), now);
        }
        // Copies a path owes go before new data on it.
        if let Some(r) = self.send_owed_copy(out, now)? {
            return Ok(Some(r));
        }
        // Path validation and probes are not the scheduler's business.
        if let Some(pi) = self
            .paths
            .iter()
            .position(|p| !p.abandoned && (!p.responses.is_empty() || p.challenge_pending || p.probes > 0))
        {
            // Probes only need an acknowledgement (a PING if nothing else);
            // stream data is the scheduler's business, and a PTO already
            // queued this path's data again for any path.
            if let Some(r) = self.send_on_index(out, pi, &mut Job::new(DataMode::NoStream), now)? {
                return Ok(Some(r));
            }
        }
        self.dispatch.until = None;
        if self.streams.has_pending_data() || self.dgram_pending() || self.needs_redundancy_check() {
            if let Some(r) = self.send_decided(out, now)? {
                return Ok(Some(r));
            }
        }
        // ACKs and control frames may go on any path.
        for pi in 0..self.paths.len() {
            if let Some(r) = self.send_on_index(out, pi, &mut Job::new(DataMode::NoStream), now)? {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }

    /// Ask the scheduler and carry out its decision.
    fn send_decided(&mut self, out: &mut [u8], now: Instant) -> Result<Datagram, Error> {
        let (decision, pacing_wake) = self.decide(now);
        let (path, mode) = match decision {
            Decision::Send { path, also } => (path, DataMode::Normal { collect: !also.is_empty() }),
            Decision::SendAhead { path, skip, max_len } => (path, DataMode::Ahead { skip, max_len }),
            Decision::Redundant { path } => (path, DataMode::Redundant),
            Decision::Wait { until } => {
                self.dispatch.until = until.or(pacing_wake).filter(|&t| t > now);
                return Ok(None);
            }
        };
        let Some(pi) = self.path_index(path) else { return Ok(None) };
        let mut job = Job { cursor: self.dispatch.cursor, ..Job::new(mode) };
        let r = self.send_on_index(out, pi, &mut job, now)?;
        if mode == DataMode::Redundant {
            self.dispatch.cursor = job.cursor;
        }
        if let (Decision::Send { also, .. }, false) = (decision, job.ranges.is_empty()) {
            for &p in also.as_slice().iter().filter(|&&p| p != path) {
                self.owe_copy(p, &job.ranges);
            }
        }
        Ok(r)
    }

    /// `path` owes a copy of `ranges`. What the peer acknowledged meanwhile
    /// is dropped first, so that a path that cannot send (a full window, a
    /// dead link) owes no more than the others have in flight.
    fn owe_copy(&mut self, path: PathId, ranges: &CopyFrames) {
        let mut q = std::mem::take(self.dispatch.owed.get_or_insert(path));
        while q.front().is_some_and(|r| !self.copy_left(r)) {
            q.pop_front();
        }
        q.push_back(ranges.clone());
        *self.dispatch.owed.get_or_insert(path) = q;
    }

    /// The oldest copy owed by a path that can send now (window room and
    /// the pacer within its horizon); copies of abandoned paths are dropped.
    fn send_owed_copy(&mut self, out: &mut [u8], now: Instant) -> Result<Datagram, Error> {
        // Out of `self` while sending, so that each queue can be worked on.
        let mut owed = std::mem::take(&mut self.dispatch.owed);
        owed.retain(|path, _| self.path_index(path).is_some_and(|pi| !self.paths[pi].abandoned));
        let mut res = Ok(None);
        for (path, q) in owed.iter_mut() {
            let Some(pi) = self.path_index(*path) else { continue };
            if self.paths[pi].snapshot(now, self.pacing.then_some(PACING_HORIZON)).can_send() {
                res = self.send_owed_on(q, pi, out, now);
                if !matches!(res, Ok(None)) {
                    break;
                }
            }
        }
        self.dispatch.owed = owed;
        res
    }

    /// The oldest copy in `q` still unacknowledged, on path `pi`;
    /// acknowledged ones are dropped on the way.
    fn send_owed_on(
        &mut self,
        q: &mut VecDeque<CopyFrames>,
        pi: usize,
        out: &mut [u8],
        now: Instant,
    ) -> Result<Datagram, Error> {
        while let Some(ranges) = q.pop_front() {
            if !self.copy_left(&ranges) {
                continue;
            }
            let mut job = Job { ranges, ..Job::new(DataMode::Copy) };
            let r = self.send_on_index(out, pi, &mut job, now)?;
            if r.is_none() {
                // Not sent (e.g. no CID for the path yet): keep it for later.
                q.push_front(job.ranges);
            }
            return Ok(r);
        }
        Ok(None)
    }

    /// A scheduler that has made copies may want more with no new data
    /// waiting (others are not asked then: nothing for them to do).
    fn needs_redundancy_check(&self) -> bool {
        self.dispatch.made_copies
            && self.paths.iter().any(|p| p.recovery.bytes_in_flight() > 0)
            && self.paths.iter().filter(|p| p.usable()).count() > 1
    }

    /// Ask the scheduler, describing what is pending. A path whose pacer
    /// would hold a new packet beyond [`PACING_HORIZON`] carries that
    /// release time and cannot send ([`crate::PathSnapshot::can_send`]), so
    /// that every scheduler sends where a packet can leave now instead of
    /// queueing behind one path's pacer; the second value is when the first
    /// such path frees up.
    fn decide(&mut self, now: Instant) -> (Decision, Option<Instant>) {
        let dgram_bytes = self.dgram_pending_bytes();
        let d = &mut self.dispatch;
        d.snapshots.clear();
        let mut pacing_wake: Option<Instant> = None;
        let mut unacked = 0u64;
        for p in self.paths.iter().filter(|p| !p.abandoned) {
            let s = p.snapshot(now, self.pacing.then_some(PACING_HORIZON));
            if let Some(t) = s.next_release {
                let wake = t - PACING_HORIZON;
                pacing_wake = Some(pacing_wake.map_or(wake, |w| w.min(wake)));
            }
            d.snapshots.push(s);
            unacked += p.recovery.bytes_in_flight() as u64;
        }
        let (new_bytes, retransmit_bytes) = self.streams.pending_bytes();
        let pending = PendingInfo {
            new_bytes: new_bytes + dgram_bytes,
            retransmit_bytes,
            retransmit_origin: if retransmit_bytes > 0 { d.last_loss_path } else { None },
            unacked_bytes: unacked,
            peer_recv_window: Some(self.streams.send_credit()),
        };
        let decision = d.sched.decide(&SchedContext::new(now, &d.snapshots, pending));
        d.counts.decided(decision);
        d.made_copies |= match decision {
            Decision::Send { also, .. } => !also.is_empty(),
            Decision::Redundant { .. } => true,
            Decision::SendAhead { .. } | Decision::Wait { .. } => false,
        };
        (decision, pacing_wake)
    }
}
