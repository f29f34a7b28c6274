//! Active queue management for the link queue: CoDel (RFC 8289) and PIE (RFC 8033),
//! with Mahimahi's parameter names (`target`, `interval`; `qdelay_ref`, `max_burst`,
//! all in milliseconds).
//!
//! CoDel decides when a packet leaves the queue (its sojourn time); PIE decides when a
//! packet arrives, with a drop probability it recomputes every 15 ms from the queueing
//! delay. Both read the time they are given, never a clock. With `ecn` on (our
//! extension of Mahimahi's arguments: `ecn=1`), an ECN-capable packet (ECT(0) or
//! ECT(1); a CE one stays CE) the discipline would drop is marked CE and sent on instead
//! (RFC 8289 §5; RFC 8033 §5.1: PIE only while its drop probability is at most 10%).

use std::collections::VecDeque;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::stage::Packet;
use crate::trace::OPPORTUNITY_BYTES;

/// Largest packet, for "the queue holds less than one packet" tests.
const MTU: u64 = OPPORTUNITY_BYTES;
/// PIE's update period, gains (per second of delay error) and decay (RFC 8033).
const PIE_T_UPDATE: Duration = Duration::from_millis(15);
const PIE_ALPHA: f64 = 0.125;
const PIE_BETA: f64 = 1.25;
const PIE_DECAY: f64 = 0.98;

/// CoDel settings (Mahimahi: `--*-queue=codel --*-queue-args=packets=N,target=MS,interval=MS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodelParams {
    /// Acceptable standing queue delay.
    pub target: Duration,
    /// Window over which the delay must stay above `target` before dropping starts.
    pub interval: Duration,
    /// Mark ECN-capable packets CE instead of dropping them.
    pub ecn: bool,
}

impl Default for CodelParams {
    /// RFC 8289's 5 ms / 100 ms.
    fn default() -> Self {
        CodelParams { target: Duration::from_millis(5), interval: Duration::from_millis(100), ecn: false }
    }
}

/// PIE settings (Mahimahi: `--*-queue=pie --*-queue-args=packets=N,qdelay_ref=MS,max_burst=MS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PieParams {
    /// Target queueing delay.
    pub qdelay_ref: Duration,
    /// Burst allowed through without drops after an idle, uncongested period.
    pub max_burst: Duration,
    /// Mark ECN-capable packets CE instead of dropping them while the drop
    /// probability is at most 10%.
    pub ecn: bool,
}

impl Default for PieParams {
    /// RFC 8033's 15 ms / 150 ms.
    fn default() -> Self {
        PieParams { qdelay_ref: Duration::from_millis(15), max_burst: Duration::from_millis(150), ecn: false }
    }
}

/// ECT(0), ECT(1) or already CE: the packet may be marked instead of dropped. A CE
/// packet is from an ECN-capable transport too, and stays CE (RFC 3168 §5), as Linux's
/// qdiscs treat it; dropping it would punish the flow twice for one congestion.
pub(crate) fn ecn_capable(p: &Packet) -> bool {
    p.ecn & 3 != 0
}

/// Marks `p` CE (congestion experienced).
pub(crate) fn mark_ce(p: &mut Packet) {
    p.ecn = 3;
}

/// A queued packet with its arrival time.
#[derive(Debug, Clone)]
pub(crate) struct Queued {
    pub(crate) arrived: Duration,
    pub(crate) pkt: Packet,
}

/// The FIFO behind every discipline, with its byte count.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fifo {
    q: VecDeque<Queued>,
    bytes: u64,
}

impl Fifo {
    pub(crate) fn push(&mut self, arrived: Duration, pkt: Packet) {
        self.bytes += u64::from(pkt.size);
        self.q.push_back(Queued { arrived, pkt });
    }

    pub(crate) fn pop(&mut self) -> Option<Queued> {
        let e = self.q.pop_front()?;
        self.bytes -= u64::from(e.pkt.size);
        Some(e)
    }

    pub(crate) fn len(&self) -> usize {
        self.q.len()
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// When the packet at the head arrived.
    pub(crate) fn head_arrival(&self) -> Option<Duration> {
        self.q.front().map(|e| e.arrived)
    }
}

/// CoDel's state (RFC 8289 §5).
#[derive(Debug, Clone)]
pub(crate) struct Codel {
    p: CodelParams,
    first_above: Option<Duration>,
    dropping: bool,
    count: u32,
    last_count: u32,
    drop_next: Duration,
}

impl Codel {
    pub(crate) fn new(p: CodelParams) -> Codel {
        Codel { p, first_above: None, dropping: false, count: 0, last_count: 0, drop_next: Duration::ZERO }
    }

    /// The next drop time: `interval / sqrt(count)` after `t`.
    fn control_law(&self, t: Duration) -> Duration {
        t + self.p.interval.div_f64(f64::from(self.count.max(1)).sqrt())
    }

    /// Pops the head and says whether it has been above target for an interval.
    fn pop_checked(&mut self, q: &mut Fifo, now: Duration) -> Option<(Queued, bool)> {
        let Some(e) = q.pop() else {
            self.first_above = None;
            return None;
        };
        let sojourn = now.saturating_sub(e.arrived);
        if sojourn < self.p.target || q.bytes() <= MTU {
            self.first_above = None;
            return Some((e, false));
        }
        match self.first_above {
            None => {
                self.first_above = Some(now + self.p.interval);
                Some((e, false))
            }
            Some(t) => Some((e, now >= t)),
        }
    }

    /// The packet to serve at `now`; packets CoDel drops go to `dropped`.
    pub(crate) fn dequeue(
        &mut self,
        q: &mut Fifo,
        now: Duration,
        dropped: &mut Vec<Packet>,
    ) -> Option<Packet> {
        let Some((mut e, mut ok_to_drop)) = self.pop_checked(q, now) else {
            self.dropping = false;
            return None;
        };
        if self.dropping {
            if !ok_to_drop {
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                self.count += 1;
                if self.p.ecn && ecn_capable(&e.pkt) {
                    // Marked and served: the next signal comes at the control law's pace.
                    mark_ce(&mut e.pkt);
                    self.drop_next = self.control_law(self.drop_next);
                    return Some(e.pkt);
                }
                dropped.push(e.pkt);
                match self.pop_checked(q, now) {
                    None => {
                        self.dropping = false;
                        return None;
                    }
                    Some((next, ok)) => {
                        e = next;
                        ok_to_drop = ok;
                    }
                }
                if ok_to_drop {
                    self.drop_next = self.control_law(self.drop_next);
                } else {
                    self.dropping = false;
                }
            }
        } else if ok_to_drop {
            let served = if self.p.ecn && ecn_capable(&e.pkt) {
                mark_ce(&mut e.pkt);
                Some(e)
            } else {
                dropped.push(e.pkt);
                self.pop_checked(q, now).map(|(next, _)| next)
            };
            self.dropping = true;
            // Re-entering soon after the last dropping state: resume near its rate.
            let delta = self.count.saturating_sub(self.last_count);
            let recent = now.saturating_sub(self.drop_next) < self.p.interval * 16;
            self.count = if delta > 1 && recent { delta } else { 1 };
            self.drop_next = self.control_law(now);
            self.last_count = self.count;
            e = served?;
        }
        Some(e.pkt)
    }
}

/// PIE's state (RFC 8033 §4-5).
#[derive(Debug, Clone)]
pub(crate) struct Pie {
    p: PieParams,
    prob: f64,
    qdelay_old: Duration,
    burst_left: Duration,
    next_update: Duration,
    rng: ChaCha8Rng,
}

impl Pie {
    pub(crate) fn new(p: PieParams, seed: u64) -> Pie {
        Pie {
            p,
            prob: 0.0,
            qdelay_old: Duration::ZERO,
            burst_left: p.max_burst,
            next_update: PIE_T_UPDATE,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// Current drop probability.
    pub(crate) fn probability(&self) -> f64 {
        self.prob
    }

    /// Runs every periodic update due at or before `now` on the queue as it is now.
    pub(crate) fn update_until(&mut self, q: &Fifo, now: Duration) {
        while self.next_update <= now {
            let t = self.next_update;
            let idle = q.is_empty() && self.prob == 0.0 && self.qdelay_old.is_zero();
            if idle && self.burst_left == self.p.max_burst {
                // Nothing can change until a packet arrives: skip the idle updates.
                let periods = (now - t).as_nanos() / PIE_T_UPDATE.as_nanos() + 1;
                self.next_update = t + PIE_T_UPDATE * u32::try_from(periods).unwrap_or(u32::MAX);
                return;
            }
            let qdelay = q.head_arrival().map_or(Duration::ZERO, |a| t.saturating_sub(a));
            self.update(qdelay);
            self.next_update += PIE_T_UPDATE;
        }
    }

    fn update(&mut self, qdelay: Duration) {
        let (cur, old, target) =
            (qdelay.as_secs_f64(), self.qdelay_old.as_secs_f64(), self.p.qdelay_ref.as_secs_f64());
        let mut delta = PIE_ALPHA * (cur - target) + PIE_BETA * (cur - old);
        // Auto-tuning (§5.2): small probabilities move in small steps.
        let scale = match self.prob {
            p if p < 1e-6 => 1.0 / 2048.0,
            p if p < 1e-5 => 1.0 / 512.0,
            p if p < 1e-4 => 1.0 / 128.0,
            p if p < 1e-3 => 1.0 / 32.0,
            p if p < 1e-2 => 1.0 / 8.0,
            p if p < 1e-1 => 1.0 / 2.0,
            _ => 1.0,
        };
        delta *= scale;
        if self.prob >= 0.1 && delta > 0.02 {
            delta = 0.02;
        }
        self.prob += delta;
        if qdelay.is_zero() && self.qdelay_old.is_zero() {
            self.prob *= PIE_DECAY;
        }
        self.prob = self.prob.clamp(0.0, 1.0);
        self.burst_left = self.burst_left.saturating_sub(PIE_T_UPDATE);
        let half = self.p.qdelay_ref / 2;
        if self.prob == 0.0 && qdelay < half && self.qdelay_old < half && self.burst_left.is_zero() {
            self.burst_left = self.p.max_burst;
        }
        self.qdelay_old = qdelay;
    }

    /// Whether to drop a packet arriving at a queue of `q` (§4.1).
    /// Whether a packet PIE picked to drop is marked instead, if it is
    /// ECN-capable (RFC 8033 §5.1: only while the probability is at most 10%).
    pub(crate) fn marks(&self) -> bool {
        self.p.ecn && self.prob <= 0.1
    }

    pub(crate) fn drop_on_arrival(&mut self, q: &Fifo) -> bool {
        if !self.burst_left.is_zero() {
            return false;
        }
        if (self.qdelay_old < self.p.qdelay_ref / 2 && self.prob < 0.2) || q.bytes() <= 2 * MTU {
            return false;
        }
        self.rng.gen::<f64>() < self.prob
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn fill(q: &mut Fifo, n: u64, arrived: Duration) {
        for i in 0..n {
            q.push(arrived, Packet::sized(1500, i));
        }
    }

    #[test]
    fn codel_leaves_short_queues_alone() {
        let mut c = Codel::new(CodelParams::default());
        let mut q = Fifo::default();
        let mut dropped = Vec::new();
        // A packet every ms, each served 2 ms after it arrived: below target forever.
        for t in 0..2000 {
            q.push(ms(t), Packet::sized(1500, t));
            if t >= 2 {
                assert!(c.dequeue(&mut q, ms(t), &mut dropped).is_some());
            }
        }
        assert!(dropped.is_empty());
    }

    #[test]
    fn codel_drops_after_an_interval_above_target_then_faster() {
        let mut c = Codel::new(CodelParams::default());
        let mut q = Fifo::default();
        let mut dropped = Vec::new();
        fill(&mut q, 1000, ms(0));
        // Sojourn is 50 ms and more: above target. First check at 50 ms starts the
        // interval; nothing is dropped before 150 ms.
        let mut t = 50;
        while t < 150 {
            c.dequeue(&mut q, ms(t), &mut dropped);
            t += 1;
        }
        assert!(dropped.is_empty(), "dropped before an interval passed");
        c.dequeue(&mut q, ms(150), &mut dropped);
        assert_eq!(dropped.len(), 1);
        // Then the drop spacing shrinks as interval / sqrt(count).
        let mut drop_times = vec![150u64];
        for t in 151..700 {
            let before = dropped.len();
            c.dequeue(&mut q, ms(t), &mut dropped);
            if dropped.len() > before {
                drop_times.push(t);
            }
        }
        let gaps: Vec<u64> = drop_times.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.len() >= 4, "{drop_times:?}");
        assert_eq!(gaps[0], 100);
        assert!(gaps[0] > gaps[1] && gaps[1] > gaps[3], "gaps should shrink: {gaps:?}");
    }

    /// With `ecn`, CoDel marks ECN-capable packets where it would drop them,
    /// at the same times; Not-ECT packets are still dropped.
    #[test]
    fn codel_marks_ecn_capable_packets_instead_of_dropping() {
        let run = |ecn: u8| {
            let mut c = Codel::new(CodelParams { ecn: true, ..CodelParams::default() });
            let mut q = Fifo::default();
            for i in 0..1000 {
                q.push(ms(0), Packet { ecn, ..Packet::sized(1500, i) });
            }
            let (mut dropped, mut marked) = (Vec::new(), Vec::new());
            for t in 50..700 {
                if let Some(p) = c.dequeue(&mut q, ms(t), &mut dropped) {
                    if p.ecn == 3 {
                        marked.push(t);
                    }
                }
            }
            (dropped.len(), marked)
        };
        let (dropped, marked) = run(2);
        assert_eq!(dropped, 0, "ECT(0) packets are marked, not dropped");
        assert_eq!(marked.first(), Some(&150), "first mark after one interval above target");
        let gaps: Vec<u64> = marked.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.len() >= 4 && gaps[0] == 100 && gaps[0] > gaps[3],
            "marks follow the control law: {gaps:?}"
        );
        let (dropped, _) = run(3);
        assert_eq!(dropped, 0, "CE packets stay CE, not dropped");
        let (dropped, marked) = run(0);
        assert!(dropped >= 5 && marked.is_empty(), "Not-ECT packets are dropped: {dropped}");
    }

    /// PIE marks instead of dropping only while its probability is at most 10%.
    #[test]
    fn pie_marks_only_at_low_probability() {
        let mut p = Pie::new(PieParams { ecn: true, ..PieParams::default() }, 1);
        let mut q = Fifo::default();
        fill(&mut q, 100, ms(0));
        let mut t = 150;
        while p.probability() == 0.0 || p.burst_left > Duration::ZERO {
            t += 15;
            p.update_until(&q, ms(t));
        }
        assert!(p.probability() <= 0.1 && p.marks(), "{}", p.probability());
        for _ in 0..200 {
            t += 15;
            p.update_until(&q, ms(t));
        }
        assert!(p.probability() > 0.1 && !p.marks(), "{}", p.probability());
    }

    #[test]
    fn pie_probability_rises_with_queue_delay() {
        let mut p = Pie::new(PieParams::default(), 1);
        let mut q = Fifo::default();
        fill(&mut q, 100, ms(0));
        let mut last = 0.0;
        let mut rising = 0;
        for t in (15..=600).step_by(15) {
            p.update_until(&q, ms(t));
            if p.probability() > last {
                rising += 1;
            }
            last = p.probability();
        }
        // The head is ever older (delay grows past qdelay_ref): the probability keeps rising.
        assert!(rising >= 35, "rose in {rising} of 40 updates");
        assert!(last > 0.05, "p = {last}");
        // A queue 5 ms old (below the 15 ms reference) pulls it back down.
        let mut q2 = Fifo::default();
        let before = p.probability();
        for t in (615..=1500).step_by(15) {
            q2 = Fifo::default();
            fill(&mut q2, 10, ms(t - 5));
            p.update_until(&q2, ms(t));
        }
        assert!(p.probability() < before / 2.0, "{} vs {before}", p.probability());
        // Drops follow the probability (above it the queue must hold > 2 packets).
        assert!(!q2.is_empty());
    }

    #[test]
    fn pie_lets_a_burst_through_and_decays_when_idle() {
        let mut p = Pie::new(PieParams::default(), 1);
        let mut q = Fifo::default();
        fill(&mut q, 100, ms(0));
        // Within max_burst (150 ms) nothing is dropped, however long the queue.
        for t in (15..150).step_by(15) {
            p.update_until(&q, ms(t));
            assert!(!p.drop_on_arrival(&q));
        }
        for t in (150..2000).step_by(15) {
            p.update_until(&q, ms(t));
        }
        let high = p.probability();
        assert!(high > 0.5, "{high}");
        let drops = (0..1000).filter(|_| p.drop_on_arrival(&q)).count();
        assert!((drops as f64 - high * 1000.0).abs() < 60.0, "{drops} drops at p = {high}");
        // Empty queue: the probability decays, and a long idle gap costs no work.
        let empty = Fifo::default();
        p.update_until(&empty, ms(100_000));
        assert!(p.probability() < 0.01, "{}", p.probability());
        p.update_until(&empty, ms(1_000_000_000));
        assert_eq!(p.probability(), 0.0);
    }
}
