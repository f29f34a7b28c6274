//! Wire pieces of the timestamp extension (after draft-huitema-quic-ts, whose
//! codepoints it uses): a TIMESTAMP frame carries the time its packet was
//! sent on the sender's clock, so that the receiver of an ACK learns when the
//! peer received the largest acknowledged packet (timestamp − ACK Delay) and
//! hence a one-way delay up to a constant clock offset — what
//! shared-bottleneck detection ([`crate::sbd`]) needs, free of the return
//! path's queues that an RTT sample carries.
//!
//! ```text
//! TIMESTAMP Frame {
//!   Type (i) = 0x2f5,
//!   Timestamp (i),   // µs since the sender's epoch >> its ack_delay_exponent
//! }
//! ```
//!
//! The transport parameter `enable_time_stamp` (0x7158) holds 1 (I would
//! like to receive TIMESTAMP frames), 2 (I am able to send them) or 3
//! (both). An endpoint sends TIMESTAMP only if it said it can and the peer
//! said it would like to; a TIMESTAMP it did not ask for is a
//! PROTOCOL_VIOLATION. The frame is not ack-eliciting and only 1-RTT packets
//! carry it. Peers that do not know the parameter ignore it (RFC 9000
//! §7.4.2) and never send the frame.

use crate::codec::{varint_len, Reader, Writer, VARINT_MAX};
use crate::error::{ErrorCode, TransportError};

/// Frame type of TIMESTAMP.
pub const TIMESTAMP_FRAME_TYPE: u64 = 0x2f5;

/// Transport parameter ID of `enable_time_stamp`.
pub const TIMESTAMP_TRANSPORT_PARAM_ID: u64 = 0x7158;

/// What an endpoint says in `enable_time_stamp`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimestampParam {
    /// It would like to receive TIMESTAMP frames (bit 0).
    pub receive: bool,
    /// It is able to send them (bit 1).
    pub send: bool,
}

impl TimestampParam {
    /// The parameter's number: 1 receive, 2 send, 3 both.
    pub fn value(self) -> u64 {
        u64::from(self.receive) | u64::from(self.send) << 1
    }

    /// The parameter's value (what follows its length): one varint, 1 to 3.
    pub fn encode(self) -> Vec<u8> {
        let v = self.value();
        let mut buf = vec![0u8; varint_len(v)];
        let mut w = Writer::new(&mut buf);
        // The buffer is sized for the varint.
        let _ = w.varint(v);
        buf
    }

    /// Check and read the parameter's value: exactly one varint in 1..=3,
    /// else TRANSPORT_PARAMETER_ERROR.
    pub fn decode(value: &[u8]) -> Result<Self, TransportError> {
        let err = || TransportError::new(ErrorCode::TRANSPORT_PARAMETER_ERROR, "bad enable_time_stamp");
        let mut r = Reader::new(value);
        let v = r.varint().map_err(|_| err())?;
        if !r.is_empty() || !(1..=3).contains(&v) {
            return Err(err());
        }
        Ok(TimestampParam { receive: v & 1 != 0, send: v & 2 != 0 })
    }
}

/// The Timestamp field for `micros` since the epoch at `exponent`.
pub fn encode_value(micros: u64, exponent: u64) -> u64 {
    (micros >> exponent.min(20)).min(VARINT_MAX)
}

/// Microseconds since the sender's epoch from the Timestamp field at the
/// sender's `exponent` (saturating: a hostile value cannot overflow).
pub fn decode_value(field: u64, exponent: u64) -> u64 {
    field.checked_shl(exponent.min(20) as u32).filter(|v| v >> exponent.min(20) == field).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Frame;

    #[test]
    fn frame_round_trip_with_known_bytes() {
        let f = Frame::Timestamp(0x1234);
        let mut buf = [0u8; 16];
        let mut w = Writer::new(&mut buf);
        f.encode(&mut w).unwrap();
        let n = w.pos();
        assert_eq!(n, f.encoded_len());
        // 0x2f5 as a 2-byte varint 0x42 0xf5; 0x1234 as 0x52 0x34.
        assert_eq!(&buf[..n], &[0x42, 0xf5, 0x52, 0x34]);
        let mut r = Reader::new(&buf[..n]);
        assert_eq!(Frame::decode(&mut r).unwrap(), f);
        assert!(r.is_empty());
    }

    #[test]
    fn truncated_frame_is_an_encoding_error() {
        for bytes in [&[0x42, 0xf5][..], &[0x42, 0xf5, 0x40]] {
            let e = Frame::decode(&mut Reader::new(bytes)).unwrap_err();
            assert_eq!(e.code, ErrorCode::FRAME_ENCODING_ERROR);
            assert_eq!(e.frame_type, Some(TIMESTAMP_FRAME_TYPE));
        }
    }

    #[test]
    fn the_frame_is_not_ack_eliciting_and_only_in_1rtt() {
        use crate::packet::PacketType;
        let f = Frame::Timestamp(1);
        assert!(!f.is_ack_eliciting() && !f.is_probing() && !f.is_multipath());
        assert!(f.is_allowed_in(PacketType::Short));
        for pt in [PacketType::Initial, PacketType::Handshake, PacketType::ZeroRtt] {
            assert!(!f.is_allowed_in(pt), "{pt:?}");
        }
    }

    #[test]
    fn transport_param_values() {
        for (receive, send, bytes) in [(true, false, [1u8]), (false, true, [2]), (true, true, [3])] {
            let p = TimestampParam { receive, send };
            assert_eq!(p.encode(), bytes);
            assert_eq!(TimestampParam::decode(&bytes).unwrap(), p);
        }
        for bad in [&[][..], &[0], &[4], &[3, 0], &[0x40]] {
            let e = TimestampParam::decode(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::TRANSPORT_PARAMETER_ERROR, "{bad:?}");
        }
    }

    #[test]
    fn values_scale_by_the_exponent_and_saturate() {
        assert_eq!(encode_value(1_000_008, 3), 125_001);
        assert_eq!(decode_value(125_001, 3), 1_000_008);
        assert_eq!(decode_value(VARINT_MAX, 20), u64::MAX);
        assert_eq!(encode_value(u64::MAX, 0), VARINT_MAX);
    }
}
