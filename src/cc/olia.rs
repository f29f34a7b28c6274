//! OLIA, the Opportunistic Linked Increases Algorithm (Khalili, Gast, Popovic,
//! Le Boudec, "MPTCP is not Pareto-optimal", CoNEXT 2012, and
//! draft-khalili-mptcp-congestion-control).
//!
//! Per ACK on path r (packets): `w_r/τ_r² / (Σ_p w_p/τ_p)² + α_r/w_r`, per
//! loss `w_r/2`. α_r moves window from the paths with the largest windows (M)
//! to the best paths that do not have them (B \ M):
//! `α_r = 1/(|R|·|B\M|)` for r ∈ B\M, `−1/(|R|·|M|)` for r ∈ M when B\M is
//! not empty, else 0.
//!
//! The best paths maximise `l_r/τ_r²`, l_r being the bytes delivered between
//! losses. The other paths' l_r is not in their [`PathView`], so this uses the
//! loss-throughput relation of the model OLIA is derived from: l_r ≈ 1/p_r
//! and w_r ∝ 1/√p_r give `l_r/τ_r² ∝ (w_r/τ_r)²`, i.e. the best paths are
//! those with the highest rate w_r/τ_r.

use super::coupled::{Coupled, CoupledRule, PathSet};

/// Relative tolerance for "equal" windows and rates.
const TIE: f64 = 1e-9;

fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= TIE * a.abs().max(b.abs())
}

/// OLIA's α_r for path `i` (dimensionless). `cwnds` and `rtts` in any
/// consistent units (sets only compare values).
pub fn olia_alpha(cwnds: &[f64], rtts: &[f64], i: usize) -> f64 {
    let n = cwnds.len().min(rtts.len());
    if i >= n || n < 2 {
        return 0.0;
    }
    let rate = |k: usize| -> f64 {
        match (cwnds.get(k), rtts.get(k)) {
            (Some(w), Some(r)) if *r > 0.0 => w / r,
            _ => 0.0,
        }
    };
    let w = |k: usize| cwnds.get(k).copied().unwrap_or(0.0);
    let max_w = (0..n).map(w).fold(f64::MIN, f64::max);
    let best_rate = (0..n).map(rate).fold(f64::MIN, f64::max);
    let in_m = |k: usize| same(w(k), max_w);
    let in_b = |k: usize| same(rate(k), best_rate);
    let m = (0..n).filter(|&k| in_m(k)).count();
    let b_not_m = (0..n).filter(|&k| in_b(k) && !in_m(k)).count();
    if b_not_m == 0 {
        return 0.0;
    }
    if in_b(i) && !in_m(i) {
        1.0 / (n * b_not_m) as f64
    } else if in_m(i) {
        -1.0 / (n * m) as f64
    } else {
        0.0
    }
}

/// OLIA's per-ACK change of path `i`'s window, in bytes, for `acked` bytes.
///
/// Conversion: with W = w·mss (bytes), the packet formula
/// `(w_i/τ_i²)/(Σ w_p/τ_p)² + α_i/w_i` per acked packet equals
/// `mss·[(W_i/τ_i²)/(Σ W_p/τ_p)² + α_i/W_i]` packets; an ACK of `acked` bytes
/// is `acked/mss` packets and each packet of window is `mss` bytes, so the
/// byte change is `acked · mss · [(W_i/τ_i²)/(Σ W_p/τ_p)² + α_i/W_i]`.
/// May be negative (paths in M when better paths exist).
pub fn olia_increase(cwnds: &[f64], rtts: &[f64], i: usize, acked: f64, mss: f64) -> f64 {
    let (Some(&wi), Some(&ri)) = (cwnds.get(i), rtts.get(i)) else {
        return 0.0;
    };
    if wi <= 0.0 || ri <= 0.0 {
        return 0.0;
    }
    let sum: f64 = cwnds.iter().zip(rtts).filter(|(_, r)| **r > 0.0).map(|(w, r)| w / r).sum();
    if sum <= 0.0 {
        return 0.0;
    }
    let first = (wi / (ri * ri)) / (sum * sum);
    let second = olia_alpha(cwnds, rtts, i) / wi;
    acked * mss * (first + second)
}

/// OLIA's decrease: halving, in bytes.
pub fn olia_decrease(cwnd: f64) -> f64 {
    cwnd / 2.0
}

/// The OLIA rule for [`Coupled`].
#[derive(Clone, Debug)]
pub struct OliaRule;

impl CoupledRule for OliaRule {
    const NAME: &'static str = "olia";
    fn increase(set: &PathSet, acked: f64, mss: f64) -> f64 {
        olia_increase(&set.cwnds, &set.rtts, set.me, acked, mss)
    }
    fn reduced(set: &PathSet) -> f64 {
        olia_decrease(set.cwnds[set.me])
    }
}

/// An OLIA controller for one path.
pub type Olia = Coupled<OliaRule>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::coupled::tests::{ack, base, loss, view};
    use crate::cc::{CcParams, CongestionController};
    use crate::rtt::RttEstimator;
    use crate::PathId;
    use std::time::Duration;

    const MSS: f64 = 1000.0;

    #[test]
    fn equal_rates_shift_window_to_the_smaller_path() {
        // w = (10, 20) packets, τ = (0.1, 0.2) s: rates w/τ = (100, 100)
        // pkt/s, so both are best paths; M = {path 1} (largest window), so
        // B\M = {path 0}. |R| = 2: α_0 = 1/(2·1) = 0.5, α_1 = −1/(2·1) = −0.5.
        let w = [10_000.0, 20_000.0];
        let r = [0.1, 0.2];
        assert_eq!(olia_alpha(&w, &r, 0), 0.5);
        assert_eq!(olia_alpha(&w, &r, 1), -0.5);
        // Σ w/τ = 200 pkt/s, squared 40 000.
        // Path 0 per packet: (10/0.01)/40 000 + 0.5/10 = 0.025 + 0.05
        //   = 0.075 pkt = 75 B.
        // Path 1 per packet: (20/0.04)/40 000 − 0.5/20 = 0.0125 − 0.025
        //   = −0.0125 pkt = −12.5 B.
        assert!((olia_increase(&w, &r, 0, 1000.0, MSS) - 75.0).abs() < 1e-9);
        assert!((olia_increase(&w, &r, 1, 1000.0, MSS) + 12.5).abs() < 1e-9);
        assert_eq!(olia_decrease(20_000.0), 10_000.0);
    }

    #[test]
    fn best_path_with_max_window_gets_no_alpha() {
        // w = (10, 20), τ = (0.1, 0.1): rates (100, 200); the best path is
        // also the largest window, B\M = ∅, α = 0 for both.
        // Σ w/τ = 300 pkt/s, squared 90 000.
        // Path 0: (10/0.01)/90 000 = 0.01111 pkt = 11.11 B.
        // Path 1: (20/0.01)/90 000 = 0.02222 pkt = 22.22 B.
        let w = [10_000.0, 20_000.0];
        let r = [0.1, 0.1];
        assert_eq!(olia_alpha(&w, &r, 0), 0.0);
        assert_eq!(olia_alpha(&w, &r, 1), 0.0);
        assert!((olia_increase(&w, &r, 0, 1000.0, MSS) - 1000.0 / 90.0).abs() < 1e-9);
        assert!((olia_increase(&w, &r, 1, 1000.0, MSS) - 2000.0 / 90.0).abs() < 1e-9);
        // Single path: 1/w per packet, Reno's increase (1000·1000/10 000 B).
        assert!((olia_increase(&[10_000.0], &[0.1], 0, 1000.0, MSS) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn three_paths_sets() {
        // w = (10, 20, 20), τ = (0.05, 0.2, 0.4): rates (200, 100, 50).
        // B = {0}, M = {1, 2}, B\M = {0}: α = (1/3, −1/6, −1/6).
        let w = [10.0, 20.0, 20.0];
        let r = [0.05, 0.2, 0.4];
        assert!((olia_alpha(&w, &r, 0) - 1.0 / 3.0).abs() < 1e-12);
        assert!((olia_alpha(&w, &r, 1) + 1.0 / 6.0).abs() < 1e-12);
        assert!((olia_alpha(&w, &r, 2) + 1.0 / 6.0).abs() < 1e-12);
        // Alphas sum to zero: window moves, the total does not.
        let s: f64 = (0..3).map(|i| olia_alpha(&w, &r, i)).sum();
        assert!(s.abs() < 1e-12);
    }

    #[test]
    fn controller_can_shrink_in_avoidance() {
        let t0 = base();
        let mut c =
            Olia::new(CcParams { path_id: PathId(1), mss: 1000, initial_window: 40_000, now: t0, seed: 0 });
        let mut rtt = RttEstimator::default();
        rtt.update(Duration::from_millis(200), Duration::ZERO);
        // Loss: 40 000 → 20 000 = ssthresh, congestion avoidance.
        c.on_loss(&loss(t0, 10, 5, false), &rtt, &[]);
        assert_eq!(c.window(), 20_000);
        // The other path: 10 packets at 100 ms. As computed above, path 1
        // loses 12.5 B per acked packet.
        let paths = [view(0, 10_000, 100), view(1, 20_000, 200)];
        c.on_ack(&ack(t0, 300, 100, 1000), &rtt, &paths);
        // Shrinking in avoidance does not fall back into slow start.
        assert!(!c.in_slow_start());
        c.on_ack(&ack(t0, 301, 101, 1000), &rtt, &paths);
        assert_eq!(c.window(), 19_975);
    }
}
