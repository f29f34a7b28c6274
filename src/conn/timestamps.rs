//! The timestamp extension in a connection ([`crate::frame::timestamp`]):
//! whether we send TIMESTAMP frames with our ACKs and read the peer's, and
//! the one-way delays the peer's give shared-bottleneck detection.
//!
//! Offered with multipath only (one path needs no bottleneck detection), and
//! used only where multipath is negotiated.

use std::time::{Duration, Instant};

use crate::error::TransportError;
use crate::frame::timestamp::{self, TimestampParam};

#[derive(Debug)]
pub(super) struct Timestamps {
    /// Our clock's zero for the timestamps we send.
    epoch: Instant,
    /// What we offered (`None`: nothing).
    offered: Option<TimestampParam>,
    /// We write a TIMESTAMP into each 1-RTT packet carrying an ACK.
    pub(super) send: bool,
    /// The peer sends them: shared-bottleneck detection uses them.
    pub(super) receive: bool,
    /// The peer's clock, µs since its epoch, when it sent the packet being
    /// read (from its TIMESTAMP frame, which precedes its ACKs).
    current: Option<u64>,
}

/// What `config` offers: both directions, if enabled and multipath is offered.
pub(super) fn offer(config: &crate::Config) -> Option<TimestampParam> {
    (config.timestamps && config.initial_max_path_id.is_some())
        .then_some(TimestampParam { receive: true, send: true })
}

impl Timestamps {
    /// The state for a connection that `offered` this, its clock at zero `now`.
    pub(super) fn new(offered: Option<TimestampParam>, now: Instant) -> Self {
        Timestamps { epoch: now, offered, send: false, receive: false, current: None }
    }

    /// The peer's `enable_time_stamp` value (raw), once multipath is settled.
    pub(super) fn on_peer_param(
        &mut self,
        value: Option<&[u8]>,
        multipath: bool,
    ) -> Result<(), TransportError> {
        let peer = value.map(TimestampParam::decode).transpose()?.unwrap_or_default();
        let ours = self.offered.filter(|_| multipath).unwrap_or_default();
        self.send = ours.send && peer.receive;
        self.receive = ours.receive && peer.send;
        Ok(())
    }

    /// The Timestamp field of a packet sent at `now`, at our `exponent`.
    pub(super) fn field(&self, now: Instant, exponent: u64) -> u64 {
        let micros = u64::try_from(now.saturating_duration_since(self.epoch).as_micros()).unwrap_or(u64::MAX);
        timestamp::encode_value(micros, exponent)
    }

    /// A new packet is being read: it has no timestamp yet.
    pub(super) fn begin_packet(&mut self) {
        self.current = None;
    }

    /// A TIMESTAMP frame at the peer's `exponent`; one we did not ask for is
    /// a PROTOCOL_VIOLATION.
    pub(super) fn on_frame(&mut self, field: u64, exponent: u64) -> Result<(), TransportError> {
        if !self.offered.is_some_and(|o| o.receive) {
            return Err(TransportError::violation("TIMESTAMP without enable_time_stamp"));
        }
        self.current = Some(timestamp::decode_value(field, exponent));
        Ok(())
    }

    /// One-way delay in ms, up to a constant (the clocks' offset), of a
    /// packet we released at `released` and the peer acknowledged `ack_delay`
    /// after receiving it, in the packet being read. `None` without a
    /// timestamp in that packet.
    pub(super) fn one_way_ms(&self, released: Instant, ack_delay: Duration) -> Option<f64> {
        let peer_sent_ms = self.current.filter(|&t| t != u64::MAX)? as f64 / 1e3;
        let received_ms = peer_sent_ms - ack_delay.as_secs_f64() * 1e3;
        let released_ms = released.saturating_duration_since(self.epoch).as_secs_f64() * 1e3;
        Some(received_ms - released_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::disallowed_methods)]
    fn base() -> Instant {
        Instant::now()
    }

    fn param(receive: bool, send: bool) -> Vec<u8> {
        TimestampParam { receive, send }.encode()
    }

    const BOTH: Option<TimestampParam> = Some(TimestampParam { receive: true, send: true });

    #[test]
    fn negotiation_needs_both_sides_and_multipath() {
        let t0 = base();
        let mut t = Timestamps::new(BOTH, t0);
        t.on_peer_param(Some(&param(true, true)), true).unwrap();
        assert!(t.send && t.receive);
        t.on_peer_param(Some(&param(true, false)), true).unwrap();
        assert!(t.send && !t.receive);
        t.on_peer_param(None, true).unwrap();
        assert!(!t.send && !t.receive);
        t.on_peer_param(Some(&param(true, true)), false).unwrap();
        assert!(!t.send && !t.receive, "multipath not negotiated");
        let mut config = crate::Config::new();
        assert_eq!(offer(&config), None, "multipath off");
        config.set_initial_max_path_id(Some(2));
        assert_eq!(offer(&config), BOTH);
        config.enable_timestamps(false);
        assert_eq!(offer(&config), None);
        let mut off = Timestamps::new(None, t0);
        off.on_peer_param(Some(&param(true, true)), true).unwrap();
        assert!(!off.send && !off.receive);
        assert!(t.on_peer_param(Some(&[7]), true).is_err());
    }

    #[test]
    fn unasked_timestamp_is_a_protocol_violation() {
        let mut t = Timestamps::new(None, base());
        let e = t.on_frame(5, 3).unwrap_err();
        assert_eq!(e.code, crate::error::ErrorCode::PROTOCOL_VIOLATION);
    }

    /// The peer's clock starts 7 ms after ours; a packet released at 100 ms
    /// arrives at 130 ms (our clock) and is acknowledged 4 ms later: the
    /// delay is 30 ms less the 7 ms offset, whatever the return path takes.
    #[test]
    fn one_way_delay_is_exact_up_to_the_clock_offset() {
        let t0 = base();
        let mut ours = Timestamps::new(BOTH, t0);
        let peer = Timestamps::new(BOTH, t0 + Duration::from_millis(7));
        ours.begin_packet();
        assert_eq!(ours.one_way_ms(t0, Duration::ZERO), None);
        let sent_ack = t0 + Duration::from_millis(134);
        ours.on_frame(peer.field(sent_ack, 3), 3).unwrap();
        let d = ours.one_way_ms(t0 + Duration::from_millis(100), Duration::from_millis(4)).unwrap();
        assert!((d - 23.0).abs() < 0.01, "{d}");
        ours.begin_packet();
        assert_eq!(ours.one_way_ms(t0, Duration::ZERO), None);
    }
}
