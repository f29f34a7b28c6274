//! Coupled BBR. Two couplings of per-path BBR (see [`Coupling`]): mpquic's
//! `coupled-bbr`, which couples only the paths a shared-bottleneck detector
//! groups, by probing in step; and the paper's Alg. 1, `coupled-bbr-alg1`.
//!
//! Alg. 1 (seed paper 000, section IV, eq. 1-2): BBR on every path, with the
//! gain of ProbeBW's six cruising phases replaced by
//!
//! β_i = BW_i · max_j BW_j / Σ_j BW_j²,   α_i = (4β_i − 1)/3,
//!
//! BW being each active path's BtlBw. The probing phases keep 1.25 and 0.75,
//! so path i averages (1.25 + 0.75 + 6α_i)/8 = β_i of its bandwidth and the
//! connection max_j BW_j in total: what one BBR flow gets on the best path.
//! When α_i ≤ 0 the path sends four packets per RTT instead, which keeps it
//! alive and measuring.

use super::bbr::{Bbr, Cruise, MaxFilter, BTL_BW_WINDOW_ROUNDS};
use super::{AckEvent, CcMetrics, CcParams, CongestionController, LossEvent, PathView};
use crate::rtt::RttEstimator;
use crate::PathId;

/// Eq. 2: `β_i = BW_i · max_j BW_j / Σ_j BW_j²`. Returns 1 (plain BBR) when
/// `i` is out of range or no path has a bandwidth yet.
pub fn coupled_beta(bws: &[f64], i: usize) -> f64 {
    let Some(&bi) = bws.get(i) else { return 1.0 };
    let max = bws.iter().copied().fold(0.0, f64::max);
    let sq: f64 = bws.iter().map(|b| b * b).sum();
    if sq <= 0.0 || !sq.is_finite() {
        return 1.0;
    }
    bi * max / sq
}

/// Eq. 1: `α_i = (4β_i − 1)/3`, the cruising gain (may be ≤ 0).
pub fn coupled_alpha(bws: &[f64], i: usize) -> f64 {
    (4.0 * coupled_beta(bws, i) - 1.0) / 3.0
}

/// Alg. 1's cruising behaviour for a given α: its gain, or four packets per
/// RTT when α ≤ 0.
pub fn cruise_for(alpha: f64) -> Cruise {
    if alpha > 0.0 {
        Cruise::Gain(alpha)
    } else {
        Cruise::FourPerRtt
    }
}

/// How long a group must hold before its paths pace on its joint estimate
/// (the shared-bottleneck detector's own window is 5 s).
pub const GROUP_SETTLE: std::time::Duration = std::time::Duration::from_secs(3);

/// How the paths of a connection are coupled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coupling {
    /// mpquic's `coupled-bbr`: plain BBR on a path alone in its
    /// shared-bottleneck group ([`PathView::group`], from [`crate::sbd`]).
    /// Within a group the paths act as one BBR flow:
    /// - every path follows the ProbeBW phase and the ProbeRTT of the group's
    ///   leader (its lowest path ID), so the group probes, drains and
    ///   measures RTprop together; a loss on any path ends the leader's probe;
    /// - each path paces and sizes its window on its share of a joint
    ///   estimate: BtlBw × (group max ÷ Σ BtlBw), the group max being the
    ///   max over ten rounds of the group's delivery rate over each of this
    ///   path's rounds (all its paths' delivered bytes over the round), once
    ///   the group has held for [`GROUP_SETTLE`].
    ///
    /// Why: a BBR v1 flow's BtlBw is the delivery rate it measures while
    /// probing at 1.25×. Paths probing at separate times each measure
    /// 1.25·b_i·C/(1.25·b_i + rest), as independent flows would, so k paths
    /// take k shares. Probing together they measure
    /// Σ 1.25·b_i·C/(1.25·Σb + rest): one flow of rate Σb, whose fixed point
    /// beside a single-path flow of rate c is Σb = c. Window-limited flows
    /// at one queue share in proportion to their estimates, so whichever
    /// estimate runs higher keeps taking more: per-ACK samples of a group
    /// whose paths' ACKs interleave are noisier than one flow's, and their
    /// max ran 20-40% above the competitor's; a round's mean does not.
    /// Alg. 1 instead cruises at α·BtlBw, which lets a competitor's probes
    /// take bandwidth its own estimate never sees again.
    ///
    /// Measured (shared-bottleneck scenario, ÷ a competing bbr flow, at
    /// 0.5/1/2/4 BDP): 1.044/0.951/1.029/1.029 (per-ACK group samples:
    /// 1.420/1.227/1.272/1.272; uncoupled 1.65-2.06; Alg. 1 0.17). Settling
    /// 2 s: 1.025/1.016/1.153/1.153, 5 s: 1.074/1.025/1.183/1.183.
    Groups,
    /// The paper's Alg. 1 (`coupled-bbr-alg1`): every active path of the
    /// connection is coupled by α_i, shared bottleneck or not. Kept to
    /// reproduce seed 000.
    Alg1,
}

/// One of a path's rounds as the group saw it from its start.
#[derive(Clone, Copy, Debug)]
struct GroupRound {
    /// The path's round count.
    count: u64,
    start: std::time::Instant,
    /// The group's delivered bytes at the start.
    delivered: u64,
    /// An app-limited sample came in it.
    app_limited: bool,
}

/// A Coupled BBR controller for one path.
#[derive(Clone, Debug)]
pub struct CoupledBbr {
    id: PathId,
    bbr: Bbr,
    coupling: Coupling,
    alpha: f64,
    /// Group coupling: max over ten rounds of the group's delivery rate.
    group_bw: MaxFilter,
    /// This path's current round, for the group's per-round rate.
    round: Option<GroupRound>,
    /// The group's other members, and since when they have been.
    members: smallvec::SmallVec<[PathId; 4]>,
    members_since: Option<std::time::Instant>,
    /// Bytes the other paths of the group had lost at the last event.
    peers_lost: u64,
}

impl CoupledBbr {
    /// `coupled-bbr`, in Startup.
    pub fn new(params: CcParams) -> Self {
        Self::with_coupling(params, Coupling::Groups)
    }

    /// `coupled-bbr-alg1`, in Startup.
    pub fn alg1(params: CcParams) -> Self {
        Self::with_coupling(params, Coupling::Alg1)
    }

    fn with_coupling(params: CcParams, coupling: Coupling) -> Self {
        let group_bw = MaxFilter::new(BTL_BW_WINDOW_ROUNDS);
        Self {
            id: params.path_id,
            bbr: Bbr::new(params),
            coupling,
            alpha: 1.0,
            group_bw,
            round: None,
            members_since: None,
            members: Default::default(),
            peers_lost: 0,
        }
    }

    /// The underlying BBR state machine.
    pub fn bbr(&self) -> &Bbr {
        &self.bbr
    }

    /// α_i as of the last event (Alg. 1; 1 under group coupling).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The leader of `id`'s group (its active path with the lowest ID),
    /// when that is another path.
    pub fn leader(id: PathId, paths: &[PathView]) -> Option<&PathView> {
        let group = paths.iter().find(|p| p.id == id)?.group;
        let leader = paths.iter().filter(|p| p.active && p.group == group).min_by_key(|p| p.id)?;
        (leader.id != id).then_some(leader)
    }

    /// The other active paths of this path's group.
    fn group_peers<'a>(&self, paths: &'a [PathView]) -> impl Iterator<Item = &'a PathView> + 'a {
        let id = self.id;
        let group = paths.iter().find(|p| p.id == id).map(|p| p.group);
        paths.iter().filter(move |p| p.active && p.id != id && Some(p.group) == group)
    }

    /// Before an event: follow the group leader's phase through it, and pace
    /// on this path's share of the group's joint estimate: BtlBw scaled by
    /// group max ÷ Σ BtlBw (per-path maxima of a shared bottleneck add up to
    /// more than the group ever delivered at once).
    fn follow(&mut self, paths: &[PathView], now: std::time::Instant) {
        if self.coupling != Coupling::Groups {
            return;
        }
        let leader = Self::leader(self.id, paths);
        self.bbr.set_cycle_lead(leader.and_then(|l| l.probe_phase).map(usize::from));
        self.bbr.set_probe_rtt_lead(leader.map(|l| l.probe_rtt));
        // The leader's probe ends on a loss anywhere in the group, as one
        // flow's would.
        let peers_lost: u64 = self.group_peers(paths).map(|p| p.lost).sum();
        if leader.is_none() && peers_lost > self.peers_lost {
            self.bbr.note_shared_loss();
        }
        self.peers_lost = peers_lost;
        let peers: u64 = self.group_peers(paths).map(|p| p.bandwidth).sum();
        let sum = peers.saturating_add(self.bbr.btl_bw());
        let joint = self.group_bw.get();
        // Only a group that has held for GROUP_SETTLE: the round means of
        // paths grouped for a moment (disjoint paths whose queues filled
        // together in Startup) would throttle them, where the per-path
        // maxima are what each competes with on its own bottleneck.
        let settled = self.members_since.is_some_and(|t| now.saturating_duration_since(t) >= GROUP_SETTLE);
        let uncoupled = peers == 0 || joint == 0 || sum == 0 || !settled;
        let scale = if uncoupled { 1.0 } else { joint as f64 / sum as f64 };
        self.bbr.set_bw_scale(scale);
    }

    /// After an ACK: at the end of each of this path's rounds, the group's
    /// delivery rate over that round (all its paths' delivered bytes over
    /// the round's duration) into the group estimate. A round's mean, not
    /// per-ACK samples: the max of a group's per-ACK samples, summed over
    /// paths whose ACKs interleave, is noisier than one flow's and kept
    /// ratcheting the group's share up beside a single-path competitor.
    fn sample_group(&mut self, ev: &AckEvent, paths: &[PathView]) {
        let Some(rs) = ev.rate else { return };
        let members: smallvec::SmallVec<[PathId; 4]> = self.group_peers(paths).map(|p| p.id).collect();
        if members.is_empty() {
            self.round = None;
            self.members_since = None;
            return;
        }
        if members != self.members {
            // A path joined or left: earlier totals are not comparable.
            self.members = members;
            self.round = None;
            self.members_since = Some(ev.now);
        }
        let total =
            self.group_peers(paths).map(|p| p.delivered).sum::<u64>().saturating_add(rs.total_delivered);
        let count = self.bbr.round_count();
        let next = GroupRound { count, start: ev.now, delivered: total, app_limited: rs.is_app_limited };
        let Some(r) = self.round.as_mut() else {
            self.round = Some(next);
            return;
        };
        if r.count == count {
            r.app_limited |= rs.is_app_limited;
            return;
        }
        let elapsed = ev.now.saturating_duration_since(r.start);
        if !r.app_limited && !elapsed.is_zero() {
            let rate = (total.saturating_sub(r.delivered) as f64 / elapsed.as_secs_f64()) as u64;
            self.group_bw.update(count, rate);
        }
        self.round = Some(next);
    }

    /// After an event: Alg. 1's α from the active paths' BtlBw, this path's
    /// own value taken from its controller (its view may lag by one event).
    fn recouple(&mut self, paths: &[PathView]) {
        if self.coupling != Coupling::Alg1 {
            return;
        }
        // Per ACK: no heap allocation for the usual handful of paths.
        let mut bws: smallvec::SmallVec<[f64; 8]> =
            paths.iter().filter(|p| p.active && p.id != self.id).map(|p| p.bandwidth as f64).collect();
        let me = bws.len();
        bws.push(self.bbr.btl_bw() as f64);
        self.alpha = coupled_alpha(&bws, me);
        self.bbr.set_cruise(cruise_for(self.alpha));
    }
}

impl CongestionController for CoupledBbr {
    fn name(&self) -> &'static str {
        match self.coupling {
            Coupling::Groups => "coupled-bbr",
            Coupling::Alg1 => "coupled-bbr-alg1",
        }
    }
    fn window(&self) -> usize {
        self.bbr.window()
    }
    fn pacing_rate(&self) -> Option<u64> {
        self.bbr.pacing_rate()
    }
    fn in_slow_start(&self) -> bool {
        self.bbr.in_slow_start()
    }
    fn bandwidth_estimate(&self) -> Option<u64> {
        self.bbr.bandwidth_estimate()
    }
    fn probe_phase(&self) -> Option<u8> {
        self.bbr.probe_phase()
    }
    fn in_probe_rtt(&self) -> bool {
        self.bbr.in_probe_rtt()
    }
    fn on_packet_sent(&mut self, now: std::time::Instant, bytes: usize, bytes_in_flight: usize) {
        self.bbr.on_packet_sent(now, bytes, bytes_in_flight);
    }
    fn on_ack(&mut self, ev: &AckEvent, rtt: &RttEstimator, paths: &[PathView]) {
        self.follow(paths, ev.now);
        self.bbr.on_ack(ev, rtt, paths);
        if self.coupling == Coupling::Groups {
            self.sample_group(ev, paths);
        }
        self.recouple(paths);
    }
    /// BBR v1 has no ECN response; this BBRv3 leaves out the draft's
    /// optional one.
    fn on_ecn_ce(&mut self, _: &LossEvent, _: &RttEstimator, _: &[PathView]) {}
    fn on_loss(&mut self, ev: &LossEvent, rtt: &RttEstimator, paths: &[PathView]) {
        self.follow(paths, ev.now);
        self.bbr.on_loss(ev, rtt, paths);
        self.recouple(paths);
    }
    fn on_app_limited(&mut self, bytes_in_flight: usize) {
        self.bbr.on_app_limited(bytes_in_flight);
    }
    fn metrics(&self) -> CcMetrics {
        self.bbr.metrics()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::bbr::{BbrState, PROBE_BW_GAINS};
    use crate::cc::RateSample;
    use std::time::{Duration, Instant};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Mean pacing gain over one ProbeBW cycle with α in the cruising phases.
    fn cycle_mean(alpha: f64) -> f64 {
        let g: f64 = PROBE_BW_GAINS.iter().enumerate().map(|(k, g)| if k < 2 { *g } else { alpha }).sum();
        g / 8.0
    }

    #[test]
    fn beta_alpha_100_50() {
        // Σ BW² = 100² + 50² = 12 500, max = 100.
        // β = (100·100, 50·100)/12 500 = (0.8, 0.4).
        // α_1 = (3.2 − 1)/3 = 2.2/3 = 0.7333…; α_2 = (1.6 − 1)/3 = 0.2.
        // (DESIGN.md's worked example prints α_1 = 0.7667; eq. 1 gives 0.7333,
        // and only 0.7333 makes the cycle average β_1 = 0.8, checked below.)
        let bw = [100.0, 50.0];
        assert!(close(coupled_beta(&bw, 0), 0.8));
        assert!(close(coupled_beta(&bw, 1), 0.4));
        assert!(close(coupled_alpha(&bw, 0), 2.2 / 3.0));
        assert!((coupled_alpha(&bw, 0) - 0.7333).abs() < 1e-4);
        assert!(close(coupled_alpha(&bw, 1), 0.2));
        // Cycle average: (1.25 + 0.75 + 6α)/8 = β.
        // (2 + 6·0.7333)/8 = 6.4/8 = 0.8; (2 + 6·0.2)/8 = 3.2/8 = 0.4.
        for i in 0..2 {
            assert!(close(cycle_mean(coupled_alpha(&bw, i)), coupled_beta(&bw, i)));
        }
        // Total average rate Σ β_i·BW_i = 80 + 20 = 100 = max BW.
        let total: f64 = (0..2).map(|i| coupled_beta(&bw, i) * bw[i]).sum();
        assert!(close(total, 100.0));
    }

    #[test]
    fn beta_alpha_100_20_goes_four_per_rtt() {
        // Σ BW² = 10 000 + 400 = 10 400. β_2 = 20·100/10 400 = 0.19231;
        // α_2 = (0.76923 − 1)/3 = −0.07692 < 0 → four packets per RTT.
        let bw = [100.0, 20.0];
        assert!((coupled_beta(&bw, 1) - 0.192_307_7).abs() < 1e-6);
        let a2 = coupled_alpha(&bw, 1);
        assert!(a2 < 0.0 && (a2 + 0.076_923).abs() < 1e-6);
        assert_eq!(cruise_for(a2), Cruise::FourPerRtt);
        // β_1 = 10 000/10 400 = 0.96154, α_1 = 0.94872 > 0.
        assert!((coupled_alpha(&bw, 0) - 0.948_718).abs() < 1e-6);
        assert_eq!(cruise_for(coupled_alpha(&bw, 0)), Cruise::Gain(coupled_alpha(&bw, 0)));
        assert!(close(cycle_mean(coupled_alpha(&bw, 1)), coupled_beta(&bw, 1)));
    }

    #[test]
    fn single_path_is_plain_bbr() {
        assert!(close(coupled_beta(&[42.0], 0), 1.0));
        assert!(close(coupled_alpha(&[42.0], 0), 1.0));
        // Equal paths: β = 1/2 each, α = 1/3.
        assert!(close(coupled_alpha(&[7.0, 7.0], 1), 1.0 / 3.0));
        // Nothing measured yet: plain BBR, no division by zero.
        assert!(close(coupled_alpha(&[0.0, 0.0], 0), 1.0));
        assert!(close(coupled_beta(&[1.0], 5), 1.0));
    }

    #[allow(clippy::disallowed_methods)]
    fn base() -> Instant {
        Instant::now()
    }

    fn view(id: u32, bw: u64) -> PathView {
        PathView {
            id: PathId(id),
            cwnd: 100_000,
            bytes_in_flight: 0,
            srtt: Duration::from_millis(100),
            min_rtt: Duration::from_millis(100),
            bandwidth: bw,
            pacing_rate: None,
            in_slow_start: false,
            active: true,
            group: id,
            probe_phase: None,
            probe_rtt: false,
            delivered: 0,
            lost: 0,
        }
    }

    /// Drive path `id` (BtlBw `bw`) to ProbeBW beside a path of `other` B/s,
    /// then through `acks` more round trips; returns the controller.
    fn drive(id: u32, bw: u64, other: u64, acks: usize) -> CoupledBbr {
        let t0 = base();
        let mss = 1200;
        let c = CoupledBbr::alg1(CcParams {
            path_id: PathId(id),
            mss,
            initial_window: 10 * mss,
            now: t0,
            seed: 0,
        });
        drive_with(c, t0, bw, &[view(id, 0), view(id + 1, other)], acks)
    }

    /// Drive `c` to ProbeBW at `bw` B/s with `paths` as the views, then
    /// through `acks` more round trips.
    fn drive_with(mut c: CoupledBbr, t0: Instant, bw: u64, paths: &[PathView], acks: usize) -> CoupledBbr {
        let mss = 1200;
        let mut rtt = RttEstimator::default();
        let r = Duration::from_millis(100);
        let mut delivered = 0u64;
        let mut t = Duration::ZERO;
        let bdp = (bw / 10) as usize;
        for k in 0..(9 + acks) {
            t += r + Duration::from_millis(1);
            let acked = bw / 10;
            let prior = delivered;
            delivered += acked;
            rtt.update(r, Duration::ZERO);
            // Startup queue for 8 rounds, then inflight at 1.4·BDP (enough
            // for the 1.25 phase to end on time: 1.25·BDP + 3 packets).
            let inflight = if k < 8 { 4 * bdp } else { bdp * 14 / 10 };
            let ev = AckEvent {
                now: t0 + t,
                acked_bytes: acked as usize,
                acked_packets: acked as usize / mss,
                largest_acked_sent: t0 + t - r,
                prior_in_flight: inflight,
                bytes_in_flight: if k == 8 { bdp } else { inflight },
                rate: Some(RateSample {
                    delivery_rate: bw,
                    is_app_limited: false,
                    interval: r,
                    delivered: acked,
                    prior_delivered: prior,
                    total_delivered: delivered,
                    rtt: r,
                    total_lost: 0,
                }),
            };
            c.on_ack(&ev, &rtt, paths);
        }
        c
    }

    #[test]
    fn cruising_phases_use_alpha() {
        // This path at 500 000 B/s beside one at 1 000 000 B/s:
        // BW = (100, 50) ratio, α = 0.2 for this path.
        let mut seen = Vec::new();
        let c = drive(0, 500_000, 1_000_000, 0);
        assert_eq!(c.bbr().state(), BbrState::ProbeBw);
        assert!(close(c.alpha(), 0.2));
        for extra in 0..8 {
            let c = drive(0, 500_000, 1_000_000, extra);
            let k = c.bbr().cycle_index();
            let gain = c.metrics().pacing_gain.unwrap_or(f64::NAN);
            let expected = if k < 2 { PROBE_BW_GAINS[k] } else { 0.2 };
            assert!(close(gain, expected), "phase {k}: {gain}");
            assert_eq!(c.pacing_rate(), Some((expected * 500_000.0) as u64));
            seen.push(k);
        }
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 8, "all phases visited");
    }

    #[test]
    fn weak_path_paces_four_packets_per_rtt() {
        // BW = (100, 20) ratio: α < 0. In a cruising phase the rate is
        // 4·1200 B per 100 ms = 48 000 B/s, whatever BtlBw says.
        for extra in 0..8 {
            let c = drive(0, 200_000, 1_000_000, extra);
            assert!(c.alpha() < 0.0);
            let k = c.bbr().cycle_index();
            let expected = if k < 2 { (PROBE_BW_GAINS[k] * 200_000.0) as u64 } else { 48_000 };
            assert_eq!(c.pacing_rate(), Some(expected), "phase {k}");
        }
    }

    #[test]
    fn alone_it_is_bbr() {
        // The other path reports no bandwidth: α = 1 and gains are BBR's.
        let c = drive(0, 500_000, 0, 3);
        assert!(close(c.alpha(), 1.0));
        let k = c.bbr().cycle_index();
        assert_eq!(c.metrics().pacing_gain, Some(PROBE_BW_GAINS[k]));
    }

    fn group_views(leader_group: u32, phase: Option<u8>, probe_rtt: bool) -> [PathView; 2] {
        // No bandwidth on the leader: the joint-estimate scale stays 1.
        let leader = PathView { group: leader_group, probe_phase: phase, probe_rtt, ..view(0, 0) };
        let me = PathView { group: 0, ..view(1, 0) };
        [leader, me]
    }

    fn follower(paths: &[PathView], acks: usize) -> CoupledBbr {
        let t0 = base();
        let c = CoupledBbr::new(CcParams {
            path_id: PathId(1),
            mss: 1200,
            initial_window: 12_000,
            now: t0,
            seed: 0,
        });
        drive_with(c, t0, 500_000, paths, acks)
    }

    #[test]
    fn a_grouped_path_follows_its_leaders_probe_phase() {
        for k in 0..8u8 {
            let c = follower(&group_views(0, Some(k), false), 3);
            assert_eq!(c.bbr().state(), BbrState::ProbeBw);
            assert_eq!(c.bbr().cycle_index(), usize::from(k));
            assert_eq!(c.metrics().pacing_gain, Some(PROBE_BW_GAINS[usize::from(k)]));
        }
    }

    #[test]
    fn a_path_alone_in_its_group_cycles_on_its_own() {
        // The lower path is in another group: its phase changes nothing.
        let own: Vec<usize> =
            (0..8u8).map(|k| follower(&group_views(7, Some(k), false), 3).bbr().cycle_index()).collect();
        assert!(own.iter().all(|&i| i == own[0]), "{own:?}");
        assert!(CoupledBbr::leader(PathId(1), &group_views(7, Some(0), false)).is_none());
    }

    #[test]
    fn a_grouped_path_drains_with_its_leader() {
        let c = follower(&group_views(0, None, true), 2);
        assert_eq!(c.bbr().state(), BbrState::ProbeRtt);
        assert!(c.window() <= 4 * 1200);
        // The leader leaves ProbeRTT: so does the follower, window restored.
        let later = base() + Duration::from_secs(5);
        let c = drive_with(c, later, 500_000, &group_views(0, Some(2), false), 1);
        assert_eq!(c.bbr().state(), BbrState::ProbeBw);
        assert!(c.window() > 4 * 1200);
    }
}
