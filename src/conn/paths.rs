//! Per-path state (addresses, validation, recovery, application-data packet
//! number space) and connection-ID bookkeeping, keyed by wire Path ID.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::cc::{self, CcParams};
use crate::config::Config;
use crate::crypto;
use crate::packet::ConnectionId;
use crate::recovery::{AckTracker, PacketSpace, PathRecovery, SpaceKind};
use crate::PathId;

use super::sent::SentFrames;

/// Whether a path is preferred or kept as a backup (draft-21 §3.3); the
/// scheduler's own type, so snapshots need no conversion.
pub use crate::sched::PathStatus;

/// Something that happened to a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathEvent {
    /// The peer opened a path from this address.
    New(PathId, SocketAddr, SocketAddr),
    /// Path validation succeeded.
    Validated(PathId),
    /// Path validation failed (no PATH_RESPONSE in time).
    FailedValidation(PathId),
    /// The path was abandoned (by us, the peer, or because it went silent).
    Abandoned(PathId),
    /// The peer changed the path's status.
    StatusChanged(PathId, PathStatus),
}

/// Per-path statistics.
#[derive(Clone, Debug)]
pub struct PathStats {
    /// The path.
    pub id: PathId,
    /// Local address.
    pub local: SocketAddr,
    /// Peer address.
    pub peer: SocketAddr,
    /// Validated and usable.
    pub active: bool,
    /// Status.
    pub status: PathStatus,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// Minimum RTT.
    pub min_rtt: Duration,
    /// RTT variation.
    pub rttvar: Duration,
    /// Congestion window.
    pub cwnd: usize,
    /// Bytes in flight.
    pub bytes_in_flight: usize,
    /// Pacing rate (bytes/s).
    pub pacing_rate: u64,
    /// Bandwidth estimate (bytes/s).
    pub bandwidth: u64,
    /// Packets sent.
    pub sent: u64,
    /// Packets received.
    pub recv: u64,
    /// Packets declared lost.
    pub lost: u64,
    /// UDP payload bytes sent.
    pub sent_bytes: u64,
    /// UDP payload bytes received.
    pub recv_bytes: u64,
    /// Stream bytes sent for the first time.
    pub stream_bytes: u64,
    /// Stream bytes retransmitted on this path.
    pub retrans_bytes: u64,
    /// Stream bytes sent on this path as redundant copies of data also
    /// sent on another path (or earlier on this one).
    pub redundant_bytes: u64,
    /// Times the path went silent while another path answered, and its
    /// data was sent again elsewhere.
    pub suspicions: u64,
    /// Bytes of packets sent on this path and acknowledged.
    pub acked_bytes: u64,
    /// Bytes of packets sent on this path and declared lost.
    pub lost_bytes: u64,
    /// The controller's current pacing gain (BBR family), e.g. Coupled
    /// BBR's α in its cruising phases.
    pub pacing_gain: Option<f64>,
    /// Congestion-controller state name.
    pub cc_state: &'static str,
    /// Shared-bottleneck group ([`crate::sbd`]): paths with equal values
    /// were judged to share a bottleneck; a path alone has its own ID.
    pub group: u32,
}

/// What a new path needs from the configuration (kept by the connection so
/// paths can be created after `connect`/`accept`).
#[derive(Clone, Debug)]
pub(crate) struct PathConfig {
    pub(crate) mss: usize,
    pub(crate) cc: String,
    pub(crate) max_ack_delay: Duration,
    pub(crate) ack_delay_exponent: u8,
    pub(crate) initial_rtt: Duration,
    /// The peer's max_ack_delay once known.
    pub(crate) peer_max_ack_delay: Option<Duration>,
}

impl PathConfig {
    pub(crate) fn from_config(c: &Config) -> PathConfig {
        PathConfig {
            mss: c.max_udp_payload,
            cc: c.cc.clone(),
            max_ack_delay: c.max_ack_delay,
            ack_delay_exponent: c.ack_delay_exponent as u8,
            initial_rtt: c.initial_rtt,
            peer_max_ack_delay: None,
        }
    }
}

/// One network path.
pub(crate) struct Path {
    pub(crate) id: PathId,
    pub(crate) local: SocketAddr,
    pub(crate) peer: SocketAddr,
    pub(crate) validated: bool,
    pub(crate) abandoned: bool,
    pub(crate) status: PathStatus,
    pub(crate) recovery: PathRecovery,
    pub(crate) space: PacketSpace<SentFrames>,
    pub(crate) acks: AckTracker,
    pub(crate) next_pn: u64,
    /// Data of the PATH_CHALLENGEs sent since validation started, each
    /// fresh (RFC 9000 §8.2.1); a PATH_RESPONSE may echo any of them.
    pub(crate) challenges: Challenges,
    /// When the next PATH_CHALLENGE goes out if no PATH_RESPONSE came.
    pub(crate) challenge_retry: Option<Instant>,
    /// A PATH_CHALLENGE is to be sent.
    pub(crate) challenge_pending: bool,
    /// PATH_RESPONSEs owed to the peer.
    pub(crate) responses: Vec<[u8; 8]>,
    /// PTO probes owed on this path.
    pub(crate) probes: u8,
    /// Anti-amplification accounting (server, before validation).
    pub(crate) amp_recv: u64,
    pub(crate) amp_sent: u64,
    pub(crate) st: Counters,
    /// When the outstanding PATH_CHALLENGE is given up on.
    pub(crate) challenge_deadline: Option<Instant>,
    /// Status the peer asked for (PATH_STATUS_*) and its sequence number.
    pub(crate) peer_status: PathStatus,
    pub(crate) peer_status_seq: Option<u64>,
    /// Sequence number of our last PATH_STATUS_* frame for this path.
    pub(crate) status_seq: u64,
    /// Our status must be (re)announced.
    pub(crate) status_pending: bool,
    /// We sent (or queued) PATH_ABANDON for this path.
    pub(crate) abandon_sent: bool,
    /// Path state is dropped at this time (3 PTO after abandonment).
    pub(crate) drop_at: Option<Instant>,
    /// Consecutive PTOs without an acknowledgement on this path.
    pub(crate) silent_ptos: u32,
    /// No new data: the other paths answer and this one stopped (see
    /// `check_silent_paths`); cleared by its next acknowledgement.
    pub(crate) suspect: bool,
    /// When a packet last arrived on this path.
    pub(crate) last_recv: Option<Instant>,
    /// When this path has been quiet long enough to be checked (multipath).
    pub(crate) quiet_at: Option<Instant>,
    /// rec extension, receiver side: this path's rate estimator, the end of
    /// its current round, and a PATH_DSR value waiting to be sent.
    pub(crate) dsr: crate::sched::DsrEstimator,
    pub(crate) dsr_round_end: Option<Instant>,
    pub(crate) dsr_pending: Option<u64>,
    /// Maximum datagram payload on this path.
    pub(crate) mss: usize,
}

/// The data of the PATH_CHALLENGEs sent on a path, newest last. Only the
/// last few are kept: retries back off, so older ones are long overdue.
#[derive(Clone, Debug, Default)]
pub(crate) struct Challenges {
    sent: smallvec::SmallVec<[[u8; 8]; 4]>,
    /// How many were sent in all (the retry backoff exponent).
    count: u32,
}

impl Challenges {
    const KEPT: usize = 8;

    /// Fresh unpredictable data for the next PATH_CHALLENGE.
    pub(crate) fn fresh() -> [u8; 8] {
        let mut d = [0u8; 8];
        crypto::fill_random(&mut d);
        d
    }

    pub(crate) fn on_sent(&mut self, data: [u8; 8]) {
        if self.sent.len() == Self::KEPT {
            self.sent.remove(0);
        }
        self.sent.push(data);
        self.count += 1;
    }

    /// A PATH_RESPONSE with `data` answers one of ours.
    pub(crate) fn answers(&self, data: &[u8; 8]) -> bool {
        self.sent.contains(data)
    }

    /// The data of the last challenges sent.
    #[cfg(test)]
    pub(crate) fn sent(&self) -> &[[u8; 8]] {
        &self.sent
    }

    /// PATH_CHALLENGEs sent so far.
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    pub(crate) fn clear(&mut self) {
        self.sent.clear();
        self.count = 0;
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) sent: u64,
    pub(crate) recv: u64,
    pub(crate) lost: u64,
    pub(crate) sent_bytes: u64,
    pub(crate) recv_bytes: u64,
    pub(crate) stream_bytes: u64,
    pub(crate) retrans_bytes: u64,
    pub(crate) redundant_bytes: u64,
    pub(crate) suspicions: u64,
    pub(crate) acked_bytes: u64,
}

impl Path {
    pub(crate) fn new(
        id: PathId,
        local: SocketAddr,
        peer: SocketAddr,
        config: &Config,
        now: Instant,
    ) -> Path {
        Path::with(id, local, peer, &PathConfig::from_config(config), now)
    }

    pub(crate) fn with(
        id: PathId,
        local: SocketAddr,
        peer: SocketAddr,
        config: &PathConfig,
        now: Instant,
    ) -> Path {
        let mss = config.mss;
        let seed = cc::path_seed(local, peer);
        let params = CcParams { path_id: id, mss, initial_window: cc::initial_window(mss), now, seed };
        let controller =
            cc::build(&config.cc, params).unwrap_or_else(|_| Box::new(crate::cc::cubic::Cubic::new(params)));
        let mut recovery = PathRecovery::new(params, controller, config.initial_rtt);
        if let Some(d) = config.peer_max_ack_delay {
            recovery.set_max_ack_delay(d);
        }
        let mut acks = AckTracker::new(config.max_ack_delay, config.ack_delay_exponent);
        acks.set_max_ranges(32);
        Path {
            id,
            local,
            peer,
            validated: false,
            abandoned: false,
            status: PathStatus::Available,
            recovery,
            space: PacketSpace::new(SpaceKind::Data),
            acks,
            next_pn: 0,
            challenges: Challenges::default(),
            challenge_retry: None,
            challenge_pending: false,
            responses: Vec::new(),
            probes: 0,
            amp_recv: 0,
            amp_sent: 0,
            st: Counters::default(),
            challenge_deadline: None,
            peer_status: PathStatus::Available,
            peer_status_seq: None,
            status_seq: 0,
            status_pending: false,
            abandon_sent: false,
            drop_at: None,
            silent_ptos: 0,
            suspect: false,
            last_recv: None,
            quiet_at: None,
            dsr: crate::sched::DsrEstimator::default(),
            dsr_round_end: None,
            dsr_pending: None,
            mss,
        }
    }

    /// Validated, not abandoned.
    pub(crate) fn usable(&self) -> bool {
        self.validated && !self.abandoned
    }

    /// Stop validating: success, failure or abandonment.
    pub(crate) fn end_validation(&mut self) {
        self.challenges.clear();
        self.challenge_retry = None;
        self.challenge_pending = false;
        self.challenge_deadline = None;
    }

    /// Path-validation retry or expiry, and state removal after abandonment.
    pub(crate) fn timer(&self) -> Option<Instant> {
        let a = self.challenge_retry;
        let b = self.challenge_deadline;
        let c = self.drop_at;
        [a, b, c, self.quiet_at].into_iter().flatten().min()
    }

    /// The status the scheduler sees: backup if either side asked for it.
    pub(crate) fn effective_status(&self) -> PathStatus {
        if self.status == PathStatus::Backup || self.peer_status == PathStatus::Backup {
            PathStatus::Backup
        } else {
            PathStatus::Available
        }
    }

    /// Fill a scheduler snapshot.
    pub(crate) fn snapshot(&self, now: Instant) -> crate::sched::PathSnapshot {
        let rtt = self.recovery.rtt();
        let cc = self.recovery.cc();
        let mut s = crate::sched::PathSnapshot::new(self.id);
        s.status = self.effective_status();
        s.usable = self.usable() && !self.suspect;
        s.srtt = rtt.smoothed();
        s.min_rtt = rtt.min();
        s.rttvar = rtt.var();
        s.cwnd = self.recovery.cwnd();
        s.bytes_in_flight = self.recovery.bytes_in_flight();
        // The sender needs room for a full packet: report less as none.
        if s.cwnd.saturating_sub(s.bytes_in_flight) < self.mss {
            s.bytes_in_flight = s.bytes_in_flight.max(s.cwnd);
        }
        s.packets_in_flight = self.space.ack_eliciting_in_flight();
        s.bandwidth = cc.bandwidth_estimate().unwrap_or(0);
        s.in_slow_start = cc.in_slow_start();
        s.mss = self.mss;
        s.next_release = self.recovery.pacer().next_release(now, s.mss).filter(|t| *t > now);
        s.lost_packets = self.st.lost;
        s.lost_bytes = self.recovery.lost_bytes();
        s.retransmitted_bytes = self.st.retrans_bytes;
        s
    }

    pub(crate) fn stats(&self) -> PathStats {
        let rtt = self.recovery.rtt();
        let cc = self.recovery.cc();
        PathStats {
            id: self.id,
            local: self.local,
            peer: self.peer,
            active: self.usable(),
            status: self.status,
            srtt: rtt.smoothed(),
            min_rtt: rtt.min(),
            rttvar: rtt.var(),
            cwnd: self.recovery.cwnd(),
            bytes_in_flight: self.recovery.bytes_in_flight(),
            pacing_rate: self.recovery.pacing_rate(),
            bandwidth: cc.bandwidth_estimate().unwrap_or_else(|| {
                let s = rtt.smoothed().as_secs_f64().max(1e-6);
                (self.recovery.cwnd() as f64 / s) as u64
            }),
            sent: self.st.sent,
            recv: self.st.recv,
            lost: self.st.lost,
            sent_bytes: self.st.sent_bytes,
            recv_bytes: self.st.recv_bytes,
            stream_bytes: self.st.stream_bytes,
            retrans_bytes: self.st.retrans_bytes,
            redundant_bytes: self.st.redundant_bytes,
            suspicions: self.st.suspicions,
            acked_bytes: self.st.acked_bytes,
            lost_bytes: self.recovery.lost_bytes(),
            pacing_gain: cc.metrics().pacing_gain,
            cc_state: cc.metrics().state,
            group: self.id.0,
        }
    }
}

/// A connection ID we issued.
#[derive(Clone, Debug)]
pub(crate) struct LocalCid {
    pub(crate) path: PathId,
    pub(crate) seq: u64,
    pub(crate) cid: ConnectionId,
    pub(crate) reset_token: [u8; 16],
    /// Announced to the peer (NEW_CONNECTION_ID acknowledged or pending).
    pub(crate) announce_pending: bool,
}

/// A connection ID the peer issued.
#[derive(Clone, Debug)]
pub(crate) struct PeerCid {
    pub(crate) path: PathId,
    pub(crate) seq: u64,
    pub(crate) cid: ConnectionId,
    pub(crate) reset_token: Option<[u8; 16]>,
    pub(crate) in_use: bool,
}

/// Connection IDs in both directions (RFC 9000 §5.1, draft-21 §4.6).
pub(crate) struct CidState {
    pub(crate) local: Vec<LocalCid>,
    pub(crate) peer: Vec<PeerCid>,
    /// Peer CID sequence numbers to retire (path, seq).
    pub(crate) retire_pending: Vec<(PathId, u64)>,
    /// Local limit on peer CIDs per path (our active_connection_id_limit).
    pub(crate) peer_limit: u64,
    /// The peer's limit on our CIDs per path.
    pub(crate) local_limit: u64,
    cid_len: usize,
    reset_key: [u8; 32],
    next_local_seq: Vec<(PathId, u64)>,
    /// Bumped whenever `local` gains or loses an ID, so a router can
    /// re-read the list only when it changed.
    pub(crate) local_generation: u64,
}

impl CidState {
    pub(crate) fn new(scid: ConnectionId, peer_limit: u64, reset_key: Option<[u8; 32]>) -> CidState {
        let reset_key = reset_key.unwrap_or_else(|| {
            let mut k = [0u8; 32];
            crypto::fill_random(&mut k);
            k
        });
        let mut s = CidState {
            local: Vec::new(),
            peer: Vec::new(),
            retire_pending: Vec::new(),
            peer_limit,
            local_limit: 2,
            cid_len: scid.len(),
            reset_key,
            next_local_seq: vec![(PathId::ZERO, 1)],
            local_generation: 0,
        };
        let reset_token = s.reset_token_for(&scid);
        s.local.push(LocalCid {
            path: PathId::ZERO,
            seq: 0,
            cid: scid,
            reset_token,
            announce_pending: false,
        });
        s
    }

    pub(crate) fn cid_len(&self) -> usize {
        self.cid_len
    }

    pub(crate) fn reset_token_for(&self, cid: &ConnectionId) -> [u8; 16] {
        crypto::reset_token(&self.reset_key, cid.as_slice())
    }

    pub(crate) fn initial_scid(&self) -> ConnectionId {
        self.local.first().map(|c| c.cid).unwrap_or(ConnectionId::EMPTY)
    }

    /// Which path a packet's DCID belongs to.
    pub(crate) fn path_of(&self, dcid: &ConnectionId) -> Option<PathId> {
        self.local.iter().find(|c| c.cid == *dcid).map(|c| c.path)
    }

    pub(crate) fn set_initial_peer_cid(&mut self, cid: ConnectionId) {
        self.peer.retain(|c| !(c.path == PathId::ZERO && c.seq == 0));
        self.peer.insert(0, PeerCid { path: PathId::ZERO, seq: 0, cid, reset_token: None, in_use: true });
    }

    /// The DCID to use on a path.
    pub(crate) fn dcid_for(&self, path: PathId) -> Option<ConnectionId> {
        self.peer.iter().find(|c| c.path == path && c.in_use).map(|c| c.cid)
    }

    /// The DCID for a path, taking an unused one of the peer's CIDs for the
    /// path if none is in use yet.
    pub(crate) fn assign_dcid(&mut self, path: PathId) -> Option<ConnectionId> {
        if let Some(c) = self.dcid_for(path) {
            return Some(c);
        }
        let c = self.peer.iter_mut().filter(|c| c.path == path).min_by_key(|c| c.seq)?;
        c.in_use = true;
        Some(c.cid)
    }

    /// The peer gave us a connection ID for this path.
    pub(crate) fn has_peer_cid(&self, path: PathId) -> bool {
        self.peer.iter().any(|c| c.path == path)
    }

    /// Sequence number of the next CID we will issue for `path`.
    pub(crate) fn next_seq(&self, path: PathId) -> u64 {
        self.next_local_seq.iter().find(|(p, _)| *p == path).map(|(_, s)| *s).unwrap_or(0)
    }

    /// Highest path ID we issued CIDs for.
    pub(crate) fn max_issued_path(&self) -> Option<PathId> {
        self.local.iter().map(|c| c.path).max()
    }

    /// Abandoned path: the peer's CIDs are retired at once (draft-21 §3.4),
    /// without RETIRE frames.
    pub(crate) fn retire_peer_path(&mut self, path: PathId) {
        self.peer.retain(|c| c.path != path);
        self.retire_pending.retain(|(p, _)| *p != path);
    }

    /// Forget the CIDs we issued for a path whose state is dropped.
    pub(crate) fn drop_local_path(&mut self, path: PathId) {
        self.local.retain(|c| c.path != path);
        self.local_generation += 1;
    }

    /// Stop answering to one of our IDs (the peer retired it).
    pub(crate) fn retire_local(&mut self, path: PathId, seq: u64) {
        self.local.retain(|c| !(c.path == path && c.seq == seq));
        self.local_generation += 1;
    }

    /// Issue more CIDs for `path` up to the peer's limit.
    pub(crate) fn issue(&mut self, path: PathId) {
        if self.cid_len == 0 {
            return;
        }
        let have = self.local.iter().filter(|c| c.path == path).count() as u64;
        // Non-initial paths need one CID to open and one spare for rotation.
        let want = self.local_limit.min(if path == PathId::ZERO { 8 } else { 4 });
        for _ in have..want {
            let seq = match self.next_local_seq.iter_mut().find(|(p, _)| *p == path) {
                Some((_, s)) => {
                    *s += 1;
                    *s - 1
                }
                None => {
                    self.next_local_seq.push((path, 1));
                    0
                }
            };
            let cid = super::random_cid(self.cid_len);
            let reset_token = self.reset_token_for(&cid);
            self.local.push(LocalCid { path, seq, cid, reset_token, announce_pending: true });
            self.local_generation += 1;
        }
    }

    /// A stateless reset token of the peer matches `token`.
    pub(crate) fn is_stateless_reset(&self, token: &[u8; 16]) -> bool {
        self.peer.iter().any(|c| c.reset_token.is_some_and(|t| crate::packet::reset_token_eq(&t, token)))
    }
}

/// Connection-level multipath state (draft-21 §2, §4.6, §5).
#[derive(Debug, Default)]
pub(crate) struct MpState {
    /// Highest path ID the peer may use (our initial_max_path_id, raised by
    /// MAX_PATH_ID as paths close).
    pub(crate) local_max: u32,
    /// Highest path ID we may use (peer's initial_max_path_id / MAX_PATH_ID).
    pub(crate) peer_max: u32,
    /// The peer's initial_max_path_id (MAX_PATH_ID may not go below it).
    pub(crate) peer_initial_max: u32,
    /// A MAX_PATH_ID frame with `local_max` is due.
    pub(crate) max_path_id_pending: bool,
    /// A PATHS_BLOCKED frame is due.
    pub(crate) paths_blocked_pending: bool,
    /// A PATH_CIDS_BLOCKED frame is due (path, next sequence number).
    pub(crate) cids_blocked_pending: Option<(PathId, u64)>,
    /// PATH_ABANDON frames to send (path, error code).
    pub(crate) abandon_pending: Vec<(PathId, u64)>,
    /// Path IDs that were abandoned: never reused, frames for them ignored.
    pub(crate) closed: Vec<PathId>,
    /// Status updates received before the path exists (path, seq, status).
    pub(crate) early_status: Vec<(PathId, u64, PathStatus)>,
}

impl MpState {
    pub(crate) fn is_closed(&self, id: PathId) -> bool {
        self.closed.contains(&id)
    }
}

/// Errors of the path-management API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathError {
    /// Multipath was not negotiated (or the handshake is not done).
    NotMultipath,
    /// Only clients open paths (draft-21 §3).
    NotClient,
    /// The peer's MAX_PATH_ID does not allow another path (PATHS_BLOCKED sent).
    PathIdLimit,
    /// No unused peer connection ID for the next path ID (PATH_CIDS_BLOCKED sent).
    NoConnectionId,
    /// No such path, or it was already abandoned.
    UnknownPath,
    /// The last usable path cannot be abandoned; close the connection instead.
    LastPath,
    /// A path with this 4-tuple already exists.
    Exists,
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PathError::NotMultipath => "multipath not negotiated",
            PathError::NotClient => "only clients open paths",
            PathError::PathIdLimit => "peer's path ID limit reached",
            PathError::NoConnectionId => "no connection ID for a new path",
            PathError::UnknownPath => "no such path",
            PathError::LastPath => "cannot abandon the last path",
            PathError::Exists => "path already exists",
        })
    }
}
impl std::error::Error for PathError {}
