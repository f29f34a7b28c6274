//! Stateless server helpers: what a server does with a datagram that matches
//! no connection — Version Negotiation, Retry, address-validation tokens
//! (RFC 9000 §6, §8.1) and Stateless Reset (§10.3).

use std::net::SocketAddr;
use std::time::Duration;

use crate::codec::Writer;
use crate::crypto::{self, TokenKey};
use crate::packet::{self, ConnectionId, PacketType};
use crate::version::Version;

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

/// The key a server derives stateless reset tokens from: the first 16 bytes
/// of HMAC-SHA256(key, connection ID) (RFC 9000 §10.3.2). Give the same key
/// to every connection's [`crate::Config::set_stateless_reset_key`] and to
/// [`stateless_reset`]. Its `Debug` output does not show the key.
#[derive(Clone)]
pub struct StatelessResetKey([u8; 32]);

impl StatelessResetKey {
    /// A fresh random key.
    pub fn random() -> StatelessResetKey {
        let mut k = [0u8; 32];
        crypto::fill_random(&mut k);
        StatelessResetKey(k)
    }

    /// A key kept elsewhere (e.g. shared by the servers behind one address,
    /// or kept across restarts so old connections can be reset).
    pub fn from_bytes(key: [u8; 32]) -> StatelessResetKey {
        StatelessResetKey(key)
    }

    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The token of `cid`.
    pub fn token(&self, cid: &[u8]) -> [u8; 16] {
        crypto::reset_token(&self.0, cid)
    }
}

impl std::fmt::Debug for StatelessResetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StatelessResetKey(..)")
    }
}

/// Smallest Stateless Reset: 5 bytes that look like a short header, then
/// the 16-byte token (RFC 9000 §10.3).
pub const MIN_STATELESS_RESET: usize = 21;
/// Largest one we send: enough to look like an ordinary short packet.
const MAX_STATELESS_RESET: usize = 64;

/// Write into `out` a Stateless Reset answering `dgram`, a short-header
/// packet whose `cid_len`-byte destination connection ID matches no
/// connection (the server lost its state). Returns its length, or `None`
/// when none may be sent: not a short header, too short to hold the ID, or
/// too short for a reset smaller than itself (every reset is shorter than
/// the packet that triggered it, so two endpoints cannot loop). Rate
/// limiting is the caller's business.
pub fn stateless_reset(
    key: &StatelessResetKey,
    dgram: &[u8],
    cid_len: usize,
    out: &mut [u8],
) -> Option<usize> {
    let first = *dgram.first()?;
    if first & 0x80 != 0 || dgram.len() <= MIN_STATELESS_RESET || dgram.len() < 1 + cid_len {
        return None;
    }
    let len = (dgram.len() - 1).min(MAX_STATELESS_RESET);
    let out = out.get_mut(..len)?;
    crypto::fill_random(out);
    // Fixed bits 01, the rest random: it must pass for a short header.
    out[0] = 0x40 | (out[0] & 0x3f);
    let token = key.token(dgram.get(1..1 + cid_len)?);
    out[len - 16..].copy_from_slice(&token);
    Some(len)
}

/// Address-validation tokens and the Retry decision for one server.
pub struct Validator {
    key: TokenKey,
    lifetime: Duration,
    new_token_lifetime: Duration,
    retry: bool,
    /// Length and first byte of the Retry's SCID, which becomes the
    /// connection's first ID: as the endpoint issues them.
    cid_len: usize,
    cid_prefix: Option<u8>,
    /// Versions accepted; others get Version Negotiation listing these.
    versions: Vec<Version>,
}

/// What a NEW_TOKEN token is bound to: the client's IP address (its port
/// changes from one connection to the next), tagged apart from Retry tokens.
fn new_token_ad(a: &SocketAddr) -> Vec<u8> {
    let mut v = vec![b'N'];
    match a.ip() {
        std::net::IpAddr::V4(ip) => v.extend_from_slice(&ip.octets()),
        std::net::IpAddr::V6(ip) => v.extend_from_slice(&ip.octets()),
    }
    v
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
    /// before any state is kept). Retry tokens live 30 s, NEW_TOKEN tokens
    /// ([`Validator::new_token`]) a day.
    pub fn new(retry: bool) -> Result<Validator, crypto::CryptoError> {
        Ok(Self::with_token_key(retry, TokenKey::new()?))
    }

    /// As [`Validator::new`], with a token key of the caller's (servers
    /// that share one address accept each other's tokens).
    pub fn with_key(retry: bool, key: &[u8; 32]) -> Result<Validator, crypto::CryptoError> {
        Ok(Self::with_token_key(retry, TokenKey::from_bytes(key)?))
    }

    fn with_token_key(retry: bool, key: TokenKey) -> Validator {
        Validator {
            key,
            lifetime: Duration::from_secs(30),
            new_token_lifetime: Duration::from_secs(24 * 3600),
            retry,
            cid_len: 16,
            cid_prefix: None,
            versions: vec![Version::V1],
        }
    }

    /// Length (4 to 20) and first byte of the connection IDs the server
    /// issues, for the Retry's SCID (default: 16 random bytes).
    pub fn set_cid_format(&mut self, len: usize, prefix: Option<u8>) {
        self.cid_len = len.clamp(4, packet::MAX_CID_LEN);
        self.cid_prefix = prefix;
    }

    /// The versions accepted (default v1 only; give the servers'
    /// [`crate::Config::versions`]); Version Negotiation lists them.
    pub fn set_versions(&mut self, versions: &[Version]) {
        if !versions.is_empty() {
            self.versions = versions.to_vec();
        }
    }

    /// Whether a long header's version is one we accept.
    pub fn accepts(&self, wire_version: u32) -> bool {
        Version::from_wire(wire_version).is_some_and(|v| self.versions.contains(&v))
    }

    /// A token for the client at `peer` to present on its next connection
    /// (send it with [`crate::Connection::send_new_token`]): an Initial that
    /// carries it from the same IP address within a day skips the Retry.
    pub fn new_token(&self, peer: &SocketAddr, now_secs: u64) -> Vec<u8> {
        self.key.seal(&new_token_ad(peer), &[], now_secs)
    }

    /// Decide what to do with `dgram` from `from`, which matched no
    /// connection. `now_secs` is the caller's clock in seconds (tokens carry
    /// it). Replies are written to `out`.
    pub fn handle(&self, dgram: &[u8], from: &SocketAddr, now_secs: u64, out: &mut [u8]) -> Accept {
        self.handle_retrying(dgram, from, now_secs, out, self.retry)
    }

    /// As [`Validator::handle`], but with Retry on or off for this datagram:
    /// a server with too many half-open connections forces Retry even when
    /// it was configured off (RFC 9000 §8.1).
    pub fn handle_retrying(
        &self,
        dgram: &[u8],
        from: &SocketAddr,
        now_secs: u64,
        out: &mut [u8],
        retry: bool,
    ) -> Accept {
        let Some(inv) = packet::invariant_header(dgram) else { return Accept::Drop };
        if !self.accepts(inv.version) {
            // RFC 9000 §6.1: only answer datagrams large enough to be Initials.
            if dgram.len() < 1200 || inv.version == 0 {
                return Accept::Drop;
            }
            let mut w = Writer::new(out);
            let versions: Vec<u32> = self.versions.iter().map(|v| v.wire()).collect();
            return match packet::write_version_negotiation(&mut w, inv.scid, inv.dcid, &versions) {
                Ok(()) => Accept::Reply(w.pos()),
                Err(_) => Accept::Drop,
            };
        }
        let Ok(hdr) = packet::parse_header(dgram, 0) else { return Accept::Drop };
        if hdr.ty != PacketType::Initial || dgram.len() < 1200 || hdr.dcid.len() < 8 {
            return Accept::Drop;
        }
        if hdr.token.is_empty() {
            if !retry {
                return Accept::New { odcid: hdr.dcid, retry_scid: None };
            }
            return self.retry_reply(dgram, from, now_secs, out);
        }
        if let Some((odcid, issued)) = self.key.open(hdr.token, &addr_bytes(from)) {
            // A Retry token: the client answered our Retry.
            if now_secs.saturating_sub(issued) > self.lifetime.as_secs() {
                return Accept::Drop;
            }
            return match ConnectionId::from_slice(&odcid) {
                Some(odcid) => Accept::New { odcid, retry_scid: Some(hdr.dcid) },
                None => Accept::Drop,
            };
        }
        match self.key.open(hdr.token, &new_token_ad(from)) {
            Some((_, issued)) if now_secs.saturating_sub(issued) <= self.new_token_lifetime.as_secs() => {
                Accept::New { odcid: hdr.dcid, retry_scid: None }
            }
            // Expired, from another address, or not ours: as if there were
            // no token (RFC 9000 §8.1.3).
            _ if !retry => Accept::New { odcid: hdr.dcid, retry_scid: None },
            _ => self.retry_reply(dgram, from, now_secs, out),
        }
    }

    fn retry_reply(&self, dgram: &[u8], from: &SocketAddr, now_secs: u64, out: &mut [u8]) -> Accept {
        let Ok(hdr) = packet::parse_header(dgram, 0) else { return Accept::Drop };
        let new_scid = crate::conn::random_cid_with_prefix(self.cid_len, self.cid_prefix);
        let token = self.key.seal(&addr_bytes(from), hdr.dcid.as_slice(), now_secs);
        let Some(version) = Version::from_wire(hdr.version) else { return Accept::Drop };
        match self.write_retry(out, version, &hdr.scid, &new_scid, &hdr.dcid, &token) {
            Some(n) => Accept::Reply(n),
            None => Accept::Drop,
        }
    }

    fn write_retry(
        &self,
        out: &mut [u8],
        version: Version,
        client_scid: &ConnectionId,
        new_scid: &ConnectionId,
        odcid: &ConnectionId,
        token: &[u8],
    ) -> Option<usize> {
        let mut w = Writer::new(out);
        packet::write_retry(&mut w, version, client_scid, new_scid, token).ok()?;
        let len = w.pos();
        let tag = crypto::retry_tag_for(version, odcid.as_slice(), &out[..len]).ok()?;
        let end = len + tag.len();
        out.get_mut(len..end)?.copy_from_slice(&tag);
        Some(end)
    }
}

#[cfg(test)]
mod reset_tests {
    use super::*;

    #[test]
    fn stateless_reset_is_shorter_than_its_trigger_and_ends_in_the_token() {
        let key = StatelessResetKey::from_bytes([7; 32]);
        let mut out = [0u8; 1500];
        let mut short = vec![0x41u8; 1200];
        short[1..9].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let n = stateless_reset(&key, &short, 8, &mut out).unwrap();
        assert_eq!(n, 64, "capped");
        assert_eq!(out[0] & 0xc0, 0x40);
        assert_eq!(out[n - 16..n], key.token(&[1, 2, 3, 4, 5, 6, 7, 8]));
        assert_eq!(
            key.token(&[1, 2, 3, 4, 5, 6, 7, 8]),
            crypto::reset_token(&[7; 32], &[1, 2, 3, 4, 5, 6, 7, 8])
        );
        // Small triggers get a reset one byte shorter; 21 bytes or less, none.
        assert_eq!(stateless_reset(&key, &short[..30], 8, &mut out), Some(29));
        assert_eq!(stateless_reset(&key, &short[..22], 8, &mut out), Some(21));
        assert_eq!(stateless_reset(&key, &short[..21], 8, &mut out), None);
        // Long headers, IDs longer than the packet, empty input, small buffers: none.
        let mut long = short.clone();
        long[0] = 0xc0;
        assert_eq!(stateless_reset(&key, &long, 8, &mut out), None);
        assert_eq!(stateless_reset(&key, &short[..30], 40, &mut out), None);
        assert_eq!(stateless_reset(&key, &[], 8, &mut out), None);
        assert_eq!(stateless_reset(&key, &short, 8, &mut [0u8; 10]), None);
        assert_eq!(format!("{key:?}"), "StatelessResetKey(..)");
    }
}
