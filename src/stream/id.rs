//! Stream identifiers (RFC 9000 §2.1): the two low bits name the initiator
//! and the direction, the rest is the stream's index within its type.

use std::fmt;

/// Which endpoint a connection (or a stream's initiator) is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The endpoint that sent the first Initial packet.
    Client,
    /// The endpoint that accepted the connection.
    Server,
}

impl Side {
    /// The other endpoint.
    pub fn peer(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

/// Whether a stream carries data both ways or only from its initiator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamDir {
    /// Bidirectional.
    Bidi,
    /// Unidirectional (initiator sends, the other endpoint receives).
    Uni,
}

impl StreamDir {
    /// 0 for bidi, 1 for uni: an index into per-direction arrays.
    #[inline]
    pub fn index(self) -> usize {
        match self {
            StreamDir::Bidi => 0,
            StreamDir::Uni => 1,
        }
    }
}

/// A QUIC stream ID (a 62-bit integer).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId(pub u64);

impl StreamId {
    /// Largest encodable stream ID (2^62 - 1).
    pub const MAX: u64 = (1 << 62) - 1;
    /// Largest stream count a MAX_STREAMS frame or parameter may carry (§4.6).
    pub const MAX_COUNT: u64 = 1 << 60;

    /// The stream of the given type with the given index.
    pub fn new(initiator: Side, dir: StreamDir, index: u64) -> StreamId {
        let init = match initiator {
            Side::Client => 0,
            Side::Server => 1,
        };
        let d = match dir {
            StreamDir::Bidi => 0,
            StreamDir::Uni => 2,
        };
        StreamId((index << 2) | d | init)
    }

    /// The endpoint that opened (or will open) this stream.
    #[inline]
    pub fn initiator(self) -> Side {
        if self.0 & 1 == 0 {
            Side::Client
        } else {
            Side::Server
        }
    }

    /// Bidirectional or unidirectional.
    #[inline]
    pub fn dir(self) -> StreamDir {
        if self.0 & 2 == 0 {
            StreamDir::Bidi
        } else {
            StreamDir::Uni
        }
    }

    /// Whether the stream is bidirectional.
    #[inline]
    pub fn is_bidi(self) -> bool {
        self.dir() == StreamDir::Bidi
    }

    /// Position among the streams of the same initiator and direction.
    #[inline]
    pub fn index(self) -> u64 {
        self.0 >> 2
    }

    /// The two type bits (0..4): an index into per-type arrays.
    #[inline]
    pub fn type_bits(self) -> usize {
        (self.0 & 3) as usize
    }

    /// Whether `side` opened this stream.
    #[inline]
    pub fn is_local(self, side: Side) -> bool {
        self.initiator() == side
    }

    /// Whether `side` may send on this stream.
    pub fn can_send(self, side: Side) -> bool {
        self.is_bidi() || self.is_local(side)
    }

    /// Whether `side` may receive on this stream.
    pub fn can_recv(self, side: Side) -> bool {
        self.is_bidi() || !self.is_local(side)
    }
}

impl fmt::Debug for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StreamId({})", self.0)
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl From<u64> for StreamId {
    fn from(v: u64) -> Self {
        StreamId(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_bits_match_rfc_table() {
        // RFC 9000 §2.1 Table 1.
        let c_bidi = StreamId(0);
        let s_bidi = StreamId(1);
        let c_uni = StreamId(2);
        let s_uni = StreamId(3);
        assert_eq!((c_bidi.initiator(), c_bidi.dir()), (Side::Client, StreamDir::Bidi));
        assert_eq!((s_bidi.initiator(), s_bidi.dir()), (Side::Server, StreamDir::Bidi));
        assert_eq!((c_uni.initiator(), c_uni.dir()), (Side::Client, StreamDir::Uni));
        assert_eq!((s_uni.initiator(), s_uni.dir()), (Side::Server, StreamDir::Uni));
        assert_eq!(StreamId(15).index(), 3);
        assert_eq!(StreamId::new(Side::Server, StreamDir::Uni, 3), StreamId(15));
        assert_eq!(StreamId::new(Side::Client, StreamDir::Bidi, 2), StreamId(8));
    }

    #[test]
    fn send_recv_permissions() {
        let c_uni = StreamId(2);
        assert!(c_uni.can_send(Side::Client) && !c_uni.can_recv(Side::Client));
        assert!(!c_uni.can_send(Side::Server) && c_uni.can_recv(Side::Server));
        assert!(StreamId(4).can_send(Side::Server) && StreamId(4).can_recv(Side::Server));
    }
}
