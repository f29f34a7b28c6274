//! ECN validation of one path (RFC 9000 §13.4.2, Appendix A.4).
//!
//! A path starts by marking its first [`TESTING_PACKETS`] 1-RTT packets
//! ECT(0), then stops marking until an ACK shows the marks arrived: the
//! peer's ECT(0) + CE counts must grow by at least the number of newly
//! acknowledged marked packets. From then on every packet is marked. The
//! path gives ECN up for good when an ACK that acknowledges marked packets
//! carries no counts, the counts fall short or exceed what was sent (a
//! network that bleaches or rewrites the bits, or a peer that does not
//! count), or every test packet is lost (a network that drops marked
//! packets). Growth in the CE count is a congestion signal for the path's
//! controller.

use crate::frame::EcnCounts;

/// Marked packets sent before waiting for validation (RFC 9000 A.4
/// suggests 10).
pub(crate) const TESTING_PACKETS: u64 = 10;

/// Where a path's ECN validation stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EcnState {
    /// Marking the first packets.
    #[default]
    Testing,
    /// Test packets sent; waiting for an ACK that validates them.
    Unknown,
    /// Validated: every packet is marked.
    Capable,
    /// Given up (or switched off by configuration): no marks.
    Failed,
}

impl EcnState {
    /// The state's name in lower case (`testing`, `unknown`, `capable`,
    /// `failed`), as the apps' JSON and Python show it.
    pub fn as_str(self) -> &'static str {
        match self {
            EcnState::Testing => "testing",
            EcnState::Unknown => "unknown",
            EcnState::Capable => "capable",
            EcnState::Failed => "failed",
        }
    }
}

/// One path's ECN state and counters.
#[derive(Clone, Debug, Default)]
pub(crate) struct EcnPath {
    state: EcnState,
    /// Packets sent with ECT(0).
    sent: u64,
    /// Test packets declared lost.
    test_lost: u64,
    /// The peer's counts as of the last ACK that carried them.
    peer: EcnCounts,
    last_marked: bool,
}

impl EcnPath {
    /// A path that tests ECN (`enabled`) or never marks.
    pub(crate) fn new(enabled: bool) -> EcnPath {
        let state = if enabled { EcnState::Testing } else { EcnState::Failed };
        EcnPath { state, ..EcnPath::default() }
    }

    pub(crate) fn state(&self) -> EcnState {
        self.state
    }

    /// CE marks the peer has reported so far.
    pub(crate) fn ce_reported(&self) -> u64 {
        self.peer.ce
    }

    /// Whether the next packet is to be marked ECT(0).
    pub(crate) fn marks(&self) -> bool {
        matches!(self.state, EcnState::Testing | EcnState::Capable)
    }

    /// A 1-RTT packet left, marked or not.
    pub(crate) fn on_sent(&mut self, marked: bool) {
        self.last_marked = marked;
        if marked {
            self.on_marked_sent();
        }
    }

    /// Whether the last 1-RTT packet sent was marked (its datagram is).
    pub(crate) fn last_marked(&self) -> bool {
        self.last_marked
    }

    fn on_marked_sent(&mut self) {
        self.sent += 1;
        if self.state == EcnState::Testing && self.sent >= TESTING_PACKETS {
            self.state = EcnState::Unknown;
        }
    }

    /// Marked packets were declared lost: if they are all the test packets,
    /// the network may drop marked packets.
    pub(crate) fn on_marked_lost(&mut self, n: u64) {
        if matches!(self.state, EcnState::Testing | EcnState::Unknown) {
            self.test_lost += n;
            if self.test_lost >= TESTING_PACKETS {
                self.state = EcnState::Failed;
            }
        }
    }

    /// An ACK newly acknowledged `newly_marked` marked packets and carried
    /// `counts`. Returns how many new CE marks it reports (0 once failed).
    pub(crate) fn on_ack(&mut self, newly_marked: u64, counts: Option<EcnCounts>) -> u64 {
        if self.state == EcnState::Failed {
            return 0;
        }
        let Some(c) = counts else {
            if newly_marked > 0 {
                self.state = EcnState::Failed;
            }
            return 0;
        };
        // Counts below the last seen come from a reordered older ACK.
        if c.ect0 < self.peer.ect0 || c.ect1 < self.peer.ect1 || c.ce < self.peer.ce {
            return 0;
        }
        let grew = (c.ect0 - self.peer.ect0) + (c.ce - self.peer.ce);
        let exceeds = c.ect1 > 0 || c.ect0.saturating_add(c.ce) > self.sent;
        if grew < newly_marked || exceeds {
            self.state = EcnState::Failed;
            return 0;
        }
        let ce = c.ce - self.peer.ce;
        self.peer = c;
        // Marks confirmed (during the test or after it): mark every packet.
        if newly_marked > 0 {
            self.state = EcnState::Capable;
        }
        ce
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(ect0: u64, ect1: u64, ce: u64) -> Option<EcnCounts> {
        Some(EcnCounts { ect0, ect1, ce })
    }

    fn tested() -> EcnPath {
        let mut e = EcnPath::new(true);
        for _ in 0..TESTING_PACKETS {
            assert!(e.marks());
            e.on_sent(true);
            assert!(e.last_marked());
        }
        e
    }

    #[test]
    fn marks_ten_then_waits_then_validates() {
        let mut e = tested();
        assert_eq!(e.state(), EcnState::Unknown);
        assert!(!e.marks(), "no marks until validated");
        assert_eq!(e.on_ack(4, counts(4, 0, 0)), 0);
        assert_eq!(e.state(), EcnState::Capable);
        assert!(e.marks());
        // CE reported: two new marks.
        assert_eq!(e.on_ack(3, counts(5, 0, 2)), 2);
        assert_eq!(e.ce_reported(), 2);
        assert_eq!(e.state(), EcnState::Capable);
    }

    #[test]
    fn an_ack_without_counts_for_marked_packets_fails() {
        let mut e = tested();
        assert_eq!(e.on_ack(0, None), 0, "nothing marked acknowledged: no verdict");
        assert_eq!(e.state(), EcnState::Unknown);
        e.on_ack(2, None);
        assert_eq!(e.state(), EcnState::Failed);
        assert!(!e.marks());
    }

    #[test]
    fn bleached_or_impossible_counts_fail() {
        let mut short = tested();
        short.on_ack(3, counts(2, 0, 0));
        assert_eq!(short.state(), EcnState::Failed, "counts grew less than acknowledged marks");
        let mut ect1 = tested();
        ect1.on_ack(1, counts(1, 1, 0));
        assert_eq!(ect1.state(), EcnState::Failed, "ECT(1) never sent");
        let mut too_many = tested();
        too_many.on_ack(1, counts(11, 0, 0));
        assert_eq!(too_many.state(), EcnState::Failed, "more than sent");
    }

    #[test]
    fn reordered_older_counts_are_ignored() {
        let mut e = tested();
        e.on_ack(5, counts(5, 0, 0));
        assert_eq!(e.on_ack(0, counts(3, 0, 0)), 0);
        assert_eq!(e.state(), EcnState::Capable);
    }

    #[test]
    fn losing_every_test_packet_fails_and_disabled_never_marks() {
        let mut e = tested();
        e.on_marked_lost(6);
        assert_eq!(e.state(), EcnState::Unknown);
        e.on_marked_lost(4);
        assert_eq!(e.state(), EcnState::Failed);
        let off = EcnPath::new(false);
        assert!(!off.marks());
        assert_eq!(off.state(), EcnState::Failed);
    }
}
