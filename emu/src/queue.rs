//! Trace-driven service with its queue: Mahimahi's `mm-link` link queue, sans-IO.
//!
//! Semantics follow Mahimahi's `LinkQueue`: each trace line is an opportunity of
//! [`OPPORTUNITY_BYTES`]; at an opportunity queued packets are served FIFO until its
//! bytes are used up; a packet may span several opportunities and leaves at the
//! opportunity that carries its last byte; unused bytes are lost (no banking). Before a
//! packet is queued, every opportunity at or before the current millisecond is used up
//! first, so a packet arriving during millisecond `t` can only use opportunities after
//! `t`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::profile::Profile;
use crate::stage::{Packet, Stage};
use crate::trace::{Trace, OPPORTUNITY_BYTES};

/// Which packet a full queue drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueKind {
    /// Unlimited queue (Mahimahi's default `infinite`).
    #[default]
    Infinite,
    /// Drop the arriving packet when it does not fit (`droptail`).
    DropTail,
    /// Queue the arriving packet, then drop from the head until within limits
    /// (`drophead`).
    DropHead,
}

/// Queue discipline and limits (Mahimahi's `--downlink-queue=droptail
/// --downlink-queue-args=packets=N,bytes=B`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueConfig {
    /// Discipline.
    pub kind: QueueKind,
    /// Maximum packets queued (the packet being served is not counted, as in Mahimahi).
    pub packets: Option<u64>,
    /// Maximum bytes queued.
    pub bytes: Option<u64>,
}

impl QueueConfig {
    fn fits(&self, packets: u64, bytes: u64) -> bool {
        self.packets.is_none_or(|l| packets <= l) && self.bytes.is_none_or(|l| bytes <= l)
    }
}

/// A queue drained by a Mahimahi trace, optionally rate-scaled over time.
#[derive(Debug, Clone)]
pub struct TraceStage {
    trace: Arc<Trace>,
    queue_config: QueueConfig,
    /// Index (across repeats) of the next unused opportunity.
    next_index: u64,
    queue: VecDeque<Packet>,
    queue_bytes: u64,
    in_transit: Option<(Packet, u64)>,
    out: VecDeque<Packet>,
    rate_scale: Vec<Profile>,
    credit: f64,
    dropped: u64,
    dropped_bytes: u64,
}

fn whole_ms(t: Duration) -> u64 {
    u64::try_from(t.as_millis()).unwrap_or(u64::MAX)
}

impl TraceStage {
    /// A trace-driven link queue whose trace clock starts at time zero.
    pub fn new(trace: Arc<Trace>, queue_config: QueueConfig) -> TraceStage {
        TraceStage {
            trace,
            queue_config,
            next_index: 0,
            queue: VecDeque::new(),
            queue_bytes: 0,
            in_transit: None,
            out: VecDeque::new(),
            rate_scale: Vec::new(),
            credit: 0.0,
            dropped: 0,
            dropped_bytes: 0,
        }
    }

    /// Adds a rate-scale profile: at each opportunity the product of all profiles'
    /// values (1 where a profile has none yet) says how many opportunities it is worth.
    /// Fractions accumulate deterministically (0.5 keeps every other opportunity),
    /// 0 is an outage of service, 2 doubles each opportunity.
    pub fn add_rate_scale(&mut self, profile: Profile) {
        self.rate_scale.push(profile);
    }

    /// The trace.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Packets waiting (not counting the one partly sent).
    pub fn queued_packets(&self) -> usize {
        self.queue.len()
    }

    /// Bytes waiting (not counting the one partly sent).
    pub fn queued_bytes(&self) -> u64 {
        self.queue_bytes
    }

    /// Packets dropped by the queue limits.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Bytes dropped by the queue limits.
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped_bytes
    }

    fn scale_at(&self, t: Duration) -> f64 {
        self.rate_scale.iter().filter_map(|p| p.value_at(t)).map(|v| v.max(0.0)).product()
    }

    fn busy(&self) -> bool {
        self.in_transit.is_some() || !self.queue.is_empty()
    }

    /// Uses every opportunity at or before millisecond `now_ms`.
    fn rationalize(&mut self, now_ms: u64) {
        loop {
            let t = self.trace.opportunity_ms(self.next_index);
            if t > now_ms {
                return;
            }
            if !self.busy() {
                // Idle: the remaining opportunities up to now are wasted; jump over them.
                self.next_index = self.trace.first_index_after(now_ms).max(self.next_index);
                return;
            }
            self.next_index += 1;
            let at = Duration::from_millis(t);
            let uses = if self.rate_scale.is_empty() {
                1
            } else {
                self.credit += self.scale_at(at);
                let n = self.credit.floor();
                self.credit -= n;
                n as u64
            };
            for _ in 0..uses {
                self.serve(at);
            }
        }
    }

    fn serve(&mut self, at: Duration) {
        let mut left = OPPORTUNITY_BYTES;
        while left > 0 {
            let (mut pkt, remaining) = match self.in_transit.take() {
                Some(x) => x,
                None => match self.queue.pop_front() {
                    Some(p) => {
                        self.queue_bytes -= u64::from(p.size);
                        let size = u64::from(p.size);
                        (p, size)
                    }
                    None => return,
                },
            };
            let used = left.min(remaining);
            left -= used;
            if remaining == used {
                pkt.time = at;
                self.out.push_back(pkt);
            } else {
                self.in_transit = Some((pkt, remaining - used));
            }
        }
    }
}

impl Stage for TraceStage {
    fn enqueue(&mut self, now: Duration, pkt: Packet) {
        self.rationalize(whole_ms(now));
        let size = u64::from(pkt.size);
        let cfg = self.queue_config;
        match cfg.kind {
            QueueKind::Infinite => {}
            QueueKind::DropTail => {
                if !cfg.fits(self.queue.len() as u64 + 1, self.queue_bytes + size) {
                    self.dropped += 1;
                    self.dropped_bytes += size;
                    return;
                }
            }
            QueueKind::DropHead => {}
        }
        self.queue_bytes += size;
        self.queue.push_back(pkt);
        if cfg.kind == QueueKind::DropHead {
            while !cfg.fits(self.queue.len() as u64, self.queue_bytes) {
                match self.queue.pop_front() {
                    Some(p) => {
                        self.queue_bytes -= u64::from(p.size);
                        self.dropped += 1;
                        self.dropped_bytes += u64::from(p.size);
                    }
                    None => break,
                }
            }
        }
    }

    fn dequeue_ready(&mut self, now: Duration, out: &mut Vec<Packet>) {
        self.rationalize(whole_ms(now));
        out.extend(self.out.drain(..));
    }

    fn next_wakeup(&self) -> Option<Duration> {
        if let Some(p) = self.out.front() {
            return Some(p.time);
        }
        if self.busy() {
            return Some(Duration::from_millis(self.trace.opportunity_ms(self.next_index)));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn stage(text: &str, q: QueueConfig) -> TraceStage {
        TraceStage::new(Arc::new(Trace::parse("t", text).unwrap()), q)
    }

    fn drain(s: &mut TraceStage, now: Duration) -> Vec<(u64, Duration)> {
        let mut out = Vec::new();
        s.dequeue_ready(now, &mut out);
        out.into_iter().map(|p| (p.tag, p.time)).collect()
    }

    #[test]
    fn arrival_uses_only_later_opportunities() {
        let mut s = stage("5\n10\n", QueueConfig::default());
        // Arrives during ms 5: the opportunity at 5 is gone, the next is 10.
        s.enqueue(Duration::from_micros(5_900), Packet::sized(1500, 1));
        assert_eq!(s.next_wakeup(), Some(ms(10)));
        assert_eq!(drain(&mut s, ms(9)), vec![]);
        assert_eq!(drain(&mut s, ms(30)), vec![(1, ms(10))]);
        // Arrives during ms 34: uses the opportunity at 35 (5 in the fourth period).
        s.enqueue(Duration::from_micros(34_999), Packet::sized(100, 2));
        assert_eq!(drain(&mut s, ms(50)), vec![(2, ms(35))]);
    }

    #[test]
    fn packets_span_opportunities_and_bytes_are_not_banked() {
        // Opportunities every ms.
        let mut s = stage("1\n", QueueConfig::default());
        s.enqueue(ms(0), Packet::sized(3000, 1)); // needs 2 opportunities (1 and 2)
        s.enqueue(ms(0), Packet::sized(4, 2)); // fits in the 8 bytes left at ms 2
        s.enqueue(ms(0), Packet::sized(1504, 3)); // ms 3
        assert_eq!(drain(&mut s, ms(10)), vec![(1, ms(2)), (2, ms(2)), (3, ms(3))]);
        // Idle from 3 to 20: nothing banked, a 3000-byte packet still needs 2 slots.
        s.enqueue(ms(20), Packet::sized(3000, 4));
        assert_eq!(drain(&mut s, ms(30)), vec![(4, ms(22))]);
        // Several small packets share one opportunity.
        for i in 0..4 {
            s.enqueue(Duration::from_micros(40_500), Packet::sized(376, 10 + i));
        }
        s.enqueue(Duration::from_micros(40_500), Packet::sized(1, 99));
        assert_eq!(
            drain(&mut s, ms(50)),
            vec![(10, ms(41)), (11, ms(41)), (12, ms(41)), (13, ms(41)), (99, ms(42))]
        );
    }

    #[test]
    fn repeated_values_give_several_packets() {
        let mut s = stage("2\n2\n2\n4\n", QueueConfig::default());
        for i in 0..5 {
            s.enqueue(ms(0), Packet::sized(1500, i));
        }
        let got: Vec<Duration> = drain(&mut s, ms(100)).into_iter().map(|x| x.1).collect();
        assert_eq!(got, vec![ms(2), ms(2), ms(2), ms(4), ms(6)]);
    }

    #[test]
    fn droptail_and_drophead_limits() {
        let tail = QueueConfig { kind: QueueKind::DropTail, packets: Some(3), bytes: None };
        let mut s = stage("1000\n", tail);
        for i in 0..10 {
            s.enqueue(ms(1), Packet::sized(100, i));
        }
        assert_eq!(s.dropped(), 7);
        assert_eq!(s.queued_packets(), 3);
        let got: Vec<u64> = drain(&mut s, ms(1000)).into_iter().map(|x| x.0).collect();
        assert_eq!(got, vec![0, 1, 2]);

        let head = QueueConfig { kind: QueueKind::DropHead, packets: None, bytes: Some(250) };
        let mut s = stage("1000\n", head);
        for i in 0..10 {
            s.enqueue(ms(1), Packet::sized(100, i));
        }
        assert_eq!(s.dropped(), 8);
        assert_eq!(s.queued_bytes(), 200);
        let got: Vec<u64> = drain(&mut s, ms(1000)).into_iter().map(|x| x.0).collect();
        assert_eq!(got, vec![8, 9]);
    }

    #[test]
    fn rate_scale_halves_and_pauses() {
        let mut s = stage("1\n", QueueConfig::default());
        s.add_rate_scale(Profile::new(
            vec![(ms(0), 0.5), (ms(100), 0.0), (ms(200), 1.0)],
            crate::profile::Interp::Step,
        ));
        for i in 0..200 {
            s.enqueue(ms(0), Packet::sized(1504, i));
        }
        assert_eq!(drain(&mut s, ms(99)).len(), 49);
        assert_eq!(drain(&mut s, ms(199)).len(), 0);
        assert_eq!(drain(&mut s, ms(249)).len(), 50);
    }
}
