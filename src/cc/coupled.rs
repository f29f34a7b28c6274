//! Machinery shared by the window-based coupled controllers (LIA, OLIA,
//! BALIA): Reno slow start until the first loss, one reduction per recovery
//! period (RFC 9002 §7.3.2), persistent congestion, and gathering the
//! windows and RTTs of the connection's active paths.
//!
//! Units: windows are kept in bytes. The coupled formulas are written in
//! packets; each controller's pure increase function states its conversion.

use std::time::{Duration, Instant};

use smallvec::SmallVec;

use super::{AckEvent, CcMetrics, CcParams, CongestionController, LossEvent, PathView};
use crate::rtt::RttEstimator;
use crate::PathId;

/// What distinguishes LIA, OLIA and BALIA: the per-ACK increase and the
/// window after a loss, both in bytes, from the set of active paths.
pub trait CoupledRule: Send + Sync + Clone + std::fmt::Debug + 'static {
    /// Name accepted by `cc::build`.
    const NAME: &'static str;
    /// Bytes to add for `acked` bytes acknowledged in congestion avoidance.
    fn increase(set: &PathSet, acked: f64, mss: f64) -> f64;
    /// The window after a loss.
    fn reduced(set: &PathSet) -> f64;
}

/// A window-based coupled controller for one path, following rule `R`.
#[derive(Clone, Debug)]
pub struct Coupled<R: CoupledRule> {
    id: PathId,
    win: Window,
    _rule: std::marker::PhantomData<R>,
}

impl<R: CoupledRule> Coupled<R> {
    /// A controller in slow start with the initial window.
    pub fn new(params: CcParams) -> Self {
        Self { id: params.path_id, win: Window::new(params), _rule: std::marker::PhantomData }
    }
}

impl<R: CoupledRule> CongestionController for Coupled<R> {
    fn name(&self) -> &'static str {
        R::NAME
    }
    fn window(&self) -> usize {
        self.win.cwnd
    }
    fn in_slow_start(&self) -> bool {
        self.win.in_slow_start()
    }
    fn on_ack(&mut self, ev: &AckEvent, rtt: &RttEstimator, paths: &[PathView]) {
        if let AckAction::Avoid(acked) = self.win.on_ack(ev) {
            let set = PathSet::gather(self.id, self.win.cwnd, rtt.smoothed(), paths);
            let inc = R::increase(&set, acked as f64, self.win.mss as f64);
            self.win.grow(inc);
        }
    }
    fn on_loss(&mut self, ev: &LossEvent, rtt: &RttEstimator, paths: &[PathView]) {
        let set = PathSet::gather(self.id, self.win.cwnd, rtt.smoothed(), paths);
        self.win.on_loss(ev, |_| R::reduced(&set));
    }
    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            ssthresh: (self.win.ssthresh != usize::MAX).then_some(self.win.ssthresh),
            state: if self.win.in_slow_start() { "SlowStart" } else { "CongestionAvoidance" },
            ..CcMetrics::default()
        }
    }
}

/// RFC 9002 §7.2 kMinimumWindow, in packets.
pub const MIN_WINDOW_PACKETS: usize = 2;

/// The windows (bytes) and smoothed RTTs (seconds) of the active paths, with
/// this path's own up-to-date values at index `me`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PathSet {
    /// Congestion windows in bytes (inline: no allocation per ACK).
    pub cwnds: SmallVec<[f64; 8]>,
    /// Smoothed RTTs in seconds.
    pub rtts: SmallVec<[f64; 8]>,
    /// Index of this path.
    pub me: usize,
}

impl PathSet {
    /// Collect active paths with an RTT estimate. This path's entry uses
    /// `own_cwnd`/`own_srtt` (the view may be stale by one event) and is
    /// present even if the view omits it.
    pub fn gather(id: PathId, own_cwnd: usize, own_srtt: Duration, paths: &[PathView]) -> Self {
        let mut set = PathSet::default();
        for p in paths {
            if p.id == id || !p.active || p.srtt.is_zero() {
                continue;
            }
            set.cwnds.push(p.cwnd as f64);
            set.rtts.push(p.srtt.as_secs_f64());
        }
        set.me = set.cwnds.len();
        set.cwnds.push(own_cwnd as f64);
        set.rtts.push(own_srtt.as_secs_f64().max(1e-6));
        set
    }
}

/// What an ACK means for a coupled window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckAction {
    /// Nothing to grow (in recovery, or nothing acked).
    None,
    /// Slow start handled the ACK.
    SlowStart,
    /// Congestion avoidance: apply the coupled increase for these bytes.
    Avoid(usize),
}

/// Window, threshold and recovery state of one path.
#[derive(Clone, Debug)]
pub struct Window {
    /// Maximum datagram size.
    pub mss: usize,
    /// Congestion window in bytes.
    pub cwnd: usize,
    /// Slow-start threshold (usize::MAX until the first loss).
    pub ssthresh: usize,
    recovery_start: Option<Instant>,
    // Fractional bytes of increase not yet applied, so per-ACK increases
    // smaller than a byte are not lost to rounding (may be negative: OLIA).
    carry: f64,
}

impl Window {
    /// The initial window, no threshold.
    pub fn new(params: CcParams) -> Self {
        let mss = params.mss.max(1);
        Self {
            mss,
            cwnd: params.initial_window.max(MIN_WINDOW_PACKETS * mss),
            ssthresh: usize::MAX,
            recovery_start: None,
            carry: 0.0,
        }
    }

    /// RFC 9002 kMinimumWindow.
    pub fn min_window(&self) -> usize {
        MIN_WINDOW_PACKETS * self.mss
    }

    /// Below the slow-start threshold.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Classify an ACK: no growth for packets sent before the current
    /// recovery period began; Reno slow start below ssthresh.
    pub fn on_ack(&mut self, ev: &AckEvent) -> AckAction {
        if ev.acked_bytes == 0 {
            return AckAction::None;
        }
        if self.recovery_start.is_some_and(|s| ev.largest_acked_sent <= s) {
            return AckAction::None;
        }
        if self.in_slow_start() {
            self.cwnd = self.cwnd.saturating_add(ev.acked_bytes);
            return AckAction::SlowStart;
        }
        AckAction::Avoid(ev.acked_bytes)
    }

    /// Add a (possibly fractional or negative) congestion-avoidance increase
    /// in bytes. A window shrinking below ssthresh (OLIA) drags ssthresh
    /// down with it, so the path stays in congestion avoidance.
    pub fn grow(&mut self, bytes: f64) {
        if !bytes.is_finite() {
            return;
        }
        self.carry += bytes;
        let whole = self.carry.trunc();
        self.carry -= whole;
        let next = (self.cwnd as f64 + whole).max(self.min_window() as f64);
        self.cwnd = next as usize;
        self.ssthresh = self.ssthresh.min(self.cwnd);
    }

    /// Handle a loss: `reduced` maps the current window to the window after
    /// one reduction, applied at most once per recovery period. Returns
    /// whether a reduction happened.
    pub fn on_loss(&mut self, ev: &LossEvent, reduced: impl FnOnce(usize) -> f64) -> bool {
        let new_period = self.recovery_start.is_none_or(|s| ev.largest_lost_sent > s);
        if new_period {
            self.recovery_start = Some(ev.now);
            let w = reduced(self.cwnd);
            let w = if w.is_finite() { w.max(0.0) as usize } else { self.cwnd / 2 };
            self.cwnd = w.max(self.min_window());
            self.ssthresh = self.cwnd;
            self.carry = 0.0;
        }
        if ev.persistent_congestion {
            // RFC 9002 §7.6.2 and Appendix B.8: collapse to the minimum and
            // forget the recovery period.
            self.cwnd = self.min_window();
            self.recovery_start = None;
            self.carry = 0.0;
        }
        new_period
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! Event builders shared by the coupled controllers' tests, times in
    //! milliseconds from a base instant.
    use super::*;

    #[allow(clippy::disallowed_methods)]
    pub(crate) fn base() -> Instant {
        Instant::now()
    }

    fn ms(t0: Instant, at: u64) -> Instant {
        t0 + Duration::from_millis(at)
    }

    /// ACK at `at` ms of `bytes`, largest acked sent at `sent` ms.
    pub(crate) fn ack(t0: Instant, at: u64, sent: u64, bytes: usize) -> AckEvent {
        AckEvent {
            now: ms(t0, at),
            acked_bytes: bytes,
            acked_packets: 1,
            largest_acked_sent: ms(t0, sent),
            prior_in_flight: 100_000,
            bytes_in_flight: 100_000,
            rate: None,
        }
    }

    /// Loss declared at `at` ms of a packet sent at `sent` ms.
    pub(crate) fn loss(t0: Instant, at: u64, sent: u64, persistent: bool) -> LossEvent {
        LossEvent {
            now: ms(t0, at),
            largest_lost_sent: ms(t0, sent),
            lost_bytes: 1000,
            lost_packets: 1,
            bytes_in_flight: 50_000,
            persistent_congestion: persistent,
        }
    }

    /// An active path's view.
    pub(crate) fn view(id: u32, cwnd: usize, srtt_ms: u64) -> PathView {
        PathView {
            id: PathId(id),
            cwnd,
            bytes_in_flight: 0,
            srtt: Duration::from_millis(srtt_ms),
            min_rtt: Duration::from_millis(srtt_ms),
            bandwidth: 0,
            pacing_rate: None,
            in_slow_start: false,
            active: true,
            group: id,
            probe_phase: None,
            probe_rtt: false,
            delivered: 0,
            lost: 0,
        }
    }

    #[test]
    fn gather_uses_own_values_and_skips_inactive() {
        let mut idle = view(2, 99_000, 10);
        idle.active = false;
        let paths = [view(0, 1, 1), view(1, 20_000, 200), idle];
        let set = PathSet::gather(PathId(0), 10_000, Duration::from_millis(100), &paths);
        assert_eq!(set.cwnds.as_slice(), &[20_000.0, 10_000.0]);
        assert_eq!(set.rtts.as_slice(), &[0.2, 0.1]);
        assert_eq!(set.me, 1);
    }

    #[test]
    fn fractional_growth_accumulates() {
        let t0 = base();
        let p = CcParams { path_id: PathId(0), mss: 1000, initial_window: 10_000, now: t0, seed: 0 };
        let mut w = Window::new(p);
        w.ssthresh = 5_000;
        w.cwnd = 10_000;
        for _ in 0..10 {
            w.grow(0.25);
        }
        assert_eq!(w.cwnd, 10_002);
        w.grow(-3.0);
        // carry 0.5 - 3 = -2.5: two whole bytes off, -0.5 carried.
        assert_eq!(w.cwnd, 10_000);
        assert_eq!(w.ssthresh, 5_000);
        w.grow(-1e9);
        assert_eq!(w.cwnd, 2_000);
        assert_eq!(w.ssthresh, 2_000);
        assert!(!w.in_slow_start());
        w.grow(f64::NAN);
        assert_eq!(w.cwnd, 2_000);
    }
}
