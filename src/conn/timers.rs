//! Timers: one table keyed by (path, kind) behind `timeout()`, and what
//! happens when they fire — loss detection and PTO (RFC 9002 §6), the idle
//! timeout (RFC 9000 §10.1), ACK delay, path validation, abandoned paths'
//! removal, quiet paths, the scheduler's wait, and the close timers.

use std::time::{Duration, Instant};

use crate::crypto::Level;
use crate::recovery::{HandshakeStatus, PacketFate, SentPacket, TimeoutAction};
use crate::PathId;

use super::sent::{SentFrame, SentFrames};
use super::{Connection, State};

/// What a timer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TimerKind {
    /// No packet from the peer for the idle timeout.
    Idle,
    /// The scheduler asked to be asked again.
    Scheduler,
    /// An Initial or Handshake ACK is due.
    HandshakeAck,
    /// Loss detection or PTO.
    Loss,
    /// The path's (PATH_)ACK is due.
    Ack,
    /// PATH_CHALLENGE to repeat.
    ChallengeRetry,
    /// Path validation fails.
    ChallengeExpiry,
    /// An abandoned path's state goes.
    Drop,
    /// The path heard nothing for a while: probe it.
    Quiet,
    /// A migration's next PATH_CHALLENGE, or its end.
    Migration,
}

/// The idle timeout: configured, and when it fires.
pub(super) struct IdleTimer {
    pub(super) timeout: Duration,
    pub(super) deadline: Option<Instant>,
}

/// A timer's key: its path (`None`: the connection's) and kind.
pub(super) type TimerKey = (Option<PathId>, TimerKind);

impl Connection {
    pub(super) fn reset_idle(&mut self, now: Instant) {
        let peer = self.peer_params.as_ref().map(|p| p.max_idle_timeout).unwrap_or(0);
        let mut t = self.idle.timeout;
        if peer > 0 && (t.is_zero() || Duration::from_millis(peer) < t) {
            t = Duration::from_millis(peer);
        }
        if t.is_zero() {
            self.idle.deadline = None;
            return;
        }
        // Never shorter than three PTOs (RFC 9000 §10.1).
        let pto = self.paths.first().map(|p| p.recovery.rtt().pto_base()).unwrap_or_default();
        self.idle.deadline = Some(now + t.max(pto * 3));
    }

    /// The earliest time `on_timeout` must be called, if any.
    pub fn timeout(&self) -> Option<Instant> {
        match self.state {
            State::Closed => None,
            State::Closing { until } | State::Draining { until } => Some(until),
            _ => self.next_timer().map(|(_, t)| t),
        }
    }

    /// The earliest armed timer of the table.
    pub(super) fn next_timer(&self) -> Option<(TimerKey, Instant)> {
        let mut next: Option<(TimerKey, Instant)> = None;
        self.for_each_timer(|key, t| {
            if next.is_none_or(|(_, n)| t < n) {
                next = Some((key, t));
            }
        });
        next
    }

    /// The timer table: every armed timer with its key. Computed from the
    /// state that arms it, so nothing can fall out of step.
    fn for_each_timer(&self, mut f: impl FnMut(TimerKey, Instant)) {
        let mut put = |key: TimerKey, t: Option<Instant>| {
            if let Some(t) = t {
                f(key, t);
            }
        };
        put((None, TimerKind::Idle), self.idle.deadline);
        put((None, TimerKind::Scheduler), self.dispatch.until);
        for (sp, level) in self.hs.iter().zip([Level::Initial, Level::Handshake]) {
            if self.levels.has_send_keys(level) {
                put((None, TimerKind::HandshakeAck), sp.acks.ack_deadline());
            }
        }
        let hs = self.hs_status();
        for (pi, p) in self.paths.iter().enumerate() {
            let id = Some(p.id);
            put((id, TimerKind::Loss), self.loss_timer(pi, &hs));
            put((id, TimerKind::Ack), p.acks.ack_deadline());
            put((id, TimerKind::ChallengeRetry), p.challenge_retry);
            put((id, TimerKind::ChallengeExpiry), p.challenge_deadline);
            put((id, TimerKind::Drop), p.drop_at);
            put((id, TimerKind::Quiet), p.quiet_at);
            put((id, TimerKind::Migration), self.migration_timer(pi));
        }
    }

    /// Handle timer expiry: loss detection, PTO, ACK delay, idle timeout,
    /// path validation and close timers.
    pub fn on_timeout(&mut self, now: Instant) {
        self.last_now = now;
        match self.state {
            State::Closed => return,
            State::Closing { until } | State::Draining { until } => {
                if now >= until {
                    self.state = State::Closed;
                    self.qlog_state(now, crate::qlog::ConnState::Closed);
                }
                return;
            }
            _ => {}
        }
        if let Some(d) = self.idle.deadline {
            if now >= d {
                log::debug!("idle timeout");
                self.qlog_closed(now, false, "idle_timeout");
                self.state = State::Closed;
                self.qlog_state(now, crate::qlog::ConnState::Closed);
                return;
            }
        }
        self.dispatch.on_timeout(now);
        self.on_loss_timeout(now);
        self.on_path_timers(now);
        self.expire_migrations(now);
        if self.multipath {
            self.probe_quiet_paths(now);
        }
    }

    /// Path `pi`'s loss-detection timer (RFC 9002 §6.2), over its
    /// application-data space and, on the first path, the handshake spaces.
    fn loss_timer(&self, pi: usize, hs: &HandshakeStatus) -> Option<Instant> {
        let p = &self.paths[pi];
        let mut spaces = [&p.space; 3];
        let mut n = 0;
        if pi == 0 {
            for sp in self.hs.iter().filter(|sp| !sp.discarded) {
                spaces[n] = &sp.sent;
                n += 1;
            }
        }
        spaces[n] = &p.space;
        p.recovery.loss_detection_timer(&spaces[..=n], hs)
    }

    pub(super) fn hs_status(&self) -> HandshakeStatus {
        HandshakeStatus {
            is_client: !self.is_server,
            has_handshake_keys: self.levels.has_send_keys(Level::Handshake),
            handshake_confirmed: self.handshake_confirmed,
            peer_completed_address_validation: self.is_server
                || self.handshake_confirmed
                || self.hs[1].sent.largest_acked().is_some(),
            amplification_limited: self.is_server
                && !self.peer_validated
                && self.paths[0].amp_sent >= self.paths[0].amp_recv * 3,
        }
    }

    /// A PTO on path `pi` with our HANDSHAKE_DONE unacknowledged: the probe
    /// carries it again rather than a bare PING (RFC 9002 §6.2.4). Until it
    /// arrives the client keeps retransmitting its Finished, which we can no
    /// longer acknowledge; noq's client then sent nothing in 1-RTT, not even
    /// ACKs of our PINGs, and the connection idled out (handshakeloss).
    fn resend_handshake_done(&mut self, pi: usize) {
        let space = &self.paths[pi].space;
        if self.is_server
            && space.iter().any(|p| p.data.iter().any(|f| matches!(f, SentFrame::HandshakeDone)))
        {
            self.handshake_done_pending = true;
        }
    }

    pub(super) fn on_loss_timeout(&mut self, now: Instant) {
        let hs = self.hs_status();
        let views = self.path_views();
        let mut lost = std::mem::take(&mut self.scratch_lost);
        let mut pto_paths = 0u64;
        for pi in 0..self.paths.len() {
            if self.paths[pi].abandoned {
                continue;
            }
            let action = {
                let (hs_spaces, paths) = (&mut self.hs, &mut self.paths);
                let p = &mut paths[pi];
                let mut on = |fate: PacketFate, pkt: SentPacket<SentFrames>| {
                    if fate == PacketFate::Lost {
                        lost.push(pkt);
                    }
                };
                if pi == 0 {
                    let [a, b] = hs_spaces;
                    let mut spaces: Vec<&mut crate::recovery::PacketSpace<SentFrames>> =
                        Vec::with_capacity(3);
                    if !a.discarded {
                        spaces.push(&mut a.sent);
                    }
                    if !b.discarded {
                        spaces.push(&mut b.sent);
                    }
                    spaces.push(&mut p.space);
                    p.recovery.on_loss_detection_timeout(&mut spaces, now, &hs, &views, &mut on)
                } else {
                    p.recovery.on_loss_detection_timeout(&mut [&mut p.space], now, &hs, &views, &mut on)
                }
            };
            match action {
                TimeoutAction::None | TimeoutAction::Lost(_) => {}
                // A handshake-space probe carries the unacknowledged CRYPTO
                // data again (RFC 9002 §6.2.4): if the ClientHello itself was
                // lost, a PING alone tells the server nothing (aioquic closes
                // with PROTOCOL_VIOLATION on such an Initial).
                TimeoutAction::Probe { space, packets } => match space {
                    crate::recovery::SpaceKind::Initial => {
                        self.hs[0].probes = packets;
                        self.levels.send[0].requeue_all();
                        // The Handshake CRYPTO in flight goes too, coalesced
                        // (§6.2.4): a server held by the amplification limit
                        // would otherwise spend its few bytes on Initial
                        // probes and their padding while its certificate waits.
                        if !self.hs[1].discarded && self.levels.send[1].requeue_all() {
                            self.hs[1].probes = packets;
                        }
                    }
                    crate::recovery::SpaceKind::Handshake => {
                        self.hs[1].probes = packets;
                        self.levels.send[1].requeue_all();
                    }
                    crate::recovery::SpaceKind::Data => {
                        self.paths[pi].probes = packets;
                        pto_paths |= 1u64 << pi.min(63);
                        self.pmtud_on_pto(pi);
                        self.resend_handshake_done(pi);
                    }
                },
            }
            self.pmtud_on_lost(pi, &lost);
            // Data lost from this path's packets (CRYPTO frames carry their
            // own level).
            for pkt in lost.drain(..) {
                self.stats.lost += 1;
                self.paths[pi].st.lost += 1;
                if let Some(q) = &mut self.qlog {
                    q.packet_lost(now, Level::OneRtt, self.paths[pi].id, pkt.pn, pkt.size);
                }
                for f in pkt.data {
                    self.on_frame_lost(f, Level::OneRtt, pi);
                }
            }
        }
        self.scratch_lost = lost;
        self.scratch_views = views;
        if pto_paths != 0 && self.multipath {
            // Highest index first: abandoning never removes entries, but
            // keep indices stable regardless.
            for pi in (0..self.paths.len().min(64)).rev() {
                if pto_paths & (1u64 << pi) != 0 {
                    self.on_path_pto(pi, now);
                }
            }
        }
    }
}
