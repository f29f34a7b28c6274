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

/// A pair whose server searched its path up over a 2 MB transfer and has
/// read a second request (stream 4); the datagram size it reached.
fn searched_with_a_request() -> (Pair, usize) {
    let mut p = Pair::default_pair();
    p.handshake();
    let body = data(2 << 20);
    assert!(p.transfer(0, &body) == body);
    let before = path0(&p.s).mtu;
    p.c.stream_send(4, b"get", true).unwrap();
    let mut req = [0u8; 16];
    while p.s.stream_recv(4, &mut req).is_err() {
        assert!(p.step());
    }
    (p, before)
}

/// A peer that goes silent for two PTOs at the end of a response (its
/// datagrams and ours all lost) makes the path fall back to 1200 bytes;
/// the size that worked goes out again at once, as one of the PTO's
/// probes, and the first ACK after the silence restores it (before, it
/// waited for that ACK to free the window, one round trip more, and a
/// peer that closed at once left the path at 1200 bytes).
#[test]
fn the_size_before_a_fallback_is_retried_with_the_pto_probes() {
    let (mut p, before) = searched_with_a_request();
    assert!(before > 1350, "searched up first: {before}");
    p.blackhole = vec![p.c_addr];
    let tail = data(100_000);
    assert_eq!(p.s.stream_send(4, &tail, true).unwrap(), tail.len());
    while path0(&p.s).mtu_black_holes == 0 {
        assert!(p.step());
    }
    assert_eq!(path0(&p.s).mtu, 1200);
    p.blackhole.clear();
    // One round trip (2 x 10 ms) and a little.
    p.run_for(Duration::from_millis(25));
    assert_eq!(path0(&p.s).mtu, before, "restored by the first ACK after the silence");
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        match p.c.stream_recv(4, &mut buf) {
            Ok((n, fin)) => {
                got.extend_from_slice(&buf[..n]);
                if fin {
                    break;
                }
            }
            Err(_) => assert!(p.step(), "stalled"),
        }
    }
    assert!(got == tail);
}

/// A peer that stays silent for two PTOs while only a small packet is
/// outstanding (aioquic acknowledged the 112-byte last packet of a 10 MB
/// response 195 ms late) is no black hole: the size stays.
#[test]
fn silent_ptos_over_a_small_last_packet_keep_the_size() {
    let (mut p, before) = searched_with_a_request();
    p.blackhole = vec![p.c_addr];
    p.s.stream_send(4, b"a small answer", true).unwrap();
    let sent = p.s.stats().sent;
    p.run_for(Duration::from_secs(1));
    // The answer and at least two PTOs' probes.
    assert!(p.s.stats().sent >= sent + 3, "{} sent", p.s.stats().sent - sent);
    let s = path0(&p.s);
    assert_eq!((s.mtu, s.mtu_black_holes), (before, 0), "the size stayed");
}
