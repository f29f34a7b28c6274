//! Per-path recovery state: RTT, congestion controller, pacer, bytes in
//! flight, PTO backoff and delivery-rate bookkeeping, plus the loss-detection
//! timer of RFC 9002 §6.2 over the path's packet number spaces.

use std::time::{Duration, Instant};

use super::{HandshakeStatus, PacketFate, PacketSpace, SentPacket, SpaceKind};
use crate::cc::{CcParams, CongestionController, PathView};
use crate::pacer::Pacer;
use crate::rtt::{RttEstimator, GRANULARITY};
use crate::PathId;

/// Largest PTO backoff exponent; keeps timer arithmetic from overflowing
/// (2^16 PTOs is hours, far beyond any idle timeout).
const MAX_BACKOFF_EXP: u32 = 16;

/// Default max_ack_delay until the peer's transport parameter is known
/// (RFC 9000 §18.2).
pub(super) const DEFAULT_MAX_ACK_DELAY: Duration = Duration::from_millis(25);

/// What [`PathRecovery::on_loss_detection_timeout`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutAction {
    /// The timer had not expired (or was not armed): nothing happened.
    None,
    /// Packets of this space were declared lost by the time threshold and
    /// handed back; retransmit their data.
    Lost(SpaceKind),
    /// A PTO expired: send `packets` (1 or 2) ack-eliciting probe packets in
    /// `space`, bypassing the congestion window (RFC 9002 §6.2.4).
    Probe {
        /// The space the probes go in.
        space: SpaceKind,
        /// How many probes to send.
        packets: u8,
    },
}

/// Which timer is earliest.
enum Timer {
    /// Time-threshold loss in the space at this index of the slice.
    Loss(usize),
    /// Probe timeout, with the space for the probes and how many to send.
    Pto(SpaceKind, u8),
}

/// Recovery state of one path.
#[derive(Debug)]
pub struct PathRecovery {
    pub(super) id: PathId,
    pub(super) rtt: RttEstimator,
    pub(super) cc: Box<dyn CongestionController>,
    pub(super) bytes_in_flight: usize,
    pub(super) pto_count: u32,
    pub(super) max_ack_delay: Duration,
    pub(super) pacer: Pacer,
    /// When the first RTT sample was taken (persistent congestion, §7.6.2).
    pub(super) first_rtt_sample: Option<Instant>,
    /// Last send, ACK or timeout: the anti-deadlock PTO runs from here.
    pub(super) timer_anchor: Option<Instant>,
    // Delivery-rate estimation (draft-ietf-ccwg-bbr §4.5.2).
    pub(super) delivered: u64,
    pub(super) delivered_time: Instant,
    pub(super) first_sent_time: Instant,
    /// End of the current app-limited "bubble" in delivered bytes, 0 = none.
    pub(super) app_limited: u64,
    pub(super) lost: u64,
}

impl PathRecovery {
    /// Recovery for a new path. `cc` is the path's controller (built from
    /// `params`), `initial_rtt` is RFC 9002's 333 ms unless configured, and
    /// the pacer's burst allowance is the initial window.
    pub fn new(params: CcParams, cc: Box<dyn CongestionController>, initial_rtt: Duration) -> Self {
        let burst = params.initial_window.max(2 * params.mss);
        Self {
            id: params.path_id,
            rtt: RttEstimator::new(initial_rtt),
            cc,
            bytes_in_flight: 0,
            pto_count: 0,
            max_ack_delay: DEFAULT_MAX_ACK_DELAY,
            pacer: Pacer::new(burst, params.now),
            first_rtt_sample: None,
            timer_anchor: None,
            delivered: 0,
            delivered_time: params.now,
            first_sent_time: params.now,
            app_limited: 0,
            lost: 0,
        }
    }

    /// The peer moved to a new IP address (RFC 9000 §9.4): a fresh
    /// controller and RTT estimate; packets in flight stay tracked.
    pub fn restart_on_new_address(&mut self, cc: Box<dyn CongestionController>, initial_rtt: Duration) {
        self.cc = cc;
        self.rtt = RttEstimator::new(initial_rtt);
        self.first_rtt_sample = None;
        self.pto_count = 0;
    }

    /// Set the peer's max_ack_delay transport parameter.
    pub fn set_max_ack_delay(&mut self, d: Duration) {
        self.max_ack_delay = d;
    }

    /// The peer's max_ack_delay in use.
    pub fn max_ack_delay(&self) -> Duration {
        self.max_ack_delay
    }

    /// The path this state belongs to.
    pub fn id(&self) -> PathId {
        self.id
    }

    /// The path's RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Mutable RTT estimator (e.g. to seed it from a previous path).
    pub fn rtt_mut(&mut self) -> &mut RttEstimator {
        &mut self.rtt
    }

    /// The path's congestion controller.
    pub fn cc(&self) -> &dyn CongestionController {
        &*self.cc
    }

    /// Mutable access to the controller.
    pub fn cc_mut(&mut self) -> &mut dyn CongestionController {
        &mut *self.cc
    }

    /// The path's pacer.
    pub fn pacer(&self) -> &Pacer {
        &self.pacer
    }

    /// Mutable pacer (e.g. to change its burst allowance).
    pub fn pacer_mut(&mut self) -> &mut Pacer {
        &mut self.pacer
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> usize {
        self.cc.window()
    }

    /// Bytes in flight on this path, all its spaces together.
    pub fn bytes_in_flight(&self) -> usize {
        self.bytes_in_flight
    }

    /// Consecutive PTOs without an ACK.
    pub fn pto_count(&self) -> u32 {
        self.pto_count
    }

    /// Total bytes delivered (acked, in-flight packets only) on this path.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// The peer reported new ECN-CE marks in an ACK whose newest
    /// acknowledged packet was sent at `largest_acked_sent`: a congestion
    /// event for the controller ([`CongestionController::on_ecn_ce`]).
    pub fn on_ecn_ce(&mut self, now: Instant, largest_acked_sent: Instant, paths: &[PathView]) {
        let ev = crate::cc::LossEvent {
            now,
            largest_lost_sent: largest_acked_sent,
            lost_bytes: 0,
            lost_packets: 0,
            bytes_in_flight: self.bytes_in_flight,
            persistent_congestion: false,
        };
        self.cc.on_ecn_ce(&ev, &self.rtt, paths);
    }

    /// Total bytes declared lost on this path.
    pub fn lost_bytes(&self) -> u64 {
        self.lost
    }

    /// Whether a packet of `bytes` fits in the congestion window. Probes and
    /// ACK-only packets are not subject to it.
    pub fn can_send(&self, bytes: usize) -> bool {
        self.bytes_in_flight.saturating_add(bytes) <= self.cc.window()
    }

    /// Pacing rate in bytes/s: the controller's, else 1.25·cwnd/srtt
    /// (RFC 9002 §7.7).
    pub fn pacing_rate(&self) -> u64 {
        if let Some(r) = self.cc.pacing_rate() {
            return r;
        }
        let srtt = self.rtt.smoothed().as_nanos().max(1);
        let r = self.cc.window() as u128 * 5 * 1_000_000_000 / (4 * srtt);
        r.min(u64::MAX as u128) as u64
    }

    /// When the packets built so far may leave under pacing (the last one's
    /// release time); `None` = now. Refreshes the pacer's rate from
    /// [`pacing_rate`](Self::pacing_rate).
    pub fn next_send_time(&mut self, now: Instant) -> Option<Instant> {
        let rate = self.pacing_rate();
        self.pacer.set_rate(now, rate);
        self.pacer.release_time(now)
    }

    /// Bring the pacer's rate up to date with the window and RTT, after an
    /// ACK. The rate is otherwise refreshed only when a packet is sent, and
    /// a path its pacer holds at a stale rate may not send for long: a new
    /// path's first flight is charged at the 333 ms initial RTT's rate, and
    /// a slow-starting window doubles each round trip while the scheduler
    /// passes the path over. Called at every path's first RTT sample and at
    /// every ACK of window-based controllers (1.25·cwnd/srtt); the BBR
    /// family's own rates are left to the send-time refresh, as refreshing
    /// them on ACK moved the deterministic coupled-bbr-against-bbr run (sim
    /// `coupled_bbr_keeps_disjoint_bottlenecks_apart`) from 83.6 to 76.3
    /// Mbit/s, below its bound, for reasons not yet looked into.
    pub(super) fn refresh_pacing_rate(&mut self, now: Instant) {
        let rate = self.pacing_rate();
        self.pacer.set_rate(now, rate);
    }

    /// The sender had nothing to send although the window allowed it: open
    /// an app-limited bubble for delivery-rate sampling (BBR draft §4.5.2.3)
    /// and tell the controller.
    pub fn on_app_limited(&mut self) {
        self.app_limited = (self.delivered + self.bytes_in_flight as u64).max(1);
        self.cc.on_app_limited(self.bytes_in_flight);
    }

    /// Packets sent now are marked app-limited (the bubble is open).
    pub fn is_app_limited(&self) -> bool {
        self.app_limited != 0
    }

    /// This path's facts for controllers and schedulers; `active` is the
    /// connection's verdict (validated, not abandoned, not backup-only).
    pub fn view(&self, active: bool) -> PathView {
        let cwnd = self.cc.window();
        let srtt = self.rtt.smoothed();
        let bandwidth = self.cc.bandwidth_estimate().unwrap_or_else(|| {
            let ns = srtt.as_nanos().max(1);
            (cwnd as u128 * 1_000_000_000 / ns).min(u64::MAX as u128) as u64
        });
        PathView {
            id: self.id,
            cwnd,
            bytes_in_flight: self.bytes_in_flight,
            srtt,
            min_rtt: self.rtt.min(),
            bandwidth,
            pacing_rate: self.cc.pacing_rate(),
            in_slow_start: self.cc.in_slow_start(),
            active,
            group: self.id.0,
            probe_phase: self.cc.probe_phase(),
            probe_rtt: self.cc.in_probe_rtt(),
            delivered: self.delivered,
            lost: self.lost,
        }
    }

    /// PTO period for a space without backoff (RFC 9002 §6.2.1):
    /// srtt + max(4·rttvar, 1 ms), plus max_ack_delay for application data.
    pub fn pto_period(&self, kind: SpaceKind) -> Duration {
        let base = self.rtt.pto_base();
        match kind {
            SpaceKind::Data => base + self.max_ack_delay,
            _ => base,
        }
    }

    /// Persistent congestion duration (RFC 9002 §7.6.1).
    pub fn persistent_congestion_duration(&self) -> Duration {
        (self.rtt.smoothed() + (self.rtt.var() * 4).max(GRANULARITY) + self.max_ack_delay)
            * super::PERSISTENT_CONGESTION_THRESHOLD
    }

    /// Record a packet being sent: fill its delivery-rate fields, count it in
    /// flight and charge the pacer. Called by [`PacketSpace::on_packet_sent`].
    pub(super) fn on_sent<T>(&mut self, pkt: &mut SentPacket<T>) {
        let now = pkt.time_sent;
        self.timer_anchor = Some(now);
        if !pkt.in_flight {
            return;
        }
        if self.bytes_in_flight == 0 {
            // Start of a new flight: the sample interval restarts here.
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        pkt.first_sent_time = self.first_sent_time;
        pkt.delivered_time = self.delivered_time;
        pkt.delivered = self.delivered;
        pkt.is_app_limited = self.app_limited != 0;
        self.bytes_in_flight += pkt.size;
        pkt.tx_in_flight = self.bytes_in_flight;
        self.cc.on_packet_sent(now, pkt.size, self.bytes_in_flight);
        let rate = self.pacing_rate();
        self.pacer.set_rate(now, rate);
        self.pacer.on_sent(now, pkt.size);
        pkt.released = self.pacer.release_time(now).unwrap_or(now);
    }

    /// Backoff multiplier 2^pto_count, capped.
    fn backoff(&self) -> u32 {
        1u32 << self.pto_count.min(MAX_BACKOFF_EXP)
    }

    /// Earliest timer among `spaces` (RFC 9002 A.8 SetLossDetectionTimer).
    fn timer<T>(&self, spaces: &[&PacketSpace<T>], hs: &HandshakeStatus) -> Option<(Instant, Timer)> {
        let mut earliest: Option<(Instant, usize)> = None;
        for (i, s) in spaces.iter().enumerate() {
            if let Some(t) = s.loss_time() {
                if earliest.is_none_or(|(e, _)| t < e) {
                    earliest = Some((t, i));
                }
            }
        }
        if let Some((t, i)) = earliest {
            return Some((t, Timer::Loss(i)));
        }
        if hs.amplification_limited {
            return None;
        }
        let any_ack_eliciting = spaces.iter().any(|s| s.ack_eliciting_in_flight() > 0);
        if !any_ack_eliciting && hs.peer_completed_address_validation {
            return None;
        }
        let backoff = self.backoff();
        let duration = self.rtt.pto_base() * backoff;
        if !any_ack_eliciting {
            // Anti-deadlock probe of a client whose address is not yet
            // validated (RFC 9002 §6.2.2.1); only meaningful with a space
            // to probe in.
            if !hs.is_client || !spaces.iter().any(|s| s.kind() != SpaceKind::Data) {
                return None;
            }
            let space = if hs.has_handshake_keys { SpaceKind::Handshake } else { SpaceKind::Initial };
            let t = self.timer_anchor?.checked_add(duration)?;
            return Some((t, Timer::Pto(space, 1)));
        }
        let mut best: Option<(Instant, SpaceKind)> = None;
        for s in spaces {
            if s.ack_eliciting_in_flight() == 0 {
                continue;
            }
            let mut d = duration;
            if s.kind() == SpaceKind::Data {
                if !hs.handshake_confirmed {
                    break;
                }
                d += self.max_ack_delay * backoff;
            }
            let Some(t) = s.time_of_last_ack_eliciting().and_then(|l| l.checked_add(d)) else {
                continue;
            };
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, s.kind()));
            }
        }
        best.map(|(t, k)| (t, Timer::Pto(k, 2)))
    }

    /// When the loss-detection timer of this path fires (RFC 9002 §6.2,
    /// A.8): the earliest time-threshold loss time, else the PTO. `spaces`
    /// are this path's spaces in order Initial, Handshake, Data (only those
    /// still present). `None` = not armed.
    pub fn loss_detection_timer<T>(
        &self,
        spaces: &[&PacketSpace<T>],
        hs: &HandshakeStatus,
    ) -> Option<Instant> {
        self.timer(spaces, hs).map(|(t, _)| t)
    }

    /// Handle the loss-detection timer (RFC 9002 A.9). Call when `now` has
    /// reached [`loss_detection_timer`](Self::loss_detection_timer); an early
    /// call does nothing. Lost packets go to `on_packet`.
    pub fn on_loss_detection_timeout<T, F>(
        &mut self,
        spaces: &mut [&mut PacketSpace<T>],
        now: Instant,
        hs: &HandshakeStatus,
        paths: &[PathView],
        mut on_packet: F,
    ) -> TimeoutAction
    where
        F: FnMut(PacketFate, SentPacket<T>),
    {
        // Reborrow immutably without allocating; a path has at most three
        // spaces (Initial, Handshake, Data).
        let timer = {
            match spaces.len() {
                0 => None,
                1 => self.timer(&[&*spaces[0]], hs),
                2 => self.timer(&[&*spaces[0], &*spaces[1]], hs),
                _ => self.timer(&[&*spaces[0], &*spaces[1], &*spaces[2]], hs),
            }
        };
        let Some((t, timer)) = timer else {
            return TimeoutAction::None;
        };
        if now < t {
            return TimeoutAction::None;
        }
        match timer {
            Timer::Loss(i) => {
                let Some(space) = spaces.get_mut(i) else {
                    return TimeoutAction::None;
                };
                let kind = space.kind();
                space.detect_lost(self, now, paths, &mut on_packet);
                self.timer_anchor = Some(now);
                TimeoutAction::Lost(kind)
            }
            Timer::Pto(space, packets) => {
                self.pto_count = self.pto_count.saturating_add(1);
                self.timer_anchor = Some(now);
                TimeoutAction::Probe { space, packets }
            }
        }
    }
}
