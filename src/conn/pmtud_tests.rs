//! Path MTU discovery end to end over the test pair (RFC 9000 §14.3-14.4).

use std::time::Duration;

use crate::testing::Pair;

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn path0(c: &crate::Connection) -> crate::PathStats {
    c.path_stats().next().expect("path 0")
}

#[test]
fn datagrams_grow_to_what_the_path_carries() {
    let mut p = Pair::default_pair();
    p.mtu = Some(1400);
    p.handshake();
    let body = data(2 << 20);
    assert!(p.transfer(0, &body) == body);
    let s = path0(&p.s);
    assert!(s.mtu <= 1400 && s.mtu >= 1380, "server settles under the path MTU: {}", s.mtu);
    // The probes lost above the MTU are no congestion signal.
    assert!(s.lost >= 3, "probes above the MTU were lost: {}", s.lost);
    assert_eq!(s.lost_bytes, 0, "no loss reached the controller");
    assert_eq!(s.mtu_black_holes, 0);
}

#[test]
fn without_pmtud_the_size_stays() {
    let mut ccfg = super::tests::config(false);
    let mut scfg = super::tests::config(true);
    ccfg.enable_pmtud(false);
    scfg.enable_pmtud(false);
    let mut p = Pair::new(&ccfg, &scfg);
    p.handshake();
    let body = data(1 << 20);
    assert!(p.transfer(0, &body) == body);
    assert_eq!(path0(&p.s).mtu, 1350);
    assert_eq!(path0(&p.s).lost, 0);
}

#[test]
fn the_peer_max_udp_payload_size_caps_the_search() {
    let mut ccfg = super::tests::config(false);
    ccfg.set_max_recv_udp_payload_size(1400);
    let mut p = Pair::new(&ccfg, &super::tests::config(true));
    p.handshake();
    let body = data(1 << 20);
    assert!(p.transfer(0, &body) == body);
    assert_eq!(path0(&p.s).mtu, 1400);
    assert_eq!(path0(&p.s).lost, 0, "nothing above the peer's limit was tried");
}

#[test]
fn a_black_hole_mid_transfer_falls_back_and_the_data_arrives() {
    let mut p = Pair::default_pair();
    p.handshake();
    let body = data(4 << 20);
    let got = p.transfer_with(0, &body, |p, n| {
        if n > 1 << 20 && p.mtu.is_none() {
            p.mtu = Some(1300);
        }
    });
    assert!(got == body);
    assert_eq!(path0(&p.s).mtu_black_holes, 1);
    // Later transfers give the new search the round trips it takes (one
    // probe in flight; this link has no rate limit, so a transfer lasts a
    // few round trips).
    let small = data(256 << 10);
    for id in 1..40 {
        assert!(p.transfer(id * 4, &small) == small);
    }
    let s = path0(&p.s);
    assert_eq!(s.mtu_black_holes, 1);
    assert!(s.mtu <= 1300 && s.mtu >= 1280, "searched again under the new MTU: {}", s.mtu);
    assert!(p.clock.elapsed() < Duration::from_secs(30), "{:?}", p.clock.elapsed());
}
