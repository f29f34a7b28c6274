//! The state machine (draft-ietf-ccwg-bbr-06 §5.3): Startup and its exits,
//! Drain, ProbeBW's DOWN / CRUISE / REFILL / UP cycle, ProbeRTT, and the
//! restart from idle (§5.4).

use std::time::{Duration, Instant};

use super::*;

impl Bbr3 {
    /// Enter `state` with the gains of the §5.6.1 table.
    fn set_state(&mut self, state: Bbr3State) {
        use Bbr3State::*;
        let (pacing, cwnd) = match state {
            Startup => (STARTUP_PACING_GAIN, DEFAULT_CWND_GAIN),
            Drain => (DRAIN_PACING_GAIN, DEFAULT_CWND_GAIN),
            ProbeBwDown => (DOWN_PACING_GAIN, DEFAULT_CWND_GAIN),
            ProbeBwCruise | ProbeBwRefill => (1.0, DEFAULT_CWND_GAIN),
            ProbeBwUp => (UP_PACING_GAIN, UP_CWND_GAIN),
            ProbeRtt => (1.0, PROBE_RTT_CWND_GAIN),
        };
        self.state = state;
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }

    /// §5.3.1.2 `ResetFullBW`.
    fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// §5.3.1.2 `CheckFullBWReached`: three rounds without 25% growth of the
    /// delivery rate make a plateau. ACKs without a rate sample carry no
    /// evidence either way and are skipped.
    pub(super) fn check_full_bw_reached(&mut self, rs: &Rs) {
        if self.full_bw_now || !self.round_start || rs.is_app_limited || rs.delivery_rate == 0 {
            return;
        }
        if rs.delivery_rate as f64 >= self.full_bw as f64 * FULL_BW_GROWTH {
            self.reset_full_bw();
            self.full_bw = rs.delivery_rate;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= FULL_BW_ROUNDS;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    /// §5.3.1 `CheckStartupDone`.
    pub(super) fn check_startup_done(&mut self, rs: &Rs) {
        self.check_startup_high_loss(rs);
        if self.state == Bbr3State::Startup && self.full_bw_reached {
            self.enter_drain();
        }
    }

    /// §5.3.1.3 `CheckStartupHighLoss`, judged at the end of each loss round:
    /// in recovery for a full round, at least six loss events in the round,
    /// and the sampled packet saw more than 2% of its flight lost. The safe
    /// inflight is then max(BDP, what the last round delivered).
    fn check_startup_high_loss(&mut self, rs: &Rs) {
        if !self.loss_round_start {
            return;
        }
        let events = std::mem::take(&mut self.loss_events_in_round);
        if self.full_bw_reached || self.state != Bbr3State::Startup {
            return;
        }
        let recovery_round = self.recovery_start.is_some() && self.round_count > self.recovery_round;
        let too_high = rs.tx_in_flight.is_some_and(|tx| Self::is_inflight_too_high(rs.lost, tx));
        if recovery_round && events >= STARTUP_FULL_LOSS_COUNT && too_high {
            self.full_bw_reached = true;
            let bdp = self.bdp(self.max_bw.get()).unwrap_or(0);
            self.inflight_longterm = bdp.max(self.inflight_latest);
        }
    }

    /// §5.3.1 `EnterStartup`.
    fn enter_startup(&mut self) {
        self.set_state(Bbr3State::Startup);
    }

    /// §5.3.2 `EnterDrain`.
    fn enter_drain(&mut self) {
        self.set_state(Bbr3State::Drain);
        self.drain_start_round = self.round_count;
    }

    /// §5.3.2 `CheckDrainDone`: the queue is gone, or three rounds passed.
    pub(super) fn check_drain_done(&mut self, now: Instant, inflight: u64) {
        if self.state != Bbr3State::Drain {
            return;
        }
        let drained = inflight <= self.inflight(self.bw, 1.0);
        if drained || self.round_count > self.drain_start_round + 3 {
            self.enter_probe_bw(now);
        }
    }

    /// §5.3.3.6 `EnterProbeBW`.
    fn enter_probe_bw(&mut self, now: Instant) {
        self.start_probe_bw_down(now);
    }

    /// §5.3.3.6 `StartProbeBW_DOWN`: a new cycle, with a new random wait.
    pub(super) fn start_probe_bw_down(&mut self, now: Instant) {
        self.reset_congestion_signals();
        self.probe_up_acked_per_inc = INF;
        self.pick_probe_wait();
        self.cycle_stamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        self.set_state(Bbr3State::ProbeBwDown);
    }

    /// §5.3.3.6 `StartProbeBW_CRUISE`.
    fn start_probe_bw_cruise(&mut self) {
        self.set_state(Bbr3State::ProbeBwCruise);
    }

    /// §5.3.3.6 `StartProbeBW_REFILL`: forget the short-term model and send
    /// at the estimated bandwidth for one round.
    fn start_probe_bw_refill(&mut self) {
        self.reset_short_term_model();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acked = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        self.set_state(Bbr3State::ProbeBwRefill);
    }

    /// §5.3.3.6 `StartProbeBW_UP`.
    fn start_probe_bw_up(&mut self, rs: &Rs) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.reset_full_bw();
        self.full_bw = rs.delivery_rate;
        self.set_state(Bbr3State::ProbeBwUp);
        self.raise_inflight_longterm_slope();
    }

    /// §5.3.3.6 `UpdateProbeBWCyclePhase`.
    pub(super) fn update_probe_bw_cycle_phase(&mut self, now: Instant, rs: &Rs, inflight: u64) {
        if !self.full_bw_reached || self.adapt_long_term_model(rs) {
            return;
        }
        let state = self.state;
        match state {
            Bbr3State::ProbeBwDown if !self.is_time_to_probe_bw(now) && self.is_time_to_cruise(inflight) => {
                self.start_probe_bw_cruise();
            }
            Bbr3State::ProbeBwCruise => {
                self.is_time_to_probe_bw(now);
            }
            Bbr3State::ProbeBwRefill if self.round_start => {
                self.is_bw_probe_sample = true;
                self.start_probe_bw_up(rs);
            }
            Bbr3State::ProbeBwUp if self.is_time_to_go_down(rs, inflight) => {
                self.prev_probe_too_high = false;
                self.start_probe_bw_down(now);
            }
            _ => {}
        }
    }

    /// §5.3.3.5 `IsTimeToProbeBW`: the random 2-3 s wait is over, or the
    /// Reno-coexistence round bound is reached; if so, start REFILL.
    fn is_time_to_probe_bw(&mut self, now: Instant) -> bool {
        let waited = now > self.cycle_stamp + self.bw_probe_wait;
        if waited || self.is_reno_coexistence_probe_time() {
            self.start_probe_bw_refill();
            return true;
        }
        false
    }

    /// §5.3.3.5 `PickProbeWait`: 0 or 1 extra round, 2 s plus up to 1 s.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe_up = self.next_random() % 2;
        self.bw_probe_wait = Duration::from_secs(2) + Duration::from_secs_f64(self.random_unit());
    }

    /// §5.3.3.5 `IsRenoCoexistenceProbeTime`: probe no less often than Reno
    /// would refill the BDP, one packet per round, capped at 63 rounds. The
    /// draft's pseudocode compares rounds with `TargetInflight()` in bytes;
    /// the round count Reno needs is that volume in packets.
    fn is_reno_coexistence_probe_time(&self) -> bool {
        let reno_rounds = self.target_inflight() / self.mss;
        self.rounds_since_probe_up >= reno_rounds.min(RENO_ROUNDS_BOUND)
    }

    /// §5.3.3.6 `IsTimeToCruise`: inflight is below both the headroom target
    /// and the BDP.
    fn is_time_to_cruise(&self, inflight: u64) -> bool {
        inflight <= self.inflight_with_headroom() && inflight <= self.inflight(self.max_bw.get(), 1.0)
    }

    /// §5.3.3.6 `IsTimeToGoDown`.
    fn is_time_to_go_down(&mut self, rs: &Rs, inflight: u64) -> bool {
        if self.prev_probe_too_high && inflight >= self.inflight_longterm {
            // Precautionary probing: stop at the level that lost too much last time.
            self.prev_probe_precautionary = true;
            return true;
        }
        if self.is_cwnd_limited() && self.cwnd >= self.inflight_longterm {
            // inflight_longterm, not the path, limits the rate: no plateau yet.
            self.reset_full_bw();
            self.full_bw = rs.delivery_rate;
            return false;
        }
        self.full_bw_now
    }

    /// §5.3.3.6 `RaiseInflightLongtermSlope`: grow by 1, 2, 4, ... packets
    /// per round, spread over the round's ACKs.
    fn raise_inflight_longterm_slope(&mut self) {
        let growth = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.probe_up_acked_per_inc = (self.cwnd / growth).max(self.mss);
    }

    /// §5.3.3.6 `ProbeInflightLongtermUpward`.
    fn probe_inflight_longterm_upward(&mut self, rs: &Rs) {
        if !self.is_cwnd_limited() || self.cwnd < self.inflight_longterm {
            return;
        }
        self.bw_probe_up_acked = self.bw_probe_up_acked.saturating_add(rs.newly_acked);
        if self.bw_probe_up_acked >= self.probe_up_acked_per_inc {
            let delta = self.bw_probe_up_acked / self.probe_up_acked_per_inc;
            self.bw_probe_up_acked -= delta * self.probe_up_acked_per_inc;
            self.inflight_longterm = self.inflight_longterm.saturating_add(delta * self.mss);
        }
        if self.round_start {
            self.raise_inflight_longterm_slope();
        }
    }

    /// §5.3.3.6 `AdaptLongTermModel`: follow the ACK phase (the max_bw filter
    /// advances one round after a probe ends) and raise `inflight_longterm`
    /// while the loss rate stays below 2%. Returns whether it changed state.
    fn adapt_long_term_model(&mut self, rs: &Rs) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.is_bw_probe_sample = false;
            self.ack_phase = AckPhase::Init;
            if self.state.is_probe_bw() && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            if self.state.is_probe_bw() && self.prev_probe_precautionary && !self.prev_probe_too_high {
                self.start_probe_bw_refill();
                return true;
            }
        }
        let too_high = rs.tx_in_flight.is_some_and(|tx| Self::is_inflight_too_high(rs.lost, tx));
        if too_high || self.inflight_longterm == INF {
            return false;
        }
        if let Some(tx) = rs.tx_in_flight {
            self.inflight_longterm = self.inflight_longterm.max(tx);
        }
        if self.state == Bbr3State::ProbeBwUp {
            self.probe_inflight_longterm_upward(rs);
        }
        false
    }

    /// §5.3.4.4 `CheckProbeRTT`: enter ProbeRTT when the 5 s min RTT expired.
    pub(super) fn check_probe_rtt(&mut self, now: Instant, rs: &Rs, inflight: u64) {
        if self.state != Bbr3State::ProbeRtt && self.probe_rtt_expired && !self.idle_restart {
            self.save_cwnd();
            self.set_state(Bbr3State::ProbeRtt);
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
        }
        if self.state == Bbr3State::ProbeRtt {
            self.handle_probe_rtt(now, inflight);
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// §5.3.4.4 `HandleProbeRTT`: once inflight is down to half the BDP, hold
    /// it for 200 ms and at least one round. Samples taken meanwhile are
    /// marked app-limited (`MarkConnectionAppLimited`) so they cannot lower
    /// max_bw.
    fn handle_probe_rtt(&mut self, now: Instant, inflight: u64) {
        self.app_limited_until = self.delivered.saturating_add(inflight).max(1);
        match self.probe_rtt_done_stamp {
            None if inflight <= self.probe_rtt_cwnd() => {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.start_round();
            }
            None => {}
            Some(_) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now);
                }
            }
        }
    }

    /// §5.3.4.4 `CheckProbeRTTDone`: schedule the next ProbeRTT 5 s from now.
    fn check_probe_rtt_done(&mut self, now: Instant) {
        if self.probe_rtt_done_stamp.is_some_and(|d| now > d) {
            self.probe_rtt_min_stamp = now;
            self.restore_cwnd();
            self.exit_probe_rtt(now);
        }
    }

    /// §5.3.4.5 `ExitProbeRTT`: inflight is already below the BDP, so ProbeBW
    /// resumes in CRUISE, with a fresh cycle clock.
    fn exit_probe_rtt(&mut self, now: Instant) {
        self.reset_short_term_model();
        self.probe_rtt_done_stamp = None;
        if self.full_bw_reached {
            self.start_probe_bw_down(now);
            self.start_probe_bw_cruise();
        } else {
            self.enter_startup();
        }
    }

    /// §5.4.1 `HandleRestartFromIdle`, run for the packet that ends an idle
    /// period: pace at exactly bw, or finish a ProbeRTT that idled through.
    pub(super) fn handle_restart_from_idle(&mut self, now: Instant) {
        self.idle_restart = true;
        self.extra_acked_interval_start = now;
        if self.state.is_probe_bw() {
            self.set_pacing_rate_with_gain(1.0);
        } else if self.state == Bbr3State::ProbeRtt {
            self.check_probe_rtt_done(now);
        }
    }
}
