//! A path moving to another address pair (RFC 9000 §9): the new pair is
//! validated with PATH_CHALLENGEs while the path keeps sending on the old
//! one, and taken once a PATH_RESPONSE answers (§9.2, §9.6.1).

use std::net::SocketAddr;
use std::time::Instant;

use super::Challenges;

/// The address pair a path is moving to, under validation.
#[derive(Debug)]
pub(crate) struct Migration {
    pub(crate) local: SocketAddr,
    pub(crate) peer: SocketAddr,
    /// Sequence number of the peer's connection ID to use there: never the
    /// one in use on the old pair (§9.5).
    pub(crate) dcid_seq: u64,
    pub(crate) challenges: Challenges,
    /// When the next PATH_CHALLENGE goes out.
    pub(crate) next_challenge: Instant,
    /// When validation is given up (three PTOs, §8.2.4).
    pub(crate) deadline: Option<Instant>,
    /// Why: the server's preferred address (§9.6) or the application.
    pub(crate) preferred: bool,
}

impl Migration {
    pub(crate) fn new(
        local: SocketAddr,
        peer: SocketAddr,
        dcid_seq: u64,
        preferred: bool,
        now: Instant,
    ) -> Self {
        Migration {
            local,
            peer,
            dcid_seq,
            challenges: Challenges::default(),
            next_challenge: now,
            deadline: None,
            preferred,
        }
    }
}

/// A PATH_RESPONSE owed on another address pair than the path's (the peer
/// probes one, RFC 9000 §8.2.2: the response goes where the challenge came).
#[derive(Clone, Copy, Debug)]
pub(crate) struct OffPathResponse {
    pub(crate) local: SocketAddr,
    pub(crate) peer: SocketAddr,
    pub(crate) data: [u8; 8],
}
