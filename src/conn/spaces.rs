//! Encryption levels: packet protection keys, 1-RTT key update, CRYPTO
//! streams, and the Initial/Handshake packet-number spaces.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::crypto::{self, Keys, Level};
use crate::error::{ErrorCode, TransportError};
use crate::ranges::RangeSet;
use crate::recovery::{AckTracker, PacketSpace, PathRecovery, SpaceKind};
use crate::version::Version;
use crate::PathId;

use super::sent::SentFrames;

/// Most CRYPTO data we buffer out of order (RFC 9000 §7.5 allows closing with
/// CRYPTO_BUFFER_EXCEEDED beyond a limit of our choice).
const MAX_CRYPTO_BUFFER: u64 = 64 * 1024;

/// Index of a level in the packet-number space and CRYPTO arrays: 0-RTT
/// shares the application space with 1-RTT (and has no CRYPTO stream);
/// its keys are kept apart ([`CryptoLevels::zero_rtt`]).
pub(crate) fn level_index(level: Level) -> usize {
    match level {
        Level::Initial => 0,
        Level::Handshake => 1,
        Level::ZeroRtt | Level::OneRtt => 2,
    }
}

/// Outgoing CRYPTO data of one level: all bytes are kept until acknowledged
/// (handshake flights are a few KB).
#[derive(Debug, Default)]
pub(crate) struct CryptoSend {
    data: Vec<u8>,
    /// Offset of data[0].
    base: u64,
    sent: u64,
    acked: RangeSet,
    lost: RangeSet,
}

impl CryptoSend {
    pub(crate) fn push(&mut self, d: &[u8]) {
        self.data.extend_from_slice(d);
    }
    fn end(&self) -> u64 {
        self.base + self.data.len() as u64
    }
    pub(crate) fn has_pending(&self) -> bool {
        !self.lost.is_empty() || self.sent < self.end()
    }
    /// Next range to send (lost data first), at most `max` bytes.
    pub(crate) fn next(&self, max: usize) -> Option<(u64, &[u8])> {
        let (off, end) = if let Some(r) = self.lost.iter().next() {
            (r.start, r.end)
        } else if self.sent < self.end() {
            (self.sent, self.end())
        } else {
            return None;
        };
        let len = ((end - off) as usize).min(max);
        if len == 0 {
            return None;
        }
        let s = (off - self.base) as usize;
        self.data.get(s..s + len).map(|d| (off, d))
    }
    pub(crate) fn on_sent(&mut self, off: u64, len: usize) {
        let end = off + len as u64;
        self.lost.remove(off..end);
        self.sent = self.sent.max(end);
    }
    pub(crate) fn on_acked(&mut self, off: u64, len: usize) {
        self.acked.insert(off..off + len as u64);
        self.lost.remove(off..off + len as u64);
        // Drop the acknowledged prefix.
        if let Some(r) = self.acked.iter().next() {
            if r.start <= self.base && r.end > self.base {
                let n = (r.end - self.base) as usize;
                self.data.drain(..n.min(self.data.len()));
                self.base = r.end;
            }
        }
    }
    pub(crate) fn on_lost(&mut self, off: u64, len: usize) {
        let mut r = off..off + len as u64;
        if r.start < self.base {
            r.start = self.base;
        }
        if r.start >= r.end {
            return;
        }
        // Only what is not acknowledged yet.
        self.lost.insert(r.clone());
        for a in self.acked.iter() {
            if a.start < r.end && a.end > r.start {
                self.lost.remove(a.clone());
            }
        }
    }
    /// Resend everything not acknowledged (Retry, discarded keys, PTO
    /// probes). Returns whether anything was.
    pub(crate) fn requeue_all(&mut self) -> bool {
        let some = self.sent > self.base;
        if some {
            self.on_lost(self.base, (self.sent - self.base) as usize);
        }
        some
    }
}

/// Incoming CRYPTO data of one level, reassembled in order for TLS.
#[derive(Debug, Default)]
pub(crate) struct CryptoRecv {
    read: u64,
    pending: BTreeMap<u64, Vec<u8>>,
}

impl CryptoRecv {
    /// Insert a CRYPTO frame; returns contiguous data ready for TLS.
    pub(crate) fn insert(&mut self, off: u64, data: &[u8], out: &mut Vec<u8>) -> Result<(), TransportError> {
        let end = off + data.len() as u64;
        if end > self.read + MAX_CRYPTO_BUFFER {
            return Err(TransportError::new(
                ErrorCode::CRYPTO_BUFFER_EXCEEDED,
                "too much CRYPTO data buffered",
            ));
        }
        if end <= self.read {
            return Ok(());
        }
        if off <= self.read {
            let skip = (self.read - off) as usize;
            out.extend_from_slice(&data[skip..]);
            self.read = end;
        } else {
            let e = self.pending.entry(off).or_default();
            if e.len() < data.len() {
                *e = data.to_vec();
            }
            return Ok(());
        }
        // Drain buffered segments that became contiguous.
        while let Some((&o, _)) = self.pending.iter().next() {
            if o > self.read {
                break;
            }
            if let Some(seg) = self.pending.remove(&o) {
                let seg_end = o + seg.len() as u64;
                if seg_end > self.read {
                    out.extend_from_slice(&seg[(self.read - o) as usize..]);
                    self.read = seg_end;
                }
            }
        }
        Ok(())
    }
}

/// 1-RTT key-update state (RFC 9001 §6).
#[derive(Default)]
pub(crate) struct KeyUpdate {
    /// Key phase bit of the packets we send.
    pub(crate) phase: bool,
    /// We updated our keys and the peer has not answered in the new phase
    /// yet: its packets still carry the old bit.
    pub(crate) awaiting_peer: bool,
    /// Keys the peer will use after its next update, derived ahead of time so
    /// a packet in the new phase can be tried without a stall.
    pub(crate) next_remote: Option<Keys>,
    /// Previous remote keys, kept briefly for reordered packets.
    pub(crate) prev_remote: Option<(Keys, Instant)>,
    /// First packet number received with the current remote keys, per path:
    /// a packet with the other phase bit and a lower number on that path is
    /// a late one of the previous phase. (One path's numbers say nothing
    /// about another's, so a single "largest received" would misjudge.)
    pub(crate) remote_first_pn: smallvec::SmallVec<[(PathId, u64); 2]>,
    /// First packet number we sent in the current phase, per path (packet
    /// numbers are per path in multipath); an update may be initiated or
    /// accepted once one of those is acknowledged.
    pub(crate) first_pn_in_phase: smallvec::SmallVec<[(PathId, u64); 2]>,
    /// When a packet of the current phase was first acknowledged.
    pub(crate) phase_acked: Option<Instant>,
    /// We sent, with our current keys, an ACK of a packet the peer protected
    /// with its current keys: the peer may start the next update (RFC 9001
    /// §6.2; before that, a new one would be a second update in a row).
    pub(crate) peer_phase_acked: bool,
    /// Packets protected with the current local keys (AEAD limits).
    pub(crate) packets_in_phase: u64,
    /// Key updates so far (either side's).
    pub(crate) updates: u64,
    /// Key updates we started.
    pub(crate) initiated: u64,
}

impl KeyUpdate {
    /// Phase bit the peer's current keys carry.
    pub(crate) fn remote_phase(&self) -> bool {
        self.phase ^ self.awaiting_peer
    }

    /// Whether a packet numbered `pn` on `path` whose phase bit differs from
    /// the current remote keys' belongs to the previous phase.
    pub(crate) fn is_previous_phase(&self, path: PathId, pn: u64, now: Instant) -> bool {
        self.prev_remote.as_ref().is_some_and(|(_, exp)| now < *exp)
            && self.remote_first_pn.iter().find(|(p, _)| *p == path).is_none_or(|&(_, f)| pn < f)
    }

    /// A packet numbered `pn` on `path` decrypted with the current remote keys.
    pub(crate) fn on_received(&mut self, path: PathId, pn: u64) {
        match self.remote_first_pn.iter_mut().find(|(p, _)| *p == path) {
            Some((_, f)) => *f = (*f).min(pn),
            None => self.remote_first_pn.push((path, pn)),
        }
    }

    /// A packet we sent on `path` as `pn` was acknowledged.
    pub(crate) fn on_acked(&mut self, path: PathId, pn: u64, now: Instant) {
        if self.phase_acked.is_none() && self.first_pn_in_phase.iter().any(|&(p, f)| p == path && pn >= f) {
            self.phase_acked = Some(now);
        }
    }

    /// We are sending, with the current keys, an ACK for `path` whose
    /// largest acknowledged is `largest`.
    pub(crate) fn on_ack_sent(&mut self, path: PathId, largest: u64) {
        if self.remote_first_pn.iter().any(|&(p, f)| p == path && largest >= f) {
            self.peer_phase_acked = true;
        }
    }

    /// Whether a packet in the peer's next phase is a key update it may not
    /// start yet: a second one in a row, before we acknowledged a packet of
    /// the phase the previous update began (RFC 9001 §6.2). The first update
    /// is always allowed, and so is the peer's answer to ours (§6.1's rule
    /// on acknowledgements binds the initiator, who alone can check it).
    pub(crate) fn premature_peer_update(&self) -> bool {
        !self.awaiting_peer && self.updates > 0 && !self.peer_phase_acked
    }

    /// We are sending `pn` on `path` with the current keys.
    pub(crate) fn on_sent(&mut self, path: PathId, pn: u64) {
        self.packets_in_phase += 1;
        if !self.first_pn_in_phase.iter().any(|&(p, _)| p == path) {
            self.first_pn_in_phase.push((path, pn));
        }
    }

    fn new_phase(&mut self) {
        self.phase = !self.phase;
        self.first_pn_in_phase.clear();
        self.phase_acked = None;
        self.peer_phase_acked = false;
        self.packets_in_phase = 0;
        self.updates += 1;
    }
}

/// Keys and CRYPTO streams of all levels.
pub(crate) struct CryptoLevels {
    local: [Option<Keys>; 3],
    remote: [Option<Keys>; 3],
    /// 0-RTT keys (RFC 9001 §4.6): a client writes with them, a server
    /// reads; at index 0 ours, at 1 the peer's.
    zero_rtt: [Option<Keys>; 2],
    /// The version of the Initial keys in `local[0]` / `remote[0]`.
    initial_version: Version,
    /// During compatible version negotiation, the other version's Initial
    /// keys (local, remote).
    other_initial: Option<(Version, Keys, Keys)>,
    pub(crate) send: [CryptoSend; 3],
    pub(crate) recv: [CryptoRecv; 3],
    pub(crate) ku: KeyUpdate,
}

impl CryptoLevels {
    pub(crate) fn new(
        version: Version,
        initial_dcid: &[u8],
        is_server: bool,
    ) -> Result<Self, crypto::CryptoError> {
        let mut s = CryptoLevels {
            local: [None, None, None],
            remote: [None, None, None],
            zero_rtt: [None, None],
            initial_version: version,
            other_initial: None,
            send: Default::default(),
            recv: Default::default(),
            ku: KeyUpdate::default(),
        };
        s.reset_initial(version, initial_dcid, is_server)?;
        Ok(s)
    }

    /// (Re)derive Initial keys, e.g. after a Retry changed the DCID or a
    /// server learned the client's version.
    pub(crate) fn reset_initial(
        &mut self,
        version: Version,
        dcid: &[u8],
        is_server: bool,
    ) -> Result<(), crypto::CryptoError> {
        let (local, remote) = crypto::initial_keys(version, dcid, is_server)?;
        self.local[0] = Some(local);
        self.remote[0] = Some(remote);
        self.initial_version = version;
        self.other_initial = None;
        Ok(())
    }

    /// Derive `version`'s Initial keys beside the current ones, so a packet
    /// of that version can be tried before switching to it.
    pub(crate) fn prepare_initial(
        &mut self,
        version: Version,
        dcid: &[u8],
        is_server: bool,
    ) -> Result<(), crypto::CryptoError> {
        if self.initial_version == version || self.other_initial.as_ref().is_some_and(|o| o.0 == version) {
            return Ok(());
        }
        let (local, remote) = crypto::initial_keys(version, dcid, is_server)?;
        self.other_initial = Some((version, local, remote));
        Ok(())
    }

    /// Compatible version negotiation (RFC 9368 §2.3): Initial packets are
    /// sent with `version`'s keys from now on; the previous version's keys
    /// stay to open the peer's packets still in flight in it.
    pub(crate) fn switch_initial(
        &mut self,
        version: Version,
        dcid: &[u8],
        is_server: bool,
    ) -> Result<(), crypto::CryptoError> {
        self.prepare_initial(version, dcid, is_server)?;
        let Some((v, local, remote)) = self.other_initial.take() else { return Ok(()) };
        let old_local = self.local[0].replace(local);
        let old_remote = self.remote[0].replace(remote);
        if let (Some(l), Some(r)) = (old_local, old_remote) {
            self.other_initial = Some((self.initial_version, l, r));
        }
        self.initial_version = v;
        Ok(())
    }

    /// Opening keys for a packet of `level` that came in `version`.
    pub(crate) fn remote_for(&self, level: Level, version: Version) -> Option<&Keys> {
        if level != Level::Initial || version == self.initial_version {
            return self.remote(level);
        }
        self.other_initial.as_ref().filter(|o| o.0 == version).map(|o| &o.2)
    }

    pub(crate) fn install(&mut self, level: Level, local: Option<Keys>, remote: Option<Keys>) {
        if level == Level::ZeroRtt {
            self.zero_rtt = [local, remote];
            return;
        }
        let i = level_index(level);
        if let Some(k) = local {
            self.local[i] = Some(k);
        }
        if let Some(k) = remote {
            if i == 2 {
                self.ku.next_remote = k.next().ok();
            }
            self.remote[i] = Some(k);
        }
    }

    pub(crate) fn discard(&mut self, level: Level) {
        if level == Level::ZeroRtt {
            self.zero_rtt = [None, None];
            return;
        }
        let i = level_index(level);
        self.local[i] = None;
        self.remote[i] = None;
        if level == Level::Initial {
            self.other_initial = None;
        }
        self.send[i] = CryptoSend::default();
    }

    pub(crate) fn has_send_keys(&self, level: Level) -> bool {
        self.local(level).is_some()
    }
    pub(crate) fn has_recv_keys(&self, level: Level) -> bool {
        self.remote(level).is_some()
    }
    /// Our keys at `level` (0-RTT: only a client has them).
    pub(crate) fn local(&self, level: Level) -> Option<&Keys> {
        match level {
            Level::ZeroRtt => self.zero_rtt[0].as_ref(),
            _ => self.local[level_index(level)].as_ref(),
        }
    }
    /// The peer's keys at `level` (0-RTT: only a server has them).
    pub(crate) fn remote(&self, level: Level) -> Option<&Keys> {
        match level {
            Level::ZeroRtt => self.zero_rtt[1].as_ref(),
            _ => self.remote[level_index(level)].as_ref(),
        }
    }

    /// A packet in the peer's next key phase decrypted: move the remote keys
    /// on (the old ones serve reordered packets until `prev_expiry`). If the
    /// peer started the update, ours follow (RFC 9001 §6.2); if it answers
    /// ours, they already did.
    pub(crate) fn rotate(&mut self, prev_expiry: Instant) {
        let Some(next) = self.ku.next_remote.take() else { return };
        if let Some(old) = self.remote[2].replace(next) {
            self.ku.prev_remote = Some((old, prev_expiry));
        }
        self.ku.remote_first_pn.clear();
        self.ku.peer_phase_acked = false;
        self.ku.next_remote = self.remote[2].as_ref().and_then(|k| k.next().ok());
        if self.ku.awaiting_peer {
            self.ku.awaiting_peer = false;
            return;
        }
        if let Some(l) = self.local[2].take() {
            self.local[2] = l.next().ok();
        }
        self.ku.new_phase();
    }

    /// Start a key update: our packets use the next keys and flip the phase
    /// bit; the peer follows when it sees them (RFC 9001 §6.1).
    pub(crate) fn initiate_update(&mut self) -> bool {
        let Some(next) = self.local[2].as_ref().and_then(|k| k.next().ok()) else { return false };
        self.local[2] = Some(next);
        self.ku.awaiting_peer = true;
        self.ku.initiated += 1;
        self.ku.new_phase();
        true
    }
}

/// An Initial or Handshake packet-number space (first path only).
pub(crate) struct HsSpace {
    pub(crate) sent: PacketSpace<SentFrames>,
    pub(crate) acks: AckTracker,
    pub(crate) next_pn: u64,
    pub(crate) discarded: bool,
    /// PTO probes owed in this space.
    pub(crate) probes: u8,
}

impl HsSpace {
    pub(crate) fn new(kind: SpaceKind) -> Self {
        // Initial and Handshake packets are acknowledged without delay.
        HsSpace {
            sent: PacketSpace::new(kind),
            acks: AckTracker::new(Duration::ZERO, 0),
            next_pn: 0,
            discarded: false,
            probes: 0,
        }
    }
}

/// One packet-number space, whichever its kind: Initial and Handshake live
/// on the connection (their packets count in the first path's recovery),
/// each path has its own application-data space.
pub(super) struct SpaceMut<'a> {
    pub(super) sent: &'a mut PacketSpace<SentFrames>,
    pub(super) acks: &'a mut AckTracker,
    pub(super) next_pn: &'a mut u64,
    /// PTO probes owed in this space.
    pub(super) probes: &'a mut u8,
    pub(super) recovery: &'a mut PathRecovery,
}

impl super::Connection {
    /// The ACK tracker of the space a packet of `level` received on path
    /// `path` belongs to (`None`: an unknown path).
    #[inline]
    pub(super) fn recv_acks(&mut self, level: Level, path: PathId) -> Option<&mut AckTracker> {
        let li = level_index(level);
        if li < self.hs.len() {
            return Some(&mut self.hs[li].acks);
        }
        self.path_index(path).map(|i| &mut self.paths[i].acks)
    }

    /// The space packets of `level` use on path `pi`; `None` once
    /// discarded (or for a path that does not exist).
    #[inline]
    pub(super) fn space_mut(&mut self, level: Level, pi: usize) -> Option<SpaceMut<'_>> {
        let li = level_index(level);
        let Some(sp) = self.hs.get_mut(li) else {
            let p = self.paths.get_mut(pi)?;
            let (sent, acks, next_pn, probes) = (&mut p.space, &mut p.acks, &mut p.next_pn, &mut p.probes);
            return Some(SpaceMut { sent, acks, next_pn, probes, recovery: &mut p.recovery });
        };
        if sp.discarded {
            return None;
        }
        let recovery = &mut self.paths.first_mut()?.recovery;
        Some(SpaceMut {
            sent: &mut sp.sent,
            acks: &mut sp.acks,
            next_pn: &mut sp.next_pn,
            probes: &mut sp.probes,
            recovery,
        })
    }
}
