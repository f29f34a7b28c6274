use super::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 + i / 256) as u8).collect()
}

fn read_all(r: &mut RecvStream, chunk: usize) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = vec![0u8; chunk];
    loop {
        match r.read(&mut buf) {
            Ok((n, fin)) => {
                out.extend_from_slice(&buf[..n]);
                if fin {
                    return (out, true);
                }
            }
            Err(StreamError::Done) => return (out, false),
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
}

#[test]
fn in_order_delivery_and_fin() {
    let d = data(200_000);
    let mut r = RecvStream::new(1 << 20, 1 << 20);
    for (i, c) in d.chunks(1200).enumerate() {
        let off = (i * 1200) as u64;
        let fin = off as usize + c.len() == d.len();
        let delta = r.on_data(off, c, fin).unwrap();
        assert_eq!(delta, FlowDelta { received: c.len() as u64, released: 0 });
        assert_eq!(r.out_of_order_bytes(), 0);
    }
    // In-order data is packed into few large segments (after the first
    // seven, which double from 1 KiB up to SEGMENT).
    assert!(r.segs.len() <= 200_000 / SEGMENT + 1 + 7, "{} segments", r.segs.len());
    let (out, fin) = read_all(&mut r, 5000);
    assert!(fin);
    assert_eq!(out, d);
    assert!(r.is_finished());
    assert_eq!(r.read(&mut [0u8; 10]), Err(StreamError::Done));
}

#[test]
fn a_stream_of_a_few_bytes_holds_about_that_much() {
    // HTTP/3 control and request streams carry tens of bytes: a server with
    // thousands of them must not hold a bulk-sized segment for each.
    let mut r = RecvStream::new(1 << 20, 1 << 20);
    r.on_data(0, &data(60), false).unwrap();
    r.on_data(60, &data(40), false).unwrap();
    let held: usize = r.segs.values().map(Vec::capacity).sum();
    assert!(held <= 1024, "{held} bytes held for 100 received");
    let mut buf = [0u8; 100];
    assert_eq!(r.read(&mut buf), Ok((100, false)));
    assert!(r.spare.as_ref().is_none_or(|v| v.capacity() <= 1024));
}

#[test]
fn shuffled_duplicated_overlapping_segments_property() {
    for seed in 0..60u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let len = rng.gen_range(1..20_000);
        let d = data(len);
        let mut frames = Vec::new();
        let mut off = 0;
        while off < len {
            let n = rng.gen_range(1..=1500).min(len - off);
            frames.push((off, n));
            off += n;
        }
        // Overlapping re-packetisations and exact duplicates.
        for _ in 0..rng.gen_range(0..30) {
            let a = rng.gen_range(0..len);
            let b = rng.gen_range(a + 1..=len.min(a + 3000));
            frames.push((a, b - a));
        }
        let dups: Vec<_> = frames.iter().take(5).cloned().collect();
        frames.extend(dups);
        frames.shuffle(&mut rng);
        let mut r = RecvStream::new(1 << 20, 1 << 20);
        let mut out = Vec::new();
        let mut buf = vec![0u8; rng.gen_range(1..4000)];
        let mut received_total = 0;
        let mut fin_seen = false;
        for &(o, n) in &frames {
            let fin = o + n == len;
            let delta = r.on_data(o as u64, &d[o..o + n], fin).unwrap();
            received_total += delta.received;
            // Invariant: buffered = contiguous part + out-of-order part.
            assert!(r.out_of_order_bytes() <= r.buffered());
            // Interleave reads.
            if rng.gen_bool(0.3) {
                loop {
                    match r.read(&mut buf) {
                        Ok((k, fin)) => {
                            out.extend_from_slice(&buf[..k]);
                            fin_seen |= fin;
                            if fin {
                                break;
                            }
                        }
                        Err(StreamError::Done) => break,
                        Err(e) => panic!("{e:?}"),
                    }
                }
            }
        }
        assert_eq!(received_total, len as u64, "seed {seed}");
        if !fin_seen {
            let (rest, fin) = read_all(&mut r, 777);
            out.extend(rest);
            assert!(fin, "seed {seed}");
        }
        assert_eq!(out, d, "seed {seed}");
        assert_eq!(r.buffered(), 0);
        assert_eq!(r.out_of_order_bytes(), 0);
    }
}

#[test]
fn overlap_keeps_first_copy() {
    let mut r = RecvStream::new(1000, 1000);
    r.on_data(2, b"CDEF", false).unwrap();
    // Overlapping frame with different (bogus) bytes in the overlap.
    r.on_data(0, b"ABxxxxGH", false).unwrap();
    let mut b = [0u8; 16];
    assert_eq!(r.read(&mut b), Ok((8, false)));
    assert_eq!(&b[..8], b"ABCDEFGH");
}

#[test]
fn out_of_order_accounting() {
    let mut r = RecvStream::new(100_000, 100_000);
    r.on_data(1000, &[1; 500], false).unwrap();
    assert_eq!(r.out_of_order_bytes(), 500);
    r.on_data(3000, &[1; 100], false).unwrap();
    assert_eq!(r.out_of_order_bytes(), 600);
    assert!(!r.is_readable());
    r.on_data(0, &[1; 400], false).unwrap();
    assert_eq!(r.out_of_order_bytes(), 600);
    assert!(r.is_readable());
    r.on_data(400, &[1; 600], false).unwrap(); // fills 400..1000, joins 1000..1500
    assert_eq!(r.out_of_order_bytes(), 100);
    let mut b = vec![0u8; 700];
    assert_eq!(r.read(&mut b), Ok((700, false)));
    assert_eq!(r.out_of_order_bytes(), 100);
    assert_eq!(r.buffered(), 900);
    r.on_data(1500, &[1; 1500], false).unwrap();
    assert_eq!(r.out_of_order_bytes(), 0);
    assert_eq!(r.buffered(), 2400);
}

#[test]
fn final_size_rules() {
    let e = |r: Result<FlowDelta, TransportError>| r.unwrap_err().code;
    let mut r = RecvStream::new(10_000, 10_000);
    r.on_data(0, &[0; 100], true).unwrap();
    assert_eq!(r.final_size(), Some(100));
    assert_eq!(e(r.on_data(100, &[0; 1], false)), ErrorCode::FINAL_SIZE_ERROR);
    assert_eq!(e(r.on_data(50, &[0; 10], true)), ErrorCode::FINAL_SIZE_ERROR);
    assert_eq!(e(r.on_reset(1, 99)), ErrorCode::FINAL_SIZE_ERROR);
    // Same final size again is fine (retransmission).
    r.on_data(90, &[0; 10], true).unwrap();
    r.on_data(0, &[0; 100], false).unwrap();

    let mut r = RecvStream::new(10_000, 10_000);
    r.on_data(0, &[0; 500], false).unwrap();
    assert_eq!(e(r.on_data(0, &[0; 400], true)), ErrorCode::FINAL_SIZE_ERROR, "FIN below received data");
    assert_eq!(e(r.on_reset(1, 499)), ErrorCode::FINAL_SIZE_ERROR);
    let d = r.on_reset(7, 800).unwrap();
    assert_eq!(d, FlowDelta { received: 300, released: 800 });
    assert_eq!(e(r.on_reset(7, 801)), ErrorCode::FINAL_SIZE_ERROR);
    assert_eq!(e(r.on_data(800, &[0; 1], false)), ErrorCode::FINAL_SIZE_ERROR);
}

#[test]
fn flow_control_violation() {
    let mut r = RecvStream::new(1000, 1000);
    r.on_data(0, &[0; 1000], false).unwrap();
    let err = r.on_data(1000, &[0; 1], false).unwrap_err();
    assert_eq!(err.code, ErrorCode::FLOW_CONTROL_ERROR);
    assert_eq!(err.frame_type, Some(0x08));
    let err = r.on_reset(0, 1001).unwrap_err();
    assert_eq!(err.code, ErrorCode::FLOW_CONTROL_ERROR);
    let err = r.on_data(StreamId::MAX, &[0; 2], false).unwrap_err();
    assert_eq!(err.code, ErrorCode::FRAME_ENCODING_ERROR);
}

#[test]
fn reset_surfaces_code_once_and_discards() {
    let mut r = RecvStream::new(10_000, 10_000);
    r.on_data(0, &[5; 300], false).unwrap();
    let mut b = [0u8; 100];
    r.read(&mut b).unwrap();
    let d = r.on_reset(77, 1000).unwrap();
    assert_eq!(d, FlowDelta { received: 700, released: 900 });
    assert!(r.is_readable());
    assert_eq!(r.read(&mut b), Err(StreamError::Reset(77)));
    assert!(r.is_finished() && !r.is_readable());
    // Late data below final size is accepted and released.
    assert_eq!(r.on_data(300, &[0; 10], false).unwrap().received, 0);
    // Duplicate reset is harmless.
    assert_eq!(r.on_reset(77, 1000).unwrap().received, 0);
}

#[test]
fn stop_sending_discards_and_releases() {
    let mut r = RecvStream::new(10_000, 10_000);
    r.on_data(0, &[5; 300], false).unwrap();
    r.on_data(500, &[5; 100], false).unwrap();
    assert_eq!(r.stop_sending(3), Some(600));
    assert_eq!(r.stop_sending(3), None);
    assert_eq!(r.buffered(), 0);
    assert!(!r.is_readable());
    assert_eq!(r.read(&mut [0u8; 4]), Err(StreamError::InvalidState));
    let d = r.on_data(600, &[5; 100], false).unwrap();
    assert_eq!(d, FlowDelta { received: 100, released: 100 });
    assert!(!r.is_finished());
    let d = r.on_reset(3, 900).unwrap();
    assert_eq!(d, FlowDelta { received: 200, released: 200 });
    assert!(r.is_finished());
}

#[test]
fn empty_stream_fin() {
    let mut r = RecvStream::new(100, 100);
    r.on_data(0, &[], true).unwrap();
    assert!(r.is_readable());
    assert_eq!(r.read(&mut [0u8; 4]), Ok((0, true)));
    assert!(r.is_finished());
}

use super::super::StreamId;

#[test]
fn in_order_data_after_a_hole_is_packed_again() {
    let d = data(400_000);
    let mut r = RecvStream::new(1 << 20, 1 << 20);
    let chunks: Vec<(usize, &[u8])> = d.chunks(1200).enumerate().map(|(i, c)| (i * 1200, c)).collect();
    // Packet 10 lost and retransmitted after 50 more packets.
    for &(o, c) in chunks.iter().take(61) {
        if o != 12_000 {
            r.on_data(o as u64, c, false).unwrap();
        }
    }
    assert_eq!(r.out_of_order_bytes(), 50 * 1200);
    r.on_data(12_000, chunks[10].1, false).unwrap();
    assert_eq!(r.out_of_order_bytes(), 0);
    let before = r.segs.len();
    for &(o, c) in chunks.iter().skip(61) {
        r.on_data(o as u64, c, false).unwrap();
    }
    let added = r.segs.len() - before;
    assert!(added <= (400_000 - 61 * 1200) / SEGMENT + 1, "{added} new segments");
    let (out, _) = read_all(&mut r, 10_000);
    assert_eq!(out, d);
}

#[test]
fn two_paths_reordering_every_other_packet_hold_about_what_arrived() {
    // Packets 1, 0, 3, 2, ...: each even packet fills the gap up to an
    // island. It must not take a bulk-sized segment of its own.
    let d = data(240_000);
    let mut r = RecvStream::new(1 << 20, 1 << 20);
    let chunks: Vec<(usize, &[u8])> = d.chunks(1200).enumerate().map(|(i, c)| (i * 1200, c)).collect();
    for pair in chunks.chunks(2) {
        for &(o, c) in pair.iter().rev() {
            r.on_data(o as u64, c, false).unwrap();
        }
    }
    let held: usize = r.segs.values().map(Vec::capacity).sum();
    assert!(held <= d.len() + 2 * SEGMENT, "{held} bytes held for {} received", d.len());
    let (out, _) = read_all(&mut r, 10_000);
    assert_eq!(out, d);
}

#[test]
fn peek_and_consume_deliver_what_read_would() {
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let len = rng.gen_range(1..200_000);
        let d = data(len);
        let mut frames: Vec<(usize, usize)> =
            (0..len).step_by(1300).map(|o| (o, 1300.min(len - o))).collect();
        // Reorder a little, as two paths do.
        for i in (1..frames.len()).step_by(3) {
            if rng.gen_bool(0.5) {
                frames.swap(i - 1, i);
            }
        }
        let mut r = RecvStream::new(1 << 20, 1 << 20);
        let mut out = Vec::new();
        let mut fin_seen = false;
        for &(o, n) in &frames {
            r.on_data(o as u64, &d[o..o + n], o + n == len).unwrap();
            while let Ok((head, fin)) = r.peek() {
                // A peek changes nothing: the same bytes again.
                let shown = head.to_vec();
                assert_eq!(r.peek().unwrap().0, &shown[..]);
                let take = if fin { shown.len() } else { rng.gen_range(0..=shown.len()) };
                let consumed = r.window().consumed();
                out.extend_from_slice(&shown[..take]);
                match r.consume(take) {
                    Ok((k, f)) => {
                        assert_eq!(k, take, "seed {seed}");
                        assert_eq!(f, fin && take == shown.len(), "seed {seed}");
                        assert_eq!(r.window().consumed(), consumed + take as u64);
                        fin_seen |= f;
                    }
                    Err(StreamError::Done) => assert_eq!(take, 0),
                    Err(e) => panic!("seed {seed}: {e:?}"),
                }
                if take == 0 {
                    break;
                }
            }
        }
        while !fin_seen {
            let (head, fin) = r.peek().unwrap();
            let n = head.len();
            out.extend_from_slice(head);
            assert_eq!(r.consume(n), Ok((n, fin)));
            fin_seen = fin;
        }
        assert_eq!(out, d, "seed {seed}");
        assert_eq!(r.buffered(), 0);
        assert!(r.is_finished());
        assert_eq!(r.peek(), Err(StreamError::Done));
    }
}

#[test]
fn peek_shows_a_lone_fin_and_a_reset() {
    let mut r = RecvStream::new(1000, 1000);
    assert_eq!(r.peek(), Err(StreamError::Done));
    r.on_data(0, b"abc", false).unwrap();
    r.on_data(3, b"", true).unwrap();
    assert_eq!(r.peek(), Ok((&b"abc"[..], true)));
    assert_eq!(r.consume(2), Ok((2, false)));
    assert_eq!(r.peek(), Ok((&b"c"[..], true)));
    assert_eq!(r.consume(100), Ok((1, true)), "consume stops at what is held");
    assert!(r.is_finished());

    let mut r = RecvStream::new(1000, 1000);
    r.on_data(0, b"abc", false).unwrap();
    assert_eq!(r.consume(3), Ok((3, false)));
    r.on_data(3, b"", true).unwrap();
    assert_eq!(r.peek(), Ok((&b""[..], true)), "FIN with no data left");
    assert_eq!(r.consume(0), Ok((0, true)));

    let mut r = RecvStream::new(1000, 1000);
    r.on_data(0, b"abc", false).unwrap();
    r.on_reset(9, 10).unwrap();
    assert_eq!(r.peek(), Err(StreamError::Reset(9)));
    assert!(r.is_finished(), "the application saw the reset");
}
