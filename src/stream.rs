//! Streams and flow control (RFC 9000 §2-4, §19.4-19.14).
//!
//! This module never touches wire bytes: the connection parses frames and
//! hands their fields to [`Streams`]' `on_*` handlers, and asks it what to
//! put in the frames it builds ([`Streams::next_to_send`] /
//! [`Streams::send_chunk`] / [`Streams::copy_data`] for STREAM frames,
//! [`Streams::next_control`] for the others).
//!
//! Copies: application data is copied once into a [`SendStream`] buffer and
//! once from it into the packet; received data once into the reassembly
//! buffer and once out to the application.

use std::fmt;

pub mod flow;
pub mod id;
mod map;
pub mod recv;
pub mod send;

pub use flow::{RecvWindow, SendCredit};
pub use id::{Side, StreamDir, StreamId};
pub use map::{PeerLimits, Stream, Streams, StreamsConfig};
pub use recv::{FlowDelta, RecvStream};
pub use send::{Chunk, ResetState, SendStream};

/// Capacity for a new buffer segment that starts `offset` bytes into its
/// stream: as much as the stream has carried so far, between 1 KiB and
/// `max`. A stream that carries a few bytes (HTTP/3 control, QPACK,
/// request headers) then holds about that much, not a bulk-sized
/// segment; a bulk stream reaches `max` after a handful of doublings.
pub(crate) fn segment_capacity(offset: u64, max: usize) -> usize {
    const MIN: u64 = 1024;
    let grown = offset.checked_next_power_of_two().unwrap_or(u64::MAX);
    grown.clamp(MIN, max as u64) as usize
}

/// Errors returned to the application by stream calls. None of them is
/// fatal to the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamError {
    /// Nothing to do right now: no data to read, or no buffer space to write.
    Done,
    /// The call does not fit the stream's state (e.g. writing to a
    /// receive-only or already reset stream, reading a send-only one).
    InvalidState,
    /// Opening the stream would exceed the peer's MAX_STREAMS limit.
    StreamLimit,
    /// The peer reset the stream with this application error code.
    Reset(u64),
    /// The peer asked us to stop sending with this application error code.
    StopSending(u64),
    /// The stream does not exist (never opened, or already closed).
    UnknownStream,
    /// Data written after FIN, or beyond the largest possible offset.
    FinalSize,
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Done => f.write_str("nothing to do"),
            StreamError::InvalidState => f.write_str("invalid stream state"),
            StreamError::StreamLimit => f.write_str("stream limit reached"),
            StreamError::Reset(c) => write!(f, "stream reset by peer (code {c:#x})"),
            StreamError::StopSending(c) => write!(f, "peer sent STOP_SENDING (code {c:#x})"),
            StreamError::UnknownStream => f.write_str("unknown stream"),
            StreamError::FinalSize => f.write_str("write beyond final size"),
        }
    }
}

impl std::error::Error for StreamError {}

/// A stream-related control frame to send. The connection encodes it; on
/// loss it hands it back to [`Streams::on_control_lost`], which re-queues it
/// with the *current* value if still relevant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlFrame {
    /// MAX_DATA (type 0x10).
    MaxData(u64),
    /// MAX_STREAM_DATA (type 0x11).
    MaxStreamData {
        /// Stream.
        id: StreamId,
        /// New limit.
        max: u64,
    },
    /// MAX_STREAMS (type 0x12 bidi, 0x13 uni).
    MaxStreams {
        /// Bidirectional (true) or unidirectional.
        bidi: bool,
        /// Cumulative stream count.
        max: u64,
    },
    /// DATA_BLOCKED (type 0x14).
    DataBlocked(u64),
    /// STREAM_DATA_BLOCKED (type 0x15).
    StreamDataBlocked {
        /// Stream.
        id: StreamId,
        /// The peer's limit we are blocked at.
        limit: u64,
    },
    /// STREAMS_BLOCKED (type 0x16 bidi, 0x17 uni).
    StreamsBlocked {
        /// Bidirectional (true) or unidirectional.
        bidi: bool,
        /// The peer's stream count limit.
        limit: u64,
    },
    /// RESET_STREAM (type 0x04).
    ResetStream {
        /// Stream.
        id: StreamId,
        /// Application error code.
        code: u64,
        /// Final size.
        final_size: u64,
    },
    /// STOP_SENDING (type 0x05).
    StopSending {
        /// Stream.
        id: StreamId,
        /// Application error code.
        code: u64,
    },
}

#[cfg(test)]
mod tests;
