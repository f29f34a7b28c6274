//! Per-stream receive state for the HTTP/3 connection: what a unidirectional
//! stream turned out to be, and where a request stream is in its message.

use super::frame::{FrameDecoder, VarintAccumulator};
use super::qpack::{DecoderStreamParser, EncoderStreamParser};

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub const UNI_CONTROL: u64 = 0x00;
/// Push stream type.
pub const UNI_PUSH: u64 = 0x01;
/// QPACK encoder stream type.
pub const UNI_QPACK_ENCODER: u64 = 0x02;
/// QPACK decoder stream type.
pub const UNI_QPACK_DECODER: u64 = 0x03;

/// What a peer-initiated unidirectional stream carries.
#[derive(Debug)]
pub(crate) enum UniKind {
    /// Stream type not fully received yet.
    Pending(VarintAccumulator),
    /// The peer's control stream.
    Control { frames: Box<FrameDecoder>, settings_seen: bool },
    /// The peer's QPACK encoder stream.
    Encoder(EncoderStreamParser),
    /// The peer's QPACK decoder stream.
    Decoder(DecoderStreamParser),
    /// Unknown or refused type: we sent STOP_SENDING and drop its bytes.
    Ignored,
}

impl UniKind {
    /// Control and QPACK streams must stay open for the whole connection.
    pub(crate) fn is_critical(&self) -> bool {
        matches!(self, UniKind::Control { .. } | UniKind::Encoder(_) | UniKind::Decoder(_))
    }
}

/// Where a request stream is in receiving its message (RFC 9114 §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Waiting for the (final) header section.
    Headers,
    /// Header section received: DATA or trailers may follow.
    Body,
    /// Trailers received: only the end of the stream may follow.
    Trailers,
}

/// Receive side of a request stream.
#[derive(Debug)]
pub(crate) struct RequestRecv {
    /// Bytes read from the transport and not yet decoded.
    pub(crate) buf: Vec<u8>,
    /// Start of the undecoded bytes in `buf`.
    pub(crate) pos: usize,
    /// The transport reported the end of the stream.
    pub(crate) fin: bool,
    pub(crate) frames: FrameDecoder,
    pub(crate) phase: Phase,
    /// A Data event was emitted and the application has not drained it yet.
    pub(crate) data_event_sent: bool,
    /// content-length announced by the header section, if any.
    pub(crate) content_length: Option<u64>,
    /// DATA payload bytes announced so far.
    pub(crate) data_len: u64,
}

impl RequestRecv {
    pub(crate) fn new(max_frame: u64) -> Self {
        Self {
            buf: Vec::new(),
            pos: 0,
            fin: false,
            frames: FrameDecoder::new(max_frame),
            phase: Phase::Headers,
            data_event_sent: false,
            content_length: None,
            data_len: 0,
        }
    }

    /// Undecoded bytes held.
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// Drop consumed bytes once everything held was decoded.
    pub(crate) fn compact(&mut self) {
        if self.pos >= self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
    }
}

/// Send side of a request stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendPhase {
    /// Nothing sent yet (a server's side of a new request).
    Idle,
    /// Only informational (1xx) headers sent.
    Interim,
    /// Final header section sent: body may follow.
    Body,
    /// FIN sent (or queued).
    Done,
}
