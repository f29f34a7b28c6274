//! Trace-driven service with its queue: Mahimahi's `mm-link` link queue, sans-IO.
//!
//! Semantics follow Mahimahi's `LinkQueue`: each trace line is an opportunity of
//! [`OPPORTUNITY_BYTES`]; at an opportunity queued packets are served FIFO until its
//! bytes are used up; a packet may span several opportunities and leaves at the
//! opportunity that carries its last byte; unused bytes are lost (no banking). Before a
//! packet is queued, every opportunity at or before the current millisecond is used up
//! first, so a packet arriving during millisecond `t` can only use opportunities after
//! `t`.
//!
//! Disciplines: infinite, droptail, drophead (limits in packets and/or bytes), and the
//! AQMs CoDel and PIE ([`crate::aqm`]), which may also have a packet/byte limit (tail
//! drop at the limit, as in Mahimahi).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::aqm::{ecn_capable, mark_ce, Codel, CodelParams, Fifo, Pie, PieParams};
use crate::profile::Profile;
use crate::stage::{Packet, Stage};
use crate::trace::{Trace, OPPORTUNITY_BYTES};

/// The queue discipline: which packet a full queue drops, or an AQM.
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
    /// CoDel (`codel`): drops at dequeue once the sojourn time stayed above target for
    /// an interval.
    CoDel(CodelParams),
    /// PIE (`pie`): drops at enqueue with a probability driven by the queueing delay.
    Pie(PieParams),
}

impl QueueKind {
    /// Mahimahi's name of the discipline.
    pub fn name(&self) -> &'static str {
        match self {
            QueueKind::Infinite => "infinite",
            QueueKind::DropTail => "droptail",
            QueueKind::DropHead => "drophead",
            QueueKind::CoDel(_) => "codel",
            QueueKind::Pie(_) => "pie",
        }
    }
}

/// Queue discipline and limits (Mahimahi's `--downlink-queue=droptail
/// --downlink-queue-args=packets=N,bytes=B`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueConfig {
    /// Discipline.
    pub kind: QueueKind,
    /// Maximum packets queued (the packet being served is not counted, as in Mahimahi).
    /// Optional for CoDel and PIE (tail drop at the limit).
    pub packets: Option<u64>,
    /// Maximum bytes queued.
    pub bytes: Option<u64>,
}

impl QueueConfig {
    fn fits(&self, packets: u64, bytes: u64) -> bool {
        self.packets.is_none_or(|l| packets <= l) && self.bytes.is_none_or(|l| bytes <= l)
    }
}

/// Queue arguments as Mahimahi's `--*-queue-args` and scenario files give them
/// (times in milliseconds); [`QueueArgs::build`] checks them against the discipline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueArgs {
    /// `packets=N`.
    pub packets: Option<u64>,
    /// `bytes=N`.
    pub bytes: Option<u64>,
    /// CoDel `target=MS`.
    pub target: Option<u64>,
    /// CoDel `interval=MS`.
    pub interval: Option<u64>,
    /// PIE `qdelay_ref=MS`.
    pub qdelay_ref: Option<u64>,
    /// PIE `max_burst=MS`.
    pub max_burst: Option<u64>,
    /// CoDel / PIE `ecn=1`: mark ECN-capable packets CE instead of dropping
    /// them (0: drop, the default).
    pub ecn: Option<u64>,
}

impl QueueArgs {
    /// Sets argument `name` (Mahimahi's names) to `value`.
    pub fn set(&mut self, name: &str, value: u64) -> Result<(), String> {
        let slot = match name {
            "packets" => &mut self.packets,
            "bytes" => &mut self.bytes,
            "target" => &mut self.target,
            "interval" => &mut self.interval,
            "qdelay_ref" => &mut self.qdelay_ref,
            "max_burst" => &mut self.max_burst,
            "ecn" if value > 1 => return Err(format!("ecn is 0 or 1, got {value}")),
            "ecn" => &mut self.ecn,
            other => {
                return Err(format!(
                    "unknown queue argument {other:?} (packets, bytes; codel: target, interval; pie: qdelay_ref, max_burst; codel and pie: ecn)"
                ))
            }
        };
        *slot = Some(value);
        Ok(())
    }

    /// The queue of discipline `kind` (`infinite`, `droptail`, `drophead`, `codel`,
    /// `pie`) with these arguments; unset AQM times take the RFC defaults.
    pub fn build(&self, kind: &str) -> Result<QueueConfig, String> {
        let ms = |name: &str, v: Option<u64>, min: u64| -> Result<Option<Duration>, String> {
            match v {
                Some(x) if x < min => Err(format!("{kind} {name} must be at least {min} ms, got {x}")),
                Some(x) if x > 60_000 => Err(format!("{kind} {name} must be at most 60000 ms, got {x}")),
                v => Ok(v.map(Duration::from_millis)),
            }
        };
        let has_codel = self.target.is_some() || self.interval.is_some();
        let has_pie = self.qdelay_ref.is_some() || self.max_burst.is_some();
        let has_limit = self.packets.is_some() || self.bytes.is_some();
        let kind_v = match kind {
            "infinite" if has_limit => return Err("an infinite queue takes no packets/bytes limit".into()),
            "infinite" => QueueKind::Infinite,
            "droptail" | "drophead" if !has_limit => {
                return Err(format!("{kind} needs a limit: packets=N and/or bytes=N"))
            }
            "droptail" => QueueKind::DropTail,
            "drophead" => QueueKind::DropHead,
            "codel" => {
                let d = CodelParams::default();
                QueueKind::CoDel(CodelParams {
                    target: ms("target", self.target, 1)?.unwrap_or(d.target),
                    interval: ms("interval", self.interval, 1)?.unwrap_or(d.interval),
                    ecn: self.ecn == Some(1),
                })
            }
            "pie" => {
                let d = PieParams::default();
                QueueKind::Pie(PieParams {
                    qdelay_ref: ms("qdelay_ref", self.qdelay_ref, 1)?.unwrap_or(d.qdelay_ref),
                    max_burst: ms("max_burst", self.max_burst, 0)?.unwrap_or(d.max_burst),
                    ecn: self.ecn == Some(1),
                })
            }
            other => {
                return Err(format!(
                    "unknown queue type {other:?} (infinite, droptail, drophead, codel, pie)"
                ))
            }
        };
        if has_codel && !matches!(kind_v, QueueKind::CoDel(_)) {
            return Err(format!("target/interval are CoDel arguments, not {kind}"));
        }
        if has_pie && !matches!(kind_v, QueueKind::Pie(_)) {
            return Err(format!("qdelay_ref/max_burst are PIE arguments, not {kind}"));
        }
        if self.ecn.is_some() && !matches!(kind_v, QueueKind::CoDel(_) | QueueKind::Pie(_)) {
            return Err(format!("ecn is a CoDel and PIE argument, not {kind}"));
        }
        if self.packets == Some(0) || self.bytes == Some(0) {
            return Err("a queue limit of 0 would drop everything".into());
        }
        Ok(QueueConfig { kind: kind_v, packets: self.packets, bytes: self.bytes })
    }
}

/// The AQM state of a queue, if its discipline has one.
#[derive(Debug, Clone)]
enum Aqm {
    None,
    Codel(Box<Codel>),
    Pie(Box<Pie>),
}

impl Aqm {
    fn new(kind: QueueKind, seed: u64) -> Aqm {
        match kind {
            QueueKind::CoDel(p) => Aqm::Codel(Box::new(Codel::new(p))),
            QueueKind::Pie(p) => Aqm::Pie(Box::new(Pie::new(p, seed))),
            _ => Aqm::None,
        }
    }
}

/// A queue drained by a Mahimahi trace, optionally rate-scaled over time.
#[derive(Debug, Clone)]
pub struct TraceStage {
    trace: Arc<Trace>,
    queue_config: QueueConfig,
    /// Index (across repeats) of the next unused opportunity.
    next_index: u64,
    queue: Fifo,
    aqm: Aqm,
    /// Scratch for packets CoDel drops while serving.
    aqm_dropped: Vec<Packet>,
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
            queue: Fifo::default(),
            aqm: Aqm::new(queue_config.kind, 0),
            aqm_dropped: Vec::new(),
            in_transit: None,
            out: VecDeque::new(),
            rate_scale: Vec::new(),
            credit: 0.0,
            dropped: 0,
            dropped_bytes: 0,
        }
    }

    /// Seeds the random drops of PIE (other disciplines are deterministic). Call before
    /// the first packet.
    pub fn set_seed(&mut self, seed: u64) {
        self.aqm = Aqm::new(self.queue_config.kind, seed);
    }

    /// PIE's current drop probability (`None` for other disciplines).
    pub fn pie_probability(&self) -> Option<f64> {
        match &self.aqm {
            Aqm::Pie(p) => Some(p.probability()),
            _ => None,
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
        self.queue.bytes()
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

    /// PIE's periodic updates due by `t`, on the queue as it is.
    fn aqm_tick(&mut self, t: Duration) {
        if let Aqm::Pie(p) = &mut self.aqm {
            p.update_until(&self.queue, t);
        }
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
            self.aqm_tick(at);
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
                None => match self.next_to_serve(at) {
                    Some(p) => {
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

impl TraceStage {
    /// The head packet to start serving at `at` (CoDel may drop some first).
    fn next_to_serve(&mut self, at: Duration) -> Option<Packet> {
        match &mut self.aqm {
            Aqm::Codel(c) => {
                let p = c.dequeue(&mut self.queue, at, &mut self.aqm_dropped);
                for d in self.aqm_dropped.drain(..) {
                    self.dropped += 1;
                    self.dropped_bytes += u64::from(d.size);
                }
                p
            }
            _ => self.queue.pop().map(|e| e.pkt),
        }
    }

    fn drop_arrival(&mut self, size: u64) {
        self.dropped += 1;
        self.dropped_bytes += size;
    }
}

impl Stage for TraceStage {
    fn enqueue(&mut self, now: Duration, mut pkt: Packet) {
        self.rationalize(whole_ms(now));
        self.aqm_tick(now);
        let size = u64::from(pkt.size);
        let cfg = self.queue_config;
        let over_limit = !cfg.fits(self.queue.len() as u64 + 1, self.queue.bytes() + size);
        match cfg.kind {
            QueueKind::Infinite | QueueKind::DropHead => {}
            QueueKind::DropTail | QueueKind::CoDel(_) if over_limit => return self.drop_arrival(size),
            QueueKind::DropTail | QueueKind::CoDel(_) => {}
            QueueKind::Pie(_) => {
                let (random, marks) = match &mut self.aqm {
                    Aqm::Pie(p) => (p.drop_on_arrival(&self.queue), p.marks()),
                    _ => (false, false),
                };
                if random && !over_limit && marks && ecn_capable(&pkt) {
                    mark_ce(&mut pkt);
                } else if over_limit || random {
                    return self.drop_arrival(size);
                }
            }
        }
        self.queue.push(now, pkt);
        if cfg.kind == QueueKind::DropHead {
            while !cfg.fits(self.queue.len() as u64, self.queue.bytes()) {
                match self.queue.pop() {
                    Some(e) => self.drop_arrival(u64::from(e.pkt.size)),
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

#[cfg(test)]
mod args_tests {
    use super::*;

    fn build(kind: &str, items: &[(&str, u64)]) -> Result<QueueConfig, String> {
        let mut a = QueueArgs::default();
        for (k, v) in items {
            a.set(k, *v)?;
        }
        a.build(kind)
    }

    #[test]
    fn aqm_arguments() {
        let c = build("codel", &[("packets", 100), ("target", 5), ("interval", 100)]).unwrap();
        assert_eq!(c.packets, Some(100));
        assert_eq!(
            c.kind,
            QueueKind::CoDel(CodelParams {
                target: Duration::from_millis(5),
                interval: Duration::from_millis(100),
                ecn: false
            })
        );
        let p = build("pie", &[("packets", 200), ("qdelay_ref", 20), ("max_burst", 0)]).unwrap();
        assert_eq!(
            p.kind,
            QueueKind::Pie(PieParams {
                qdelay_ref: Duration::from_millis(20),
                max_burst: Duration::ZERO,
                ecn: false
            })
        );
        // Unset times take the RFC defaults; no limit is allowed for AQMs.
        assert_eq!(build("codel", &[]).unwrap().kind, QueueKind::CoDel(CodelParams::default()));
        assert_eq!(build("pie", &[]).unwrap().kind.name(), "pie");
    }

    #[test]
    fn bad_queue_arguments_are_refused() {
        let err = |kind: &str, items: &[(&str, u64)]| build(kind, items).unwrap_err();
        assert!(err("codel", &[("target", 0)]).contains("target must be at least 1 ms"));
        assert!(err("codel", &[("interval", 100_000)]).contains("at most 60000"));
        assert!(err("codel", &[("qdelay_ref", 5)]).contains("PIE arguments"));
        assert!(err("pie", &[("target", 5)]).contains("CoDel arguments"));
        assert!(err("droptail", &[("packets", 10), ("interval", 5)]).contains("CoDel arguments"));
        assert!(err("pie", &[("qdelay_ref", 0)]).contains("qdelay_ref must be at least 1 ms"));
        assert!(err("droptail", &[]).contains("needs a limit"));
        assert!(err("infinite", &[("packets", 3)]).contains("no packets/bytes limit"));
        assert!(err("codel", &[("packets", 0)]).contains("limit of 0"));
        assert!(err("red", &[]).contains("unknown queue type"));
        assert!(QueueArgs::default().set("red", 1).unwrap_err().contains("unknown queue argument"));
        assert!(QueueArgs::default().set("ecn", 2).unwrap_err().contains("ecn is 0 or 1"));
        assert!(err("droptail", &[("packets", 10), ("ecn", 1)]).contains("CoDel and PIE"));
        assert!(matches!(build("codel", &[("ecn", 1)]).unwrap().kind, QueueKind::CoDel(p) if p.ecn));
        assert!(matches!(build("pie", &[("ecn", 0)]).unwrap().kind, QueueKind::Pie(p) if !p.ecn));
    }
}

#[cfg(test)]
mod aqm_tests {
    //! The AQMs inside the trace-driven queue, against droptail, with a Reno-like
    //! window sender: ACKs come back a fixed 20 ms after delivery, the window grows by
    //! one packet per window and halves (at most once per RTT) when the queue drops.
    use super::*;
    use crate::aqm::{CodelParams, PieParams};

    const BASE_RTT_MS: u64 = 20;

    struct Run {
        /// Sojourn + service time of each delivered packet over the last half, ms.
        delays_ms: Vec<u64>,
        delivered: u64,
        dropped: u64,
        max_pie_p: f64,
    }

    fn saturate(kind: QueueKind, packets: Option<u64>, secs: u64) -> Run {
        // 12 Mbit/s: one 1500-byte packet per ms.
        let mut s = TraceStage::new(
            Arc::new(Trace::parse("t", "1\n").unwrap()),
            QueueConfig { kind, packets, bytes: None },
        );
        s.set_seed(7);
        let mut cwnd = 2.0f64;
        let mut in_flight = 0u64;
        let mut acks: VecDeque<u64> = VecDeque::new(); // due times of ACKs, ms
        let mut last_cut = 0u64;
        let mut seen_drops = 0u64;
        let mut run = Run { delays_ms: Vec::new(), delivered: 0, dropped: 0, max_pie_p: 0.0 };
        let mut out = Vec::new();
        let mut tag = 0u64;
        for t in 0..secs * 1000 {
            let now = Duration::from_millis(t);
            while acks.front().is_some_and(|&a| a <= t) {
                acks.pop_front();
                in_flight -= 1;
                cwnd += 1.0 / cwnd;
            }
            while (in_flight as f64) < cwnd.floor() {
                // The tag carries the send time.
                s.enqueue(now, Packet::sized(1500, t));
                tag += 1;
                in_flight += 1;
                if s.dropped() > seen_drops {
                    seen_drops = s.dropped();
                    in_flight -= 1;
                    if t >= last_cut + BASE_RTT_MS {
                        cwnd = (cwnd / 2.0).max(2.0);
                        last_cut = t;
                    }
                }
            }
            out.clear();
            s.dequeue_ready(now, &mut out);
            // CoDel drops at dequeue: the sender learns of them here.
            let new_drops = s.dropped() - seen_drops;
            if new_drops > 0 {
                seen_drops = s.dropped();
                in_flight -= new_drops;
                if t >= last_cut + BASE_RTT_MS {
                    cwnd = (cwnd / 2.0).max(2.0);
                    last_cut = t;
                }
            }
            for p in &out {
                run.delivered += 1;
                acks.push_back(t + BASE_RTT_MS);
                if t >= secs * 500 {
                    run.delays_ms.push(t - p.tag);
                }
            }
            run.max_pie_p = run.max_pie_p.max(s.pie_probability().unwrap_or(0.0));
        }
        assert!(tag > 0);
        run.dropped = s.dropped();
        run
    }

    fn mean(v: &[u64]) -> f64 {
        v.iter().sum::<u64>() as f64 / v.len().max(1) as f64
    }

    #[test]
    fn codel_keeps_the_standing_queue_near_target_where_droptail_bloats() {
        let tail = saturate(QueueKind::DropTail, Some(150), 30);
        let codel = saturate(QueueKind::CoDel(CodelParams::default()), Some(150), 30);
        let (dt, dc) = (mean(&tail.delays_ms), mean(&codel.delays_ms));
        println!(
            "droptail(150): mean delay {dt:.1} ms, {} delivered, {} dropped; codel: {dc:.1} ms, {} delivered, {} dropped",
            tail.delivered, tail.dropped, codel.delivered, codel.dropped
        );
        assert!(dt > 60.0 && tail.dropped > 0, "droptail should fill its queue: {dt:.1} ms");
        assert!(dc < 25.0, "codel standing delay {dc:.1} ms, target 5 ms");
        assert!(codel.dropped > 0);
        // And the link stays busy: CoDel does not starve it.
        assert!(codel.delivered as f64 > 0.9 * tail.delivered as f64);
    }

    #[test]
    fn pie_controls_delay_around_its_reference() {
        let pie = saturate(QueueKind::Pie(PieParams::default()), Some(150), 30);
        let tail = saturate(QueueKind::DropTail, Some(150), 30);
        let d = mean(&pie.delays_ms);
        println!(
            "pie: mean delay {d:.1} ms, max p {:.4}, {} delivered, {} dropped",
            pie.max_pie_p, pie.delivered, pie.dropped
        );
        assert!(pie.max_pie_p > 0.0);
        assert!(d < 60.0, "pie mean delay {d:.1} ms, reference 15 ms");
        assert!(pie.delivered as f64 > 0.9 * tail.delivered as f64);
    }
}
