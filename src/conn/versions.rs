//! The connection's QUIC version (RFC 9368): which versions' packets it
//! takes, the server learning the client's version and switching it
//! (compatible version negotiation, decided in TLS's ClientHello callback),
//! the client following, and the version_information checks.

use crate::error::{ErrorCode, TransportError};
use crate::packet::{self, PacketType};
use crate::transport_params::TransportParams;
use crate::version::{Version, VersionInfo};

use super::Connection;

fn vn_error(reason: &'static str) -> TransportError {
    TransportError::new(ErrorCode::VERSION_NEGOTIATION_ERROR, reason)
}

/// A client's incompatible version negotiation (RFC 9368 §2.1): a Version
/// Negotiation packet ends the attempt, and the application starts a new
/// one in a version the server listed.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Incompatible {
    /// This attempt ended on a Version Negotiation packet; the version of
    /// ours it listed that we prefer, if any.
    pub(super) next: Option<Version>,
    /// This attempt follows a Version Negotiation packet that refused this
    /// version.
    pub(super) refused: Option<Version>,
}

impl Connection {
    /// The QUIC version in use (the negotiated one once the handshake has
    /// passed the server's first Initial).
    pub fn version(&self) -> Version {
        self.version
    }

    /// Client: the connection closed on a Version Negotiation packet (the
    /// server does not take the version we started with) that lists this
    /// version of ours, the one we prefer among those it lists. Start a new
    /// connection attempt in it (`Config::set_initial_version`) and call
    /// [`Connection::follows_version_negotiation`] on it before its first
    /// `send`. `None`: no such packet, or no version in common.
    pub fn version_negotiation(&self) -> Option<Version> {
        self.vn.next.filter(|_| self.is_closed())
    }

    /// Client, before the first `send`: this connection attempt follows a
    /// Version Negotiation packet that refused `refused` (RFC 9368 §4). The
    /// attempt then ignores further Version Negotiation packets, and closes
    /// with VERSION_NEGOTIATION_ERROR if the server's version_information
    /// shows that we would have picked another version than this attempt's
    /// (the Version Negotiation packet was forged to downgrade us). A server
    /// that sends no version_information cannot be checked.
    pub fn follows_version_negotiation(&mut self, refused: Version) -> bool {
        if self.is_server || self.got_peer_packet || refused == self.version {
            return false;
        }
        self.vn.refused = Some(refused);
        true
    }

    /// The version of a long-header packet if we take it, getting the keys
    /// to open it ready; `None`: drop it.
    pub(super) fn accept_version(&mut self, hdr: &packet::Header<'_>) -> Option<Version> {
        let v = Version::from_wire(hdr.version).filter(|v| self.versions.contains(v))?;
        let first_initial = self.is_server && !self.got_peer_packet && hdr.ty == PacketType::Initial;
        if first_initial && v != self.original_version {
            self.learn_client_version(v).ok()?;
        }
        if first_initial && !self.tls_versions_offered {
            self.offer_versions();
        }
        if v == self.version {
            return Some(v);
        }
        if hdr.ty != PacketType::Initial {
            return None;
        }
        if self.is_server {
            // The client's Initials of its original version, still coming.
            return (v == self.original_version).then_some(v);
        }
        // A client follows a switch until the ServerHello is in.
        if self.levels.has_recv_keys(crate::crypto::Level::Handshake) {
            return None;
        }
        let dcid = self.retry_scid.unwrap_or(self.odcid);
        self.levels.prepare_initial(v, dcid.as_slice(), false).ok()?;
        Some(v)
    }

    /// A packet of `v` opened: a client that sees the server use another
    /// version than its own switches to it (before reading the packet's
    /// CRYPTO frames, whose handshake keys derive with `v`'s labels).
    pub(super) fn on_version_opened(&mut self, v: Version) {
        if self.is_server || v == self.version {
            return;
        }
        log::debug!("server switched the connection to QUIC {v}");
        self.switch_version(v);
    }

    fn switch_version(&mut self, v: Version) {
        let dcid = self.retry_scid.unwrap_or(self.odcid);
        if self.levels.switch_initial(v, dcid.as_slice(), self.is_server).is_ok() {
            self.version = v;
            self.tls.set_version(v);
            self.local_params.version_information = Some(VersionInfo::new(v, &self.versions));
        }
    }

    /// Server: the client's first Initial is in `v`, one we accept.
    fn learn_client_version(&mut self, v: Version) -> Result<(), crate::crypto::CryptoError> {
        let dcid = self.retry_scid.unwrap_or(self.odcid);
        self.levels.reset_initial(v, dcid.as_slice(), true)?;
        self.version = v;
        self.original_version = v;
        self.tls.set_version(v);
        Ok(())
    }

    /// Server: our transport parameters for every version we could switch
    /// to; TLS picks one when the ClientHello is in.
    fn offer_versions(&mut self) {
        self.tls_versions_offered = true;
        if !crate::version::negotiates(&self.versions) {
            return;
        }
        let offers = self
            .versions
            .iter()
            .map(|&v| {
                let mut p = self.local_params.clone();
                p.version_information = Some(VersionInfo::new(v, &self.versions));
                let mut enc = Vec::with_capacity(128);
                p.encode(&mut enc);
                (v, enc)
            })
            .collect();
        self.tls.offer_versions(offers);
    }

    /// Server, after TLS ran: the version its ClientHello callback chose.
    pub(super) fn follow_tls_version(&mut self) {
        let v = self.tls.version();
        if self.is_server && v != self.version {
            log::debug!("compatible version negotiation: {} -> {v}", self.version);
            self.switch_version(v);
        }
    }

    /// RFC 9368 §4: the peer's version_information must name the version
    /// its handshake packets used — the client's, its first Initial's; the
    /// server's, the negotiated one, which it must state if it switched.
    pub(super) fn validate_version_info(&self, p: &TransportParams) -> Result<(), TransportError> {
        let Some(vi) = &p.version_information else {
            if !self.is_server && self.version != self.original_version {
                return Err(vn_error("server switched versions without version_information"));
            }
            return Ok(());
        };
        let expected = if self.is_server { self.original_version } else { self.version };
        if vi.chosen != expected.wire() {
            return Err(vn_error("version_information: Chosen Version is not the version in use"));
        }
        // After incompatible negotiation: had the Version Negotiation
        // packet listed what the server says it has, we would have picked
        // this attempt's version.
        if !self.is_server && self.vn.refused.is_some() {
            let listed = |v: &Version| vi.available.contains(&v.wire()) || *v == self.version;
            if self.versions.iter().find(|v| listed(v)) != Some(&self.version) {
                return Err(vn_error("version downgrade: the server supports a version we prefer"));
            }
        }
        Ok(())
    }
}
