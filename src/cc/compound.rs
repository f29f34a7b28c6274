//! Compound TCP (Tan, Song, Zhang, Sridharan, INFOCOM 2006;
//! draft-sridharan-tcpm-ctcp-02), the Windows controller seed 002 compares:
//! the window is a loss-based part (Reno's) plus a delay-based part `dwnd`
//! that grows fast while the path's queue is short and drains as it builds.
//!
//! Once per round in congestion avoidance, with `win = cwnd + dwnd` in
//! packets, `base` the path's minimum RTT and `rtt` the round's smallest
//! sample, the estimate of our packets queued is
//! `diff = win · (1 − base/rtt)`, and
//!
//! - `diff < γ`: `dwnd += max(α·win^k − 1, 0)` (HighSpeed-like growth),
//! - `diff ≥ γ`: `dwnd = max(dwnd − ζ·diff, 0)` (give the queue back),
//!
//! and on a loss `win` halves (`cwnd` halves, `dwnd = max(win·(1−β) − cwnd/2, 0)`).
//! The round's smallest sample, as Vegas uses, keeps ACK compression from
//! reading as queueing. Constants are the paper's; γ is the fixed 30 packets
//! (not the later draft's automatic tuning).

use std::time::{Duration, Instant};

use super::{AckEvent, CcMetrics, CcParams, CongestionController, LossEvent, PathView};
use crate::rtt::RttEstimator;

/// Growth factor of the delay window.
const ALPHA: f64 = 0.125;
/// Multiplicative decrease of the whole window on a loss.
const BETA: f64 = 0.5;
/// Exponent of the delay window's growth.
const K: f64 = 0.75;
/// How fast the delay window drains per packet of estimated queue.
const ZETA: f64 = 1.0;
/// Queued packets tolerated before the delay window drains.
const GAMMA: f64 = 30.0;
/// Below this window (packets) Reno alone grows fast enough: no delay window.
const LOW_WINDOW: f64 = 41.0;

/// Compound TCP controller of one path.
#[derive(Clone, Debug)]
pub struct Compound {
    mss: usize,
    /// The loss-based (Reno) window, bytes.
    cwnd: usize,
    /// The delay-based window, bytes.
    dwnd: usize,
    ssthresh: usize,
    recovery_start: Option<Instant>,
    recovering: bool,
    /// Bytes acked in congestion avoidance not yet turned into growth.
    ca_acked: usize,
    app_limited: bool,
    /// Packets sent after this began the current round.
    round_start: Instant,
    /// The round's smallest RTT sample.
    round_rtt: Option<Duration>,
}

impl Compound {
    /// A controller starting at the initial window.
    pub fn new(params: CcParams) -> Self {
        Self {
            mss: params.mss.max(1),
            cwnd: params.initial_window,
            dwnd: 0,
            ssthresh: usize::MAX,
            recovery_start: None,
            recovering: false,
            ca_acked: 0,
            app_limited: false,
            round_start: params.now,
            round_rtt: None,
        }
    }

    /// The delay-based part of the window, bytes.
    pub fn delay_window(&self) -> usize {
        self.dwnd
    }

    fn minimum_window(&self) -> usize {
        2 * self.mss
    }

    fn in_recovery(&self, sent: Instant) -> bool {
        self.recovery_start.is_some_and(|r| sent <= r)
    }

    /// End of a round: move the delay window by the estimated queue.
    fn update_delay_window(&mut self, base: Duration) {
        let Some(rtt) = self.round_rtt.filter(|r| !r.is_zero() && !base.is_zero()) else { return };
        let mss = self.mss as f64;
        let win = (self.cwnd + self.dwnd) as f64 / mss;
        if win < LOW_WINDOW {
            return;
        }
        let diff = win * (1.0 - base.as_secs_f64() / rtt.as_secs_f64()).max(0.0);
        let dwnd = self.dwnd as f64 / mss;
        let next = if diff < GAMMA {
            dwnd + (ALPHA * win.powf(K) - 1.0).max(0.0)
        } else {
            (dwnd - ZETA * diff).max(0.0)
        };
        self.dwnd = (next * mss) as usize;
    }
}

impl CongestionController for Compound {
    fn name(&self) -> &'static str {
        "compound"
    }

    fn window(&self) -> usize {
        self.cwnd + self.dwnd
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    fn on_packet_sent(&mut self, _now: Instant, _bytes: usize, bytes_in_flight: usize) {
        if bytes_in_flight + self.mss > self.window() {
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
        if rtt.has_sample() {
            let r = rtt.latest();
            self.round_rtt = Some(self.round_rtt.map_or(r, |m| m.min(r)));
        }
        let round_over = ev.largest_acked_sent > self.round_start;
        if self.app_limited {
            if round_over {
                self.round_start = ev.now;
                self.round_rtt = None;
            }
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd += ev.acked_bytes;
        } else {
            // Reno's part grows one packet per whole window acked.
            self.ca_acked += ev.acked_bytes;
            while self.ca_acked >= self.window() {
                self.ca_acked -= self.window();
                self.cwnd += self.mss;
            }
            if round_over {
                self.update_delay_window(rtt.min());
            }
        }
        if round_over {
            self.round_start = ev.now;
            self.round_rtt = None;
        }
    }

    fn on_loss(&mut self, ev: &LossEvent, _rtt: &RttEstimator, _paths: &[PathView]) {
        if !self.in_recovery(ev.largest_lost_sent) {
            let win = self.window() as f64;
            self.recovery_start = Some(ev.now);
            self.cwnd = (self.cwnd / 2).max(self.minimum_window());
            self.dwnd = (win * (1.0 - BETA) - self.cwnd as f64).max(0.0) as usize;
            self.ssthresh = self.cwnd;
            self.ca_acked = 0;
            self.recovering = true;
        }
        if ev.persistent_congestion {
            self.cwnd = self.minimum_window();
            self.dwnd = 0;
            self.recovery_start = None;
            self.ca_acked = 0;
            self.recovering = false;
        }
    }

    fn metrics(&self) -> CcMetrics {
        let ssthresh = (self.ssthresh != usize::MAX).then_some(self.ssthresh);
        CcMetrics::window_based(ssthresh, self.recovering, self.cwnd < self.ssthresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PathId;

    const MSS: usize = 1200;

    fn ack(now: Instant, sent: Instant, bytes: usize) -> AckEvent {
        AckEvent {
            now,
            acked_bytes: bytes,
            acked_packets: bytes / MSS,
            largest_acked_sent: sent,
            prior_in_flight: bytes,
            bytes_in_flight: 0,
            rate: None,
        }
    }

    fn loss(now: Instant, sent: Instant) -> LossEvent {
        LossEvent {
            now,
            largest_lost_sent: sent,
            lost_bytes: MSS,
            lost_packets: 1,
            bytes_in_flight: 0,
            persistent_congestion: false,
        }
    }

    /// A controller in congestion avoidance with a 100-packet window, an
    /// RTT estimator whose minimum is 50 ms, and the time it reached there.
    fn in_avoidance() -> (Compound, RttEstimator, Instant) {
        #[allow(clippy::disallowed_methods)]
        let t = Instant::now();
        let mut c = Compound::new(CcParams {
            path_id: PathId(0),
            mss: MSS,
            initial_window: 10 * MSS,
            now: t,
            seed: 0,
        });
        let mut rtt = RttEstimator::default();
        rtt.update(Duration::from_millis(50), Duration::ZERO);
        c.on_ack(&ack(t + Duration::from_millis(50), t, 190 * MSS), &rtt, &[]);
        let t1 = t + Duration::from_millis(60);
        c.on_loss(&loss(t1, t + Duration::from_millis(55)), &rtt, &[]);
        assert_eq!((c.window(), c.delay_window()), (100 * MSS, 0));
        (c, rtt, t1)
    }

    /// One round of a full window acked at `rtt_ms`, starting at `t`.
    fn round(c: &mut Compound, rtt: &mut RttEstimator, t: Instant, rtt_ms: u64) -> Instant {
        rtt.update(Duration::from_millis(rtt_ms), Duration::ZERO);
        let now = t + Duration::from_millis(rtt_ms);
        let w = c.window();
        c.on_ack(&ack(now, t + Duration::from_millis(1), w), rtt, &[]);
        now
    }

    #[test]
    fn delay_window_grows_while_the_queue_is_short() {
        let (mut c, mut rtt, mut t) = in_avoidance();
        t = round(&mut c, &mut rtt, t, 50);
        // No queue: dwnd += α·win^k − 1 = 0.125·100^0.75 − 1 ≈ 2.95 packets,
        // on top of Reno's one packet per window.
        let pkts = c.delay_window() as f64 / MSS as f64;
        assert!((pkts - 2.95).abs() < 0.05, "dwnd {pkts} packets");
        let before = c.window();
        round(&mut c, &mut rtt, t, 51);
        assert!(c.window() > before + 3 * MSS, "grows faster than Reno: {} -> {}", before, c.window());
    }

    #[test]
    fn delay_window_drains_when_the_queue_builds() {
        let (mut c, mut rtt, mut t) = in_avoidance();
        for _ in 0..20 {
            t = round(&mut c, &mut rtt, t, 50);
        }
        let grown = c.delay_window();
        assert!(grown > 50 * MSS, "dwnd {grown}");
        // RTT 1.5× the base: a third of the window is queued (≥ γ): drain.
        round(&mut c, &mut rtt, t, 75);
        assert!(c.delay_window() < grown - 30 * MSS, "{grown} -> {}", c.delay_window());
    }

    #[test]
    fn a_loss_halves_the_whole_window_and_small_windows_are_reno() {
        let (mut c, mut rtt, mut t) = in_avoidance();
        for _ in 0..10 {
            t = round(&mut c, &mut rtt, t, 50);
        }
        let (win, cwnd) = (c.window(), c.cwnd);
        c.on_loss(&loss(t + Duration::from_millis(5), t + Duration::from_millis(2)), &rtt, &[]);
        assert_eq!(c.cwnd, cwnd / 2);
        assert!(c.window().abs_diff(win / 2) <= MSS, "{win} -> {}", c.window());
        // Below 41 packets there is no delay window.
        #[allow(clippy::disallowed_methods)]
        let t = Instant::now();
        let mut small = Compound::new(CcParams {
            path_id: PathId(0),
            mss: MSS,
            initial_window: 10 * MSS,
            now: t,
            seed: 0,
        });
        small.on_loss(&loss(t, t), &rtt, &[]);
        let mut now = t;
        for _ in 0..5 {
            now = round(&mut small, &mut rtt, now, 50);
        }
        assert_eq!(small.delay_window(), 0);
        assert_eq!(small.name(), "compound");
    }
}
