//! Wire pieces of the rec extension (seed 003): the receiver sends each
//! path's desired sending rate (DSR) in a PATH_DSR frame, and a transport
//! parameter, present with an empty value, says an endpoint understands it.
//! An endpoint sends PATH_DSR only if the peer sent the parameter; peers that
//! do not know it ignore the unknown parameter (RFC 9000 §7.4.2).
//!
//! Both codepoints are in the ranges RFC 9000 leaves for private and
//! experimental use and are not registered.
//!
//! ```text
//! PATH_DSR Frame {
//!   Type (i) = 0x3f5ec000,
//!   Path Identifier (i),
//!   Desired Sending Rate (i),   // bytes per second
//! }
//! ```
//!
//! The frame is ack-eliciting and may be sent on any path; a later frame for
//! the same path replaces an earlier one.

use crate::codec::{varint_len, Reader, Writer, VARINT_MAX};
use crate::error::{BufferTooShort, ErrorCode, TransportError};
use crate::PathId;

/// Frame type of PATH_DSR.
pub const PATH_DSR_FRAME_TYPE: u64 = 0x3f5e_c000;

/// Transport parameter ID that negotiates the extension (zero-length value).
pub const REC_TRANSPORT_PARAM_ID: u64 = 0x3f5e_c001;

/// A PATH_DSR frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathDsrFrame {
    /// The path the rate applies to.
    pub path_id: PathId,
    /// Desired sending rate in bytes/s (clamped to the varint range when
    /// encoded).
    pub dsr: u64,
}

impl PathDsrFrame {
    /// Encoded length including the frame type.
    pub fn encoded_len(&self) -> usize {
        varint_len(PATH_DSR_FRAME_TYPE)
            + varint_len(u64::from(self.path_id.0))
            + varint_len(self.dsr.min(VARINT_MAX))
    }

    /// Write the frame, type included.
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<(), BufferTooShort> {
        if w.remaining() < self.encoded_len() {
            return Err(BufferTooShort);
        }
        w.varint(PATH_DSR_FRAME_TYPE)?;
        w.varint(u64::from(self.path_id.0))?;
        w.varint(self.dsr.min(VARINT_MAX))
    }

    /// Read the frame body; the type has already been read by the caller.
    /// Errors are FRAME_ENCODING_ERROR tagged with the frame type.
    pub fn decode_body(r: &mut Reader<'_>) -> Result<Self, TransportError> {
        let err = |reason| TransportError::encoding(reason).with_frame(PATH_DSR_FRAME_TYPE);
        let path = r.varint().map_err(|_| err("truncated PATH_DSR path id"))?;
        let path = u32::try_from(path).map_err(|_| err("PATH_DSR path id above 2^32-1"))?;
        let dsr = r.varint().map_err(|_| err("truncated PATH_DSR rate"))?;
        Ok(Self { path_id: PathId(path), dsr })
    }
}

/// Write the transport parameter (ID, zero length) into a parameter list.
pub fn encode_transport_param(w: &mut Writer<'_>) -> Result<(), BufferTooShort> {
    if w.remaining() < varint_len(REC_TRANSPORT_PARAM_ID) + 1 {
        return Err(BufferTooShort);
    }
    w.varint(REC_TRANSPORT_PARAM_ID)?;
    w.varint(0)
}

/// Check the parameter's value (what follows its length); it must be empty.
pub fn decode_transport_param(value: &[u8]) -> Result<(), TransportError> {
    if value.is_empty() {
        Ok(())
    } else {
        Err(TransportError::new(ErrorCode::TRANSPORT_PARAMETER_ERROR, "rec parameter must be empty"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_round_trip_with_known_bytes() {
        let f = PathDsrFrame { path_id: PathId(2), dsr: 1_250_000 };
        let mut buf = [0u8; 32];
        let mut w = Writer::new(&mut buf);
        f.encode(&mut w).unwrap();
        let n = w.pos();
        assert_eq!(n, f.encoded_len());
        // 0x3f5ec000 as a 4-byte varint: 0x80 | 0x3f, 0x5e, 0xc0, 0x00;
        // path 2 = 0x02; 1 250 000 = 0x1312d0 as a 4-byte varint 0x80 13 12 d0.
        assert_eq!(&buf[..n], &[0xbf, 0x5e, 0xc0, 0x00, 0x02, 0x80, 0x13, 0x12, 0xd0]);
        let mut r = Reader::new(&buf[..n]);
        assert_eq!(r.varint().unwrap(), PATH_DSR_FRAME_TYPE);
        assert_eq!(PathDsrFrame::decode_body(&mut r).unwrap(), f);
        assert!(r.is_empty());
    }

    #[test]
    fn bad_frames_are_encoding_errors() {
        // Truncated rate.
        let e = PathDsrFrame::decode_body(&mut Reader::new(&[0x02])).unwrap_err();
        assert_eq!(e.code, ErrorCode::FRAME_ENCODING_ERROR);
        assert_eq!(e.frame_type, Some(PATH_DSR_FRAME_TYPE));
        // Empty body.
        let e = PathDsrFrame::decode_body(&mut Reader::new(&[])).unwrap_err();
        assert_eq!(e.code, ErrorCode::FRAME_ENCODING_ERROR);
        // Path ID 2^32 (8-byte varint).
        let big = [0xc0, 0, 0, 0x01, 0, 0, 0, 0, 0x05];
        let e = PathDsrFrame::decode_body(&mut Reader::new(&big)).unwrap_err();
        assert_eq!(e.code, ErrorCode::FRAME_ENCODING_ERROR);
        // Truncated multi-byte varint.
        let e = PathDsrFrame::decode_body(&mut Reader::new(&[0x40])).unwrap_err();
        assert_eq!(e.code, ErrorCode::FRAME_ENCODING_ERROR);
    }

    #[test]
    fn encode_into_short_buffer_fails_cleanly() {
        let f = PathDsrFrame { path_id: PathId(0), dsr: u64::MAX };
        let mut buf = [0u8; 8];
        assert_eq!(f.encode(&mut Writer::new(&mut buf)), Err(BufferTooShort));
        let mut buf = [0u8; 13];
        let mut w = Writer::new(&mut buf);
        f.encode(&mut w).unwrap();
        assert_eq!(w.pos(), 13);
    }

    #[test]
    fn transport_param() {
        let mut buf = [0u8; 8];
        let mut w = Writer::new(&mut buf);
        encode_transport_param(&mut w).unwrap();
        assert_eq!(w.written(), &[0xbf, 0x5e, 0xc0, 0x01, 0x00]);
        assert!(decode_transport_param(&[]).is_ok());
        let e = decode_transport_param(&[1]).unwrap_err();
        assert_eq!(e.code, ErrorCode::TRANSPORT_PARAMETER_ERROR);
        assert!(encode_transport_param(&mut Writer::new(&mut [0u8; 4])).is_err());
    }
}
