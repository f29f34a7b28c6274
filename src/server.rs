//! Stateless server helpers: what a server does with a datagram before a
//! connection exists — Version Negotiation, Retry, and address-validation
//! tokens (RFC 9000 §6, §8.1).

use std::net::SocketAddr;
use std::time::Duration;

use crate::codec::Writer;
use crate::crypto::{self, TokenKey};
use crate::packet::{self, ConnectionId, PacketType, QUIC_V1};

/// What to do with a datagram that matched no connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Accept {
    /// Create a connection with [`crate::accept`] using these IDs.
    New {
        /// The client's original DCID (before any Retry).
        odcid: ConnectionId,
        /// The SCID of our Retry, if the client came through one; use it as
        /// the new connection's SCID.
        retry_scid: Option<ConnectionId>,
    },
    /// Send this many bytes of the output buffer (VN or Retry) and forget.
    Reply(usize),
    /// Drop the datagram.
    Drop,
}

/// Address-validation tokens and the Retry decision for one server.
pub struct Validator {
    key: TokenKey,
    lifetime: Duration,
    retry: bool,
}

fn addr_bytes(a: &SocketAddr) -> Vec<u8> {
    let mut v = match a.ip() {
        std::net::IpAddr::V4(ip) => ip.octets().to_vec(),
        std::net::IpAddr::V6(ip) => ip.octets().to_vec(),
    };
    v.extend_from_slice(&a.port().to_be_bytes());
    v
}

impl Validator {
    /// `retry`: answer token-less Initials with Retry (address validation
    /// before any state is kept). Tokens live 30 s.
    pub fn new(retry: bool) -> Result<Validator, crypto::CryptoError> {
        Ok(Validator { key: TokenKey::new()?, lifetime: Duration::from_secs(30), retry })
    }

    /// Decide what to do with `dgram` from `from`, which matched no
    /// connection. `now_secs` is the caller's clock in seconds (tokens carry
    /// it). Replies are written to `out`.
    pub fn handle(&self, dgram: &[u8], from: &SocketAddr, now_secs: u64, out: &mut [u8]) -> Accept {
        let Some(inv) = packet::invariant_header(dgram) else { return Accept::Drop };
        if inv.version != QUIC_V1 {
            // RFC 9000 §6.1: only answer datagrams large enough to be Initials.
            if dgram.len() < 1200 || inv.version == 0 {
                return Accept::Drop;
            }
            let mut w = Writer::new(out);
            return match packet::write_version_negotiation(&mut w, inv.scid, inv.dcid, &[QUIC_V1]) {
                Ok(()) => Accept::Reply(w.pos()),
                Err(_) => Accept::Drop,
            };
        }
        let Ok(hdr) = packet::parse_header(dgram, 0) else { return Accept::Drop };
        if hdr.ty != PacketType::Initial || dgram.len() < 1200 || hdr.dcid.len() < 8 {
            return Accept::Drop;
        }
        if !self.retry {
            return Accept::New { odcid: hdr.dcid, retry_scid: None };
        }
        if hdr.token.is_empty() {
            let new_scid = crate::random_cid(16);
            let token = self.key.seal(&addr_bytes(from), hdr.dcid.as_slice(), now_secs);
            return match self.write_retry(out, &hdr.scid, &new_scid, &hdr.dcid, &token) {
                Some(n) => Accept::Reply(n),
                None => Accept::Drop,
            };
        }
        match self.key.open(hdr.token, &addr_bytes(from)) {
            Some((odcid, issued)) if now_secs.saturating_sub(issued) <= self.lifetime.as_secs() => {
                match ConnectionId::from_slice(&odcid) {
                    Some(odcid) => Accept::New { odcid, retry_scid: Some(hdr.dcid) },
                    None => Accept::Drop,
                }
            }
            // An invalid token may be a stale NEW_TOKEN one; RFC 9000 §8.1.3
            // allows dropping. We drop (no INVALID_TOKEN close without state).
            _ => Accept::Drop,
        }
    }

    fn write_retry(
        &self,
        out: &mut [u8],
        client_scid: &ConnectionId,
        new_scid: &ConnectionId,
        odcid: &ConnectionId,
        token: &[u8],
    ) -> Option<usize> {
        let mut w = Writer::new(out);
        packet::write_retry(&mut w, QUIC_V1, client_scid, new_scid, token).ok()?;
        let len = w.pos();
        let tag = crypto::retry_tag_for(odcid.as_slice(), &out[..len]).ok()?;
        let end = len + tag.len();
        out.get_mut(len..end)?.copy_from_slice(&tag);
        Some(end)
    }
}
