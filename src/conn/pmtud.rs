//! Path MTU discovery's part in sending and in acknowledgement and loss
//! processing; the search itself is [`crate::path::pmtud`].

use std::time::Instant;

use crate::crypto::Level;
use crate::frame::Frame;
use crate::packet;
use crate::recovery::SentPacket;
use crate::Ecn;

use super::builder::{PacketBuilder, TAG_LEN};
use super::sent::{SentFrame, SentFrames};
use super::{Connection, Error};

impl Connection {
    /// The size of a path MTU probe to send on path `pi` now, if one is due
    /// and fits in `room` bytes and the window. The search probes only
    /// while stream data waits: it serves transfers, and an idle connection
    /// stays silent. After a fallback the size that worked goes out at
    /// once, as one of the PTO's probes if owed (beyond the window, as they
    /// may), data waiting or not: a peer that stalled for two PTOs at the
    /// end of a transfer would otherwise leave the path at 1200 bytes.
    pub(super) fn pmtu_probe_due(&mut self, pi: usize, room: usize, now: Instant) -> Option<usize> {
        if !self.handshake_confirmed {
            return None;
        }
        let p = &self.paths[pi];
        if !p.pmtud.is_enabled() || !p.usable() || p.suspect.is_some() || p.moved_from.is_some() {
            return None;
        }
        if let Some(size) = p.pmtud.retry_due() {
            return (size <= room && (p.probes > 0 || p.recovery.can_send(size))).then_some(size);
        }
        // Asked last: it walks the send queue, on every packet of a transfer.
        if p.probes > 0 || !self.streams.has_sendable_data() {
            return None;
        }
        let p = &mut self.paths[pi];
        let size = p.pmtud.probe_size(now)?;
        (size <= room && p.recovery.can_send(size)).then_some(size)
    }

    /// A path MTU probe filling `out`: PING and PADDING, alone in its
    /// datagram (RFC 9000 §14.4). Returns its length and ECN codepoint.
    pub(super) fn write_pmtu_probe(
        &mut self,
        out: &mut [u8],
        pi: usize,
        now: Instant,
    ) -> Result<(usize, Ecn), Error> {
        let size = out.len();
        let p = &self.paths[pi];
        let pn = p.next_pn;
        let pn_len = packet::pn_len_for(pn, p.space.largest_acked());
        let mut b = PacketBuilder::new(out, &self.header(Level::OneRtt, pi, pn, pn_len))?;
        Frame::Ping.encode(b.w()).map_err(|_| Error::BufferTooShort)?;
        if let Some(q) = &mut self.qlog {
            let plain = crate::qlog::Plain { mtu_probe: true, ..b.plain(size - TAG_LEN) };
            q.packet_sent(now, Level::OneRtt, self.paths[pi].id, pn, plain);
        }
        let (keys, nonce_path) = self.seal_keys(Level::OneRtt, pi)?;
        let len = b.finish(size - TAG_LEN, keys, nonce_path)?;
        let mut frames = SentFrames::new();
        frames.push(SentFrame::Ping);
        let mut pkt = SentPacket::new(pn, now, len, true, true, frames);
        pkt.ect = self.paths[pi].ecn.marks();
        pkt.probe = true;
        let ecn = if pkt.ect { Ecn::Ect0 } else { Ecn::NotEct };
        let p = &mut self.paths[pi];
        p.pmtud.on_probe_sent(pn, len);
        p.probes = p.probes.saturating_sub(1);
        self.on_packet_built(Level::OneRtt, pi, pkt);
        Ok((len, ecn))
    }

    /// Path `pi`'s packets that one ACK acknowledged and declared lost.
    pub(super) fn pmtud_on_ack(
        &mut self,
        pi: usize,
        acked: &[SentPacket<SentFrames>],
        lost: &[SentPacket<SentFrames>],
    ) {
        let d = &mut self.paths[pi].pmtud;
        for pkt in acked {
            d.on_acked(pkt.pn, pkt.size);
        }
        self.pmtud_on_lost(pi, lost);
        self.qlog_mtu(pi);
    }

    /// Path `pi`'s packets declared lost at once (by one ACK or the loss timer).
    pub(super) fn pmtud_on_lost(&mut self, pi: usize, lost: &[SentPacket<SentFrames>]) {
        // Before confirmation the handshake spaces' packets mix in.
        if lost.is_empty() || !self.handshake_confirmed {
            return;
        }
        if self.paths[pi].pmtud.on_lost(lost.iter().map(|p| (p.pn, p.size))) {
            log::debug!(
                "path {:?}: large packets lost while small ones pass; back to 1200 bytes",
                self.paths[pi].id
            );
        }
        self.qlog_mtu(pi);
    }

    /// Path `pi`'s PTO fired.
    pub(super) fn pmtud_on_pto(&mut self, pi: usize) {
        let p = &mut self.paths[pi];
        // aioquic acknowledged the last, 112-byte packet of a 10 MB response
        // 195 ms late, after two PTOs: that alone is no black hole.
        let large = p.space.iter().rev().any(|s| s.size > crate::path::pmtud::BASE && !s.probe);
        if self.handshake_confirmed && p.pmtud.on_pto(p.recovery.pto_count(), large) {
            log::debug!("path {:?}: {} PTOs running; back to 1200 bytes", p.id, p.recovery.pto_count());
        }
        self.qlog_mtu(pi);
    }

    /// Log `quic:mtu_updated` if path `pi`'s datagram size changed (qlog
    /// enabled only).
    fn qlog_mtu(&mut self, pi: usize) {
        if let (Some(q), Some(p)) = (&mut self.qlog, self.paths.get(pi)) {
            q.mtu_updated(self.last_now, p.id, p.pmtud.current());
        }
    }
}
