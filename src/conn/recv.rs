//! Receiving: datagram → packets → frames.

use std::time::{Duration, Instant};

use crate::crypto::{self, Level};
use crate::error::{ErrorCode, TransportError};
use crate::frame::{self, EcnCounts, Frame};
use crate::packet::{self, ConnectionId, PacketType};
use crate::qlog::DropTrigger;
use crate::recovery::{Ecn, HandshakeStatus, PacketFate, SentPacket};
use crate::stream::StreamId;
use crate::version::Version;
use crate::PathId;

use super::builder::{level_of, packet_type};
use super::sent::{SentFrame, SentFrames};
use super::spaces::level_index;
use super::{CloseInfo, Connection, Error, PathEvent, RecvInfo, State};
use crate::path::PathStatus;

/// Why a packet was dropped without closing the connection.
#[derive(Debug)]
pub(super) enum Drop {
    /// Stop processing the rest of the datagram too.
    Datagram,
}

/// What we learned from one packet: its frames, and its datagram's ECN
/// codepoint.
#[derive(Default)]
struct PacketFacts {
    ack_eliciting: bool,
    non_probing: bool,
    ecn: Ecn,
}

impl Connection {
    /// Process one received UDP datagram (which may hold several coalesced
    /// packets). Malformed or undecryptable packets are dropped as RFC 9000
    /// requires; protocol violations close the connection and are returned.
    pub fn recv(&mut self, buf: &mut [u8], info: RecvInfo, now: Instant) -> Result<usize, Error> {
        if self.state == State::Closed {
            return Err(Error::Closed);
        }
        let len = buf.len();
        self.last_now = now;
        self.stats.recv += 1;
        self.stats.recv_bytes += len as u64;
        if let State::Draining { .. } = self.state {
            return Ok(len);
        }
        if let State::Closing { .. } = self.state {
            // Answer with CONNECTION_CLOSE again (rate-limited by the peer's
            // own retransmissions).
            self.close_pending = true;
            return Ok(len);
        }
        self.recv_packets(buf, info, true, now)?;
        self.qlog_streams();
        // 0-RTT packets that came before their keys, if these brought them.
        self.replay_early_packets(now)?;
        // TLS was already driven by each CRYPTO frame (on_frame); nothing to
        // do per datagram once the handshake is over.
        if self.state == State::Closed {
            return Err(Error::Closed);
        }
        Ok(len)
    }

    /// The packets of one datagram, in order. With `count_amp`, the whole
    /// datagram counts towards the anti-amplification budget (RFC 9000 §8.1
    /// counts every byte received, padding and undecryptable packets
    /// included): credited to the path of its first packet that opens, else
    /// to the path whose peer sent it.
    pub(super) fn recv_packets(
        &mut self,
        buf: &mut [u8],
        info: RecvInfo,
        count_amp: bool,
        now: Instant,
    ) -> Result<(), Error> {
        let len = buf.len();
        let mut off = 0;
        let mut opened = None;
        while off < len {
            match self.recv_packet(&mut buf[off..], info, off == 0, now) {
                Ok((n, pidx)) => {
                    off += n;
                    opened = opened.or(pidx);
                }
                Err(Ok(Drop::Datagram)) => {
                    self.stats.dropped += 1;
                    self.qlog_drop(None, len - off, DropTrigger::General);
                    break;
                }
                Err(Err(e)) => {
                    self.close_on_error(e.clone(), now);
                    return Err(Error::Transport(e));
                }
            }
        }
        let credited = opened.or_else(|| self.paths.iter().position(|p| p.peer == info.from));
        if let Some(p) = credited.filter(|_| count_amp).and_then(|i| self.paths.get_mut(i)) {
            p.amp_recv += len as u64;
        }
        Ok(())
    }

    /// Returns the bytes consumed from `buf` and, if the packet opened, the
    /// index of its path.
    fn recv_packet(
        &mut self,
        buf: &mut [u8],
        info: RecvInfo,
        first: bool,
        now: Instant,
    ) -> Result<(usize, Option<usize>), Result<Drop, TransportError>> {
        let hdr = packet::parse_header(buf, self.cids.cid_len()).map_err(|_| Ok(Drop::Datagram))?;
        let plen = hdr.packet_len.min(buf.len());

        match hdr.ty {
            PacketType::VersionNegotiation => {
                self.on_version_negotiation(&hdr, first)?;
                return Ok((plen, None));
            }
            PacketType::Retry => {
                self.on_retry(&buf[..plen], &hdr)?;
                return Ok((plen, None));
            }
            _ => {}
        }
        let Some(level) = level_of(hdr.ty) else { return Ok((plen, None)) };
        let version = if hdr.is_long() {
            let Some(v) = self.accept_version(&hdr) else {
                self.qlog_drop(Some(level), plen, DropTrigger::Unsupported);
                return Ok((plen, None));
            };
            v
        } else {
            self.version
        };
        if self.levels.remote_for(level, version).is_none() {
            // Keys not available (yet, or discarded): drop this packet only,
            // or keep it for later if it is 0-RTT.
            if !(level == Level::ZeroRtt && self.buffer_early_packet(&buf[..plen], info)) {
                self.stats.dropped += 1;
                self.qlog_drop(Some(level), plen, DropTrigger::KeyUnavailable);
            }
            return Ok((plen, None));
        }
        let path_id = if level == Level::OneRtt {
            match self.cids.path_of(&hdr.dcid) {
                Some(p) => p,
                None => return self.maybe_stateless_reset(&buf[..plen]).map(|_| (plen, None)),
            }
        } else {
            PathId::ZERO
        };
        let (scid, pn_offset) = (hdr.scid, hdr.pn_offset);
        // Kept for the qlog's connection_id_updated only.
        let logged_dcid = self.qlog.as_ref().map(|_| hdr.dcid);
        let pkt = &mut buf[..plen];
        let Some((pn, payload)) = self.unprotect(pkt, level, version, path_id, pn_offset, now)? else {
            self.stats.dropped += 1;
            self.qlog_drop(Some(level), plen, DropTrigger::DecryptionFailure);
            return Ok((plen, None));
        };
        self.on_version_opened(version);

        // The first packet on a new path ID opens the path (server side).
        if level == Level::OneRtt
            && self.path_index(path_id).is_none()
            && self.create_peer_path(path_id, info, now).is_none()
        {
            return Ok((plen, None));
        }
        let Some(acks) = self.recv_acks(level, path_id).filter(|a| !a.is_duplicate(pn)) else {
            self.qlog_drop(Some(level), plen, DropTrigger::Duplicate);
            return Ok((plen, None));
        };
        let newest = acks.largest_received().is_none_or(|l| pn > l);
        self.on_peer_packet(level, scid);
        let payload = &pkt[payload];
        if let Some(q) = &mut self.qlog {
            q.packet_received(now, level, path_id, pn, payload, plen);
        }
        let facts =
            PacketFacts { ecn: info.ecn, ..self.on_frames(payload, level, path_id, info, now).map_err(Err)? };
        self.check_silent_paths(now);
        if let (Some(q), Some(dcid)) =
            (self.qlog.as_mut(), logged_dcid.filter(|_| newest && facts.non_probing))
        {
            // Probes may try another of our IDs; the newest non-probing
            // packet says which one the peer uses.
            q.cid_in_use(now, path_id, false, &dcid);
        }
        let pidx = self.path_index(path_id).unwrap_or(0);
        if level == Level::OneRtt && self.is_server && newest && facts.non_probing {
            self.follow_peer_address(pidx, info, now);
        }
        self.on_packet_received(level, pidx, pn, plen, &facts, now);
        Ok((plen, Some(pidx)))
    }

    /// Remove header protection and decrypt in place, following 1-RTT key
    /// phase changes (RFC 9001 §6). The packet number and the plaintext's
    /// range in `pkt`, or `None` if it does not decrypt (drop it).
    #[allow(clippy::type_complexity)]
    fn unprotect(
        &mut self,
        pkt: &mut [u8],
        level: Level,
        version: Version,
        path_id: PathId,
        pn_offset: usize,
        now: Instant,
    ) -> Result<Option<(u64, std::ops::Range<usize>)>, Result<Drop, TransportError>> {
        let Some(keys) = self.levels.remote_for(level, version) else { return Ok(None) };
        let Ok((pn_len, truncated)) = crypto::remove_header_protection(pkt, pn_offset, &keys.header) else {
            return Ok(None);
        };
        let largest = self.recv_acks(level, path_id).and_then(|a| a.largest_received());
        let pn = packet::decode_pn(largest, truncated, (pn_len * 8) as u32);
        let first_byte = pkt[0];
        let hdr_len = pn_offset + pn_len;
        let nonce_path = if self.multipath { path_id.0 } else { 0 };
        let (header, payload) = pkt.split_at_mut(hdr_len);
        let phase_changed =
            level == Level::OneRtt && packet::key_phase(first_byte) != self.levels.ku.remote_phase();
        // Either the peer updated keys (try the next ones) or a reordered
        // packet of the previous phase.
        let use_prev = phase_changed && self.levels.ku.is_previous_phase(path_id, pn, now);
        let key = match (phase_changed, use_prev) {
            (false, _) => self.levels.remote_for(level, version).map(|k| &k.packet),
            (true, true) => self.levels.ku.prev_remote.as_ref().map(|(k, _)| &k.packet),
            (true, false) => self.levels.ku.next_remote.as_ref().map(|k| &k.packet),
        };
        let Some(Ok(plain_len)) = key.map(|k| k.open_in_place(pn, nonce_path, header, payload)) else {
            return Ok(None);
        };
        if !packet::reserved_bits_clear(first_byte) {
            return Err(Err(TransportError::violation("reserved header bits set")));
        }
        if level == Level::OneRtt && !phase_changed {
            self.levels.ku.on_received(path_id, pn);
        }
        if phase_changed && !use_prev {
            self.on_peer_key_update(path_id, pn, now).map_err(Err)?;
        }
        Ok(Some((pn, hdr_len..hdr_len + plain_len)))
    }

    /// The peer's first packet in a new key phase decrypted.
    fn on_peer_key_update(&mut self, path_id: PathId, pn: u64, now: Instant) -> Result<(), TransportError> {
        // Checked by what we sent, not by what the peer acknowledged: the
        // ACK it needed is often in this very packet, whose frames are not
        // processed yet.
        if self.levels.ku.premature_peer_update() {
            return Err(TransportError::new(
                ErrorCode::KEY_UPDATE_ERROR,
                "second key update before the first was acknowledged",
            ));
        }
        let pto = self.max_pto();
        self.levels.rotate(now + pto * 3);
        self.levels.ku.on_received(path_id, pn);
        if let Some(q) = &mut self.qlog {
            q.peer_key_update(now, self.levels.ku.updates);
        }
        Ok(())
    }

    /// Process a packet's frames; returns whether it was ack-eliciting and
    /// non-probing.
    fn on_frames(
        &mut self,
        payload: &[u8],
        level: Level,
        path_id: PathId,
        info: RecvInfo,
        now: Instant,
    ) -> Result<PacketFacts, TransportError> {
        let ptype = packet_type(level);
        let mut facts = PacketFacts::default();
        self.ts.begin_packet();
        frame::for_each_frame(payload, |f| {
            if !f.is_allowed_in(ptype) {
                return Err(
                    TransportError::violation("frame not allowed in this packet type").with_frame(f.ty())
                );
            }
            facts.ack_eliciting |= f.is_ack_eliciting();
            facts.non_probing |= !f.is_probing();
            let ty = f.ty();
            self.on_frame(f, level, path_id, info, now).map_err(|e| {
                if e.frame_type.is_none() {
                    e.with_frame(ty)
                } else {
                    e
                }
            })
        })?;
        Ok(facts)
    }

    /// The newest non-probing packet of path `pidx` came from `info.from`:
    /// if that is a new address, the peer moved (NAT rebinding, RFC 9000
    /// §9.3) and we follow it, validating the new address; if it is the
    /// validated address we had just left (a spoofed or reordered packet
    /// moved us), we go back at once.
    fn follow_peer_address(&mut self, pidx: usize, info: RecvInfo, now: Instant) {
        let cfg = &self.path_config;
        let p = &mut self.paths[pidx];
        if info.from == p.peer {
            // The client now sends to another of our addresses (our
            // preferred address, RFC 9000 §9.6.3): answer from there.
            p.local = info.to;
            return;
        }
        if p.moved_from.is_some_and(|(old, validated)| old == info.from && validated) {
            p.peer_move_failed();
            return;
        }
        log::debug!("path {}: peer moved from {} to {}", p.id.0, p.peer, info.from);
        p.local = info.to;
        p.peer_moved(info.from, cfg, now);
    }

    /// Record a packet for acknowledgement and the path's counters.
    fn on_packet_received(
        &mut self,
        level: Level,
        pidx: usize,
        pn: u64,
        plen: usize,
        facts: &PacketFacts,
        now: Instant,
    ) {
        if let Some(acks) = self.recv_acks(level, self.paths[pidx].id) {
            acks.on_packet_received(pn, now, facts.ack_eliciting, facts.ecn);
        }
        if level == Level::OneRtt {
            self.on_path_packet(pidx, plen, now);
        }
        // Any authenticated packet restarts the idle timer (RFC 9000 §10.1).
        self.reset_idle(now);
        // Server drops Initial keys on its first Handshake packet (RFC 9001 §4.9.1).
        if self.is_server && level == Level::Handshake {
            self.drop_level(Level::Initial);
        }
    }

    /// A 1-RTT packet arrived on path `pidx`: counters, the rec extension's
    /// rate sample, the quiet-path timer.
    fn on_path_packet(&mut self, pidx: usize, plen: usize, now: Instant) {
        let p = &mut self.paths[pidx];
        p.st.recv += 1;
        p.st.recv_bytes += plen as u64;
        p.last_recv = Some(now);
        if self.send_dsr {
            // rec (seed 003): one desired-sending-rate sample per round.
            p.dsr.on_packet(plen);
            let rtt = p.recovery.rtt().smoothed();
            match p.dsr_round_end {
                Some(end) if now >= end => {
                    p.dsr_pending = Some(p.dsr.end_round(rtt));
                    p.dsr_round_end = Some(now + rtt);
                }
                None => p.dsr_round_end = Some(now + rtt),
                _ => {}
            }
        }
        if self.multipath {
            // Re-armed by every packet: see `probe_quiet_paths`.
            p.quiet_at = Some(now + p.recovery.pto_period(crate::recovery::SpaceKind::Data) * 2);
        }
    }

    fn maybe_stateless_reset(&mut self, dgram: &[u8]) -> Result<(), Result<Drop, TransportError>> {
        if let Some(tok) = packet::stateless_reset_token(dgram) {
            if self.cids.is_stateless_reset(tok) {
                log::debug!("stateless reset received");
                self.closed_by_peer(b"stateless reset", "stateless_reset");
                return Err(Ok(Drop::Datagram));
            }
        }
        Err(Ok(Drop::Datagram))
    }

    pub(super) fn path_index(&self, id: PathId) -> Option<usize> {
        self.paths.iter().position(|p| p.id == id)
    }

    /// As loss detection sees the handshake when an ACK arrives: an ACK
    /// lifts the anti-amplification block.
    fn handshake_status(&self) -> HandshakeStatus {
        HandshakeStatus { amplification_limited: false, ..self.hs_status() }
    }

    /// The scale of the peer's ACK Delay and Timestamp fields (RFC 9000
    /// §18.2: 3 until its parameters arrive).
    fn peer_ack_delay_exponent(&self) -> u64 {
        self.peer_params.as_ref().map_or(3, |p| p.ack_delay_exponent)
    }

    fn on_frame(
        &mut self,
        f: Frame<'_>,
        level: Level,
        path_id: PathId,
        info: RecvInfo,
        now: Instant,
    ) -> Result<(), TransportError> {
        match f {
            Frame::Padding { .. } | Frame::Ping => {}
            Frame::Ack { path_id: ack_path, ack_delay, ranges, ecn } => {
                // ACK frames acknowledge path 0 (draft-21 §2.3).
                let Some(target) = self.frame_path_or_zero(ack_path)? else { return Ok(()) };
                let exp = self.peer_ack_delay_exponent();
                let delay =
                    Duration::from_micros(ack_delay.checked_shl(exp as u32).unwrap_or(u64::MAX).min(1 << 40));
                self.on_ack(level, target, (ranges.iter(), ecn), delay, now)?;
            }
            Frame::Timestamp(t) => {
                let exp = self.peer_ack_delay_exponent();
                self.ts.on_frame(t, exp)?;
            }
            Frame::Crypto { offset, data } => self.on_crypto_frame(level, offset, data, now)?,
            // The hot path of a download: straight to the stream.
            Frame::Stream { stream_id, offset, data, fin } => {
                self.streams.on_stream_frame(StreamId(stream_id), offset, data, fin)?
            }
            Frame::ResetStream { .. }
            | Frame::StopSending { .. }
            | Frame::MaxData(_)
            | Frame::MaxStreamData { .. }
            | Frame::MaxStreams { .. }
            | Frame::DataBlocked(_)
            | Frame::StreamDataBlocked { .. }
            | Frame::StreamsBlocked { .. } => self.on_stream_frame(f)?,
            Frame::NewToken { token } => self.on_new_token(token)?,
            Frame::NewConnectionId { path_id: p, seq, retire_prior_to, cid, reset_token } => {
                if let Some(path) = self.frame_path_or_zero(p)? {
                    self.on_new_cid(path, seq, retire_prior_to, cid, reset_token)?;
                }
            }
            Frame::RetireConnectionId { path_id: p, seq } => {
                if let Some(path) = self.frame_path_or_zero(p)? {
                    self.on_retire_cid(path, seq)?;
                }
            }
            Frame::PathChallenge(data) => {
                if let Some(i) = self.path_index(path_id) {
                    self.on_path_challenge(i, info.to, info.from, data);
                }
            }
            Frame::PathResponse(data) => self.on_path_response(path_id, data, now),
            Frame::ConnectionClose { error_code, frame_type, reason } => {
                self.peer_close = Some(CloseInfo {
                    is_app: frame_type.is_none(),
                    code: error_code,
                    frame_type,
                    reason: reason.to_vec(),
                });
                self.qlog_closed(now, true, if frame_type.is_none() { "application" } else { "error" });
                self.enter_draining(now);
            }
            Frame::HandshakeDone => {
                if self.is_server {
                    return Err(TransportError::violation("HANDSHAKE_DONE from a client"));
                }
                self.confirm_handshake();
            }
            Frame::Datagram { data } => self.on_dgram_frame(data)?,
            Frame::PathAbandon { path_id: p, .. } => self.on_path_abandon(p, now)?,
            Frame::PathStatusBackup { path_id: p, seq } => self.on_path_status(p, seq, PathStatus::Backup)?,
            Frame::PathStatusAvailable { path_id: p, seq } => {
                self.on_path_status(p, seq, PathStatus::Available)?
            }
            Frame::MaxPathId(v) => self.on_max_path_id(v)?,
            Frame::PathsBlocked(v) => self.on_paths_blocked(v)?,
            Frame::PathCidsBlocked { path_id: p, next_seq } => self.on_path_cids_blocked(p, next_seq)?,
            Frame::PathDsr { path_id: p, dsr } => self.on_path_dsr(p, dsr)?,
        }
        Ok(())
    }

    /// The path a frame's optional Path ID names (path 0 without one);
    /// `None` for a path already closed (the frame is ignored).
    fn frame_path_or_zero(&self, p: Option<u64>) -> Result<Option<PathId>, TransportError> {
        match p {
            Some(p) => self.frame_path(p),
            None => Ok(Some(PathId::ZERO)),
        }
    }

    /// Stream state and flow control.
    fn on_stream_frame(&mut self, f: Frame<'_>) -> Result<(), TransportError> {
        let s = &mut self.streams;
        match f {
            Frame::ResetStream { stream_id, error_code, final_size } => {
                s.on_reset_stream(StreamId(stream_id), error_code, final_size)
            }
            Frame::StopSending { stream_id, error_code } => {
                s.on_stop_sending(StreamId(stream_id), error_code)
            }
            Frame::MaxData(v) => s.on_max_data(v),
            Frame::MaxStreamData { stream_id, max } => s.on_max_stream_data(StreamId(stream_id), max),
            Frame::MaxStreams { bidi, max } => s.on_max_streams(bidi, max),
            Frame::DataBlocked(v) => s.on_data_blocked(v),
            Frame::StreamDataBlocked { stream_id, limit } => {
                s.on_stream_data_blocked(StreamId(stream_id), limit)
            }
            Frame::StreamsBlocked { bidi, limit } => s.on_streams_blocked(bidi, limit),
            _ => Ok(()),
        }
    }

    fn on_new_token(&mut self, token: &[u8]) -> Result<(), TransportError> {
        if self.is_server {
            return Err(TransportError::violation("NEW_TOKEN from a client"));
        }
        if token.is_empty() {
            return Err(TransportError::new(ErrorCode::FRAME_ENCODING_ERROR, "empty NEW_TOKEN"));
        }
        // Keep the newest few; the application takes them.
        if self.new_tokens.len() >= 4 {
            self.new_tokens.pop_front();
        }
        self.new_tokens.push_back(token.to_vec());
        Ok(())
    }

    fn on_path_response(&mut self, path_id: PathId, data: [u8; 8], now: Instant) {
        let Some(i) = self.path_index(path_id) else { return };
        if self.on_migration_response(i, &data, now) {
            return;
        }
        let p = &mut self.paths[i];
        if p.challenges.answers(&data) {
            p.end_validation();
            p.moved_from = None;
            if !p.validated {
                p.validated = true;
                let id = p.id;
                self.push_event(PathEvent::Validated(id));
            }
        }
    }

    fn on_path_dsr(&mut self, p: u64, dsr: u64) -> Result<(), TransportError> {
        if !self.accept_dsr || !self.multipath {
            return Err(TransportError::encoding("PATH_DSR without the rec extension"));
        }
        // A rate for a path we no longer have is stale: ignore it.
        if let Some(i) = u32::try_from(p).ok().and_then(|p| self.path_index(PathId(p))) {
            let id = self.paths[i].id;
            self.dispatch.sched.on_rate_feedback(id, dsr);
        }
        Ok(())
    }

    fn on_ack<I>(
        &mut self,
        level: Level,
        path: PathId,
        (ranges, ecn): (I, Option<EcnCounts>),
        delay: Duration,
        now: Instant,
    ) -> Result<(), TransportError>
    where
        I: Iterator<Item = std::ops::Range<u64>> + Clone,
    {
        let hs = self.handshake_status();
        let views = self.path_views();
        let mut acked = std::mem::take(&mut self.scratch_acked);
        let mut lost = std::mem::take(&mut self.scratch_lost);
        let res = if level == Level::OneRtt {
            // PATH_ACK for a path we no longer (or never) had: ignored
            // (draft-21 §3.4.3).
            let Some(i) = self.path_index(path) else {
                self.scratch_acked = acked;
                self.scratch_lost = lost;
                return Ok(());
            };
            let p = &mut self.paths[i];
            let r = p.space.on_ack_received(&mut p.recovery, ranges, delay, now, &hs, &views, |fate, pkt| {
                match fate {
                    PacketFate::Acked => acked.push(pkt),
                    PacketFate::Lost => lost.push(pkt),
                    PacketFate::Discarded => {}
                }
            });
            if let Some((sent, released)) =
                r.as_ref().ok().and_then(|s| s.sampled_times).filter(|_| self.multipath)
            {
                // One-way delay for shared-bottleneck detection, from the
                // pacer's release (sender-side pacing delay left out; without
                // pacing the caller sends at once): with the peer's
                // timestamps, its receive time less our release; otherwise
                // the RTT less the peer's ACK delay, which also carries the
                // return path's queues.
                let left = if self.pacing { released } else { sent };
                let owd = if self.ts.receive {
                    self.ts.one_way_ms(left, delay)
                } else {
                    let rtt = now.saturating_duration_since(left);
                    Some(rtt.saturating_sub(delay.min(p.recovery.max_ack_delay())).as_secs_f64() * 1e3)
                };
                if let Some(ms) = owd {
                    self.sbd.on_sample(p.id, now, ms);
                }
            }
            if r.as_ref().is_ok_and(|s| s.newly_acked > 0) {
                p.probes = 0;
                p.silent_ptos = 0;
                let oldest = acked.iter().map(|k| k.time_sent).min();
                self.clear_suspicion(i, oldest, now);
            }
            r
        } else {
            let sp = &mut self.hs[level_index(level)];
            sp.sent.on_ack_received(
                &mut self.paths[0].recovery,
                ranges,
                delay,
                now,
                &hs,
                &views,
                |fate, pkt| match fate {
                    PacketFate::Acked => acked.push(pkt),
                    PacketFate::Lost => lost.push(pkt),
                    PacketFate::Discarded => {}
                },
            )
        };
        let pi = self.path_index(path).unwrap_or(0);
        let mp = self.multipath;
        let pid = self.paths.get(pi).map(|p| p.id).unwrap_or(PathId::ZERO);
        if mp && level == Level::OneRtt {
            if let Some(newest) = acked.iter().map(|p| p.time_sent).max() {
                self.mp.answered = self.mp.answered.max(Some(newest));
                self.mp.answered_on.push(pid);
            }
        }
        if level == Level::OneRtt && res.is_ok() {
            self.on_ack_ecn(pi, (&acked, &lost), ecn, &views, now);
            self.pmtud_on_ack(pi, &acked, &lost);
        }
        for pkt in acked.drain(..) {
            if mp {
                self.dispatch.sched.on_ack(pid, pkt.size);
            }
            if level == Level::OneRtt {
                self.paths[pi].st.acked_bytes += pkt.size as u64;
            }
            if level == Level::OneRtt {
                self.levels.ku.on_acked(pid, pkt.pn, now);
            }
            for f in pkt.data {
                self.on_frame_acked(f, level, pi);
            }
        }
        for pkt in lost.drain(..) {
            if mp {
                self.dispatch.sched.on_loss(pid, pkt.size);
            }
            self.stats.lost += 1;
            self.paths[pi].st.lost += 1;
            if let Some(q) = &mut self.qlog {
                q.packet_lost(now, level, pid, pkt.pn, pkt.size);
            }
            for f in pkt.data {
                self.on_frame_lost(f, level, pi);
            }
        }
        if level == Level::OneRtt {
            self.qlog_metrics(pi, now);
        }
        self.scratch_acked = acked;
        self.scratch_lost = lost;
        self.scratch_views = views;
        res.map(|_| ())
    }

    /// ECN validation and feedback for one ACK of path `pi`'s packets
    /// (RFC 9000 §13.4.2): the marked packets it acknowledged and the
    /// marked ones it made lost, against the counts it carried; new CE
    /// marks go to the path's controller.
    fn on_ack_ecn(
        &mut self,
        pi: usize,
        (acked, lost): (&[SentPacket<SentFrames>], &[SentPacket<SentFrames>]),
        counts: Option<EcnCounts>,
        views: &[crate::cc::PathView],
        now: Instant,
    ) {
        let marked = |v: &[SentPacket<SentFrames>]| v.iter().filter(|p| p.ect).count() as u64;
        let p = &mut self.paths[pi];
        p.ecn.on_marked_lost(marked(lost));
        let ce = p.ecn.on_ack(marked(acked), counts);
        if let Some(newest) = acked.iter().map(|p| p.time_sent).max().filter(|_| ce > 0) {
            p.recovery.on_ecn_ce(now, newest, views);
        }
    }

    pub(super) fn on_frame_acked(&mut self, f: SentFrame, level: Level, pi: usize) {
        match f {
            SentFrame::Stream { id, offset, len, fin } | SentFrame::StreamCopy { id, offset, len, fin } => {
                self.streams.on_stream_acked(StreamId(id), offset, len as usize, fin)
            }
            SentFrame::Crypto { level, offset, len } => {
                self.levels.send[level_index(level)].on_acked(offset, len as usize)
            }
            SentFrame::Ack { largest } => {
                if level == Level::OneRtt {
                    if let Some(p) = self.paths.get_mut(pi) {
                        p.acks.on_ack_frame_acked(largest);
                    }
                } else {
                    self.hs[level_index(level)].acks.on_ack_frame_acked(largest);
                }
            }
            SentFrame::Control(c) => self.streams.on_control_acked(c),
            SentFrame::PathAck { path, largest } => {
                if let Some(i) = self.path_index(path) {
                    self.paths[i].acks.on_ack_frame_acked(largest);
                }
            }
            SentFrame::NewCid { path, seq } => {
                if let Some(c) = self.cids.local.iter_mut().find(|c| c.path == path && c.seq == seq) {
                    c.announce_pending = false;
                }
            }
            _ => {}
        }
    }

    pub(super) fn on_frame_lost(&mut self, f: SentFrame, _level: Level, pi: usize) {
        match f {
            SentFrame::Stream { id, offset, len, fin } => {
                self.stats.retrans_bytes += len as u64;
                if let Some(p) = self.paths.get_mut(pi) {
                    p.st.retrans_bytes += len as u64;
                }
                self.streams.on_stream_lost(StreamId(id), offset, len as usize, fin);
                self.dispatch.last_loss_path = self.paths.get(pi).map(|p| p.id);
            }
            SentFrame::Crypto { level, offset, len } => {
                self.levels.send[level_index(level)].on_lost(offset, len as usize)
            }
            SentFrame::Control(c) => self.streams.on_control_lost(c),
            SentFrame::HandshakeDone => self.handshake_done_pending = true,
            SentFrame::NewCid { path, seq } => {
                if let Some(c) = self.cids.local.iter_mut().find(|c| c.path == path && c.seq == seq) {
                    c.announce_pending = true;
                }
            }
            SentFrame::RetireCid { path, seq } if !self.mp.is_closed(path) => {
                self.cids.retire_pending.push((path, seq))
            }
            SentFrame::PathAbandon { path, code } => self.mp.abandon_pending.push((path, code)),
            SentFrame::PathStatus { path, seq } => {
                if let Some(i) = self.path_index(path) {
                    let p = &mut self.paths[i];
                    // Only the latest status is worth repeating (draft-21 §4.4).
                    if p.status_seq == seq && !p.abandoned {
                        p.status_pending = true;
                    }
                }
            }
            SentFrame::MaxPathId(v) if v == self.mp.local_max => self.mp.max_path_id_pending = true,
            _ => {}
        }
    }

    fn on_new_cid(
        &mut self,
        path: PathId,
        seq: u64,
        retire_prior_to: u64,
        cid: ConnectionId,
        reset_token: [u8; 16],
    ) -> Result<(), TransportError> {
        if self.cids.dcid_for(PathId::ZERO).is_some_and(|c| c.is_empty()) {
            return Err(TransportError::violation("NEW_CONNECTION_ID while using zero-length CIDs"));
        }
        let peer = &mut self.cids.peer;
        if let Some(existing) = peer.iter().find(|c| c.path == path && c.seq == seq) {
            if existing.cid != cid {
                return Err(TransportError::violation("connection ID sequence reused"));
            }
            return Ok(());
        }
        peer.push(crate::path::PeerCid { path, seq, cid, reset_token: Some(reset_token), in_use: false });
        // Retire what the peer asks to retire.
        let mut switched = false;
        let mut i = 0;
        while i < peer.len() {
            if peer[i].path == path && peer[i].seq < retire_prior_to {
                let c = peer.remove(i);
                switched |= c.in_use;
                self.cids.retire_pending.push((path, c.seq));
            } else {
                i += 1;
            }
        }
        if switched {
            if let Some(c) = peer.iter_mut().find(|c| c.path == path) {
                c.in_use = true;
            }
        }
        let count = peer.iter().filter(|c| c.path == path).count() as u64;
        if count > self.cids.peer_limit {
            return Err(TransportError::new(ErrorCode::CONNECTION_ID_LIMIT_ERROR, "too many connection IDs"));
        }
        Ok(())
    }

    fn on_retire_cid(&mut self, path: PathId, seq: u64) -> Result<(), TransportError> {
        let next = self.cids.local.iter().filter(|c| c.path == path).map(|c| c.seq + 1).max().unwrap_or(0);
        if seq >= next {
            return Err(TransportError::violation("retiring a connection ID never issued"));
        }
        self.cids.retire_local(path, seq);
        if !self.mp.is_closed(path) {
            self.cids.issue(path);
        }
        Ok(())
    }
}
