//! BALIA, the Balanced Linked Adaptation algorithm (Peng, Walid, Hwang, Low,
//! "Multipath TCP: Analysis, Design and Implementation", IEEE/ACM ToN 2016).
//!
//! With x_r = w_r/τ_r and α_r = max_k x_k / x_r (≥ 1), per ACK on path r
//! (packets): `x_r/(τ_r·(Σ_k x_k)²) · ((1+α_r)/2) · ((4+α_r)/5)`, and per loss
//! `w_r ← w_r − w_r/2 · min(α_r, 1.5)`.

use super::coupled::{Coupled, CoupledRule, PathSet};

fn rates(cwnds: &[f64], rtts: &[f64]) -> Vec<f64> {
    cwnds.iter().zip(rtts).map(|(w, r)| if *r > 0.0 { w / r } else { 0.0 }).collect()
}

/// BALIA's α_i = max_k x_k / x_i (1 for degenerate input). Any consistent
/// units: it is a ratio of rates.
pub fn balia_alpha(cwnds: &[f64], rtts: &[f64], i: usize) -> f64 {
    let x = rates(cwnds, rtts);
    let max = x.iter().copied().fold(0.0, f64::max);
    match x.get(i) {
        Some(&xi) if xi > 0.0 => max / xi,
        _ => 1.0,
    }
}

/// BALIA's per-ACK increase of path `i`, in bytes, for `acked` bytes.
///
/// Conversion: with W = w·mss and X = W/τ (bytes/s), the packet term
/// `x_i/(τ_i(Σx)²)` equals `mss · X_i/(τ_i(ΣX)²)` packets per acked packet
/// (it scales as 1/w); `acked/mss` packets acked times `mss` bytes per packet
/// gives `acked · mss · X_i/(τ_i(ΣX)²) · ((1+α_i)/2)·((4+α_i)/5)` bytes.
pub fn balia_increase(cwnds: &[f64], rtts: &[f64], i: usize, acked: f64, mss: f64) -> f64 {
    let x = rates(cwnds, rtts);
    let sum: f64 = x.iter().sum();
    let (Some(&xi), Some(&ri)) = (x.get(i), rtts.get(i)) else {
        return 0.0;
    };
    if xi <= 0.0 || ri <= 0.0 || sum <= 0.0 {
        return 0.0;
    }
    let a = balia_alpha(cwnds, rtts, i);
    acked * mss * xi / (ri * sum * sum) * ((1.0 + a) / 2.0) * ((4.0 + a) / 5.0)
}

/// BALIA's per-loss decrease of path `i`, in bytes: `w_i/2 · min(α_i, 1.5)`
/// (a unit-free fraction of the window, so bytes in, bytes out).
pub fn balia_decrease(cwnds: &[f64], rtts: &[f64], i: usize) -> f64 {
    let wi = cwnds.get(i).copied().unwrap_or(0.0);
    wi / 2.0 * balia_alpha(cwnds, rtts, i).min(1.5)
}

/// The BALIA rule for [`Coupled`].
#[derive(Clone, Debug)]
pub struct BaliaRule;

impl CoupledRule for BaliaRule {
    const NAME: &'static str = "balia";
    fn increase(set: &PathSet, acked: f64, mss: f64) -> f64 {
        balia_increase(&set.cwnds, &set.rtts, set.me, acked, mss)
    }
    fn reduced(set: &PathSet) -> f64 {
        set.cwnds[set.me] - balia_decrease(&set.cwnds, &set.rtts, set.me)
    }
}

/// A BALIA controller for one path.
pub type Balia = Coupled<BaliaRule>;

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
    fn equal_rates() {
        // w = (10, 20) packets, τ = (0.1, 0.2) s: x = (100, 100) pkt/s,
        // Σx = 200, α = (1, 1), so both factors are 1.
        // Path 0: 100/(0.1·200²) = 100/4000 = 0.025 pkt = 25 B per packet.
        // Path 1: 100/(0.2·200²) = 100/8000 = 0.0125 pkt = 12.5 B.
        // Loss: w/2·min(1, 1.5) = 5 and 10 packets.
        let w = [10_000.0, 20_000.0];
        let r = [0.1, 0.2];
        assert!((balia_increase(&w, &r, 0, 1000.0, MSS) - 25.0).abs() < 1e-9);
        assert!((balia_increase(&w, &r, 1, 1000.0, MSS) - 12.5).abs() < 1e-9);
        assert!((balia_decrease(&w, &r, 0) - 5_000.0).abs() < 1e-9);
        assert!((balia_decrease(&w, &r, 1) - 10_000.0).abs() < 1e-9);
    }

    #[test]
    fn unequal_rates() {
        // w = (10, 20) packets, τ = (0.1, 0.1) s: x = (100, 200), Σx = 300,
        // α = (2, 1).
        // Path 0: 100/(0.1·90 000)·(3/2)·(6/5) = (1/90)·1.8 = 0.02 pkt = 20 B.
        // Path 1: 200/(0.1·90 000)·1·1 = 1/45 pkt = 22.22 B.
        // Loss: path 0 w/2·min(2, 1.5) = 7.5 pkt; path 1 w/2·1 = 10 pkt.
        let w = [10_000.0, 20_000.0];
        let r = [0.1, 0.1];
        assert!((balia_alpha(&w, &r, 0) - 2.0).abs() < 1e-12);
        assert!((balia_increase(&w, &r, 0, 1000.0, MSS) - 20.0).abs() < 1e-9);
        assert!((balia_increase(&w, &r, 1, 1000.0, MSS) - 1000.0 / 45.0).abs() < 1e-9);
        assert!((balia_decrease(&w, &r, 0) - 7_500.0).abs() < 1e-9);
        assert!((balia_decrease(&w, &r, 1) - 10_000.0).abs() < 1e-9);
        // Single path: α = 1, x/(τx²) = 1/w: Reno (100 B per packet at 10).
        assert!((balia_increase(&[10_000.0], &[0.1], 0, 1000.0, MSS) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn controller_loss_uses_alpha() {
        let t0 = base();
        let mut c =
            Balia::new(CcParams { path_id: PathId(0), mss: 1000, initial_window: 10_000, now: t0, seed: 0 });
        let mut rtt = RttEstimator::default();
        rtt.update(Duration::from_millis(100), Duration::ZERO);
        let paths = [view(0, 10_000, 100), view(1, 20_000, 100)];
        // α_0 = 2: the window drops by 10 000/2·1.5 = 7 500 to 2 500.
        c.on_loss(&loss(t0, 10, 5, false), &rtt, &paths);
        assert_eq!(c.window(), 2_500);
        assert_eq!(c.metrics().ssthresh, Some(2_500));
        // Next period: w = (2.5, 20) pkt, x = (25, 200), α_0 = 8 → cut
        // 1 250·1.5 = 1 875 to 625 B, floored at the 2-packet minimum.
        c.on_loss(&loss(t0, 200, 150, false), &rtt, &paths);
        assert_eq!(c.window(), 2_000);
        // Avoidance, w = (2, 20) pkt, x = (20, 200), Σ = 220, α = 10:
        // 20/(0.1·220²)·(11/2)·(14/5) = 0.004132·15.4 = 0.06364 pkt = 63.6 B.
        c.on_ack(&ack(t0, 400, 300, 1000), &rtt, &paths);
        assert_eq!(c.window(), 2_063);
    }
}
