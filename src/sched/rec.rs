//! MPTCP-rec (seed 003) adapted to QUIC.
//!
//! *Receiver* ([`DsrEstimator`], one per path): counts what arrives in each
//! round and turns it into a desired sending rate (DSR, eq. 2), smoothed
//! before it is sent back in a PATH_DSR frame ([`crate::frame::path_dsr`]).
//!
//! *Sender* ([`RecScheduler`]): once per round (the smallest srtt of the
//! eligible paths) it samples the peer's advertised receive window and
//! computes its jitter Δawnd = (awnd_cur − awnd_avg)/(awnd_max − awnd_min)
//! over the last [`AWND_HISTORY`] samples (eq. 5-6). Receive-buffer blocking
//! is predicted when Δawnd < 0 and it keeps falling (eq. 7). Then (Alg. 1)
//! the active path with the lowest DSR becomes UNUSED, and every UNUSED path
//! whose DSR exceeds the worst active path's comes back. In a round without
//! a prediction the sender returns to full mode (all paths active, step 2 of
//! §4.2). Among the active paths, data goes to the lowest srtt with window
//! space, as with MPTCP's default scheduler.
//!
//! The seed's text of eq. 2 is partly garbled and eq. 3-4 (smoothing) are
//! missing; the reconstruction used here is documented on [`DsrEstimator`].

use std::time::{Duration, Instant};

use super::{secs, Decision, PathRole, PerPath, SchedContext, SchedMetrics, Scheduler};
use crate::PathId;

/// Number of receive-window samples the jitter is computed over (m in eq. 6).
pub const AWND_HISTORY: usize = 8;

/// Eq. 5-6: jitter of the advertised window, (current − average)/(max − min)
/// over `samples` (which include the current one). 0 when the window has not
/// varied or there are no samples.
pub fn awnd_jitter(samples: &[u64], current: u64) -> f64 {
    let (Some(&max), Some(&min)) = (samples.iter().max(), samples.iter().min()) else {
        return 0.0;
    };
    if max == min {
        return 0.0;
    }
    let avg = samples.iter().map(|&v| v as f64).sum::<f64>() / samples.len() as f64;
    (current as f64 - avg) / (max - min) as f64
}

/// Receiver-side DSR estimator for one path.
///
/// Each round the receiver counts the bytes (n·R_size) and losses of the
/// path and, at the end of the round, forms the sample n·R_size/RTT. Eq. 2:
/// - packet loss rate below `plr_threshold`: DSR ← φ·DSR + (1−φ)·sample;
/// - otherwise: DSR ← ϑ·DSR + (1−ϑ)·sample·(1 − PLR), i.e. the sample is
///   discounted by the loss rate (our reading of the garbled second line).
///
/// φ = ϑ = ½ as in the seed. The value sent is then smoothed as
/// S ← (1−g)·S + g·DSR with g = ¼ (the seed's eq. 3-4 are missing; this is
/// an EWMA in the spirit of srtt smoothing). The first round sets both
/// directly to the sample.
#[derive(Clone, Debug)]
pub struct DsrEstimator {
    phi: f64,
    theta: f64,
    gain: f64,
    plr_threshold: f64,
    rate: Option<f64>,
    smoothed: Option<f64>,
    round_bytes: u64,
    round_received: u64,
    round_lost: u64,
}

impl Default for DsrEstimator {
    fn default() -> Self {
        Self {
            phi: 0.5,
            theta: 0.5,
            gain: 0.25,
            plr_threshold: 0.01,
            rate: None,
            smoothed: None,
            round_bytes: 0,
            round_received: 0,
            round_lost: 0,
        }
    }
}

impl DsrEstimator {
    /// A packet of `bytes` arrived on the path.
    pub fn on_packet(&mut self, bytes: usize) {
        self.round_bytes = self.round_bytes.saturating_add(bytes as u64);
        self.round_received += 1;
    }

    /// `packets` were found missing on the path (gaps in its packet numbers).
    pub fn on_lost(&mut self, packets: u64) {
        self.round_lost = self.round_lost.saturating_add(packets);
    }

    /// Close the round, of duration `rtt`, and return the smoothed DSR in
    /// bytes/s to advertise. A zero RTT leaves the estimate unchanged.
    pub fn end_round(&mut self, rtt: Duration) -> u64 {
        let total = self.round_received + self.round_lost;
        if rtt > Duration::ZERO && total > 0 {
            let sample = self.round_bytes as f64 / secs(rtt);
            let plr = self.round_lost as f64 / total as f64;
            let rate = match self.rate {
                None => sample,
                Some(r) if plr < self.plr_threshold => self.phi * r + (1.0 - self.phi) * sample,
                Some(r) => self.theta * r + (1.0 - self.theta) * sample * (1.0 - plr),
            };
            self.rate = Some(rate);
            self.smoothed = Some(match self.smoothed {
                None => rate,
                Some(s) => (1.0 - self.gain) * s + self.gain * rate,
            });
        }
        self.round_bytes = 0;
        self.round_received = 0;
        self.round_lost = 0;
        self.dsr()
    }

    /// The current smoothed DSR in bytes/s (0 before the first round).
    pub fn dsr(&self) -> u64 {
        self.smoothed.unwrap_or(0.0) as u64
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct RecPath {
    dsr: Option<u64>,
    unused: bool,
}

/// The rec sender-side scheduler.
#[derive(Debug, Default)]
pub struct RecScheduler {
    st: PerPath<RecPath>,
    awnd: [u64; AWND_HISTORY],
    awnd_len: usize,
    awnd_next: usize,
    prev_jitter: Option<f64>,
    last_round: Option<Instant>,
    removals: u64,
}

impl RecScheduler {
    /// Whether `path` is currently UNUSED.
    pub fn is_unused(&self, path: PathId) -> bool {
        self.st.get(path).is_some_and(|s| s.unused)
    }

    /// Paths removed so far.
    pub fn removals(&self) -> u64 {
        self.removals
    }

    /// DSR of a path, unknown DSR counting as the best (it is not removed
    /// before the peer has said anything about it).
    fn dsr_of(&self, id: PathId) -> u64 {
        self.st.get(id).and_then(|s| s.dsr).unwrap_or(u64::MAX)
    }

    fn push_awnd(&mut self, v: u64) -> f64 {
        if let Some(slot) = self.awnd.get_mut(self.awnd_next) {
            *slot = v;
        }
        self.awnd_next = (self.awnd_next + 1) % AWND_HISTORY;
        self.awnd_len = (self.awnd_len + 1).min(AWND_HISTORY);
        awnd_jitter(self.awnd.get(..self.awnd_len).unwrap_or(&[]), v)
    }

    /// One round of PCDer (§4.2, Alg. 1).
    fn round(&mut self, ctx: &SchedContext<'_>) {
        let predicted = match ctx.pending.peer_recv_window {
            Some(w) => {
                let j = self.push_awnd(w);
                let falling = self.prev_jitter.is_some_and(|p| j - p < 0.0);
                self.prev_jitter = Some(j);
                j < 0.0 && falling
            }
            None => false,
        };
        for p in ctx.paths {
            self.st.get_or_insert(p.id);
        }
        if !predicted {
            for (_, s) in self.st.iter_mut() {
                s.unused = false;
            }
            return;
        }
        // Remove the active eligible path with the lowest DSR, keeping one.
        let active = |s: &Self, id: PathId| !s.is_unused(id);
        let n_active = ctx.paths.iter().filter(|p| ctx.eligible(p) && active(self, p.id)).count();
        if n_active > 1 {
            let worst = ctx
                .paths
                .iter()
                .filter(|p| ctx.eligible(p) && active(self, p.id))
                .min_by_key(|p| (self.dsr_of(p.id), std::cmp::Reverse(p.srtt)))
                .map(|p| p.id);
            if let Some(s) = worst.and_then(|id| self.st.get_mut(id)) {
                s.unused = true;
                self.removals += 1;
            }
        }
        self.readmit(ctx);
    }

    /// Alg. 1 lines 8-13: UNUSED paths with a DSR above the worst active
    /// path's come back.
    fn readmit(&mut self, ctx: &SchedContext<'_>) {
        let worst_active = ctx
            .paths
            .iter()
            .filter(|p| ctx.eligible(p) && !self.is_unused(p.id))
            .map(|p| self.dsr_of(p.id))
            .min();
        let Some(worst) = worst_active else {
            // No active path left: full mode.
            for (_, s) in self.st.iter_mut() {
                s.unused = false;
            }
            return;
        };
        for (_, s) in self.st.iter_mut() {
            if s.unused && s.dsr.unwrap_or(u64::MAX) > worst {
                s.unused = false;
            }
        }
    }
}

impl Scheduler for RecScheduler {
    fn name(&self) -> &'static str {
        "rec"
    }

    fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision {
        let round =
            ctx.paths.iter().filter(|p| ctx.eligible(p)).map(|p| p.srtt).min().unwrap_or(Duration::ZERO);
        if self.last_round.is_none_or(|t| ctx.now.saturating_duration_since(t) >= round) {
            self.last_round = Some(ctx.now);
            self.round(ctx);
        }
        let best = ctx.best_by(|p| ctx.eligible(p) && p.can_send() && !self.is_unused(p.id), |p| p.srtt);
        best.map_or(Decision::WAIT, |p| Decision::send(p.id))
    }

    fn on_rate_feedback(&mut self, path: PathId, bytes_per_sec: u64) {
        self.st.get_or_insert(path).dsr = Some(bytes_per_sec);
    }

    fn on_path_closed(&mut self, path: PathId) {
        self.st.remove(path);
    }

    fn metrics(&self) -> SchedMetrics {
        let mut m = SchedMetrics::named(self.name());
        for (id, s) in self.st.iter() {
            let pm = m.path_mut(*id);
            pm.dsr = s.dsr;
            pm.role = Some(if s.unused { PathRole::Unused } else { PathRole::NonRedundant });
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::PendingInfo;
    use super::*;

    #[test]
    fn jitter_hand_values() {
        // Samples 100, 80, 60: avg 80, max−min 40. Current 60: (60−80)/40 = −0.5.
        assert_eq!(awnd_jitter(&[100, 80, 60], 60), -0.5);
        // Flat window: no jitter.
        assert_eq!(awnd_jitter(&[50, 50], 50), 0.0);
        assert_eq!(awnd_jitter(&[], 7), 0.0);
    }

    #[test]
    fn dsr_estimator_rounds() {
        let mut d = DsrEstimator::default();
        // Round 1: 10 × 1000 B in 100 ms = 100 000 B/s; first round sets it.
        for _ in 0..10 {
            d.on_packet(1000);
        }
        assert_eq!(d.end_round(Duration::from_millis(100)), 100_000);
        // Round 2: 20 000 B in 100 ms = 200 000 B/s, no loss:
        // rate = ½·100 000 + ½·200 000 = 150 000;
        // smoothed = ¾·100 000 + ¼·150 000 = 112 500.
        for _ in 0..20 {
            d.on_packet(1000);
        }
        assert_eq!(d.end_round(Duration::from_millis(100)), 112_500);
        // Round 3: 8 received, 2 lost (PLR 0.2): sample 80 000 discounted to
        // 64 000; rate = ½·150 000 + ½·64 000 = 107 000;
        // smoothed = ¾·112 500 + ¼·107 000 = 111 125.
        for _ in 0..8 {
            d.on_packet(1000);
        }
        d.on_lost(2);
        assert_eq!(d.end_round(Duration::from_millis(100)), 111_125);
        // An empty round changes nothing.
        assert_eq!(d.end_round(Duration::from_millis(100)), 111_125);
    }

    fn ctx_at<'a>(now: Instant, paths: &'a [crate::sched::PathSnapshot], awnd: u64) -> SchedContext<'a> {
        SchedContext::new(
            now,
            paths,
            PendingInfo { new_bytes: 1 << 20, peer_recv_window: Some(awnd), ..Default::default() },
        )
    }

    #[test]
    fn removes_lowest_dsr_on_predicted_blocking_and_brings_it_back() {
        let mut s = RecScheduler::default();
        // Wi-Fi 0 (20 ms), WiMax 1 (30 ms), UMTS 2 (10 ms, but slow).
        let paths = [path(0, 20, 10, 0), path(1, 30, 10, 0), path(2, 10, 10, 0)];
        s.on_rate_feedback(PathId(0), 1_375_000);
        s.on_rate_feedback(PathId(1), 1_250_000);
        s.on_rate_feedback(PathId(2), 48_000);
        let t0 = t0();
        let ms = |n| t0 + Duration::from_millis(n);
        // Round 1: awnd 100 000 (single sample, jitter 0): full mode, minRTT
        // picks UMTS.
        assert_eq!(s.decide(&ctx_at(ms(0), &paths, 100_000)).path(), Some(PathId(2)));
        // Round 2: awnd 80 000: samples {100k, 80k}, avg 90k, jitter
        // (80−90)/20 = −0.5 < 0 and −0.5 − 0 < 0 → blocking predicted:
        // UMTS (lowest DSR) becomes UNUSED; data goes to Wi-Fi.
        assert_eq!(s.decide(&ctx_at(ms(10), &paths, 80_000)).path(), Some(PathId(0)));
        assert!(s.is_unused(PathId(2)));
        assert_eq!(s.removals(), 1);
        // Within the same round nothing is re-evaluated.
        assert_eq!(s.decide(&ctx_at(ms(15), &paths, 10)).path(), Some(PathId(0)));
        // Round 3: awnd 60 000: samples {100k, 80k, 60k}, jitter −0.5, not
        // falling any more (−0.5 − (−0.5) = 0) → no prediction: full mode.
        s.decide(&ctx_at(ms(20), &paths, 60_000));
        assert!(!s.is_unused(PathId(2)));
        // Round 4: awnd 20 000: samples {100,80,60,20}k avg 65k, jitter
        // (20−65)/80 = −0.5625 < −0.5 → predicted again: UMTS out again.
        s.decide(&ctx_at(ms(30), &paths, 20_000));
        assert!(s.is_unused(PathId(2)));
        // A fresh sender for the return rule (Alg. 1 lines 8-13).
        let mut s2 = RecScheduler::default();
        s2.on_rate_feedback(PathId(0), 1_375_000);
        s2.on_rate_feedback(PathId(1), 1_250_000);
        s2.on_rate_feedback(PathId(2), 48_000);
        s2.decide(&ctx_at(ms(0), &paths, 100_000));
        s2.decide(&ctx_at(ms(10), &paths, 80_000)); // UMTS out (as above)
        assert!(s2.is_unused(PathId(2)));
        // UMTS recovers to 2 MB/s, WiMax drops to 40 kB/s.
        s2.on_rate_feedback(PathId(2), 2_000_000);
        s2.on_rate_feedback(PathId(1), 40_000);
        // Round 3: awnd 40 000: samples {100,80,40}k avg 73.3k, range 60k,
        // jitter −0.556 < −0.5 → predicted. Lowest active DSR: WiMax
        // (40 kB/s) out; worst active is now Wi-Fi (1.375 MB/s) and UMTS
        // (2 MB/s) exceeds it → back.
        assert_eq!(s2.decide(&ctx_at(ms(20), &paths, 40_000)).path(), Some(PathId(2)));
        assert!(s2.is_unused(PathId(1)));
        assert!(!s2.is_unused(PathId(2)));
        let m = s2.metrics();
        let role = |id| m.paths.iter().find(|p| p.id == PathId(id)).and_then(|p| p.role);
        assert_eq!(role(1), Some(PathRole::Unused));
        assert_eq!(role(2), Some(PathRole::NonRedundant));
    }

    #[test]
    fn never_removes_the_last_path() {
        let mut s = RecScheduler::default();
        let paths = [path(0, 20, 10, 0)];
        s.on_rate_feedback(PathId(0), 1000);
        let t0 = t0();
        s.decide(&ctx_at(t0, &paths, 100_000));
        let d = s.decide(&ctx_at(t0 + Duration::from_millis(20), &paths, 50_000));
        assert_eq!(d.path(), Some(PathId(0)));
        assert_eq!(s.removals(), 0);
    }
}
