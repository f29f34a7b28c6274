//! What a sent packet carried, kept until the packet is acknowledged or lost so
//! that lost information can be sent again (RFC 9000 §13.3).

use smallvec::SmallVec;

use crate::crypto::Level;
use crate::stream::ControlFrame;
use crate::PathId;

/// One retransmittable (or ACK-tracking) item of a sent packet.
#[derive(Clone, Debug)]
pub(crate) enum SentFrame {
    /// STREAM data.
    Stream { id: u64, offset: u64, len: u32, fin: bool },
    /// A redundant copy of STREAM data carried (reliably) by another
    /// packet: its acknowledgement counts, its loss does not.
    StreamCopy { id: u64, offset: u64, len: u32, fin: bool },
    /// CRYPTO data at an encryption level.
    Crypto { level: Level, offset: u64, len: u32 },
    /// A flow-control / stream-state frame; resent with current values.
    Control(ControlFrame),
    /// An ACK (or PATH_ACK) whose largest acknowledged was this; once the
    /// packet carrying it is acknowledged the ranges below can be forgotten.
    Ack { largest: u64 },
    /// A PATH_ACK for another path's packet-number space than the one the
    /// carrying packet was sent on.
    PathAck { path: PathId, largest: u64 },
    /// HANDSHAKE_DONE.
    HandshakeDone,
    /// NEW_TOKEN (not resent: a lost token only costs the client a Retry).
    NewToken,
    /// (PATH_)NEW_CONNECTION_ID.
    NewCid { path: PathId, seq: u64 },
    /// (PATH_)RETIRE_CONNECTION_ID.
    RetireCid { path: PathId, seq: u64 },
    /// PATH_ABANDON (resent until acknowledged).
    PathAbandon { path: PathId, code: u64 },
    /// PATH_STATUS_BACKUP / PATH_STATUS_AVAILABLE with this sequence number.
    PathStatus { path: PathId, seq: u64 },
    /// MAX_PATH_ID with this value.
    MaxPathId(u32),
    /// PATHS_BLOCKED / PATH_CIDS_BLOCKED (informational, resent if lost).
    Blocked,
    /// A packet with only PING/PADDING/PATH_CHALLENGE content.
    Ping,
}

/// The frames of one sent packet. Two inline slots cover the bulk-transfer
/// case (one STREAM frame plus an ACK) without a heap allocation.
pub(crate) type SentFrames = SmallVec<[SentFrame; 2]>;

/// STREAM data bytes in `frames` (new data, retransmissions and copies).
pub(crate) fn stream_bytes(frames: &SentFrames) -> usize {
    let len = |f: &SentFrame| match f {
        SentFrame::Stream { len, .. } | SentFrame::StreamCopy { len, .. } => *len as usize,
        _ => 0,
    };
    frames.iter().map(len).sum()
}
