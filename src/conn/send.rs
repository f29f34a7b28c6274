//! Sending: frames → packets → one datagram (coalescing Initial, Handshake
//! and 1-RTT packets while the handshake runs).

use std::time::{Duration, Instant};

use crate::codec::Writer;
use crate::crypto::Level;
use crate::frame::{self, Frame};
use crate::packet::{self, ConnectionId};
use crate::recovery::SentPacket;
use crate::sched::Sent;
use crate::stream::ControlFrame;
use crate::PathId;

use super::builder::{Header, PacketBuilder, TAG_LEN};
use super::dispatch::{CopyFrames, DataMode, Job};
use super::sent::{SentFrame, SentFrames};
use super::spaces::level_index;
use super::{Connection, Error, SendInfo, State};

/// Minimum size of datagrams carrying Initial packets (RFC 9000 §14.1).
const MIN_INITIAL_SIZE: usize = 1200;
/// What a packet at one level is due to carry ([`Connection::packet_due`]).
struct Due {
    pn: u64,
    pn_len: usize,
    /// An ACK is due (ours, or other paths' PATH_ACKs).
    ack: bool,
    /// Frames other than ACKs wait.
    has_data: bool,
    /// They may be sent (window, path validation).
    may_send_data: bool,
    /// PTO probes owed.
    probes: u8,
}

impl Due {
    fn data_ready(&self) -> bool {
        self.has_data && self.may_send_data
    }
}

impl Connection {
    /// Write the next datagram into `out`. `None` means there is nothing to
    /// send now (check [`Connection::timeout`]).
    pub fn send(&mut self, out: &mut [u8], now: Instant) -> Result<Option<(usize, SendInfo)>, Error> {
        let r = self.send_next(out, now)?;
        if r.is_none() {
            self.mark_app_limited();
        }
        Ok(r)
    }

    /// Nothing left to send: a path with room for another full packet is
    /// limited by the application, not the network, and its next rate
    /// samples say so (BBR must not take them for the bottleneck's rate).
    /// A path with less room than a packet is window-limited: marking it
    /// would stop its window from growing for good wherever the
    /// application refills just behind the sender (a server keeping little
    /// unsent), as it can never send the packet that fills the window.
    fn mark_app_limited(&mut self) {
        if self.streams.has_pending_data() || self.dgram_pending() || !self.is_established() {
            return;
        }
        for p in self.paths.iter_mut().filter(|p| p.usable()) {
            if p.recovery.bytes_in_flight() + p.mss() <= p.recovery.cwnd() {
                p.recovery.on_app_limited();
            }
        }
    }

    /// Like [`Connection::send`] but on the given path.
    pub fn send_on_path(
        &mut self,
        out: &mut [u8],
        path: PathId,
        now: Instant,
    ) -> Result<Option<(usize, SendInfo)>, Error> {
        let pi = self.path_index(path).ok_or(Error::InvalidPath)?;
        self.send_on_index(out, pi, &mut Job::new(DataMode::NORMAL), now)
    }

    pub(super) fn send_on_index(
        &mut self,
        out: &mut [u8],
        pi: usize,
        job: &mut Job,
        now: Instant,
    ) -> Result<Option<(usize, SendInfo)>, Error> {
        match self.state {
            State::Closed | State::Draining { .. } => return Ok(None),
            State::Closing { .. } if !self.close_pending => return Ok(None),
            _ => {}
        }
        if out.len() < MIN_INITIAL_SIZE.min(self.max_udp_payload) {
            return Err(Error::BufferTooShort);
        }
        let Some(path) = self.paths.get(pi) else { return Ok(None) };
        // An abandoned path sends nothing more; a path without a peer CID
        // cannot send yet (draft-21 §3.4, §4.6).
        if path.abandoned || (path.id != PathId::ZERO && self.cids.assign_dcid(path.id).is_none()) {
            return Ok(None);
        }
        // A client's new path waits for the handshake to be confirmed (see
        // `probe_path`): nothing goes out on it before its challenge.
        if !self.is_server && !self.handshake_confirmed && pi != 0 {
            return Ok(None);
        }
        let mut limit = out.len().min(self.paths[pi].mss());
        // Anti-amplification (RFC 9000 §8.1): 3x what the client sent, on
        // the first path before the handshake validates the client, and on
        // a new path or a new peer address until path validation succeeds.
        let p = &self.paths[pi];
        let new_unvalidated = self.is_server && !p.validated && (pi != 0 || p.moved_from.is_some());
        if (self.is_server && !self.peer_validated) || new_unvalidated {
            let budget = (p.amp_recv * 3).saturating_sub(p.amp_sent) as usize;
            if budget < limit {
                limit = budget;
            }
            if limit < 64 {
                return Ok(None);
            }
        }

        if self.levels.ku.packets_in_phase >= self.key_update_interval {
            self.check_key_limits(now);
        }
        if self.close_pending {
            return self.send_close(&mut out[..limit], pi, now);
        }
        let mut pair = None;
        let (written, ecn) = if self.off_path_due(pi, now) {
            let o = self.write_off_path(out, pi, now)?;
            pair = Some((o.from, o.to));
            (o.len, crate::Ecn::NotEct)
        } else if let Some(size) = self.pmtu_probe_due(pi, out.len(), now) {
            self.write_pmtu_probe(&mut out[..size], pi, now)?
        } else {
            self.write_datagram(&mut out[..limit], pi, job, now)?
        };
        if written == 0 {
            return Ok(None);
        }
        let path = &mut self.paths[pi];
        if pair.is_none() {
            path.amp_sent += written as u64;
        }
        path.st.sent_bytes += written as u64;
        self.stats.sent += 1;
        self.stats.sent_bytes += written as u64;
        let at = if self.pacing { path.recovery.next_send_time(now).unwrap_or(now) } else { now };
        let (from, to) = pair.unwrap_or((path.local, path.peer));
        let info = SendInfo { from, to, path_id: path.id, at, ecn };
        if self.multipath {
            let sent =
                Sent { datagram_bytes: written, stream_bytes: job.stream_bytes, redundant: job.is_copy() };
            self.dispatch.on_sent(info.path_id, sent);
        }
        Ok(Some((written, info)))
    }

    /// The packets of every level due on path `pi`, coalesced into `out`:
    /// the datagram's length (0: nothing to send) and ECN codepoint.
    fn write_datagram(
        &mut self,
        out: &mut [u8],
        pi: usize,
        job: &mut Job,
        now: Instant,
    ) -> Result<(usize, crate::Ecn), Error> {
        let mut written = 0;
        let mut has_initial = false;
        let mut ack_eliciting_initial = false;
        // Whether the last packet written has a long header (a 1-RTT packet
        // runs to the end of the datagram: nothing may follow it).
        let mut last_long = false;
        // The datagram is marked ECT(0) if its 1-RTT packet is.
        let mut ecn = crate::Ecn::NotEct;
        for level in [Level::Initial, Level::ZeroRtt, Level::Handshake, Level::OneRtt] {
            if !self.levels.has_send_keys(level) || (level == Level::ZeroRtt && !self.sends_early_data()) {
                continue;
            }
            // Only 1-RTT packets go on other paths (0-RTT too stays on the
            // first, draft-21 §2.3).
            if level != Level::OneRtt && pi != 0 {
                continue;
            }
            if written + 64 > out.len() {
                break;
            }
            // The padding goes in the last packet of the datagram, so decide
            // it for the last one.
            let is_last = level == Level::OneRtt || !self.more_levels_to_send(level);
            let pad_to = if is_last
                && (self.initial_needs_padding(has_initial, ack_eliciting_initial)
                    || (level == Level::Initial && !self.is_server))
            {
                Some(MIN_INITIAL_SIZE.saturating_sub(written))
            } else {
                None
            };
            match self.write_packet(level, pi, &mut out[written..], pad_to, job, now)? {
                Some((n, eliciting)) => {
                    if level == Level::Initial {
                        has_initial = true;
                        ack_eliciting_initial |= eliciting;
                    }
                    last_long = level != Level::OneRtt;
                    if level == Level::OneRtt && self.paths[pi].ecn.last_marked() {
                        ecn = crate::Ecn::Ect0;
                    }
                    written += n;
                }
                None => continue,
            }
        }
        // A datagram that must be padded but whose last packet came out
        // shorter (a later level predicted to follow wrote nothing) is padded
        // here: zero bytes after a long-header packet are valid datagram
        // padding (receivers discard what they cannot parse).
        let min = MIN_INITIAL_SIZE.min(out.len());
        if self.initial_needs_padding(has_initial, ack_eliciting_initial) && written < min && last_long {
            out[written..min].fill(0);
            written = min;
        }
        Ok((written, ecn))
    }

    /// RFC 9000 §14.1: a client pads every datagram carrying an Initial
    /// packet (even an ACK-only one coalesced with its Finished and first
    /// request) to 1200 bytes; a server only those with an ack-eliciting one.
    fn initial_needs_padding(&self, has_initial: bool, ack_eliciting_initial: bool) -> bool {
        if self.is_server {
            ack_eliciting_initial
        } else {
            has_initial
        }
    }

    fn more_levels_to_send(&self, level: Level) -> bool {
        let has = |l: Level| self.levels.has_send_keys(l) && self.level_has_data(l);
        match level {
            Level::Initial => {
                (self.sends_early_data() && has(Level::ZeroRtt))
                    || has(Level::Handshake)
                    || has(Level::OneRtt)
            }
            Level::ZeroRtt => has(Level::Handshake) || has(Level::OneRtt),
            Level::Handshake => has(Level::OneRtt),
            Level::OneRtt => false,
        }
    }

    fn level_has_data(&self, level: Level) -> bool {
        if level == Level::ZeroRtt {
            return self.streams.has_pending_data();
        }
        let i = level_index(level);
        if i < 2 {
            let sp = &self.hs[i];
            // Only ack-eliciting packets call for an ACK here: answering an
            // ACK-only packet with one would ping-pong (RFC 9000 §13.2.1).
            return !sp.discarded
                && (sp.acks.ack_deadline().is_some() || self.levels.send[i].has_pending() || sp.probes > 0);
        }
        self.paths[0].acks.has_new()
            || self.streams.has_pending_data()
            || self.dgram_pending()
            || self.handshake_done_pending
            || self.levels.send[2].has_pending()
    }

    /// Write one packet at `level`; `(len, ack_eliciting)`, or `None` if
    /// there was nothing to send at this level.
    fn write_packet(
        &mut self,
        level: Level,
        pi: usize,
        buf: &mut [u8],
        pad_to: Option<usize>,
        job: &mut Job,
        now: Instant,
    ) -> Result<Option<(usize, bool)>, Error> {
        let room = buf.len().min(self.paths[pi].mss());
        let Some(due) = self.packet_due(level, pi, room, job, now) else { return Ok(None) };
        let mut b = PacketBuilder::new(buf, &self.header(level, pi, due.pn, due.pn_len))?;
        if b.payload_end() < b.header_len() + 8 {
            return Ok(None);
        }
        let mut frames = SentFrames::new();
        // ACK first: it is never congestion controlled. Our ACK's timer is
        // reset only if the packet is really sent.
        // (0-RTT packets carry no ACK: the client has nothing of the
        // application space to acknowledge yet, RFC 9000 §17.2.3.)
        let ack_written = level != Level::ZeroRtt
            && (due.ack || due.data_ready())
            && self.write_acks(level, pi, due.ack, &mut b, &mut frames, now);
        // Packets with PATH_CHALLENGE / PATH_RESPONSE on a new path are
        // padded to 1200 bytes to check the path MTU (RFC 9000 §8.2.1).
        let probing = level == Level::OneRtt && self.write_path_validation(pi, &mut b, &mut frames, now);
        let mut ack_eliciting = probing;
        // A handshake probe whose CRYPTO data already went in the first
        // probe datagram repeats it rather than sending a bare PING (RFC
        // 9002 §6.2.4): a server held by the amplification limit pays for
        // no padding-only datagram, and one lost datagram costs no PTO.
        if due.probes > 0 && matches!(level, Level::Initial | Level::Handshake) {
            let send = &mut self.levels.send[level_index(level)];
            if !send.has_pending() {
                send.requeue_all();
            }
        }
        if due.may_send_data {
            if level != Level::ZeroRtt {
                ack_eliciting |= self.write_crypto(level, &mut b, &mut frames);
            }
            if matches!(level, Level::ZeroRtt | Level::OneRtt) {
                let end = b.payload_end();
                ack_eliciting |= self.write_data_frames(b.w(), end, pi, &mut frames, job, now);
            }
        }
        // A probe must be ack-eliciting.
        if due.probes > 0
            && !ack_eliciting
            && b.w().pos() < b.payload_end()
            && Frame::Ping.encode(b.w()).is_ok()
        {
            frames.push(SentFrame::Ping);
            ack_eliciting = true;
        }
        // Nothing went in but an ACK that was not due (the data or control
        // frames expected did not materialise): sending it would only repeat
        // the last ACK, and a caller looping on `send` would never stop.
        let idle_app =
            matches!(level, Level::ZeroRtt | Level::OneRtt) && !ack_eliciting && !due.ack && due.probes == 0;
        if b.is_empty() || idle_app {
            return Ok(None);
        }
        if let Some(sp) = self.space_mut(level, pi) {
            if ack_written {
                sp.acks.on_ack_sent();
            }
            if due.probes > 0 && ack_eliciting {
                *sp.probes -= 1;
            }
        }
        // Initial datagrams need 1200 bytes; so do path probes.
        let mut min_plain = pad_to.map_or(0, |p| p.saturating_sub(TAG_LEN));
        if probing && self.multipath {
            min_plain = min_plain.max(MIN_INITIAL_SIZE - TAG_LEN);
        }
        if let Some(q) = &mut self.qlog {
            let id = self.paths[pi].id;
            q.cid_in_use(now, id, true, &self.cids.dcid_for(id).unwrap_or(ConnectionId::EMPTY));
            q.packet_sent(now, level, id, due.pn, b.plain(min_plain));
        }
        let (keys, nonce_path) = self.seal_keys(level, pi)?;
        let pkt_len = b.finish(min_plain, keys, nonce_path)?;
        let in_flight = ack_eliciting || pad_to.is_some();
        if self.multipath {
            job.stream_bytes += super::sent::stream_bytes(&frames);
        }
        let mut pkt = SentPacket::new(due.pn, now, pkt_len, ack_eliciting, in_flight, frames);
        pkt.ect = level == Level::OneRtt && self.paths[pi].ecn.marks();
        self.on_packet_built(level, pi, pkt);
        Ok(Some((pkt_len, ack_eliciting)))
    }

    /// What a packet at `level` on path `pi` is due to carry now (`None`:
    /// nothing), with room for `room` bytes.
    #[inline]
    fn packet_due(&mut self, level: Level, pi: usize, room: usize, job: &Job, now: Instant) -> Option<Due> {
        let has_data = self.level_wants_to_send(level, pi, job);
        // Path rules apply to 1-RTT packets: PATH_ACKs of other paths that
        // are due (or can only leave on another path, theirs abandoned),
        // delayed ACKs, the congestion window (only ACK-only packets and
        // probes may exceed it), and no data before the path is validated
        // (draft-21 §3.1). Handshake ACKs are sent at once.
        let one_rtt = level == Level::OneRtt;
        // 0-RTT data follows the application space's rules too.
        let app = one_rtt || level == Level::ZeroRtt;
        let other_acks = one_rtt && self.multipath && self.paths.len() > 1 && self.other_acks_due(pi, now);
        let p = &self.paths[pi];
        let cwnd_room = p.recovery.cwnd().saturating_sub(p.recovery.bytes_in_flight());
        let challenge = one_rtt && (p.challenge_pending || !p.responses.is_empty());
        let validated = p.validated;
        let sp = self.space_mut(level, pi)?;
        let probes = *sp.probes;
        let deadline = sp.acks.ack_deadline();
        // Handshake levels acknowledge at once, but not ACK-only packets alone.
        let ack_now = has_data
            || if one_rtt { deadline.is_some_and(|d| d <= now) } else { probes > 0 || deadline.is_some() };
        let may_send_data = !app || ((probes > 0 || cwnd_room >= room) && validated);
        let due = Due {
            pn: *sp.next_pn,
            pn_len: packet::pn_len_for(*sp.next_pn, sp.sent.largest_acked()),
            ack: level != Level::ZeroRtt && (other_acks || (sp.acks.has_new() && ack_now)),
            has_data,
            may_send_data,
            probes,
        };
        // Nothing due: no ACK, no probe, no path validation, and no data
        // (or data blocked by the congestion window).
        (due.ack || due.data_ready() || probes > 0 || challenge).then_some(due)
    }

    /// The header of a packet at `level` on path `pi`.
    #[inline]
    pub(super) fn header(&self, level: Level, pi: usize, pn: u64, pn_len: usize) -> Header<'_> {
        Header {
            level,
            version: self.version,
            dcid: self.cids.dcid_for(self.paths[pi].id).unwrap_or(ConnectionId::EMPTY),
            scid: self.cids.initial_scid(),
            token: if level == Level::Initial && !self.is_server { &self.token } else { &[] },
            pn,
            pn_len,
            key_phase: self.levels.ku.phase,
        }
    }

    /// The keys that seal packets at `level`, and the path ID in their nonce
    /// (draft-21 §2.4: 0 without multipath).
    #[inline]
    pub(super) fn seal_keys(&self, level: Level, pi: usize) -> Result<(&crate::crypto::Keys, u32), Error> {
        let nonce_path = if self.multipath { self.paths[pi].id.0 } else { 0 };
        Ok((self.levels.local(level).ok_or(Error::Closed)?, nonce_path))
    }

    /// Our ACK (PATH_ACK with multipath) of the space, then other paths'
    /// due PATH_ACKs in 1-RTT. Returns whether our own was written.
    ///
    /// Our own goes in when `due` or when packets arrived since the last
    /// one: a data sender whose peer sends only ACKs would otherwise repeat
    /// the same ACK frame in every packet (bytes of payload lost, and the
    /// peer decoding and processing it each time; quiche acknowledges only
    /// ack-eliciting packets). Each ACK-only packet is still acknowledged
    /// once, so the peer can prune what it acknowledges.
    #[inline]
    fn write_acks(
        &mut self,
        level: Level,
        pi: usize,
        due: bool,
        b: &mut PacketBuilder<'_>,
        frames: &mut SentFrames,
        now: Instant,
    ) -> bool {
        let mp = level == Level::OneRtt && self.multipath;
        let path_id = mp.then(|| self.paths[pi].id.0 as u64);
        let own = self
            .space_mut(level, pi)
            .is_some_and(|sp| !sp.acks.ranges().is_empty() && (due || sp.acks.has_new()));
        let others = mp && self.paths.len() > 1;
        if !own && !others {
            return false;
        }
        if mp && self.ts.send {
            // Before the ACKs it dates (the peer reads frames in order),
            // and only with room left for an ACK frame after it.
            let f = Frame::Timestamp(self.ts.field(now, self.local_params.ack_delay_exponent));
            if f.encoded_len() + 32 <= b.payload_end() - b.w().pos() {
                let _ = f.encode(b.w());
            }
        }
        let room = b.payload_end() - b.w().pos();
        let mut written = false;
        if let Some(sp) = self.space_mut(level, pi).filter(|_| own) {
            let delay = sp.acks.ack_delay_field(now);
            let ecn = sp.acks.ecn_frame_counts();
            if frame::encode_ack_max(b.w(), path_id, sp.acks.ranges(), delay, ecn.as_ref(), room).is_ok() {
                if let Some(largest) = sp.acks.ranges().max() {
                    frames.push(SentFrame::Ack { largest });
                }
                written = true;
            }
        }
        if others {
            let end = b.payload_end();
            self.write_other_acks(b.w(), end, pi, frames, now);
        }
        written
    }

    /// PATH_RESPONSEs owed and a PATH_CHALLENGE due on path `pi`. Returns
    /// whether any was written.
    #[inline]
    fn write_path_validation(
        &mut self,
        pi: usize,
        b: &mut PacketBuilder<'_>,
        frames: &mut SentFrames,
        now: Instant,
    ) -> bool {
        // Only a due challenge needs the PTOs (not worth a scan per packet).
        let (path_pto_floor, challenge_wait) = if self.paths[pi].challenge_pending {
            (self.max_pto(), self.challenge_interval(pi))
        } else {
            (Duration::ZERO, Duration::ZERO)
        };
        let p = &mut self.paths[pi];
        let mut written = false;
        while let Some(r) = p.responses.pop() {
            if Frame::PathResponse(r).encode(b.w()).is_err() {
                p.responses.push(r);
                break;
            }
            written = true;
        }
        if p.challenge_pending {
            // Fresh data every time (RFC 9000 §8.2.1).
            let data = crate::path::Challenges::fresh();
            if Frame::PathChallenge(data).encode(b.w()).is_ok() {
                let pto = p.recovery.rtt().pto_base();
                p.challenges.on_sent(data);
                p.challenge_retry = Some(now + challenge_wait);
                if p.challenge_deadline.is_none() {
                    // RFC 9000 §8.2.4: three times the larger PTO.
                    p.challenge_deadline = Some(now + pto.max(path_pto_floor) * 3);
                }
                p.challenge_pending = false;
                written = true;
                frames.push(SentFrame::Ping);
            }
        }
        written
    }

    /// CRYPTO data of `level` (retransmissions first). Returns whether any
    /// was written.
    #[inline]
    fn write_crypto(&mut self, level: Level, b: &mut PacketBuilder<'_>, frames: &mut SentFrames) -> bool {
        let send = &mut self.levels.send[level_index(level)];
        let mut written = false;
        loop {
            let room = b.payload_end().saturating_sub(b.w().pos());
            let Some((off, _)) = send.next(usize::MAX) else { break };
            let max = frame::crypto_max_data_len(room, off);
            if max == 0 {
                break;
            }
            let Some((off, data)) = send.next(max) else { break };
            let len = data.len();
            if frame::encode_crypto_header(b.w(), off, len).is_err() || b.w().bytes(data).is_err() {
                break;
            }
            send.on_sent(off, len);
            frames.push(SentFrame::Crypto { level, offset: off, len: len as u32 });
            written = true;
        }
        written
    }

    /// Record a packet just built: in its space (and the path's recovery),
    /// for key updates, and the client's Initial keys go once it sends a
    /// Handshake packet (RFC 9001 §4.9.1).
    #[inline]
    pub(super) fn on_packet_built(&mut self, level: Level, pi: usize, pkt: SentPacket<SentFrames>) {
        let pn = pkt.pn;
        if level == Level::OneRtt {
            let own = self.paths[pi].id;
            for f in &pkt.data {
                match *f {
                    SentFrame::Ack { largest } => self.levels.ku.on_ack_sent(own, largest),
                    SentFrame::PathAck { path, largest } => self.levels.ku.on_ack_sent(path, largest),
                    _ => {}
                }
            }
            self.levels.ku.on_sent(own, pn);
            self.paths[pi].st.sent += 1;
            self.paths[pi].ecn.on_sent(pkt.ect);
            self.paths[pi].pmtud.on_sent(pn);
        }
        if let Some(sp) = self.space_mut(level, pi) {
            sp.sent.on_packet_sent(sp.recovery, pkt);
            *sp.next_pn += 1;
        }
        if !self.is_server && level == Level::Handshake {
            self.drop_level(Level::Initial);
        }
    }

    fn level_wants_to_send(&self, level: Level, pi: usize, job: &Job) -> bool {
        if level == Level::ZeroRtt {
            return self.streams.has_sendable_data() || self.streams.has_pending_control();
        }
        let li = level_index(level);
        if self.levels.send[li].has_pending() {
            return true;
        }
        li == 2
            && (match job.mode {
                DataMode::Normal { .. } | DataMode::Ahead { .. } => {
                    self.streams.has_sendable_data() || self.dgram_pending()
                }
                DataMode::NoStream => false,
                // Only if something is left to copy: otherwise the packet
                // would repeat an ACK and never end the send loop.
                DataMode::Copy => self.copy_left(&job.ranges),
                DataMode::Redundant => self.streams.unacked_chunk(job.cursor, 1).is_some(),
            } || self.streams.has_pending_control()
                || self.handshake_done_pending
                || (self.is_server && self.handshake_confirmed && !self.new_tokens.is_empty())
                || !self.cids.retire_pending.is_empty()
                || self.cids.local.iter().any(|c| c.announce_pending)
                || self.paths[pi].challenge_pending
                || !self.paths[pi].responses.is_empty()
                || self.mp_frames_pending()
                || (self.send_dsr && self.paths.iter().any(|p| p.dsr_pending.is_some()))
                || self.test_frames_pending(pi))
    }

    /// Whether any of `ranges` is still unacknowledged (a copy has
    /// something to carry).
    pub(super) fn copy_left(&self, ranges: &CopyFrames) -> bool {
        ranges.iter().any(|&(id, off, len, _)| {
            let sid = crate::stream::StreamId(id);
            self.streams
                .unacked_chunk((sid, off), len as usize)
                .is_some_and(|(c, k)| c == sid && k.offset < off + len as u64)
        })
    }

    /// 1-RTT frames other than ACK and CRYPTO. Returns whether any
    /// ack-eliciting frame was written.
    fn write_data_frames(
        &mut self,
        w: &mut Writer<'_>,
        end: usize,
        pi: usize,
        frames: &mut SentFrames,
        job: &mut Job,
        now: Instant,
    ) -> bool {
        let control = self.write_control_frames(w, end, pi, frames, now);
        // Datagrams go where new data goes (see `dgram`), in 1-RTT packets
        // only (0-RTT packets are written while 1-RTT keys are missing).
        let dgrams = matches!(job.mode, DataMode::Normal { .. } | DataMode::Ahead { .. })
            && self.dgram_pending()
            && self.levels.has_send_keys(Level::OneRtt)
            && self.write_dgrams(w, end, pi);
        let data = match job.mode {
            DataMode::Normal { collect } => {
                self.write_stream_frames(w, end, pi, frames, collect.then_some(&mut job.ranges))
            }
            DataMode::Ahead { skip, max_len } => match self.write_ahead(w, end, pi, frames, skip, max_len) {
                Some(e) => e,
                None => self.write_stream_frames(w, end, pi, frames, None),
            },
            DataMode::NoStream => false,
            DataMode::Copy => self.write_copies(w, end, pi, frames, &job.ranges),
            DataMode::Redundant => self.write_redundant(w, end, pi, frames, &mut job.cursor),
        };
        control || dgrams || data
    }

    /// HANDSHAKE_DONE, NEW_TOKEN, connection IDs, multipath frames,
    /// PATH_DSR, flow control and stream state. Returns whether any was
    /// written.
    fn write_control_frames(
        &mut self,
        w: &mut Writer<'_>,
        end: usize,
        pi: usize,
        frames: &mut SentFrames,
        now: Instant,
    ) -> bool {
        let mut eliciting = false;
        if self.handshake_done_pending
            && self.is_server
            && w.pos() < end
            && Frame::HandshakeDone.encode(w).is_ok()
        {
            self.handshake_done_pending = false;
            frames.push(SentFrame::HandshakeDone);
            eliciting = true;
        }
        // Tokens wait until the handshake is confirmed (1-RTT only).
        while self.is_server && self.handshake_confirmed {
            let Some(t) = self.new_tokens.front() else { break };
            let f = Frame::NewToken { token: t };
            if f.encoded_len() > end.saturating_sub(w.pos()) || f.encode(w).is_err() {
                break;
            }
            self.new_tokens.pop_front();
            frames.push(SentFrame::NewToken);
            eliciting = true;
        }
        // Connection IDs.
        let multipath = self.multipath;
        for c in self.cids.local.iter_mut().filter(|c| c.announce_pending) {
            let f = Frame::NewConnectionId {
                path_id: if multipath && c.path != PathId::ZERO { Some(c.path.0 as u64) } else { None },
                seq: c.seq,
                retire_prior_to: 0,
                cid: c.cid,
                reset_token: c.reset_token,
            };
            if f.encoded_len() > end.saturating_sub(w.pos()) || f.encode(w).is_err() {
                break;
            }
            c.announce_pending = false;
            frames.push(SentFrame::NewCid { path: c.path, seq: c.seq });
            eliciting = true;
        }
        while let Some((path, seq)) = self.cids.retire_pending.pop() {
            let f = Frame::RetireConnectionId {
                path_id: if multipath && path != PathId::ZERO { Some(path.0 as u64) } else { None },
                seq,
            };
            if f.encoded_len() > end.saturating_sub(w.pos()) || f.encode(w).is_err() {
                self.cids.retire_pending.push((path, seq));
                break;
            }
            frames.push(SentFrame::RetireCid { path, seq });
            eliciting = true;
        }
        if self.multipath && self.mp_frames_pending() {
            eliciting |= self.write_mp_frames(w, end, frames);
        }
        if self.send_dsr {
            for p in self.paths.iter_mut() {
                let Some(dsr) = p.dsr_pending else { continue };
                let f = Frame::PathDsr { path_id: u64::from(p.id.0), dsr };
                if f.encoded_len() > end.saturating_sub(w.pos()) || f.encode(w).is_err() {
                    break;
                }
                // Not repeated if lost: the next round brings a fresh value.
                p.dsr_pending = None;
                frames.push(SentFrame::Ping);
                eliciting = true;
            }
        }
        #[cfg(any(test, feature = "fuzzing"))]
        while self.test_path.is_none_or(|id| id == self.paths[pi].id) {
            let Some(f) = self.test_frames.pop() else { break };
            if w.bytes(&f).is_ok() {
                eliciting = true;
                frames.push(SentFrame::Ping);
            }
        }
        // Flow control and stream state.
        let rtt = self.paths[pi].recovery.rtt().smoothed();
        while let Some(c) = self.streams.next_control(now, rtt) {
            let f = control_frame(&c);
            if f.encoded_len() > end.saturating_sub(w.pos()) || f.encode(w).is_err() {
                self.streams.on_control_lost(c);
                break;
            }
            frames.push(SentFrame::Control(c));
            eliciting = true;
        }
        eliciting
    }

    /// Stream data, retransmissions first, then new data round-robin across
    /// streams. With `collect`, the ranges are kept for redundant copies.
    fn write_stream_frames(
        &mut self,
        w: &mut Writer<'_>,
        end: usize,
        pi: usize,
        frames: &mut SentFrames,
        mut collect: Option<&mut CopyFrames>,
    ) -> bool {
        let mut eliciting = false;
        loop {
            let room = end.saturating_sub(w.pos());
            if room < 24 {
                break;
            }
            let Some((sid, offset)) = self.streams.next_to_send() else { break };
            let max = frame::stream_max_data_len(room, sid.0, offset);
            let Some(chunk) = self.streams.send_chunk(sid, max) else { break };
            if !self.write_stream_chunk(w, pi, frames, sid, chunk) {
                break;
            }
            if let Some(c) = collect.as_deref_mut() {
                c.push((sid.0, chunk.offset, chunk.len as u32, chunk.fin));
            }
            eliciting = true;
        }
        eliciting
    }

    /// One STREAM frame of new data `skip` bytes into what waits to be sent
    /// (`Decision::SendAhead`). `None` when that data is not there (lost data
    /// waits, or less than `skip` bytes): the caller sends normally.
    fn write_ahead(
        &mut self,
        w: &mut Writer<'_>,
        end: usize,
        pi: usize,
        frames: &mut SentFrames,
        skip: u64,
        max_len: u64,
    ) -> Option<bool> {
        let room = end.saturating_sub(w.pos());
        if room < 24 {
            return Some(false);
        }
        let (sid, offset) = self.streams.next_to_send_ahead(skip)?;
        let max =
            frame::stream_max_data_len(room, sid.0, offset).min(max_len.try_into().unwrap_or(usize::MAX));
        if max == 0 {
            return Some(false);
        }
        let chunk = self.streams.send_chunk_at(sid, max, skip)?;
        if skip > 0 {
            self.stats.sent_ahead_bytes += chunk.len as u64;
        }
        Some(self.write_stream_chunk(w, pi, frames, sid, chunk))
    }

    /// Encode a chunk taken from the streams; on failure it is put back as
    /// lost.
    fn write_stream_chunk(
        &mut self,
        w: &mut Writer<'_>,
        pi: usize,
        frames: &mut SentFrames,
        sid: crate::stream::StreamId,
        chunk: crate::stream::Chunk,
    ) -> bool {
        let id = sid.0;
        if frame::encode_stream_header(w, id, chunk.offset, chunk.len, chunk.fin, true).is_err() {
            self.streams.on_stream_lost(sid, chunk.offset, chunk.len, chunk.fin);
            return false;
        }
        let Ok(dst) = w.reserve(chunk.len) else {
            self.streams.on_stream_lost(sid, chunk.offset, chunk.len, chunk.fin);
            return false;
        };
        self.streams.copy_data(sid, chunk.offset, dst);
        // Retransmitted bytes are counted when their loss is declared.
        if !chunk.is_retransmit {
            self.paths[pi].st.stream_bytes += chunk.len as u64;
        }
        frames.push(SentFrame::Stream { id, offset: chunk.offset, len: chunk.len as u32, fin: chunk.fin });
        true
    }

    /// A copy of `ranges` (those still unacknowledged;
    /// cut to the room left when this path's header is longer).
    fn write_copies(
        &mut self,
        w: &mut Writer<'_>,
        end: usize,
        pi: usize,
        frames: &mut SentFrames,
        ranges: &CopyFrames,
    ) -> bool {
        let mut eliciting = false;
        for &(id, offset, len, fin) in ranges {
            let sid = crate::stream::StreamId(id);
            let room = end.saturating_sub(w.pos());
            if room < 24 {
                break;
            }
            let max = frame::stream_max_data_len(room, id, offset);
            let range_end = offset + len as u64;
            // What of the range is still unacknowledged (none: skip it).
            let Some((cid, c)) = self.streams.unacked_chunk((sid, offset), len as usize) else { continue };
            if cid != sid || c.offset >= range_end {
                continue;
            }
            let n = c.len.min(max).min((range_end - c.offset) as usize);
            let fin = fin && c.offset + n as u64 == range_end;
            eliciting |= self.write_copy(w, pi, frames, sid, c.offset, n, fin);
        }
        eliciting
    }

    /// Copies of the oldest data still unacknowledged, from the copy cursor.
    fn write_redundant(
        &mut self,
        w: &mut Writer<'_>,
        end: usize,
        pi: usize,
        frames: &mut SentFrames,
        cursor: &mut (crate::stream::StreamId, u64),
    ) -> bool {
        let mut eliciting = false;
        loop {
            let room = end.saturating_sub(w.pos());
            if room < 24 {
                break;
            }
            // Sized for the longest header, as the chunk's stream is not known yet.
            let max = frame::stream_max_data_len(room, 1 << 40, 1 << 40);
            let Some((sid, c)) = self.streams.unacked_chunk(*cursor, max) else { break };
            *cursor = (sid, c.offset + c.len as u64);
            if !self.write_copy(w, pi, frames, sid, c.offset, c.len, c.fin) {
                break;
            }
            eliciting = true;
        }
        eliciting
    }

    #[allow(clippy::too_many_arguments)]
    fn write_copy(
        &mut self,
        w: &mut Writer<'_>,
        pi: usize,
        frames: &mut SentFrames,
        sid: crate::stream::StreamId,
        offset: u64,
        len: usize,
        fin: bool,
    ) -> bool {
        if len == 0 && !fin {
            return false;
        }
        if frame::encode_stream_header(w, sid.0, offset, len, fin, true).is_err() {
            return false;
        }
        let Ok(dst) = w.reserve(len) else { return false };
        self.streams.copy_data(sid, offset, dst);
        self.paths[pi].st.redundant_bytes += len as u64;
        frames.push(SentFrame::StreamCopy { id: sid.0, offset, len: len as u32, fin });
        true
    }

    /// A packet carrying only CONNECTION_CLOSE.
    fn send_close(
        &mut self,
        out: &mut [u8],
        pi: usize,
        now: Instant,
    ) -> Result<Option<(usize, SendInfo)>, Error> {
        self.close_pending = false;
        let Some(info) = self.local_close.clone() else { return Ok(None) };
        let level = [Level::OneRtt, Level::Handshake, Level::Initial]
            .into_iter()
            .find(|&l| self.levels.has_send_keys(l) && self.space_mut(l, pi).is_some())
            .ok_or(Error::Closed)?;
        // An application close is only sent in 1-RTT.
        let one_rtt = level == Level::OneRtt;
        let (is_app, code) = if info.is_app && !one_rtt { (false, 0x0c) } else { (info.is_app, info.code) };
        let reason = &info.reason[..info.reason.len().min(64)];
        let f = Frame::ConnectionClose {
            error_code: code,
            frame_type: if is_app { None } else { Some(info.frame_type.unwrap_or(0)) },
            reason,
        };
        let pn = self.space_mut(level, pi).map(|sp| *sp.next_pn).ok_or(Error::Closed)?;
        let mut b = PacketBuilder::new(out, &self.header(level, pi, pn, 4))?;
        f.encode(b.w()).map_err(|_| Error::BufferTooShort)?;
        // A client's Initial datagrams are 1200 bytes, closing ones too (§14.1).
        let min_plain =
            if level == Level::Initial && !self.is_server { MIN_INITIAL_SIZE - TAG_LEN } else { 0 };
        if let Some(q) = &mut self.qlog {
            q.packet_sent(now, level, self.paths[pi].id, pn, b.plain(min_plain));
        }
        let (keys, nonce_path) = self.seal_keys(level, pi)?;
        let pkt_len = b.finish(min_plain, keys, nonce_path)?;
        if let Some(sp) = self.space_mut(level, pi) {
            *sp.next_pn += 1;
        }
        let p = &self.paths[pi];
        Ok(Some((
            pkt_len,
            SendInfo { from: p.local, to: p.peer, path_id: p.id, at: now, ecn: crate::Ecn::NotEct },
        )))
    }

    #[cfg(any(test, feature = "fuzzing"))]
    fn test_frames_pending(&self, pi: usize) -> bool {
        !self.test_frames.is_empty() && self.test_path.is_none_or(|id| id == self.paths[pi].id)
    }
    #[cfg(not(any(test, feature = "fuzzing")))]
    #[inline(always)]
    fn test_frames_pending(&self, _pi: usize) -> bool {
        false
    }

    /// Fuzzing: put `frames` (encoded frames, not checked) in the next 1-RTT
    /// packet, on path `path` if given; they count as a PING for recovery.
    #[cfg(feature = "fuzzing")]
    #[doc(hidden)]
    pub fn fuzz_inject_frames(&mut self, path: Option<crate::PathId>, frames: Vec<u8>) {
        self.test_path = path;
        self.test_frames.insert(0, frames);
    }

    /// Another path has PATH_ACKs due that this packet should carry.
    fn other_acks_due(&self, pi: usize, now: Instant) -> bool {
        let carrier = self.carries_others_acks(pi, now);
        self.paths.iter().enumerate().any(|(j, p)| {
            j != pi && p.acks.has_new() && !p.acks.ranges().is_empty() && self.other_ack_due(p, carrier, now)
        })
    }

    /// Path `pi` heard from the peer within its PTO. One that has not may be
    /// dead: it must not take other paths' acknowledgements down with it,
    /// which stalled a transfer whose first path died (those paths then
    /// send their own).
    fn carries_others_acks(&self, pi: usize, now: Instant) -> bool {
        let p = &self.paths[pi];
        let pto = p.recovery.pto_period(crate::recovery::SpaceKind::Data);
        p.last_recv.is_some_and(|r| now.saturating_duration_since(r) < pto)
    }

    /// Whether path `p`'s PATH_ACKs go on another path now: always when `p`
    /// cannot carry them itself, otherwise when due and the carrier is live.
    fn other_ack_due(&self, p: &crate::path::Path, carrier: bool, now: Instant) -> bool {
        p.abandoned || !p.usable() || (carrier && p.acks.ack_deadline().is_some_and(|d| d <= now))
    }

    /// PATH_ACK frames for other paths' packet-number spaces: those due, and
    /// all of those of abandoned paths (draft-21 §3.4.3).
    fn write_other_acks(
        &mut self,
        w: &mut Writer<'_>,
        end: usize,
        pi: usize,
        frames: &mut SentFrames,
        now: Instant,
    ) {
        let carrier = self.carries_others_acks(pi, now);
        for j in 0..self.paths.len() {
            if j == pi {
                continue;
            }
            let due = self.other_ack_due(&self.paths[j], carrier, now);
            let p = &mut self.paths[j];
            if !p.acks.has_new() || !due || p.acks.ranges().is_empty() {
                continue;
            }
            let room = end.saturating_sub(w.pos());
            if room < 16 {
                break;
            }
            let delay = p.acks.ack_delay_field(now);
            let ecn = p.acks.ecn_frame_counts();
            if frame::encode_ack_max(w, Some(p.id.0 as u64), p.acks.ranges(), delay, ecn.as_ref(), room)
                .is_ok()
            {
                if let Some(largest) = p.acks.ranges().max() {
                    frames.push(SentFrame::PathAck { path: p.id, largest });
                }
                p.acks.on_ack_sent();
            }
        }
    }

    /// MAX_PATH_ID, PATH_ABANDON, PATH_STATUS_*, PATHS_BLOCKED and
    /// PATH_CIDS_BLOCKED frames. Returns whether any was written.
    fn write_mp_frames(&mut self, w: &mut Writer<'_>, end: usize, frames: &mut SentFrames) -> bool {
        let mut eliciting = false;
        let fits = |f: &Frame<'_>, w: &Writer<'_>| f.encoded_len() <= end.saturating_sub(w.pos());
        while let Some(&(path, code)) = self.mp.abandon_pending.last() {
            let f = Frame::PathAbandon { path_id: path.0 as u64, error_code: code };
            if !fits(&f, w) || f.encode(w).is_err() {
                break;
            }
            self.mp.abandon_pending.pop();
            frames.push(SentFrame::PathAbandon { path, code });
            eliciting = true;
        }
        if self.mp.max_path_id_pending {
            let f = Frame::MaxPathId(self.mp.local_max as u64);
            if fits(&f, w) && f.encode(w).is_ok() {
                self.mp.max_path_id_pending = false;
                frames.push(SentFrame::MaxPathId(self.mp.local_max));
                eliciting = true;
            }
        }
        for p in self.paths.iter_mut().filter(|p| p.status_pending && !p.abandoned) {
            let (path_id, seq) = (p.id.0 as u64, p.status_seq);
            let f = if p.status == crate::sched::PathStatus::Backup {
                Frame::PathStatusBackup { path_id, seq }
            } else {
                Frame::PathStatusAvailable { path_id, seq }
            };
            if !fits(&f, w) || f.encode(w).is_err() {
                break;
            }
            p.status_pending = false;
            frames.push(SentFrame::PathStatus { path: p.id, seq });
            eliciting = true;
        }
        if self.mp.paths_blocked_pending {
            let f = Frame::PathsBlocked(self.mp.peer_max as u64);
            if fits(&f, w) && f.encode(w).is_ok() {
                self.mp.paths_blocked_pending = false;
                frames.push(SentFrame::Blocked);
                eliciting = true;
            }
        }
        if let Some((path, seq)) = self.mp.cids_blocked_pending {
            let f = Frame::PathCidsBlocked { path_id: path.0 as u64, next_seq: seq };
            if fits(&f, w) && f.encode(w).is_ok() {
                self.mp.cids_blocked_pending = None;
                frames.push(SentFrame::Blocked);
                eliciting = true;
            }
        }
        eliciting
    }

    /// Every path's view for the controllers, in the reused scratch vector
    /// (give it back with `self.scratch_views = views`).
    pub(super) fn path_views(&mut self) -> Vec<crate::cc::PathView> {
        let mut v = std::mem::take(&mut self.scratch_views);
        v.clear();
        v.extend(
            self.paths
                .iter()
                .map(|p| crate::cc::PathView { group: self.sbd.group(p.id), ..p.recovery.view(p.usable()) }),
        );
        v
    }
}

fn control_frame(c: &ControlFrame) -> Frame<'static> {
    match *c {
        ControlFrame::MaxData(v) => Frame::MaxData(v),
        ControlFrame::MaxStreamData { id, max } => Frame::MaxStreamData { stream_id: id.0, max },
        ControlFrame::MaxStreams { bidi, max } => Frame::MaxStreams { bidi, max },
        ControlFrame::DataBlocked(v) => Frame::DataBlocked(v),
        ControlFrame::StreamDataBlocked { id, limit } => Frame::StreamDataBlocked { stream_id: id.0, limit },
        ControlFrame::StreamsBlocked { bidi, limit } => Frame::StreamsBlocked { bidi, limit },
        ControlFrame::ResetStream { id, code, final_size } => {
            Frame::ResetStream { stream_id: id.0, error_code: code, final_size }
        }
        ControlFrame::StopSending { id, code } => Frame::StopSending { stream_id: id.0, error_code: code },
    }
}
