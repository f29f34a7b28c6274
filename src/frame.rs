//! Frames (RFC 9000 §19, RFC 9221 §4, draft-ietf-quic-multipath-21 §4):
//! zero-copy decoding into [`Frame`], encoding, packet-type permissions and
//! the header-only encoders the send path uses to copy stream data straight
//! from its buffers.
//!
//! Decoding never panics. Malformed frames yield FRAME_ENCODING_ERROR with
//! the frame type (RFC 9000 §12.4); a path ID above 2^32-1 is a
//! PROTOCOL_VIOLATION because it exceeds any possible path limit
//! (multipath draft §4, §4.6).

use crate::codec::{varint_len, Reader, Writer, VARINT_MAX};
use crate::error::{BufferTooShort, ErrorCode, TransportError};
use crate::packet::{ConnectionId, PacketType, MAX_CID_LEN, RESET_TOKEN_LEN};

mod ack;
pub mod path_dsr;
pub mod timestamp;

pub use ack::{ack_encoded_len, ack_fit, encode_ack, encode_ack_max, AckRangeIter, AckRanges, EcnCounts};

/// Frame type values (RFC 9000 Table 3, RFC 9221 §4, multipath draft-21 §4).
pub mod ty {
    #![allow(missing_docs)]
    pub const PADDING: u64 = 0x00;
    pub const PING: u64 = 0x01;
    pub const ACK: u64 = 0x02;
    pub const ACK_ECN: u64 = 0x03;
    pub const RESET_STREAM: u64 = 0x04;
    pub const STOP_SENDING: u64 = 0x05;
    pub const CRYPTO: u64 = 0x06;
    pub const NEW_TOKEN: u64 = 0x07;
    /// STREAM is 0x08..=0x0f; the low bits are OFF (0x04), LEN (0x02), FIN (0x01).
    pub const STREAM: u64 = 0x08;
    pub const STREAM_OFF: u64 = 0x04;
    pub const STREAM_LEN: u64 = 0x02;
    pub const STREAM_FIN: u64 = 0x01;
    pub const MAX_DATA: u64 = 0x10;
    pub const MAX_STREAM_DATA: u64 = 0x11;
    pub const MAX_STREAMS_BIDI: u64 = 0x12;
    pub const MAX_STREAMS_UNI: u64 = 0x13;
    pub const DATA_BLOCKED: u64 = 0x14;
    pub const STREAM_DATA_BLOCKED: u64 = 0x15;
    pub const STREAMS_BLOCKED_BIDI: u64 = 0x16;
    pub const STREAMS_BLOCKED_UNI: u64 = 0x17;
    pub const NEW_CONNECTION_ID: u64 = 0x18;
    pub const RETIRE_CONNECTION_ID: u64 = 0x19;
    pub const PATH_CHALLENGE: u64 = 0x1a;
    pub const PATH_RESPONSE: u64 = 0x1b;
    pub const CONNECTION_CLOSE: u64 = 0x1c;
    pub const APPLICATION_CLOSE: u64 = 0x1d;
    pub const HANDSHAKE_DONE: u64 = 0x1e;
    /// RFC 9221: DATAGRAM without (0x30) and with (0x31) a Length field.
    pub const DATAGRAM: u64 = 0x30;
    pub const DATAGRAM_LEN: u64 = 0x31;
    pub const PATH_ACK: u64 = 0x3e;
    pub const PATH_ACK_ECN: u64 = 0x3f;
    pub const PATH_ABANDON: u64 = 0x3e75;
    pub const PATH_STATUS_BACKUP: u64 = 0x3e76;
    pub const PATH_STATUS_AVAILABLE: u64 = 0x3e77;
    pub const PATH_NEW_CONNECTION_ID: u64 = 0x3e78;
    pub const PATH_RETIRE_CONNECTION_ID: u64 = 0x3e79;
    pub const MAX_PATH_ID: u64 = 0x3e7a;
    pub const PATHS_BLOCKED: u64 = 0x3e7b;
    pub const PATH_CIDS_BLOCKED: u64 = 0x3e7c;
}

/// Largest stream count MAX_STREAMS / STREAMS_BLOCKED may carry (RFC 9000 §19.11).
pub const MAX_STREAMS_LIMIT: u64 = 1 << 60;

/// Largest path ID (multipath draft-21 §2.1: nonce construction).
pub const MAX_PATH_ID_VALUE: u64 = u32::MAX as u64;

/// One decoded frame, borrowing its variable-length payloads from the
/// packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// One or more consecutive PADDING bytes (0x00).
    Padding {
        /// Number of padding bytes.
        len: usize,
    },
    /// PING (0x01).
    Ping,
    /// ACK (0x02/0x03) when `path_id` is `None`; PATH_ACK (0x3e/0x3f) otherwise.
    Ack {
        /// Path whose packet-number space is acknowledged (PATH_ACK only).
        path_id: Option<u64>,
        /// ACK Delay as sent (scale by the peer's ack_delay_exponent).
        ack_delay: u64,
        /// Acknowledged ranges.
        ranges: AckRanges<'a>,
        /// ECN counts (types 0x03 and 0x3f).
        ecn: Option<EcnCounts>,
    },
    /// RESET_STREAM (0x04).
    ResetStream {
        /// Stream ID.
        stream_id: u64,
        /// Application error code.
        error_code: u64,
        /// Final size of the stream.
        final_size: u64,
    },
    /// STOP_SENDING (0x05).
    StopSending {
        /// Stream ID.
        stream_id: u64,
        /// Application error code.
        error_code: u64,
    },
    /// CRYPTO (0x06).
    Crypto {
        /// Offset in the crypto stream of this encryption level.
        offset: u64,
        /// Handshake bytes.
        data: &'a [u8],
    },
    /// NEW_TOKEN (0x07); the token is never empty.
    NewToken {
        /// Address-validation token.
        token: &'a [u8],
    },
    /// STREAM (0x08..=0x0f).
    Stream {
        /// Stream ID.
        stream_id: u64,
        /// Offset of `data` in the stream.
        offset: u64,
        /// Stream bytes.
        data: &'a [u8],
        /// Whether this frame ends the stream.
        fin: bool,
    },
    /// MAX_DATA (0x10).
    MaxData(u64),
    /// MAX_STREAM_DATA (0x11).
    MaxStreamData {
        /// Stream ID.
        stream_id: u64,
        /// New limit.
        max: u64,
    },
    /// MAX_STREAMS (0x12 bidirectional, 0x13 unidirectional).
    MaxStreams {
        /// Whether the limit is for bidirectional streams.
        bidi: bool,
        /// Cumulative stream count (<= 2^60).
        max: u64,
    },
    /// DATA_BLOCKED (0x14).
    DataBlocked(u64),
    /// STREAM_DATA_BLOCKED (0x15).
    StreamDataBlocked {
        /// Stream ID.
        stream_id: u64,
        /// Limit at which the sender was blocked.
        limit: u64,
    },
    /// STREAMS_BLOCKED (0x16 bidirectional, 0x17 unidirectional).
    StreamsBlocked {
        /// Whether the limit is for bidirectional streams.
        bidi: bool,
        /// Stream limit at the time (<= 2^60).
        limit: u64,
    },
    /// NEW_CONNECTION_ID (0x18) when `path_id` is `None`, else
    /// PATH_NEW_CONNECTION_ID (0x3e78).
    NewConnectionId {
        /// Path the ID belongs to (PATH_NEW_CONNECTION_ID only).
        path_id: Option<u64>,
        /// Sequence number (per path for PATH_NEW_CONNECTION_ID).
        seq: u64,
        /// Retire Prior To (<= `seq`).
        retire_prior_to: u64,
        /// The connection ID (1..=20 bytes).
        cid: ConnectionId,
        /// Its stateless reset token.
        reset_token: [u8; RESET_TOKEN_LEN],
    },
    /// RETIRE_CONNECTION_ID (0x19) when `path_id` is `None`, else
    /// PATH_RETIRE_CONNECTION_ID (0x3e79).
    RetireConnectionId {
        /// Path the ID belongs to (PATH_RETIRE_CONNECTION_ID only).
        path_id: Option<u64>,
        /// Sequence number to retire.
        seq: u64,
    },
    /// PATH_CHALLENGE (0x1a).
    PathChallenge([u8; 8]),
    /// PATH_RESPONSE (0x1b).
    PathResponse([u8; 8]),
    /// CONNECTION_CLOSE: transport (0x1c, `frame_type` is `Some`) or
    /// application (0x1d, `frame_type` is `None`).
    ConnectionClose {
        /// Transport or application error code.
        error_code: u64,
        /// Frame type that caused the error (0x1c only; 0 if unknown).
        frame_type: Option<u64>,
        /// Reason phrase (should be UTF-8; not validated).
        reason: &'a [u8],
    },
    /// HANDSHAKE_DONE (0x1e).
    HandshakeDone,
    /// DATAGRAM (RFC 9221; 0x30/0x31). Decoded so that an endpoint which did
    /// not advertise max_datagram_frame_size can reject it with
    /// PROTOCOL_VIOLATION.
    Datagram {
        /// Application payload.
        data: &'a [u8],
    },
    /// PATH_ABANDON (0x3e75).
    PathAbandon {
        /// Path to abandon.
        path_id: u64,
        /// Reason (multipath draft §4.2.1).
        error_code: u64,
    },
    /// PATH_STATUS_BACKUP (0x3e76).
    PathStatusBackup {
        /// Path concerned.
        path_id: u64,
        /// Path Status Sequence Number.
        seq: u64,
    },
    /// PATH_STATUS_AVAILABLE (0x3e77).
    PathStatusAvailable {
        /// Path concerned.
        path_id: u64,
        /// Path Status Sequence Number.
        seq: u64,
    },
    /// MAX_PATH_ID (0x3e7a).
    MaxPathId(u64),
    /// PATHS_BLOCKED (0x3e7b).
    PathsBlocked(u64),
    /// PATH_CIDS_BLOCKED (0x3e7c).
    PathCidsBlocked {
        /// Path lacking connection IDs.
        path_id: u64,
        /// Next sequence number expected to be issued.
        next_seq: u64,
    },
    /// PATH_DSR (0x3f5ec000), the rec extension's desired sending rate
    /// ([`path_dsr`]); only valid if we offered the extension.
    PathDsr {
        /// Path the rate applies to.
        path_id: u64,
        /// Desired sending rate, bytes/s.
        dsr: u64,
    },
    /// TIMESTAMP (0x2f5, [`timestamp`]): the packet's send time on the
    /// sender's clock, as sent (scale by the peer's ack_delay_exponent).
    Timestamp(u64),
}

/// Read a path ID: any value above 2^32-1 exceeds every possible limit.
fn read_path_id(r: &mut Reader<'_>) -> Result<u64, TransportError> {
    let v = r.varint()?;
    if v > MAX_PATH_ID_VALUE {
        return Err(TransportError::violation("path ID above 2^32-1"));
    }
    Ok(v)
}

fn read_cid_frame<'a>(r: &mut Reader<'a>, path_id: Option<u64>) -> Result<Frame<'a>, TransportError> {
    let seq = r.varint()?;
    let retire_prior_to = r.varint()?;
    let len = r.u8()? as usize;
    if len == 0 || len > MAX_CID_LEN {
        return Err(TransportError::encoding("connection ID length not in 1..=20"));
    }
    let cid = ConnectionId::from_slice(r.bytes(len)?).ok_or(TransportError::encoding("bad connection ID"))?;
    let mut reset_token = [0u8; RESET_TOKEN_LEN];
    reset_token.copy_from_slice(r.bytes(RESET_TOKEN_LEN)?);
    if retire_prior_to > seq {
        return Err(TransportError::encoding("retire_prior_to above sequence number"));
    }
    Ok(Frame::NewConnectionId { path_id, seq, retire_prior_to, cid, reset_token })
}

fn read_8(r: &mut Reader<'_>) -> Result<[u8; 8], BufferTooShort> {
    let mut d = [0u8; 8];
    d.copy_from_slice(r.bytes(8)?);
    Ok(d)
}

fn check_stream_count(v: u64) -> Result<u64, TransportError> {
    if v > MAX_STREAMS_LIMIT {
        return Err(TransportError::encoding("stream count above 2^60"));
    }
    Ok(v)
}

fn check_end(offset: u64, len: usize) -> Result<(), TransportError> {
    // RFC 9000 §19.6/§19.8: offset + length must stay within 2^62-1.
    match offset.checked_add(len as u64) {
        Some(end) if end <= VARINT_MAX => Ok(()),
        _ => Err(TransportError::encoding("data beyond offset 2^62-1")),
    }
}

impl<'a> Frame<'a> {
    /// Decode the frame at the reader's position. Call in a loop while the
    /// reader is not empty; an error is connection-fatal and carries the
    /// frame type.
    pub fn decode(r: &mut Reader<'a>) -> Result<Frame<'a>, TransportError> {
        let start = r.pos();
        let ty = r.varint().map_err(|_| TransportError::encoding("truncated frame type"))?;
        if r.pos() - start != varint_len(ty) {
            // RFC 9000 §12.4 allows treating this as PROTOCOL_VIOLATION.
            return Err(TransportError::violation("frame type not minimally encoded").with_frame(ty));
        }
        Self::decode_body(ty, r).map_err(|e| TransportError { frame_type: Some(ty), ..e })
    }

    fn decode_body(t: u64, r: &mut Reader<'a>) -> Result<Frame<'a>, TransportError> {
        Ok(match t {
            ty::PADDING => {
                let mut len = 1;
                while r.peek_u8() == Ok(0) {
                    r.skip(1)?;
                    len += 1;
                }
                Frame::Padding { len }
            }
            ty::PING => Frame::Ping,
            ty::ACK | ty::ACK_ECN | ty::PATH_ACK | ty::PATH_ACK_ECN => {
                let path_id = if t >= ty::PATH_ACK { Some(read_path_id(r)?) } else { None };
                let (ranges, ack_delay) = AckRanges::decode(r)?;
                let ecn = if t & 1 == 1 { Some(EcnCounts::decode(r)?) } else { None };
                Frame::Ack { path_id, ack_delay, ranges, ecn }
            }
            ty::RESET_STREAM => Frame::ResetStream {
                stream_id: r.varint()?,
                error_code: r.varint()?,
                final_size: r.varint()?,
            },
            ty::STOP_SENDING => Frame::StopSending { stream_id: r.varint()?, error_code: r.varint()? },
            ty::CRYPTO => {
                let offset = r.varint()?;
                let data = r.varint_prefixed()?;
                check_end(offset, data.len())?;
                Frame::Crypto { offset, data }
            }
            ty::NEW_TOKEN => {
                let token = r.varint_prefixed()?;
                if token.is_empty() {
                    return Err(TransportError::encoding("empty NEW_TOKEN"));
                }
                Frame::NewToken { token }
            }
            0x08..=0x0f => {
                let stream_id = r.varint()?;
                let offset = if t & ty::STREAM_OFF != 0 { r.varint()? } else { 0 };
                let data =
                    if t & ty::STREAM_LEN != 0 { r.varint_prefixed()? } else { r.bytes(r.remaining())? };
                check_end(offset, data.len())?;
                Frame::Stream { stream_id, offset, data, fin: t & ty::STREAM_FIN != 0 }
            }
            ty::MAX_DATA => Frame::MaxData(r.varint()?),
            ty::MAX_STREAM_DATA => Frame::MaxStreamData { stream_id: r.varint()?, max: r.varint()? },
            ty::MAX_STREAMS_BIDI | ty::MAX_STREAMS_UNI => {
                Frame::MaxStreams { bidi: t == ty::MAX_STREAMS_BIDI, max: check_stream_count(r.varint()?)? }
            }
            ty::DATA_BLOCKED => Frame::DataBlocked(r.varint()?),
            ty::STREAM_DATA_BLOCKED => {
                Frame::StreamDataBlocked { stream_id: r.varint()?, limit: r.varint()? }
            }
            ty::STREAMS_BLOCKED_BIDI | ty::STREAMS_BLOCKED_UNI => Frame::StreamsBlocked {
                bidi: t == ty::STREAMS_BLOCKED_BIDI,
                limit: check_stream_count(r.varint()?)?,
            },
            ty::NEW_CONNECTION_ID => read_cid_frame(r, None)?,
            ty::RETIRE_CONNECTION_ID => Frame::RetireConnectionId { path_id: None, seq: r.varint()? },
            ty::PATH_CHALLENGE => Frame::PathChallenge(read_8(r)?),
            ty::PATH_RESPONSE => Frame::PathResponse(read_8(r)?),
            ty::CONNECTION_CLOSE | ty::APPLICATION_CLOSE => {
                let error_code = r.varint()?;
                let frame_type = if t == ty::CONNECTION_CLOSE { Some(r.varint()?) } else { None };
                let reason = r.varint_prefixed()?;
                Frame::ConnectionClose { error_code, frame_type, reason }
            }
            ty::HANDSHAKE_DONE => Frame::HandshakeDone,
            ty::DATAGRAM => Frame::Datagram { data: r.bytes(r.remaining())? },
            ty::DATAGRAM_LEN => Frame::Datagram { data: r.varint_prefixed()? },
            ty::PATH_ABANDON => Frame::PathAbandon { path_id: read_path_id(r)?, error_code: r.varint()? },
            ty::PATH_STATUS_BACKUP => Frame::PathStatusBackup { path_id: read_path_id(r)?, seq: r.varint()? },
            ty::PATH_STATUS_AVAILABLE => {
                Frame::PathStatusAvailable { path_id: read_path_id(r)?, seq: r.varint()? }
            }
            ty::PATH_NEW_CONNECTION_ID => {
                let path_id = read_path_id(r)?;
                read_cid_frame(r, Some(path_id))?
            }
            ty::PATH_RETIRE_CONNECTION_ID => {
                Frame::RetireConnectionId { path_id: Some(read_path_id(r)?), seq: r.varint()? }
            }
            ty::MAX_PATH_ID => Frame::MaxPathId(read_path_id(r)?),
            ty::PATHS_BLOCKED => Frame::PathsBlocked(read_path_id(r)?),
            ty::PATH_CIDS_BLOCKED => {
                Frame::PathCidsBlocked { path_id: read_path_id(r)?, next_seq: r.varint()? }
            }
            path_dsr::PATH_DSR_FRAME_TYPE => {
                let f = path_dsr::PathDsrFrame::decode_body(r)?;
                Frame::PathDsr { path_id: u64::from(f.path_id.0), dsr: f.dsr }
            }
            timestamp::TIMESTAMP_FRAME_TYPE => Frame::Timestamp(r.varint()?),
            _ => return Err(TransportError::encoding("unknown frame type")),
        })
    }

    /// The wire type this frame encodes with (for STREAM: with LEN always
    /// set, OFF set iff the offset is non-zero; DATAGRAM: 0x31).
    pub fn ty(&self) -> u64 {
        match *self {
            Frame::Padding { .. } => ty::PADDING,
            Frame::Ping => ty::PING,
            Frame::Ack { path_id, ecn, .. } => match (path_id.is_some(), ecn.is_some()) {
                (false, false) => ty::ACK,
                (false, true) => ty::ACK_ECN,
                (true, false) => ty::PATH_ACK,
                (true, true) => ty::PATH_ACK_ECN,
            },
            Frame::ResetStream { .. } => ty::RESET_STREAM,
            Frame::StopSending { .. } => ty::STOP_SENDING,
            Frame::Crypto { .. } => ty::CRYPTO,
            Frame::NewToken { .. } => ty::NEW_TOKEN,
            Frame::Stream { offset, fin, .. } => stream_type(offset, fin, true),
            Frame::MaxData(_) => ty::MAX_DATA,
            Frame::MaxStreamData { .. } => ty::MAX_STREAM_DATA,
            Frame::MaxStreams { bidi: true, .. } => ty::MAX_STREAMS_BIDI,
            Frame::MaxStreams { bidi: false, .. } => ty::MAX_STREAMS_UNI,
            Frame::DataBlocked(_) => ty::DATA_BLOCKED,
            Frame::StreamDataBlocked { .. } => ty::STREAM_DATA_BLOCKED,
            Frame::StreamsBlocked { bidi: true, .. } => ty::STREAMS_BLOCKED_BIDI,
            Frame::StreamsBlocked { bidi: false, .. } => ty::STREAMS_BLOCKED_UNI,
            Frame::NewConnectionId { path_id: None, .. } => ty::NEW_CONNECTION_ID,
            Frame::NewConnectionId { path_id: Some(_), .. } => ty::PATH_NEW_CONNECTION_ID,
            Frame::RetireConnectionId { path_id: None, .. } => ty::RETIRE_CONNECTION_ID,
            Frame::RetireConnectionId { path_id: Some(_), .. } => ty::PATH_RETIRE_CONNECTION_ID,
            Frame::PathChallenge(_) => ty::PATH_CHALLENGE,
            Frame::PathResponse(_) => ty::PATH_RESPONSE,
            Frame::ConnectionClose { frame_type: Some(_), .. } => ty::CONNECTION_CLOSE,
            Frame::ConnectionClose { frame_type: None, .. } => ty::APPLICATION_CLOSE,
            Frame::HandshakeDone => ty::HANDSHAKE_DONE,
            Frame::Datagram { .. } => ty::DATAGRAM_LEN,
            Frame::PathAbandon { .. } => ty::PATH_ABANDON,
            Frame::PathStatusBackup { .. } => ty::PATH_STATUS_BACKUP,
            Frame::PathStatusAvailable { .. } => ty::PATH_STATUS_AVAILABLE,
            Frame::MaxPathId(_) => ty::MAX_PATH_ID,
            Frame::PathsBlocked(_) => ty::PATHS_BLOCKED,
            Frame::PathCidsBlocked { .. } => ty::PATH_CIDS_BLOCKED,
            Frame::PathDsr { .. } => path_dsr::PATH_DSR_FRAME_TYPE,
            Frame::Timestamp(_) => timestamp::TIMESTAMP_FRAME_TYPE,
        }
    }

    /// Whether this is one of the multipath draft's frames (1-RTT only).
    pub fn is_multipath(&self) -> bool {
        matches!(
            self,
            Frame::Ack { path_id: Some(_), .. }
                | Frame::NewConnectionId { path_id: Some(_), .. }
                | Frame::RetireConnectionId { path_id: Some(_), .. }
                | Frame::PathAbandon { .. }
                | Frame::PathStatusBackup { .. }
                | Frame::PathStatusAvailable { .. }
                | Frame::MaxPathId(_)
                | Frame::PathsBlocked(_)
                | Frame::PathCidsBlocked { .. }
                | Frame::PathDsr { .. }
        )
    }

    /// Whether the frame may appear in a packet of type `pt` (RFC 9000
    /// §12.4 Table 3; RFC 9221 §4 for DATAGRAM; multipath draft §4: its
    /// frames, PATH_ACK included, only in 1-RTT). A frame that is not allowed
    /// is a PROTOCOL_VIOLATION.
    pub fn is_allowed_in(&self, pt: PacketType) -> bool {
        match pt {
            PacketType::Short => true,
            PacketType::Initial | PacketType::Handshake => matches!(
                self,
                Frame::Padding { .. }
                    | Frame::Ping
                    | Frame::Ack { path_id: None, .. }
                    | Frame::Crypto { .. }
                    | Frame::ConnectionClose { frame_type: Some(_), .. }
            ),
            PacketType::ZeroRtt => {
                !self.is_multipath()
                    && !matches!(
                        self,
                        Frame::Ack { .. }
                            | Frame::Crypto { .. }
                            | Frame::NewToken { .. }
                            | Frame::PathResponse(_)
                            | Frame::RetireConnectionId { .. }
                            | Frame::HandshakeDone
                            | Frame::Timestamp(_)
                    )
            }
            PacketType::Retry | PacketType::VersionNegotiation => false,
        }
    }

    /// Whether receiving this frame requires an acknowledgement (RFC 9000
    /// §13.2.1: all but ACK, PADDING and CONNECTION_CLOSE; PATH_ACK likewise;
    /// TIMESTAMP, which only travels with ACKs, neither).
    pub fn is_ack_eliciting(&self) -> bool {
        !matches!(
            self,
            Frame::Padding { .. } | Frame::Ack { .. } | Frame::ConnectionClose { .. } | Frame::Timestamp(_)
        )
    }

    /// Whether this is a probing frame (RFC 9000 §9.1: PATH_CHALLENGE,
    /// PATH_RESPONSE, NEW_CONNECTION_ID, PADDING). PATH_NEW_CONNECTION_ID is
    /// treated like NEW_CONNECTION_ID, which it extends.
    pub fn is_probing(&self) -> bool {
        matches!(
            self,
            Frame::Padding { .. }
                | Frame::PathChallenge(_)
                | Frame::PathResponse(_)
                | Frame::NewConnectionId { .. }
        )
    }

    /// Encoded length in bytes of [`Frame::encode`]'s output.
    pub fn encoded_len(&self) -> usize {
        let t = varint_len(self.ty());
        t + match *self {
            Frame::Padding { len } => len.max(1) - 1,
            Frame::Ping | Frame::HandshakeDone => 0,
            Frame::Ack { path_id, ack_delay, ref ranges, ecn } => {
                path_id.map_or(0, varint_len)
                    + varint_len(ranges.largest())
                    + varint_len(ack_delay)
                    + ack::ranges_len(ranges)
                    + ecn.map_or(0, |e| e.encoded_len())
            }
            Frame::ResetStream { stream_id, error_code, final_size } => {
                varint_len(stream_id) + varint_len(error_code) + varint_len(final_size)
            }
            Frame::StopSending { stream_id, error_code } => varint_len(stream_id) + varint_len(error_code),
            Frame::Crypto { offset, data } => varint_len(offset) + prefixed_len(data),
            Frame::NewToken { token } => prefixed_len(token),
            Frame::Stream { stream_id, offset, data, .. } => {
                stream_header_len(stream_id, offset, data.len(), true) - 1 + data.len()
            }
            Frame::MaxData(v)
            | Frame::DataBlocked(v)
            | Frame::MaxPathId(v)
            | Frame::PathsBlocked(v)
            | Frame::Timestamp(v) => varint_len(v),
            Frame::MaxStreams { max: v, .. } | Frame::StreamsBlocked { limit: v, .. } => varint_len(v),
            Frame::MaxStreamData { stream_id: a, max: b }
            | Frame::StreamDataBlocked { stream_id: a, limit: b }
            | Frame::PathAbandon { path_id: a, error_code: b }
            | Frame::PathStatusBackup { path_id: a, seq: b }
            | Frame::PathStatusAvailable { path_id: a, seq: b }
            | Frame::PathCidsBlocked { path_id: a, next_seq: b }
            | Frame::PathDsr { path_id: a, dsr: b } => varint_len(a) + varint_len(b),
            Frame::NewConnectionId { path_id, seq, retire_prior_to, cid, .. } => {
                path_id.map_or(0, varint_len)
                    + varint_len(seq)
                    + varint_len(retire_prior_to)
                    + 1
                    + cid.len()
                    + RESET_TOKEN_LEN
            }
            Frame::RetireConnectionId { path_id, seq } => path_id.map_or(0, varint_len) + varint_len(seq),
            Frame::PathChallenge(_) | Frame::PathResponse(_) => 8,
            Frame::ConnectionClose { error_code, frame_type, reason } => {
                varint_len(error_code) + frame_type.map_or(0, varint_len) + prefixed_len(reason)
            }
            Frame::Datagram { data } => prefixed_len(data),
        }
    }

    /// Write the frame. STREAM and DATAGRAM frames always carry a Length
    /// field, so the output decodes back to the same frame wherever it is
    /// placed in a packet.
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<(), BufferTooShort> {
        if self.encoded_len() > w.remaining() {
            return Err(BufferTooShort);
        }
        if let Frame::Stream { stream_id, offset, data, fin } = *self {
            encode_stream_header(w, stream_id, offset, data.len(), fin, true)?;
            return w.bytes(data);
        }
        w.varint(self.ty())?;
        match *self {
            Frame::Padding { len } => {
                w.reserve(len.max(1) - 1)?.fill(0);
            }
            Frame::Ping | Frame::HandshakeDone | Frame::Stream { .. } => {}
            Frame::Ack { path_id, ack_delay, ref ranges, ecn } => {
                if let Some(p) = path_id {
                    w.varint(p)?;
                }
                w.varint(ranges.largest())?;
                w.varint(ack_delay)?;
                ack::encode_ranges(w, ranges)?;
                if let Some(e) = ecn {
                    e.encode(w)?;
                }
            }
            Frame::ResetStream { stream_id, error_code, final_size } => {
                w.varint(stream_id)?;
                w.varint(error_code)?;
                w.varint(final_size)?;
            }
            Frame::Crypto { offset, data } => {
                w.varint(offset)?;
                w.varint(data.len() as u64)?;
                w.bytes(data)?;
            }
            Frame::NewToken { token: data } | Frame::Datagram { data } => {
                w.varint(data.len() as u64)?;
                w.bytes(data)?;
            }
            Frame::MaxData(v)
            | Frame::DataBlocked(v)
            | Frame::MaxPathId(v)
            | Frame::PathsBlocked(v)
            | Frame::Timestamp(v)
            | Frame::MaxStreams { max: v, .. }
            | Frame::StreamsBlocked { limit: v, .. } => w.varint(v)?,
            Frame::StopSending { stream_id: a, error_code: b }
            | Frame::MaxStreamData { stream_id: a, max: b }
            | Frame::StreamDataBlocked { stream_id: a, limit: b }
            | Frame::PathAbandon { path_id: a, error_code: b }
            | Frame::PathStatusBackup { path_id: a, seq: b }
            | Frame::PathStatusAvailable { path_id: a, seq: b }
            | Frame::PathCidsBlocked { path_id: a, next_seq: b }
            | Frame::PathDsr { path_id: a, dsr: b } => {
                w.varint(a)?;
                w.varint(b)?;
            }
            Frame::NewConnectionId { path_id, seq, retire_prior_to, cid, reset_token } => {
                if let Some(p) = path_id {
                    w.varint(p)?;
                }
                w.varint(seq)?;
                w.varint(retire_prior_to)?;
                w.u8(cid.len() as u8)?;
                w.bytes(cid.as_slice())?;
                w.bytes(&reset_token)?;
            }
            Frame::RetireConnectionId { path_id, seq } => {
                if let Some(p) = path_id {
                    w.varint(p)?;
                }
                w.varint(seq)?;
            }
            Frame::PathChallenge(d) | Frame::PathResponse(d) => w.bytes(&d)?,
            Frame::ConnectionClose { error_code, frame_type, reason } => {
                w.varint(error_code)?;
                if let Some(ft) = frame_type {
                    w.varint(ft)?;
                }
                w.varint(reason.len() as u64)?;
                w.bytes(reason)?;
            }
        }
        Ok(())
    }
}

fn prefixed_len(b: &[u8]) -> usize {
    varint_len(b.len() as u64) + b.len()
}

fn stream_type(offset: u64, fin: bool, with_length: bool) -> u64 {
    let mut t = ty::STREAM;
    if offset != 0 {
        t |= ty::STREAM_OFF;
    }
    if with_length {
        t |= ty::STREAM_LEN;
    }
    if fin {
        t |= ty::STREAM_FIN;
    }
    t
}

/// Length of a STREAM frame header (type, stream ID, offset if non-zero,
/// and Length if `with_length`) for `data_len` bytes of data.
pub fn stream_header_len(stream_id: u64, offset: u64, data_len: usize, with_length: bool) -> usize {
    1 + varint_len(stream_id)
        + if offset != 0 { varint_len(offset) } else { 0 }
        + if with_length { varint_len(data_len as u64) } else { 0 }
}

/// Write a STREAM frame header; the caller copies `data_len` bytes of
/// stream data right after it. Without a Length field the frame must be
/// the last in the packet.
pub fn encode_stream_header(
    w: &mut Writer<'_>,
    stream_id: u64,
    offset: u64,
    data_len: usize,
    fin: bool,
    with_length: bool,
) -> Result<(), BufferTooShort> {
    if stream_header_len(stream_id, offset, data_len, with_length) > w.remaining() {
        return Err(BufferTooShort);
    }
    w.u8(stream_type(offset, fin, with_length) as u8)?;
    w.varint(stream_id)?;
    if offset != 0 {
        w.varint(offset)?;
    }
    if with_length {
        w.varint(data_len as u64)?;
    }
    Ok(())
}

/// Most data that fits together with its Length varint in `avail` bytes,
/// capped so that `offset + len` stays within 2^62-1.
fn max_prefixed_data(avail: usize, offset: u64) -> usize {
    let mut best = 0u64;
    for (lb, maxv) in [(1usize, 63u64), (2, 16_383), (4, (1 << 30) - 1), (8, VARINT_MAX)] {
        if avail > lb {
            best = best.max(((avail - lb) as u64).min(maxv));
        }
    }
    best.min(VARINT_MAX - offset.min(VARINT_MAX)) as usize
}

/// How many bytes of stream data fit in a STREAM frame (with a Length
/// field) of at most `room` bytes. 0 means at most a FIN-only frame fits,
/// if `stream_header_len(.., 0, true) <= room`. Without a Length field the
/// answer is `room - stream_header_len(stream_id, offset, 0, false)`.
pub fn stream_max_data_len(room: usize, stream_id: u64, offset: u64) -> usize {
    let base = stream_header_len(stream_id, offset, 0, false);
    max_prefixed_data(room.saturating_sub(base), offset)
}

/// Length of a CRYPTO frame header for `data_len` bytes at `offset`.
pub fn crypto_header_len(offset: u64, data_len: usize) -> usize {
    1 + varint_len(offset) + varint_len(data_len as u64)
}

/// Write a CRYPTO frame header; the caller copies `data_len` bytes after it.
pub fn encode_crypto_header(w: &mut Writer<'_>, offset: u64, data_len: usize) -> Result<(), BufferTooShort> {
    if crypto_header_len(offset, data_len) > w.remaining() {
        return Err(BufferTooShort);
    }
    w.u8(ty::CRYPTO as u8)?;
    w.varint(offset)?;
    w.varint(data_len as u64)
}

/// How many bytes of handshake data fit in a CRYPTO frame of at most `room`
/// bytes.
pub fn crypto_max_data_len(room: usize, offset: u64) -> usize {
    let base = 1 + varint_len(offset);
    max_prefixed_data(room.saturating_sub(base), offset)
}

/// Decode every frame of a decrypted packet payload, calling `f` for each.
/// Enforces RFC 9000 §12.4's "at least one frame" (PROTOCOL_VIOLATION).
pub fn for_each_frame<'a>(
    payload: &'a [u8],
    mut f: impl FnMut(Frame<'a>) -> Result<(), TransportError>,
) -> Result<(), TransportError> {
    if payload.is_empty() {
        return Err(TransportError::new(ErrorCode::PROTOCOL_VIOLATION, "packet without frames"));
    }
    let mut r = Reader::new(payload);
    while !r.is_empty() {
        f(Frame::decode(&mut r)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
