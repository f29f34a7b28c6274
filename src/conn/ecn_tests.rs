//! ECN end to end over the test pair (RFC 9000 §13.4, RFC 9002 §7.1): marks,
//! counts, validation, and CE as a congestion signal.

use crate::testing::Pair;
use crate::EcnState;

use super::tests::config;

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 13 + i / 509) as u8).collect()
}

fn path0_ecn(c: &crate::Connection) -> (EcnState, u64) {
    let p = c.path_stats().next().expect("path 0");
    (p.ecn, p.ecn_ce)
}

#[test]
fn a_network_that_carries_the_bits_validates_ecn_both_ways() {
    let mut p = Pair::default_pair();
    p.handshake();
    let body = data(1 << 20);
    assert!(p.transfer(0, &body) == body);
    assert_eq!(path0_ecn(&p.s), (EcnState::Capable, 0), "the sender validated");
    assert_eq!(path0_ecn(&p.c).0, EcnState::Capable, "the receiver's ACKs went out marked and were counted");
}

#[test]
fn ecn_off_at_one_end_leaves_the_other_validating() {
    // A server without ECN never marks; it still counts what it receives,
    // so the client validates. The client's own ECN off: the server sees
    // only Not-ECT, its ACKs carry no counts, and it never marked anyway.
    let mut scfg = config(true);
    scfg.enable_ecn(false);
    let mut p = Pair::new(&config(false), &scfg);
    p.handshake();
    let body = data(256 << 10);
    assert!(p.transfer(0, &body) == body);
    assert_eq!(path0_ecn(&p.s).0, EcnState::Failed, "disabled: never marks");
    assert_eq!(path0_ecn(&p.c).0, EcnState::Capable, "the server still counts");
}

#[test]
fn bleached_marks_fail_validation_and_the_transfer_goes_on() {
    let mut p = Pair::default_pair();
    // A network that clears the ECN bits: every datagram arrives Not-ECT.
    p.bleach_ecn.push(p.s_addr);
    p.handshake();
    let body = data(512 << 10);
    assert!(p.transfer(0, &body) == body);
    assert_eq!(path0_ecn(&p.s).0, EcnState::Failed, "ACKs without counts for marked packets");
}

#[test]
fn ce_marks_reach_the_sender_and_shrink_its_window() {
    let run = |ce: f64| {
        let mut p = Pair::default_pair();
        p.handshake();
        p.ce = ce;
        let body = data(4 << 20);
        assert!(p.transfer(0, &body) == body);
        let s = p.s.path_stats().next().expect("path 0");
        (s.ecn, s.ecn_ce, s.cwnd, p.s.stats().lost)
    };
    let (state, ce, cwnd_marked, lost) = run(0.01);
    assert_eq!(state, EcnState::Capable, "CE is not a validation failure");
    assert!(ce > 10, "CE marks reported: {ce}");
    assert_eq!(lost, 0, "CE is congestion without loss");
    let (_, none, cwnd_clean, _) = run(0.0);
    assert_eq!(none, 0);
    assert!(cwnd_marked * 2 < cwnd_clean, "CUBIC reduced on CE: {cwnd_marked} vs {cwnd_clean}");
}
