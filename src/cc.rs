//! Per-path congestion control: the trait every controller implements, the
//! read-only view of the connection's other paths that coupled controllers
//! need, and the factory that builds controllers by name.
//!
//! One controller instance per path. The engine calls the hooks from its loss
//! recovery; the controller answers with a congestion window and, where it has
//! one, a pacing rate.
//!
//! Implementing a controller outside the crate and plugging it in:
//!
//! ```
//! use std::sync::Arc;
//! use mpquic::cc::{AckEvent, CcFactory, CcParams, CongestionController, LossEvent, PathView};
//! use mpquic::rtt::RttEstimator;
//!
//! /// A fixed window of 20 packets, whatever happens.
//! #[derive(Debug)]
//! struct Fixed(usize);
//!
//! impl CongestionController for Fixed {
//!     fn name(&self) -> &'static str {
//!         "fixed"
//!     }
//!     fn window(&self) -> usize {
//!         self.0
//!     }
//!     fn on_ack(&mut self, _: &AckEvent, _: &RttEstimator, _: &[PathView]) {}
//!     fn on_loss(&mut self, _: &LossEvent, _: &RttEstimator, _: &[PathView]) {}
//! }
//!
//! /// Every new path of a connection made with the configuration gets one.
//! #[derive(Debug)]
//! struct FixedFactory;
//! impl CcFactory for FixedFactory {
//!     fn build(&self, params: CcParams) -> Box<dyn CongestionController> {
//!         Box::new(Fixed(20 * params.mss))
//!     }
//!     fn name(&self) -> &str {
//!         "fixed"
//!     }
//! }
//!
//! let mut config = mpquic::Config::new();
//! config.set_cc_factory(Arc::new(FixedFactory));
//! ```

use std::fmt;
use std::time::{Duration, Instant};

use crate::rtt::RttEstimator;
use crate::PathId;

pub mod cubic;
pub mod newreno;
pub mod registry;
pub use registry::{build, canonical, names, NAMES};

/// What the engine tells a controller about one ACK frame's newly acknowledged
/// packets on this path, with the delivery-rate sample taken from them
/// (draft-ietf-ccwg-bbr §4.5.2).
#[derive(Clone, Debug)]
pub struct AckEvent {
    /// Time the ACK was processed.
    pub now: Instant,
    /// Bytes newly acknowledged (in-flight packets only).
    pub acked_bytes: usize,
    /// Number of packets newly acknowledged.
    pub acked_packets: usize,
    /// Send time of the largest newly acknowledged packet.
    pub largest_acked_sent: Instant,
    /// Bytes in flight before this ACK was processed.
    pub prior_in_flight: usize,
    /// Bytes in flight after removing acked (and lost) packets.
    pub bytes_in_flight: usize,
    /// The delivery-rate sample, if one could be taken.
    pub rate: Option<RateSample>,
}

/// A delivery-rate sample (BBR draft §4.5.2.4).
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    /// Delivered bytes over the sample interval, per second.
    pub delivery_rate: u64,
    /// The sample was taken while the sender was application-limited.
    pub is_app_limited: bool,
    /// Length of the sample interval.
    pub interval: Duration,
    /// Bytes delivered over the interval.
    pub delivered: u64,
    /// `delivered` count of the connection when the sampled packet was sent.
    pub prior_delivered: u64,
    /// Total bytes delivered on this path so far.
    pub total_delivered: u64,
    /// RTT of the most recently sent packet among those acked.
    pub rtt: Duration,
    /// Bytes lost on this path so far.
    pub total_lost: u64,
}

/// A loss (congestion) event on this path.
#[derive(Clone, Debug)]
pub struct LossEvent {
    /// Time loss was declared.
    pub now: Instant,
    /// Send time of the newest lost packet (recovery period test, RFC 9002 §7.3.2).
    pub largest_lost_sent: Instant,
    /// Bytes declared lost.
    pub lost_bytes: usize,
    /// Packets declared lost.
    pub lost_packets: usize,
    /// Bytes in flight after removing the lost packets.
    pub bytes_in_flight: usize,
    /// RFC 9002 §7.6 persistent congestion was established.
    pub persistent_congestion: bool,
}

pub use crate::path::PathView;

/// Numbers a controller exposes for stats and qlog.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CcMetrics {
    /// Slow-start threshold, if the controller has one.
    pub ssthresh: Option<usize>,
    /// Controller-specific state, e.g. BBR's "ProbeBW".
    pub state: &'static str,
    /// Current pacing gain (BBR family).
    pub pacing_gain: Option<f64>,
    /// Current cwnd gain (BBR family).
    pub cwnd_gain: Option<f64>,
    /// Bandwidth estimate in bytes/s, if the controller keeps one.
    pub bandwidth: Option<u64>,
}

impl CcMetrics {
    /// A window-based (loss-driven) controller's metrics: its state is
    /// recovery, slow start or congestion avoidance.
    pub fn window_based(ssthresh: Option<usize>, recovering: bool, slow_start: bool) -> Self {
        let state = if recovering {
            "recovery"
        } else if slow_start {
            "slow_start"
        } else {
            "congestion_avoidance"
        };
        CcMetrics { ssthresh, state, ..CcMetrics::default() }
    }
}

/// A per-path congestion controller. Hooks have no-op defaults so simple
/// controllers stay small. All paths' views (including this one's) are given
/// to the hooks that may need them; uncoupled controllers ignore them.
pub trait CongestionController: Send + fmt::Debug {
    /// The controller's name as accepted by [`build`].
    fn name(&self) -> &'static str;
    /// Congestion window in bytes.
    fn window(&self) -> usize;
    /// Pacing rate in bytes/s; `None` lets the engine pace at cwnd/srtt·1.25.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    /// In slow start or BBR Startup.
    fn in_slow_start(&self) -> bool {
        false
    }
    /// Bandwidth estimate in bytes/s, if the controller keeps one.
    fn bandwidth_estimate(&self) -> Option<u64> {
        None
    }
    /// The ProbeBW gain-cycle phase (0 = probing up), for controllers that
    /// have one and are in it; coupled controllers align on it.
    fn probe_phase(&self) -> Option<u8> {
        None
    }
    /// In BBR's ProbeRTT; coupled controllers drain the bottleneck together.
    fn in_probe_rtt(&self) -> bool {
        false
    }
    /// A packet counted in flight was sent.
    fn on_packet_sent(&mut self, _now: Instant, _bytes: usize, _bytes_in_flight: usize) {}
    /// Newly acknowledged packets from one ACK frame.
    fn on_ack(&mut self, ev: &AckEvent, rtt: &RttEstimator, paths: &[PathView]);
    /// Packets were declared lost.
    fn on_loss(&mut self, ev: &LossEvent, rtt: &RttEstimator, paths: &[PathView]);
    /// The peer reported new ECN-CE marks on this path (RFC 9002 §7.1 and
    /// B.7): congestion without loss. `ev` carries no lost bytes;
    /// `largest_lost_sent` is the send time of the newest packet the
    /// reporting ACK acknowledged, for the recovery-period test. Loss-based
    /// controllers react as to a loss (the default); the BBR family ignores
    /// it, as BBR v1 does.
    fn on_ecn_ce(&mut self, ev: &LossEvent, rtt: &RttEstimator, paths: &[PathView]) {
        self.on_loss(ev, rtt, paths);
    }
    /// The sender had nothing to send while below its window.
    fn on_app_limited(&mut self, _bytes_in_flight: usize) {}
    /// Numbers for stats.
    fn metrics(&self) -> CcMetrics {
        CcMetrics::default()
    }
}

/// Parameters a controller is built with.
#[derive(Clone, Copy, Debug)]
pub struct CcParams {
    /// The path this controller serves.
    pub path_id: PathId,
    /// Maximum datagram size in bytes.
    pub mss: usize,
    /// Initial window in bytes (RFC 9002: min(10·mss, max(2·mss, 14720))).
    pub initial_window: usize,
    /// Time the path was created.
    pub now: Instant,
    /// Seed for the controller's randomness (e.g. BBR's first ProbeBW
    /// phase): derived from the path's addresses, so it is the same for the
    /// same path in every run and differs between connections (two
    /// connections probing in lockstep would be an artefact).
    pub seed: u64,
}

/// splitmix64: advances `state` and returns the next value. The controllers'
/// small deterministic generator (no clock, no OS randomness); tests and
/// experiments that need reproducible randomness use it too.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seed for [`CcParams::seed`] from a path's addresses (splitmix64 over
/// the IP octets and ports).
pub fn path_seed(local: std::net::SocketAddr, peer: std::net::SocketAddr) -> u64 {
    let mut h: u64 = 0x243f_6a88_85a3_08d3;
    let mut mix = |v: u64| {
        h ^= v;
        h = splitmix64(&mut h);
    };
    for a in [local, peer] {
        match a.ip() {
            std::net::IpAddr::V4(ip) => mix(u64::from(u32::from(ip))),
            std::net::IpAddr::V6(ip) => {
                let v = u128::from(ip);
                mix(v as u64);
                mix((v >> 64) as u64);
            }
        }
        mix(u64::from(a.port()));
    }
    h
}

/// Builds one controller per path. Implement it to plug in a controller from
/// outside the crate.
pub trait CcFactory: Send + Sync + fmt::Debug {
    /// Build the controller of a new path.
    fn build(&self, params: CcParams) -> Box<dyn CongestionController>;
    /// Name shown in stats.
    fn name(&self) -> &str;
}

/// Error for an unknown controller name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownAlgorithm(pub String);

impl fmt::Display for UnknownAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown algorithm {:?}", self.0)
    }
}
impl std::error::Error for UnknownAlgorithm {}

/// RFC 9002 §7.2 initial window.
pub fn initial_window(mss: usize) -> usize {
    (10 * mss).min((2 * mss).max(14720))
}

pub mod balia;
pub mod bbr;
pub mod bbr3;
pub mod compound;
pub mod coupled;
pub mod coupled_bbr;
pub mod extra;
pub mod lia;
pub mod olia;
