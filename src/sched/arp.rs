//! AR&P, the adaptively redundant and predictive scheduler of seed 000 §V.
//!
//! *AR-Scheduling* (Alg. 2) splits the paths into a non-redundant set N,
//! which carries new data, and a redundant set R, whose paths carry copies of
//! data already sent on N (oldest unacknowledged first) to stay alive and
//! measured. It re-runs every min_i RTT_i.
//!
//! *P-Scheduling* (Alg. 3, eq. 4) pre-assigns the packets of a scheduling
//! window of max_{i∈N} RTT_i · Σ_{i∈N} BW_i bytes to the path of N with the
//! earliest predicted arrival A_i(j) = t0 + L_i/x_i + r_i/2, where L_i is what
//! is already assigned to path i and not yet sent (plus its pacer backlog).
//! Each path then sends what was assigned to it when its window allows.
//! While every path is in slow start, the scheduler is plain round-robin.

use std::time::{Duration, Instant};

use super::simple::RrScheduler;
use super::{secs, Counters, Decision, PathRole, PerPath, SchedContext, SchedMetrics, Scheduler};
use crate::PathId;

/// Alg. 2's in-flight floor: fewer packets in flight cannot trigger fast
/// retransmit, so such a path stays redundant.
pub const MIN_INFLIGHT_FOR_N: usize = 4;

/// The AR-Scheduling test for path j against the current set N, given
/// Σ_N x_i (`sum_x`) and Σ_N x_i·r_i (`sum_xr`):
///
/// x_j / Σ_N x_i > Σ_N x_i(r_j − 2r_i) / Σ_N x_i r_i, and at least 4 packets in
/// flight. The right side equals (r_j·Σx − 2·Σxr)/Σxr, so two sums suffice.
/// Units only need to be consistent (rates in any unit, RTTs in seconds).
pub fn ar_joins_non_redundant(
    sum_x: f64,
    sum_xr: f64,
    x_j: f64,
    r_j: f64,
    packets_in_flight_j: usize,
) -> bool {
    if packets_in_flight_j < MIN_INFLIGHT_FOR_N || sum_x <= 0.0 || sum_xr <= 0.0 {
        return false;
    }
    x_j / sum_x > (r_j * sum_x - 2.0 * sum_xr) / sum_xr
}

/// One path's input to (and output of) [`ar_partition`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArPath {
    /// The path.
    pub id: PathId,
    /// Sending rate x_i (any unit, e.g. bytes/s).
    pub x: f64,
    /// RTT r_i in seconds.
    pub r: f64,
    /// Packets in flight.
    pub packets_in_flight: usize,
    /// Output: the path is in N (else in R).
    pub non_redundant: bool,
}

/// Alg. 2: sort `paths` by x_i/r_i descending (in place, no allocation), put
/// the first in N and each next one in N iff [`ar_joins_non_redundant`].
pub fn ar_partition(paths: &mut [ArPath]) {
    let value = |p: &ArPath| if p.r > 0.0 { p.x / p.r } else { f64::INFINITY };
    paths.sort_unstable_by(|a, b| value(b).total_cmp(&value(a)).then(a.id.cmp(&b.id)));
    let (mut sum_x, mut sum_xr) = (0.0, 0.0);
    for (k, p) in paths.iter_mut().enumerate() {
        p.non_redundant = k == 0 || ar_joins_non_redundant(sum_x, sum_xr, p.x, p.r, p.packets_in_flight);
        if p.non_redundant {
            sum_x += p.x;
            sum_xr += p.x * p.r;
        }
    }
}

/// Eq. 4 without t0: the time from now until a packet put behind
/// `queued_bytes` on a path of rate `rate` (bytes/s) and RTT `rtt` arrives.
pub fn predicted_arrival(queued_bytes: u64, rate: f64, rtt: Duration) -> Duration {
    if rate <= 0.0 || !rate.is_finite() {
        return Duration::MAX;
    }
    let wait = queued_bytes as f64 / rate;
    Duration::try_from_secs_f64(wait).unwrap_or(Duration::MAX).saturating_add(rtt / 2)
}

/// One path of N as seen by [`p_scheduling_choice`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PCandidate {
    /// The path.
    pub id: PathId,
    /// Bytes assigned to it and not yet sent (L_i).
    pub queued_bytes: u64,
    /// Sending rate x_i in bytes/s.
    pub rate: f64,
    /// RTT r_i.
    pub rtt: Duration,
}

/// Alg. 3's choice: the candidate with the smallest predicted arrival
/// (first in order on ties).
pub fn p_scheduling_choice(cands: &[PCandidate]) -> Option<PathId> {
    let mut best: Option<(PathId, Duration)> = None;
    for c in cands {
        let a = predicted_arrival(c.queued_bytes, c.rate, c.rtt);
        if best.is_none_or(|(_, b)| a < b) {
            best = Some((c.id, a));
        }
    }
    best.map(|(id, _)| id)
}

#[derive(Clone, Copy, Debug, Default)]
struct ArpPathState {
    role: Option<PathRole>,
    /// L_i: bytes pre-scheduled on this path and not yet sent.
    queued: u64,
}

/// Upper bound on packets pre-scheduled in one `decide` call, to keep the
/// worst case per call bounded; the rest is scheduled on later calls.
const MAX_PRESCHEDULE_PER_CALL: usize = 64;

/// The AR&P scheduler.
#[derive(Debug, Default)]
pub struct ArpScheduler {
    st: PerPath<ArpPathState>,
    last_ar: Option<Instant>,
    rr_last: Option<PathId>,
    buf: Vec<ArPath>,
    c: Counters,
}

impl ArpScheduler {
    /// The role AR-Scheduling last gave `path`.
    pub fn role(&self, path: PathId) -> Option<PathRole> {
        self.st.get(path).and_then(|s| s.role)
    }

    /// Bytes pre-scheduled on `path` and not yet sent.
    pub fn queued(&self, path: PathId) -> u64 {
        self.st.get(path).map_or(0, |s| s.queued)
    }

    fn in_n(&self, id: PathId) -> bool {
        self.role(id) == Some(PathRole::NonRedundant)
    }

    /// Re-run Alg. 2 if min RTT has elapsed or an eligible path has no role.
    fn maybe_run_ar(&mut self, ctx: &SchedContext<'_>) {
        let min_rtt =
            ctx.paths.iter().filter(|p| ctx.eligible(p)).map(|p| p.srtt).min().unwrap_or(Duration::ZERO);
        let due = self.last_ar.is_none_or(|t| ctx.now.saturating_duration_since(t) >= min_rtt);
        let unseen = ctx.paths.iter().any(|p| {
            let role = self.role(p.id);
            if ctx.eligible(p) {
                role.is_none() || role == Some(PathRole::Unused)
            } else {
                role != Some(PathRole::Unused)
            }
        });
        if !due && !unseen {
            return;
        }
        self.last_ar = Some(ctx.now);
        self.buf.clear();
        for p in ctx.paths {
            if ctx.eligible(p) {
                self.buf.push(ArPath {
                    id: p.id,
                    x: p.rate(),
                    r: secs(p.srtt),
                    packets_in_flight: p.packets_in_flight,
                    non_redundant: false,
                });
            } else {
                let s = self.st.get_or_insert(p.id);
                s.role = Some(PathRole::Unused);
                s.queued = 0;
            }
        }
        ar_partition(&mut self.buf);
        for a in &self.buf {
            let s = self.st.get_or_insert(a.id);
            let role = if a.non_redundant { PathRole::NonRedundant } else { PathRole::Redundant };
            if role != PathRole::NonRedundant {
                // Packets pre-scheduled on a path leaving N are re-scheduled.
                s.queued = 0;
            }
            s.role = Some(role);
        }
    }

    /// P-Scheduling: send what is assigned to a path of N that can send, or
    /// assign more packets of the window and try again.
    fn p_schedule(&mut self, ctx: &SchedContext<'_>) -> Option<PathId> {
        let pending = ctx.pending.total();
        if pending == 0 {
            return None;
        }
        let (mut window, mut max_rtt, mut rate_sum, mut queued) = (0.0, 0.0f64, 0.0, 0u64);
        for p in ctx.paths.iter().filter(|p| ctx.eligible(p)) {
            if self.in_n(p.id) {
                max_rtt = max_rtt.max(secs(p.srtt));
                rate_sum += p.rate();
                queued += self.queued(p.id);
            }
        }
        if max_rtt > 0.0 {
            window = max_rtt * rate_sum;
        }
        if queued > pending {
            // Data went out some other way (or was cancelled): re-plan.
            for (_, s) in self.st.iter_mut() {
                s.queued = 0;
            }
            queued = 0;
        }
        // At least one packet may always be planned, so a tiny window cannot stall.
        let limit = (window as u64).max(1).min(pending);
        for _ in 0..MAX_PRESCHEDULE_PER_CALL {
            if let Some(id) = self.ready_path(ctx) {
                return Some(id);
            }
            if queued >= limit {
                return None;
            }
            let mut best: Option<(PathId, Duration, usize)> = None;
            for p in ctx.paths.iter().filter(|p| ctx.eligible(p) && self.in_n(p.id)) {
                let l = self.queued(p.id).saturating_add(p.pacing_backlog as u64);
                let a = predicted_arrival(l, p.rate(), p.srtt);
                if best.is_none_or(|(_, b, _)| a < b) {
                    best = Some((p.id, a, p.mss));
                }
            }
            let (id, _, mss) = best?;
            let size = (mss.max(1) as u64).min(pending - queued);
            self.st.get_or_insert(id).queued += size;
            queued += size;
        }
        self.ready_path(ctx)
    }

    /// A path of N with window space and something assigned to it (lowest
    /// srtt first).
    fn ready_path(&self, ctx: &SchedContext<'_>) -> Option<PathId> {
        ctx.best_by(
            |p| ctx.eligible(p) && p.has_space() && self.in_n(p.id) && self.queued(p.id) > 0,
            |p| p.srtt,
        )
        .map(|p| p.id)
    }

    /// A path of R that can carry a copy: window space, and fewer bytes in
    /// flight than the connection has unacknowledged (so copies do not run
    /// ahead of the data they duplicate).
    fn redundant_path(&self, ctx: &SchedContext<'_>) -> Option<PathId> {
        ctx.best_by(
            |p| {
                ctx.eligible(p)
                    && p.has_space()
                    && self.role(p.id) == Some(PathRole::Redundant)
                    && (p.bytes_in_flight as u64) < ctx.pending.unacked_bytes
            },
            |p| p.srtt,
        )
        .map(|p| p.id)
    }
}

impl Scheduler for ArpScheduler {
    fn name(&self) -> &'static str {
        "arp"
    }

    fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision {
        let all_slow_start = ctx.paths.iter().filter(|p| ctx.eligible(p)).all(|p| p.in_slow_start);
        let d = if all_slow_start {
            // Rates are unreliable in slow start: round-robin, all paths in N.
            for p in ctx.paths {
                let role = if ctx.eligible(p) { PathRole::NonRedundant } else { PathRole::Unused };
                let s = self.st.get_or_insert(p.id);
                s.role = Some(role);
                s.queued = 0;
            }
            self.last_ar = None;
            match RrScheduler::next(self.rr_last, ctx) {
                Some(id) if ctx.pending.total() > 0 => {
                    self.rr_last = Some(id);
                    Decision::send(id)
                }
                _ => Decision::WAIT,
            }
        } else {
            self.maybe_run_ar(ctx);
            match self.p_schedule(ctx) {
                Some(id) => Decision::send(id),
                None => match self.redundant_path(ctx) {
                    Some(id) => Decision::Redundant { path: id },
                    None => Decision::WAIT,
                },
            }
        };
        self.c.record(d)
    }

    fn on_sent(&mut self, path: PathId, bytes: usize, redundant: bool) {
        if !redundant {
            if let Some(s) = self.st.get_mut(path) {
                s.queued = s.queued.saturating_sub(bytes as u64);
            }
        }
        self.c.sent(path, bytes, redundant);
    }

    fn on_path_closed(&mut self, path: PathId) {
        self.st.remove(path);
    }

    fn metrics(&self) -> SchedMetrics {
        let mut m = self.c.metrics(self.name());
        for (id, s) in self.st.iter() {
            if !m.paths.iter().any(|x| x.id == *id) {
                m.paths.push(super::PathSchedMetrics::new(*id));
            }
            if let Some(pm) = m.paths.iter_mut().find(|x| x.id == *id) {
                pm.role = s.role;
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::{PathSnapshot, PendingInfo};
    use super::*;

    fn ar(id: u32, x: f64, r_ms: f64, inflight: usize) -> ArPath {
        ArPath { id: PathId(id), x, r: r_ms / 1000.0, packets_in_flight: inflight, non_redundant: false }
    }

    fn n_set(paths: &[ArPath]) -> Vec<u32> {
        let mut v: Vec<u32> = paths.iter().filter(|p| p.non_redundant).map(|p| p.id.0).collect();
        v.sort();
        v
    }

    #[test]
    fn ar_two_paths() {
        // A: x = 100, r = 20 ms (x/r = 5000); B: x = 50, r = 40 ms (1250).
        // N = {A}: Σx = 100, Σxr = 100·0.02 = 2.
        // B: left 50/100 = 0.5; right 100·(0.04 − 2·0.02)/2 = 0 → 0.5 > 0: joins N.
        assert!(ar_joins_non_redundant(100.0, 2.0, 50.0, 0.04, 10));
        let mut p = [ar(1, 50.0, 40.0, 10), ar(0, 100.0, 20.0, 10)];
        ar_partition(&mut p);
        assert_eq!(p[0].id, PathId(0), "sorted by x/r descending");
        assert_eq!(n_set(&p), [0, 1]);

        // B with r = 100 ms (x/r = 500): right 100·(0.1 − 0.04)/2 = 3;
        // 0.5 > 3 is false → R.
        assert!(!ar_joins_non_redundant(100.0, 2.0, 50.0, 0.1, 10));
        let mut p = [ar(0, 100.0, 20.0, 10), ar(1, 50.0, 100.0, 10)];
        ar_partition(&mut p);
        assert_eq!(n_set(&p), [0]);

        // B at 40 ms would join, but with 3 packets in flight it stays in R.
        assert!(!ar_joins_non_redundant(100.0, 2.0, 50.0, 0.04, 3));
        let mut p = [ar(0, 100.0, 20.0, 10), ar(1, 50.0, 40.0, 3)];
        ar_partition(&mut p);
        assert_eq!(n_set(&p), [0]);
        // The first path joins N whatever its in-flight count.
        let mut p = [ar(0, 100.0, 20.0, 0), ar(1, 50.0, 40.0, 4)];
        ar_partition(&mut p);
        assert_eq!(n_set(&p), [0, 1]);
    }

    #[test]
    fn ar_three_paths() {
        // A (100, 20 ms, x/r 5000), B (50, 40 ms, 1250), C (30, 30 ms, 1000).
        // B joins as in ar_two_paths → N = {A, B}: Σx = 150, Σxr = 2 + 2 = 4.
        // C: left 30/150 = 0.2; right [100·(0.03−0.04) + 50·(0.03−0.08)]/4
        //    = (−1 − 2.5)/4 = −0.875 → 0.2 > −0.875: joins.
        assert!(ar_joins_non_redundant(150.0, 4.0, 30.0, 0.03, 8));
        let mut p = [ar(2, 30.0, 30.0, 8), ar(1, 50.0, 40.0, 8), ar(0, 100.0, 20.0, 8)];
        ar_partition(&mut p);
        assert_eq!(p.map(|a| a.id.0), [0, 1, 2]);
        assert_eq!(n_set(&p), [0, 1, 2]);

        // C slow: (10, 80 ms, x/r 125). right [100·(0.08−0.04) + 50·(0.08−0.08)]/4
        //    = 4/4 = 1; left 10/150 = 0.067 → R.
        assert!(!ar_joins_non_redundant(150.0, 4.0, 10.0, 0.08, 8));
        let mut p = [ar(0, 100.0, 20.0, 8), ar(1, 50.0, 40.0, 8), ar(2, 10.0, 80.0, 8)];
        ar_partition(&mut p);
        assert_eq!(n_set(&p), [0, 1]);

        // B has 2 packets in flight → R, so C is tested against N = {A}:
        // Σx = 100, Σxr = 2; C (30, 30 ms): left 0.3, right 100·(0.03−0.04)/2
        // = −0.5 → joins. N = {A, C}, R = {B}.
        let mut p = [ar(0, 100.0, 20.0, 8), ar(1, 50.0, 40.0, 2), ar(2, 30.0, 30.0, 8)];
        ar_partition(&mut p);
        assert_eq!(n_set(&p), [0, 2]);
    }

    #[test]
    fn p_scheduling_picks_earliest_arrival() {
        // A: 1 MB/s, 40 ms, 10 000 B queued → 10 ms + 20 ms = 30 ms.
        // B: 250 kB/s, 20 ms, nothing queued → 0 + 10 ms = 10 ms → B.
        let a = PCandidate {
            id: PathId(0),
            queued_bytes: 10_000,
            rate: 1_000_000.0,
            rtt: Duration::from_millis(40),
        };
        let mut b =
            PCandidate { id: PathId(1), queued_bytes: 0, rate: 250_000.0, rtt: Duration::from_millis(20) };
        assert_eq!(predicted_arrival(10_000, 1e6, Duration::from_millis(40)), Duration::from_millis(30));
        assert_eq!(p_scheduling_choice(&[a, b]), Some(PathId(1)));
        // B with 6 000 B queued: 24 ms + 10 ms = 34 ms > 30 ms → A.
        b.queued_bytes = 6_000;
        assert_eq!(p_scheduling_choice(&[a, b]), Some(PathId(0)));
        // A rate of zero never wins.
        b.rate = 0.0;
        b.queued_bytes = 0;
        assert_eq!(p_scheduling_choice(&[a, b]), Some(PathId(0)));
        assert_eq!(p_scheduling_choice(&[]), None);
    }

    #[test]
    fn round_robin_while_all_in_slow_start() {
        let mut s = ArpScheduler::default();
        let mut p0 = path(0, 10, 10, 0);
        let mut p1 = path(1, 200, 10, 0);
        p0.in_slow_start = true;
        p1.in_slow_start = true;
        let paths = [p0, p1];
        let now = t0();
        let picks: Vec<_> =
            (0..4).map(|_| s.decide(&SchedContext::new(now, &paths, pending(100_000))).path()).collect();
        assert_eq!(picks, [Some(PathId(0)), Some(PathId(1)), Some(PathId(0)), Some(PathId(1))]);
    }

    fn rated(id: u32, srtt_ms: u64, rate: u64, cwnd: usize, inflight: usize) -> PathSnapshot {
        PathSnapshot { bandwidth: rate, ..path(id, srtt_ms, cwnd, inflight) }
    }

    #[test]
    fn slow_path_goes_redundant_and_carries_copies() {
        // Path 0: 10 MB/s, 20 ms; path 1: 0.5 MB/s, 200 ms, 8 in flight.
        // N = {0}: Σx = 1e7, Σxr = 2e5. Path 1: left 5e5/1e7 = 0.05;
        // right (0.2·1e7 − 4e5)/2e5 = 8 → R.
        let mut s = ArpScheduler::default();
        let now = t0();
        let paths = [rated(0, 20, 10_000_000, 100, 100), rated(1, 200, 500_000, 20, 8)];
        let pending = PendingInfo { new_bytes: 1_000_000, unacked_bytes: 200_000, ..Default::default() };
        // Path 0 is full: new data waits for it; path 1 carries a copy.
        let d = s.decide(&SchedContext::new(now, &paths, pending));
        assert_eq!(d, Decision::Redundant { path: PathId(1) });
        assert_eq!(s.role(PathId(0)), Some(PathRole::NonRedundant));
        assert_eq!(s.role(PathId(1)), Some(PathRole::Redundant));
        // Path 0 opens: it sends the packets pre-scheduled on it.
        let paths = [rated(0, 20, 10_000_000, 100, 90), rated(1, 200, 500_000, 20, 8)];
        let d = s.decide(&SchedContext::new(now, &paths, pending));
        assert_eq!(d, Decision::send(PathId(0)));
        let q = s.queued(PathId(0));
        assert!(q > 0);
        s.on_sent(PathId(0), 1000, false);
        assert_eq!(s.queued(PathId(0)), q - 1000);
        let m = s.metrics();
        assert!(m.paths.iter().any(|p| p.id == PathId(1) && p.role == Some(PathRole::Redundant)));
    }

    #[test]
    fn p_scheduling_assigns_to_fast_path_even_when_slow_has_space() {
        // Two paths in N: path 0 20 ms at 1 MB/s (full), path 1 60 ms at
        // 1 MB/s (space). Window = 60 ms · 2 MB/s = 120 kB.
        // Check N: path 0 first (x/r 5e7 vs 1.67e7); Σx = 1e6, Σxr = 2e4;
        // path 1: left 1, right (0.06·1e6 − 4e4)/2e4 = 1 → 1 > 1 false → R!
        // Use 50 ms instead: right (0.05e6 − 4e4)/2e4 = 0.5 < 1 → N.
        let mut s = ArpScheduler::default();
        let now = t0();
        let paths = [rated(0, 20, 1_000_000, 10, 10), rated(1, 50, 1_000_000, 10, 5)];
        // First packet: A_0 = 0 + 10 ms, A_1 = 0 + 25 ms → path 0, which is
        // full. Second: A_0 = 1000/1e6 s + 10 ms = 11 ms < 25 ms → path 0 ...
        // Path 0 takes packets until its queue reaches 15 kB (15 ms + 10 ms =
        // 25 ms); only then does path 1 get one, and it can send it.
        let d = s.decide(&SchedContext::new(now, &paths, pending(1_000_000)));
        assert_eq!(s.role(PathId(1)), Some(PathRole::NonRedundant));
        assert_eq!(d, Decision::send(PathId(1)));
        assert_eq!(s.queued(PathId(0)), 16_000);
        assert_eq!(s.queued(PathId(1)), 1_000);
    }
}
