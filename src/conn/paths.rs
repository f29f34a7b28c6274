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

/// Whether a path is preferred or kept as a backup (draft-21 §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathStatus {
    /// May carry data.
    Available,
    /// Used only when no available path works.
    Backup,
}

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
    /// Congestion-controller state name.
    pub cc_state: &'static str,
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
    /// Our outstanding PATH_CHALLENGE and when it expires.
    pub(crate) challenge: Option<([u8; 8], Instant)>,
    pub(crate) challenge_pending: bool,
    /// PATH_RESPONSEs owed to the peer.
    pub(crate) responses: Vec<[u8; 8]>,
    /// PTO probes owed on this path.
    pub(crate) probes: u8,
    /// Anti-amplification accounting (server, before validation).
    pub(crate) amp_recv: u64,
    pub(crate) amp_sent: u64,
    pub(crate) st: Counters,
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
}

impl Path {
    pub(crate) fn new(
        id: PathId,
        local: SocketAddr,
        peer: SocketAddr,
        config: &Config,
        now: Instant,
        _first: bool,
    ) -> Path {
        let mss = config.max_udp_payload;
        let params = CcParams { path_id: id, mss, initial_window: cc::initial_window(mss), now };
        let controller = cc::build(&config.cc, params)
            .unwrap_or_else(|_| Box::new(crate::cc::cubic::Cubic::new(params)));
        let mut acks = AckTracker::new(config.max_ack_delay, config.ack_delay_exponent as u8);
        acks.set_max_ranges(32);
        Path {
            id,
            local,
            peer,
            validated: false,
            abandoned: false,
            status: PathStatus::Available,
            recovery: PathRecovery::new(params, controller, config.initial_rtt),
            space: PacketSpace::new(SpaceKind::Data),
            acks,
            next_pn: 0,
            challenge: None,
            challenge_pending: false,
            responses: Vec::new(),
            probes: 0,
            amp_recv: 0,
            amp_sent: 0,
            st: Counters::default(),
        }
    }

    /// Validated, not abandoned.
    pub(crate) fn usable(&self) -> bool {
        self.validated && !self.abandoned
    }

    /// Path-validation expiry.
    pub(crate) fn timer(&self) -> Option<Instant> {
        self.challenge.map(|(_, t)| t)
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
            cc_state: cc.metrics().state,
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
}

impl CidState {
    pub(crate) fn new(scid: ConnectionId, peer_limit: u64, _is_server: bool) -> CidState {
        let mut reset_key = [0u8; 32];
        crypto::fill_random(&mut reset_key);
        let mut s = CidState {
            local: Vec::new(),
            peer: Vec::new(),
            retire_pending: Vec::new(),
            peer_limit,
            local_limit: 2,
            cid_len: scid.len(),
            reset_key,
            next_local_seq: vec![(PathId::ZERO, 1)],
        };
        let reset_token = s.reset_token_for(&scid);
        s.local.push(LocalCid { path: PathId::ZERO, seq: 0, cid: scid, reset_token, announce_pending: false });
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

    /// Issue more CIDs for `path` up to the peer's limit.
    pub(crate) fn issue(&mut self, path: PathId) {
        if self.cid_len == 0 {
            return;
        }
        let have = self.local.iter().filter(|c| c.path == path).count() as u64;
        let want = self.local_limit.min(8);
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
        }
    }

    /// A stateless reset token of the peer matches `token`.
    pub(crate) fn is_stateless_reset(&self, token: &[u8; 16]) -> bool {
        self.peer.iter().any(|c| c.reset_token.is_some_and(|t| crate::packet::reset_token_eq(&t, token)))
    }
}
