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
            self.w_max = if self.cwnd < self.w_max { self.cwnd * (1.0 + BETA) / 2.0 } else { self.cwnd };
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
        let ssthresh = self.ssthresh.is_finite().then_some((self.ssthresh * self.mss) as usize);
        CcMetrics::window_based(ssthresh, self.recovering, self.cwnd < self.ssthresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PathId;
    use std::time::Duration;

    fn ack_ev(now: Instant, sent: Instant, bytes: usize) -> AckEvent {
        AckEvent {
            now,
            acked_bytes: bytes,
            acked_packets: bytes / 1200,
            largest_acked_sent: sent,
            prior_in_flight: bytes,
            bytes_in_flight: 0,
            rate: None,
        }
    }

    fn loss_ev(now: Instant, sent: Instant) -> LossEvent {
        LossEvent {
            now,
            largest_lost_sent: sent,
            lost_bytes: 1200,
            lost_packets: 1,
            bytes_in_flight: 0,
            persistent_congestion: false,
        }
    }

    fn close(a: f64, b: f64, eps: f64) -> bool {
        (a - b).abs() < eps
    }

    /// A CUBIC controller at 100 packets of 1200 bytes (grown in slow start),
    /// with an RTT of 100 ms.
    fn at_100(t: Instant) -> (Cubic, RttEstimator) {
        let mut c =
            Cubic::new(CcParams { path_id: PathId(0), mss: 1200, initial_window: 12000, now: t, seed: 0 });
        let mut rtt = RttEstimator::default();
        rtt.update(Duration::from_millis(100), Duration::ZERO);
        c.on_ack(&ack_ev(t, t, 108_000), &rtt, &[]);
        assert_eq!(c.window(), 120_000);
        (c, rtt)
    }

    #[test]
    fn reduction_k_and_cubic_growth() {
        #[allow(clippy::disallowed_methods)]
        let t = Instant::now();
        let ms = Duration::from_millis;
        let (mut c, rtt) = at_100(t);
        c.on_loss(&loss_ev(t + ms(10), t + ms(5)), &rtt, &[]);
        // W_max = 100, cwnd = 0.7·100 = 70 packets, K = ∛(100·0.3/0.4) = ∛75.
        assert_eq!(c.window(), 84_000);
        assert_eq!(c.metrics().ssthresh, Some(84_000));
        assert!(close(c.w_max(), 100.0, 1e-9));
        assert!(close(c.k(), 4.217163, 1e-6));
        assert!(close(c.w_cubic(0.0), 70.0, 1e-9));
        assert!(close(c.w_cubic(c.k()), 100.0, 1e-9));
        // W_cubic(1.1 s) = 0.4·(1.1 − 4.217163)³ + 100 = 87.8842.
        assert!(close(c.w_cubic(1.1), 87.8842, 1e-3));

        // First ACK after recovery starts the epoch at T (t = 0): W_cubic(0)
        // = 70 < W_est, Reno-friendly: cwnd = W_est = 70 + 0.5294·1/70.
        let e = t + ms(200);
        c.on_ack(&ack_ev(e, t + ms(150), 1200), &rtt, &[]);
        let w_est = 70.0 + ALPHA / 70.0;
        assert!(close(c.cwnd, w_est, 1e-9));
        // One second later, one packet acked: cubic region, target
        // W_cubic(1 + 0.1) = 87.8842; cwnd += (87.8842 − cwnd)/cwnd.
        c.on_ack(&ack_ev(e + ms(1000), e + ms(900), 1200), &rtt, &[]);
        let expect = w_est + (87.8842 - w_est) / w_est;
        assert!(close(c.cwnd, expect, 1e-3), "{} vs {}", c.cwnd, expect);
        assert!(close(c.cwnd, 70.2628, 1e-3));
    }

    #[test]
    fn fast_convergence_and_target_cap() {
        #[allow(clippy::disallowed_methods)]
        let t = Instant::now();
        let ms = Duration::from_millis;
        let (mut c, rtt) = at_100(t);
        c.on_loss(&loss_ev(t + ms(10), t + ms(5)), &rtt, &[]);
        c.cwnd = 80.0;
        // Second loss below W_max = 100: W_max = 80·(1+0.7)/2 = 68, cwnd 56,
        // K = ∛((68 − 56)/0.4) = ∛30 = 3.1072.
        c.on_loss(&loss_ev(t + ms(300), t + ms(250)), &rtt, &[]);
        assert!(close(c.w_max(), 68.0, 1e-9));
        assert!(close(c.cwnd, 56.0, 1e-9));
        assert!(close(c.k(), 3.107233, 1e-6));
        // Far beyond K the target is capped at 1.5·cwnd: one packet acked
        // adds at most 0.5 packet.
        let e = t + ms(400);
        c.on_ack(&ack_ev(e, t + ms(350), 1200), &rtt, &[]);
        let before = c.cwnd;
        c.on_ack(&ack_ev(e + ms(20_000), e, 1200), &rtt, &[]);
        assert!(close(c.cwnd - before, 0.5, 1e-9));
    }

    #[test]
    fn no_growth_while_app_limited() {
        #[allow(clippy::disallowed_methods)]
        let t = Instant::now();
        let ms = Duration::from_millis;
        let (mut c, rtt) = at_100(t);
        c.on_loss(&loss_ev(t + ms(10), t + ms(5)), &rtt, &[]);
        let e = t + ms(200);
        c.on_ack(&ack_ev(e, t + ms(150), 1200), &rtt, &[]);
        let w = c.cwnd;
        c.on_app_limited(0);
        c.on_ack(&ack_ev(e + ms(1000), e, 1200), &rtt, &[]);
        c.on_ack(&ack_ev(e + ms(3000), e, 1200), &rtt, &[]);
        assert_eq!(c.cwnd, w);
        // The idle 3 s do not count in t: the epoch moved forward by 3 s.
        assert_eq!(c.epoch_start, Some(e + ms(3000)));
        c.on_packet_sent(e + ms(3001), 1200, 84_000);
        c.on_ack(&ack_ev(e + ms(3100), e + ms(3001), 1200), &rtt, &[]);
        assert!(c.cwnd > w);
    }
}
