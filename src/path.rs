//! The path vocabulary: a path's wire ID and status, what the congestion
//! controllers ([`PathView`]) and the schedulers ([`PathSnapshot`]) see of
//! it, the events and statistics the application sees, and (crate-private)
//! the per-path state and connection IDs the connection keeps.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

mod cids;
mod ecn;
pub(crate) mod migration;
pub(crate) mod pmtud;
mod state;

pub(crate) use cids::{CidState, PeerCid};
pub use ecn::EcnState;
pub(crate) use state::{Challenges, MpState, Path, PathConfig};

/// A path's wire identifier (draft-ietf-quic-multipath-21 §2). Path 0 is the
/// path the handshake ran on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathId(pub u32);

impl PathId {
    /// The initial path.
    pub const ZERO: PathId = PathId(0);
}

impl std::fmt::Display for PathId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "path {}", self.0)
    }
}

/// A path's status as set by PATH_STATUS_AVAILABLE / PATH_STATUS_BACKUP
/// (draft-ietf-quic-multipath-21 §3.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PathStatus {
    /// May carry data at any time.
    #[default]
    Available,
    /// Only used when no available path can carry data.
    Backup,
}

/// Read-only facts about one path at decision time.
#[derive(Clone, Copy, Debug)]
pub struct PathSnapshot {
    /// The path's wire identifier.
    pub id: PathId,
    /// Available or backup.
    pub status: PathStatus,
    /// Validated, not abandoned, and allowed to carry data.
    pub usable: bool,
    /// Smoothed RTT (RFC 9002 §5.3).
    pub srtt: Duration,
    /// Minimum RTT.
    pub min_rtt: Duration,
    /// RTT variation.
    pub rttvar: Duration,
    /// Congestion window in bytes.
    pub cwnd: usize,
    /// Bytes in flight (the recovery's count, not adjusted).
    pub bytes_in_flight: usize,
    /// Packets in flight.
    pub packets_in_flight: usize,
    /// Maximum datagram size on this path, in bytes.
    pub mss: usize,
    /// Sending rate in bytes/s: the pacing rate or bandwidth estimate, 0 if
    /// unknown (then [`PathSnapshot::rate`] falls back to cwnd/srtt).
    pub bandwidth: u64,
    /// In slow start / BBR Startup.
    pub in_slow_start: bool,
    /// When the pacer lets the next full packet go, if that is later than
    /// the engine's pacing horizon (1 ms from the decision): until then the
    /// path cannot send. `None` when the pacer is not holding one back that
    /// long, or pacing is off.
    pub next_release: Option<Instant>,
    /// Packets declared lost on this path so far.
    pub lost_packets: u64,
    /// Bytes declared lost on this path so far.
    pub lost_bytes: u64,
    /// Bytes retransmitted on this path so far.
    pub retransmitted_bytes: u64,
}

impl PathSnapshot {
    /// A usable, available path with RFC 9002 defaults (333 ms RTT, 1200-byte
    /// datagrams, 10-packet window, nothing in flight). Handy for tests and
    /// as a base for struct-update syntax.
    pub fn new(id: PathId) -> Self {
        Self {
            id,
            status: PathStatus::Available,
            usable: true,
            srtt: Duration::from_millis(333),
            min_rtt: Duration::from_millis(333),
            rttvar: Duration::from_micros(166_500),
            cwnd: 12_000,
            bytes_in_flight: 0,
            packets_in_flight: 0,
            mss: 1200,
            bandwidth: 0,
            in_slow_start: true,
            next_release: None,
            lost_packets: 0,
            lost_bytes: 0,
            retransmitted_bytes: 0,
        }
    }

    /// Free congestion window in bytes.
    pub fn cwnd_space(&self) -> usize {
        self.cwnd.saturating_sub(self.bytes_in_flight)
    }

    /// The one rule for whether the path can take a packet now: the window
    /// has room for a full one (so that a sub-MSS remainder does not draw
    /// a runt packet) and the pacer releases it within the horizon.
    pub fn can_send(&self) -> bool {
        self.cwnd_space() >= self.mss && self.next_release.is_none()
    }

    /// Sending rate x_i in bytes/s: `bandwidth` when known, else cwnd/srtt.
    pub fn rate(&self) -> f64 {
        if self.bandwidth > 0 {
            self.bandwidth as f64
        } else {
            self.cwnd as f64 / self.srtt.as_secs_f64().max(1e-6)
        }
    }

    /// Congestion window in packets of `mss` bytes.
    pub fn cwnd_packets(&self) -> f64 {
        self.cwnd as f64 / self.mss.max(1) as f64
    }
}

/// Read-only facts about one path, given to controllers and schedulers.
#[derive(Clone, Copy, Debug)]
pub struct PathView {
    /// The path.
    pub id: PathId,
    /// Congestion window in bytes.
    pub cwnd: usize,
    /// Bytes in flight.
    pub bytes_in_flight: usize,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// Minimum RTT.
    pub min_rtt: Duration,
    /// Bandwidth estimate in bytes/s (BBR's BtlBw, else cwnd/srtt).
    pub bandwidth: u64,
    /// Pacing rate in bytes/s, if the controller paces.
    pub pacing_rate: Option<u64>,
    /// In slow start / BBR Startup.
    pub in_slow_start: bool,
    /// The path may carry data (validated, not abandoned, not backup-only).
    pub active: bool,
    /// Shared-bottleneck group ([`crate::sbd`]): paths with equal values were
    /// judged to share a bottleneck; a path alone has its own ID here.
    pub group: u32,
    /// The ProbeBW phase of a BBR-family controller in ProbeBW
    /// ([`crate::cc::CongestionController::probe_phase`]).
    pub probe_phase: Option<u8>,
    /// A BBR-family controller in ProbeRTT
    /// ([`crate::cc::CongestionController::in_probe_rtt`]).
    pub probe_rtt: bool,
    /// Bytes delivered (acknowledged, in flight when sent) on the path so far.
    pub delivered: u64,
    /// Bytes declared lost on the path so far.
    pub lost: u64,
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
    /// The path moved to this (local, peer) address pair after validating
    /// it (RFC 9000 §9: our [`Connection::migrate`](crate::Connection::migrate)
    /// or the server's preferred address).
    Migrated(PathId, SocketAddr, SocketAddr),
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
    /// Where ECN validation stands ([`EcnState`]).
    pub ecn: EcnState,
    /// ECN-CE marks the peer reported for this path's packets.
    pub ecn_ce: u64,
    /// The datagram size this path sends now (UDP payload; path MTU
    /// discovery moves it, [`Config::enable_pmtud`](crate::Config::enable_pmtud)).
    pub mtu: usize,
    /// Times path MTU discovery fell back to 1200 bytes (a black hole).
    pub mtu_black_holes: u32,
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
    /// What the scheduler did with the path: decisions that picked it,
    /// datagrams and bytes sent on it, copies among them (multipath only).
    pub sched: crate::sched::SchedCounts,
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
    /// The peer asked not to be migrated to (disable_active_migration).
    MigrationDisabled,
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
            PathError::MigrationDisabled => "the peer disabled active migration",
        })
    }
}
impl std::error::Error for PathError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn can_send_needs_room_for_a_full_packet_and_no_pacing_hold() {
        let t = crate::testing::Clock::new().now();
        let p =
            PathSnapshot { cwnd: 12_000, bytes_in_flight: 10_800, mss: 1200, ..PathSnapshot::new(PathId(0)) };
        assert!(p.can_send(), "exactly one packet of room");
        let runt = PathSnapshot { bytes_in_flight: 10_801, ..p };
        assert!(!runt.can_send(), "1199 bytes of room is none");
        assert_eq!(runt.bytes_in_flight, 10_801, "the count is not adjusted");
        let paced = PathSnapshot { next_release: Some(t + Duration::from_millis(5)), ..p };
        assert!(!paced.can_send(), "held by the pacer");
        assert_eq!(paced.cwnd_space(), 1200, "window room still reported as it is");
    }
}
