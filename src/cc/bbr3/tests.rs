//! BBRv3 driven through a tiny closed-loop model of one bottleneck: each step
//! sends one round's flight (`min(cwnd, pacing_rate · base RTT)`) at one
//! instant, queues what exceeds the BDP, drops what exceeds the buffer (plus
//! an optional random share), and acknowledges the rest one RTT later with
//! one ACK carrying a delivery-rate sample. Deterministic; no clock read.

use super::*;
use crate::cc::RateSample;
use crate::PathId;

const MSS: u64 = 1200;
const BASE_RTT: Duration = Duration::from_millis(100);
/// 1.6 MB/s: a BDP of 160 kB (133 packets) at 100 ms.
const CAP: u64 = 1_600_000;
const BDP: u64 = 160_000;
/// Paced chunks per flight.
const CHUNKS: u64 = 4;

#[allow(clippy::disallowed_methods)]
fn base() -> Instant {
    Instant::now()
}

/// The bottleneck of one step.
#[derive(Clone, Copy)]
struct Net {
    /// Extra bytes the bottleneck queue holds before it drops.
    buffer: u64,
    /// Share of the flight lost at random.
    loss: f64,
    /// Loss events the round's losses are reported in.
    loss_events: u64,
    /// Lower the base RTT by 1 µs each step.
    shrink_rtt: bool,
}

const DEEP: Net = Net { buffer: u64::MAX / 4, loss: 0.0, loss_events: 1, shrink_rtt: false };
/// DEEP on a path whose RTT creeps down, so ProbeRTT stays out of the way.
const STEADY: Net = Net { shrink_rtt: true, ..DEEP };

struct Driver {
    base: Instant,
    t: Duration,
    cc: Bbr3,
    rtt: RttEstimator,
    delivered: u64,
    lost: u64,
    base_rtt: Duration,
    /// Losses of the last step, declared at the start of the next.
    pending_loss: Option<(Instant, u64, u64)>,
}

impl Driver {
    fn new(path: u32) -> Self {
        let base = base();
        let params = CcParams {
            path_id: PathId(path),
            mss: MSS as usize,
            initial_window: 10 * MSS as usize,
            now: base,
            seed: 0,
        };
        Self {
            base,
            t: Duration::ZERO,
            cc: Bbr3::new(params),
            rtt: RttEstimator::default(),
            delivered: 0,
            lost: 0,
            base_rtt: BASE_RTT,
            pending_loss: None,
        }
    }

    fn now(&self) -> Instant {
        self.base + self.t
    }

    /// One round trip through `net`; returns (flight, lost) in bytes. The
    /// flight leaves in four paced chunks a quarter of the base RTT apart and
    /// each chunk is acked one RTT after it left. The pipe counts as full:
    /// inflight is the flight size throughout. Losses (the flight's tail) are
    /// declared at the start of the next step, before its first ACK, as
    /// RFC 9002 detects them once later packets are acked.
    fn step(&mut self, net: Net) -> (u64, u64) {
        let pace = self.cc.pacing_rate().unwrap_or(1) as f64;
        let base_rtt = self.base_rtt;
        if net.shrink_rtt {
            // A path whose RTT keeps falling by 1 µs a round: min_rtt stays
            // fresh and ProbeRTT never comes due.
            self.base_rtt -= Duration::from_micros(1);
        }
        let want = (pace * base_rtt.as_secs_f64()) as u64;
        // The engine sends only while inflight + packet ≤ cwnd.
        let packets = (self.cc.cwnd.min(want) / MSS).max(1);
        let flight = packets * MSS;
        let gap = base_rtt / CHUNKS as u32;
        let t0 = self.t;
        let chunk = |k: u64| packets * (k + 1) / CHUNKS - packets * k / CHUNKS;
        for k in 0..CHUNKS {
            let at = self.base + t0 + gap * k as u32;
            for _ in 0..chunk(k) {
                self.cc.on_packet_sent(at, MSS as usize, flight as usize);
            }
        }
        let queue = flight.saturating_sub(BDP);
        let dropped = queue.saturating_sub(net.buffer);
        let random = (flight as f64 * net.loss) as u64;
        let lost_packets = (dropped + random).div_ceil(MSS).min(chunk(CHUNKS - 1).saturating_sub(1));
        let rtt = base_rtt + Duration::from_secs_f64(queue.min(net.buffer) as f64 / CAP as f64);
        self.rtt.update(rtt, Duration::ZERO);
        let rate = ((flight - lost_packets * MSS) as f64 / rtt.as_secs_f64()) as u64;
        let prior_delivered = self.delivered;
        for k in 0..CHUNKS {
            let sent_at = self.base + t0 + gap * k as u32;
            self.t = t0 + gap * k as u32 + rtt;
            if let Some((at, n, events)) = self.pending_loss.take() {
                self.report_losses(at, n, events, flight);
            }
            let mut acked = chunk(k) * MSS;
            if k == CHUNKS - 1 && lost_packets > 0 {
                acked -= lost_packets * MSS;
                self.pending_loss = Some((sent_at, lost_packets, net.loss_events.max(1)));
            }
            self.ack(sent_at, acked, rtt, rate.min(CAP), prior_delivered, flight);
        }
        (flight, lost_packets * MSS)
    }

    /// Declare `packets` lost in `events` loss events.
    fn report_losses(&mut self, sent_at: Instant, packets: u64, events: u64, in_flight: u64) {
        let events = events.min(packets);
        for e in 0..events {
            let n = packets / events + u64::from(e < packets % events);
            self.lost += n * MSS;
            let ev = LossEvent {
                now: self.now(),
                largest_lost_sent: sent_at,
                lost_bytes: (n * MSS) as usize,
                lost_packets: n as usize,
                bytes_in_flight: in_flight as usize,
                persistent_congestion: false,
            };
            self.cc.on_loss(&ev, &self.rtt, &[]);
        }
    }

    /// ACK `acked` bytes sent at `sent_at` when `prior_delivered` had been
    /// delivered. The next flight is taken to be in flight already (a full
    /// pipe), so `bytes_in_flight` is the flight size.
    #[allow(clippy::too_many_arguments)]
    fn ack(
        &mut self,
        sent_at: Instant,
        acked: u64,
        rtt: Duration,
        rate: u64,
        prior_delivered: u64,
        in_flight: u64,
    ) {
        self.delivered += acked;
        let ev = AckEvent {
            now: self.now(),
            acked_bytes: acked as usize,
            acked_packets: acked.div_ceil(MSS) as usize,
            largest_acked_sent: sent_at,
            prior_in_flight: in_flight as usize,
            bytes_in_flight: in_flight as usize,
            rate: Some(RateSample {
                delivery_rate: rate,
                is_app_limited: false,
                interval: rtt,
                delivered: self.delivered - prior_delivered,
                prior_delivered,
                total_delivered: self.delivered,
                rtt,
                total_lost: self.lost,
            }),
        };
        self.cc.on_ack(&ev, &self.rtt, &[]);
    }

    /// Step until `state` (at most `max` steps); the states seen on the way.
    fn run_until(&mut self, net: Net, state: Bbr3State, max: usize) -> Vec<Bbr3State> {
        let mut seen = vec![self.cc.state()];
        for _ in 0..max {
            if self.cc.state() == state {
                return seen;
            }
            self.step(net);
            if seen.last() != Some(&self.cc.state()) {
                seen.push(self.cc.state());
            }
        }
        panic!("{state:?} not reached in {max} steps; seen {seen:?}");
    }
}

/// The pacing rate the draft prescribes for the current state (§5.6.2).
fn expected_pacing(cc: &Bbr3) -> u64 {
    (cc.pacing_gain() * cc.bw() as f64 * (1.0 - PACING_MARGIN)) as u64
}

#[test]
fn startup_exits_on_bandwidth_plateau() {
    use Bbr3State::*;
    let mut d = Driver::new(1);
    assert_eq!(d.cc.state(), Startup);
    assert!((d.cc.pacing_gain() - 2.7726).abs() < 1e-4);
    assert_eq!(d.cc.cwnd_gain(), 2.0);
    let seen = d.run_until(DEEP, ProbeBwCruise, 40);
    // Drain ends when inflight is down to the BDP; the same ACK finds DOWN's
    // exit condition (inflight ≤ BDP) met and moves on to CRUISE (§5.3.3.6).
    assert_eq!(seen, vec![Startup, Drain, ProbeBwCruise]);
    assert!(d.cc.full_bw_reached());
    // A plateau exit leaves no loss bound behind.
    assert_eq!(d.cc.inflight_longterm(), None);
    assert_eq!(d.cc.max_bw(), CAP);
    assert_eq!(d.cc.min_rtt(), Some(BASE_RTT));
    // 12 kB doubling to a 160 kB BDP takes about four rounds, then three flat
    // rounds: Startup ends within ten.
    assert!(d.cc.round_count() <= 10, "{} rounds", d.cc.round_count());
}

#[test]
fn drain_paces_at_half_the_bandwidth() {
    let mut d = Driver::new(1);
    d.run_until(DEEP, Bbr3State::Drain, 40);
    assert_eq!(d.cc.pacing_gain(), DRAIN_PACING_GAIN);
    assert_eq!(d.cc.pacing_rate(), Some(expected_pacing(&d.cc)));
    assert_eq!(d.cc.pacing_rate(), Some((0.5 * CAP as f64 * 0.99) as u64));
}

#[test]
fn startup_exits_on_excessive_loss() {
    use Bbr3State::*;
    // One-BDP buffer: the doubling overshoots it and loses far over 2%,
    // reported in eight loss events per round.
    let shallow = Net { buffer: BDP, loss_events: 8, ..DEEP };
    let mut d = Driver::new(1);
    let mut lossy_rounds = 0;
    while d.cc.state() == Startup {
        let (_, lost) = d.step(shallow);
        lossy_rounds += u64::from(lost > 0);
        assert!(d.cc.round_count() < 40, "Startup never ended");
    }
    assert_eq!(d.cc.state(), Drain);
    // The overshooting round's losses are declared during the next round.
    assert!(lossy_rounds <= 2, "exit after {lossy_rounds} lossy rounds");
    // Exit by loss, not by plateau: inflight_longterm = max(BDP, delivered last round).
    let hi = d.cc.inflight_longterm().expect("loss exit sets inflight_longterm");
    assert!((BDP..=2 * BDP + 2 * MSS).contains(&hi), "inflight_longterm {hi}");
}

#[test]
fn startup_ignores_loss_below_threshold_or_in_few_events() {
    // 1% random loss in many events, and heavy loss in only three events:
    // neither ends Startup early; the plateau does.
    let low = Net { loss: 0.01, loss_events: 20, ..DEEP };
    let few = Net { buffer: BDP, loss_events: 3, ..DEEP };
    for net in [low, few] {
        let mut d = Driver::new(1);
        while d.cc.state() == Bbr3State::Startup {
            d.step(net);
            assert!(d.cc.round_count() < 40, "Startup never ended");
        }
        assert_eq!(d.cc.inflight_longterm(), None, "no loss exit");
        assert!(d.cc.full_bw_reached());
    }
}

#[test]
fn probe_bw_cycles_down_cruise_refill_up() {
    use Bbr3State::*;
    let mut d = Driver::new(2);
    d.run_until(STEADY, ProbeBwCruise, 40);
    let seen = d.run_until(STEADY, ProbeBwUp, 60);
    assert_eq!(seen, vec![ProbeBwCruise, ProbeBwRefill, ProbeBwUp]);
    // UP ends on a plateau (three flat rounds); the next cycle starts in DOWN
    // and runs DOWN, CRUISE, REFILL, UP.
    let seen = d.run_until(STEADY, ProbeBwDown, 10);
    assert_eq!(seen, vec![ProbeBwUp, ProbeBwDown]);
    assert!((d.cc.pacing_gain() - DOWN_PACING_GAIN).abs() < 1e-12);
    let start = d.t;
    let seen = d.run_until(STEADY, ProbeBwUp, 60);
    assert_eq!(seen, vec![ProbeBwDown, ProbeBwCruise, ProbeBwRefill, ProbeBwUp]);
    // The probe waits 2-3 s of wall clock (the 63-round Reno bound is longer
    // here), plus REFILL's round and the model's 175 ms step.
    let waited = d.t - start;
    assert!(waited >= Duration::from_secs(2) && waited <= Duration::from_millis(3500), "{waited:?}");
}

#[test]
fn random_wait_differs_by_path() {
    let wait = |path| {
        let mut d = Driver::new(path);
        d.run_until(DEEP, Bbr3State::ProbeBwCruise, 40);
        d.cc.bw_probe_wait
    };
    let (a, b) = (wait(1), wait(2));
    assert_eq!(a, wait(1), "deterministic per path");
    assert_ne!(a, b);
    for w in [a, b] {
        assert!(w >= Duration::from_secs(2) && w < Duration::from_secs(3), "{w:?}");
    }
}

#[test]
fn pacing_is_gain_times_bw_in_every_state() {
    use Bbr3State::*;
    let mut d = Driver::new(3);
    let mut checked = Vec::new();
    for _ in 0..80 {
        d.step(STEADY);
        let s = d.cc.state();
        if d.cc.full_bw_reached() && s != Startup {
            assert_eq!(d.cc.pacing_rate(), Some(expected_pacing(&d.cc)), "{s:?}");
            if !checked.contains(&s) {
                checked.push(s);
            }
        }
    }
    for s in [Drain, ProbeBwDown, ProbeBwCruise, ProbeBwRefill, ProbeBwUp] {
        assert!(checked.contains(&s), "{s:?} not visited: {checked:?}");
    }
    // UP paces at 1.25 × bw × 0.99.
    d.run_until(STEADY, ProbeBwUp, 60);
    assert_eq!(d.cc.pacing_rate(), Some((1.25 * CAP as f64 * 0.99) as u64));
    assert_eq!(d.cc.cwnd_gain(), UP_CWND_GAIN);
}

#[test]
fn inflight_longterm_set_after_a_probe_round_above_two_percent_loss() {
    let mut d = Driver::new(4);
    d.run_until(STEADY, Bbr3State::ProbeBwUp, 100);
    assert_eq!(d.cc.inflight_longterm(), None);
    // 1% loss while probing (declared during the next round): under the
    // threshold, no bound.
    let (_, lost1) = d.step(Net { loss: 0.01, loss_events: 2, ..STEADY });
    let (flight, lost2) = d.step(Net { loss: 0.05, ..STEADY });
    assert!(lost1 > 0 && lost2 > 0);
    assert_eq!(d.cc.inflight_longterm(), None);
    assert_eq!(d.cc.state(), Bbr3State::ProbeBwUp);
    // 5%: inflight_longterm becomes the inflight at which the loss since the
    // packet left (both rounds' losses) crossed 2%, and UP ends.
    d.step(STEADY);
    let hi = d.cc.inflight_longterm().expect("inflight_longterm set");
    let at_loss = model::inflight_at_loss(MSS, flight, lost1 + lost2);
    assert!(at_loss > BDP);
    assert_eq!(hi, at_loss);
    assert!(hi < flight && hi > flight * 9 / 10, "hi {hi} flight {flight}");
    assert!(d.cc.prev_probe_too_high);
    assert_eq!(d.cc.state(), Bbr3State::ProbeBwDown);
    // In CRUISE the window leaves 15% headroom below inflight_longterm.
    d.run_until(STEADY, Bbr3State::ProbeBwCruise, 20);
    assert!(d.cc.cwnd <= d.cc.inflight_with_headroom());
    assert!(d.cc.cwnd <= hi * 86 / 100, "cwnd {} hi {hi}", d.cc.cwnd);
}

#[test]
fn inflight_at_loss_solves_for_the_threshold() {
    // 98 800 in flight before the packet, 1 000 lost before it: the rate
    // reaches 2% once x more bytes of the packet are lost, where
    // (1000 + x) / (98800 + x) = 0.02.
    let at = model::inflight_at_loss(1200, 100_000, 2200);
    let x = at as f64 - 98_800.0;
    assert!(((1000.0 + x) / (98_800.0 + x) - 0.02).abs() < 1e-4, "{at}");
}

#[test]
fn loss_while_cruising_cuts_the_short_term_model_by_beta() {
    let mut d = Driver::new(5);
    d.run_until(STEADY, Bbr3State::ProbeBwCruise, 40);
    assert_eq!(d.cc.bw_shortterm(), None);
    let max_bw = d.cc.max_bw();
    // A lossy round (the loss is declared in the next one):
    // bw_shortterm = max(bw_latest, 0.7 · max_bw).
    d.step(Net { loss: 0.005, ..STEADY });
    d.step(STEADY);
    assert_eq!(d.cc.state(), Bbr3State::ProbeBwCruise);
    let st = d.cc.bw_shortterm().expect("bw_shortterm set by loss");
    assert!(st >= (0.7 * max_bw as f64) as u64 && st < max_bw, "{st} vs {max_bw}");
    let ist = d.cc.inflight_shortterm().expect("inflight_shortterm set by loss");
    assert_eq!(d.cc.bw(), st);
    assert_eq!(d.cc.pacing_rate(), Some(expected_pacing(&d.cc)));
    assert!(d.cc.cwnd <= ist.max(4 * MSS));
    // REFILL forgets it.
    d.run_until(STEADY, Bbr3State::ProbeBwRefill, 40);
    assert_eq!(d.cc.bw_shortterm(), None);
    assert_eq!(d.cc.inflight_shortterm(), None);
}

#[test]
fn probe_rtt_every_five_seconds_at_half_the_bdp() {
    let mut d = Driver::new(6);
    let mut entries = Vec::new();
    let mut prev = d.cc.state();
    while d.t < Duration::from_secs(17) {
        d.step(DEEP);
        let s = d.cc.state();
        if s == Bbr3State::ProbeRtt {
            assert_eq!(d.cc.cwnd_gain(), PROBE_RTT_CWND_GAIN);
            assert!(d.cc.cwnd <= BDP / 2, "ProbeRTT cwnd {}", d.cc.cwnd);
            if prev != s {
                entries.push(d.t);
            }
        }
        prev = s;
    }
    assert_eq!(entries.len(), 3, "{entries:?}");
    // The first comes 5 s after the first RTT sample (t ≈ 0.1 s); the next
    // ones 5 s after the previous ProbeRTT ended (200 ms and one round
    // after it began); the model's steps are 175 ms.
    assert!(entries[0] > Duration::from_millis(5100) && entries[0] < Duration::from_millis(5400));
    for w in entries.windows(2) {
        let gap = w[1] - w[0];
        assert!(gap > Duration::from_millis(5200) && gap < Duration::from_millis(5800), "{gap:?}");
    }
    // It ends back in ProbeBW (CRUISE), with the window restored.
    d.run_until(DEEP, Bbr3State::ProbeBwCruise, 20);
    assert!(d.cc.cwnd >= BDP);
}

#[test]
fn persistent_congestion_cuts_to_inflight_plus_one_packet() {
    let mut d = Driver::new(7);
    d.run_until(DEEP, Bbr3State::ProbeBwCruise, 40);
    let ev = LossEvent {
        now: d.now(),
        largest_lost_sent: d.now(),
        lost_bytes: 10 * MSS as usize,
        lost_packets: 10,
        bytes_in_flight: 2 * MSS as usize,
        persistent_congestion: true,
    };
    d.cc.on_loss(&ev, &d.rtt, &[]);
    assert_eq!(d.cc.window(), 3 * MSS as usize);
}

#[test]
fn metrics_and_trait_outputs() {
    let mut d = Driver::new(8);
    let m = d.cc.metrics();
    assert_eq!(m.state, "Startup");
    assert_eq!(d.cc.name(), "bbr3");
    assert!(d.cc.in_slow_start());
    assert_eq!(d.cc.window(), 12_000);
    // Before an RTT sample: 2.77 × 12 000 B / 1 ms.
    assert_eq!(d.cc.pacing_rate(), Some((STARTUP_PACING_GAIN * 12_000_000.0) as u64));
    d.run_until(DEEP, Bbr3State::ProbeBwCruise, 40);
    let m = d.cc.metrics();
    assert_eq!(m.state, "ProbeBW_CRUISE");
    assert_eq!(m.bandwidth, Some(CAP));
    assert_eq!(m.pacing_gain, Some(1.0));
    assert_eq!(m.cwnd_gain, Some(DEFAULT_CWND_GAIN));
    assert_eq!(d.cc.bandwidth_estimate(), Some(CAP));
}
