//! Packet impairments beyond loss, for robustness testing (netem's `reorder`,
//! `duplicate` and `corrupt`): each packet leaving the link may be held back so
//! that later ones overtake it, sent twice, or have one bit flipped. Seeded,
//! so a run is reproducible.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::stage::{Packet, Stage};

/// What may happen to each packet, with its probability.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Impairments {
    /// Probability that a packet is held back by `reorder_delay`.
    pub reorder: f64,
    /// How long a reordered packet is held back.
    pub reorder_delay: Duration,
    /// Probability that a packet is delivered twice.
    pub duplicate: f64,
    /// Probability that one random bit of a packet's contents is flipped.
    pub corrupt: f64,
}

impl Impairments {
    /// No impairment at all.
    pub fn is_none(&self) -> bool {
        self.reorder <= 0.0 && self.duplicate <= 0.0 && self.corrupt <= 0.0
    }

    /// Checks every probability is in [0, 1] and the delay is at most 10 s.
    pub fn validate(&self) -> Result<(), String> {
        for (name, p) in [("reorder", self.reorder), ("duplicate", self.duplicate), ("corrupt", self.corrupt)]
        {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{name} must be a probability in [0, 1], got {p}"));
            }
        }
        if self.reorder_delay > Duration::from_secs(10) {
            return Err(format!("reorder_ms must be in [0, 10000], got {:?}", self.reorder_delay));
        }
        Ok(())
    }
}

/// Counters of an [`ImpairStage`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImpairStats {
    /// Packets held back.
    pub reordered: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Packets with a flipped bit.
    pub corrupted: u64,
}

/// Applies [`Impairments`] to the packets passing through.
#[derive(Debug, Clone)]
pub struct ImpairStage {
    cfg: Impairments,
    rng: ChaCha8Rng,
    /// Packets on time, in departure order.
    on_time: std::collections::VecDeque<Packet>,
    /// Packets held back, sorted by departure time (stable for equal times).
    held: Vec<Packet>,
    stats: ImpairStats,
}

impl ImpairStage {
    /// A stage applying `cfg`, drawing from a generator seeded with `seed`.
    pub fn new(cfg: Impairments, seed: u64) -> ImpairStage {
        ImpairStage {
            cfg,
            rng: ChaCha8Rng::seed_from_u64(seed),
            on_time: Default::default(),
            held: Vec::new(),
            stats: ImpairStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> ImpairStats {
        self.stats
    }

    fn happens(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.gen::<f64>() < p
    }

    fn corrupt(&mut self, pkt: &mut Packet) {
        if pkt.data.is_empty() {
            return;
        }
        let bit = self.rng.gen_range(0..pkt.data.len() * 8);
        pkt.data[bit / 8] ^= 1 << (bit % 8);
        self.stats.corrupted += 1;
    }

    fn push(&mut self, now: Duration, mut pkt: Packet) {
        pkt.time = now;
        if self.happens(self.cfg.reorder) {
            pkt.time = now + self.cfg.reorder_delay;
            let at = self.held.partition_point(|p| p.time <= pkt.time);
            self.held.insert(at, pkt);
            self.stats.reordered += 1;
        } else {
            self.on_time.push_back(pkt);
        }
    }
}

impl Stage for ImpairStage {
    fn enqueue(&mut self, now: Duration, mut pkt: Packet) {
        if self.happens(self.cfg.corrupt) {
            self.corrupt(&mut pkt);
        }
        if self.happens(self.cfg.duplicate) {
            self.stats.duplicated += 1;
            self.push(now, pkt.clone());
        }
        self.push(now, pkt);
    }

    fn dequeue_ready(&mut self, now: Duration, out: &mut Vec<Packet>) {
        loop {
            let a = self.on_time.front().map(|p| p.time).filter(|&t| t <= now);
            let b = self.held.first().map(|p| p.time).filter(|&t| t <= now);
            let pkt = match (a, b) {
                (Some(a), Some(b)) if b < a => Some(self.held.remove(0)),
                (Some(_), _) => self.on_time.pop_front(),
                (None, Some(_)) => Some(self.held.remove(0)),
                (None, None) => None,
            };
            let Some(pkt) = pkt else { break };
            out.push(pkt);
        }
    }

    fn next_wakeup(&self) -> Option<Duration> {
        match (self.on_time.front(), self.held.first()) {
            (Some(a), Some(b)) => Some(a.time.min(b.time)),
            (a, b) => a.or(b).map(|p| p.time),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn run(cfg: Impairments, n: u64) -> (Vec<Packet>, ImpairStats) {
        let mut s = ImpairStage::new(cfg, 7);
        let mut out = Vec::new();
        for i in 0..n {
            s.enqueue(ms(i), Packet { data: vec![0; 100], size: 100, tag: i, time: ms(i), ecn: 0 });
            s.dequeue_ready(ms(i), &mut out);
        }
        s.dequeue_ready(ms(n + 1000), &mut out);
        assert_eq!(s.next_wakeup(), None);
        (out, s.stats())
    }

    #[test]
    fn no_impairment_passes_everything_in_order_at_once() {
        let (out, stats) = run(Impairments::default(), 100);
        assert_eq!(stats, ImpairStats::default());
        assert!(out.iter().enumerate().all(|(i, p)| p.tag == i as u64 && p.time == ms(i as u64)));
        assert!(out.iter().all(|p| p.data.iter().all(|&b| b == 0)));
    }

    #[test]
    fn reordered_packets_are_overtaken_and_arrive_late() {
        let cfg = Impairments { reorder: 0.2, reorder_delay: ms(30), ..Default::default() };
        let (out, stats) = run(cfg, 1000);
        assert_eq!(out.len(), 1000);
        assert!((120..280).contains(&stats.reordered), "{stats:?}");
        let late = out.iter().filter(|p| p.time == ms(p.tag) + ms(30)).count() as u64;
        assert_eq!(late, stats.reordered);
        assert!(out.windows(2).all(|w| w[0].time <= w[1].time), "departures out of time order");
        assert!(out.windows(2).any(|w| w[0].tag > w[1].tag), "nothing overtaken");
    }

    #[test]
    fn duplicates_and_corruption_are_counted_and_real() {
        let cfg = Impairments { duplicate: 0.1, corrupt: 0.05, ..Default::default() };
        let (out, stats) = run(cfg, 2000);
        assert_eq!(out.len() as u64, 2000 + stats.duplicated);
        assert!((140..260).contains(&stats.duplicated), "{stats:?}");
        let flipped = out.iter().filter(|p| p.data.iter().map(|b| b.count_ones()).sum::<u32>() == 1).count();
        // A corrupted packet that is then duplicated shows its flipped bit twice.
        assert!(flipped as u64 >= stats.corrupted && stats.corrupted > 50, "{flipped} vs {stats:?}");
    }

    #[test]
    fn same_seed_same_impairments() {
        let cfg = Impairments { reorder: 0.1, reorder_delay: ms(5), duplicate: 0.1, corrupt: 0.1 };
        let a = run(cfg, 500).0;
        let b = run(cfg, 500).0;
        assert_eq!(a, b);
    }

    #[test]
    fn out_of_range_values_are_refused() {
        assert!(Impairments { reorder: 1.5, ..Default::default() }.validate().is_err());
        assert!(Impairments { corrupt: -0.1, ..Default::default() }.validate().is_err());
        assert!(Impairments { reorder_delay: Duration::from_secs(11), ..Default::default() }
            .validate()
            .is_err());
        assert!(Impairments { duplicate: 0.5, ..Default::default() }.validate().is_ok());
    }
}
