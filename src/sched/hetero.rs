//! Heterogeneity-aware baselines: BLEST (Ferlin et al., IFIP Networking 2016)
//! and ECF (Lim et al., CoNEXT 2017). Both prefer the fastest (lowest srtt)
//! path while it has window space; when it has none, they decide whether the
//! next-fastest path with space should be used now or whether waiting for the
//! fast path finishes sooner.

use super::{secs, Decision, PathSnapshot, SchedContext, Scheduler};
use std::time::{Duration, Instant};

/// BLEST's test: should the sender wait for the fast path `f` instead of
/// sending on the slow path `s`?
///
/// During one srtt of the slow path, the fast path can send about
/// X = mss_f · (cwnd_f + (ρ − 1)/2) · ρ bytes, where ρ = srtt_s/srtt_f and
/// cwnd_f is in packets (congestion avoidance grows it by one packet per
/// RTT). If λ·X exceeds what the send window leaves once the slow path has
/// its packets and this one in flight, `send_window − mss_s·(inflight_s + 1)`,
/// using the slow path would block the fast one: wait. Without a known send
/// window there is nothing to block, so the slow path is used.
pub fn blest_should_wait(f: &PathSnapshot, s: &PathSnapshot, send_window: Option<u64>, lambda: f64) -> bool {
    let Some(sw) = send_window else {
        return false;
    };
    let rho = secs(s.srtt) / secs(f.srtt).max(1e-9);
    let x = f.mss as f64 * (f.cwnd_packets() + (rho - 1.0) / 2.0) * rho;
    let room = sw as f64 - s.mss as f64 * (s.packets_in_flight as f64 + 1.0);
    x * lambda > room
}

/// The lowest-srtt eligible path (the "fast" path, whatever its window) and
/// the lowest-srtt eligible path with window space.
fn fast_and_candidate<'a>(ctx: &SchedContext<'a>) -> (Option<&'a PathSnapshot>, Option<&'a PathSnapshot>) {
    (ctx.best_by(|p| ctx.eligible(p), |p| p.srtt), ctx.lowest_rtt_with_space())
}

/// BLEST with a scaling factor λ that adapts to observed blocking.
#[derive(Debug)]
pub struct BlestScheduler {
    lambda: f64,
    last_adapt: Option<Instant>,
}

/// λ bounds and steps (the Linux MPTCP implementation's 1.0..1.3 range).
const LAMBDA_MIN: f64 = 1.0;
const LAMBDA_MAX: f64 = 1.3;
const LAMBDA_UP: f64 = 0.1;
const LAMBDA_DOWN: f64 = 0.01;

impl BlestScheduler {
    /// BLEST starting at scaling factor `lambda` (1.2 by default).
    pub fn new(lambda: f64) -> Self {
        Self { lambda, last_adapt: None }
    }
    /// Current λ.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }
}

impl Default for BlestScheduler {
    fn default() -> Self {
        Self::new(1.2)
    }
}

impl Scheduler for BlestScheduler {
    fn name(&self) -> &'static str {
        "blest"
    }
    fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision {
        match fast_and_candidate(ctx) {
            (_, None) => Decision::WAIT,
            (Some(f), Some(c)) if f.id == c.id => Decision::send(c.id),
            (Some(f), Some(s)) => {
                // λ adapts at most once per fast-path RTT: up when the send
                // window is nearly exhausted (the last estimates let the
                // slow path block the fast one), slowly down otherwise.
                let due = self.last_adapt.is_none_or(|t| ctx.now.saturating_duration_since(t) >= f.srtt);
                if due {
                    self.last_adapt = Some(ctx.now);
                    let blocked = ctx.pending.peer_recv_window.is_some_and(|w| w < s.mss as u64);
                    self.lambda = if blocked {
                        (self.lambda + LAMBDA_UP).min(LAMBDA_MAX.max(self.lambda))
                    } else {
                        (self.lambda - LAMBDA_DOWN).max(LAMBDA_MIN.min(self.lambda))
                    };
                }
                if blest_should_wait(f, s, ctx.pending.peer_recv_window, self.lambda) {
                    Decision::WAIT
                } else {
                    Decision::send(s.id)
                }
            }
            (None, Some(c)) => Decision::send(c.id),
        }
    }
}

/// ECF's verdict when the fast path has no window space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcfOutcome {
    /// Use the slow path now.
    UseSlow,
    /// Wait for the fast path (and set the waiting flag).
    Wait,
}

/// ECF's rule (Lim et al. 2017, Alg. 1) for fast path `f` without window
/// space and slow candidate `s`, with `k` bytes to send and the hysteresis
/// flag `waiting` (β applies while it is set):
///
/// n = 1 + k/cwnd_f, δ = max(rttvar_f, rttvar_s).
/// If n·rtt_f < (1 + waiting·β)·(rtt_s + δ), waiting for f completes sooner
/// than using s; then wait only if s would itself need long, i.e.
/// (k/cwnd_s)·rtt_s ≥ 2·rtt_f + δ. Otherwise use s (and clear the flag).
pub fn ecf_decide(f: &PathSnapshot, s: &PathSnapshot, k: u64, waiting: bool, beta: f64) -> EcfOutcome {
    let k = k as f64;
    let rtt_f = secs(f.srtt);
    let rtt_s = secs(s.srtt);
    let delta = secs(f.rttvar.max(s.rttvar));
    let n = 1.0 + k / (f.cwnd.max(1) as f64);
    let hyst = if waiting { 1.0 + beta } else { 1.0 };
    if n * rtt_f < hyst * (rtt_s + delta) && (k / s.cwnd.max(1) as f64) * rtt_s >= 2.0 * rtt_f + delta {
        EcfOutcome::Wait
    } else {
        EcfOutcome::UseSlow
    }
}

/// ECF: Earliest Completion First.
#[derive(Debug)]
pub struct EcfScheduler {
    beta: f64,
    waiting: bool,
}

impl EcfScheduler {
    /// ECF with hysteresis β (0.25 by default).
    pub fn new(beta: f64) -> Self {
        Self { beta, waiting: false }
    }
    /// The hysteresis flag.
    pub fn waiting(&self) -> bool {
        self.waiting
    }
}

impl Default for EcfScheduler {
    fn default() -> Self {
        Self::new(0.25)
    }
}

impl Scheduler for EcfScheduler {
    fn name(&self) -> &'static str {
        "ecf"
    }
    fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision {
        match fast_and_candidate(ctx) {
            (_, None) => Decision::WAIT,
            (Some(f), Some(c)) if f.id == c.id => Decision::send(c.id),
            (Some(f), Some(s)) => {
                match ecf_decide(f, s, ctx.pending.total(), self.waiting, self.beta) {
                    EcfOutcome::Wait => {
                        self.waiting = true;
                        // The fast path's window opens on its next ACK,
                        // about one srtt away at the latest.
                        Decision::Wait { until: Some(ctx.now + f.srtt.max(Duration::from_millis(1))) }
                    }
                    EcfOutcome::UseSlow => {
                        self.waiting = false;
                        Decision::send(s.id)
                    }
                }
            }
            (None, Some(c)) => Decision::send(c.id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::PendingInfo;
    use super::*;
    use crate::PathId;

    // Hand case shared by both: fast path 0 at 10 ms with its 10-packet
    // window full; slow path 1 at 100 ms, 10-packet window, empty.
    // Packets are 1000 bytes; rttvar = srtt/4 (2.5 ms and 25 ms).
    fn hand_case() -> [PathSnapshot; 2] {
        [path(0, 10, 10, 10), path(1, 100, 10, 0)]
    }

    #[test]
    fn blest_waits_when_slow_path_would_block() {
        let [f, s] = hand_case();
        // ρ = 100/10 = 10; X = 1000·(10 + 9/2)·10 = 145 000 bytes;
        // λ·X = 1.2·145 000 = 174 000.
        // Send window 100 000: room = 100 000 − 1000·(0+1) = 99 000 < 174 000
        // → wait.
        assert!(blest_should_wait(&f, &s, Some(100_000), 1.2));
        // Send window 200 000: room 199 000 > 174 000 → use the slow path.
        assert!(!blest_should_wait(&f, &s, Some(200_000), 1.2));
        // No window known: use the slow path.
        assert!(!blest_should_wait(&f, &s, None, 1.2));

        let mut b = BlestScheduler::default();
        let pending =
            PendingInfo { new_bytes: 50_000, peer_recv_window: Some(100_000), ..Default::default() };
        let paths = hand_case();
        let now = t0();
        let d = b.decide(&SchedContext::new(now, &paths, pending));
        assert_eq!(d, Decision::WAIT);
        // First adaptation: not blocked, λ 1.2 → 1.19; not again within 10 ms.
        assert!((b.lambda() - 1.19).abs() < 1e-9);
        b.decide(&SchedContext::new(now, &paths, pending));
        assert!((b.lambda() - 1.19).abs() < 1e-9);
        // Window exhausted 10 ms later: λ up by 0.1 to 1.29.
        let blocked = PendingInfo { peer_recv_window: Some(500), ..pending };
        let later = now + Duration::from_millis(10);
        b.decide(&SchedContext::new(later, &paths, blocked));
        assert!((b.lambda() - 1.29).abs() < 1e-9);
        // Fast path with space: always used.
        let paths = [path(0, 10, 10, 9), path(1, 100, 10, 0)];
        let d = b.decide(&SchedContext::new(t0(), &paths, pending));
        assert_eq!(d, Decision::send(PathId(0)));
    }

    #[test]
    fn ecf_waits_when_fast_path_finishes_first() {
        let [f, s] = hand_case();
        // k = 5 packets = 5000 B. n = 1 + 5000/10000 = 1.5; n·rtt_f = 15 ms;
        // δ = max(2.5, 25) = 25 ms; rtt_s + δ = 125 ms → 15 < 125.
        // (k/cwnd_s)·rtt_s = 0.5·100 = 50 ms ≥ 2·10 + 25 = 45 ms → wait.
        assert_eq!(ecf_decide(&f, &s, 5000, false, 0.25), EcfOutcome::Wait);
        // k = 4 packets: 0.4·100 = 40 ms < 45 ms → the slow path finishes
        // its share quickly enough: use it.
        assert_eq!(ecf_decide(&f, &s, 4000, false, 0.25), EcfOutcome::UseSlow);
        // k = 200 packets: n = 21, 210 ms ≥ 125 ms → use the slow path.
        assert_eq!(ecf_decide(&f, &s, 200_000, false, 0.25), EcfOutcome::UseSlow);
        // Hysteresis: k = 130 packets: n = 14, 140 ms. Not waiting: 140 ≥
        // 125 → use slow. Waiting: 140 < 1.25·125 = 156.25 and
        // 13·100 ≥ 45 → keep waiting.
        assert_eq!(ecf_decide(&f, &s, 130_000, false, 0.25), EcfOutcome::UseSlow);
        assert_eq!(ecf_decide(&f, &s, 130_000, true, 0.25), EcfOutcome::Wait);

        let mut e = EcfScheduler::default();
        let paths = hand_case();
        let now = t0();
        let d = e.decide(&SchedContext::new(now, &paths, pending(5000)));
        assert_eq!(d, Decision::Wait { until: Some(now + Duration::from_millis(10)) });
        assert!(e.waiting());
        let d = e.decide(&SchedContext::new(now, &paths, pending(200_000)));
        assert_eq!(d, Decision::send(PathId(1)));
        assert!(!e.waiting());
    }
}
