//! HTTP/3 (RFC 9114) with QPACK (RFC 9204), over any QUIC connection that
//! implements the small [`Transport`] trait.
//!
//! We advertise `SETTINGS_QPACK_MAX_TABLE_CAPACITY = 0`: our encoder uses only
//! the static table and literals, and our decoder refuses dynamic-table
//! references with QPACK_DECOMPRESSION_FAILED (or QPACK_ENCODER_STREAM_ERROR on
//! the encoder stream) rather than misreading them.
//!
//! As in quiche, [`Connection`] borrows the transport on each call
//! (`poll(&mut conn)`), so the QUIC connection stays owned by the caller.

pub mod connection;
pub mod error;
pub mod fetch;
pub mod frame;
pub mod message;
pub mod qpack;
pub mod quic;
pub mod stream;

pub use connection::{Config, Connection, Error, Event};
pub use error::{H3Code, H3Error};
pub use fetch::{Fetch, FetchError, FetchEvent};
pub use message::Header;

/// Why a transport stream operation did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamError {
    /// Nothing can be done now: no data to read, or no flow-control credit
    /// to write. Try again after the next packets are processed.
    Blocked,
    /// The peer reset the stream (RESET_STREAM) with this application code.
    Reset(u64),
    /// The peer asked us to stop sending (STOP_SENDING) with this code.
    Stopped(u64),
    /// No such stream, or the operation does not fit its direction.
    InvalidStream,
    /// The connection is closed.
    Closed,
    /// The stream limit allows no new stream of this type now.
    StreamLimit,
}

/// The QUIC connection as HTTP/3 needs it. Modelled on quiche's stream API,
/// so a QUIC connection can implement it in a few lines.
pub trait Transport {
    /// Whether this endpoint is the server.
    fn is_server(&self) -> bool;
    /// Open the next locally-initiated bidirectional stream; returns its ID.
    fn open_bidi_stream(&mut self) -> Result<u64, StreamError>;
    /// Open the next locally-initiated unidirectional stream; returns its ID.
    fn open_uni_stream(&mut self) -> Result<u64, StreamError>;
    /// Queue `data` on stream `id`; returns how many bytes were accepted
    /// (possibly fewer than offered). `fin` takes effect only if every byte
    /// was accepted. `Err(Blocked)` means none were.
    fn stream_send(&mut self, id: u64, data: &[u8], fin: bool) -> Result<usize, StreamError>;
    /// As [`stream_send`](Self::stream_send), holding a slice of `data`
    /// instead of a copy where the transport can (the default copies).
    fn stream_send_bytes(&mut self, id: u64, data: &crate::Bytes, fin: bool) -> Result<usize, StreamError> {
        self.stream_send(id, data, fin)
    }
    /// How many bytes `stream_send` would accept on `id` right now.
    fn stream_capacity(&self, id: u64) -> Result<usize, StreamError>;
    /// Read from stream `id` into `buf`: `(bytes, fin)`. `Err(Blocked)` (or
    /// `Ok((0, false))`) when nothing is available.
    fn stream_recv(&mut self, id: u64, buf: &mut [u8]) -> Result<(usize, bool), StreamError>;
    /// Streams with data (or a FIN or reset) to read.
    fn readable(&self) -> Vec<u64>;
    /// Send STOP_SENDING for `id` with application error `code`.
    fn stop_sending(&mut self, id: u64, code: u64);
    /// Send RESET_STREAM for `id` with application error `code`.
    fn reset_stream(&mut self, id: u64, code: u64);
    /// Close the connection with an application error (CONNECTION_CLOSE
    /// of type 0x1d).
    fn close(&mut self, code: u64, reason: &[u8]);
}
