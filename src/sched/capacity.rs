//! The capacity-aware scheduler of seed 001: a per-path estimate of the
//! available path capacity by binary search between the window at the last
//! loss and the slow-start threshold after it (Fig. 2), and the γ/δ
//! occupancy rule (Fig. 3).
//!
//! Units are packets, as in the paper: outstanding = packets in flight,
//! cwnd and ssthresh in packets of the path's MSS. The engine does not pass
//! ssthresh; after a loss the snapshot's cwnd (already reduced by the
//! controller) stands for it.

use super::{Decision, PathSnapshot, PerPath, SchedContext, SchedMetrics, Scheduler};
use crate::PathId;

/// The initial "large constant" capacity, in packets.
const UNKNOWN_CAPACITY: f64 = 1.0e9;

/// Fig. 2's state for one path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CapacityEstimate {
    /// Upper bound of the search, packets.
    pub max: f64,
    /// Lower bound of the search, packets.
    pub min: f64,
    /// Current estimate (max+min)/2, packets.
    pub estimate: f64,
    /// A loss was reported since the last run.
    pub loss_pending: bool,
}

impl Default for CapacityEstimate {
    fn default() -> Self {
        Self { max: UNKNOWN_CAPACITY, min: 0.0, estimate: UNKNOWN_CAPACITY, loss_pending: false }
    }
}

impl CapacityEstimate {
    /// One run of Fig. 2 with the path's current outstanding packets, cwnd
    /// and ssthresh (packets).
    pub fn update(&mut self, outstanding: f64, cwnd: f64, ssthresh: f64) {
        if self.loss_pending {
            self.loss_pending = false;
            self.max = 2.0 * ssthresh;
            self.min = ssthresh;
        } else if outstanding >= self.estimate && outstanding < self.max {
            // Reached the estimate without a loss: it was too low.
            self.min = outstanding;
        } else if outstanding >= self.max {
            // Reached the old maximum without a loss: capacity has grown.
            self.max = cwnd;
            self.min = outstanding;
        } else {
            return;
        }
        self.estimate = 0.5 * (self.max + self.min);
    }
}

/// The capacity scheduler (seed 001 Fig. 3) with thresholds γ ≤ δ.
#[derive(Debug)]
pub struct CapacityScheduler {
    gamma: f64,
    delta: f64,
    est: PerPath<CapacityEstimate>,
}

impl CapacityScheduler {
    /// A scheduler with thresholds γ (uncongested) and δ (usable); the
    /// paper's defaults are 0.5 and 1.0.
    pub fn new(gamma: f64, delta: f64) -> Self {
        Self { gamma, delta, est: PerPath::default() }
    }

    /// The estimate for a path, if it has been seen.
    pub fn estimate(&self, path: PathId) -> Option<CapacityEstimate> {
        self.est.get(path).copied()
    }

    fn occupied(p: &PathSnapshot, e: &CapacityEstimate) -> f64 {
        (p.packets_in_flight as f64 + 1.0) / e.estimate.max(1e-9)
    }
}

impl Default for CapacityScheduler {
    fn default() -> Self {
        Self::new(0.5, 1.0)
    }
}

impl Scheduler for CapacityScheduler {
    fn name(&self) -> &'static str {
        "capacity"
    }

    fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision {
        // Fig. 3: a retransmission is not re-sent on its original path.
        let avoid = if ctx.pending.retransmit_bytes > 0 { ctx.pending.retransmit_origin } else { None };
        // Best uncongested path (lowest srtt) and least occupied usable path.
        let mut uncongested: Option<(PathId, std::time::Duration)> = None;
        let mut least: Option<(PathId, f64)> = None;
        for p in ctx.paths {
            if !ctx.eligible(p) {
                continue;
            }
            let cwnd = p.cwnd_packets();
            let e = self.est.get_or_insert(p.id);
            e.update(p.packets_in_flight as f64, cwnd, cwnd);
            if avoid == Some(p.id) || !p.can_send() {
                continue;
            }
            let occ = Self::occupied(p, e);
            if occ > self.delta {
                continue;
            }
            if occ <= self.gamma && uncongested.is_none_or(|(_, s)| p.srtt < s) {
                uncongested = Some((p.id, p.srtt));
            }
            if least.is_none_or(|(_, o)| occ < o) {
                least = Some((p.id, occ));
            }
        }
        match (uncongested, least) {
            (Some((id, _)), _) | (None, Some((id, _))) => Decision::send(id),
            (None, None) => Decision::WAIT,
        }
    }

    fn on_loss(&mut self, path: PathId, _bytes: usize) {
        self.est.get_or_insert(path).loss_pending = true;
    }

    fn on_path_closed(&mut self, path: PathId) {
        self.est.remove(path);
    }

    fn metrics(&self) -> SchedMetrics {
        let mut m = SchedMetrics::named(self.name());
        for (id, e) in self.est.iter() {
            m.path_mut(*id).capacity_estimate = Some(e.estimate);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    #[test]
    fn estimate_through_loss_and_loss_free_period() {
        // Loss with cwnd reduced to ssthresh = 20 packets:
        // Max = 40, Min = 20, estimate = 30.
        let mut e = CapacityEstimate { loss_pending: true, ..Default::default() };
        e.update(20.0, 20.0, 20.0);
        assert_eq!((e.max, e.min, e.estimate), (40.0, 20.0, 30.0));
        // Outstanding 25 < estimate 30: nothing changes.
        e.update(25.0, 26.0, 20.0);
        assert_eq!(e.estimate, 30.0);
        // Outstanding reaches 32 >= 30 without loss (and < Max 40):
        // Min = 32, estimate = (40+32)/2 = 36.
        e.update(32.0, 33.0, 20.0);
        assert_eq!((e.max, e.min, e.estimate), (40.0, 32.0, 36.0));
        // Outstanding 37 >= 36: Min = 37, estimate = 38.5.
        e.update(37.0, 38.0, 20.0);
        assert_eq!(e.estimate, 38.5);
        // Outstanding 41 >= Max 40: Max = cwnd 44, Min = 41, estimate 42.5.
        e.update(41.0, 44.0, 20.0);
        assert_eq!((e.max, e.min, e.estimate), (44.0, 41.0, 42.5));
    }

    #[test]
    fn loss_hook_feeds_the_estimate() {
        let mut s = CapacityScheduler::default();
        let paths = [path(0, 10, 16, 4)];
        let ctx = SchedContext::new(t0(), &paths, pending(100_000));
        s.decide(&ctx);
        assert_eq!(s.estimate(PathId(0)).unwrap().estimate, UNKNOWN_CAPACITY);
        s.on_loss(PathId(0), 1000);
        // ssthresh taken as the reduced cwnd, 16: Max 32, Min 16, est 24.
        s.decide(&ctx);
        assert_eq!(s.estimate(PathId(0)).unwrap().estimate, 24.0);
        assert_eq!(s.metrics().paths[0].capacity_estimate, Some(24.0));
    }

    fn sched_with(estimates: &[(u32, f64)]) -> CapacityScheduler {
        let mut s = CapacityScheduler::new(0.5, 1.0);
        for &(id, est) in estimates {
            let e = s.est.get_or_insert(PathId(id));
            // A state the update rule leaves alone while outstanding < est
            // and est < max.
            *e = CapacityEstimate { max: 2.0 * est, min: 0.0, estimate: est, loss_pending: false };
        }
        s
    }

    #[test]
    fn gamma_prefers_lowest_srtt_uncongested_path() {
        // Path 0: 10 ms, 3 outstanding, est 20 -> occupied 4/20 = 0.2 <= γ.
        // Path 1: 5 ms, 12 outstanding, est 20 -> 13/20 = 0.65 > γ.
        // Path 2: 30 ms, 0 outstanding, est 20 -> 1/20 = 0.05 <= γ.
        // Uncongested: 0 and 2; lowest srtt among them: path 0.
        let mut s = sched_with(&[(0, 20.0), (1, 20.0), (2, 20.0)]);
        let paths = [path(0, 10, 40, 3), path(1, 5, 40, 12), path(2, 30, 40, 0)];
        let d = s.decide(&SchedContext::new(t0(), &paths, pending(1 << 20)));
        assert_eq!(d, Decision::send(PathId(0)));
    }

    #[test]
    fn delta_falls_back_to_least_occupied_and_waits_above_delta() {
        // Path 0: 12 outstanding / est 20 -> 0.65; path 1: 14/20 -> 0.75;
        // both > γ = 0.5 and <= δ = 1: least occupied is path 0.
        let mut s = sched_with(&[(0, 20.0), (1, 20.0)]);
        let paths = [path(0, 10, 40, 12), path(1, 5, 40, 14)];
        let d = s.decide(&SchedContext::new(t0(), &paths, pending(1 << 20)));
        assert_eq!(d, Decision::send(PathId(0)));
        // Path 0: est 20.5, 20 outstanding (< 20.5, so Fig. 2 leaves the
        // estimate alone) -> 21/20.5 = 1.024 > δ; path 1 has a full cwnd:
        // nothing usable, wait.
        let paths = [path(0, 10, 40, 20), path(1, 5, 14, 14)];
        let mut s = sched_with(&[(0, 20.5), (1, 20.0)]);
        let d = s.decide(&SchedContext::new(t0(), &paths, pending(1 << 20)));
        assert_eq!(d, Decision::WAIT);
        // With 20 outstanding against an estimate of 20, Fig. 2 first raises
        // the estimate (Min = 20, est = (41+20)/2 = 30.5): 21/30.5 = 0.69,
        // usable again.
        let mut s = sched_with(&[(0, 20.0), (1, 20.0)]);
        s.est.get_or_insert(PathId(0)).max = 41.0;
        let d = s.decide(&SchedContext::new(t0(), &paths, pending(1 << 20)));
        assert_eq!(d, Decision::send(PathId(0)));
        assert_eq!(s.estimate(PathId(0)).unwrap().estimate, 30.5);
    }

    #[test]
    fn retransmission_avoids_its_original_path() {
        let mut s = sched_with(&[(0, 20.0), (1, 20.0)]);
        let paths = [path(0, 10, 40, 0), path(1, 50, 40, 0)];
        let pending = crate::sched::PendingInfo {
            retransmit_bytes: 1000,
            retransmit_origin: Some(PathId(0)),
            ..Default::default()
        };
        let d = s.decide(&SchedContext::new(t0(), &paths, pending));
        assert_eq!(d, Decision::send(PathId(1)));
    }
}
