//! Multipath (draft-ietf-quic-multipath-21): the path-management API, the
//! handling of multipath frames, path creation on the server, abandonment
//! and the detection of paths that stopped answering.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::error::{ErrorCode, TransportError};
use crate::transport_params::TransportParams;
use crate::PathId;

use super::sent::SentFrame;
use super::{Connection, PathEvent, RecvInfo, State};
use crate::path::{Path, PathError, PathStatus};

/// Consecutive PTOs without an acknowledgement after which a path is
/// considered broken while another path works.
pub(super) const SILENT_PTO_LIMIT: u32 = 3;

impl Connection {
    /// Client: open a new path from `local` to `peer`. The path gets the next
    /// unused path ID for which the peer issued a connection ID; data flows
    /// on it once PATH_CHALLENGE/PATH_RESPONSE validated it
    /// ([`PathEvent::Validated`]). Called once the handshake is complete but
    /// before it is confirmed (HANDSHAKE_DONE), the path is created and its
    /// first PATH_CHALLENGE waits for the confirmation.
    pub fn probe_path(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
        now: Instant,
    ) -> Result<PathId, PathError> {
        if !self.multipath || !self.is_established() {
            return Err(PathError::NotMultipath);
        }
        if self.is_server {
            return Err(PathError::NotClient);
        }
        if self.paths.iter().any(|p| !p.abandoned && p.local == local && p.peer == peer) {
            return Err(PathError::Exists);
        }
        let used =
            self.paths.iter().map(|p| p.id.0).chain(self.mp.closed.iter().map(|p| p.0)).max().unwrap_or(0);
        let Some(next) = used.checked_add(1) else { return Err(PathError::PathIdLimit) };
        let limit = self.mp.peer_max.min(self.mp.local_max);
        // The lowest unused path ID with a peer CID (IDs may be skipped when
        // CIDs arrive out of order).
        let id = (next..=limit).map(PathId).find(|id| self.cids.has_peer_cid(*id));
        let Some(id) = id else {
            if next > self.mp.peer_max {
                self.mp.paths_blocked_pending = true;
                return Err(PathError::PathIdLimit);
            }
            if next > self.mp.local_max {
                return Err(PathError::PathIdLimit);
            }
            self.mp.cids_blocked_pending = Some((PathId(next), 0));
            return Err(PathError::NoConnectionId);
        };
        self.cids.assign_dcid(id);
        let mut p = Path::with(id, local, peer, &self.path_config, now);
        // Before the handshake is confirmed the server may drop our 1-RTT
        // packets (RFC 9001 §5.7): the challenge waits for HANDSHAKE_DONE.
        p.challenge_pending = self.handshake_confirmed;
        self.apply_early_status(&mut p);
        self.paths.push(p);
        self.stats.paths += 1;
        if let Some(q) = &mut self.qlog {
            q.tuple_assigned(now, id, local, peer);
        }
        Ok(id)
    }

    /// Abandon a path (PATH_ABANDON with `error_code`, e.g.
    /// `ErrorCode::APPLICATION_ABANDON_PATH`). Its unacknowledged data is
    /// sent again on the other paths.
    pub fn abandon_path(&mut self, id: PathId, error_code: u64, now: Instant) -> Result<(), PathError> {
        if !self.multipath {
            return Err(PathError::NotMultipath);
        }
        let i = self.path_index(id).filter(|i| !self.paths[*i].abandoned).ok_or(PathError::UnknownPath)?;
        if !self.paths.iter().any(|p| p.id != id && p.usable()) {
            return Err(PathError::LastPath);
        }
        self.abandon_internal(i, error_code, now);
        Ok(())
    }

    /// Set our preference for a path and tell the peer (PATH_STATUS_BACKUP /
    /// PATH_STATUS_AVAILABLE). Our scheduler honours it too.
    pub fn set_path_status(
        &mut self,
        id: PathId,
        status: PathStatus,
        _now: Instant,
    ) -> Result<(), PathError> {
        if !self.multipath {
            return Err(PathError::NotMultipath);
        }
        let i = self.path_index(id).filter(|i| !self.paths[*i].abandoned).ok_or(PathError::UnknownPath)?;
        let p = &mut self.paths[i];
        if p.status != status || p.status_seq == 0 {
            p.status = status;
            p.status_seq += 1;
            p.status_pending = true;
        }
        Ok(())
    }

    /// After the handshake: path ID limits and CIDs for every usable path ID.
    pub(super) fn mp_on_handshake(&mut self, params: &TransportParams) -> Result<(), TransportError> {
        if !self.multipath {
            return Ok(());
        }
        let peer_max = params.initial_max_path_id.unwrap_or(0);
        if peer_max > u32::MAX as u64 {
            return Err(TransportError::new(
                ErrorCode::TRANSPORT_PARAMETER_ERROR,
                "initial_max_path_id too large",
            ));
        }
        // Multipath needs non-zero-length CIDs on both sides (draft-21 §2.1).
        if self.cids.cid_len() == 0 || self.cids.dcid_for(PathId::ZERO).is_none_or(|c| c.is_empty()) {
            return Err(TransportError::violation("multipath with a zero-length connection ID"));
        }
        self.mp.peer_max = peer_max as u32;
        self.mp.peer_initial_max = peer_max as u32;
        self.issue_path_cids();
        Ok(())
    }

    /// Issue CIDs for each path ID up to the smaller of both limits
    /// (draft-21 §4.6.1), skipping closed path IDs.
    pub(super) fn issue_path_cids(&mut self) {
        let limit = self.mp.peer_max.min(self.mp.local_max);
        // Bound the work: at most 16 path IDs beyond those in use.
        let start = self.cids.max_issued_path().map_or(0, |p| p.0);
        let end = limit.min(start.saturating_add(16));
        for id in 0..=end {
            let id = PathId(id);
            if !self.mp.is_closed(id) {
                self.cids.issue(id);
            }
        }
    }

    /// A path ID in a received frame: above our limit is a PROTOCOL_VIOLATION
    /// (draft-21 §4); `None` for a path ID we no longer process.
    pub(super) fn frame_path(&self, p: u64) -> Result<Option<PathId>, TransportError> {
        self.require_multipath()?;
        if p > self.mp.local_max as u64 {
            return Err(TransportError::violation("path ID above the maximum path ID"));
        }
        let id = PathId(p as u32);
        Ok(if self.mp.is_closed(id) { None } else { Some(id) })
    }

    pub(super) fn require_multipath(&self) -> Result<(), TransportError> {
        if self.multipath {
            Ok(())
        } else {
            Err(TransportError::violation("multipath frame without multipath negotiated"))
        }
    }

    pub(super) fn on_path_abandon(&mut self, p: u64, now: Instant) -> Result<(), TransportError> {
        let Some(id) = self.frame_path(p)? else { return Ok(()) };
        match self.path_index(id) {
            Some(i) => {
                if !self.paths[i].abandoned {
                    self.abandon_internal(i, ErrorCode::NO_ERROR.0, now);
                }
            }
            None => {
                // A path we never saw (e.g. its validation failed): the ID is
                // consumed; answer with our own PATH_ABANDON.
                self.mp.closed.push(id);
                self.mp.abandon_pending.push((id, ErrorCode::NO_ERROR.0));
                self.cids.retire_peer_path(id);
            }
        }
        if !self.paths.iter().any(|p| !p.abandoned) && self.state == State::Established {
            // The only open path was abandoned (draft-21 §3.4).
            self.close_on_error(TransportError::new(ErrorCode::NO_VIABLE_PATH, "last path abandoned"), now);
        }
        Ok(())
    }

    pub(super) fn on_path_status(
        &mut self,
        p: u64,
        seq: u64,
        status: PathStatus,
    ) -> Result<(), TransportError> {
        let Some(id) = self.frame_path(p)? else { return Ok(()) };
        match self.path_index(id) {
            Some(i) => {
                let path = &mut self.paths[i];
                if path.peer_status_seq.is_some_and(|s| s >= seq) {
                    return Ok(());
                }
                path.peer_status_seq = Some(seq);
                if path.peer_status != status {
                    path.peer_status = status;
                    self.push_event(PathEvent::StatusChanged(id, status));
                }
            }
            None => {
                // Allowed before the path is in use (draft-21 §5.3): keep the
                // newest one for when it opens.
                let early = &mut self.mp.early_status;
                match early.iter().position(|e| e.0 == id) {
                    Some(k) if early.get(k).is_some_and(|e| e.1 < seq) => early[k] = (id, seq, status),
                    Some(_) => {}
                    None if early.len() < 16 => early.push((id, seq, status)),
                    None => {}
                }
            }
        }
        Ok(())
    }

    fn apply_early_status(&mut self, p: &mut Path) {
        if let Some(k) = self.mp.early_status.iter().position(|e| e.0 == p.id) {
            let (_, seq, st) = self.mp.early_status.swap_remove(k);
            p.peer_status_seq = Some(seq);
            p.peer_status = st;
        }
    }

    pub(super) fn on_max_path_id(&mut self, v: u64) -> Result<(), TransportError> {
        self.require_multipath()?;
        if v > u32::MAX as u64 || v < self.mp.peer_initial_max as u64 {
            return Err(TransportError::violation("invalid MAX_PATH_ID"));
        }
        if v as u32 > self.mp.peer_max {
            self.mp.peer_max = v as u32;
            self.issue_path_cids();
        }
        Ok(())
    }

    pub(super) fn on_paths_blocked(&mut self, v: u64) -> Result<(), TransportError> {
        self.require_multipath()?;
        if v > self.mp.local_max as u64 {
            return Err(TransportError::violation("PATHS_BLOCKED above our maximum path ID"));
        }
        Ok(())
    }

    pub(super) fn on_path_cids_blocked(&mut self, p: u64, next_seq: u64) -> Result<(), TransportError> {
        let Some(id) = self.frame_path(p)? else { return Ok(()) };
        if next_seq > self.cids.next_seq(id) {
            return Err(TransportError::violation("PATH_CIDS_BLOCKED beyond the CIDs issued"));
        }
        if id.0 <= self.mp.peer_max {
            self.cids.issue(id);
        }
        Ok(())
    }

    /// Server: the first packet on a new path ID creates the path
    /// (draft-21 §3.1); it is validated before carrying data.
    pub(super) fn create_peer_path(&mut self, id: PathId, info: RecvInfo, now: Instant) -> Option<usize> {
        if !self.multipath || !self.is_server || self.mp.is_closed(id) || id.0 > self.mp.local_max {
            return None;
        }
        let mut p = Path::with(id, info.to, info.from, &self.path_config, now);
        p.challenge_pending = true;
        self.apply_early_status(&mut p);
        self.cids.assign_dcid(id);
        self.paths.push(p);
        self.stats.paths += 1;
        self.push_event(PathEvent::New(id, info.to, info.from));
        Some(self.paths.len() - 1)
    }

    /// Abandon path `i`: queue PATH_ABANDON, retire the peer's CIDs for it,
    /// resend its unacknowledged data elsewhere, keep its state 3 PTO.
    pub(super) fn abandon_internal(&mut self, i: usize, code: u64, now: Instant) {
        let pto = self.max_pto();
        let id = self.paths[i].id;
        {
            let p = &mut self.paths[i];
            p.abandoned = true;
            p.end_validation();
            p.responses.clear();
            p.probes = 0;
            p.drop_at = Some(now + pto * 3);
            if !p.abandon_sent {
                p.abandon_sent = true;
                self.mp.abandon_pending.push((id, code));
            }
        }
        self.cids.retire_peer_path(id);
        if !self.mp.is_closed(id) {
            self.mp.closed.push(id);
            // Keep the number of usable path IDs constant for the peer.
            if self.config_max_path_id.is_some() && self.mp.local_max < u32::MAX {
                self.mp.local_max += 1;
                self.mp.max_path_id_pending = true;
            }
        }
        let mut lost = std::mem::take(&mut self.scratch_lost);
        {
            let p = &mut self.paths[i];
            p.space.discard(&mut p.recovery, |_, pkt| lost.push(pkt));
        }
        for pkt in lost.drain(..) {
            for f in pkt.data {
                self.on_frame_lost(f, crate::crypto::Level::OneRtt, i);
            }
        }
        self.scratch_lost = lost;
        self.dispatch.sched.on_path_closed(id);
        self.push_event(PathEvent::Abandoned(id));
    }

    /// How long to wait for a PATH_RESPONSE to the next challenge on path
    /// `pi`: the path's PTO once it has an RTT sample; before that, the
    /// largest PTO of the validated paths (the path's own estimate would be
    /// kInitialRtt's, about a second). Doubled per challenge already sent,
    /// like PTO backoff, so a dead path is probed no more often than an
    /// Initial would be resent (RFC 9000 §8.2.1).
    pub(super) fn challenge_interval(&self, pi: usize) -> Duration {
        let p = &self.paths[pi];
        let own = p.recovery.rtt().has_sample().then(|| p.recovery.rtt().pto_base());
        let current = self.paths.iter().filter(|q| q.usable()).map(|q| q.recovery.rtt().pto_base()).max();
        let base = own.or(current).unwrap_or_else(|| p.recovery.rtt().pto_base());
        base * (1u32 << p.challenges.count().min(6))
    }

    /// The largest PTO among open paths (draft-21 §2.5, §2.6).
    pub(super) fn max_pto(&self) -> Duration {
        self.paths
            .iter()
            .filter(|p| !p.abandoned)
            .map(|p| p.recovery.rtt().pto_base())
            .max()
            .unwrap_or(Duration::from_secs(1))
    }

    /// Path validation retries and failures, and removal of abandoned paths.
    pub(super) fn on_path_timers(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.paths.len() {
            let n = self.paths.len();
            let p = &mut self.paths[i];
            if p.drop_at.is_some_and(|t| now >= t) && n > 1 {
                let id = p.id;
                self.paths.remove(i);
                self.cids.drop_local_path(id);
                self.sbd.remove_path(id);
                continue;
            }
            if p.challenge_retry.is_some_and(|t| now >= t) && !p.validated {
                // Another challenge (fresh data) until the deadline.
                p.challenge_retry = None;
                p.challenge_pending = true;
            }
            // A new peer address that failed validation: back to the old one.
            if p.challenge_deadline.is_some_and(|t| now >= t) && !p.validated && p.peer_move_failed() {
                i += 1;
                continue;
            }
            if p.challenge_deadline.is_some_and(|t| now >= t) && !p.validated && !p.abandoned {
                let id = p.id;
                if !(self.multipath && id != PathId::ZERO) {
                    p.abandoned = true;
                }
                self.push_event(PathEvent::FailedValidation(id));
                if self.multipath && id != PathId::ZERO {
                    self.abandon_internal(i, ErrorCode::NO_ERROR.0, now);
                }
            }
            i += 1;
        }
    }

    /// A path had a PTO: in multipath its unacknowledged stream data is
    /// queued again (it may go out on another path, draft-21 §7.5), and a
    /// path silent for several PTOs while another path works is abandoned.
    pub(super) fn on_path_pto(&mut self, pi: usize, now: Instant) {
        if !self.multipath || self.paths.len() < 2 {
            return;
        }
        let others_ok =
            self.paths.iter().enumerate().any(|(j, p)| j != pi && p.usable() && p.silent_ptos == 0);
        if !others_ok {
            return;
        }
        self.paths[pi].silent_ptos += 1;
        self.requeue_path_data(pi);
        if self.paths[pi].silent_ptos >= SILENT_PTO_LIMIT && !self.paths[pi].abandoned {
            log::debug!("path {:?} stopped answering; abandoning it", self.paths[pi].id);
            self.abandon_internal(pi, ErrorCode::PATH_UNSTABLE_OR_POOR.0, now);
        }
    }

    /// Queue the unacknowledged stream data of a path for retransmission on
    /// any path (its packets stay in flight: if they are acknowledged after
    /// all, the copies sent meanwhile are merely redundant).
    fn requeue_path_data(&mut self, pi: usize) {
        let mut requeue = Vec::new();
        for pkt in self.paths[pi].space.iter() {
            for f in pkt.data.iter() {
                if let SentFrame::Stream { id, offset, len, fin } = *f {
                    requeue.push((id, offset, len, fin));
                }
            }
        }
        for (id, offset, len, fin) in requeue {
            self.streams.on_stream_lost(crate::stream::StreamId(id), offset, len as usize, fin);
        }
    }

    /// Cross-path evidence of a dead path. A black-holed path acknowledges
    /// nothing, so RFC 9002's thresholds (which need a later packet of the
    /// same path acknowledged) never fire and only its PTO notices; by then
    /// the peer may hold a whole window of data received on the other paths
    /// behind the hole. Here, once the packet just read acknowledged a
    /// packet sent at `mp.answered` (on the paths `mp.answered_on`), any
    /// other path whose oldest outstanding packet was sent before that and
    /// is older than that path's loss delay, plus the time the peer may hold
    /// its ACK back, becomes suspect: its data is queued again for the other
    /// paths, and it gets no new data until it acknowledges something.
    /// Checked once the whole packet is read: the peer often acknowledges
    /// several paths in one packet. A path that was only slow (it answered
    /// after all) waits longer next time (`suspect_slack`, see
    /// [`Connection::clear_suspicion`]).
    pub(super) fn check_silent_paths(&mut self, now: Instant) {
        let Some(newest_sent) = self.mp.answered.take() else { return };
        let mut answered = std::mem::take(&mut self.mp.answered_on);
        self.suspect_silent_paths(&answered, newest_sent, now);
        answered.clear();
        self.mp.answered_on = answered;
    }

    fn suspect_silent_paths(&mut self, answered: &[PathId], newest_sent: Instant, now: Instant) {
        if !self.multipath || self.paths.len() < 2 {
            return;
        }
        for j in 0..self.paths.len() {
            let p = &self.paths[j];
            if answered.contains(&p.id) || p.abandoned || p.suspect.is_some() || !p.validated {
                continue;
            }
            let (oldest, next) = {
                let mut eliciting =
                    p.space.iter().filter(|k| k.ack_eliciting && k.in_flight).map(|k| k.time_sent);
                (eliciting.next(), eliciting.next())
            };
            let Some(oldest) = oldest.filter(|&t| t < newest_sent) else { continue };
            // The peer acknowledges at the latest when the next ack-eliciting
            // packet arrives, or after its max_ack_delay.
            let mad = p.recovery.max_ack_delay();
            let ack_wait = next.map_or(mad, |t| t.saturating_duration_since(oldest).min(mad));
            let rtt = p.recovery.rtt();
            let wait =
                rtt.loss_delay() + (rtt.var() * 4).max(crate::rtt::GRANULARITY) + ack_wait + p.suspect_slack;
            if now.saturating_duration_since(oldest) <= wait {
                continue;
            }
            log::debug!("path {:?} silent for {:?} while {:?} answer: suspect", p.id, now - oldest, answered);
            if let Some(q) = &mut self.qlog {
                q.path_suspect(now, self.paths[j].id, now - oldest);
            }
            self.paths[j].suspect = Some(now);
            self.paths[j].st.suspicions += 1;
            self.requeue_path_data(j);
        }
    }

    /// Path `i` acknowledged something: it gets new data again. If a packet
    /// sent before it became suspect was among the acknowledged, it was
    /// slow, not dead (loopback under CPU load stalls one path for 20-40 ms
    /// at a 10-20 ms RTT): the wait was short by the time since the
    /// suspicion, so the path's slack grows by twice that, up to one PTO
    /// period, and the next such stall does not send its window again on
    /// the other paths. (Dead-path detection on this path is then slower by
    /// the slack, at most a PTO.)
    pub(super) fn clear_suspicion(&mut self, i: usize, oldest_acked: Option<Instant>, now: Instant) {
        let p = &mut self.paths[i];
        let Some(since) = p.suspect.take() else { return };
        if oldest_acked.is_some_and(|t| t < since) {
            let late = now.saturating_duration_since(since) * 2;
            let cap = p.recovery.rtt().pto_base() + p.recovery.max_ack_delay();
            p.suspect_slack = (p.suspect_slack + late).min(cap);
        }
    }

    /// A receiver only sends ACKs, which are not acknowledged, so a path
    /// that went dead in both directions would never be noticed on this
    /// side, and the peer may keep waiting on it. When a path has brought
    /// nothing for two of its PTOs (`quiet_at`) while another path did, or
    /// while we wait for missing stream data, and nothing of ours is in
    /// flight on it, it gets a PING: unanswered, its PTOs count towards
    /// abandoning it (and the peer learns of it through PATH_ABANDON).
    /// Each quiet period is checked once, so idle connections stay idle.
    pub(super) fn probe_quiet_paths(&mut self, now: Instant) {
        if !self.paths.iter().any(|p| p.quiet_at.is_some_and(|t| t <= now)) {
            return;
        }
        let waiting = self.streams.out_of_order_bytes() > 0;
        for j in 0..self.paths.len() {
            let p = &self.paths[j];
            let Some(t) = p.quiet_at.filter(|&t| t <= now) else { continue };
            let since = now.saturating_duration_since(t);
            let others_live = self.paths.iter().enumerate().any(|(k, o)| {
                k != j
                    && !o.abandoned
                    && o.last_recv.is_some_and(|r| p.last_recv.is_none_or(|l| r > l + since))
            });
            let p = &mut self.paths[j];
            p.quiet_at = None;
            if p.abandoned || !p.validated || p.probes > 0 || p.space.ack_eliciting_in_flight() > 0 {
                continue;
            }
            if waiting || others_live {
                log::debug!("path {:?} quiet; probing it", p.id);
                p.probes = 1;
            }
        }
    }

    /// Multipath control frames are waiting to be sent.
    pub(super) fn mp_frames_pending(&self) -> bool {
        self.multipath
            && (self.mp.max_path_id_pending
                || self.mp.paths_blocked_pending
                || self.mp.cids_blocked_pending.is_some()
                || !self.mp.abandon_pending.is_empty()
                || self.paths.iter().any(|p| p.status_pending && !p.abandoned))
    }
}
