//! The sent packets of one packet number space and the ACK processing and
//! loss detection over them (RFC 9002 §5.1, §6.1, §7.6, A.7).

use std::collections::VecDeque;
use std::ops::Range;
use std::time::{Duration, Instant};

use super::{HandshakeStatus, PacketFate, PathRecovery, SentPacket, SpaceKind, PACKET_THRESHOLD};
use crate::cc::{AckEvent, LossEvent, PathView, RateSample};
use crate::error::TransportError;
use crate::ranges::RangeSet;

/// How many ranges of skipped packet numbers are remembered to catch
/// optimistic ACKs (RFC 9000 §21.4).
const MAX_SKIPPED_RANGES: usize = 64;

/// A sent-queue slot; `pkt` is `None` once the packet was acknowledged.
/// Slots are popped from the front once resolved, so tombstones only linger
/// between the oldest outstanding packet and the largest acknowledged one.
#[derive(Debug)]
struct Slot<T> {
    pn: u64,
    pkt: Option<SentPacket<T>>,
}

/// What one ACK frame did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckSummary {
    /// Packets newly acknowledged.
    pub newly_acked: usize,
    /// Packets declared lost as a consequence.
    pub lost: usize,
    /// An RTT sample was taken.
    pub rtt_sampled: bool,
    /// With an RTT sample: when the sampled packet was built and when the
    /// pacer let it leave. From the release to the ACK is the network's RTT
    /// without sender-side pacing delay (shared-bottleneck detection uses it).
    pub sampled_times: Option<(Instant, Instant)>,
    /// Persistent congestion was established.
    pub persistent_congestion: bool,
}

/// The delivery-rate sample being built while walking one ACK's packets
/// (BBR draft §4.5.2.3 UpdateRateSample).
struct RateBuild {
    newest_pn: Option<u64>,
    prior_delivered: u64,
    prior_time: Instant,
    is_app_limited: bool,
    send_elapsed: Duration,
    newest_sent: Instant,
}

/// Sent packets of one packet number space with its loss-detection state.
#[derive(Debug)]
pub struct PacketSpace<T> {
    kind: SpaceKind,
    sent: VecDeque<Slot<T>>,
    largest_sent: Option<u64>,
    skipped: RangeSet,
    largest_acked: Option<u64>,
    loss_time: Option<Instant>,
    time_of_last_ack_eliciting: Option<Instant>,
    ack_eliciting_in_flight: usize,
    in_flight_bytes: usize,
}

impl<T> PacketSpace<T> {
    /// An empty space of the given kind.
    pub fn new(kind: SpaceKind) -> Self {
        Self {
            kind,
            sent: VecDeque::new(),
            largest_sent: None,
            skipped: RangeSet::new(),
            largest_acked: None,
            loss_time: None,
            time_of_last_ack_eliciting: None,
            ack_eliciting_in_flight: 0,
            in_flight_bytes: 0,
        }
    }

    /// The kind of space.
    pub fn kind(&self) -> SpaceKind {
        self.kind
    }

    /// Largest packet number acknowledged by the peer.
    pub fn largest_acked(&self) -> Option<u64> {
        self.largest_acked
    }

    /// Largest packet number sent.
    pub fn largest_sent(&self) -> Option<u64> {
        self.largest_sent
    }

    /// Time at which the oldest outstanding packet below the largest acked
    /// will be declared lost by the time threshold.
    pub fn loss_time(&self) -> Option<Instant> {
        self.loss_time
    }

    /// Send time of the most recent ack-eliciting packet in flight.
    pub fn time_of_last_ack_eliciting(&self) -> Option<Instant> {
        self.time_of_last_ack_eliciting
    }

    /// Ack-eliciting packets in flight in this space.
    pub fn ack_eliciting_in_flight(&self) -> usize {
        self.ack_eliciting_in_flight
    }

    /// Bytes in flight sent in this space.
    pub fn bytes_in_flight(&self) -> usize {
        self.in_flight_bytes
    }

    /// Outstanding (neither acked nor lost) packets, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &SentPacket<T>> + '_ {
        self.sent.iter().filter_map(|s| s.pkt.as_ref())
    }

    /// Whether no packet is outstanding.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// The outstanding packet with this number.
    pub fn get(&self, pn: u64) -> Option<&SentPacket<T>> {
        let i = self.first_slot_from(pn);
        self.sent.get(i).filter(|s| s.pn == pn).and_then(|s| s.pkt.as_ref())
    }

    /// The index of the first slot whose number is `pn` or above. Slots hold
    /// consecutive numbers unless some were skipped, so the index is usually
    /// `pn` less the front's number, which two adjacent slots confirm; a
    /// binary search (a cache miss per step over a window of slots) settles
    /// the rest.
    fn first_slot_from(&self, pn: u64) -> usize {
        let Some(front) = self.sent.front() else {
            return 0;
        };
        let guess = pn.saturating_sub(front.pn).min(self.sent.len() as u64) as usize;
        let below = guess == 0 || self.sent[guess - 1].pn < pn;
        let at = self.sent.get(guess).is_none_or(|s| s.pn >= pn);
        if below && at {
            return guess;
        }
        self.sent.partition_point(|s| s.pn < pn)
    }

    /// Record a sent packet (RFC 9002 A.5). Packet numbers must increase;
    /// gaps are remembered as skipped numbers that the peer must not ack.
    pub fn on_packet_sent(&mut self, path: &mut PathRecovery, mut pkt: SentPacket<T>) {
        path.on_sent(&mut pkt);
        let pn = pkt.pn;
        let next = self.largest_sent.map_or(0, |l| l + 1);
        if pn > next {
            self.skipped.insert(next..pn);
            self.skipped.truncate_to_newest(MAX_SKIPPED_RANGES);
        }
        if pkt.in_flight {
            self.in_flight_bytes += pkt.size;
            if pkt.ack_eliciting {
                self.ack_eliciting_in_flight += 1;
                self.time_of_last_ack_eliciting = Some(pkt.time_sent);
            }
        }
        if pn >= next {
            self.largest_sent = Some(pn);
            self.sent.push_back(Slot { pn, pkt: Some(pkt) });
        } else {
            // The engine's own bug; keep the queue sorted rather than lose data.
            debug_assert!(false, "packet numbers must increase");
            let i = self.sent.partition_point(|s| s.pn < pn);
            self.sent.insert(i, Slot { pn, pkt: Some(pkt) });
        }
    }

    /// Whether any number in `r` was skipped by the sender.
    fn acks_skipped(&self, r: &Range<u64>) -> bool {
        let s = self.skipped.iter().as_slice();
        let i = s.partition_point(|x| x.end <= r.start);
        s.get(i).is_some_and(|x| x.start < r.end)
    }

    /// Take a packet out of flight accounting.
    fn remove_from_flight(&mut self, path: &mut PathRecovery, p: &SentPacket<T>) {
        if p.in_flight {
            path.bytes_in_flight = path.bytes_in_flight.saturating_sub(p.size);
            self.in_flight_bytes = self.in_flight_bytes.saturating_sub(p.size);
            if p.ack_eliciting {
                self.ack_eliciting_in_flight = self.ack_eliciting_in_flight.saturating_sub(1);
            }
        }
    }

    /// Drop acknowledged slots at the front.
    fn pop_tombstones(&mut self) {
        while self.sent.front().is_some_and(|s| s.pkt.is_none()) {
            self.sent.pop_front();
        }
        if self.ack_eliciting_in_flight == 0 {
            self.time_of_last_ack_eliciting = None;
        }
    }

    /// Process one ACK (or PATH_ACK) frame for this space (RFC 9002 A.7).
    ///
    /// `ranges` are the acknowledged packet numbers (descending, as in the
    /// frame; iterated twice, once to validate); `ack_delay` is the decoded
    /// ACK Delay. Newly acked packets, then packets declared lost, are handed
    /// to `on_packet`. The controller gets one `on_loss` (if any loss) and
    /// then one `on_ack` with the delivery-rate sample. `paths` is the view
    /// of all the connection's paths, given to the controller.
    ///
    /// Acknowledging a packet number never sent (beyond the largest sent, or
    /// skipped) is a PROTOCOL_VIOLATION; the space is left untouched then.
    #[allow(clippy::too_many_arguments)]
    pub fn on_ack_received<I, F>(
        &mut self,
        path: &mut PathRecovery,
        ranges: I,
        ack_delay: Duration,
        now: Instant,
        hs: &HandshakeStatus,
        paths: &[PathView],
        mut on_packet: F,
    ) -> Result<AckSummary, TransportError>
    where
        I: IntoIterator<Item = Range<u64>>,
        I::IntoIter: Clone,
        F: FnMut(PacketFate, SentPacket<T>),
    {
        let ranges = ranges.into_iter();
        let mut largest: Option<u64> = None;
        for r in ranges.clone() {
            if r.start >= r.end {
                continue;
            }
            let top = r.end - 1;
            if self.largest_sent.is_none_or(|l| top > l) || self.acks_skipped(&r) {
                return Err(TransportError::violation("ACK of a packet number never sent"));
            }
            largest = Some(largest.map_or(top, |l| l.max(top)));
        }
        let Some(largest) = largest else {
            return Ok(AckSummary::default());
        };
        self.largest_acked = Some(self.largest_acked.map_or(largest, |l| l.max(largest)));

        let prior_in_flight = path.bytes_in_flight;
        let mut summary = AckSummary::default();
        let mut acked_bytes = 0usize;
        let mut acked_packets = 0usize;
        let mut any_ack_eliciting = false;
        let mut largest_newly_acked_sent: Option<Instant> = None;
        let mut largest_released: Option<(Instant, Instant)> = None;
        let mut newest_acked_sent: Option<Instant> = None;
        let mut rs: Option<RateBuild> = None;

        for r in ranges {
            if r.start >= r.end {
                continue;
            }
            let (lo, hi) = (self.first_slot_from(r.start), self.first_slot_from(r.end));
            for i in lo..hi {
                let Some(p) = self.sent.get_mut(i).and_then(|s| s.pkt.take()) else {
                    continue;
                };
                self.remove_from_flight(path, &p);
                summary.newly_acked += 1;
                any_ack_eliciting |= p.ack_eliciting;
                if p.pn == largest {
                    largest_newly_acked_sent = Some(p.time_sent);
                    largest_released = Some((p.time_sent, p.released));
                }
                if newest_acked_sent.is_none_or(|t| p.time_sent > t) {
                    newest_acked_sent = Some(p.time_sent);
                }
                if p.in_flight {
                    acked_bytes += p.size;
                    acked_packets += 1;
                    update_rate_sample(path, &mut rs, &p, now);
                }
                on_packet(PacketFate::Acked, p);
            }
        }
        if summary.newly_acked == 0 {
            self.pop_tombstones();
            return Ok(summary);
        }

        // The path's first RTT sample replaces the initial RTT its pacer's
        // rate was set from; a window-based controller's rate follows its
        // window, which this ACK changes.
        let mut first_sample = false;
        // RFC 9002 §5.1: sample only when the largest acknowledged is newly
        // acknowledged and something ack-eliciting was newly acknowledged.
        if let (Some(sent), true) = (largest_newly_acked_sent, any_ack_eliciting) {
            let delay = match self.kind {
                SpaceKind::Initial => Duration::ZERO,
                _ if hs.handshake_confirmed => ack_delay.min(path.max_ack_delay),
                _ => ack_delay,
            };
            path.rtt.update(now.saturating_duration_since(sent), delay);
            if path.first_rtt_sample.is_none() {
                path.first_rtt_sample = Some(now);
                first_sample = true;
            }
            summary.rtt_sampled = true;
            summary.sampled_times = largest_released;
        }

        let (lost, pc) = self.detect_lost(path, now, paths, &mut on_packet);
        summary.lost = lost;
        summary.persistent_congestion = pc;

        if acked_packets > 0 {
            let rate = rs.and_then(|rs| generate_rate_sample(path, rs, now));
            let ev = AckEvent {
                now,
                acked_bytes,
                acked_packets,
                largest_acked_sent: largest_newly_acked_sent.or(newest_acked_sent).unwrap_or(now),
                prior_in_flight,
                bytes_in_flight: path.bytes_in_flight,
                rate,
            };
            path.cc.on_ack(&ev, &path.rtt, paths);
        }

        if hs.peer_completed_address_validation {
            path.pto_count = 0;
        }
        path.timer_anchor = Some(now);
        if first_sample || path.cc.pacing_rate().is_none() {
            path.refresh_pacing_rate(now);
        }
        self.pop_tombstones();
        Ok(summary)
    }

    /// Declare lost the outstanding packets at or below the largest acked
    /// that cross the packet or time threshold (RFC 9002 §6.1, A.10), tell
    /// the controller, and re-arm `loss_time`. Returns the number of lost
    /// packets and whether persistent congestion was established.
    pub(super) fn detect_lost<F>(
        &mut self,
        path: &mut PathRecovery,
        now: Instant,
        paths: &[PathView],
        on_packet: &mut F,
    ) -> (usize, bool)
    where
        F: FnMut(PacketFate, SentPacket<T>),
    {
        self.loss_time = None;
        let Some(largest_acked) = self.largest_acked else {
            return (0, false);
        };
        let loss_delay = path.rtt.loss_delay();
        let lost_send_time = now.checked_sub(loss_delay);
        let pc_duration = path.persistent_congestion_duration();
        let first_sample = path.first_rtt_sample;

        let mut lost_packets = 0usize;
        let mut lost_bytes = 0usize;
        let mut lost_in_flight = 0usize;
        let mut largest_lost_sent: Option<Instant> = None;
        let mut run_start: Option<Instant> = None;
        let mut persistent = false;

        // Lost packets are always a prefix of the queue (pn and send time
        // both increase), so the walk stops at the first survivor.
        while let Some(front) = self.sent.front() {
            if front.pn > largest_acked {
                break;
            }
            let Some(p) = &front.pkt else {
                // Acknowledged: breaks any persistent-congestion period.
                run_start = None;
                self.sent.pop_front();
                continue;
            };
            let by_pn = largest_acked >= p.pn.saturating_add(PACKET_THRESHOLD);
            let by_time = lost_send_time.is_some_and(|t| p.time_sent <= t);
            if !(by_pn || by_time) {
                self.loss_time = p.time_sent.checked_add(loss_delay);
                break;
            }
            let Some(Slot { pkt: Some(p), .. }) = self.sent.pop_front() else {
                break;
            };
            self.remove_from_flight(path, &p);
            lost_packets += 1;
            if p.in_flight && !p.probe {
                lost_bytes += p.size;
                lost_in_flight += 1;
                largest_lost_sent = Some(p.time_sent);
            }
            if p.ack_eliciting && !p.probe && first_sample.is_some_and(|f| p.time_sent >= f) {
                match run_start {
                    None => run_start = Some(p.time_sent),
                    Some(start) => {
                        if p.time_sent.saturating_duration_since(start) > pc_duration {
                            persistent = true;
                        }
                    }
                }
            }
            on_packet(PacketFate::Lost, p);
        }
        self.pop_tombstones();

        if let Some(largest_lost_sent) = largest_lost_sent {
            path.lost += lost_bytes as u64;
            let ev = LossEvent {
                now,
                largest_lost_sent,
                lost_bytes,
                lost_packets: lost_in_flight,
                bytes_in_flight: path.bytes_in_flight,
                persistent_congestion: persistent,
            };
            path.cc.on_loss(&ev, &path.rtt, paths);
        }
        (lost_packets, persistent)
    }

    /// Drop the space when its keys are discarded (RFC 9002 §6.4): its bytes
    /// leave flight, its timers stop, the path's PTO backoff resets. Packets
    /// go to `on_packet` as [`PacketFate::Discarded`].
    pub fn discard<F>(&mut self, path: &mut PathRecovery, mut on_packet: F)
    where
        F: FnMut(PacketFate, SentPacket<T>),
    {
        self.drain(path, PacketFate::Discarded, &mut on_packet);
        path.pto_count = 0;
    }

    /// Declare every outstanding packet lost without a congestion signal,
    /// e.g. when the path is abandoned and its data is to be retransmitted on
    /// other paths (draft-ietf-quic-multipath-21 §3.4).
    pub fn declare_all_lost<F>(&mut self, path: &mut PathRecovery, mut on_packet: F)
    where
        F: FnMut(PacketFate, SentPacket<T>),
    {
        let before = path.bytes_in_flight;
        self.drain(path, PacketFate::Lost, &mut on_packet);
        path.lost += before.saturating_sub(path.bytes_in_flight) as u64;
    }

    fn drain<F>(&mut self, path: &mut PathRecovery, fate: PacketFate, on_packet: &mut F)
    where
        F: FnMut(PacketFate, SentPacket<T>),
    {
        while let Some(slot) = self.sent.pop_front() {
            if let Some(p) = slot.pkt {
                self.remove_from_flight(path, &p);
                on_packet(fate, p);
            }
        }
        self.loss_time = None;
        self.time_of_last_ack_eliciting = None;
        self.ack_eliciting_in_flight = 0;
        self.in_flight_bytes = 0;
    }
}

/// BBR draft §4.5.2.3 UpdateRateSample for one newly acked in-flight packet.
fn update_rate_sample<T>(
    path: &mut PathRecovery,
    rs: &mut Option<RateBuild>,
    p: &SentPacket<T>,
    now: Instant,
) {
    path.delivered += p.size as u64;
    path.delivered_time = now;
    let newest = rs.as_ref().is_none_or(|b| b.newest_pn.is_none_or(|n| p.pn > n));
    if newest {
        *rs = Some(RateBuild {
            newest_pn: Some(p.pn),
            prior_delivered: p.delivered,
            prior_time: p.delivered_time,
            is_app_limited: p.is_app_limited,
            send_elapsed: p.time_sent.saturating_duration_since(p.first_sent_time),
            newest_sent: p.time_sent,
        });
        path.first_sent_time = p.time_sent;
    }
}

/// BBR draft §4.5.2.3 GenerateRateSample, after all packets of the ACK.
fn generate_rate_sample(path: &mut PathRecovery, rs: RateBuild, now: Instant) -> Option<RateSample> {
    if path.app_limited != 0 && path.delivered > path.app_limited {
        path.app_limited = 0;
    }
    let ack_elapsed = path.delivered_time.saturating_duration_since(rs.prior_time);
    let interval = rs.send_elapsed.max(ack_elapsed);
    let delivered = path.delivered - rs.prior_delivered;
    // An interval shorter than min_rtt would overestimate the rate.
    if path.rtt.has_sample() && interval < path.rtt.min() {
        return None;
    }
    if interval.is_zero() {
        return None;
    }
    let rate = (delivered as u128 * 1_000_000_000 / interval.as_nanos()).min(u64::MAX as u128) as u64;
    Some(RateSample {
        delivery_rate: rate,
        is_app_limited: rs.is_app_limited,
        interval,
        delivered,
        prior_delivered: rs.prior_delivered,
        total_delivered: path.delivered,
        rtt: now.saturating_duration_since(rs.newest_sent),
        total_lost: path.lost,
    })
}
