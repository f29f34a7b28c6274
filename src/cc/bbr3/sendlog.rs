//! Per-packet send state BBRv3 needs but the engine's [`RateSample`] does not
//! carry: `P.tx_in_flight`, `P.lost` and `P.delivered` (draft-ietf-ccwg-bbr
//! §4.5.2.2, §5.5.10.2). The controller records them itself from
//! `on_packet_sent` and finds the packet an ACK or loss event refers to by its
//! send time (`AckEvent::largest_acked_sent`, `LossEvent::largest_lost_sent`).
//!
//! [`RateSample`]: crate::cc::RateSample

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Most records kept: 2^16 packets (≈78 MB in flight at 1200-byte packets).
/// Older ones are dropped first; a lookup that misses just yields `None`.
const MAX_RECORDS: usize = 1 << 16;

/// What was true when one packet was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SentRecord {
    /// Send time.
    pub(super) time: Instant,
    /// Packet size in bytes.
    pub(super) size: u64,
    /// Bytes in flight just after the send, this packet included.
    pub(super) tx_in_flight: u64,
    /// Bytes the path had delivered at the send.
    pub(super) delivered: u64,
    /// Bytes the path had lost at the send.
    pub(super) lost: u64,
    /// Sent inside an application-limited period.
    pub(super) app_limited: bool,
}

/// Send records in send-time order.
#[derive(Clone, Debug, Default)]
pub(super) struct SendLog {
    records: VecDeque<SentRecord>,
}

impl SendLog {
    /// Append a record (send times never go backwards).
    pub(super) fn push(&mut self, rec: SentRecord) {
        if self.records.len() >= MAX_RECORDS {
            self.records.pop_front();
        }
        self.records.push_back(rec);
    }

    /// The newest record sent at or before `t`. Several packets can share a
    /// send time (a paced burst); the last of them is taken, which
    /// over-states `tx_in_flight` by at most the burst.
    pub(super) fn find(&self, t: Instant) -> Option<SentRecord> {
        let i = self.records.partition_point(|r| r.time <= t);
        i.checked_sub(1).and_then(|i| self.records.get(i)).copied()
    }

    /// Forget packets sent more than `keep` before `t`: loss detection
    /// (RFC 9002 §6.1) declares lost only packets sent a little before the
    /// largest acknowledged one, so older records are never looked up.
    pub(super) fn prune(&mut self, t: Instant, keep: Duration) {
        let Some(cut) = t.checked_sub(keep) else { return };
        while self.records.front().is_some_and(|r| r.time < cut) {
            self.records.pop_front();
        }
    }

    /// Records held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.records.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(time: Instant, tx: u64) -> SentRecord {
        SentRecord { time, size: 1200, tx_in_flight: tx, delivered: 0, lost: 0, app_limited: false }
    }

    #[test]
    fn finds_newest_at_or_before_and_prunes() {
        #[allow(clippy::disallowed_methods)]
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut log = SendLog::default();
        assert_eq!(log.find(t0), None);
        log.push(rec(t0, 1200));
        log.push(rec(t0 + ms(1), 2400));
        log.push(rec(t0 + ms(1), 3600));
        log.push(rec(t0 + ms(5), 4800));
        assert_eq!(log.find(t0).map(|r| r.tx_in_flight), Some(1200));
        assert_eq!(log.find(t0 + ms(1)).map(|r| r.tx_in_flight), Some(3600));
        assert_eq!(log.find(t0 + ms(3)).map(|r| r.tx_in_flight), Some(3600));
        log.prune(t0 + ms(4), ms(2));
        assert_eq!(log.len(), 1);
        assert_eq!(log.find(t0 + ms(3)), None);
        assert_eq!(log.find(t0 + ms(9)).map(|r| r.tx_in_flight), Some(4800));
    }
}
