//! HTTP/3 (RFC 9114 §8.1) and QPACK (RFC 9204 §6) application error codes.

/// An HTTP/3 or QPACK application error code, as carried in
/// CONNECTION_CLOSE, RESET_STREAM and STOP_SENDING.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct H3Code(pub u64);

impl H3Code {
    /// No error; used when closing a connection or stream gracefully.
    pub const NO_ERROR: Self = Self(0x0100);
    /// Peer violated the protocol in a way no more specific code covers.
    pub const GENERAL_PROTOCOL_ERROR: Self = Self(0x0101);
    /// An internal error in the HTTP stack.
    pub const INTERNAL_ERROR: Self = Self(0x0102);
    /// Peer created a stream that will not be accepted.
    pub const STREAM_CREATION_ERROR: Self = Self(0x0103);
    /// A stream required by the connection was closed or reset.
    pub const CLOSED_CRITICAL_STREAM: Self = Self(0x0104);
    /// A frame not permitted in the current state or on this stream.
    pub const FRAME_UNEXPECTED: Self = Self(0x0105);
    /// A frame that fails its layout requirements or has an invalid size.
    pub const FRAME_ERROR: Self = Self(0x0106);
    /// Peer is generating excessive load.
    pub const EXCESSIVE_LOAD: Self = Self(0x0107);
    /// A stream ID or push ID was used incorrectly.
    pub const ID_ERROR: Self = Self(0x0108);
    /// Error in the payload of a SETTINGS frame.
    pub const SETTINGS_ERROR: Self = Self(0x0109);
    /// No SETTINGS frame at the start of the control stream.
    pub const MISSING_SETTINGS: Self = Self(0x010a);
    /// The server rejected a request without doing any processing.
    pub const REQUEST_REJECTED: Self = Self(0x010b);
    /// The request or its response was cancelled.
    pub const REQUEST_CANCELLED: Self = Self(0x010c);
    /// The client's stream terminated without a fully formed request.
    pub const REQUEST_INCOMPLETE: Self = Self(0x010d);
    /// An HTTP message was malformed.
    pub const MESSAGE_ERROR: Self = Self(0x010e);
    /// The TCP connection for a CONNECT request was reset or closed.
    pub const CONNECT_ERROR: Self = Self(0x010f);
    /// The request should be retried over HTTP/1.1.
    pub const VERSION_FALLBACK: Self = Self(0x0110);
    /// A field section could not be interpreted (RFC 9204 §6).
    pub const QPACK_DECOMPRESSION_FAILED: Self = Self(0x0200);
    /// An encoder-stream instruction could not be interpreted.
    pub const QPACK_ENCODER_STREAM_ERROR: Self = Self(0x0201);
    /// A decoder-stream instruction could not be interpreted.
    pub const QPACK_DECODER_STREAM_ERROR: Self = Self(0x0202);
}

/// A protocol error detected in what the peer sent: the code to send and a
/// short reason for logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct H3Error {
    /// The application error code that goes on the wire.
    pub code: H3Code,
    /// Why, for logs and the CONNECTION_CLOSE reason phrase.
    pub reason: &'static str,
}

impl H3Error {
    /// An error with `code` and `reason`.
    pub const fn new(code: H3Code, reason: &'static str) -> Self {
        Self { code, reason }
    }
    /// H3_FRAME_ERROR.
    pub const fn frame(reason: &'static str) -> Self {
        Self::new(H3Code::FRAME_ERROR, reason)
    }
    /// H3_FRAME_UNEXPECTED.
    pub const fn unexpected(reason: &'static str) -> Self {
        Self::new(H3Code::FRAME_UNEXPECTED, reason)
    }
    /// H3_MESSAGE_ERROR.
    pub const fn message(reason: &'static str) -> Self {
        Self::new(H3Code::MESSAGE_ERROR, reason)
    }
    /// QPACK_DECOMPRESSION_FAILED.
    pub const fn qpack(reason: &'static str) -> Self {
        Self::new(H3Code::QPACK_DECOMPRESSION_FAILED, reason)
    }
}

impl std::fmt::Display for H3Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "h3 error {:#x}: {}", self.code.0, self.reason)
    }
}

impl std::error::Error for H3Error {}
