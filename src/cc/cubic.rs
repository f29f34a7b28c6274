//! CUBIC (RFC 9438): window growth W_cubic(t) = C·(t−K)³ + W_max after a
//! reduction by β = 0.7, with the Reno-friendly region, fast convergence,
//! and no growth while the application does not use the window.
//!
//! Window arithmetic is in segments (RFC 9438 units) held as `f64`; the
//! window reported to the engine is in bytes.

use std::time::Instant;

use super::{AckEvent, CcMetrics, CcParams, CongestionController, LossEvent, PathView};
use crate::rtt::RttEstimator;

/// RFC 9438 §5.1 C.
pub const C: f64 = 0.4;
/// RFC 9438 §5.1 β_cubic.
pub const BETA: f64 = 0.7;
/// Reno-friendly additive increase α_cubic = 3(1−β)/(1+β) (RFC 9438 §4.3).
const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

/// CUBIC controller of one path.
#[derive(Clone, Debug)]
pub struct Cubic {
    mss: f64,
    /// Congestion window in segments.
    cwnd: f64,
    /// Slow-start threshold in segments (infinite until the first loss).
    ssthresh: f64,
    /// Window before the last reduction, in segments.
    w_max: f64,
    /// Time (s) W_cubic takes to climb back to W_max.
    k: f64,
    /// Start of the current congestion-avoidance stage.
    epoch_start: Option<Instant>,
    /// Reno-friendly estimate W_est in segments.
    w_est: f64,
    recovery_start: Option<Instant>,
    recovering: bool,
    app_limited: bool,
    last_ack: Option<Instant>,
}

impl Cubic {
    /// A controller starting at the initial window.
    pub fn new(params: CcParams) -> Self {
        let mss = params.mss.max(1) as f64;
        Self {
            mss,
            cwnd: params.initial_window as f64 / mss,
            ssthresh: f64::INFINITY,
            w_max: 0.0,
            k: 0.0,
            epoch_start: None,
            w_est: 0.0,
            recovery_start: None,
            recovering: false,
            app_limited: false,
            last_ack: None,
        }
    }

    /// K in seconds (RFC 9438 eq. 2), as of the last reduction or epoch start.
    pub fn k(&self) -> f64 {
        self.k
    }

    /// W_max in segments.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// W_cubic(t) in segments for `t` seconds into the epoch (RFC 9438 eq. 1).
    pub fn w_cubic(&self, t: f64) -> f64 {
        C * (t - self.k).powi(3) + self.w_max
    }

    /// K = ∛((W_max − cwnd_epoch)/C), 0 if the window is already at W_max.
    fn compute_k(w_max: f64, cwnd_epoch: f64) -> f64 {
        if w_max > cwnd_epoch {
            ((w_max - cwnd_epoch) / C).cbrt()
        } else {
            0.0
        }
    }

    fn in_recovery(&self, sent: Instant) -> bool {
        self.recovery_start.is_some_and(|r| sent <= r)
    }

    fn min_window(&self) -> f64 {
        2.0
    }
}

impl CongestionController for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn window(&self) -> usize {
        (self.cwnd * self.mss) as usize
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    fn on_packet_sent(&mut self, _now: Instant, _bytes: usize, bytes_in_flight: usize) {
        if bytes_in_flight as f64 + self.mss > self.cwnd * self.mss {
            self.app_limited = false;
        }
    }

    fn on_app_limited(&mut self, _bytes_in_flight: usize) {
        self.app_limited = true;
    }

    fn on_ack(&mut self, ev: &AckEvent, rtt: &RttEstimator, _paths: &[PathView]) {
        if self.in_recovery(ev.largest_acked_sent) {
            return;
        }
        self.recovering = false;
        let now = ev.now;
        let last_ack = self.last_ack.replace(now);
        if self.app_limited {
            // RFC 9438 §5.8: no growth, and the idle time does not count in t.
            if let (Some(e), Some(l)) = (self.epoch_start, last_ack) {
                self.epoch_start = e.checked_add(now.saturating_duration_since(l));
            }
            return;
        }
        let acked = ev.acked_bytes as f64 / self.mss;
        if self.cwnd < self.ssthresh {
            self.cwnd += acked;
            return;
        }
        let epoch = match self.epoch_start {
            Some(e) => e,
            None => {
                self.epoch_start = Some(now);
                if self.w_max < self.cwnd {
                    self.w_max = self.cwnd;
                }
                self.k = Self::compute_k(self.w_max, self.cwnd);
                self.w_est = self.cwnd;
                now
            }
        };
        let t = now.saturating_duration_since(epoch).as_secs_f64();
        // Reno-friendly estimate (RFC 9438 eq. 4); α becomes 1 past W_max.
        let alpha = if self.w_est >= self.w_max { 1.0 } else { ALPHA };
        self.w_est += alpha * acked / self.cwnd;
        let w_cubic = self.w_cubic(t);
        if w_cubic < self.w_est {
            self.cwnd = self.w_est;
            return;
        }
        let horizon = (t + rtt.smoothed().as_secs_f64()).max(0.0);
        let target = self.w_cubic(horizon).clamp(self.cwnd, 1.5 * self.cwnd);
        self.cwnd += (target - self.cwnd) / self.cwnd * acked;
    }

    fn on_loss(&mut self, ev: &LossEvent, _rtt: &RttEstimator, _paths: &[PathView]) {
        if !self.in_recovery(ev.largest_lost_sent) {
            self.recovery_start = Some(ev.now);
            self.recovering = true;
            // Fast convergence (RFC 9438 §4.7): release bandwidth when the
            // window peaked below the previous W_max.
            self.w_max =
                if self.cwnd < self.w_max { self.cwnd * (1.0 + BETA) / 2.0 } else { self.cwnd };
            self.ssthresh = (self.cwnd * BETA).max(self.min_window());
            self.cwnd = self.ssthresh;
            self.k = Self::compute_k(self.w_max, self.cwnd);
            self.epoch_start = None;
        }
        if ev.persistent_congestion {
            self.cwnd = self.min_window();
            self.epoch_start = None;
            self.recovery_start = None;
            self.recovering = false;
        }
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            ssthresh: self.ssthresh.is_finite().then(|| (self.ssthresh * self.mss) as usize),
            state: if self.recovering {
                "recovery"
            } else if self.cwnd < self.ssthresh {
                "slow_start"
            } else {
                "congestion_avoidance"
            },
            ..CcMetrics::default()
        }
    }
}

