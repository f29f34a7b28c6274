//! mpquic: a sans-IO multipath QUIC transport (RFC 9000/9001/9002 and
//! draft-ietf-quic-multipath-21) with per-path, optionally coupled, congestion
//! control and pluggable per-packet path schedulers.
//!
//! The engine never reads a clock or touches a socket: every call that depends
//! on time takes `now`, and datagrams go in and out as byte slices.

#![warn(missing_docs, unreachable_pub)]
#![deny(clippy::disallowed_methods)]

pub mod cc;
pub mod codec;
pub mod config;
mod conn;
pub mod crypto;
pub mod endpoint;
pub mod error;
pub mod frame;
pub mod h3;
pub mod pacer;
pub mod packet;
pub mod path;
pub mod qlog;
pub mod ranges;
pub mod recovery;
pub mod rtt;
pub mod sbd;
pub mod sched;
pub mod server;
pub mod stream;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod transport_params;
pub mod version;

/// The shared byte buffer [`Connection::stream_send_bytes`] takes (re-exported
/// so callers need no version of their own).
pub use bytes::Bytes;
pub use config::{Config, ConfigError};
pub use conn::{
    accept, connect, connect_with_session, random_cid, random_cid_with_prefix, CloseInfo, Connection,
    DgramError, Ecn, Error, PathError, PathEvent, PathStats, PathStatus, RecvInfo, SendInfo, Stats,
    PROTOCOL_VERSION,
};
pub use endpoint::{Endpoint, EndpointConfig, EndpointSecret};
pub use error::{ErrorCode, TransportError};
pub use packet::ConnectionId;
pub use path::{EcnState, PathId};
pub use version::Version;
