//! Receive side of one packet number space: which packet numbers arrived,
//! duplicate detection, and when to send an ACK (RFC 9000 §13.2).

use std::time::{Duration, Instant};

use crate::ranges::RangeSet;

/// Default bound on the ranges kept (and so carried in one ACK frame).
pub const DEFAULT_MAX_RANGES: usize = 32;

/// Ranges of received packet numbers remembered for duplicate detection;
/// anything older counts as a duplicate.
const SEEN_RANGES: usize = 128;

/// ECN codepoint of a received datagram (RFC 9000 §13.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ecn {
    /// Not ECN-capable.
    #[default]
    NotEct,
    /// ECT(0).
    Ect0,
    /// ECT(1).
    Ect1,
    /// Congestion experienced.
    Ce,
}

impl Ecn {
    /// The codepoint in the low two bits of an IPv4 TOS / IPv6 Traffic
    /// Class byte (RFC 3168 §5).
    pub fn from_tos(tos: u8) -> Ecn {
        match tos & 0b11 {
            0b10 => Ecn::Ect0,
            0b01 => Ecn::Ect1,
            0b11 => Ecn::Ce,
            _ => Ecn::NotEct,
        }
    }

    /// The two ECN bits of the TOS / Traffic Class byte.
    pub fn tos_bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }
}

/// Received packet numbers of one space and the ACK-sending decision.
#[derive(Clone, Debug)]
pub struct AckTracker {
    /// What ACK frames report: received numbers not yet known to be
    /// acknowledged by an ACK the peer received.
    received: RangeSet,
    /// Every received number, for duplicate detection, at most
    /// `SEEN_RANGES` ranges. Kept apart from `received`: a packet delayed
    /// past an acknowledged ACK frame is still new and must be processed
    /// and acknowledged (a peer that never hears of it may never resend
    /// its data, quiche 0.30 after a migration for one).
    seen: RangeSet,
    /// Numbers below this were forgotten and count as duplicates.
    ignore_below: u64,
    largest: Option<(u64, Instant)>,
    largest_ack_eliciting: Option<u64>,
    /// Ack-eliciting packets received since the last ACK was sent.
    unacked_ack_eliciting: u32,
    /// Arrival of the first of those.
    first_unacked_at: Option<Instant>,
    /// Something not yet acknowledged arrived (for piggy-backing).
    new_since_ack: bool,
    immediate: bool,
    max_ack_delay: Duration,
    ack_delay_exponent: u8,
    max_ranges: usize,
    ecn: [u64; 3],
}

impl AckTracker {
    /// A tracker acking within `max_ack_delay` (our transport parameter; use
    /// zero for Initial and Handshake, which are acked immediately) and
    /// encoding ACK Delay with `ack_delay_exponent` (our transport parameter
    /// for application data; 3 for Initial and Handshake, RFC 9000 §19.3).
    pub fn new(max_ack_delay: Duration, ack_delay_exponent: u8) -> Self {
        Self {
            received: RangeSet::new(),
            seen: RangeSet::new(),
            ignore_below: 0,
            largest: None,
            largest_ack_eliciting: None,
            unacked_ack_eliciting: 0,
            first_unacked_at: None,
            new_since_ack: false,
            immediate: false,
            max_ack_delay,
            ack_delay_exponent: ack_delay_exponent.min(20),
            max_ranges: DEFAULT_MAX_RANGES,
            ecn: [0; 3],
        }
    }

    /// Bound the number of ranges kept (at least 1).
    pub fn set_max_ranges(&mut self, n: usize) {
        self.max_ranges = n.max(1);
    }

    /// Whether `pn` was already received (or is too old to tell).
    pub fn is_duplicate(&self, pn: u64) -> bool {
        pn < self.ignore_below || self.seen.contains(pn)
    }

    /// Largest packet number received, for packet-number decoding.
    pub fn largest_received(&self) -> Option<u64> {
        self.largest.map(|(pn, _)| pn)
    }

    /// Record a packet that was successfully decrypted. Returns false (and
    /// changes nothing) if it is a duplicate, which must be dropped.
    pub fn on_packet_received(&mut self, pn: u64, now: Instant, ack_eliciting: bool, ecn: Ecn) -> bool {
        if self.is_duplicate(pn) {
            return false;
        }
        self.received.insert_one(pn);
        self.seen.insert_one(pn);
        if self.largest.is_none_or(|(l, _)| pn > l) {
            self.largest = Some((pn, now));
        }
        match ecn {
            Ecn::NotEct => {}
            Ecn::Ect0 => self.ecn[0] += 1,
            Ecn::Ect1 => self.ecn[1] += 1,
            Ecn::Ce => self.ecn[2] += 1,
        }
        self.new_since_ack = true;
        if ack_eliciting {
            // RFC 9000 §13.2.1: ack at once when this packet is older than
            // one already received, or when it leaves a gap above the
            // previous largest ack-eliciting packet.
            match self.largest_ack_eliciting {
                Some(l) if pn < l => self.immediate = true,
                Some(l) if pn > l + 1 && !self.contiguous_below(pn, l) => self.immediate = true,
                Some(_) => {}
                None => {}
            }
            if self.largest_ack_eliciting.is_none_or(|l| pn > l) {
                self.largest_ack_eliciting = Some(pn);
            }
            self.unacked_ack_eliciting += 1;
            if self.first_unacked_at.is_none() {
                self.first_unacked_at = Some(now);
            }
            // §13.2.2: at least every second ack-eliciting packet; CE marks
            // are reported at once (§13.2.1).
            if self.unacked_ack_eliciting >= 2 || ecn == Ecn::Ce || self.max_ack_delay.is_zero() {
                self.immediate = true;
            }
        }
        if self.received.len() > self.max_ranges {
            self.received.truncate_to_newest(self.max_ranges);
        }
        if self.seen.len() > SEEN_RANGES.max(self.max_ranges) {
            self.seen.truncate_to_newest(SEEN_RANGES.max(self.max_ranges));
            self.ignore_below = self.seen.min().unwrap_or(self.ignore_below);
        }
        true
    }

    /// Whether every number in (l, pn) was received.
    fn contiguous_below(&self, pn: u64, l: u64) -> bool {
        // pn was just inserted; its range must reach down to l (forgotten
        // numbers count as received).
        self.seen
            .iter()
            .rev()
            .find(|r| r.start <= pn && pn < r.end)
            .is_some_and(|r| r.start <= l || r.start <= self.ignore_below)
    }

    /// When an ACK frame must be sent: `Some(t)` with `t <= now` means right
    /// away; `None` means no ack-eliciting packet awaits acknowledgement.
    pub fn ack_deadline(&self) -> Option<Instant> {
        let first = self.first_unacked_at?;
        if self.immediate {
            Some(first)
        } else {
            first.checked_add(self.max_ack_delay)
        }
    }

    /// Whether anything arrived since the last ACK (an ACK may be bundled).
    pub fn has_new(&self) -> bool {
        self.new_since_ack
    }

    /// The ranges to acknowledge, ascending (iterate `.rev()` for the frame).
    pub fn ranges(&self) -> &RangeSet {
        &self.received
    }

    /// ECT(0), ECT(1) and CE counts for an ACK_ECN frame.
    pub fn ecn_counts(&self) -> [u64; 3] {
        self.ecn
    }

    /// The counts an ACK frame carries: once any ECN-marked packet arrived
    /// in this space (RFC 9000 §19.3.2), else none (a plain ACK).
    pub fn ecn_frame_counts(&self) -> Option<crate::frame::EcnCounts> {
        let [ect0, ect1, ce] = self.ecn;
        (ect0 | ect1 | ce != 0).then_some(crate::frame::EcnCounts { ect0, ect1, ce })
    }

    /// The ACK Delay field for an ACK sent at `now` (RFC 9000 §13.2.5):
    /// time since the largest packet arrived, in microseconds, shifted by
    /// the exponent.
    pub fn ack_delay_field(&self, now: Instant) -> u64 {
        let Some((_, at)) = self.largest else {
            return 0;
        };
        let us = now.saturating_duration_since(at).as_micros();
        (us >> self.ack_delay_exponent).min((1 << 62) - 1) as u64
    }

    /// An ACK frame with the current ranges was sent: reset the ACK timer.
    pub fn on_ack_sent(&mut self) {
        self.unacked_ack_eliciting = 0;
        self.first_unacked_at = None;
        self.immediate = false;
        self.new_since_ack = false;
    }

    /// A packet carrying our ACK frame whose Largest Acknowledged was
    /// `largest` has been acknowledged: stop acknowledging packet numbers up
    /// to it (RFC 9000 §13.2.4). A late packet below it is still taken
    /// (and acknowledged) if it was never seen.
    pub fn on_ack_frame_acked(&mut self, largest: u64) {
        self.received.remove_below(largest.saturating_add(1));
    }
}
