//! BBRv3 (draft-ietf-ccwg-bbr-06): a per-path, model-based controller.
//!
//! The long-term model is `max_bw` (a max over the last two ProbeBW cycles,
//! §5.5.3), `min_rtt` (10 s, refreshed by ProbeRTT every 5 s, §5.3.4) and
//! `inflight_longterm`, the inflight at which a bandwidth probe saw more than
//! 2% loss (§5.5.10.2). The short-term model, `bw_shortterm` and
//! `inflight_shortterm`, shrinks by at most β = 0.7 per round with loss while
//! not probing (§5.5.10.3) and is forgotten before each probe. The sender paces
//! at `pacing_gain · min(max_bw, bw_shortterm) · 0.99` and caps cwnd at
//! `cwnd_gain · BDP + extra_acked`, bounded by the two inflight limits.
//!
//! State machine (§5.3): Startup, Drain, ProbeBW's DOWN → CRUISE → REFILL →
//! UP cycle, ProbeRTT. Modules: [`model`] keeps the path model up to date,
//! [`states`] moves through the state machine; this file holds the state,
//! the control outputs (§5.6) and the trait glue.
//!
//! Departures from the draft, because of what the engine tells a controller:
//! - `RS.tx_in_flight`, `RS.lost` and `P.delivered` are not in
//!   [`RateSample`](super::RateSample); the controller logs them per packet in
//!   `on_packet_sent` ([`sendlog`]) and finds the acknowledged (or lost)
//!   packet by its send time. `RS.lost` is then the bytes declared lost since
//!   that packet left, exactly as §4.5.2 defines it.
//! - A loss event covers several packets; it is judged as one packet, the
//!   newest lost one (§5.5.10.2 `HandleLostPacket`).
//! - "Discontiguous lost ranges" for the Startup loss exit (§5.3.1.3) are
//!   counted as loss events, one per ACK that declares losses.
//! - No spurious-loss signal reaches controllers, so the undo state of
//!   §5.5.11 is not kept. No restart-from-idle hook runs before a send; it runs
//!   in `on_packet_sent` for the packet that ends the idle period (§5.4).

use std::time::{Duration, Instant};

use super::bbr::MaxFilter;
use super::{AckEvent, CcMetrics, CcParams, CongestionController, LossEvent, PathView};
use crate::rtt::RttEstimator;

mod model;
mod sendlog;
mod states;

use sendlog::{SendLog, SentRecord};

/// Startup pacing gain 4·ln 2 ≈ 2.77, the smallest that doubles the rate each
/// round (§2.6).
pub const STARTUP_PACING_GAIN: f64 = 4.0 * std::f64::consts::LN_2;
/// Drain pacing gain (§2.6).
pub const DRAIN_PACING_GAIN: f64 = 0.5;
/// cwnd gain in most states (§2.7).
pub const DEFAULT_CWND_GAIN: f64 = 2.0;
/// ProbeBW_DOWN pacing gain (§5.3.3.1).
pub const DOWN_PACING_GAIN: f64 = 0.9;
/// ProbeBW_UP pacing gain (§5.3.3.4).
pub const UP_PACING_GAIN: f64 = 1.25;
/// ProbeBW_UP cwnd gain (§5.3.3.4).
pub const UP_CWND_GAIN: f64 = 2.25;
/// ProbeRTT cwnd gain: half the BDP (§2.14.2).
pub const PROBE_RTT_CWND_GAIN: f64 = 0.5;
/// Pace 1% below the bandwidth estimate (§2.6, §5.6.2).
pub const PACING_MARGIN: f64 = 0.01;
/// Highest per-round loss rate tolerated while probing (§2.8).
pub const LOSS_THRESH: f64 = 0.02;
/// Multiplicative decrease per lossy round (§2.8).
pub const BETA: f64 = 0.7;
/// Share of `inflight_longterm` left free for other flows (§2.8).
pub const HEADROOM: f64 = 0.15;
/// cwnd floor, in packets (§2.8).
pub const MIN_PIPE_PACKETS: usize = 4;
/// min_rtt filter length (§2.14.1).
pub const MIN_RTT_FILTER_LEN: Duration = Duration::from_secs(10);
/// Time between ProbeRTTs (§2.14.2).
pub const PROBE_RTT_INTERVAL: Duration = Duration::from_secs(5);
/// Least time ProbeRTT holds inflight down (§2.14.2).
pub const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// Round trips (ProbeBW cycles) the max_bw filter spans (§2.10).
const MAX_BW_FILTER_LEN: u64 = 2;
/// Round trips the extra_acked filter spans after Startup (§2.11).
const EXTRA_ACKED_FILTER_LEN: u64 = 10;
/// Loss events in a round that may end Startup (§5.3.1.3).
const STARTUP_FULL_LOSS_COUNT: u32 = 6;
/// Growth that counts as "bandwidth still growing" (§5.3.1.2).
const FULL_BW_GROWTH: f64 = 1.25;
/// Rounds without that growth that make a plateau (§5.3.1.2).
const FULL_BW_ROUNDS: u32 = 3;
/// Upper bound of the Reno-coexistence probe interval, in rounds (§5.3.3.6).
const RENO_ROUNDS_BOUND: u64 = 63;
/// Before any RTT sample the initial pacing rate assumes this RTT (§5.6.2).
const NOMINAL_RTT: Duration = Duration::from_millis(1);
/// "Infinity" for the bounds that start unset.
const INF: u64 = u64::MAX;

/// BBRv3's states (§5.3, with ProbeBW split into its four phases).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bbr3State {
    /// Exponential search for the bandwidth.
    Startup,
    /// Empty the queue Startup built.
    Drain,
    /// Decelerate below the bandwidth to leave headroom.
    ProbeBwDown,
    /// Send at the bandwidth until it is time to probe.
    ProbeBwCruise,
    /// Refill the pipe for one round before probing.
    ProbeBwRefill,
    /// Probe for more bandwidth.
    ProbeBwUp,
    /// Hold inflight at half the BDP to measure min_rtt.
    ProbeRtt,
}

impl Bbr3State {
    /// Name for stats and qlog.
    pub fn name(self) -> &'static str {
        match self {
            Bbr3State::Startup => "Startup",
            Bbr3State::Drain => "Drain",
            Bbr3State::ProbeBwDown => "ProbeBW_DOWN",
            Bbr3State::ProbeBwCruise => "ProbeBW_CRUISE",
            Bbr3State::ProbeBwRefill => "ProbeBW_REFILL",
            Bbr3State::ProbeBwUp => "ProbeBW_UP",
            Bbr3State::ProbeRtt => "ProbeRTT",
        }
    }

    /// One of ProbeBW's four phases.
    pub fn is_probe_bw(self) -> bool {
        matches!(
            self,
            Bbr3State::ProbeBwDown
                | Bbr3State::ProbeBwCruise
                | Bbr3State::ProbeBwRefill
                | Bbr3State::ProbeBwUp
        )
    }
}

/// What the ACKs now arriving say about bandwidth probing (§2.12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// The per-ACK rate sample as the draft uses it (§2.3), assembled from the
/// engine's [`AckEvent`] and the controller's send log.
#[derive(Clone, Copy, Debug, Default)]
struct Rs {
    delivery_rate: u64,
    is_app_limited: bool,
    delivered: u64,
    /// `P.delivered` of the newest acked packet, if known.
    prior_delivered: Option<u64>,
    newly_acked: u64,
    rtt: Option<Duration>,
    /// `C.inflight` when the newest acked packet was sent, if known.
    tx_in_flight: Option<u64>,
    /// Bytes declared lost since that packet was sent.
    lost: u64,
}

/// A BBRv3 controller for one path.
#[derive(Clone, Debug)]
pub struct Bbr3 {
    mss: u64,
    initial_window: u64,
    state: Bbr3State,
    pacing_gain: f64,
    cwnd_gain: f64,
    cwnd: u64,
    prior_cwnd: u64,
    pacing_rate: u64,
    srtt: Option<Duration>,
    seen_rtt: bool,
    rng: u64,
    log: SendLog,
    // Path totals (C.delivered, C.lost) and application-limited tracking.
    delivered: u64,
    lost: u64,
    app_limited_until: u64,
    cwnd_limited_now: bool,
    cwnd_limited_prev: bool,
    // Round counting (§5.5.1).
    next_round_delivered: u64,
    round_count: u64,
    round_start: bool,
    rounds_since_probe_up: u64,
    // Bandwidth model (§5.5.2-5.5.3).
    max_bw: MaxFilter,
    cycle_count: u64,
    bw_shortterm: u64,
    bw: u64,
    // min_rtt and ProbeRTT scheduling (§5.3.4).
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    probe_rtt_min_delay: Option<Duration>,
    probe_rtt_min_stamp: Instant,
    probe_rtt_expired: bool,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    idle_restart: bool,
    // ACK aggregation (§5.5.9).
    extra_acked_startup: MaxFilter,
    extra_acked_steady: MaxFilter,
    extra_acked_interval_start: Instant,
    extra_acked_delivered: u64,
    // Inflight bounds and congestion signals (§5.5.10).
    inflight_longterm: u64,
    inflight_shortterm: u64,
    bw_latest: u64,
    inflight_latest: u64,
    loss_round_delivered: u64,
    loss_round_start: bool,
    is_loss_in_round: bool,
    loss_events_in_round: u32,
    // Startup (§5.3.1).
    full_bw_reached: bool,
    full_bw_now: bool,
    full_bw: u64,
    full_bw_count: u32,
    drain_start_round: u64,
    // ProbeBW (§5.3.3).
    ack_phase: AckPhase,
    is_bw_probe_sample: bool,
    bw_probe_up_acked: u64,
    probe_up_acked_per_inc: u64,
    bw_probe_up_rounds: u32,
    bw_probe_wait: Duration,
    cycle_stamp: Instant,
    prev_probe_too_high: bool,
    prev_probe_precautionary: bool,
    // Loss recovery period (RFC 9002 §7.3.2), for Save/RestoreCwnd (§5.6.4.4).
    recovery_start: Option<Instant>,
    /// Round in which the current run of back-to-back recovery periods began.
    recovery_round: u64,
}

impl Bbr3 {
    /// A controller in Startup with the initial window (§5.2.1 `OnInit`).
    pub fn new(params: CcParams) -> Self {
        let mss = params.mss.max(1) as u64;
        let cwnd = (params.initial_window as u64).max(MIN_PIPE_PACKETS as u64 * mss);
        let now = params.now;
        let mut s = Self {
            mss,
            initial_window: cwnd,
            state: Bbr3State::Startup,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: DEFAULT_CWND_GAIN,
            cwnd,
            prior_cwnd: 0,
            pacing_rate: 0,
            srtt: None,
            seen_rtt: false,
            rng: 0x9e37_79b9_7f4a_7c15 ^ u64::from(params.path_id.0).rotate_left(17) ^ params.seed,
            log: SendLog::default(),
            delivered: 0,
            lost: 0,
            app_limited_until: 0,
            cwnd_limited_now: false,
            cwnd_limited_prev: false,
            next_round_delivered: 0,
            round_count: 0,
            round_start: false,
            rounds_since_probe_up: 0,
            max_bw: MaxFilter::new(MAX_BW_FILTER_LEN),
            cycle_count: 0,
            bw_shortterm: INF,
            bw: 0,
            min_rtt: None,
            min_rtt_stamp: now,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: now,
            probe_rtt_expired: false,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            idle_restart: false,
            extra_acked_startup: MaxFilter::new(1),
            extra_acked_steady: MaxFilter::new(EXTRA_ACKED_FILTER_LEN),
            extra_acked_interval_start: now,
            extra_acked_delivered: 0,
            inflight_longterm: INF,
            inflight_shortterm: INF,
            bw_latest: 0,
            inflight_latest: 0,
            loss_round_delivered: 0,
            loss_round_start: false,
            is_loss_in_round: false,
            loss_events_in_round: 0,
            full_bw_reached: false,
            full_bw_now: false,
            full_bw: 0,
            full_bw_count: 0,
            drain_start_round: 0,
            ack_phase: AckPhase::Init,
            is_bw_probe_sample: false,
            bw_probe_up_acked: 0,
            probe_up_acked_per_inc: INF,
            bw_probe_up_rounds: 0,
            bw_probe_wait: Duration::ZERO,
            cycle_stamp: now,
            prev_probe_too_high: false,
            prev_probe_precautionary: false,
            recovery_start: None,
            recovery_round: 0,
        };
        s.init_pacing_rate();
        s
    }

    /// Current state.
    pub fn state(&self) -> Bbr3State {
        self.state
    }
    /// `BBR.max_bw` in bytes/s (0 before any sample).
    pub fn max_bw(&self) -> u64 {
        self.max_bw.get()
    }
    /// `BBR.bw = min(max_bw, bw_shortterm)` in bytes/s.
    pub fn bw(&self) -> u64 {
        self.bw
    }
    /// `BBR.min_rtt`, once measured.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    /// `BBR.inflight_longterm` in bytes, `None` while unset (infinite).
    pub fn inflight_longterm(&self) -> Option<u64> {
        (self.inflight_longterm != INF).then_some(self.inflight_longterm)
    }
    /// `BBR.inflight_shortterm` in bytes, `None` while unset.
    pub fn inflight_shortterm(&self) -> Option<u64> {
        (self.inflight_shortterm != INF).then_some(self.inflight_shortterm)
    }
    /// `BBR.bw_shortterm` in bytes/s, `None` while unset.
    pub fn bw_shortterm(&self) -> Option<u64> {
        (self.bw_shortterm != INF).then_some(self.bw_shortterm)
    }
    /// Packet-timed round trips so far.
    pub fn round_count(&self) -> u64 {
        self.round_count
    }
    /// Startup ended (plateau or loss).
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    /// Pacing gain in force.
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }
    /// cwnd gain in force.
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }
    /// `BBR.extra_acked` in bytes.
    pub fn extra_acked(&self) -> u64 {
        if self.full_bw_reached {
            self.extra_acked_steady.get()
        } else {
            self.extra_acked_startup.get()
        }
    }

    /// The next value of the controller's generator (seeded per path).
    fn next_random(&mut self) -> u64 {
        super::splitmix64(&mut self.rng)
    }

    /// Uniform in [0, 1).
    fn random_unit(&mut self) -> f64 {
        (self.next_random() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn min_pipe_cwnd(&self) -> u64 {
        MIN_PIPE_PACKETS as u64 * self.mss
    }

    /// `C.is_cwnd_limited`: the window was full at some point in this or the
    /// last round (§2.2).
    fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited_now || self.cwnd_limited_prev
    }

    /// `BBR.bdp` = bw · min_rtt, if min_rtt is known.
    fn bdp(&self, bw: u64) -> Option<u64> {
        self.min_rtt.map(|rt| (bw as f64 * rt.as_secs_f64()) as u64)
    }

    /// §5.6.4.2 `BDPMultiple`: gain · BDP, or the initial window before any
    /// RTT sample.
    fn bdp_multiple(&self, bw: u64, gain: f64) -> u64 {
        match self.bdp(bw) {
            Some(bdp) => (gain * bdp as f64) as u64,
            None => self.initial_window,
        }
    }

    /// §5.6.3: the send quantum, `pacing_rate · 1 ms` within [2·mss, 64 KB];
    /// for QUIC the offload budget equals it (§5.5.8).
    fn offload_budget(&self) -> u64 {
        (self.pacing_rate / 1000).clamp(2 * self.mss, 64 * 1024)
    }

    /// §5.6.4.2 `QuantizationBudget`.
    fn quantization_budget(&self, cap: u64) -> u64 {
        let cap = cap.max(self.offload_budget()).max(self.min_pipe_cwnd());
        if self.state == Bbr3State::ProbeBwUp {
            cap + 2 * self.mss
        } else {
            cap
        }
    }

    /// §5.6.4.2 `Inflight(bw, gain)`.
    fn inflight(&self, bw: u64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp_multiple(bw, gain))
    }

    /// §5.6.4.2 `UpdateMaxInflight`.
    fn max_inflight(&self) -> u64 {
        let cap = self.bdp_multiple(self.bw, self.cwnd_gain).saturating_add(self.extra_acked());
        self.quantization_budget(cap)
    }

    /// §5.3.3.6 `TargetInflight`: the BDP unless congestion cut cwnd.
    fn target_inflight(&self) -> u64 {
        self.bdp(self.bw).unwrap_or(self.initial_window).min(self.cwnd)
    }

    /// §5.3.3.6 `InflightWithHeadroom`.
    fn inflight_with_headroom(&self) -> u64 {
        if self.inflight_longterm == INF {
            return INF;
        }
        let headroom = ((HEADROOM * self.inflight_longterm as f64) as u64).max(self.mss);
        self.inflight_longterm.saturating_sub(headroom).max(self.min_pipe_cwnd())
    }

    /// §5.6.2 `InitPacingRate`: startup gain · initial window / (srtt or 1 ms).
    fn init_pacing_rate(&mut self) {
        let srtt = self.srtt.unwrap_or(NOMINAL_RTT).max(Duration::from_micros(1));
        let nominal = self.initial_window as f64 / srtt.as_secs_f64();
        self.pacing_rate = (STARTUP_PACING_GAIN * nominal) as u64;
    }

    /// §5.6.2 `SetPacingRateWithGain`: only rises until the pipe is full.
    fn set_pacing_rate_with_gain(&mut self, gain: f64) {
        if !self.seen_rtt && self.srtt.is_some() {
            // First RTT sample: the 1 ms guess gave way too high a rate.
            self.seen_rtt = true;
            self.init_pacing_rate();
        }
        if self.bw == 0 {
            return;
        }
        let rate = (gain * self.bw as f64 * (1.0 - PACING_MARGIN)) as u64;
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// §5.6.4.4 `SaveCwnd`.
    fn save_cwnd(&mut self) {
        if self.recovery_start.is_none() && self.state != Bbr3State::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// §5.6.4.4 `RestoreCwnd`.
    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    /// §5.6.4.6 `SetCwnd`, with the ProbeRTT and model bounds (§5.6.4.5, §5.6.4.7).
    fn set_cwnd(&mut self, newly_acked: u64) {
        let max_inflight = self.max_inflight();
        if self.full_bw_reached {
            self.cwnd = self.cwnd.saturating_add(newly_acked).min(max_inflight);
        } else if self.cwnd < max_inflight || self.delivered < self.initial_window {
            self.cwnd = self.cwnd.saturating_add(newly_acked);
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        if self.state == Bbr3State::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        self.bound_cwnd_for_model();
    }

    /// §5.6.4.5 `ProbeRTTCwnd`: half the BDP, at least the pipelining floor.
    fn probe_rtt_cwnd(&self) -> u64 {
        self.bdp_multiple(self.bw, PROBE_RTT_CWND_GAIN).max(self.min_pipe_cwnd())
    }

    /// §5.6.4.7 `BoundCwndForModel`: the volume caps of the §5.6.1 table.
    fn bound_cwnd_for_model(&mut self) {
        let cap = match self.state {
            Bbr3State::ProbeBwCruise | Bbr3State::ProbeRtt => self.inflight_with_headroom(),
            s if s.is_probe_bw() => self.inflight_longterm,
            _ => INF,
        };
        let cap = cap.min(self.inflight_shortterm).max(self.min_pipe_cwnd());
        self.cwnd = self.cwnd.min(cap);
    }

    /// The draft's rate sample for this ACK (§2.3), from the engine's sample
    /// and the send record of the newest acknowledged packet.
    fn rate_sample(&self, ev: &AckEvent) -> Rs {
        let sent = self.log.find(ev.largest_acked_sent);
        let mut rs = Rs {
            newly_acked: ev.acked_bytes as u64,
            prior_delivered: sent.map(|p| p.delivered),
            tx_in_flight: sent.map(|p| p.tx_in_flight),
            lost: sent.map_or(0, |p| self.lost.saturating_sub(p.lost)),
            is_app_limited: sent.is_some_and(|p| p.app_limited),
            rtt: Some(ev.now.saturating_duration_since(ev.largest_acked_sent)).filter(|r| !r.is_zero()),
            ..Rs::default()
        };
        if let Some(r) = ev.rate {
            rs.delivery_rate = r.delivery_rate;
            rs.is_app_limited |= r.is_app_limited;
            rs.delivered = r.delivered;
            rs.prior_delivered = Some(r.prior_delivered);
            if !r.rtt.is_zero() {
                rs.rtt = Some(r.rtt);
            }
        }
        rs
    }

    /// Leave the recovery period once a packet sent after it began is acked
    /// (RFC 9002 §7.3.2), restoring the last good cwnd (§5.6.4.4).
    fn maybe_exit_recovery(&mut self, ev: &AckEvent) {
        if self.recovery_start.is_some_and(|s| ev.largest_acked_sent > s) {
            self.recovery_start = None;
            self.restore_cwnd();
        }
    }

    /// §5.2.3 `UpdateControlParameters` (the send quantum is the engine's).
    fn update_control_parameters(&mut self, newly_acked: u64) {
        self.set_pacing_rate_with_gain(self.pacing_gain);
        self.set_cwnd(newly_acked);
    }
}

impl CongestionController for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }

    fn window(&self) -> usize {
        usize::try_from(self.cwnd).unwrap_or(usize::MAX)
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing_rate.max(1))
    }

    fn in_slow_start(&self) -> bool {
        self.state == Bbr3State::Startup
    }

    fn bandwidth_estimate(&self) -> Option<u64> {
        Some(self.bw)
    }

    fn on_packet_sent(&mut self, now: Instant, bytes: usize, bytes_in_flight: usize) {
        let (size, inflight) = (bytes as u64, bytes_in_flight as u64);
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let app_limited = self.app_limited_until != 0;
        if inflight <= size && app_limited {
            self.handle_restart_from_idle(now);
        }
        if inflight.saturating_add(self.mss) > self.cwnd {
            self.cwnd_limited_now = true;
        }
        let rec = SentRecord {
            time: now,
            size,
            tx_in_flight: inflight,
            delivered: self.delivered,
            lost: self.lost,
            app_limited,
        };
        self.log.push(rec);
    }

    fn on_ack(&mut self, ev: &AckEvent, rtt: &RttEstimator, _paths: &[PathView]) {
        if rtt.has_sample() {
            self.srtt = Some(rtt.smoothed());
        }
        self.delivered = self.delivered.saturating_add(ev.acked_bytes as u64);
        if let Some(r) = ev.rate {
            self.delivered = self.delivered.max(r.total_delivered);
        }
        let rs = self.rate_sample(ev);
        self.update_model_and_state(ev.now, &rs, ev.bytes_in_flight as u64);
        // After the model update, so the Startup loss check still sees the
        // recovery this ACK ends; before SetCwnd, which bounds the restored cwnd.
        self.maybe_exit_recovery(ev);
        self.update_control_parameters(rs.newly_acked);
        let keep = self.srtt.unwrap_or(Duration::from_secs(1)) * 4;
        self.log.prune(ev.largest_acked_sent, keep);
    }

    /// BBR v1 has no ECN response; this BBRv3 leaves out the draft's
    /// optional one.
    fn on_ecn_ce(&mut self, _: &LossEvent, _: &RttEstimator, _: &[PathView]) {}
    fn on_loss(&mut self, ev: &LossEvent, rtt: &RttEstimator, _paths: &[PathView]) {
        if rtt.has_sample() {
            self.srtt = Some(rtt.smoothed());
        }
        self.handle_loss(ev);
    }

    fn on_app_limited(&mut self, bytes_in_flight: usize) {
        // Packets sent until this flight is delivered are app-limited (§4.5.2.3).
        self.app_limited_until = self.delivered.saturating_add(bytes_in_flight as u64).max(1);
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            ssthresh: None,
            state: self.state.name(),
            pacing_gain: Some(self.pacing_gain),
            cwnd_gain: Some(self.cwnd_gain),
            bandwidth: Some(self.bw),
        }
    }
}

#[cfg(test)]
mod tests;
