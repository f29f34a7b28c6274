//! Per-path state (addresses, validation, recovery, application-data packet
//! number space) and the connection's multipath bookkeeping.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::cc::{self, CcParams};
use crate::config::Config;
use crate::crypto;
use crate::recovery::{AckTracker, PacketSpace, PathRecovery, SpaceKind};
use crate::PathId;

use crate::conn::sent::SentFrames;

use super::ecn::EcnPath;
use super::pmtud::Pmtud;
use super::{PathStats, PathStatus};

/// What a new path needs from the configuration (kept by the connection so
/// paths can be created after `connect`/`accept`).
#[derive(Clone, Debug)]
pub(crate) struct PathConfig {
    pub(crate) mss: usize,
    pub(crate) cc: String,
    /// Builds the controllers instead of `cc` (one from outside the crate).
    pub(crate) cc_factory: Option<std::sync::Arc<dyn cc::CcFactory>>,
    pub(crate) max_ack_delay: Duration,
    pub(crate) ack_delay_exponent: u8,
    pub(crate) initial_rtt: Duration,
    /// The peer's max_ack_delay once known.
    pub(crate) peer_max_ack_delay: Option<Duration>,
    /// Mark packets ECT(0) and validate ECN.
    pub(crate) ecn: bool,
    /// Path MTU discovery, up to this link MTU (IP packet size).
    pub(crate) pmtud: bool,
    pub(crate) max_mtu: usize,
    /// The peer's max_udp_payload_size once known.
    pub(crate) peer_max_udp_payload: Option<usize>,
}

impl PathConfig {
    pub(crate) fn from_config(c: &Config) -> PathConfig {
        PathConfig {
            mss: c.max_udp_payload,
            cc: c.cc.clone(),
            cc_factory: c.cc_factory.clone(),
            max_ack_delay: c.max_ack_delay,
            ack_delay_exponent: c.ack_delay_exponent as u8,
            initial_rtt: c.initial_rtt,
            peer_max_ack_delay: None,
            ecn: c.ecn,
            pmtud: c.pmtud,
            max_mtu: c.max_mtu,
            peer_max_udp_payload: None,
        }
    }

    /// A path's MTU search towards `peer`.
    fn pmtud(&self, peer: SocketAddr) -> Pmtud {
        let peer_max = self.peer_max_udp_payload.unwrap_or(usize::MAX);
        let start = self.mss.min(peer_max);
        let link = self.max_mtu.saturating_sub(super::pmtud::header_overhead(peer)).min(peer_max);
        // Never below the starting size: one above the link MTU is the
        // application's choice.
        Pmtud::new(self.pmtud, start, link.max(start))
    }

    /// The configured controller for a path (Cubic if the name is unknown).
    fn controller(&self, params: CcParams) -> Box<dyn cc::CongestionController> {
        match &self.cc_factory {
            Some(f) => f.build(params),
            None => {
                cc::build(&self.cc, params).unwrap_or_else(|_| Box::new(crate::cc::cubic::Cubic::new(params)))
            }
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
    /// Since when the path gets no new data: the other paths answer and
    /// this one stopped (see `check_silent_paths`); cleared by its next
    /// acknowledgement.
    pub(crate) suspect: Option<Instant>,
    /// Added to the silence that makes this path suspect, grown each time
    /// a suspicion proved wrong (the path answered after all).
    pub(crate) suspect_slack: Duration,
    /// When a packet last arrived on this path.
    pub(crate) last_recv: Option<Instant>,
    /// When this path has been quiet long enough to be checked (multipath).
    pub(crate) quiet_at: Option<Instant>,
    /// rec extension, receiver side: this path's rate estimator, the end of
    /// its current round, and a PATH_DSR value waiting to be sent.
    pub(crate) dsr: crate::sched::DsrEstimator,
    pub(crate) dsr_round_end: Option<Instant>,
    pub(crate) dsr_pending: Option<u64>,
    /// Path MTU discovery: the datagram size in use on this path.
    pub(crate) pmtud: Pmtud,
    /// The address pair this path is moving to, while it is validated.
    pub(crate) migration: Option<super::migration::Migration>,
    /// PATH_RESPONSEs owed on other address pairs.
    pub(crate) off_path_responses: Vec<super::migration::OffPathResponse>,
    /// While a new peer address is being validated after the peer moved
    /// (NAT rebinding, RFC 9000 §9.3): the address before, and whether it
    /// was validated, to return to if validation fails.
    pub(crate) moved_from: Option<(SocketAddr, bool)>,
    /// ECN marking and validation (RFC 9000 §13.4.2).
    pub(crate) ecn: EcnPath,
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
        let mut recovery = PathRecovery::new(params, config.controller(params), config.initial_rtt);
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
            suspect: None,
            suspect_slack: Duration::ZERO,
            last_recv: None,
            quiet_at: None,
            dsr: crate::sched::DsrEstimator::default(),
            dsr_round_end: None,
            dsr_pending: None,
            ecn: EcnPath::new(config.ecn),
            pmtud: config.pmtud(peer),
            migration: None,
            off_path_responses: Vec::new(),
            moved_from: None,
        }
    }

    /// The peer's packets now come from `peer` (RFC 9000 §9.3): send there
    /// at once, within the anti-amplification limit until a PATH_CHALLENGE
    /// validates it; remember where to return if that fails. A new IP
    /// address (not only a new port) also gets a fresh controller and RTT
    /// estimate from `cc` (§9.4).
    pub(crate) fn peer_moved(&mut self, peer: SocketAddr, config: &PathConfig, now: Instant) {
        if self.moved_from.is_none() {
            self.moved_from = Some((self.peer, self.validated));
        }
        if peer.ip() != self.peer.ip() {
            let params = CcParams {
                path_id: self.id,
                mss: self.mss(),
                initial_window: cc::initial_window(self.mss()),
                now,
                seed: cc::path_seed(self.local, peer),
            };
            self.recovery.restart_on_new_address(config.controller(params), config.initial_rtt);
        }
        self.peer = peer;
        self.validated = false;
        self.amp_recv = 0;
        self.amp_sent = 0;
        self.end_validation();
        self.challenge_pending = true;
    }

    /// Our migration to `local` → `peer` was validated (RFC 9000 §9.2-9.4):
    /// send there from now on. A new IP address at either end is a new
    /// network path: fresh controller, RTT estimate, MTU search and ECN
    /// test; a new port alone keeps them.
    pub(crate) fn move_to(&mut self, local: SocketAddr, peer: SocketAddr, config: &PathConfig, now: Instant) {
        if local.ip() != self.local.ip() || peer.ip() != self.peer.ip() {
            let params = CcParams {
                path_id: self.id,
                mss: config.mss,
                initial_window: cc::initial_window(config.mss),
                now,
                seed: cc::path_seed(local, peer),
            };
            self.recovery.restart_on_new_address(config.controller(params), config.initial_rtt);
            self.pmtud = config.pmtud(peer);
            self.ecn = EcnPath::new(config.ecn);
        }
        self.local = local;
        self.peer = peer;
        self.moved_from = None;
    }

    /// Path validation of a new peer address failed: back to the old one.
    /// Returns whether there was one.
    pub(crate) fn peer_move_failed(&mut self) -> bool {
        let Some((old, validated)) = self.moved_from.take() else { return false };
        self.peer = old;
        self.validated = validated;
        self.end_validation();
        true
    }

    /// Maximum datagram payload on this path now.
    pub(crate) fn mss(&self) -> usize {
        self.pmtud.current()
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

    /// The status the scheduler sees: backup if either side asked for it.
    pub(crate) fn effective_status(&self) -> PathStatus {
        if self.status == PathStatus::Backup || self.peer_status == PathStatus::Backup {
            PathStatus::Backup
        } else {
            PathStatus::Available
        }
    }

    /// Fill a scheduler snapshot. `horizon`: how far ahead of `now` a paced
    /// packet still counts as sendable (`None`: pacing is off).
    pub(crate) fn snapshot(&self, now: Instant, horizon: Option<Duration>) -> super::PathSnapshot {
        let rtt = self.recovery.rtt();
        let cc = self.recovery.cc();
        let mut s = super::PathSnapshot::new(self.id);
        s.status = self.effective_status();
        s.usable = self.usable() && self.suspect.is_none();
        s.srtt = rtt.smoothed();
        s.min_rtt = rtt.min();
        s.rttvar = rtt.var();
        s.cwnd = self.recovery.cwnd();
        s.bytes_in_flight = self.recovery.bytes_in_flight();
        s.packets_in_flight = self.space.ack_eliciting_in_flight();
        s.bandwidth = cc.bandwidth_estimate().unwrap_or(0);
        s.in_slow_start = cc.in_slow_start();
        s.mss = self.mss();
        s.next_release =
            horizon.and_then(|h| self.recovery.pacer().next_release(now, s.mss).filter(|&t| t > now + h));
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
            ecn: self.ecn.state(),
            ecn_ce: self.ecn.ce_reported(),
            mtu: self.mss(),
            mtu_black_holes: self.pmtud.black_holes,
            lost_bytes: self.recovery.lost_bytes(),
            pacing_gain: cc.metrics().pacing_gain,
            cc_state: cc.metrics().state,
            group: self.id.0,
            sched: Default::default(),
        }
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
    /// The ACK frames of the packet being read: the newest send time they
    /// acknowledged and the paths they acknowledged on (see
    /// `Connection::check_silent_paths`, run once the packet is read).
    pub(crate) answered: Option<Instant>,
    pub(crate) answered_on: Vec<PathId>,
}

impl MpState {
    pub(crate) fn is_closed(&self, id: PathId) -> bool {
        self.closed.contains(&id)
    }
}
