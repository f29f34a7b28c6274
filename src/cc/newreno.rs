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
        CcMetrics {
            ssthresh: (self.ssthresh != usize::MAX).then_some(self.ssthresh),
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
