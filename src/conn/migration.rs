//! Moving a path to another address pair (RFC 9000 §9): a client's active
//! migration ([`Connection::migrate`]) and its move to a server's preferred
//! address (§9.6), and the PATH_RESPONSEs owed on pairs a peer probes.
//! Datagrams of this kind leave on their own pair, not the path's.

use std::net::SocketAddr;
use std::time::Instant;

use crate::crypto::Level;
use crate::frame::Frame;
use crate::packet::ConnectionId;
use crate::path::migration::{Migration, OffPathResponse};
use crate::path::PathError;
use crate::recovery::SentPacket;
use crate::transport_params::PreferredAddress;
use crate::{PathEvent, PathId};

use super::builder::{Header, PacketBuilder, TAG_LEN};
use super::sent::{SentFrame, SentFrames};
use super::{Connection, Error};

/// Datagrams carrying PATH_CHALLENGE are padded to this (RFC 9000 §8.2.1).
const PROBE_SIZE: usize = 1200;
/// PATH_RESPONSEs kept for other pairs of one path.
const MAX_OFF_PATH_RESPONSES: usize = 8;

/// A datagram to send on another address pair than its path's.
pub(super) struct OffPath {
    pub(super) len: usize,
    pub(super) from: SocketAddr,
    pub(super) to: SocketAddr,
}

impl Connection {
    /// Client: move path `id` to the local address `local` (active
    /// migration, RFC 9000 §9.2; e.g. the phone's Wi-Fi address changed).
    /// The new pair is validated with PATH_CHALLENGEs, under a connection ID
    /// of the peer's not used before (§9.5), while the path keeps sending on
    /// the old one; [`PathEvent::Migrated`] says when it moved, and
    /// [`PathEvent::FailedValidation`] if it could not (the path stays).
    pub fn migrate(&mut self, id: PathId, local: SocketAddr, now: Instant) -> Result<(), PathError> {
        if self.is_server {
            return Err(PathError::NotClient);
        }
        if self.peer_params.as_ref().is_some_and(|p| p.disable_active_migration) {
            return Err(PathError::MigrationDisabled);
        }
        if !self.handshake_confirmed {
            return Err(PathError::NotMultipath);
        }
        let pi = self.path_index(id).ok_or(PathError::UnknownPath)?;
        let seq = self.cids.spare_peer_cid(id).ok_or(PathError::NoConnectionId)?;
        let peer = self.paths[pi].peer;
        self.paths[pi].migration = Some(Migration::new(local, peer, seq, false, now));
        Ok(())
    }

    /// Client: the server's preferred_address parameter. The connection ID
    /// is the peer's number 1 on path 0; the path moves there once the
    /// handshake is confirmed (probes wait for it), if the server offered
    /// an address of the family in use.
    pub(super) fn on_preferred_address(&mut self, pa: &PreferredAddress) {
        let p0 = &self.paths[0];
        let to = match p0.peer {
            SocketAddr::V4(_) => pa.ipv4.map(SocketAddr::V4),
            SocketAddr::V6(_) => pa.ipv6.map(SocketAddr::V6),
        };
        if !self.cids.has_peer_cid_seq(PathId::ZERO, 1) {
            self.cids.add_peer_cid(PathId::ZERO, 1, pa.cid, pa.reset_token);
        }
        if let Some(to) = to.filter(|&a| a != p0.peer) {
            self.paths[0].migration = Some(Migration::new(p0.local, to, 1, true, self.last_now));
        }
    }

    /// The peer's PATH_CHALLENGE arrived on path `pi` via `(local, peer)`.
    pub(super) fn on_path_challenge(
        &mut self,
        pi: usize,
        local: SocketAddr,
        peer: SocketAddr,
        data: [u8; 8],
    ) {
        let p = &mut self.paths[pi];
        if (local, peer) == (p.local, p.peer) {
            if p.responses.len() < 8 {
                p.responses.push(data);
            }
        } else if p.off_path_responses.len() < MAX_OFF_PATH_RESPONSES {
            p.off_path_responses.push(OffPathResponse { local, peer, data });
        }
    }

    /// A PATH_RESPONSE on path `pi`: whether it completed a migration.
    pub(super) fn on_migration_response(&mut self, pi: usize, data: &[u8; 8], now: Instant) -> bool {
        let Some(m) = self.paths[pi].migration.take_if(|m| m.challenges.answers(data)) else {
            return false;
        };
        let id = self.paths[pi].id;
        log::debug!(
            "path {}: moved to {} -> {}{}",
            id.0,
            m.local,
            m.peer,
            if m.preferred { " (preferred)" } else { "" }
        );
        self.cids.switch_peer_cid(id, m.dcid_seq);
        self.paths[pi].move_to(m.local, m.peer, &self.path_config, now);
        self.push_event(PathEvent::Migrated(id, m.local, m.peer));
        true
    }

    /// Path `pi` has a datagram due on another address pair.
    pub(super) fn off_path_due(&self, pi: usize, now: Instant) -> bool {
        let p = &self.paths[pi];
        let challenge =
            self.handshake_confirmed && p.migration.as_ref().is_some_and(|m| m.next_challenge <= now);
        (challenge || !p.off_path_responses.is_empty()) && self.levels.has_send_keys(Level::OneRtt)
    }

    /// The next datagram due on another pair of path `pi`: a PATH_RESPONSE
    /// owed there, else our migration's PATH_CHALLENGE; padded to 1200
    /// bytes (RFC 9000 §8.2.1), in the path's packet number space.
    pub(super) fn write_off_path(
        &mut self,
        out: &mut [u8],
        pi: usize,
        now: Instant,
    ) -> Result<OffPath, Error> {
        let id = self.paths[pi].id;
        let (frame, from, to, dcid) = match self.paths[pi].off_path_responses.pop() {
            Some(r) => (Frame::PathResponse(r.data), r.local, r.peer, self.cids.dcid_for(id)),
            None => {
                let wait = self.challenge_interval(pi);
                // RFC 9000 §8.2.4: three times the larger of the current PTO
                // and a new path's (kInitialRtt: 3 x initial RTT), so a busy
                // peer's late answer still counts.
                let pto = self.max_pto().max(self.path_config.initial_rtt * 3);
                let m = self.paths[pi].migration.as_mut().ok_or(Error::InvalidPath)?;
                let data = crate::path::Challenges::fresh();
                m.challenges.on_sent(data);
                m.next_challenge = now + wait;
                m.deadline.get_or_insert(now + pto * 3);
                (Frame::PathChallenge(data), m.local, m.peer, self.cids.peer_cid(id, m.dcid_seq))
            }
        };
        let size = PROBE_SIZE.min(out.len());
        let len = self.write_lone_frame(&mut out[..size], pi, dcid, &frame, now)?;
        Ok(OffPath { len, from, to })
    }

    /// One 1-RTT packet with `frame`, padded to `out.len()`, to `dcid`.
    fn write_lone_frame(
        &mut self,
        out: &mut [u8],
        pi: usize,
        dcid: Option<ConnectionId>,
        frame: &Frame<'_>,
        now: Instant,
    ) -> Result<usize, Error> {
        let size = out.len();
        let p = &self.paths[pi];
        let pn = p.next_pn;
        // Full length: it crosses another address pair and may be read
        // after many later packets of the path (another socket, drained
        // after the old one), beyond what a length chosen from the largest
        // acknowledged number would decode (RFC 9000 §17.1, A.3).
        let pn_len = 4;
        let header = Header {
            dcid: dcid.unwrap_or(ConnectionId::EMPTY),
            ..self.header(Level::OneRtt, pi, pn, pn_len)
        };
        let mut b = PacketBuilder::new(out, &header)?;
        frame.encode(b.w()).map_err(|_| Error::BufferTooShort)?;
        if let Some(q) = &mut self.qlog {
            q.packet_sent(now, Level::OneRtt, self.paths[pi].id, pn, b.plain(size - TAG_LEN));
        }
        let (keys, nonce_path) = self.seal_keys(Level::OneRtt, pi)?;
        let len = b.finish(size - TAG_LEN, keys, nonce_path)?;
        let mut frames = SentFrames::new();
        frames.push(SentFrame::Ping);
        let mut pkt = SentPacket::new(pn, now, len, true, true, frames);
        // It crossed another network path: its fate says nothing of this
        // path's congestion.
        pkt.probe = true;
        self.on_packet_built(Level::OneRtt, pi, pkt);
        Ok(len)
    }

    /// Our migrations whose validation ran out of time: the path stays
    /// where it is (for the preferred address: on the server's original
    /// one, RFC 9000 §9.6.1).
    pub(super) fn expire_migrations(&mut self, now: Instant) {
        for pi in 0..self.paths.len() {
            let p = &mut self.paths[pi];
            if p.migration.as_ref().is_some_and(|m| m.deadline.is_some_and(|d| now >= d)) {
                p.migration = None;
                let id = p.id;
                self.push_event(PathEvent::FailedValidation(id));
            }
        }
    }

    /// The earliest migration timer of path `pi` (next challenge or expiry).
    pub(super) fn migration_timer(&self, pi: usize) -> Option<Instant> {
        let m = self.paths[pi].migration.as_ref()?;
        let next = self.handshake_confirmed.then_some(m.next_challenge);
        match (next, m.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
