//! BBR v1 (Cardwell et al. 2016; delivery-rate model of draft-ietf-ccwg-bbr):
//! Startup, Drain, the eight-phase ProbeBW gain cycle and ProbeRTT.
//!
//! The model is two numbers: BtlBw, a windowed max of delivery-rate samples
//! over the last ten round trips, and RTprop, the min RTT over ten seconds.
//! The sender paces at `pacing_gain · BtlBw` and caps inflight at
//! `cwnd_gain · BtlBw · RTprop`. Loss is mostly ignored, apart from the packet
//! conservation v1 applies during the first round of a recovery period.
//!
//! As in Linux's v1, a ProbeBW phase lasts one RTprop (the 1.25 phase until
//! inflight reached 1.25·BDP or a loss, the 0.75 phase possibly less), and
//! leaving a recovery period restores the window saved on entering it. Not
//! modelled: restart from idle and ACK-aggregation compensation.
//!
//! [`CoupledBbr`](super::coupled_bbr::CoupledBbr) reuses this controller and
//! only replaces the gain of ProbeBW's six cruising phases.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::{AckEvent, CcMetrics, CcParams, CongestionController, LossEvent, PathView};
use crate::rtt::RttEstimator;

/// Startup pacing gain 2/ln 2: the smallest gain that doubles the sending
/// rate every round.
pub const STARTUP_GAIN: f64 = 2.0 / std::f64::consts::LN_2;
/// Drain pacing gain ln 2 / 2, the inverse of [`STARTUP_GAIN`].
pub const DRAIN_GAIN: f64 = std::f64::consts::LN_2 / 2.0;
/// cwnd gain outside ProbeRTT.
pub const CWND_GAIN: f64 = 2.0;
/// ProbeBW pacing gains, one per phase of about one RTprop each.
pub const PROBE_BW_GAINS: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Rounds the BtlBw max filter remembers a sample.
pub const BTL_BW_WINDOW_ROUNDS: u64 = 10;
/// Lifetime of an RTprop sample before ProbeRTT is entered.
pub const RT_PROP_WINDOW: Duration = Duration::from_secs(10);
/// Minimum time ProbeRTT holds inflight down (it also lasts at least a round).
pub const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// Window floor and ProbeRTT window, in packets.
pub const MIN_PIPE_PACKETS: usize = 4;
/// Bandwidth growth that counts as "still growing" in Startup.
const FULL_BW_THRESHOLD: f64 = 1.25;
/// Rounds without that growth before the pipe is declared full.
const FULL_BW_ROUNDS: u32 = 3;
/// Extra segments on top of gain·BDP, for ACK aggregation and delayed ACKs
/// (Linux's quantization budget).
const CWND_QUANTA_PACKETS: usize = 3;
/// RTT assumed for the initial pacing rate before any sample (as Linux does):
/// small, so the initial window leaves almost unpaced.
const NOMINAL_RTT: Duration = Duration::from_millis(1);

/// BBR's state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrState {
    /// Exponential search for the bottleneck bandwidth.
    Startup,
    /// Empty the queue Startup built.
    Drain,
    /// Steady state: cycle the pacing gain around 1.
    ProbeBw,
    /// Hold inflight at four packets to measure RTprop.
    ProbeRtt,
}

impl BbrState {
    /// Name for stats and qlog.
    pub fn name(self) -> &'static str {
        match self {
            BbrState::Startup => "Startup",
            BbrState::Drain => "Drain",
            BbrState::ProbeBw => "ProbeBW",
            BbrState::ProbeRtt => "ProbeRTT",
        }
    }
}

/// How ProbeBW's cruising phases (2..8) pace. Plain BBR cruises at gain 1;
/// Coupled BBR replaces it with α_i, or with four packets per RTT when α_i ≤ 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cruise {
    /// Pace at this gain times BtlBw.
    Gain(f64),
    /// Pace at four packets per smoothed RTT.
    FourPerRtt,
}

/// Windowed max over round counts: a monotone deque of (round, value) whose
/// front is the max of the window. Exact, O(1) amortised per update.
#[derive(Clone, Debug, Default)]
pub struct MaxFilter {
    window: u64,
    samples: VecDeque<(u64, u64)>,
}

impl MaxFilter {
    /// A filter keeping samples for `window` rounds.
    pub fn new(window: u64) -> Self {
        Self { window, samples: VecDeque::new() }
    }

    /// Drop samples taken `window` or more rounds before `round`.
    pub fn expire(&mut self, round: u64) {
        while let Some(&(r, _)) = self.samples.front() {
            if round.saturating_sub(r) >= self.window {
                self.samples.pop_front();
            } else {
                break;
            }
        }
    }

    /// Add a sample taken in `round` (rounds never go backwards).
    pub fn update(&mut self, round: u64, value: u64) {
        self.expire(round);
        while let Some(&(_, v)) = self.samples.back() {
            if v <= value {
                self.samples.pop_back();
            } else {
                break;
            }
        }
        self.samples.push_back((round, value));
    }

    /// Current max (0 when empty).
    pub fn get(&self) -> u64 {
        self.samples.front().map_or(0, |&(_, v)| v)
    }
}

/// A BBR v1 controller for one path.
#[derive(Clone, Debug)]
pub struct Bbr {
    mss: usize,
    initial_window: usize,
    state: BbrState,
    btl_bw: MaxFilter,
    rt_prop: Option<Duration>,
    rt_prop_stamp: Instant,
    srtt: Option<Duration>,
    seen_rtt: bool,
    // Round counting by delivered bytes.
    delivered: u64,
    next_round_delivered: u64,
    round_count: u64,
    round_start: bool,
    // Full-pipe detection.
    filled_pipe: bool,
    full_bw: u64,
    full_bw_count: u32,
    pacing_gain: f64,
    cwnd_gain: f64,
    cwnd: usize,
    prior_cwnd: usize,
    pacing_rate: u64,
    // ProbeBW.
    cycle_index: usize,
    cycle_stamp: Instant,
    lost_in_phase: bool,
    /// The ProbeBW phase another path's controller dictates (Coupled BBR's
    /// group coupling); `None`: this controller cycles on its own.
    cycle_lead: Option<usize>,
    /// Whether another path's controller, which this one follows, is in
    /// ProbeRTT (`None`: this controller probes RTT on its own timer).
    probe_rtt_lead: Option<bool>,
    /// Share of BtlBw this path may use for pacing and inflight (Coupled
    /// BBR's group coupling; 1 = plain BBR). BtlBw itself stays measured.
    bw_scale: f64,
    cruise: Cruise,
    rng: u64,
    // ProbeRTT.
    probe_rtt_done: Option<Instant>,
    probe_rtt_round_done: bool,
    // Loss recovery (RFC 9002 §7.3.2 period, v1 conservation).
    recovery_start: Option<Instant>,
    in_recovery: bool,
    packet_conservation: bool,
}

impl Bbr {
    /// A controller in Startup with the initial window.
    pub fn new(params: CcParams) -> Self {
        let mss = params.mss.max(1);
        let cwnd = params.initial_window.max(MIN_PIPE_PACKETS * mss);
        let mut s = Self {
            mss,
            initial_window: cwnd,
            state: BbrState::Startup,
            btl_bw: MaxFilter::new(BTL_BW_WINDOW_ROUNDS),
            rt_prop: None,
            rt_prop_stamp: params.now,
            srtt: None,
            seen_rtt: false,
            delivered: 0,
            next_round_delivered: 0,
            round_count: 0,
            round_start: false,
            filled_pipe: false,
            full_bw: 0,
            full_bw_count: 0,
            pacing_gain: STARTUP_GAIN,
            cwnd_gain: CWND_GAIN,
            cwnd,
            prior_cwnd: cwnd,
            pacing_rate: 0,
            cycle_index: 0,
            cycle_stamp: params.now,
            lost_in_phase: false,
            cycle_lead: None,
            probe_rtt_lead: None,
            bw_scale: 1.0,
            cruise: Cruise::Gain(1.0),
            rng: 0x9e37_79b9_7f4a_7c15 ^ u64::from(params.path_id.0) ^ params.seed,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            recovery_start: None,
            in_recovery: false,
            packet_conservation: false,
        };
        s.set_pacing_rate();
        s
    }

    /// Current state.
    pub fn state(&self) -> BbrState {
        self.state
    }
    /// ProbeBW phase index (0 = the 1.25 probing phase).
    pub fn cycle_index(&self) -> usize {
        self.cycle_index
    }
    /// BtlBw in bytes/s (0 before any sample).
    pub fn btl_bw(&self) -> u64 {
        self.btl_bw.get()
    }
    /// RTprop, once measured.
    pub fn rt_prop(&self) -> Option<Duration> {
        self.rt_prop
    }
    /// Round trips counted so far.
    pub fn round_count(&self) -> u64 {
        self.round_count
    }
    /// Startup saw the bandwidth plateau.
    pub fn filled_pipe(&self) -> bool {
        self.filled_pipe
    }
    /// Pacing gain in force, before the Coupled BBR four-packets override.
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }
    /// cwnd gain in force.
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }

    /// Set how ProbeBW's cruising phases pace (Coupled BBR). Takes effect at
    /// once when a cruising phase is running.
    pub fn set_cruise(&mut self, cruise: Cruise) {
        self.cruise = cruise;
        self.update_gains();
        self.set_pacing_rate();
    }

    /// Follow another controller's ProbeBW phase (`Some(index)`) instead of
    /// cycling on this path's own clock; used by Coupled BBR so that the
    /// paths of one bottleneck probe together. Takes effect at the next ACK.
    pub fn set_cycle_lead(&mut self, lead: Option<usize>) {
        self.cycle_lead = lead.filter(|&k| k < PROBE_BW_GAINS.len());
    }

    /// Follow another controller's ProbeRTT (`Some(in_probe_rtt)`): enter
    /// and leave it with that controller instead of on this path's own
    /// RTprop timer, so that the paths of one bottleneck drain it together.
    pub fn set_probe_rtt_lead(&mut self, lead: Option<bool>) {
        self.probe_rtt_lead = lead;
    }

    /// Another path of this one's bottleneck lost packets: the probing
    /// phase may end as if this path had (Coupled BBR's leader).
    pub fn note_shared_loss(&mut self) {
        self.lost_in_phase = true;
    }

    /// In ProbeRTT.
    pub fn in_probe_rtt(&self) -> bool {
        self.state == BbrState::ProbeRtt
    }

    /// Use `scale` (clamped to (0, 1]) of BtlBw for pacing and the window:
    /// Coupled BBR's share of a group estimate. Takes effect at the next ACK.
    pub fn set_bw_scale(&mut self, scale: f64) {
        self.bw_scale = if scale.is_finite() { scale.clamp(0.01, 1.0) } else { 1.0 };
    }

    /// BtlBw times the coupling scale: what pacing and inflight use.
    fn usable_bw(&self) -> u64 {
        (self.btl_bw.get() as f64 * self.bw_scale) as u64
    }

    /// The ProbeBW phase index while in ProbeBW.
    pub fn probe_phase(&self) -> Option<u8> {
        (self.state == BbrState::ProbeBw).then_some(self.cycle_index as u8)
    }

    /// Whether the four-packets-per-RTT pacing of Coupled BBR is in force.
    fn four_per_rtt(&self) -> bool {
        self.state == BbrState::ProbeBw && self.cycle_index >= 2 && self.cruise == Cruise::FourPerRtt
    }

    /// The next value of the controller's generator (seeded per path).
    fn next_random(&mut self) -> u64 {
        super::splitmix64(&mut self.rng)
    }

    /// gain · BDP plus quanta, or the initial window before any model.
    fn inflight(&self, gain: f64) -> usize {
        let bw = self.usable_bw();
        match self.rt_prop {
            Some(rt) if bw > 0 => {
                let bdp = bw as f64 * rt.as_secs_f64();
                (gain * bdp) as usize + CWND_QUANTA_PACKETS * self.mss
            }
            _ => self.initial_window,
        }
    }

    fn min_window(&self) -> usize {
        MIN_PIPE_PACKETS * self.mss
    }

    fn enter_probe_bw(&mut self, now: Instant) {
        self.state = BbrState::ProbeBw;
        // Start at a random phase other than the 0.75 one (index 1), so
        // flows desynchronise without starting by draining.
        const STARTS: [usize; 7] = [0, 2, 3, 4, 5, 6, 7];
        let pick = (self.next_random() % STARTS.len() as u64) as usize;
        self.cycle_index = STARTS.get(pick).copied().unwrap_or(0);
        self.cycle_stamp = now;
        self.lost_in_phase = false;
    }

    fn enter_startup(&mut self) {
        self.state = BbrState::Startup;
    }

    fn save_cwnd(&mut self) {
        self.prior_cwnd = if !self.in_recovery && self.state != BbrState::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    fn update_round_and_bw(&mut self, ev: &AckEvent) {
        self.round_start = false;
        let Some(rs) = ev.rate else { return };
        self.delivered = self.delivered.max(rs.total_delivered);
        if rs.delivered > 0 && rs.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = self.delivered;
            self.round_count += 1;
            self.round_start = true;
            self.packet_conservation = false;
            self.btl_bw.expire(self.round_count);
        }
        // App-limited samples underestimate the path, so they only count
        // when they raise the max.
        let bw = rs.delivery_rate;
        if bw > 0 && (!rs.is_app_limited || bw >= self.btl_bw.get()) {
            self.btl_bw.update(self.round_count, bw);
        }
    }

    fn update_cycle_phase(&mut self, ev: &AckEvent) {
        if self.state != BbrState::ProbeBw {
            return;
        }
        if let Some(lead) = self.cycle_lead {
            if lead != self.cycle_index {
                self.cycle_index = lead;
                self.cycle_stamp = ev.now;
                self.lost_in_phase = false;
            }
            return;
        }
        let full_length = match self.rt_prop {
            Some(rt) => ev.now.saturating_duration_since(self.cycle_stamp) > rt,
            None => false,
        };
        let advance = match self.cycle_index {
            // Probing: keep going until the pipe actually held gain·BDP
            // (or loss says it cannot).
            0 => {
                full_length && (self.lost_in_phase || ev.prior_in_flight >= self.inflight(PROBE_BW_GAINS[0]))
            }
            // Draining: stop as soon as the queue is gone.
            1 => full_length || ev.prior_in_flight <= self.inflight(1.0),
            _ => full_length,
        };
        if advance {
            self.cycle_index = (self.cycle_index + 1) % PROBE_BW_GAINS.len();
            self.cycle_stamp = ev.now;
            self.lost_in_phase = false;
        }
    }

    fn check_full_pipe(&mut self, ev: &AckEvent) {
        if self.filled_pipe || !self.round_start {
            return;
        }
        if ev.rate.is_some_and(|r| r.is_app_limited) {
            return;
        }
        let bw = self.btl_bw.get();
        if bw as f64 >= self.full_bw as f64 * FULL_BW_THRESHOLD {
            self.full_bw = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= FULL_BW_ROUNDS {
            self.filled_pipe = true;
        }
    }

    fn check_drain(&mut self, ev: &AckEvent) {
        if self.state == BbrState::Startup && self.filled_pipe {
            self.state = BbrState::Drain;
        }
        if self.state == BbrState::Drain && ev.bytes_in_flight <= self.inflight(1.0) {
            self.enter_probe_bw(ev.now);
        }
    }

    fn update_min_rtt(&mut self, ev: &AckEvent, rtt: &RttEstimator) {
        let now = ev.now;
        let expired = now > self.rt_prop_stamp + RT_PROP_WINDOW;
        let sample = match ev.rate.map(|r| r.rtt) {
            Some(r) if !r.is_zero() => Some(r),
            _ if rtt.has_sample() => Some(rtt.latest()),
            _ => None,
        };
        if let Some(s) = sample {
            if self.rt_prop.is_none_or(|m| s < m) || expired {
                self.rt_prop = Some(s);
                self.rt_prop_stamp = now;
            }
        }
        if let Some(lead) = self.probe_rtt_lead {
            self.follow_probe_rtt(lead, now);
            return;
        }
        if expired && self.state != BbrState::ProbeRtt {
            self.save_cwnd();
            self.state = BbrState::ProbeRtt;
            self.probe_rtt_done = None;
            self.probe_rtt_round_done = false;
        }
        if self.state != BbrState::ProbeRtt {
            return;
        }
        match self.probe_rtt_done {
            None if ev.bytes_in_flight <= self.min_window() => {
                // Inflight is down: hold it for 200 ms and at least one round.
                self.probe_rtt_done = Some(now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.next_round_delivered = self.delivered;
            }
            None => {}
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && now >= done {
                    self.rt_prop_stamp = now;
                    self.cwnd = self.cwnd.max(self.prior_cwnd);
                    self.probe_rtt_done = None;
                    if self.filled_pipe {
                        self.enter_probe_bw(now);
                    } else {
                        self.enter_startup();
                    }
                }
            }
        }
    }

    /// ProbeRTT entered and left with the controller this one follows.
    fn follow_probe_rtt(&mut self, lead: bool, now: Instant) {
        if lead && self.filled_pipe && matches!(self.state, BbrState::ProbeBw | BbrState::Drain) {
            self.save_cwnd();
            self.state = BbrState::ProbeRtt;
            self.probe_rtt_done = None;
        } else if !lead && self.state == BbrState::ProbeRtt {
            self.rt_prop_stamp = now;
            self.cwnd = self.cwnd.max(self.prior_cwnd);
            self.enter_probe_bw(now);
        }
    }

    fn update_gains(&mut self) {
        let (p, c) = match self.state {
            BbrState::Startup => (STARTUP_GAIN, CWND_GAIN),
            BbrState::Drain => (DRAIN_GAIN, CWND_GAIN),
            BbrState::ProbeRtt => (1.0, 1.0),
            BbrState::ProbeBw => {
                let g = match (self.cycle_index, self.cruise) {
                    (i, _) if i < 2 => PROBE_BW_GAINS.get(i).copied().unwrap_or(1.0),
                    (_, Cruise::Gain(g)) => g,
                    // Reported as 0; the rate comes from four_per_rtt().
                    (_, Cruise::FourPerRtt) => 0.0,
                };
                (g, CWND_GAIN)
            }
        };
        self.pacing_gain = p;
        self.cwnd_gain = c;
    }

    fn set_pacing_rate(&mut self) {
        if !self.seen_rtt && self.srtt.is_some() {
            // First RTT sample: restart from gain·cwnd/srtt, replacing the
            // nominal-RTT guess (which Startup would otherwise never lower).
            self.seen_rtt = true;
            self.pacing_rate = 0;
        }
        let srtt = self.srtt.unwrap_or(NOMINAL_RTT).max(Duration::from_micros(1));
        if self.four_per_rtt() {
            let rate = (MIN_PIPE_PACKETS * self.mss) as f64 / srtt.as_secs_f64();
            self.pacing_rate = rate as u64;
            return;
        }
        let bw = self.usable_bw();
        let rate = if bw == 0 {
            self.pacing_gain * self.cwnd as f64 / srtt.as_secs_f64()
        } else {
            self.pacing_gain * bw as f64
        };
        let rate = rate.max(0.0) as u64;
        // Startup never lowers the rate: a low early sample is noise.
        if self.filled_pipe || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    fn set_cwnd(&mut self, ev: &AckEvent) {
        let acked = ev.acked_bytes;
        if acked > 0 {
            if self.packet_conservation {
                self.cwnd = self.cwnd.max(ev.bytes_in_flight.saturating_add(acked));
            } else {
                let target = self.inflight(self.cwnd_gain);
                if self.filled_pipe {
                    self.cwnd = self.cwnd.saturating_add(acked).min(target);
                } else if self.cwnd < target || (self.delivered as usize) < self.initial_window {
                    self.cwnd = self.cwnd.saturating_add(acked);
                }
            }
            self.cwnd = self.cwnd.max(self.min_window());
        }
        if self.state == BbrState::ProbeRtt {
            self.cwnd = self.cwnd.min(self.min_window());
        }
    }
}

impl CongestionController for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn window(&self) -> usize {
        self.cwnd
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing_rate.max(1))
    }

    fn in_slow_start(&self) -> bool {
        self.state == BbrState::Startup
    }

    fn bandwidth_estimate(&self) -> Option<u64> {
        Some(self.btl_bw.get())
    }

    fn on_ack(&mut self, ev: &AckEvent, rtt: &RttEstimator, _paths: &[PathView]) {
        if rtt.has_sample() {
            self.srtt = Some(rtt.smoothed());
        }
        if self.in_recovery && self.recovery_start.is_some_and(|s| ev.largest_acked_sent > s) {
            // Recovery is over: restore the window saved when it began.
            self.in_recovery = false;
            self.packet_conservation = false;
            self.cwnd = self.cwnd.max(self.prior_cwnd);
        }
        self.update_round_and_bw(ev);
        self.update_cycle_phase(ev);
        self.check_full_pipe(ev);
        self.check_drain(ev);
        self.update_min_rtt(ev, rtt);
        self.update_gains();
        self.set_pacing_rate();
        self.set_cwnd(ev);
    }

    /// BBR v1 has no ECN response; this BBRv3 leaves out the draft's
    /// optional one.
    fn on_ecn_ce(&mut self, _: &LossEvent, _: &RttEstimator, _: &[PathView]) {}
    fn on_loss(&mut self, ev: &LossEvent, rtt: &RttEstimator, _paths: &[PathView]) {
        if rtt.has_sample() {
            self.srtt = Some(rtt.smoothed());
        }
        self.lost_in_phase = true;
        let new_period = self.recovery_start.is_none_or(|s| ev.largest_lost_sent > s);
        if new_period {
            // Enter recovery: remember the window, then hold inflight for one
            // round (packet conservation), as BBR v1 does.
            self.save_cwnd();
            self.recovery_start = Some(ev.now);
            self.in_recovery = true;
            self.packet_conservation = true;
            self.next_round_delivered = self.delivered;
            self.cwnd = ev.bytes_in_flight;
        } else {
            self.cwnd = self.cwnd.saturating_sub(ev.lost_bytes);
        }
        if ev.persistent_congestion {
            self.cwnd = 0;
        }
        self.cwnd = self.cwnd.max(self.min_window());
    }

    fn metrics(&self) -> CcMetrics {
        let bw = self.btl_bw.get();
        let pacing_gain = if self.four_per_rtt() && bw > 0 {
            self.pacing_rate as f64 / bw as f64
        } else {
            self.pacing_gain
        };
        CcMetrics {
            ssthresh: None,
            state: self.state.name(),
            pacing_gain: Some(pacing_gain),
            cwnd_gain: Some(self.cwnd_gain),
            bandwidth: Some(bw),
        }
    }
}

#[cfg(test)]
mod tests;
