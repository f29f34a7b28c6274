//! One direction of one path ([`Link`]) and a path's two directions ([`PathLinks`]).
//!
//! A link is `loss -> queue + trace-driven service -> fixed delay`, the order of
//! `mm-loss` inside `mm-delay` around `mm-link` for the direction leaving the host: lost
//! packets never take capacity, and the delay is applied to what leaves the bottleneck.
//! Optional impairments (reordering, duplication, corruption) act last, on what the
//! delay line delivers.

use std::sync::Arc;
use std::time::Duration;

use crate::impair::{ImpairStage, Impairments};
use crate::loss::{LossModel, LossStage};
use crate::profile::Profile;
use crate::queue::{QueueConfig, TraceStage};
use crate::stage::{Chain, DelayStage, Packet, Stage};
use crate::trace::Trace;

/// Everything needed to build a [`Link`].
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// Delivery-opportunity trace.
    pub trace: Arc<Trace>,
    /// Fixed one-way delay (`mm-delay`).
    pub delay: Duration,
    /// Random loss (`mm-loss`).
    pub loss: LossModel,
    /// Queue discipline and limits.
    pub queue: QueueConfig,
    /// Time-varying extra one-way delay, in milliseconds (delay spikes).
    pub delay_extra_ms: Vec<Profile>,
    /// Time-varying extra loss probability (loss ramps).
    pub loss_profiles: Vec<Profile>,
    /// Time-varying capacity scale factor (rate cuts).
    pub rate_scale: Vec<Profile>,
    /// Outage windows `[start, end)`: arrivals are dropped and service stops.
    pub outages: Vec<(Duration, Duration)>,
    /// Reordering, duplication and corruption of delivered packets.
    pub impair: Impairments,
    /// Path MTU: from each time on, the largest packet (charged size) the link
    /// carries; larger ones are dropped on arrival (`dropped_mtu`), as a
    /// router does with DF set. Empty: any size.
    pub mtu: Vec<(Duration, u32)>,
    /// Seed of this link's loss RNG.
    pub seed: u64,
}

impl LinkConfig {
    /// A lossless, zero-delay link with an infinite queue over `trace`.
    pub fn new(trace: Arc<Trace>) -> LinkConfig {
        LinkConfig {
            trace,
            delay: Duration::ZERO,
            loss: LossModel::None,
            queue: QueueConfig::default(),
            delay_extra_ms: Vec::new(),
            loss_profiles: Vec::new(),
            rate_scale: Vec::new(),
            outages: Vec::new(),
            impair: Impairments::default(),
            mtu: Vec::new(),
            seed: 0,
        }
    }
}

/// Counters of one link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets offered to the link.
    pub arrived_packets: u64,
    /// Bytes (charged sizes) offered.
    pub arrived_bytes: u64,
    /// Packets delivered at the far end.
    pub delivered_packets: u64,
    /// Bytes delivered.
    pub delivered_bytes: u64,
    /// Packets dropped by random loss, loss schedules and outages.
    pub dropped_loss: u64,
    /// Packets dropped by the queue limits.
    pub dropped_queue: u64,
    /// Delivered packets that were held back (reordered).
    pub reordered: u64,
    /// Extra copies delivered (duplication).
    pub duplicated: u64,
    /// Delivered packets with a flipped bit.
    pub corrupted: u64,
    /// Packets dropped for being larger than the link's MTU.
    pub dropped_mtu: u64,
}

type Inner = Chain<Chain<LossStage, TraceStage>, DelayStage>;

/// One direction of one emulated path.
#[derive(Debug, Clone)]
pub struct Link {
    inner: Inner,
    /// Impairments after the delay line; `None` costs nothing per packet.
    impair: Option<ImpairStage>,
    scratch: Vec<Packet>,
    stats: LinkStats,
    /// MTU steps, by time.
    mtu: Vec<(Duration, u32)>,
}

impl Link {
    /// Builds the link; its clock (and trace) starts at time zero.
    pub fn new(cfg: &LinkConfig) -> Link {
        let mut loss = LossStage::new(cfg.loss, cfg.seed);
        for p in &cfg.loss_profiles {
            loss.add_profile(p.clone());
        }
        let mut service = TraceStage::new(cfg.trace.clone(), cfg.queue);
        // PIE's random drops get their own stream, independent of the loss RNG.
        service.set_seed(cfg.seed ^ 0x5049_455f_5345_4544);
        for p in &cfg.rate_scale {
            service.add_rate_scale(p.clone());
        }
        for &(from, until) in &cfg.outages {
            loss.add_profile(Profile::window(from, until, 1.0, 0.0));
            service.add_rate_scale(Profile::window(from, until, 0.0, 1.0));
        }
        let mut delay = DelayStage::new(cfg.delay);
        for p in &cfg.delay_extra_ms {
            delay.add_extra_ms(p.clone());
        }
        let impair =
            (!cfg.impair.is_none()).then(|| ImpairStage::new(cfg.impair, cfg.seed ^ 0x494d_5041_4952));
        Link {
            inner: Chain::new(Chain::new(loss, service), delay),
            impair,
            scratch: Vec::new(),
            stats: LinkStats::default(),
            mtu: {
                let mut m = cfg.mtu.clone();
                m.sort_by_key(|&(t, _)| t);
                m
            },
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> LinkStats {
        let mut s = self.stats;
        s.dropped_loss = self.inner.first.first.dropped();
        s.dropped_queue = self.inner.first.second.dropped();
        if let Some(i) = &self.impair {
            let i = i.stats();
            (s.reordered, s.duplicated, s.corrupted) = (i.reordered, i.duplicated, i.corrupted);
        }
        s
    }

    /// The bottleneck queue and its trace (for queue-length sampling).
    pub fn bottleneck(&self) -> &TraceStage {
        &self.inner.first.second
    }

    /// Packets inside the link (queued, being served or in the delay line).
    pub fn in_flight(&self) -> u64 {
        let s = self.stats();
        (s.arrived_packets + s.duplicated)
            .saturating_sub(s.delivered_packets + s.dropped_loss + s.dropped_queue + s.dropped_mtu)
    }

    /// The MTU in force at `now`, if any.
    pub fn mtu(&self, now: Duration) -> Option<u32> {
        self.mtu.iter().take_while(|&&(t, _)| t <= now).last().map(|&(_, m)| m)
    }
}

impl Stage for Link {
    fn enqueue(&mut self, now: Duration, pkt: Packet) {
        self.stats.arrived_packets += 1;
        self.stats.arrived_bytes += u64::from(pkt.size);
        if self.mtu(now).is_some_and(|m| pkt.size > m) {
            self.stats.dropped_mtu += 1;
            return;
        }
        self.inner.enqueue(now, pkt);
    }

    fn dequeue_ready(&mut self, now: Duration, out: &mut Vec<Packet>) {
        let start = out.len();
        match &mut self.impair {
            None => self.inner.dequeue_ready(now, out),
            Some(impair) => {
                self.inner.dequeue_ready(now, &mut self.scratch);
                for p in self.scratch.drain(..) {
                    impair.enqueue(p.time, p);
                }
                impair.dequeue_ready(now, out);
            }
        }
        for p in out.iter().skip(start) {
            self.stats.delivered_packets += 1;
            self.stats.delivered_bytes += u64::from(p.size);
        }
    }

    fn next_wakeup(&self) -> Option<Duration> {
        let held = self.impair.as_ref().and_then(|i| i.next_wakeup());
        match (self.inner.next_wakeup(), held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Both directions of one path. Uplink leaves the emulated host (client) towards the
/// Internet (server); downlink comes back.
#[derive(Debug, Clone)]
pub struct PathLinks {
    /// Path name from the scenario.
    pub name: String,
    /// Client -> server.
    pub up: Link,
    /// Server -> client.
    pub down: Link,
}

impl PathLinks {
    /// Earliest wake-up of either direction.
    pub fn next_wakeup(&self) -> Option<Duration> {
        match (self.up.next_wakeup(), self.down.next_wakeup()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A path through the network: links in series, by index into a list of
/// [`PathLinks`]. Uplink packets cross `links` in order (the first is the client's
/// access link), downlink packets in reverse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Path name.
    pub name: String,
    /// Link indices, client side first.
    pub links: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_over_the_mtu_in_force_are_dropped() {
        let mut cfg = LinkConfig::new(Arc::new(Trace::constant(1)));
        cfg.mtu = vec![(Duration::from_millis(50), 1300), (Duration::ZERO, 1500)];
        let mut link = Link::new(&cfg);
        link.enqueue(Duration::from_millis(1), Packet::sized(1500, 1));
        link.enqueue(Duration::from_millis(1), Packet::sized(1501, 2));
        link.enqueue(Duration::from_millis(60), Packet::sized(1301, 3));
        link.enqueue(Duration::from_millis(60), Packet::sized(1300, 4));
        let mut out = Vec::new();
        link.dequeue_ready(Duration::from_secs(1), &mut out);
        let tags: Vec<u64> = out.iter().map(|p| p.tag).collect();
        assert_eq!(tags, [1, 4]);
        assert_eq!(link.stats().dropped_mtu, 2);
        assert_eq!(link.in_flight(), 0);
    }

    #[test]
    fn composed_link_timing_and_outage() {
        let mut cfg = LinkConfig::new(Arc::new(Trace::constant(1)));
        cfg.delay = Duration::from_millis(20);
        cfg.outages = vec![(Duration::from_millis(100), Duration::from_millis(200))];
        let mut link = Link::new(&cfg);
        link.enqueue(Duration::from_micros(10_300), Packet::sized(1500, 1));
        // Served at 11 ms, delivered 20 ms later.
        assert_eq!(link.next_wakeup(), Some(Duration::from_millis(11)));
        let mut out = Vec::new();
        link.dequeue_ready(Duration::from_millis(30), &mut out);
        assert!(out.is_empty());
        assert_eq!(link.next_wakeup(), Some(Duration::from_millis(31)));
        link.dequeue_ready(Duration::from_millis(31), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].time, Duration::from_millis(31));
        for ms in 100..200 {
            link.enqueue(Duration::from_millis(ms), Packet::sized(100, ms));
        }
        link.enqueue(Duration::from_millis(200), Packet::sized(100, 0));
        link.dequeue_ready(Duration::from_millis(300), &mut out);
        let s = link.stats();
        assert_eq!(s.dropped_loss, 100);
        assert_eq!(s.delivered_packets, 2);
        assert_eq!(out[1].time, Duration::from_millis(221));
        assert_eq!(link.in_flight(), 0);
    }
}
