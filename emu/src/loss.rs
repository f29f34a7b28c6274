//! Random loss (`mm-loss`): Bernoulli and Gilbert-Elliott models, seeded.

use std::collections::VecDeque;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::profile::Profile;
use crate::stage::{Packet, Stage};

/// A random loss process, drawn once per packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossModel {
    /// No random loss.
    None,
    /// Independent loss with probability `p` (Mahimahi's `mm-loss`).
    Bernoulli {
        /// Loss probability in [0, 1].
        p: f64,
    },
    /// Two-state Markov (Gilbert-Elliott) loss for bursts. The state moves before each
    /// packet, then the packet is lost with the state's loss probability.
    GilbertElliott {
        /// Probability of moving Good -> Bad per packet.
        p_good_to_bad: f64,
        /// Probability of moving Bad -> Good per packet.
        p_bad_to_good: f64,
        /// Loss probability in the Good state.
        loss_good: f64,
        /// Loss probability in the Bad state.
        loss_bad: f64,
    },
}

impl LossModel {
    /// Long-run loss rate of the model.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_good, loss_bad } => {
                let sum = p_good_to_bad + p_bad_to_good;
                if sum <= 0.0 {
                    loss_good
                } else {
                    (p_bad_to_good * loss_good + p_good_to_bad * loss_bad) / sum
                }
            }
        }
    }

    /// Mean burst length (packets spent in Bad per visit) of a Gilbert-Elliott model.
    pub fn mean_bad_run(&self) -> Option<f64> {
        match *self {
            LossModel::GilbertElliott { p_bad_to_good, .. } if p_bad_to_good > 0.0 => {
                Some(1.0 / p_bad_to_good)
            }
            _ => None,
        }
    }
}

/// Drops packets at the link ingress according to a [`LossModel`] plus time-varying
/// loss probabilities (loss ramps; outages are a profile of 1.0).
#[derive(Debug, Clone)]
pub struct LossStage {
    model: LossModel,
    extra: Vec<Profile>,
    rng: ChaCha8Rng,
    bad: bool,
    ready: VecDeque<Packet>,
    dropped: u64,
    dropped_bytes: u64,
}

impl LossStage {
    /// A loss stage with its own RNG seeded by `seed`.
    pub fn new(model: LossModel, seed: u64) -> LossStage {
        LossStage {
            model,
            extra: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            bad: false,
            ready: VecDeque::new(),
            dropped: 0,
            dropped_bytes: 0,
        }
    }

    /// Adds an independent, time-varying loss probability (values clamped to [0, 1]).
    pub fn add_profile(&mut self, profile: Profile) {
        self.extra.push(profile);
    }

    /// Packets dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Bytes dropped so far.
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped_bytes
    }

    /// Probability from the time-varying profiles alone at `now`.
    pub fn scheduled_loss_at(&self, now: Duration) -> f64 {
        let keep: f64 =
            self.extra.iter().filter_map(|p| p.value_at(now)).map(|v| 1.0 - v.clamp(0.0, 1.0)).product();
        1.0 - keep
    }

    fn draw_model(&mut self) -> bool {
        match self.model {
            LossModel::None => false,
            LossModel::Bernoulli { p } => p > 0.0 && self.rng.gen::<f64>() < p,
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_good, loss_bad } => {
                let flip = if self.bad { p_bad_to_good } else { p_good_to_bad };
                if self.rng.gen::<f64>() < flip {
                    self.bad = !self.bad;
                }
                let p = if self.bad { loss_bad } else { loss_good };
                p > 0.0 && self.rng.gen::<f64>() < p
            }
        }
    }
}

impl Stage for LossStage {
    fn enqueue(&mut self, now: Duration, mut pkt: Packet) {
        let lost_model = self.draw_model();
        let p = self.scheduled_loss_at(now);
        // Draw only when needed so that adding a zero profile keeps the RNG stream.
        let lost_sched = p >= 1.0 || (p > 0.0 && self.rng.gen::<f64>() < p);
        if lost_model || lost_sched {
            self.dropped += 1;
            self.dropped_bytes += u64::from(pkt.size);
            return;
        }
        pkt.time = now;
        self.ready.push_back(pkt);
    }

    fn dequeue_ready(&mut self, _now: Duration, out: &mut Vec<Packet>) {
        out.extend(self.ready.drain(..));
    }

    fn next_wakeup(&self) -> Option<Duration> {
        self.ready.front().map(|p| p.time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(model: LossModel, n: u64, seed: u64) -> (u64, Vec<bool>) {
        let mut s = LossStage::new(model, seed);
        let mut out = Vec::new();
        let mut pattern = Vec::new();
        for i in 0..n {
            let before = s.dropped();
            s.enqueue(Duration::from_micros(i), Packet::sized(1000, i));
            pattern.push(s.dropped() > before);
        }
        s.dequeue_ready(Duration::from_secs(1), &mut out);
        assert_eq!(out.len() as u64 + s.dropped(), n);
        (s.dropped(), pattern)
    }

    #[test]
    fn bernoulli_rate_and_determinism() {
        let (d, p1) = run(LossModel::Bernoulli { p: 0.1 }, 100_000, 7);
        // 5 sigma of Binomial(100000, 0.1) is ~474.
        assert!((d as i64 - 10_000).abs() < 474, "{d}");
        let (_, p2) = run(LossModel::Bernoulli { p: 0.1 }, 100_000, 7);
        assert_eq!(p1, p2);
        let (_, p3) = run(LossModel::Bernoulli { p: 0.1 }, 100_000, 8);
        assert_ne!(p1, p3);
        assert_eq!(run(LossModel::Bernoulli { p: 0.0 }, 1000, 1).0, 0);
        assert_eq!(run(LossModel::Bernoulli { p: 1.0 }, 1000, 1).0, 1000);
    }

    #[test]
    fn gilbert_elliott_is_bursty() {
        let m = LossModel::GilbertElliott {
            p_good_to_bad: 0.01,
            p_bad_to_good: 0.25,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let expected = m.mean_loss();
        assert!((expected - 0.01 / 0.26).abs() < 1e-12);
        let n = 400_000;
        let (d, pattern) = run(m, n, 3);
        let rate = d as f64 / n as f64;
        assert!((rate - expected).abs() < 0.004, "{rate} vs {expected}");
        // Mean loss-run length should be near 1 / p_bad_to_good = 4.
        let mut runs = 0u64;
        let mut prev = false;
        for &l in &pattern {
            if l && !prev {
                runs += 1;
            }
            prev = l;
        }
        let mean_run = d as f64 / runs as f64;
        assert!((mean_run - 4.0).abs() < 0.3, "{mean_run}");
    }

    #[test]
    fn profile_window_drops_everything() {
        let mut s = LossStage::new(LossModel::None, 1);
        s.add_profile(Profile::window(Duration::from_secs(1), Duration::from_secs(2), 1.0, 0.0));
        for ms in 0..3000 {
            s.enqueue(Duration::from_millis(ms), Packet::sized(10, ms));
        }
        assert_eq!(s.dropped(), 1000);
    }
}
