//! DATAGRAM frames (RFC 9221) over the test pair.

use std::time::Duration;

use super::tests::{config, mp_config};
use super::DgramError;
use crate::error::ErrorCode;
use crate::testing::Pair;
use crate::Config;

fn with_dgram(mut c: Config, recv: usize, send: usize) -> Config {
    c.enable_dgram(true, recv, send);
    c
}

fn dgram_pair(recv: usize, send: usize) -> Pair {
    let mut p = Pair::new(&with_dgram(config(false), recv, send), &with_dgram(config(true), recv, send));
    p.handshake();
    p.run_for(Duration::from_millis(50));
    p
}

fn drain(c: &mut crate::Connection) -> Vec<Vec<u8>> {
    std::iter::from_fn(|| c.dgram_recv_vec().ok()).collect()
}

#[test]
fn datagrams_go_both_ways_in_order() {
    let mut p = dgram_pair(16, 16);
    for d in [&b"one"[..], b"two", b""] {
        p.c.dgram_send(d).unwrap();
    }
    p.s.dgram_send_vec(b"back".to_vec()).unwrap();
    assert_eq!(p.c.dgram_send_queue_len(), 3);
    assert_eq!(p.c.dgram_send_queue_byte_size(), 6);
    p.run_for(Duration::from_millis(100));
    assert_eq!(p.c.dgram_send_queue_len(), 0);
    assert_eq!(p.s.dgram_recv_queue_len(), 3);
    assert_eq!(p.s.dgram_recv_queue_byte_size(), 6);
    assert_eq!(p.s.dgram_recv_front_len(), Some(3));
    let mut peek = [0u8; 8];
    assert_eq!(p.s.dgram_recv_peek(&mut peek, 2), Ok(2));
    assert_eq!(&peek[..2], b"on");
    // Too small a buffer leaves the datagram queued.
    assert_eq!(p.s.dgram_recv(&mut [0u8; 2]), Err(DgramError::BufferTooShort));
    let mut buf = [0u8; 16];
    assert_eq!(p.s.dgram_recv(&mut buf), Ok(3));
    assert_eq!(&buf[..3], b"one");
    assert_eq!(drain(&mut p.s), vec![b"two".to_vec(), Vec::new()]);
    assert_eq!(p.s.dgram_recv(&mut buf), Err(DgramError::Done));
    assert_eq!(drain(&mut p.c), vec![b"back".to_vec()]);
    assert_eq!((p.c.stats().dgram_sent, p.s.stats().dgram_recv), (3, 3));
    assert_eq!((p.s.stats().dgram_sent, p.c.stats().dgram_recv), (1, 1));
}

#[test]
fn full_queues_refuse_sends_and_push_out_the_oldest_received() {
    let mut p = Pair::new(&with_dgram(config(false), 16, 5), &with_dgram(config(true), 2, 5));
    p.handshake();
    for i in 0..5u8 {
        p.c.dgram_send(&[i; 10]).unwrap();
    }
    assert!(p.c.is_dgram_send_queue_full());
    assert_eq!(p.c.dgram_send(b"six"), Err(DgramError::Done));
    p.run_for(Duration::from_millis(100));
    assert!(!p.c.is_dgram_send_queue_full());
    assert!(p.s.is_dgram_recv_queue_full());
    // The receive queue holds two: the three oldest were pushed out.
    assert_eq!(drain(&mut p.s), vec![vec![3u8; 10], vec![4u8; 10]]);
    let st = p.s.stats();
    assert_eq!((st.dgram_recv, st.dgram_dropped), (5, 3));
}

#[test]
fn purge_drops_queued_datagrams_the_application_picks() {
    let mut p = dgram_pair(16, 16);
    for d in [&b"keep"[..], b"stale", b"keep2"] {
        p.c.dgram_send(d).unwrap();
    }
    p.c.dgram_purge_outgoing(|d| d.starts_with(b"stale"));
    assert_eq!((p.c.dgram_send_queue_len(), p.c.dgram_send_queue_byte_size()), (2, 9));
    p.run_for(Duration::from_millis(100));
    assert_eq!(drain(&mut p.s), vec![b"keep".to_vec(), b"keep2".to_vec()]);
}

#[test]
fn a_peer_without_datagrams_gets_none() {
    // The server does not advertise max_datagram_frame_size.
    let mut p = Pair::new(&with_dgram(config(false), 4, 4), &config(true));
    assert_eq!(p.c.dgram_send(b"early"), Err(DgramError::InvalidState), "peer parameters unknown");
    p.handshake();
    assert_eq!(p.c.dgram_max_writable_len(), None);
    assert_eq!(p.c.dgram_send(b"x"), Err(DgramError::InvalidState));
    // Nor may an endpoint that did not enable them send any.
    assert_eq!(p.s.dgram_send(b"x"), Err(DgramError::InvalidState));
    assert_eq!(p.s.dgram_max_writable_len(), None);
}

#[test]
fn oversized_datagrams_are_refused_and_the_largest_fits_a_packet() {
    let mut p = dgram_pair(4, 4);
    let max = p.c.dgram_max_writable_len().unwrap();
    // 1350-byte datagrams less header, tag and frame overhead.
    assert!((1280..1340).contains(&max), "{max}");
    assert_eq!(p.c.dgram_send(&vec![1; max + 1]), Err(DgramError::BufferTooShort));
    p.c.dgram_send(&vec![2; max]).unwrap();
    p.run_for(Duration::from_millis(100));
    assert_eq!(drain(&mut p.s), vec![vec![2; max]]);
}

#[test]
fn a_lost_datagram_is_not_sent_again() {
    let mut p = dgram_pair(16, 16);
    p.c.dgram_send(b"lost").unwrap();
    // Everything on the wire in this step is lost, the datagram with it.
    p.loss = 1.0;
    p.step();
    p.loss = 0.0;
    assert_eq!(p.c.stats().dgram_sent, 1);
    p.c.dgram_send(b"second").unwrap();
    p.run_for(Duration::from_secs(2));
    assert!(p.c.stats().lost >= 1, "the packet was declared lost");
    assert_eq!(drain(&mut p.s), vec![b"second".to_vec()]);
    assert_eq!(p.c.stats().dgram_sent, 2);
}

#[test]
fn datagrams_are_congestion_controlled() {
    let mut p = dgram_pair(200, 200);
    for i in 0..150u8 {
        p.c.dgram_send(&[i; 1000]).unwrap();
    }
    // The first flight fits the initial window, not 150 KB.
    p.step();
    let left = p.c.dgram_send_queue_len();
    assert!(left > 100, "{left} left after the first flight");
    p.run_for(Duration::from_secs(2));
    let got = drain(&mut p.s);
    assert_eq!(got.len(), 150);
    assert!(got.iter().enumerate().all(|(i, d)| d == &vec![i as u8; 1000]));
}

#[test]
fn datagrams_go_ahead_of_stream_data() {
    let mut p = dgram_pair(64, 64);
    let data = vec![7u8; 2 << 20];
    let mut sent = 0;
    let got = p.transfer_with(0, &data, |p, n| {
        // Mid-transfer, a datagram every step while stream data fills the window.
        if n > 100_000 && sent < 20 && p.s.dgram_send(&[sent as u8; 500]).is_ok() {
            sent += 1;
        }
    });
    assert!(got == data);
    p.run_for(Duration::from_millis(200));
    assert!(sent >= 5, "{sent} datagrams sent during the transfer");
    let got = drain(&mut p.c);
    assert_eq!(got.len(), sent);
    assert!(got.iter().enumerate().all(|(i, d)| d == &vec![i as u8; 500]));
}

fn error_of(s: &crate::Connection) -> Option<(u64, Option<u64>)> {
    s.local_error().map(|e| (e.code, e.frame_type))
}

fn datagram_frame(len: usize) -> Vec<u8> {
    let data = vec![9u8; len];
    let mut b = vec![0u8; len + 16];
    let mut w = crate::codec::Writer::new(&mut b);
    crate::frame::Frame::Datagram { data: &data }.encode(&mut w).unwrap();
    let n = w.pos();
    b.truncate(n);
    b
}

#[test]
fn an_unsolicited_datagram_is_a_protocol_violation() {
    let mut p = Pair::default_pair();
    p.handshake();
    p.c.test_frames.push(datagram_frame(5));
    p.run_for(Duration::from_millis(200));
    let want = (ErrorCode::PROTOCOL_VIOLATION.0, Some(crate::frame::ty::DATAGRAM_LEN));
    assert_eq!(error_of(&p.s), Some(want));
}

#[test]
fn a_datagram_above_our_limit_is_a_protocol_violation() {
    let mut p = dgram_pair(4, 4);
    // As if we had advertised 100 bytes.
    p.s.local_params.max_datagram_frame_size = Some(100);
    p.c.test_frames.push(datagram_frame(98));
    p.run_for(Duration::from_millis(200));
    assert_eq!(error_of(&p.s), None, "type and data take 99 of the 100 bytes");
    p.c.test_frames.push(datagram_frame(100));
    p.run_for(Duration::from_millis(200));
    let want = (ErrorCode::PROTOCOL_VIOLATION.0, Some(crate::frame::ty::DATAGRAM_LEN));
    assert_eq!(error_of(&p.s), Some(want));
}

fn sent_bytes_per_path(c: &crate::Connection) -> Vec<u64> {
    c.path_stats().map(|s| s.sent_bytes).collect()
}

#[test]
fn datagrams_go_where_the_scheduler_sends_on_two_paths() {
    let mut ccfg = with_dgram(mp_config(false), 64, 64);
    ccfg.set_scheduler("rr").unwrap();
    let mut p = Pair::two_paths(&ccfg, &with_dgram(mp_config(true), 64, 64));
    let before = sent_bytes_per_path(&p.c);
    for i in 0..40u8 {
        p.c.dgram_send(&[i; 1000]).unwrap();
        p.run_for(Duration::from_millis(5));
    }
    p.run_for(Duration::from_millis(300));
    let got = drain(&mut p.s);
    assert_eq!(got.len(), 40);
    assert!(got.iter().enumerate().all(|(i, d)| d == &vec![i as u8; 1000]));
    // Round-robin: each path carried a share of the 40 KB (the ACKs and
    // control frames it also sent are a few KB at most).
    let after = sent_bytes_per_path(&p.c);
    assert_eq!(after.len(), 2);
    for (pi, (b, a)) in before.iter().zip(&after).enumerate() {
        assert!(a - b > 10_000, "path {pi}: {} bytes", a - b);
    }
}
