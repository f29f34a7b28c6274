//! NewReno as specified for QUIC (RFC 9002 §7 and Appendix B): slow start,
//! congestion avoidance of one datagram per window acknowledged, one halving
//! per recovery period, collapse to the minimum window on persistent
//! congestion.

use std::time::Instant;

use super::{AckEvent, CcMetrics, CcParams, CongestionController, LossEvent, PathView};
use crate::rtt::RttEstimator;

/// RFC 9002 §7.3.2 kLossReductionFactor as a fraction.
const LOSS_REDUCTION_NUM: usize = 1;
const LOSS_REDUCTION_DEN: usize = 2;

/// NewReno controller of one path.
#[derive(Clone, Debug)]
pub struct NewReno {
    mss: usize,
    cwnd: usize,
    ssthresh: usize,
    /// Start of the current recovery period (RFC 9002 §7.3.2).
    recovery_start: Option<Instant>,
    /// Bytes acknowledged in congestion avoidance not yet turned into growth.
    ca_acked: usize,
    /// The sender is not using its window (RFC 9002 §7.8).
    app_limited: bool,
    /// No packet sent after the recovery start has been acked yet.
    recovering: bool,
}

impl NewReno {
    /// A controller starting at the initial window.
    pub fn new(params: CcParams) -> Self {
        Self {
            mss: params.mss.max(1),
            cwnd: params.initial_window,
            ssthresh: usize::MAX,
            recovery_start: None,
            ca_acked: 0,
            app_limited: false,
            recovering: false,
        }
    }

    /// kMinimumWindow = 2·mss.
    pub fn minimum_window(&self) -> usize {
        2 * self.mss
    }

    /// Slow-start threshold (`usize::MAX` until the first loss).
    pub fn ssthresh(&self) -> usize {
        self.ssthresh
    }

    fn in_recovery(&self, sent: Instant) -> bool {
        self.recovery_start.is_some_and(|r| sent <= r)
    }
}

impl CongestionController for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn window(&self) -> usize {
        self.cwnd
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    fn on_packet_sent(&mut self, _now: Instant, _bytes: usize, bytes_in_flight: usize) {
        // Filling the window ends an app-limited period.
        if bytes_in_flight + self.mss > self.cwnd {
            self.app_limited = false;
        }
    }

    fn on_app_limited(&mut self, _bytes_in_flight: usize) {
        self.app_limited = true;
    }

    fn on_ack(&mut self, ev: &AckEvent, _rtt: &RttEstimator, _paths: &[PathView]) {
        // The event aggregates one ACK frame: if its newest packet was sent
        // in the recovery period, so were the others.
        if self.in_recovery(ev.largest_acked_sent) {
            return;
        }
        self.recovering = false;
        if self.app_limited {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd += ev.acked_bytes;
            return;
        }
        // cwnd += mss · acked / cwnd, accumulated exactly.
        self.ca_acked += ev.acked_bytes;
        while self.ca_acked >= self.cwnd {
            self.ca_acked -= self.cwnd;
            self.cwnd += self.mss;
        }
    }

    fn on_loss(&mut self, ev: &LossEvent, _rtt: &RttEstimator, _paths: &[PathView]) {
        if !self.in_recovery(ev.largest_lost_sent) {
            self.recovery_start = Some(ev.now);
            self.ssthresh = (self.cwnd * LOSS_REDUCTION_NUM / LOSS_REDUCTION_DEN).max(self.minimum_window());
            self.cwnd = self.ssthresh;
            self.ca_acked = 0;
            self.recovering = true;
        }
        if ev.persistent_congestion {
            self.cwnd = self.minimum_window();
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
    use std::time::Duration;

    pub(crate) fn ack_ev(now: Instant, sent: Instant, bytes: usize) -> AckEvent {
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

    pub(crate) fn loss_ev(now: Instant, sent: Instant, persistent: bool) -> LossEvent {
        LossEvent {
            now,
            largest_lost_sent: sent,
            lost_bytes: 1200,
            lost_packets: 1,
            bytes_in_flight: 0,
            persistent_congestion: persistent,
        }
    }

    #[test]
    fn slow_start_loss_and_avoidance() {
        #[allow(clippy::disallowed_methods)]
        let t = Instant::now();
        let ms = Duration::from_millis;
        let rtt = RttEstimator::default();
        let mut c =
            NewReno::new(CcParams { path_id: PathId(0), mss: 1200, initial_window: 12000, now: t, seed: 0 });
        assert!(c.in_slow_start());
        // Slow start: the window grows by the bytes acked.
        c.on_ack(&ack_ev(t + ms(100), t, 12000), &rtt, &[]);
        assert_eq!(c.window(), 24000);
        // Loss of a packet sent at 150 ms, detected at 200 ms: halve.
        c.on_loss(&loss_ev(t + ms(200), t + ms(150), false), &rtt, &[]);
        assert_eq!((c.window(), c.ssthresh()), (12000, 12000));
        assert_eq!(c.metrics().state, "recovery");
        // A second loss of a packet sent before the recovery start: no change.
        c.on_loss(&loss_ev(t + ms(210), t + ms(190), false), &rtt, &[]);
        assert_eq!(c.window(), 12000);
        // ACKs of packets sent before recovery started do not grow it.
        c.on_ack(&ack_ev(t + ms(220), t + ms(199), 6000), &rtt, &[]);
        assert_eq!(c.window(), 12000);
        // Congestion avoidance: one mss per window of bytes acked.
        c.on_ack(&ack_ev(t + ms(300), t + ms(250), 6000), &rtt, &[]);
        assert_eq!(c.window(), 12000);
        assert_eq!(c.metrics().state, "congestion_avoidance");
        c.on_ack(&ack_ev(t + ms(310), t + ms(260), 6000), &rtt, &[]);
        assert_eq!(c.window(), 13200);
        c.on_ack(&ack_ev(t + ms(320), t + ms(270), 13200), &rtt, &[]);
        assert_eq!(c.window(), 14400);
        assert_eq!(c.metrics().ssthresh, Some(12000));
        // App-limited: no growth until the window is used again.
        c.on_app_limited(1200);
        c.on_ack(&ack_ev(t + ms(330), t + ms(280), 14400), &rtt, &[]);
        assert_eq!(c.window(), 14400);
        c.on_packet_sent(t + ms(331), 1200, 14000);
        c.on_ack(&ack_ev(t + ms(340), t + ms(290), 14400), &rtt, &[]);
        assert_eq!(c.window(), 15600);
        // Persistent congestion: minimum window of 2·mss.
        c.on_loss(&loss_ev(t + ms(400), t + ms(350), true), &rtt, &[]);
        assert_eq!((c.window(), c.ssthresh()), (2400, 7800));
        // Recovery is reset: the next ACK grows the window (slow start).
        c.on_ack(&ack_ev(t + ms(500), t + ms(380), 1200), &rtt, &[]);
        assert_eq!(c.window(), 3600);
    }
}
