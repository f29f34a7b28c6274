//! LIA, the Linked Increases Algorithm of RFC 6356: Reno per path, with the
//! congestion-avoidance increase coupled across the connection's paths so
//! that the connection takes no more than a single-path flow on its best path.

use super::coupled::{Coupled, CoupledRule, PathSet};

/// RFC 6356 §3 `alpha = cwnd_total · max_i(cwnd_i/rtt_i²) / (Σ_i cwnd_i/rtt_i)²`.
/// `cwnds` in bytes, `rtts` in seconds; alpha is dimensionless when windows are
/// in packets, and the RFC's bytes form keeps that ratio, so any consistent
/// unit works. Returns 1 (Reno) for degenerate input.
pub fn lia_alpha(cwnds: &[f64], rtts: &[f64]) -> f64 {
    let total: f64 = cwnds.iter().sum();
    let mut best = 0.0f64;
    let mut sum = 0.0;
    for (w, r) in cwnds.iter().zip(rtts) {
        if *r <= 0.0 {
            continue;
        }
        best = best.max(w / (r * r));
        sum += w / r;
    }
    if sum <= 0.0 {
        return 1.0;
    }
    total * best / (sum * sum)
}

/// RFC 6356 §3 increase of path `i` for an ACK of `acked` bytes, in bytes
/// (the RFC's byte form, so no conversion):
/// `min(alpha · acked · mss / cwnd_total, acked · mss / cwnd_i)`.
pub fn lia_increase(cwnds: &[f64], rtts: &[f64], i: usize, acked: f64, mss: f64) -> f64 {
    let total: f64 = cwnds.iter().sum();
    let Some(&wi) = cwnds.get(i) else { return 0.0 };
    if total <= 0.0 || wi <= 0.0 {
        return 0.0;
    }
    let coupled = lia_alpha(cwnds, rtts) * acked * mss / total;
    let uncoupled = acked * mss / wi;
    coupled.min(uncoupled)
}

/// LIA's decrease: Reno's halving, in bytes.
pub fn lia_decrease(cwnd: f64) -> f64 {
    cwnd / 2.0
}

/// The LIA rule for [`Coupled`].
#[derive(Clone, Debug)]
pub struct LiaRule;

impl CoupledRule for LiaRule {
    const NAME: &'static str = "lia";
    fn increase(set: &PathSet, acked: f64, mss: f64) -> f64 {
        lia_increase(&set.cwnds, &set.rtts, set.me, acked, mss)
    }
    fn reduced(set: &PathSet) -> f64 {
        lia_decrease(set.cwnds[set.me])
    }
}

/// A LIA controller for one path.
pub type Lia = Coupled<LiaRule>;

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
    fn alpha_and_increase_two_paths() {
        // w = (10, 20) packets = (10 000, 20 000) bytes, RTT = (0.1, 0.2) s.
        // max w/rtt² = max(10 000/0.01, 20 000/0.04) = 1 000 000;
        // Σ w/rtt = 100 000 + 100 000 = 200 000, squared 4e10;
        // alpha = 30 000 · 1e6 / 4e10 = 0.75.
        let w = [10_000.0, 20_000.0];
        let r = [0.1, 0.2];
        assert!((lia_alpha(&w, &r) - 0.75).abs() < 1e-12);
        // ACK of one packet on path 0:
        // min(0.75·1000·1000/30 000, 1000·1000/10 000) = min(25, 100) = 25 B,
        // i.e. alpha/w_total = 0.025 packets.
        assert!((lia_increase(&w, &r, 0, 1000.0, MSS) - 25.0).abs() < 1e-9);
        // Path 1: min(25, 1000·1000/20 000 = 50) = 25 B.
        assert!((lia_increase(&w, &r, 1, 1000.0, MSS) - 25.0).abs() < 1e-9);
        assert_eq!(lia_decrease(20_000.0), 10_000.0);
    }

    #[test]
    fn uncoupled_cap_applies() {
        // w = (10, 10) packets, RTT = (0.01, 1) s: path 0 dominates.
        // alpha = 20 000 · (10 000/1e-4) / (1e6 + 1e4)² = 2e12/1.0201e12 ≈ 1.9606;
        // coupled = 1.9606·1e6/20 000 ≈ 98.0 B; Reno cap = 1e6/10 000 = 100 B.
        let w = [10_000.0, 10_000.0];
        let r = [0.01, 1.0];
        let a = lia_alpha(&w, &r);
        assert!((a - 2e12 / 1.0201e12).abs() < 1e-9);
        assert!((lia_increase(&w, &r, 0, 1000.0, MSS) - a * 50.0).abs() < 1e-9);
        // Single path: alpha = 1, plain Reno: mss·acked/cwnd.
        assert!((lia_alpha(&[10_000.0], &[0.1]) - 1.0).abs() < 1e-12);
        assert!((lia_increase(&[10_000.0], &[0.1], 0, 1000.0, MSS) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn controller_slow_start_then_coupled() {
        let t0 = base();
        let mut c =
            Lia::new(CcParams { path_id: PathId(0), mss: 1000, initial_window: 10_000, now: t0, seed: 0 });
        let mut rtt = RttEstimator::default();
        rtt.update(Duration::from_millis(100), Duration::ZERO);
        let paths = [view(1, 20_000, 200)];
        // Slow start: +acked.
        c.on_ack(&ack(t0, 50, 40, 1000), &rtt, &paths);
        assert_eq!(c.window(), 11_000);
        // Loss halves and ends slow start.
        c.on_loss(&loss(t0, 100, 90, false), &rtt, &paths);
        assert_eq!(c.window(), 5_500);
        assert!(!c.in_slow_start());
        // ACK of a packet sent before the loss: no growth.
        c.on_ack(&ack(t0, 150, 95, 1000), &rtt, &paths);
        assert_eq!(c.window(), 5_500);
        // Second loss in the same period: no second cut.
        c.on_loss(&loss(t0, 160, 99, false), &rtt, &paths);
        assert_eq!(c.window(), 5_500);
        // 40 one-packet ACKs at w = (5.5, 20) pkts, RTT (0.1, 0.2):
        // alpha = 25 500·max(550 000, 500 000)/(55 000 + 100 000)² ≈ 0.58376,
        // increase ≈ 0.58376·1e6/25 500 ≈ 22.9 B each, below the Reno cap.
        c.on_ack(&ack(t0, 200, 150, 1000), &rtt, &paths);
        assert_eq!(c.window(), 5_522);
        for k in 1..40 {
            c.on_ack(&ack(t0, 200 + k, 150, 1000), &rtt, &paths);
        }
        // The increase creeps up with the window (≈23.8 B at 6.4 packets).
        let grown = c.window() - 5_500;
        assert!((915..=955).contains(&grown), "{grown}");
        // Persistent congestion: minimum window.
        c.on_loss(&loss(t0, 300, 290, true), &rtt, &paths);
        assert_eq!(c.window(), 2_000);
    }
}
