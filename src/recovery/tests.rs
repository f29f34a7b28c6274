//! Loss recovery tests with worked numbers (RFC 9002 examples where given).
#![allow(clippy::single_range_in_vec_init)]

use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::cc::{AckEvent, CcParams, CongestionController, LossEvent, PathView};
use crate::error::ErrorCode;
use crate::rtt::RttEstimator;
use crate::PathId;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

#[allow(clippy::disallowed_methods)]
fn t0() -> Instant {
    Instant::now()
}

/// What the recording controller saw.
#[derive(Debug, Default)]
struct Log {
    acks: Vec<AckEvent>,
    losses: Vec<LossEvent>,
}

/// A fixed-window controller that records every event.
#[derive(Debug)]
struct Recorder(Arc<Mutex<Log>>, usize);

impl CongestionController for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn window(&self) -> usize {
        self.1
    }
    fn on_ack(&mut self, ev: &AckEvent, _: &RttEstimator, _: &[PathView]) {
        self.0.lock().unwrap().acks.push(ev.clone());
    }
    fn on_loss(&mut self, ev: &LossEvent, _: &RttEstimator, _: &[PathView]) {
        self.0.lock().unwrap().losses.push(ev.clone());
    }
}

fn path_with_log(now: Instant) -> (PathRecovery, Arc<Mutex<Log>>) {
    let log = Arc::new(Mutex::new(Log::default()));
    let params = CcParams { path_id: PathId(0), mss: 1200, initial_window: 12000, now, seed: 0 };
    let p = PathRecovery::new(params, Box::new(Recorder(log.clone(), 12000)), ms(333));
    (p, log)
}

type Space = PacketSpace<u64>;

fn send(s: &mut Space, p: &mut PathRecovery, pn: u64, at: Instant) {
    s.on_packet_sent(p, SentPacket::new(pn, at, 1200, true, true, pn));
}

/// Process an ACK; returns the summary and (fate, pn) of every packet handed back.
fn ack(
    s: &mut Space,
    p: &mut PathRecovery,
    ranges: &[Range<u64>],
    now: Instant,
) -> (Result<AckSummary, crate::TransportError>, Vec<(PacketFate, u64)>) {
    let mut out = Vec::new();
    let r = s.on_ack_received(
        p,
        ranges.iter().cloned(),
        Duration::ZERO,
        now,
        &HandshakeStatus::CONFIRMED,
        &[],
        |f, pkt| out.push((f, pkt.data)),
    );
    (r, out)
}

#[test]
fn rtt_sample_only_from_newly_acked_largest_ack_eliciting() {
    let t = t0();
    let (mut p, _) = path_with_log(t);
    let mut s = Space::new(SpaceKind::Data);
    send(&mut s, &mut p, 0, t);
    send(&mut s, &mut p, 1, t + ms(10));
    let (r, out) = ack(&mut s, &mut p, &[0..2], t + ms(100));
    assert!(r.unwrap().rtt_sampled);
    assert_eq!(out, vec![(PacketFate::Acked, 0), (PacketFate::Acked, 1)]);
    assert_eq!(p.rtt().latest(), ms(90));
    // Repeated ACK: nothing new, no sample.
    let (r, out) = ack(&mut s, &mut p, &[0..2], t + ms(150));
    assert_eq!(r.unwrap(), AckSummary::default());
    assert!(out.is_empty());

    // Largest newly acked but only an ACK-only packet: no sample.
    s.on_packet_sent(&mut p, SentPacket::new(2, t + ms(160), 50, false, false, 2));
    let (r, _) = ack(&mut s, &mut p, &[2..3], t + ms(200));
    let r = r.unwrap();
    assert_eq!((r.newly_acked, r.rtt_sampled), (1, false));
    assert_eq!(p.rtt().latest(), ms(90));

    // 3 and 4 sent; ACK of 4 samples 80 ms; a later ACK newly acking only 3
    // (largest 4 not new) takes no sample.
    send(&mut s, &mut p, 3, t + ms(210));
    send(&mut s, &mut p, 4, t + ms(220));
    let (r, _) = ack(&mut s, &mut p, &[4..5], t + ms(300));
    assert!(r.unwrap().rtt_sampled);
    assert_eq!(p.rtt().latest(), ms(80));
    let (r, out) = ack(&mut s, &mut p, &[3..5], t + ms(305));
    let r = r.unwrap();
    assert_eq!((r.newly_acked, r.rtt_sampled), (1, false));
    assert_eq!(out, vec![(PacketFate::Acked, 3)]);
    assert_eq!(p.rtt().latest(), ms(80));
    assert_eq!(p.bytes_in_flight(), 0);
    assert!(s.is_empty());
}

#[test]
fn packet_and_time_threshold_loss() {
    let t = t0();
    let (mut p, log) = path_with_log(t);
    let mut s = Space::new(SpaceKind::Data);
    send(&mut s, &mut p, 0, t);
    ack(&mut s, &mut p, &[0..1], t + ms(100)).0.unwrap(); // srtt = latest = 100 ms
    for pn in 1..=5 {
        send(&mut s, &mut p, pn, t + ms(100 + pn));
    }
    // ACK of 5 at 200 ms: 1 and 2 are 3 below the largest -> lost by packet
    // threshold; 3 and 4 are neither.
    let (r, out) = ack(&mut s, &mut p, &[5..6], t + ms(200));
    assert_eq!(r.unwrap().lost, 2);
    assert_eq!(out, vec![(PacketFate::Acked, 5), (PacketFate::Lost, 1), (PacketFate::Lost, 2)]);
    // Sample 95 ms: srtt = (7·100 + 95)/8 = 99.375 ms, loss delay = 9/8 of
    // that = 111.796875 ms; loss time = send(3) + delay = 214.796875 ms.
    assert_eq!(p.rtt().smoothed(), Duration::from_micros(99_375));
    let loss_delay = Duration::from_nanos(111_796_875);
    let expect = t + ms(103) + loss_delay;
    assert_eq!(s.loss_time(), Some(expect));
    assert_eq!(p.loss_detection_timer(&[&s], &HandshakeStatus::CONFIRMED), Some(expect));
    {
        let l = log.lock().unwrap();
        assert_eq!(l.losses.len(), 1);
        assert_eq!((l.losses[0].lost_packets, l.losses[0].lost_bytes), (2, 2400));
        assert_eq!(l.losses[0].largest_lost_sent, t + ms(102));
        assert_eq!(l.acks.len(), 2);
        assert_eq!((l.acks[1].prior_in_flight, l.acks[1].bytes_in_flight), (6000, 2400));
    }
    // Firing early does nothing; on time, 3 is lost by the time threshold.
    let mut lost = Vec::new();
    let hs = HandshakeStatus::CONFIRMED;
    let a = p.on_loss_detection_timeout(&mut [&mut s], expect - ms(1), &hs, &[], |f, k| lost.push((f, k.pn)));
    assert_eq!(a, TimeoutAction::None);
    let a = p.on_loss_detection_timeout(&mut [&mut s], expect, &hs, &[], |f, k| lost.push((f, k.pn)));
    assert_eq!(a, TimeoutAction::Lost(SpaceKind::Data));
    assert_eq!(lost, vec![(PacketFate::Lost, 3)]);
    assert_eq!(s.loss_time(), Some(t + ms(104) + loss_delay));
    assert_eq!(p.bytes_in_flight(), 1200);
}

#[test]
fn pto_with_backoff() {
    let t = t0();
    let (mut p, _) = path_with_log(t);
    let hs = HandshakeStatus::CONFIRMED;
    p.rtt_mut().update(ms(100), Duration::ZERO); // srtt 100, rttvar 50
    p.set_max_ack_delay(ms(25));
    let mut s = Space::new(SpaceKind::Data);
    send(&mut s, &mut p, 0, t);
    // 100 + 4·50 + 25 = 325 ms, doubled after each PTO.
    assert_eq!(p.loss_detection_timer(&[&s], &hs), Some(t + ms(325)));
    let a = p.on_loss_detection_timeout(&mut [&mut s], t + ms(325), &hs, &[], |_, _| ());
    assert_eq!(a, TimeoutAction::Probe { space: SpaceKind::Data, packets: 2 });
    assert_eq!(p.pto_count(), 1);
    assert_eq!(p.loss_detection_timer(&[&s], &hs), Some(t + ms(650)));

    // First sample 20 ms: srtt 20, rttvar 10 -> 20 + 40 + 25 = 85 ms, then 170.
    let (mut p, _) = path_with_log(t);
    p.rtt_mut().update(ms(20), Duration::ZERO);
    let mut s = Space::new(SpaceKind::Data);
    send(&mut s, &mut p, 0, t);
    assert_eq!(p.loss_detection_timer(&[&s], &hs), Some(t + ms(85)));
    p.on_loss_detection_timeout(&mut [&mut s], t + ms(85), &hs, &[], |_, _| ());
    assert_eq!(p.loss_detection_timer(&[&s], &hs), Some(t + ms(170)));
    // An ACK resets the backoff; nothing in flight -> no timer.
    ack(&mut s, &mut p, &[0..1], t + ms(200)).0.unwrap();
    assert_eq!(p.pto_count(), 0);
    assert_eq!(p.loss_detection_timer(&[&s], &hs), None);
}

#[test]
fn pto_during_handshake() {
    let t = t0();
    let (mut p, _) = path_with_log(t);
    let mut init = Space::new(SpaceKind::Initial);
    let mut hsk = Space::new(SpaceKind::Handshake);
    let mut data = Space::new(SpaceKind::Data);
    let hs = HandshakeStatus { is_client: true, ..HandshakeStatus::default() };
    send(&mut init, &mut p, 0, t);
    send(&mut data, &mut p, 0, t + ms(1));
    // No sample: srtt 333, rttvar 166.5 -> PTO 999 ms; the Data space is
    // skipped until the handshake is confirmed.
    assert_eq!(p.loss_detection_timer(&[&init, &hsk, &data], &hs), Some(t + ms(999)));
    let a =
        p.on_loss_detection_timeout(&mut [&mut init, &mut hsk, &mut data], t + ms(999), &hs, &[], |_, _| ());
    assert_eq!(a, TimeoutAction::Probe { space: SpaceKind::Initial, packets: 2 });
    assert_eq!(p.loss_detection_timer(&[&init, &hsk, &data], &hs), Some(t + ms(1998)));
    let confirmed = HandshakeStatus { handshake_confirmed: true, ..hs };
    // Discarding Initial resets the backoff (RFC 9002 §6.4); once confirmed,
    // Data counts too: sent at 1 ms, + 999 + 25.
    init.discard(&mut p, |_, _| ());
    assert_eq!(p.pto_count(), 0);
    assert_eq!(p.loss_detection_timer(&[&hsk, &data], &confirmed), Some(t + ms(1025)));
}

#[test]
fn anti_deadlock_pto() {
    let t = t0();
    let (mut p, _) = path_with_log(t);
    let mut init = Space::new(SpaceKind::Initial);
    let mut hsk = Space::new(SpaceKind::Handshake);
    let mut hs = HandshakeStatus { is_client: true, ..HandshakeStatus::default() };
    send(&mut init, &mut p, 0, t);
    init.on_ack_received(&mut p, [0..1], Duration::ZERO, t + ms(100), &hs, &[], |_, _| ()).unwrap();
    // srtt 100, rttvar 50: 300 ms from the ACK, one probe in Initial.
    assert_eq!(p.loss_detection_timer(&[&init, &hsk], &hs), Some(t + ms(400)));
    init.discard(&mut p, |_, _| ());
    hs.has_handshake_keys = true;
    let a = p.on_loss_detection_timeout(&mut [&mut hsk], t + ms(400), &hs, &[], |_, _| ());
    assert_eq!(a, TimeoutAction::Probe { space: SpaceKind::Handshake, packets: 1 });
    assert_eq!(p.pto_count(), 1);
    assert_eq!(p.loss_detection_timer(&[&hsk], &hs), Some(t + ms(400 + 600)));
    // An ACK does not reset the backoff before the peer validated us.
    send(&mut hsk, &mut p, 0, t + ms(450));
    hsk.on_ack_received(&mut p, [0..1], Duration::ZERO, t + ms(550), &hs, &[], |_, _| ()).unwrap();
    assert_eq!(p.pto_count(), 1);
    // Validated: no timer without ack-eliciting packets in flight.
    hs.peer_completed_address_validation = true;
    assert_eq!(p.loss_detection_timer(&[&hsk], &hs), None);
    // A server at the amplification limit arms nothing.
    send(&mut hsk, &mut p, 1, t + ms(600));
    assert!(p.loss_detection_timer(&[&hsk], &hs).is_some());
    let blocked = HandshakeStatus { amplification_limited: true, ..hs };
    assert_eq!(p.loss_detection_timer(&[&hsk], &blocked), None);
}

/// RFC 9002 §7.6.2, with the RTT chosen so that srtt + max(4·rttvar, 1 ms) +
/// max_ack_delay = 2 s and every RTT sample equal to srtt.
fn pc_setup(t: Instant) -> (PathRecovery, Arc<Mutex<Log>>, Space, Instant) {
    let (mut p, log) = path_with_log(t);
    p.set_max_ack_delay(ms(999));
    let mut s = Space::new(SpaceKind::Data);
    send(&mut s, &mut p, 0, t);
    ack(&mut s, &mut p, &[0..1], t + ms(1000)).0.unwrap(); // first sample at S
    for _ in 0..100 {
        p.rtt_mut().update(ms(1000), Duration::ZERO); // rttvar -> 0
    }
    assert!(p.rtt().var() * 4 < ms(1));
    assert_eq!(p.persistent_congestion_duration(), ms(6000));
    let s0 = t + ms(1000);
    let at = |x: u64| s0 + ms(x);
    send(&mut s, &mut p, 1, at(0));
    send(&mut s, &mut p, 2, at(1000));
    ack(&mut s, &mut p, &[1..2], at(1000)).0.unwrap();
    for (pn, x) in [(3, 2000), (4, 3000), (5, 4000), (6, 5000), (7, 6000), (8, 8000), (9, 12000)] {
        send(&mut s, &mut p, pn, at(x));
    }
    (p, log, s, s0)
}

#[test]
fn persistent_congestion_rfc_example() {
    let t = t0();
    let (mut p, log, mut s, s0) = pc_setup(t);
    let (r, out) = ack(&mut s, &mut p, &[9..10], s0 + ms(13000));
    let r = r.unwrap();
    // 2..=8 lost, spanning 1 s .. 8 s = 7 s > 6 s with nothing acked between.
    assert_eq!(r.lost, 7);
    assert!(r.persistent_congestion);
    assert_eq!(out.iter().filter(|(f, _)| *f == PacketFate::Lost).count(), 7);
    let l = log.lock().unwrap();
    assert_eq!(l.losses.len(), 1);
    assert!(l.losses[0].persistent_congestion);
}

#[test]
fn persistent_congestion_broken_by_an_ack_in_between() {
    let t = t0();
    let (mut p, _, mut s, s0) = pc_setup(t);
    // Acking 5 as well splits the losses into 2..=4 (2 s) and 6..=8 (3 s).
    let (r, _) = ack(&mut s, &mut p, &[9..10, 5..6], s0 + ms(13000));
    let r = r.unwrap();
    assert_eq!(r.lost, 6);
    assert!(!r.persistent_congestion);
}

#[test]
fn ack_of_unsent_or_skipped_pn_is_protocol_violation() {
    let t = t0();
    let (mut p, _) = path_with_log(t);
    let mut s = Space::new(SpaceKind::Data);
    let (r, _) = ack(&mut s, &mut p, &[0..1], t);
    assert_eq!(r.unwrap_err().code, ErrorCode::PROTOCOL_VIOLATION);
    send(&mut s, &mut p, 0, t);
    send(&mut s, &mut p, 1, t);
    send(&mut s, &mut p, 3, t); // 2 skipped
    let (r, out) = ack(&mut s, &mut p, &[4..5, 0..2], t + ms(10));
    assert_eq!(r.unwrap_err().code, ErrorCode::PROTOCOL_VIOLATION);
    let (r, out2) = ack(&mut s, &mut p, &[3..4, 1..3], t + ms(10));
    assert_eq!(r.unwrap_err().code, ErrorCode::PROTOCOL_VIOLATION);
    // Nothing was touched by the rejected frames.
    assert!(out.is_empty() && out2.is_empty());
    assert_eq!(s.iter().count(), 3);
    assert_eq!(p.bytes_in_flight(), 3600);
    assert!(ack(&mut s, &mut p, &[3..4, 0..2], t + ms(10)).0.is_ok());
    assert_eq!(p.bytes_in_flight(), 0);
}

/// Slots are looked up by number less the front's, checked, else by binary
/// search: numbers past a skipped range are found either way.
#[test]
fn lookups_across_skipped_numbers() {
    let t = t0();
    let (mut p, _) = path_with_log(t);
    let mut s = Space::new(SpaceKind::Data);
    let sent: Vec<u64> = (0..60).filter(|pn| !(20..23).contains(pn) && *pn != 40).collect();
    for &pn in &sent {
        send(&mut s, &mut p, pn, t);
    }
    for pn in 0..62 {
        assert_eq!(s.get(pn).map(|k| k.data), sent.contains(&pn).then_some(pn), "pn {pn}");
    }
    let (r, out) = ack(&mut s, &mut p, &[41..45, 23..30, 0..8], t + ms(10));
    assert!(r.is_ok());
    let mut acked: Vec<u64> = out.iter().filter(|(f, _)| *f == PacketFate::Acked).map(|x| x.1).collect();
    acked.sort_unstable();
    let want: Vec<u64> = (0..8).chain(23..30).chain(41..45).collect();
    assert_eq!(acked, want);
    // The front moved past the acknowledged 0..8: lookups start from there.
    assert_eq!(s.get(50).map(|k| k.data), Some(50));
    assert!(s.get(5).is_none() && s.get(40).is_none());
}

#[test]
fn delivery_rate_sample() {
    let t = t0();
    let (mut p, log) = path_with_log(t);
    let mut s = Space::new(SpaceKind::Data);
    for pn in 0..10 {
        send(&mut s, &mut p, pn, t + ms(pn));
    }
    let pk = s.get(9).unwrap();
    assert_eq!((pk.delivered, pk.delivered_time, pk.first_sent_time, pk.tx_in_flight), (0, t, t, 12000));
    ack(&mut s, &mut p, &[0..10], t + ms(100)).0.unwrap();
    let ev = log.lock().unwrap().acks[0].clone();
    assert_eq!(
        (ev.acked_bytes, ev.acked_packets, ev.prior_in_flight, ev.bytes_in_flight),
        (12000, 10, 12000, 0)
    );
    let rs = ev.rate.unwrap();
    // interval = max(send elapsed 9 ms, ack elapsed 100 ms) = 100 ms;
    // 12000 bytes / 0.1 s = 120 000 bytes/s.
    assert_eq!(rs.interval, ms(100));
    assert_eq!((rs.delivered, rs.delivery_rate, rs.total_delivered), (12000, 120_000, 12000));
    assert_eq!(rs.rtt, ms(91));
    assert!(!rs.is_app_limited);

    // App-limited bubble: packets sent after it are marked, and so are
    // samples taken from them, until the bubble is delivered.
    p.on_app_limited();
    send(&mut s, &mut p, 10, t + ms(200));
    assert!(s.get(10).unwrap().is_app_limited);
    assert_eq!(s.get(10).unwrap().delivered, 12000);
    ack(&mut s, &mut p, &[10..11], t + ms(300)).0.unwrap();
    let rs = log.lock().unwrap().acks[1].rate.unwrap();
    assert!(rs.is_app_limited);
    // Flight restarted at 200 ms: 1200 bytes over 100 ms.
    assert_eq!((rs.delivered, rs.delivery_rate), (1200, 12_000));
    send(&mut s, &mut p, 11, t + ms(310));
    assert!(!s.get(11).unwrap().is_app_limited);
}

#[test]
fn discard_and_abandon() {
    let t = t0();
    let (mut p, _) = path_with_log(t);
    let mut init = Space::new(SpaceKind::Initial);
    let mut data = Space::new(SpaceKind::Data);
    send(&mut init, &mut p, 0, t);
    send(&mut init, &mut p, 1, t);
    send(&mut data, &mut p, 0, t);
    assert_eq!(p.bytes_in_flight(), 3600);
    let mut got = Vec::new();
    init.discard(&mut p, |f, k| got.push((f, k.pn)));
    assert_eq!(got, vec![(PacketFate::Discarded, 0), (PacketFate::Discarded, 1)]);
    assert_eq!((p.bytes_in_flight(), init.ack_eliciting_in_flight()), (1200, 0));
    got.clear();
    data.declare_all_lost(&mut p, |f, k| got.push((f, k.pn)));
    assert_eq!(got, vec![(PacketFate::Lost, 0)]);
    assert_eq!((p.bytes_in_flight(), p.lost_bytes()), (0, 1200));
}

/// A path that sent packets `0..n` of 1200 bytes at `t`.
fn flight(t: Instant, n: u64) -> (PathRecovery, Space) {
    let (mut p, _) = path_with_log(t);
    let mut s = Space::new(SpaceKind::Data);
    for pn in 0..n {
        send(&mut s, &mut p, pn, t);
    }
    (p, s)
}

#[test]
fn can_send_and_view() {
    let t = t0();
    let (mut p, mut s) = flight(t, 9);
    assert!(p.can_send(1200));
    send(&mut s, &mut p, 9, t);
    assert!(!p.can_send(1));
    // No sample: srtt 333 ms; pacing 1.25·12000/0.333 = 45045 bytes/s.
    assert_eq!(p.pacing_rate(), 45_045);
    let v = p.view(true);
    assert_eq!((v.id, v.cwnd, v.bytes_in_flight, v.bandwidth), (PathId(0), 12000, 12000, 36_036));
}

#[test]
fn an_ack_brings_the_pacing_rate_up_to_date() {
    let t = t0();
    // A new path's first flight, paced at the initial RTT's rate.
    let (mut p, mut s) = flight(t, 10);
    let held = p.pacer().next_release(t, 1200).expect("bucket spent");
    assert!(held - t > ms(20), "{:?} at 45 kB/s", held - t);
    // Its ACK brings a 4 ms RTT: the path may send again at once, not when
    // the old rate would have let it (nothing is sent to refresh it).
    let now = t + ms(4);
    let (r, _) = ack(&mut s, &mut p, &[0..10], now);
    r.unwrap();
    assert_eq!(p.pacer().rate(), p.pacing_rate());
    let wait = p.pacer().next_release(now, 1200).map_or(Duration::ZERO, |r| r - now);
    assert!(wait < ms(1), "held {wait:?} after the ACK");
}

mod ack_tracker {
    use super::*;

    #[test]
    fn every_second_packet_and_delay() {
        let t = t0();
        let mut a = AckTracker::new(ms(25), 3);
        assert_eq!(a.ack_deadline(), None);
        assert!(a.on_packet_received(0, t, true, Ecn::NotEct));
        assert_eq!(a.ack_deadline(), Some(t + ms(25)));
        assert!(a.on_packet_received(1, t + ms(5), true, Ecn::NotEct));
        assert_eq!(a.ack_deadline(), Some(t)); // second packet: now
                                               // ACK Delay field: 3 ms since the largest arrived, in 8 µs units.
        assert_eq!(a.ack_delay_field(t + ms(8)), 3000 >> 3);
        a.on_ack_sent();
        assert_eq!(a.ack_deadline(), None);
        // Non-ack-eliciting packets never arm the timer.
        assert!(a.on_packet_received(2, t + ms(10), false, Ecn::NotEct));
        assert_eq!(a.ack_deadline(), None);
        assert!(a.has_new());
        assert!(!a.on_packet_received(2, t + ms(11), true, Ecn::NotEct)); // duplicate
        assert_eq!(a.ack_deadline(), None);
    }

    #[test]
    fn immediate_on_gap_reorder_and_ce() {
        let t = t0();
        let mut a = AckTracker::new(ms(25), 3);
        a.on_packet_received(0, t, true, Ecn::NotEct);
        a.on_ack_sent();
        a.on_packet_received(2, t + ms(1), true, Ecn::NotEct); // 1 missing
        assert_eq!(a.ack_deadline(), Some(t + ms(1)));
        a.on_ack_sent();
        a.on_packet_received(1, t + ms(2), true, Ecn::NotEct); // out of order
        assert_eq!(a.ack_deadline(), Some(t + ms(2)));
        a.on_ack_sent();
        a.on_packet_received(3, t + ms(3), true, Ecn::NotEct); // in order
        assert_eq!(a.ack_deadline(), Some(t + ms(28)));
        a.on_ack_sent();
        a.on_packet_received(4, t + ms(4), true, Ecn::Ce);
        assert_eq!(a.ack_deadline(), Some(t + ms(4)));
        assert_eq!(a.ecn_counts(), [0, 0, 1]);
        assert_eq!(a.ranges().iter().cloned().collect::<Vec<_>>(), vec![0..5]);
    }

    #[test]
    fn forget_acked_ranges_and_bound() {
        let t = t0();
        let mut a = AckTracker::new(ms(25), 3);
        for pn in [0, 1, 2, 5, 6, 9] {
            a.on_packet_received(pn, t, true, Ecn::NotEct);
        }
        a.on_ack_frame_acked(5);
        assert_eq!(a.ranges().iter().cloned().collect::<Vec<_>>(), vec![6..7, 9..10]);
        assert!(a.is_duplicate(2) && a.is_duplicate(5)); // still remembered
                                                         // A late packet below the acknowledged ACK was never seen: new, and
                                                         // reported again.
        assert!(!a.is_duplicate(3));
        assert!(a.on_packet_received(3, t, true, Ecn::NotEct));
        assert_eq!(a.ranges().iter().cloned().collect::<Vec<_>>(), vec![3..4, 6..7, 9..10]);
        assert_eq!(a.largest_received(), Some(9));
        a.set_max_ranges(2);
        a.on_packet_received(11, t, true, Ecn::NotEct);
        assert_eq!(a.ranges().iter().cloned().collect::<Vec<_>>(), vec![9..10, 11..12]);
        assert!(!a.is_duplicate(7) && !a.is_duplicate(10));
    }

    #[test]
    fn duplicate_detection_is_bounded() {
        let t = t0();
        let mut a = AckTracker::new(ms(25), 3);
        // Every other number: one range each, more than are remembered.
        for pn in (0..1000).step_by(2) {
            a.on_packet_received(pn, t, true, Ecn::NotEct);
        }
        assert!(a.is_duplicate(1), "forgotten numbers count as duplicates");
        assert!(!a.is_duplicate(997), "a recent gap is still open");
        assert!(a.is_duplicate(998));
        assert!(a.ranges().len() <= DEFAULT_MAX_RANGES);
    }

    #[test]
    fn initial_space_acks_at_once() {
        let t = t0();
        let mut a = AckTracker::new(Duration::ZERO, 3);
        a.on_packet_received(0, t, true, Ecn::NotEct);
        assert_eq!(a.ack_deadline(), Some(t));
    }
}
