//! Errors: wire errors carry the QUIC error code, the offending frame type and a
//! static reason (RFC 9000 §20, draft-ietf-quic-multipath-21 §10); API errors are
//! small enums next to the operation that returns them.

use std::fmt;

/// A QUIC transport error code (RFC 9000 §20.1, multipath draft §10).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub u64);

#[allow(missing_docs)]
impl ErrorCode {
    pub const NO_ERROR: Self = Self(0x00);
    pub const INTERNAL_ERROR: Self = Self(0x01);
    pub const CONNECTION_REFUSED: Self = Self(0x02);
    pub const FLOW_CONTROL_ERROR: Self = Self(0x03);
    pub const STREAM_LIMIT_ERROR: Self = Self(0x04);
    pub const STREAM_STATE_ERROR: Self = Self(0x05);
    pub const FINAL_SIZE_ERROR: Self = Self(0x06);
    pub const FRAME_ENCODING_ERROR: Self = Self(0x07);
    pub const TRANSPORT_PARAMETER_ERROR: Self = Self(0x08);
    pub const CONNECTION_ID_LIMIT_ERROR: Self = Self(0x09);
    pub const PROTOCOL_VIOLATION: Self = Self(0x0a);
    pub const INVALID_TOKEN: Self = Self(0x0b);
    pub const APPLICATION_ERROR: Self = Self(0x0c);
    pub const CRYPTO_BUFFER_EXCEEDED: Self = Self(0x0d);
    pub const KEY_UPDATE_ERROR: Self = Self(0x0e);
    pub const AEAD_LIMIT_REACHED: Self = Self(0x0f);
    pub const NO_VIABLE_PATH: Self = Self(0x10);
    /// RFC 9368 §4: version negotiation was tampered with or inconsistent.
    pub const VERSION_NEGOTIATION_ERROR: Self = Self(0x11);
    /// TLS alerts are mapped to 0x0100 + alert (RFC 9001 §4.8).
    pub const CRYPTO_ERROR_BASE: Self = Self(0x0100);
    /// draft-ietf-quic-multipath-21 §4.3.1 / §9 (PATH_ABANDON codes).
    pub const APPLICATION_ABANDON_PATH: Self = Self(0x3e);
    pub const PATH_RESOURCE_LIMIT_REACHED: Self = Self(0x3e75);
    pub const PATH_UNSTABLE_OR_POOR: Self = Self(0x3e76);
    pub const NO_CID_AVAILABLE_FOR_PATH: Self = Self(0x3e77);

    /// The code for a TLS alert.
    pub fn crypto(alert: u8) -> Self {
        Self(0x0100 + alert as u64)
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match *self {
            Self::NO_ERROR => "NO_ERROR",
            Self::INTERNAL_ERROR => "INTERNAL_ERROR",
            Self::CONNECTION_REFUSED => "CONNECTION_REFUSED",
            Self::FLOW_CONTROL_ERROR => "FLOW_CONTROL_ERROR",
            Self::STREAM_LIMIT_ERROR => "STREAM_LIMIT_ERROR",
            Self::STREAM_STATE_ERROR => "STREAM_STATE_ERROR",
            Self::FINAL_SIZE_ERROR => "FINAL_SIZE_ERROR",
            Self::FRAME_ENCODING_ERROR => "FRAME_ENCODING_ERROR",
            Self::TRANSPORT_PARAMETER_ERROR => "TRANSPORT_PARAMETER_ERROR",
            Self::CONNECTION_ID_LIMIT_ERROR => "CONNECTION_ID_LIMIT_ERROR",
            Self::PROTOCOL_VIOLATION => "PROTOCOL_VIOLATION",
            Self::INVALID_TOKEN => "INVALID_TOKEN",
            Self::APPLICATION_ERROR => "APPLICATION_ERROR",
            Self::CRYPTO_BUFFER_EXCEEDED => "CRYPTO_BUFFER_EXCEEDED",
            Self::KEY_UPDATE_ERROR => "KEY_UPDATE_ERROR",
            Self::AEAD_LIMIT_REACHED => "AEAD_LIMIT_REACHED",
            Self::NO_VIABLE_PATH => "NO_VIABLE_PATH",
            Self::VERSION_NEGOTIATION_ERROR => "VERSION_NEGOTIATION_ERROR",
            Self::PATH_UNSTABLE_OR_POOR => "PATH_UNSTABLE_OR_POOR",
            Self::APPLICATION_ABANDON_PATH => "APPLICATION_ABANDON_PATH",
            Self::NO_CID_AVAILABLE_FOR_PATH => "NO_CID_AVAILABLE_FOR_PATH",
            Self::PATH_RESOURCE_LIMIT_REACHED => "PATH_RESOURCE_LIMIT_REACHED",
            ErrorCode(c) if (0x100..0x200).contains(&c) => {
                return write!(f, "CRYPTO_ERROR({:#x})", c - 0x100)
            }
            ErrorCode(c) => return write!(f, "{c:#x}"),
        };
        f.write_str(name)
    }
}

/// A connection-fatal error detected while processing the peer's packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportError {
    /// The QUIC error code sent in CONNECTION_CLOSE.
    pub code: ErrorCode,
    /// The frame type that triggered it, if any.
    pub frame_type: Option<u64>,
    /// A short human-readable reason (also sent on the wire).
    pub reason: &'static str,
}

impl TransportError {
    /// An error with no frame type.
    pub const fn new(code: ErrorCode, reason: &'static str) -> Self {
        Self { code, frame_type: None, reason }
    }
    /// Attach the frame type that caused the error.
    pub const fn with_frame(mut self, frame_type: u64) -> Self {
        self.frame_type = Some(frame_type);
        self
    }
    /// FRAME_ENCODING_ERROR shortcut.
    pub const fn encoding(reason: &'static str) -> Self {
        Self::new(ErrorCode::FRAME_ENCODING_ERROR, reason)
    }
    /// PROTOCOL_VIOLATION shortcut.
    pub const fn violation(reason: &'static str) -> Self {
        Self::new(ErrorCode::PROTOCOL_VIOLATION, reason)
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.code, self.reason)?;
        if let Some(t) = self.frame_type {
            write!(f, " (frame type {t:#x})")?;
        }
        Ok(())
    }
}

impl std::error::Error for TransportError {}

/// The input ended before a complete field could be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferTooShort;

impl From<BufferTooShort> for TransportError {
    fn from(_: BufferTooShort) -> Self {
        TransportError::encoding("truncated field")
    }
}
