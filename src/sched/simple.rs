//! The stateless schedulers: minRTT (LRF), round-robin, redundant, LPC and LET
//! (seed 002 §IV). All consider only eligible paths with cwnd space.

use super::{Decision, PathList, SchedContext, Scheduler};
use crate::PathId;

/// Low RTT First: the eligible path with free window and the lowest srtt.
#[derive(Debug, Default)]
pub struct MinRttScheduler {}

impl Scheduler for MinRttScheduler {
    fn name(&self) -> &'static str {
        "minrtt"
    }
    fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision {
        match ctx.lowest_rtt_with_space() {
            Some(p) => Decision::send(p.id),
            None => Decision::WAIT,
        }
    }
}

/// Round-robin over eligible paths with free window, in path-ID order, so the
/// rotation does not depend on the order of the snapshot slice.
#[derive(Debug, Default)]
pub struct RrScheduler {
    last: Option<PathId>,
}

impl RrScheduler {
    /// The next path after `last` in ID order (wrapping) among paths that are
    /// eligible and have window space.
    pub(crate) fn next(last: Option<PathId>, ctx: &SchedContext<'_>) -> Option<PathId> {
        let ok = |p: &&super::PathSnapshot| ctx.eligible(p) && p.can_send();
        let after = last.and_then(|l| ctx.paths.iter().filter(ok).filter(|p| p.id > l).map(|p| p.id).min());
        after.or_else(|| ctx.paths.iter().filter(ok).map(|p| p.id).min())
    }
}

impl Scheduler for RrScheduler {
    fn name(&self) -> &'static str {
        "rr"
    }
    fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision {
        match Self::next(self.last, ctx) {
            Some(id) => {
                self.last = Some(id);
                Decision::send(id)
            }
            None => Decision::WAIT,
        }
    }
}

/// Every packet on every path: the lowest-RTT path with space carries it and
/// every other eligible path owes a copy, which it sends before any new data
/// (MPTCP's redundant scheduler: each subflow carries every segment not yet
/// acknowledged).
#[derive(Debug, Default)]
pub struct RedundantScheduler {}

impl Scheduler for RedundantScheduler {
    fn name(&self) -> &'static str {
        "redundant"
    }
    fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision {
        match ctx.lowest_rtt_with_space() {
            Some(first) => {
                let mut also = PathList::new();
                // Every other path owes a copy, sent when that path can
                // send: with paced controllers two paths are seldom free at
                // the same instant, and giving copies only to paths free
                // now aggregated (1% copies on 2 x 100 Mbit/s under bbr).
                for p in ctx.paths {
                    if p.id != first.id && ctx.eligible(p) {
                        also.push(p.id);
                    }
                }
                Decision::Send { path: first.id, also }
            }
            None => Decision::WAIT,
        }
    }
}

/// Largest Packet Credits: the path with the most free window.
#[derive(Debug, Default)]
pub struct LpcScheduler {}

impl Scheduler for LpcScheduler {
    fn name(&self) -> &'static str {
        "lpc"
    }
    fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision {
        // Largest space = smallest negated space; ties go to the lower srtt.
        let best = ctx.best_by(|p| ctx.eligible(p) && p.can_send(), |p| (-(p.cwnd_space() as f64), p.srtt));
        best.map_or(Decision::WAIT, |p| Decision::send(p.id))
    }
}

/// Largest Estimated Throughput: the path with the largest cwnd/srtt.
#[derive(Debug, Default)]
pub struct LetScheduler {}

/// cwnd/srtt in bytes/s (seed 002's throughput estimate).
pub(crate) fn cwnd_throughput(p: &super::PathSnapshot) -> f64 {
    p.cwnd as f64 / super::secs(p.srtt).max(1e-6)
}

impl Scheduler for LetScheduler {
    fn name(&self) -> &'static str {
        "let"
    }
    fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision {
        let best = ctx.best_by(|p| ctx.eligible(p) && p.can_send(), |p| -cwnd_throughput(p));
        best.map_or(Decision::WAIT, |p| Decision::send(p.id))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::PathStatus;
    use super::*;

    fn decide(s: &mut dyn Scheduler, paths: &[super::super::PathSnapshot]) -> Decision {
        s.decide(&SchedContext::new(t0(), paths, pending(100_000)))
    }

    #[test]
    fn minrtt_picks_lowest_srtt_with_space() {
        // Path 0: 20 ms but full (10/10); path 1: 30 ms, space; path 2: 80 ms.
        let paths = [path(0, 20, 10, 10), path(1, 30, 10, 2), path(2, 80, 40, 0)];
        let mut s = MinRttScheduler::default();
        assert_eq!(decide(&mut s, &paths), Decision::send(PathId(1)));
        // Everything full: wait.
        let paths = [path(0, 20, 10, 10), path(1, 30, 10, 10)];
        assert_eq!(decide(&mut s, &paths), Decision::WAIT);
        // Unusable path ignored.
        let mut p0 = path(0, 5, 10, 0);
        p0.usable = false;
        let paths = [p0, path(1, 30, 10, 0)];
        assert_eq!(decide(&mut s, &paths), Decision::send(PathId(1)));
    }

    #[test]
    fn rr_rotates_in_id_order_skipping_full_paths() {
        let mut s = RrScheduler::default();
        let paths = [path(2, 10, 10, 0), path(0, 10, 10, 0), path(1, 10, 10, 0)];
        let picks: Vec<_> = (0..4).map(|_| decide(&mut s, &paths).path()).collect();
        assert_eq!(picks, [Some(PathId(0)), Some(PathId(1)), Some(PathId(2)), Some(PathId(0))]);
        // Path 1 becomes full: 0 -> 2 -> 0.
        let paths = [path(2, 10, 10, 0), path(0, 10, 10, 0), path(1, 10, 10, 10)];
        assert_eq!(decide(&mut s, &paths).path(), Some(PathId(2)));
        assert_eq!(decide(&mut s, &paths).path(), Some(PathId(0)));
    }

    #[test]
    fn redundant_copies_owed_by_every_other_eligible_path() {
        let mut s = RedundantScheduler::default();
        let mut backup = path(3, 5, 10, 0);
        backup.status = PathStatus::Backup;
        // Path 2's window is full: it owes the copy all the same.
        let paths = [path(0, 40, 10, 0), path(1, 10, 10, 0), path(2, 20, 10, 10), backup];
        match decide(&mut s, &paths) {
            Decision::Send { path, also } => {
                assert_eq!(path, PathId(1));
                assert_eq!(also.as_slice(), &[PathId(0), PathId(2)]);
            }
            d => panic!("unexpected {d:?}"),
        }
    }

    #[test]
    fn lpc_picks_largest_free_window() {
        // Free windows: path 0 = 10-2 = 8 pkts, path 1 = 30-25 = 5, path 2 = 12-0 = 12.
        let paths = [path(0, 10, 10, 2), path(1, 20, 30, 25), path(2, 80, 12, 0)];
        let mut s = LpcScheduler::default();
        assert_eq!(decide(&mut s, &paths), Decision::send(PathId(2)));
    }

    #[test]
    fn let_picks_largest_cwnd_over_srtt() {
        // cwnd/srtt: path 0 = 10 kB/10 ms = 1 MB/s; path 1 = 30 kB/20 ms = 1.5 MB/s;
        // path 2 = 80 kB/80 ms = 1 MB/s. Path 1 wins even though it is not the fastest RTT.
        let paths = [path(0, 10, 10, 0), path(1, 20, 30, 29), path(2, 80, 80, 0)];
        let mut s = LetScheduler::default();
        assert_eq!(decide(&mut s, &paths), Decision::send(PathId(1)));
        // Path 1 full: tie 1 MB/s between 0 and 2, first in slice order wins.
        let paths = [path(0, 10, 10, 0), path(1, 20, 30, 30), path(2, 80, 80, 0)];
        assert_eq!(decide(&mut s, &paths), Decision::send(PathId(0)));
    }
}
