//! AR&P, the adaptively redundant and predictive scheduler of seed 000 §V.
//!
//! *AR-Scheduling* (Alg. 2) splits the paths into a non-redundant set N,
//! which carries new data, and a redundant set R, whose paths carry copies of
//! data already sent on N (oldest unacknowledged first) to stay alive and
//! measured. It re-runs every min_i RTT_i.
//!
//! *P-Scheduling* (Alg. 3, eq. 4) gives each packet of the scheduling window
//! (max_{i∈N} RTT_i · Σ_{i∈N} BW_i bytes of waiting data) to the path of N
//! where it arrives first, A_i(j) = t0 + L_i/x_i + r_i/2, L_i being what path
//! i sends before it. The assignment is evaluated when a path of N can send,
//! not stored: the path takes the first packet of the window it would deliver
//! first, i.e. it skips the bytes the faster paths deliver before its packet
//! arrives ([`bytes_arriving_first`], sent as [`Decision::SendAhead`]). A slow
//! path thus carries data further ahead and data arrives in order, which is
//! the point of Alg. 3; re-evaluating per packet keeps the prediction error to
//! one path delay instead of a whole window of stale plan (the paper's error
//! analysis, and what we measured with a stored plan under Coupled BBR's gain
//! cycle). x_i is the rate the path has been sending at ([`RateMeter`]).
//! Lost data goes to the path of N where it arrives first in expectation,
//! counting each path's recent losses ([`LossMeter`]).
//! While every path is in slow start, the scheduler is plain round-robin.

use std::time::{Duration, Instant};

use super::meter::{LossMeter, RateMeter};
use super::simple::RrScheduler;
use super::{secs, Decision, PathRole, PathSnapshot, PerPath, SchedContext, SchedMetrics, Scheduler, Sent};
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

/// Eq. 4 solved for L: the bytes that paths with a shorter one-way delay
/// (`faster`: their rate x_k in bytes/s and RTT r_k) deliver before a packet
/// sent now on a path with RTT `rtt` arrives, Σ_k x_k·(r_i/2 − r_k/2) over
/// the k with r_k < r_i. That packet should carry the data that far ahead.
pub fn bytes_arriving_first(rtt: Duration, faster: impl IntoIterator<Item = (f64, Duration)>) -> u64 {
    let d = secs(rtt) / 2.0;
    let mut bytes = 0.0;
    for (x, r) in faster {
        let dk = secs(r) / 2.0;
        if dk < d && x.is_finite() && x > 0.0 {
            bytes += x * (d - dk);
        }
    }
    bytes.round() as u64
}

/// When a packet given to `p` now would arrive: half its RTT after its pacer
/// releases it. (A window-limited path counts as ready: its ACK clock frees
/// room for a packet within a packet's share of an RTT; estimating that
/// wait changed nothing measurable on lte-wifi-A1, and leaving such paths
/// out sent more lost data the slow way.)
fn arrival(p: &PathSnapshot, now: Instant) -> Duration {
    p.srtt / 2 + p.next_release.map_or(Duration::ZERO, |t| t.saturating_duration_since(now))
}

#[derive(Clone, Copy, Debug, Default)]
struct ArpPathState {
    role: Option<PathRole>,
    rate: RateMeter,
    loss: LossMeter,
    /// The path's lost-packet count at the last decision.
    lost: u64,
}

/// Outside trouble, copies stop while those made outside trouble exceed
/// this share of the stream bytes sent. R's few packets in flight are a
/// rate of 4 packets per R's RTT, most of a short-RTT path's capacity (two
/// loopback paths: 7-10% of the body was copies); a budget keeps R
/// measured at any RTT.
pub const COPY_BUDGET_PERCENT: u64 = 2;

/// The loss share [`ArpScheduler::expected_arrival`] counts at most: a path
/// losing everything is still 10 rounds away, not infinitely far.
const MAX_LOSS: f64 = 0.9;

/// Stream payload of one packet: the datagram size less typical QUIC
/// overhead (short header, STREAM frame header, AEAD tag).
const PACKET_OVERHEAD: usize = 48;

/// The AR&P scheduler.
#[derive(Debug, Default)]
pub struct ArpScheduler {
    st: PerPath<ArpPathState>,
    last_ar: Option<Instant>,
    rr_last: Option<PathId>,
    buf: Vec<ArPath>,
    /// Until when a path of N is in trouble (it lost packets recently), so
    /// that R's copies may fill R's windows.
    trouble_until: Option<Instant>,
    /// Stream bytes sent, copies included, and those of the copies made
    /// outside trouble (for [`COPY_BUDGET_PERCENT`]).
    carried: u64,
    copied: u64,
    /// The last copy decided was made outside trouble.
    budgeted: bool,
}

impl ArpScheduler {
    /// The role AR-Scheduling last gave `path`.
    pub fn role(&self, path: PathId) -> Option<PathRole> {
        self.st.get(path).and_then(|s| s.role)
    }

    /// x_i: the measured sending rate, or the snapshot's until measured.
    fn x(&self, p: &PathSnapshot) -> f64 {
        let measured = self.st.get(p.id).map_or(0.0, |s| s.rate.rate());
        if measured > 0.0 {
            measured
        } else {
            p.rate()
        }
    }

    /// When data sent now on `p` arrives in expectation: each loss costs
    /// about 9/8 RTT until it is declared (RFC 9002's time threshold) and
    /// sent again, so a path losing a share ℓ adds ℓ/(1−ℓ) of that. Lost
    /// data resent the way it was lost waits a round per loss, and a hole
    /// holds up everything behind it.
    fn expected_arrival(&self, p: &PathSnapshot, now: Instant) -> Duration {
        let loss = self.st.get(p.id).map_or(0.0, |s| s.loss.loss()).min(MAX_LOSS);
        arrival(p, now) + p.srtt.mul_f64(9.0 / 8.0 * loss / (1.0 - loss))
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
                self.st.get_or_insert(p.id).role = Some(PathRole::Unused);
            }
        }
        ar_partition(&mut self.buf);
        for a in &self.buf {
            let role = if a.non_redundant { PathRole::NonRedundant } else { PathRole::Redundant };
            self.st.get_or_insert(a.id).role = Some(role);
        }
    }

    /// P-Scheduling: of the paths of N that can send now, the one whose next
    /// packet is the earliest of the window (fewest bytes arriving first by
    /// the others), sending that packet. A path whose packet would lie beyond
    /// the window or the waiting data does not send new data now.
    fn p_schedule(&self, ctx: &SchedContext<'_>) -> Option<Decision> {
        let in_n = |p: &&PathSnapshot| ctx.eligible(p) && self.in_n(p.id);
        let pending = ctx.pending.new_bytes;
        if ctx.pending.retransmit_bytes > 0 {
            // Lost data goes first, on the path of N where it arrives first,
            // in expectation (a hole holds up everything behind it at the
            // receiver, and a lossy path may lose it again); while
            // that path is held, the others carry new data. With no new data
            // for them, whichever can send takes it.
            let first = ctx.best_by(|p| in_n(&p), |p| self.expected_arrival(p, ctx.now))?;
            if first.can_send() {
                return Some(Decision::send(first.id));
            }
            if pending == 0 {
                let p = ctx.best_by(|p| in_n(&p) && p.can_send(), |p| p.srtt)?;
                return Some(Decision::send(p.id));
            }
        }
        if pending == 0 {
            return None;
        }
        let (mut max_rtt, mut bw_sum) = (Duration::ZERO, 0.0);
        for p in ctx.paths.iter().filter(in_n) {
            max_rtt = max_rtt.max(p.srtt);
            bw_sum += p.rate();
        }
        let window = ((secs(max_rtt) * bw_sum) as u64).min(pending);
        let mut best: Option<(&PathSnapshot, u64)> = None;
        for p in ctx.paths.iter().filter(in_n).filter(|p| p.can_send()) {
            let others = ctx.paths.iter().filter(in_n).filter(|k| k.id != p.id);
            let skip = bytes_arriving_first(p.srtt, others.map(|k| (self.x(k), k.srtt)));
            if skip > 0 && skip >= window {
                continue;
            }
            if best.is_none_or(|(b, s)| (skip, p.srtt) < (s, b.srtt)) {
                best = Some((p, skip));
            }
        }
        let (p, skip) = best?;
        Some(Decision::SendAhead {
            path: p.id,
            skip,
            max_len: p.mss.saturating_sub(PACKET_OVERHEAD).max(1) as u64,
        })
    }

    /// A path of N that lost packets puts the connection in trouble for two
    /// of the largest RTTs.
    fn note_losses(&mut self, ctx: &SchedContext<'_>) {
        let max_rtt = ctx.paths.iter().filter(|p| ctx.eligible(p)).map(|p| p.srtt).max().unwrap_or_default();
        for p in ctx.paths {
            let in_n = self.in_n(p.id);
            let st = self.st.get_or_insert(p.id);
            if in_n && p.lost_packets > st.lost {
                self.trouble_until = Some(ctx.now + 2 * max_rtt);
            }
            st.lost = p.lost_packets;
        }
    }

    /// Copies so far are within [`COPY_BUDGET_PERCENT`] of the bytes sent.
    fn within_budget(&self) -> bool {
        self.copied * 100 < COPY_BUDGET_PERCENT * self.carried
    }

    /// A path of R that can carry a copy: window space, and fewer bytes in
    /// flight than the connection has unacknowledged (so copies do not run
    /// ahead of the data they duplicate). While the paths of N deliver
    /// without loss, copies are only worth keeping R measured and its
    /// RTT known: R keeps [`MIN_INFLIGHT_FOR_N`] packets in flight, no more
    /// (copies then cost a few percent of the bytes, not R's whole window),
    /// within [`COPY_BUDGET_PERCENT`] of the bytes sent. Once N loses
    /// packets, R may fill its window with copies.
    fn redundant_path(&mut self, ctx: &SchedContext<'_>) -> Option<PathId> {
        let trouble = self.trouble_until.is_some_and(|t| ctx.now < t);
        self.budgeted = !trouble;
        ctx.best_by(
            |p| {
                ctx.eligible(p)
                    && p.can_send()
                    && self.role(p.id) == Some(PathRole::Redundant)
                    && (p.bytes_in_flight as u64) < ctx.pending.unacked_bytes
                    && (trouble || p.packets_in_flight < MIN_INFLIGHT_FOR_N && self.within_budget())
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
        for p in ctx.paths {
            let st = self.st.get_or_insert(p.id);
            st.rate.tick(ctx.now, p.srtt);
            st.loss.tick(ctx.now, p.srtt, p.lost_bytes);
        }
        let all_slow_start = ctx.paths.iter().filter(|p| ctx.eligible(p)).all(|p| p.in_slow_start);
        if all_slow_start {
            // Rates are unreliable in slow start: round-robin, all paths in N.
            for p in ctx.paths {
                let role = if ctx.eligible(p) { PathRole::NonRedundant } else { PathRole::Unused };
                self.st.get_or_insert(p.id).role = Some(role);
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
            self.note_losses(ctx);
            match self.p_schedule(ctx) {
                Some(d) => d,
                None => match self.redundant_path(ctx) {
                    Some(id) => Decision::Redundant { path: id },
                    None => Decision::WAIT,
                },
            }
        }
    }

    fn on_sent(&mut self, path: PathId, sent: Sent) {
        self.carried += sent.stream_bytes as u64;
        if sent.redundant && self.budgeted {
            self.copied += sent.stream_bytes as u64;
        }
        // The rate meter measures what the path carries: whole datagrams.
        if let Some(s) = self.st.get_mut(path) {
            s.rate.on_sent(sent.datagram_bytes);
            s.loss.on_sent(sent.datagram_bytes);
        }
    }

    fn on_path_closed(&mut self, path: PathId) {
        self.st.remove(path);
    }

    fn metrics(&self) -> SchedMetrics {
        let mut m = SchedMetrics::named(self.name());
        for (id, s) in self.st.iter() {
            m.path_mut(*id).role = s.role;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::{PathSnapshot, PendingInfo};
    use super::*;

    /// Eq. 4 without t0, as the paper writes it: when a packet put behind
    /// `queued_bytes` on a path of rate `rate` (bytes/s) and RTT `rtt` arrives.
    fn predicted_arrival(queued_bytes: u64, rate: f64, rtt: Duration) -> Duration {
        Duration::from_secs_f64(queued_bytes as f64 / rate) + rtt / 2
    }

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
    fn p_scheduling_skips_what_faster_paths_deliver_first() {
        // Eq. 4: A = 10 000 B / 1 MB/s + 40 ms / 2 = 30 ms.
        assert_eq!(predicted_arrival(10_000, 1e6, Duration::from_millis(40)), Duration::from_millis(30));
        let ms = Duration::from_millis;
        // Short path 2.5 MB/s (20 Mbit/s), RTT 50 ms; long path RTT 250 ms:
        // 2.5e6 · (0.125 − 0.025) = 250 000 B arrive by the short path first.
        let skip = bytes_arriving_first(ms(250), [(2.5e6, ms(50))]);
        assert_eq!(skip, 250_000);
        // Data that far ahead arrives by either path at the same time.
        assert_eq!(predicted_arrival(skip, 2.5e6, ms(50)), predicted_arrival(0, 1.0, ms(250)));
        // Three paths, for C (RTT 60 ms): A (1 MB/s, 20 ms) delivers
        // 1e6 · (0.03 − 0.01) = 20 000 B, B (0.5 MB/s, 40 ms) 0.5e6 · 0.01 = 5 000 B.
        assert_eq!(bytes_arriving_first(ms(60), [(1e6, ms(20)), (0.5e6, ms(40))]), 25_000);
        // Slower paths and unknown rates count for nothing.
        assert_eq!(bytes_arriving_first(ms(20), [(1e6, ms(60)), (0.5e6, ms(40))]), 0);
        assert_eq!(bytes_arriving_first(ms(60), [(0.0, ms(20)), (f64::NAN, ms(20))]), 0);
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

    /// `bytes` of new stream data sent on path 0.
    fn sent_new(s: &mut ArpScheduler, bytes: usize) {
        s.on_sent(PathId(0), Sent { datagram_bytes: bytes, stream_bytes: bytes, redundant: false });
    }

    #[test]
    fn slow_path_goes_redundant_and_carries_copies() {
        // Path 0: 10 MB/s, 20 ms; path 1: 0.5 MB/s, 200 ms, 2 in flight.
        // N = {0}: Σx = 1e7, Σxr = 2e5. Path 1: left 5e5/1e7 = 0.05;
        // right (0.2·1e7 − 4e5)/2e5 = 8 → R.
        let mut s = ArpScheduler::default();
        sent_new(&mut s, 1_000_000);
        let now = t0();
        let paths = [rated(0, 20, 10_000_000, 100, 100), rated(1, 200, 500_000, 20, 2)];
        let pending = PendingInfo { new_bytes: 1_000_000, unacked_bytes: 200_000, ..Default::default() };
        // Path 0 is full: new data waits for it; path 1 carries a copy.
        let d = s.decide(&SchedContext::new(now, &paths, pending));
        assert_eq!(d, Decision::Redundant { path: PathId(1) });
        assert_eq!(s.role(PathId(0)), Some(PathRole::NonRedundant));
        assert_eq!(s.role(PathId(1)), Some(PathRole::Redundant));
        // Path 0 opens: the fastest path of N sends from the front.
        let paths = [rated(0, 20, 10_000_000, 100, 90), rated(1, 200, 500_000, 20, 2)];
        let d = s.decide(&SchedContext::new(now, &paths, pending));
        assert_eq!(d, Decision::SendAhead { path: PathId(0), skip: 0, max_len: 952 });
        let m = s.metrics();
        assert!(m.paths.iter().any(|p| p.id == PathId(1) && p.role == Some(PathRole::Redundant)));
    }

    #[test]
    fn copies_fill_r_only_while_n_loses_packets() {
        let mut s = ArpScheduler::default();
        sent_new(&mut s, 1_000_000);
        let now = t0();
        let pending = PendingInfo { new_bytes: 1_000_000, unacked_bytes: 200_000, ..Default::default() };
        let r_with = |inflight| [rated(0, 20, 10_000_000, 100, 100), rated(1, 200, 500_000, 20, inflight)];
        // No loss on N: R keeps four packets in flight to stay measured.
        let d = s.decide(&SchedContext::new(now, &r_with(MIN_INFLIGHT_FOR_N - 1), pending));
        assert_eq!(d, Decision::Redundant { path: PathId(1) });
        let d = s.decide(&SchedContext::new(now, &r_with(MIN_INFLIGHT_FOR_N), pending));
        assert_eq!(d, Decision::WAIT);
        // Path 0 (N) loses a packet: for two of the largest RTTs R may fill
        // its window with copies.
        let mut lossy = r_with(8);
        lossy[0].lost_packets = 1;
        assert_eq!(
            s.decide(&SchedContext::new(now, &lossy, pending)),
            Decision::Redundant { path: PathId(1) }
        );
        let later = now + Duration::from_millis(399);
        assert_eq!(
            s.decide(&SchedContext::new(later, &lossy, pending)),
            Decision::Redundant { path: PathId(1) }
        );
        let after = now + Duration::from_millis(401);
        assert_eq!(s.decide(&SchedContext::new(after, &lossy, pending)), Decision::WAIT);
    }

    #[test]
    fn lossless_copies_stay_within_their_budget() {
        let mut s = ArpScheduler::default();
        let now = t0();
        let pending = PendingInfo { new_bytes: 1_000_000, unacked_bytes: 200_000, ..Default::default() };
        let paths = [rated(0, 20, 10_000_000, 100, 100), rated(1, 200, 500_000, 20, 1)];
        // Nothing sent yet: no budget.
        assert_eq!(s.decide(&SchedContext::new(now, &paths, pending)), Decision::WAIT);
        sent_new(&mut s, 100_000);
        assert_eq!(
            s.decide(&SchedContext::new(now, &paths, pending)),
            Decision::Redundant { path: PathId(1) }
        );
        // Copies up to the budget's share of all stream bytes, then none.
        let copy = Sent { datagram_bytes: 1_000, stream_bytes: 1_000, redundant: true };
        let mut copies = 0;
        while s.decide(&SchedContext::new(now, &paths, pending)) != Decision::WAIT {
            s.on_sent(PathId(1), copy);
            copies += 1;
        }
        // Two copies are 2,000 of 102,000 bytes (1.96% < 2%): a third may go;
        // three are 2.9%: no more.
        assert_eq!(copies, 3);
        // A loss on N lifts the budget: R fills its window.
        let mut lossy = paths;
        lossy[0].lost_packets = 1;
        assert_eq!(
            s.decide(&SchedContext::new(now, &lossy, pending)),
            Decision::Redundant { path: PathId(1) }
        );
    }

    #[test]
    fn lost_data_waits_for_the_path_where_it_arrives_first() {
        // Both paths in N (as in the test below): path 0 20 ms, path 1 50 ms.
        let mut s = ArpScheduler::default();
        let now = t0();
        let lost = PendingInfo { retransmit_bytes: 1000, ..pending(1_000_000) };
        let held = |ms| {
            let mut p = [rated(0, 20, 1_000_000, 10, 5), rated(1, 50, 1_000_000, 10, 5)];
            p[0].next_release = Some(now + Duration::from_millis(ms));
            p
        };
        let open = [rated(0, 20, 1_000_000, 10, 5), rated(1, 50, 1_000_000, 10, 5)];
        assert_eq!(s.decide(&SchedContext::new(now, &open, lost)), Decision::send(PathId(0)));
        // Path 0's pacer holds it 2 ms: its packet still arrives 13 ms before
        // one on path 1, so path 1 carries new data ahead, not the lost data.
        let d = s.decide(&SchedContext::new(now, &held(2), lost));
        assert_eq!(d, Decision::SendAhead { path: PathId(1), skip: 15_000, max_len: 952 });
        // Held 20 ms, path 0 would deliver it 5 ms after path 1.
        assert_eq!(s.decide(&SchedContext::new(now, &held(20), lost)), Decision::send(PathId(1)));
        // No new data for path 1: it takes the lost data rather than idle.
        let only_lost = PendingInfo { retransmit_bytes: 1000, ..pending(0) };
        assert_eq!(s.decide(&SchedContext::new(now, &held(2), only_lost)), Decision::send(PathId(1)));
    }

    #[test]
    fn lost_data_avoids_a_path_that_loses_half_its_packets() {
        // Path 0 20 ms, path 1 50 ms, both in N; path 0 then loses 50 kB of
        // the 100 kB it sent in one period (its loss meter reads 0.5).
        let mut s = ArpScheduler::default();
        let now = t0();
        let lost = PendingInfo { retransmit_bytes: 1000, ..pending(1_000_000) };
        let mut paths = [rated(0, 20, 1_000_000, 10, 5), rated(1, 50, 1_000_000, 10, 5)];
        assert_eq!(s.decide(&SchedContext::new(now, &paths, lost)), Decision::send(PathId(0)));
        s.on_sent(PathId(0), Sent { datagram_bytes: 100_000, stream_bytes: 95_000, redundant: false });
        paths[0].lost_bytes = 50_000;
        // Expected arrival on path 0: 10 ms + 9/8 · 20 ms · 0.5/0.5 = 32.5 ms,
        // later than path 1's 25 ms: the lost data goes to path 1.
        let later = now + Duration::from_millis(30);
        assert_eq!(s.decide(&SchedContext::new(later, &paths, lost)), Decision::send(PathId(1)));
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
        // Path 0 would deliver 1e6 · (0.025 − 0.010) = 15 000 B before a packet
        // sent now on path 1 arrives, so path 1 sends the data that far ahead
        // (a packet carries 1000 − 48 = 952 B).
        let d = s.decide(&SchedContext::new(now, &paths, pending(1_000_000)));
        assert_eq!(s.role(PathId(1)), Some(PathRole::NonRedundant));
        assert_eq!(d, Decision::SendAhead { path: PathId(1), skip: 15_000, max_len: 952 });
        // With path 0 open too, path 0 goes first: its packet is the earliest.
        let open = [rated(0, 20, 1_000_000, 10, 5), rated(1, 50, 1_000_000, 10, 5)];
        let d = s.decide(&SchedContext::new(now, &open, pending(1_000_000)));
        assert_eq!(d, Decision::SendAhead { path: PathId(0), skip: 0, max_len: 952 });
        // Only 10 000 B wait: path 1's packet would lie beyond them, so it
        // waits for path 0 rather than send data that arrives late.
        let d = s.decide(&SchedContext::new(now, &paths, pending(10_000)));
        assert_eq!(d, Decision::WAIT);
    }
}
