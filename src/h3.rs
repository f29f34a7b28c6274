//! HTTP/3 (RFC 9114) with QPACK (RFC 9204).

pub mod error;
pub mod frame;
pub mod message;
pub mod qpack;

pub use error::{H3Code, H3Error};
pub use message::Header;
