//! The sticky schedulers of seed 002 §IV (GR-STY, TP-STY, TR-STY). All start
//! like LRF (lowest srtt with window space) and then stay on the current path,
//! differing only in when they agree to switch:
//!
//! - GR-STY stays on the current path as long as it has window space; once
//!   it is congested, it moves to the LRF choice among the others.
//! - TP-STY moves to the LRF candidate only if its throughput (cwnd/srtt) is
//!   larger than the current path's; otherwise it keeps the current path,
//!   waiting for its window to open.
//! - TR-STY additionally requires the candidate to have a smaller srtt.
//!
//! A current path that is no longer eligible is dropped and the choice starts
//! again from LRF.

use super::simple::cwnd_throughput;
use super::{Decision, PathSnapshot, SchedContext, Scheduler};
use crate::PathId;

/// Which switching rule a [`StickyScheduler`] applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StickyKind {
    /// GR-STY.
    Greedy,
    /// TP-STY.
    Throughput,
    /// TR-STY.
    ThroughputRtt,
}

/// GR-STY, TP-STY or TR-STY.
#[derive(Debug)]
pub struct StickyScheduler {
    kind: StickyKind,
    current: Option<PathId>,
    switches: u64,
}

impl StickyScheduler {
    /// A sticky scheduler with the given rule.
    pub fn new(kind: StickyKind) -> Self {
        Self { kind, current: None, switches: 0 }
    }

    /// The path currently stuck to.
    pub fn current(&self) -> Option<PathId> {
        self.current
    }

    /// Number of path switches so far (the first choice is not a switch).
    pub fn switches(&self) -> u64 {
        self.switches
    }

    /// May the scheduler leave `cur` for `cand`?
    fn may_switch(&self, cur: &PathSnapshot, cand: &PathSnapshot) -> bool {
        match self.kind {
            // Greedy switches only when the current path is congested.
            StickyKind::Greedy => !cur.can_send(),
            StickyKind::Throughput => cwnd_throughput(cand) > cwnd_throughput(cur),
            StickyKind::ThroughputRtt => cwnd_throughput(cand) > cwnd_throughput(cur) && cand.srtt < cur.srtt,
        }
    }

    fn choose(&mut self, ctx: &SchedContext<'_>) -> Option<PathId> {
        let cur = self.current.and_then(|id| ctx.path(id)).filter(|p| ctx.eligible(p));
        let Some(cur) = cur else {
            // Onset (or the current path went away): behave as LRF.
            let first = ctx.lowest_rtt_with_space()?.id;
            self.current = Some(first);
            return Some(first);
        };
        if self.kind == StickyKind::Greedy && cur.can_send() {
            return Some(cur.id);
        }
        // The LRF candidate among the other paths.
        let cand = ctx.best_by(|p| p.id != cur.id && ctx.eligible(p) && p.can_send(), |p| p.srtt);
        // For TP/TR-STY the candidate is what LRF would choose overall: if the
        // current path has space and the lowest srtt, there is nothing to do.
        match cand {
            Some(c)
                if self.may_switch(cur, c)
                    && (self.kind == StickyKind::Greedy || !cur.can_send() || c.srtt < cur.srtt) =>
            {
                self.current = Some(c.id);
                self.switches += 1;
                Some(c.id)
            }
            _ if cur.can_send() => Some(cur.id),
            _ => None,
        }
    }
}

impl Scheduler for StickyScheduler {
    fn name(&self) -> &'static str {
        match self.kind {
            StickyKind::Greedy => "gr-sty",
            StickyKind::Throughput => "tp-sty",
            StickyKind::ThroughputRtt => "tr-sty",
        }
    }
    fn decide(&mut self, ctx: &SchedContext<'_>) -> Decision {
        self.choose(ctx).map_or(Decision::WAIT, Decision::send)
    }
    fn on_path_closed(&mut self, path: PathId) {
        if self.current == Some(path) {
            self.current = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    fn pick(s: &mut StickyScheduler, paths: &[PathSnapshot]) -> Option<PathId> {
        s.decide(&SchedContext::new(t0(), paths, pending(1 << 20))).path()
    }

    #[test]
    fn greedy_stays_until_congested_then_moves() {
        let mut s = StickyScheduler::new(StickyKind::Greedy);
        // Onset: LRF picks the 40 ms Wi-Fi path 1 over the 80 ms LTE path 0.
        let paths = [path(0, 80, 20, 0), path(1, 40, 10, 0)];
        assert_eq!(pick(&mut s, &paths), Some(PathId(1)));
        // Wi-Fi congested: switch to LTE.
        let paths = [path(0, 80, 20, 0), path(1, 40, 10, 10)];
        assert_eq!(pick(&mut s, &paths), Some(PathId(0)));
        // Wi-Fi has space again and a lower RTT, but GR-STY sticks to LTE
        // while LTE has space.
        let paths = [path(0, 80, 20, 5), path(1, 40, 10, 0)];
        assert_eq!(pick(&mut s, &paths), Some(PathId(0)));
        assert_eq!(s.switches(), 1);
        // LTE full: back to Wi-Fi.
        let paths = [path(0, 80, 20, 20), path(1, 40, 10, 0)];
        assert_eq!(pick(&mut s, &paths), Some(PathId(1)));
        assert_eq!(s.switches(), 2);
    }

    #[test]
    fn throughput_sticky_switches_only_to_higher_throughput() {
        let mut s = StickyScheduler::new(StickyKind::Throughput);
        // Onset on path 1 (40 ms, 10 kB -> 250 kB/s).
        let paths = [path(0, 80, 40, 0), path(1, 40, 10, 0)];
        assert_eq!(pick(&mut s, &paths), Some(PathId(1)));
        // Path 1 congested; path 0 (80 ms, 40 kB -> 500 kB/s) has higher
        // throughput: switch.
        let paths = [path(0, 80, 40, 0), path(1, 40, 10, 10)];
        assert_eq!(pick(&mut s, &paths), Some(PathId(0)));
        // Path 0 congested; path 1 at 250 kB/s < 500 kB/s: no switch, wait.
        let paths = [path(0, 80, 40, 40), path(1, 40, 10, 0)];
        assert_eq!(pick(&mut s, &paths), None);
        // Path 1 grows to 30 kB (750 kB/s) and has a lower RTT: switch back
        // even though path 0 has space.
        let paths = [path(0, 80, 40, 0), path(1, 40, 30, 0)];
        assert_eq!(pick(&mut s, &paths), Some(PathId(1)));
        assert_eq!(s.switches(), 2);
    }

    #[test]
    fn throughput_rtt_sticky_needs_both_conditions() {
        let mut s = StickyScheduler::new(StickyKind::ThroughputRtt);
        let paths = [path(0, 80, 40, 0), path(1, 40, 10, 0)];
        assert_eq!(pick(&mut s, &paths), Some(PathId(1)));
        // Path 0 has higher throughput but a larger RTT: TR-STY stays (waits).
        let paths = [path(0, 80, 40, 0), path(1, 40, 10, 10)];
        assert_eq!(pick(&mut s, &paths), None);
        // Path 2 appears with 20 ms and 20 kB (1 MB/s): faster and quicker.
        let paths = [path(0, 80, 40, 0), path(1, 40, 10, 10), path(2, 20, 20, 0)];
        assert_eq!(pick(&mut s, &paths), Some(PathId(2)));
    }

    #[test]
    fn sticky_forgets_a_closed_path() {
        let mut s = StickyScheduler::new(StickyKind::Throughput);
        let paths = [path(0, 80, 40, 0), path(1, 40, 10, 0)];
        assert_eq!(pick(&mut s, &paths), Some(PathId(1)));
        let mut p1 = path(1, 40, 10, 0);
        p1.usable = false;
        let paths = [path(0, 80, 40, 0), p1];
        assert_eq!(pick(&mut s, &paths), Some(PathId(0)));
    }
}
