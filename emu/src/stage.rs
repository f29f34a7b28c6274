//! The sans-IO stage interface, packet type, composition and the fixed-delay stage.
//!
//! A [`Stage`] is one element of an emulated link (Mahimahi's queue interface made
//! sans-IO): packets go in with [`Stage::enqueue`], come out of
//! [`Stage::dequeue_ready`] once their departure time has passed, and
//! [`Stage::next_wakeup`] says when the caller must poll again. Stages are composed by
//! wrapping ([`Chain`]).
//!
//! Contract for every stage: the `now` passed to successive calls never decreases, and
//! is an offset from the link's epoch (time zero of the trace clock).

use std::collections::VecDeque;
use std::time::Duration;

use crate::profile::Profile;

/// An opaque packet travelling through the emulator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// Contents, never inspected by the emulator.
    pub data: Vec<u8>,
    /// Bytes the link charges for this packet (trace opportunities are 1504 bytes).
    /// Defaults to `data.len()`; set it to include headers the emulator should count
    /// (e.g. IP/UDP headers, or Mahimahi's 4-byte TUN header).
    pub size: u32,
    /// Opaque caller tag (flow, path or sequence number), carried unchanged.
    pub tag: u64,
    /// Time of the packet's last transition: set by a stage to the exact departure time
    /// when it hands the packet out (which may be earlier than the `now` of the call).
    pub time: Duration,
    /// The ECN bits of its IP header (RFC 3168: 0 Not-ECT, 1 ECT(1), 2 ECT(0),
    /// 3 CE), carried unchanged.
    pub ecn: u8,
}

impl Packet {
    /// A packet whose charged size is its length.
    pub fn new(data: Vec<u8>) -> Packet {
        let size = u32::try_from(data.len()).unwrap_or(u32::MAX);
        Packet { data, size, tag: 0, time: Duration::ZERO, ecn: 0 }
    }

    /// A packet of `size` charged bytes with no contents (for load generation).
    pub fn sized(size: u32, tag: u64) -> Packet {
        Packet { data: Vec::new(), size, tag, time: Duration::ZERO, ecn: 0 }
    }
}

/// One element of an emulated link.
pub trait Stage {
    /// Offers a packet arriving at `now`. The stage may drop it.
    fn enqueue(&mut self, now: Duration, pkt: Packet);

    /// Appends to `out`, in departure order, every packet whose departure time is
    /// `<= now`, with [`Packet::time`] set to that departure time.
    fn dequeue_ready(&mut self, now: Duration, out: &mut Vec<Packet>);

    /// Earliest time at which [`dequeue_ready`](Stage::dequeue_ready) may return
    /// something, or `None` while the stage holds nothing. Polling earlier is harmless;
    /// a returned time may be a spurious wake-up (e.g. a rate-scaled opportunity).
    fn next_wakeup(&self) -> Option<Duration>;
}

impl<S: Stage + ?Sized> Stage for Box<S> {
    fn enqueue(&mut self, now: Duration, pkt: Packet) {
        (**self).enqueue(now, pkt)
    }
    fn dequeue_ready(&mut self, now: Duration, out: &mut Vec<Packet>) {
        (**self).dequeue_ready(now, out)
    }
    fn next_wakeup(&self) -> Option<Duration> {
        (**self).next_wakeup()
    }
}

/// `first` feeding `second`: packets leaving `first` enter `second` at their exact
/// departure time, so composition adds no latency of its own.
#[derive(Debug, Clone)]
pub struct Chain<A, B> {
    /// The upstream stage.
    pub first: A,
    /// The downstream stage.
    pub second: B,
    scratch: Vec<Packet>,
}

impl<A: Stage, B: Stage> Chain<A, B> {
    /// Composes two stages.
    pub fn new(first: A, second: B) -> Chain<A, B> {
        Chain { first, second, scratch: Vec::new() }
    }

    fn pump(&mut self, now: Duration) {
        self.first.dequeue_ready(now, &mut self.scratch);
        for p in self.scratch.drain(..) {
            self.second.enqueue(p.time, p);
        }
    }
}

impl<A: Stage, B: Stage> Stage for Chain<A, B> {
    fn enqueue(&mut self, now: Duration, pkt: Packet) {
        self.first.enqueue(now, pkt);
        self.pump(now);
    }

    fn dequeue_ready(&mut self, now: Duration, out: &mut Vec<Packet>) {
        self.pump(now);
        self.second.dequeue_ready(now, out);
    }

    fn next_wakeup(&self) -> Option<Duration> {
        match (self.first.next_wakeup(), self.second.next_wakeup()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Fixed one-way delay (`mm-delay`), optionally with a time-varying extra delay.
///
/// Packets stay in FIFO order: when the delay shrinks, a packet never overtakes the one
/// before it (it leaves together with it), as on a real link.
#[derive(Debug, Clone)]
pub struct DelayStage {
    base: Duration,
    extra_ms: Vec<Profile>,
    queue: VecDeque<Packet>,
}

impl DelayStage {
    /// A delay of `base` each packet.
    pub fn new(base: Duration) -> DelayStage {
        DelayStage { base, extra_ms: Vec::new(), queue: VecDeque::new() }
    }

    /// Adds a profile of extra delay in milliseconds, summed with other profiles (a
    /// negative sum may shorten the base delay, never below zero).
    pub fn add_extra_ms(&mut self, profile: Profile) {
        self.extra_ms.push(profile);
    }

    /// The delay a packet entering at `now` gets (before FIFO ordering).
    pub fn delay_at(&self, now: Duration) -> Duration {
        let extra: f64 = self.extra_ms.iter().filter_map(|p| p.value_at(now)).sum();
        let total = self.base.as_secs_f64() + extra / 1000.0;
        Duration::try_from_secs_f64(total.max(0.0)).unwrap_or(Duration::ZERO)
    }

    /// Packets currently in flight.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no packet is in flight.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

impl Stage for DelayStage {
    fn enqueue(&mut self, now: Duration, mut pkt: Packet) {
        let mut release = now + self.delay_at(now);
        if let Some(last) = self.queue.back() {
            release = release.max(last.time);
        }
        pkt.time = release;
        self.queue.push_back(pkt);
    }

    fn dequeue_ready(&mut self, now: Duration, out: &mut Vec<Packet>) {
        while self.queue.front().is_some_and(|p| p.time <= now) {
            if let Some(p) = self.queue.pop_front() {
                out.push(p);
            }
        }
    }

    fn next_wakeup(&self) -> Option<Duration> {
        self.queue.front().map(|p| p.time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Interp;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn delay_is_exact_and_fifo() {
        let mut d = DelayStage::new(ms(20));
        d.add_extra_ms(Profile::new(vec![(ms(0), 50.0), (ms(10), 0.0)], Interp::Step));
        d.enqueue(ms(5), Packet::sized(100, 1)); // 5 + 20 + 50 = 75
        d.enqueue(ms(12), Packet::sized(100, 2)); // 12 + 20 = 32, held behind 75
        assert_eq!(d.next_wakeup(), Some(ms(75)));
        let mut out = Vec::new();
        d.dequeue_ready(ms(74), &mut out);
        assert!(out.is_empty());
        d.dequeue_ready(ms(80), &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].time, ms(75));
        assert_eq!(out[1].time, ms(75));
        assert_eq!(d.next_wakeup(), None);
    }

    #[test]
    fn chain_passes_exact_times() {
        let mut c = Chain::new(DelayStage::new(ms(10)), DelayStage::new(ms(5)));
        c.enqueue(ms(1), Packet::sized(1, 0));
        assert_eq!(c.next_wakeup(), Some(ms(11)));
        let mut out = Vec::new();
        // Polling late must not shift the second stage's clock.
        c.dequeue_ready(ms(100), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].time, ms(16));
    }
}
