//! The path model (draft-ietf-ccwg-bbr-06 §5.5): round counting, max_bw,
//! min_rtt, extra_acked, and the loss-driven inflight/bandwidth bounds.

use std::time::Instant;

use super::{Bbr3, Bbr3State, Rs, BETA, INF, LOSS_THRESH, MIN_RTT_FILTER_LEN, PROBE_RTT_INTERVAL};
use crate::cc::LossEvent;

/// Most loss events counted per round (a saturating counter).
const MAX_LOSS_EVENTS: u32 = 0xff;

impl Bbr3 {
    /// §5.2.3 `UpdateModelAndState`, in the draft's order.
    pub(super) fn update_model_and_state(&mut self, now: Instant, rs: &Rs, inflight: u64) {
        self.update_latest_delivery_signals(rs);
        self.update_congestion_signals(rs);
        self.update_ack_aggregation(now, rs);
        self.check_full_bw_reached(rs);
        self.check_startup_done(rs);
        self.check_drain_done(now, inflight);
        self.update_probe_bw_cycle_phase(now, rs, inflight);
        self.update_min_rtt(now, rs);
        self.check_probe_rtt(now, rs, inflight);
        self.advance_latest_delivery_signals(rs);
        self.bound_bw_for_model();
    }

    /// §5.5.1 `StartRound`: the round ends when data sent from now is acked.
    pub(super) fn start_round(&mut self) {
        self.next_round_delivered = self.delivered;
    }

    /// §5.5.1 `UpdateRound`. Also rolls the cwnd-limited flag over, so
    /// `is_cwnd_limited` looks at this round and the last one.
    fn update_round(&mut self, rs: &Rs) {
        self.round_start = false;
        let Some(prior) = rs.prior_delivered else { return };
        if prior >= self.next_round_delivered {
            self.start_round();
            self.round_count += 1;
            self.rounds_since_probe_up += 1;
            self.round_start = true;
            self.cwnd_limited_prev = self.cwnd_limited_now;
            self.cwnd_limited_now = false;
        }
    }

    /// §5.5.4 `UpdateMaxBw`: app-limited samples count only when they raise
    /// the max, since they show the application's rate, not the path's.
    fn update_max_bw(&mut self, rs: &Rs) {
        self.update_round(rs);
        let bw = rs.delivery_rate;
        if bw > 0 && (bw >= self.max_bw.get() || !rs.is_app_limited) {
            self.max_bw.update(self.cycle_count, bw);
        }
    }

    /// §5.5.5 `AdvanceMaxBwFilter`: one ProbeBW cycle has passed.
    pub(super) fn advance_max_bw_filter(&mut self) {
        self.cycle_count += 1;
        self.max_bw.expire(self.cycle_count);
    }

    /// §5.5.10.3 `UpdateLatestDeliverySignals`.
    fn update_latest_delivery_signals(&mut self, rs: &Rs) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(rs.delivery_rate);
        self.inflight_latest = self.inflight_latest.max(rs.delivered);
        if rs.prior_delivered.is_some_and(|p| p >= self.loss_round_delivered) {
            self.loss_round_delivered = self.delivered;
            self.loss_round_start = true;
        }
    }

    /// §5.5.10.3 `AdvanceLatestDeliverySignals`.
    fn advance_latest_delivery_signals(&mut self, rs: &Rs) {
        if self.loss_round_start {
            self.bw_latest = rs.delivery_rate;
            self.inflight_latest = rs.delivered;
        }
    }

    /// §5.5.10.3 `ResetCongestionSignals`.
    pub(super) fn reset_congestion_signals(&mut self) {
        self.is_loss_in_round = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// §5.5.10.3 `UpdateCongestionSignals`: once per loss round, adapt the
    /// short-term model to the loss seen in it.
    fn update_congestion_signals(&mut self, rs: &Rs) {
        self.update_max_bw(rs);
        if !self.loss_round_start {
            return;
        }
        if !self.is_probing_bw() && self.is_loss_in_round {
            self.init_lower_bounds();
            self.loss_lower_bounds();
        }
        self.is_loss_in_round = false;
    }

    /// §5.3.3.6 `IsProbingBW`.
    fn is_probing_bw(&self) -> bool {
        matches!(self.state, Bbr3State::Startup | Bbr3State::ProbeBwRefill | Bbr3State::ProbeBwUp)
    }

    /// §5.5.10.3 `InitLowerBounds`: the first lossy round of a cycle starts
    /// the short-term model from the long-term one.
    fn init_lower_bounds(&mut self) {
        if self.bw_shortterm == INF {
            self.bw_shortterm = self.max_bw.get();
        }
        if self.inflight_shortterm == INF {
            self.inflight_shortterm = self.cwnd;
        }
    }

    /// §5.5.10.3 `LossLowerBounds`: cut by at most β per lossy round, never
    /// below what the last round delivered.
    fn loss_lower_bounds(&mut self) {
        let bw = (BETA * self.bw_shortterm as f64) as u64;
        self.bw_shortterm = self.bw_latest.max(bw);
        let inflight = (BETA * self.inflight_shortterm as f64) as u64;
        self.inflight_shortterm = self.inflight_latest.max(inflight);
    }

    /// §5.5.10.3 `ResetShortTermModel`.
    pub(super) fn reset_short_term_model(&mut self) {
        self.bw_shortterm = INF;
        self.inflight_shortterm = INF;
    }

    /// §5.5.10.3 `BoundBWForModel`.
    fn bound_bw_for_model(&mut self) {
        self.bw = self.max_bw.get().min(self.bw_shortterm);
    }

    /// §5.5.9 `UpdateACKAggregation`: data acked beyond what `bw` explains
    /// since the aggregation episode began, max-filtered over 10 rounds (one
    /// in Startup).
    fn update_ack_aggregation(&mut self, now: Instant, rs: &Rs) {
        let interval = now.saturating_duration_since(self.extra_acked_interval_start);
        let mut expected = (self.bw as f64 * interval.as_secs_f64()) as u64;
        if self.extra_acked_delivered <= expected {
            self.extra_acked_delivered = 0;
            self.extra_acked_interval_start = now;
            expected = 0;
        }
        self.extra_acked_delivered = self.extra_acked_delivered.saturating_add(rs.newly_acked);
        let extra = self.extra_acked_delivered.saturating_sub(expected).min(self.cwnd);
        self.extra_acked_startup.update(self.round_count, extra);
        self.extra_acked_steady.update(self.round_count, extra);
    }

    /// §5.3.4.3 `UpdateMinRTT`: `probe_rtt_min_delay` is the 5 s min that
    /// schedules ProbeRTT; `min_rtt` the 10 s min the model uses.
    fn update_min_rtt(&mut self, now: Instant, rs: &Rs) {
        self.probe_rtt_expired = now > self.probe_rtt_min_stamp + PROBE_RTT_INTERVAL;
        if let Some(rtt) = rs.rtt {
            if self.probe_rtt_min_delay.is_none_or(|d| rtt < d) || self.probe_rtt_expired {
                self.probe_rtt_min_delay = Some(rtt);
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired = now > self.min_rtt_stamp + MIN_RTT_FILTER_LEN;
        if let Some(d) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|m| d < m) || min_rtt_expired {
                self.min_rtt = Some(d);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
    }

    /// §5.5.10.2 `IsInflightTooHigh`: more than 2% of what was in flight
    /// when the sampled packet left was lost since (QUIC has selective ACKs).
    pub(super) fn is_inflight_too_high(lost: u64, tx_in_flight: u64) -> bool {
        lost as f64 > tx_in_flight as f64 * LOSS_THRESH
    }

    /// Packets were declared lost: open a recovery period if this is a new
    /// congestion event (RFC 9002 §7.3.2), note the loss for the round
    /// (§5.5.10.2 `NoteLoss`), and judge the newest lost packet if it was
    /// sent while probing (`HandleLostPacket`).
    pub(super) fn handle_loss(&mut self, ev: &LossEvent) {
        if self.recovery_start.is_none() {
            self.recovery_round = self.round_count;
        }
        if self.recovery_start.is_none_or(|s| ev.largest_lost_sent > s) {
            self.save_cwnd();
            self.recovery_start = Some(ev.now);
        }
        self.lost = self.lost.saturating_add(ev.lost_bytes as u64);
        self.loss_events_in_round = (self.loss_events_in_round + 1).min(MAX_LOSS_EVENTS);
        if !self.is_loss_in_round {
            self.loss_round_delivered = self.delivered;
        }
        self.is_loss_in_round = true;
        if ev.persistent_congestion {
            // RFC 9002 §7.6 is QUIC's RTO: §5.6.4.4 `OnEnterRTO`.
            self.cwnd = (ev.bytes_in_flight as u64).saturating_add(self.mss);
        }
        if !self.is_bw_probe_sample {
            return;
        }
        let Some(p) = self.log.find(ev.largest_lost_sent) else { return };
        let lost = self.lost.saturating_sub(p.lost);
        if Self::is_inflight_too_high(lost, p.tx_in_flight) {
            let at_loss = inflight_at_loss(p.size, p.tx_in_flight, lost);
            self.handle_inflight_too_high(ev.now, at_loss, p.app_limited);
        }
    }

    /// §5.5.10.2 `HandleInflightTooHigh`: remember the inflight that lost too
    /// much as the long-term bound, and stop probing.
    pub(super) fn handle_inflight_too_high(&mut self, now: Instant, tx_in_flight: u64, app_limited: bool) {
        self.prev_probe_too_high = true;
        self.is_bw_probe_sample = false;
        if !app_limited {
            let floor = (self.target_inflight() as f64 * BETA) as u64;
            self.inflight_longterm = tx_in_flight.max(floor);
        }
        if self.state == Bbr3State::ProbeBwUp {
            self.start_probe_bw_down(now);
        }
    }
}

/// §5.5.10.2 `InflightAtLoss`: the inflight at which the loss rate crossed
/// 2%, solving (lost_prev + x) / (inflight_prev + x) = LossThresh for the
/// prefix x of the packet that was lost.
pub(super) fn inflight_at_loss(size: u64, tx_in_flight: u64, lost: u64) -> u64 {
    let inflight_prev = tx_in_flight.saturating_sub(size) as f64;
    let lost_prev = lost.saturating_sub(size) as f64;
    let lost_prefix = (LOSS_THRESH * inflight_prev - lost_prev) / (1.0 - LOSS_THRESH);
    (inflight_prev + lost_prefix).max(0.0) as u64
}
