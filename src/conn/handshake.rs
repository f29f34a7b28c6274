//! The handshake driver: TLS fed with CRYPTO data and driven to
//! completion, keys installed and discarded level by level, the peer's
//! transport parameters checked, Retry and Version Negotiation, and the
//! handshake's confirmation.

use std::time::{Duration, Instant};

use crate::crypto::{self, Direction, Level};
use crate::error::{ErrorCode, TransportError};
use crate::packet::{self, ConnectionId};
use crate::transport_params::TransportParams;
use crate::PathId;

use super::recv::Drop;
use super::spaces::level_index;
use super::{CloseInfo, Connection, Error, State};

impl Connection {
    /// Learn the peer's CID from its first packets; a server's client is
    /// validated by a Handshake packet.
    pub(super) fn on_peer_packet(&mut self, level: Level, scid: ConnectionId) {
        // The first packet from the server tells the client its CID.
        if !self.is_server && level != Level::OneRtt && !self.got_peer_packet {
            self.cids.set_initial_peer_cid(scid);
        }
        if self.is_server
            && level == Level::Initial
            && self.cids.dcid_for(PathId::ZERO) == Some(ConnectionId::EMPTY)
        {
            self.cids.set_initial_peer_cid(scid);
        }
        self.got_peer_packet = true;
        // Server: a Handshake packet proves the client owns its address.
        if self.is_server && level == Level::Handshake && !self.peer_validated {
            self.peer_validated = true;
        }
    }

    /// The peer ended the connection without a CONNECTION_CLOSE (Version
    /// Negotiation, Stateless Reset): closed at once, nothing more sent.
    pub(super) fn closed_by_peer(&mut self, reason: &[u8], trigger: &'static str) {
        self.peer_close =
            Some(CloseInfo { is_app: false, code: 0, frame_type: None, reason: reason.to_vec() });
        self.qlog_closed(self.last_now, true, trigger);
        self.state = State::Closed;
        self.qlog_state(self.last_now, crate::qlog::ConnState::Closed);
    }

    pub(super) fn on_version_negotiation(
        &mut self,
        hdr: &packet::Header<'_>,
        first: bool,
    ) -> Result<(), Result<Drop, TransportError>> {
        // Only a client that has not yet heard from the server acts on VN,
        // and only if it does not list the version we use (RFC 9000 §6.2);
        // an attempt made after a VN ignores further ones (RFC 9368 §4).
        if self.is_server || self.got_peer_packet || !first || self.vn.refused.is_some() {
            return Err(Ok(Drop::Datagram));
        }
        if hdr.dcid != self.cids.initial_scid() {
            return Err(Ok(Drop::Datagram));
        }
        // RFC 9368 §4: a VN listing the version we tried is ignored.
        if hdr.supported_versions().any(|v| v == self.version.wire()) {
            return Err(Ok(Drop::Datagram));
        }
        // The next attempt: our most preferred version the server lists.
        self.vn.next =
            self.versions.iter().copied().find(|v| hdr.supported_versions().any(|s| s == v.wire()));
        self.closed_by_peer(b"version negotiation", "version_mismatch");
        Err(Ok(Drop::Datagram))
    }

    pub(super) fn on_retry(
        &mut self,
        pkt: &[u8],
        hdr: &packet::Header<'_>,
    ) -> Result<(), Result<Drop, TransportError>> {
        // A client accepts one Retry, before any other server packet.
        if self.is_server || self.got_peer_packet || self.retry_scid.is_some() {
            return Err(Ok(Drop::Datagram));
        }
        if hdr.token.is_empty() || hdr.dcid != self.cids.initial_scid() {
            return Err(Ok(Drop::Datagram));
        }
        let Some(without_tag) = packet::retry_without_tag(pkt, hdr) else { return Err(Ok(Drop::Datagram)) };
        let Ok(tag) = crypto::retry_tag_for(self.version, self.odcid.as_slice(), without_tag) else {
            return Err(Ok(Drop::Datagram));
        };
        if !crypto::constant_time_eq(&tag, hdr.retry_tag) {
            return Err(Ok(Drop::Datagram));
        }
        log::debug!("following Retry to {:?}", hdr.scid);
        self.retry_scid = Some(hdr.scid);
        self.token = hdr.token.to_vec();
        self.cids.set_initial_peer_cid(hdr.scid);
        if self.levels.reset_initial(self.version, hdr.scid.as_slice(), false).is_err() {
            return Err(Ok(Drop::Datagram));
        }
        // Everything sent in Initial must be sent again under the new keys;
        // the packet number space continues (RFC 9000 §17.2.5.3).
        let sp = &mut self.hs[0];
        let path = &mut self.paths[0].recovery;
        sp.sent.discard(path, |_, _| {});
        self.levels.send[0].requeue_all();
        // The server dropped our 0-RTT packets with the Initial: send them
        // again behind the new one (RFC 9000 §17.2.5.3).
        if self.sends_early_data() {
            self.resend_early_packets();
        }
        Err(Ok(Drop::Datagram))
    }

    pub(super) fn on_crypto_frame(
        &mut self,
        level: Level,
        offset: u64,
        data: &[u8],
        now: Instant,
    ) -> Result<(), TransportError> {
        if offset + data.len() as u64 > crate::codec::VARINT_MAX {
            return Err(TransportError::new(ErrorCode::FRAME_ENCODING_ERROR, "CRYPTO beyond 2^62"));
        }
        let mut out = Vec::new();
        self.levels.recv[level_index(level)].insert(offset, data, &mut out)?;
        if !out.is_empty() {
            self.tls.provide_data(level, &out).map_err(tls_error)?;
            // Drive the handshake now so keys for later packets of this
            // datagram are installed before we reach them.
            self.advance_tls(now).map_err(|e| match e {
                Error::Transport(t) => t,
                _ => TransportError::new(ErrorCode::INTERNAL_ERROR, "TLS failure"),
            })?;
        }
        Ok(())
    }

    /// The handshake is confirmed: drop Handshake keys (RFC 9001 §4.9.2).
    pub(super) fn confirm_handshake(&mut self) {
        if self.handshake_confirmed {
            return;
        }
        self.handshake_confirmed = true;
        self.qlog_state(self.last_now, crate::qlog::ConnState::HandshakeConfirmed);
        self.drop_level(Level::Handshake);
        // Paths the client opened before: probe them now (see `probe_path`).
        for p in self.paths.iter_mut().filter(|p| !p.validated && !p.abandoned && p.challenges.count() == 0) {
            p.challenge_pending = true;
        }
        if self.state == State::Handshaking {
            self.state = State::Established;
        }
    }

    pub(super) fn drop_level(&mut self, level: Level) {
        let i = level_index(level);
        if i > 1 || self.hs[i].discarded {
            return;
        }
        self.hs[i].discarded = true;
        self.levels.discard(level);
        let sp = &mut self.hs[i];
        sp.sent.discard(&mut self.paths[0].recovery, |_, _| {});
        sp.probes = 0;
    }

    /// Feed TLS, collect its output and install new keys.
    pub(super) fn advance_tls(&mut self, _now: Instant) -> Result<(), Error> {
        self.tls.advance().map_err(|e| Error::Transport(tls_error(e)))?;
        self.follow_tls_version();
        while let Some((level, data)) = self.tls.take_outgoing() {
            self.levels.send[level_index(level)].push(&data);
        }
        while let Some((level, dir, keys)) = self.tls.take_new_keys() {
            match dir {
                Direction::Read => self.levels.install(level, None, Some(keys)),
                Direction::Write => self.levels.install(level, Some(keys), None),
            }
        }
        if self.tls.is_handshake_complete() && self.peer_params.is_none() {
            self.on_handshake_complete()?;
        }
        self.after_tls_early();
        Ok(())
    }

    pub(super) fn on_handshake_complete(&mut self) -> Result<(), Error> {
        let raw = self
            .tls
            .peer_transport_params()
            .ok_or(Error::Transport(TransportError::new(
                ErrorCode::TRANSPORT_PARAMETER_ERROR,
                "missing transport parameters",
            )))?
            .to_vec();
        let params = TransportParams::decode(&raw, !self.is_server).map_err(Error::Transport)?;
        self.validate_peer_params(&params).map_err(Error::Transport)?;
        self.check_early_limits(&params).map_err(Error::Transport)?;
        self.validate_version_info(&params).map_err(Error::Transport)?;
        self.streams
            .set_peer_limits(&crate::stream::PeerLimits {
                initial_max_data: params.initial_max_data,
                initial_max_stream_data_bidi_local: params.initial_max_stream_data_bidi_local,
                initial_max_stream_data_bidi_remote: params.initial_max_stream_data_bidi_remote,
                initial_max_stream_data_uni: params.initial_max_stream_data_uni,
                initial_max_streams_bidi: params.initial_max_streams_bidi,
                initial_max_streams_uni: params.initial_max_streams_uni,
            })
            .map_err(Error::Transport)?;
        let mad = Duration::from_millis(params.max_ack_delay);
        self.path_config.peer_max_ack_delay = Some(mad);
        for p in &mut self.paths {
            p.recovery.set_max_ack_delay(mad);
        }
        if let Some(pa) = &params.preferred_address {
            self.on_preferred_address(pa);
        }
        if let Some(tok) = params.stateless_reset_token {
            if let Some(c) = self.cids.peer.iter_mut().find(|c| c.path == PathId::ZERO && c.seq == 0) {
                c.reset_token = Some(tok);
            }
        }
        self.cids.local_limit = params.active_connection_id_limit;
        self.multipath =
            params.initial_max_path_id.is_some() && self.local_params.initial_max_path_id.is_some();
        let peer_max = params.max_udp_payload_size as usize;
        self.max_udp_payload = self.max_udp_payload.min(peer_max);
        self.path_config.peer_max_udp_payload = Some(peer_max);
        for p in &mut self.paths {
            p.pmtud.cap(peer_max);
        }
        self.cids.issue(PathId::ZERO);
        self.mp_on_handshake(&params).map_err(Error::Transport)?;
        if let Some(v) = params.extra_param(crate::frame::path_dsr::REC_TRANSPORT_PARAM_ID) {
            crate::frame::path_dsr::decode_transport_param(v).map_err(Error::Transport)?;
            self.send_dsr = self.multipath;
        }
        let ts = params.extra_param(crate::frame::timestamp::TIMESTAMP_TRANSPORT_PARAM_ID);
        self.ts.on_peer_param(ts, self.multipath).map_err(Error::Transport)?;
        if let Some(q) = &mut self.qlog {
            q.parameters_set(self.last_now, true, &params);
            q.state(self.last_now, crate::qlog::ConnState::HandshakeComplete);
        }
        self.peer_params = Some(params);
        self.state = State::Established;
        if self.is_server {
            // The server's handshake is confirmed on completion (RFC 9001 §4.1.2).
            self.handshake_done_pending = true;
            self.confirm_handshake();
        }
        Ok(())
    }

    pub(super) fn validate_peer_params(&self, p: &TransportParams) -> Result<(), TransportError> {
        let bad = |r| TransportError::new(ErrorCode::TRANSPORT_PARAMETER_ERROR, r);
        // RFC 9000 §7.3: authenticate the connection IDs.
        let peer_scid = self.cids.dcid_for(PathId::ZERO);
        if p.initial_source_connection_id != peer_scid {
            return Err(bad("initial_source_connection_id mismatch"));
        }
        if !self.is_server {
            if p.original_destination_connection_id != Some(self.odcid) {
                return Err(bad("original_destination_connection_id mismatch"));
            }
            if p.retry_source_connection_id != self.retry_scid {
                return Err(bad("retry_source_connection_id mismatch"));
            }
        }
        Ok(())
    }
}

fn tls_error(e: crypto::TlsError) -> TransportError {
    TransportError::new(e.code, e.reason)
}
