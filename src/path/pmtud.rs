//! Path MTU discovery for one path: DPLPMTUD (RFC 8899) as RFC 9000 §14.3
//! applies it to QUIC.
//!
//! A path starts at the configured datagram size and searches upwards with
//! probes — one at a time, a PING padded to the size tried, alone in its
//! datagram. The top of the range (the link MTU given in the configuration
//! less the IP and UDP headers, capped by the peer's max_udp_payload_size) is
//! tried first, since most paths carry it; a size lost [`MAX_PROBES`] times
//! lowers the top and the search goes on by halving. It stops once the range
//! is narrower than [`MIN_STEP`] and starts again after [`RAISE_INTERVAL`].
//! A lost probe is no congestion signal (RFC 9000 §14.4).
//!
//! Black holes (RFC 8899 §4.3): the path falls back to the 1200-byte base
//! when full-size packets keep getting lost while smaller ones get through —
//! [`SUSPICIOUS_EVENTS`] loss events of large packets sent after the last
//! large one acknowledged, and a small one sent since acknowledged (a burst
//! of congestion losses is no black hole) — or when the path's PTO fires
//! twice running with large packets outstanding; the search then starts
//! over, with the size that worked before as its first probe, sent at once
//! (as one of the PTO's probes, and with no data waiting), so that a
//! fallback the evidence misled — a peer that stalled — costs one round trip.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The smallest datagram QUIC must be able to send (RFC 9000 §14).
pub(crate) const BASE: usize = 1200;
/// Probes of one size lost before that size counts as too large (RFC 8899 MAX_PROBES).
const MAX_PROBES: u8 = 3;
/// The search stops when the untried range is narrower than this.
const MIN_STEP: usize = 20;
/// When a finished search is tried again (RFC 8899 PMTU_RAISE_TIMER).
const RAISE_INTERVAL: Duration = Duration::from_secs(600);
/// Loss events of large packets, none acknowledged since, that make a black hole.
const SUSPICIOUS_EVENTS: u8 = 3;
/// Consecutive PTOs (nothing acknowledged) that make a black hole.
const SILENT_PTOS: u32 = 2;

/// IP + UDP header bytes in front of a UDP payload sent to `peer`.
pub(crate) fn header_overhead(peer: SocketAddr) -> usize {
    if peer.is_ipv4() {
        20 + 8
    } else {
        40 + 8
    }
}

/// One path's search state.
#[derive(Clone, Debug)]
pub(crate) struct Pmtud {
    enabled: bool,
    /// The datagram size in use (PLPMTU).
    current: usize,
    /// Upper bound of the search.
    max: usize,
    /// The largest size not yet known to fail.
    ceiling: usize,
    /// The top of the range has been tried since the search (re)started.
    top_tried: bool,
    /// The probe in flight: its packet number and size.
    probe: Option<(u64, usize)>,
    /// Consecutive losses of probes of the current probe size.
    failures: u8,
    /// Search finished: when to try again.
    raise_at: Option<Instant>,
    /// Largest packet number of a large packet acknowledged.
    largest_acked_large: Option<u64>,
    /// Loss events of large packets sent after `largest_acked_large`.
    suspicious: u8,
    /// A small packet sent after `largest_acked_large` was acknowledged.
    small_passed: bool,
    /// After a fallback: the size in use before, the search's first probe.
    retry: Option<usize>,
    /// Fallbacks to the base size so far.
    pub(crate) black_holes: u32,
    /// After a fallback: the size before and the first packet number sent
    /// after it. A large packet sent before it that is acknowledged after
    /// all (a late ACK, not a black hole) undoes the fallback.
    undo: Option<(usize, u64)>,
}

impl Pmtud {
    /// Start at `initial` bytes; search up to `max` if `enabled`.
    pub(crate) fn new(enabled: bool, initial: usize, max: usize) -> Pmtud {
        let max = max.max(BASE);
        let current = initial.clamp(BASE, max);
        Pmtud {
            enabled,
            current,
            max,
            ceiling: max,
            top_tried: false,
            probe: None,
            failures: 0,
            raise_at: None,
            largest_acked_large: None,
            suspicious: 0,
            small_passed: false,
            retry: None,
            black_holes: 0,
            undo: None,
        }
    }

    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The datagram size in use.
    pub(crate) fn current(&self) -> usize {
        self.current
    }

    /// Lower the upper bound (the peer's max_udp_payload_size).
    pub(crate) fn cap(&mut self, max: usize) {
        self.max = self.max.min(max.max(BASE));
        self.ceiling = self.ceiling.min(self.max);
        self.current = self.current.min(self.max);
    }

    /// The size to probe now, if a probe is due.
    pub(crate) fn probe_size(&mut self, now: Instant) -> Option<usize> {
        if !self.enabled || self.probe.is_some() {
            return None;
        }
        if let Some(t) = self.raise_at {
            if now < t {
                return None;
            }
            self.raise_at = None;
            self.ceiling = self.max;
            self.top_tried = false;
        }
        if let Some(r) = self.retry_due() {
            return Some(r);
        }
        if self.ceiling < self.current + MIN_STEP {
            self.raise_at = Some(now + RAISE_INTERVAL);
            return None;
        }
        Some(if self.top_tried { (self.current + self.ceiling).div_ceil(2) } else { self.ceiling })
    }

    /// After a fallback, the size in use before, to probe now (none in flight).
    pub(crate) fn retry_due(&self) -> Option<usize> {
        self.retry.filter(|&r| self.enabled && self.probe.is_none() && r > self.current)
    }

    pub(crate) fn on_probe_sent(&mut self, pn: u64, size: usize) {
        self.probe = Some((pn, size));
    }

    /// A packet of `size` bytes was acknowledged.
    pub(crate) fn on_acked(&mut self, pn: u64, size: usize) {
        if let Some((_, s)) = self.probe.filter(|&(p, _)| p == pn) {
            self.probe = None;
            self.failures = 0;
            self.top_tried = true;
            self.current = self.current.max(s.min(self.max));
            self.retry = None;
        }
        if size <= BASE {
            self.small_passed |= self.largest_acked_large.is_none_or(|l| pn > l);
            return;
        }
        self.largest_acked_large = Some(self.largest_acked_large.map_or(pn, |l| l.max(pn)));
        self.suspicious = 0;
        self.small_passed = false;
        if let Some((before, _)) = self.undo.take_if(|&mut (_, first)| pn < first) {
            self.current = self.current.max(before);
            self.black_holes -= 1;
            self.retry = None;
        }
    }

    /// The next packet sent has number `pn` (arms the undo of a fallback).
    pub(crate) fn on_sent(&mut self, pn: u64) {
        if let Some((_, first @ u64::MAX)) = &mut self.undo {
            *first = pn;
        }
    }

    /// The packets one ACK (or one loss timer) declared lost, as (packet
    /// number, size). Returns whether a black hole was detected.
    pub(crate) fn on_lost(&mut self, lost: impl Iterator<Item = (u64, usize)>) -> bool {
        let mut suspicious = false;
        for (pn, size) in lost {
            if let Some((_, s)) = self.probe.filter(|&(p, _)| p == pn) {
                self.probe = None;
                self.failures += 1;
                if self.failures >= MAX_PROBES {
                    self.failures = 0;
                    self.top_tried = true;
                    self.ceiling = self.ceiling.min(s - 1);
                    self.retry = None;
                }
            } else if size > BASE && self.largest_acked_large.is_none_or(|l| pn > l) {
                suspicious = true;
            }
        }
        if !suspicious || !self.enabled {
            return false;
        }
        self.suspicious += 1;
        self.suspicious >= SUSPICIOUS_EVENTS && self.small_passed && self.black_hole()
    }

    /// The path's PTO fired for the `pto_count`-th time running, with
    /// packets larger than the base size among those unacknowledged if
    /// `large_outstanding` (only small ones: a silent peer, not a black hole).
    pub(crate) fn on_pto(&mut self, pto_count: u32, large_outstanding: bool) -> bool {
        self.enabled && large_outstanding && pto_count >= SILENT_PTOS && self.black_hole()
    }

    /// Fall back to the base size and search again. False if already there.
    fn black_hole(&mut self) -> bool {
        if self.current <= BASE {
            return false;
        }
        self.undo = Some((self.current, u64::MAX));
        self.retry = Some(self.current);
        self.current = BASE;
        self.ceiling = self.max;
        self.top_tried = false;
        self.probe = None;
        self.failures = 0;
        self.suspicious = 0;
        self.small_passed = false;
        self.raise_at = None;
        self.black_holes += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::disallowed_methods)]
    fn t0() -> Instant {
        Instant::now()
    }

    /// Runs the search against a path carrying datagrams up to `mtu`.
    fn search(p: &mut Pmtud, mtu: usize, now: Instant) -> Vec<usize> {
        let mut tried = Vec::new();
        let mut pn = 1000;
        while let Some(size) = p.probe_size(now) {
            tried.push(size);
            p.on_probe_sent(pn, size);
            if size <= mtu {
                p.on_acked(pn, size);
            } else {
                assert!(!p.on_lost([(pn, size)].into_iter()));
            }
            pn += 1;
            assert!(tried.len() < 100, "{tried:?}");
        }
        tried
    }

    #[test]
    fn tries_the_top_first_and_stops_there() {
        let now = t0();
        let mut p = Pmtud::new(true, 1350, 1472);
        assert_eq!(search(&mut p, 1500, now), [1472]);
        assert_eq!(p.current(), 1472);
        assert_eq!(p.probe_size(now + RAISE_INTERVAL), None, "nothing above the top");
    }

    #[test]
    fn halves_down_to_the_path_mtu_after_three_losses_per_size() {
        let now = t0();
        let mut p = Pmtud::new(true, 1350, 1472);
        let tried = search(&mut p, 1400, now);
        assert_eq!(&tried[..3], [1472, 1472, 1472]);
        assert!(p.current() <= 1400 && p.current() > 1400 - MIN_STEP, "{} {tried:?}", p.current());
        // Lost probes of one size in a row; each acked size is the new floor.
        assert_eq!(tried[3], (1350 + 1471_usize).div_ceil(2));
        // The search is done until the raise timer.
        assert_eq!(p.probe_size(now + Duration::from_secs(1)), None);
        assert_eq!(p.probe_size(now + RAISE_INTERVAL), Some(1472));
    }

    #[test]
    fn disabled_never_probes_and_never_falls_back() {
        let now = t0();
        let mut p = Pmtud::new(false, 1350, 1472);
        assert_eq!(p.probe_size(now), None);
        assert!(!p.on_pto(5, true));
        assert_eq!(p.current(), 1350);
    }

    #[test]
    fn large_packets_lost_while_small_ones_pass_is_a_black_hole() {
        let now = t0();
        let mut p = Pmtud::new(true, 1350, 1472);
        search(&mut p, 1500, now);
        p.on_acked(2010, 1472);
        // Congestion losses below a larger acknowledged packet do not count.
        for _ in 0..5 {
            assert!(!p.on_lost([(2009, 1472)].into_iter()));
        }
        // Three loss events of large packets beyond it do, once a small
        // packet sent after it is acknowledged.
        p.on_acked(2008, 300);
        assert!(!p.on_lost([(2011, 1472), (2012, 1472)].into_iter()));
        assert!(!p.on_lost([(2013, 1472)].into_iter()));
        assert!(!p.on_lost([(2014, 300)].into_iter()), "a small loss is no evidence");
        assert!(!p.on_lost([(2015, 1472)].into_iter()), "no small packet got through yet");
        p.on_acked(2016, 300);
        assert!(p.on_lost([(2017, 1472)].into_iter()));
        assert_eq!((p.current(), p.black_holes), (BASE, 1));
        // The search starts over from the size that worked before.
        assert_eq!(p.probe_size(now), Some(1472));
    }

    #[test]
    fn bursts_of_large_losses_alone_are_congestion() {
        let mut p = Pmtud::new(true, 1350, 1472);
        p.on_acked(10, 1350);
        for pn in 11..30 {
            assert!(!p.on_lost([(pn, 1350)].into_iter()));
        }
        assert_eq!((p.current(), p.black_holes), (1350, 0));
    }

    #[test]
    fn after_a_fallback_the_old_size_is_probed_first() {
        let now = t0();
        let mut p = Pmtud::new(true, 1350, 1472);
        search(&mut p, 1400, now);
        let found = p.current();
        assert!(p.on_pto(2, true));
        p.on_sent(5000);
        p.on_acked(5001, BASE);
        assert_eq!(p.current(), BASE, "only small packets acknowledged: a black hole");
        // Only a burst of losses misled it: one probe restores the size.
        assert_eq!(p.probe_size(now), Some(found));
        p.on_probe_sent(5002, found);
        p.on_acked(5002, found);
        assert_eq!(p.current(), found);
        // A real black hole: the old size fails three times, then halving.
        assert!(p.on_pto(2, true));
        for pn in 6000..6003 {
            assert_eq!(p.probe_size(now), Some(found));
            p.on_probe_sent(pn, found);
            assert!(!p.on_lost([(pn, found)].into_iter()));
        }
        assert_eq!(p.probe_size(now), Some((BASE + found - 1).div_ceil(2)));
    }

    #[test]
    fn a_late_ack_of_a_large_packet_undoes_the_fallback() {
        let mut p = Pmtud::new(true, 1350, 1472);
        p.on_sent(7);
        assert!(p.on_pto(2, true), "two PTOs: the peer's ACKs are only late");
        p.on_sent(8);
        p.on_acked(6, 1350);
        assert_eq!((p.current(), p.black_holes), (1350, 0));
        // Once undone, later acknowledgements change nothing.
        p.on_acked(9, 1350);
        assert_eq!(p.current(), 1350);
        // A real black hole: nothing sent before the fallback is acknowledged.
        assert!(p.on_pto(2, true));
        p.on_sent(10);
        p.on_acked(11, 1200);
        assert_eq!((p.current(), p.black_holes), (BASE, 1));
    }

    #[test]
    fn an_acknowledged_large_packet_clears_the_suspicion() {
        let mut p = Pmtud::new(true, 1350, 1472);
        p.on_lost([(1, 1350)].into_iter());
        p.on_lost([(2, 1350)].into_iter());
        p.on_acked(3, 1350);
        assert!(!p.on_lost([(4, 1350)].into_iter()));
        assert_eq!(p.current(), 1350);
    }

    #[test]
    fn two_silent_ptos_fall_back_once() {
        let mut p = Pmtud::new(true, 1350, 1472);
        assert!(!p.on_pto(1, true));
        assert!(p.on_pto(2, true));
        assert!(!p.on_pto(3, true), "already at the base");
        assert_eq!(p.current(), BASE);
    }

    #[test]
    fn silent_ptos_with_only_small_packets_outstanding_are_no_black_hole() {
        let mut p = Pmtud::new(true, 1350, 1472);
        assert!(!p.on_pto(2, false));
        assert!(!p.on_pto(3, false));
        assert_eq!((p.current(), p.black_holes), (1350, 0));
    }

    #[test]
    fn the_peer_limit_caps_everything() {
        let now = t0();
        let mut p = Pmtud::new(true, 1350, 1472);
        p.cap(1300);
        assert_eq!(p.current(), 1300);
        assert_eq!(search(&mut p, 1500, now), Vec::<usize>::new());
        p.cap(100);
        assert_eq!(p.current(), BASE);
    }
}
