use super::*;
use bytes::Bytes;

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 3) as u8).collect()
}

fn emit(s: &mut SendStream, max_len: usize) -> Option<(Chunk, Vec<u8>)> {
    let c = s.next_chunk(max_len, u64::MAX)?;
    let mut b = vec![0u8; c.len];
    assert!(s.copy_data(c.offset, &mut b));
    Some((c, b))
}

#[test]
fn sends_in_order_and_copies_across_segments() {
    let d = data(40_000);
    let mut s = SendStream::new(1 << 20, 1 << 20);
    // Several writes so the data spans segments.
    assert_eq!(s.write(&d[..10], false), Ok(10));
    assert_eq!(s.write(&d[10..20_000], false), Ok(19_990));
    assert_eq!(s.write(&d[20_000..], true), Ok(20_000));
    let mut out = Vec::new();
    while let Some((c, b)) = emit(&mut s, 1200) {
        assert_eq!(c.offset as usize, out.len());
        assert!(!c.is_retransmit);
        out.extend_from_slice(&b);
        if c.fin {
            break;
        }
    }
    assert_eq!(out, d);
    assert!(emit(&mut s, 1200).is_none());
}

#[test]
fn a_stream_of_a_few_bytes_holds_about_that_much() {
    let mut s = SendStream::new(1 << 20, 1 << 20);
    s.write(&data(12), false).unwrap();
    s.write(&data(50), false).unwrap();
    let held: usize = s.buf.segs.iter().map(|(_, v)| v.capacity()).sum();
    assert!(held <= 1024, "{held} bytes held for 62 written");
    // A stream that keeps writing small pieces still gets roomy segments.
    for _ in 0..1000 {
        s.write(&data(100), false).unwrap();
    }
    assert!(s.buf.segs.len() <= 12, "{} segments", s.buf.segs.len());
}

#[test]
fn lost_ranges_go_before_new_data() {
    let d = data(5000);
    let mut s = SendStream::new(1 << 20, 1 << 20);
    s.write(&d, false).unwrap();
    let c1 = s.next_chunk(1000, u64::MAX).unwrap();
    let c2 = s.next_chunk(1000, u64::MAX).unwrap();
    let c3 = s.next_chunk(1000, u64::MAX).unwrap();
    assert_eq!((c1.offset, c2.offset, c3.offset), (0, 1000, 2000));
    s.on_acked(0, 1000, false);
    assert!(s.on_lost(1000, 1000, false));
    // Retransmission first, split by max_len, flagged, no conn credit needed.
    let r = s.next_chunk(600, 0).unwrap();
    assert_eq!(r, Chunk { offset: 1000, len: 600, fin: false, is_retransmit: true });
    let r = s.next_chunk(600, 0).unwrap();
    assert_eq!(r, Chunk { offset: 1600, len: 400, fin: false, is_retransmit: true });
    let mut b = vec![0; 400];
    assert!(s.copy_data(1600, &mut b));
    assert_eq!(&b[..], &d[1600..2000]);
    // Then new data; with zero connection credit there is none.
    assert!(s.next_chunk(600, 0).is_none());
    let n = s.next_chunk(600, u64::MAX).unwrap();
    assert_eq!((n.offset, n.is_retransmit), (3000, false));
}

#[test]
fn loss_of_already_acked_bytes_is_ignored() {
    let mut s = SendStream::new(1 << 20, 1 << 20);
    s.write(&data(3000), false).unwrap();
    for _ in 0..3 {
        s.next_chunk(1000, u64::MAX).unwrap();
    }
    s.on_acked(1000, 1000, false); // out of order ack
    assert!(s.on_lost(0, 3000, false)); // spurious: whole range lost
    let a = s.next_chunk(5000, 0).unwrap();
    assert_eq!((a.offset, a.len), (0, 1000));
    let b = s.next_chunk(5000, 0).unwrap();
    assert_eq!((b.offset, b.len), (2000, 1000), "acked middle range skipped");
    assert!(!s.has_lost());
    // Late ack of a range pending retransmission cancels it.
    s.on_lost(0, 1000, false);
    s.on_acked(0, 1000, false);
    assert!(!s.has_lost());
    assert_eq!(s.acked_offset(), 2000);
}

#[test]
fn acks_free_buffer_and_complete() {
    let mut s = SendStream::new(1 << 20, 1 << 20);
    s.write(&data(50_000), true).unwrap();
    let mut chunks = Vec::new();
    while let Some(c) = s.next_chunk(1200, u64::MAX) {
        chunks.push(c);
    }
    assert!(chunks.last().unwrap().fin);
    assert_eq!(s.buffered(), 50_000);
    for c in chunks.iter().rev() {
        s.on_acked(c.offset, c.len, c.fin);
    }
    assert_eq!(s.acked_offset(), 50_000);
    assert_eq!(s.buffered(), 0);
    assert!(s.buf.segs.is_empty(), "acknowledged segments are freed");
    assert!(s.is_complete() && s.is_finished());
    assert!(s.reset(7).is_none(), "nothing to reset once all is acked");
}

#[test]
fn fin_only_and_lost_fin() {
    let mut s = SendStream::new(1 << 20, 1 << 20);
    s.write(b"hello", false).unwrap();
    let c = s.next_chunk(100, u64::MAX).unwrap();
    assert!(!c.fin);
    assert_eq!(s.write(b"", true), Ok(0));
    let f = s.next_chunk(100, u64::MAX).unwrap();
    assert_eq!(f, Chunk { offset: 5, len: 0, fin: true, is_retransmit: false });
    assert!(s.next_chunk(100, u64::MAX).is_none());
    s.on_acked(0, 5, false);
    assert!(s.on_lost(5, 0, true));
    let f2 = s.next_chunk(100, 0).unwrap();
    assert_eq!(f2, Chunk { offset: 5, len: 0, fin: true, is_retransmit: true });
    s.on_acked(5, 0, true);
    assert!(s.is_complete());
    // Writes after FIN fail.
    assert_eq!(s.write(b"x", false), Err(StreamError::FinalSize));
}

#[test]
fn lost_last_bytes_carry_fin_again() {
    let mut s = SendStream::new(1 << 20, 1 << 20);
    s.write(&data(100), true).unwrap();
    let c = s.next_chunk(1000, u64::MAX).unwrap();
    assert!(c.fin);
    s.on_lost(0, 100, true);
    let r = s.next_chunk(1000, 0).unwrap();
    assert_eq!(r, Chunk { offset: 0, len: 100, fin: true, is_retransmit: true });
    assert!(s.next_chunk(1000, u64::MAX).is_none(), "FIN not sent twice");
}

#[test]
fn bounded_buffer_partial_writes() {
    let d = data(10_000);
    let mut s = SendStream::new(1 << 20, 4000);
    assert_eq!(s.write(&d, true), Ok(4000), "partial write, FIN not applied");
    assert_eq!(s.capacity(), 0);
    assert_eq!(s.write(&d[4000..], true), Err(StreamError::Done));
    let c = s.next_chunk(1500, u64::MAX).unwrap();
    assert!(!c.fin);
    assert_eq!(s.write(&d[4000..], true), Err(StreamError::Done), "sent but unacked still counts");
    s.on_acked(0, 1500, false);
    assert_eq!(s.capacity(), 1500);
    assert_eq!(s.write(&d[4000..], true), Ok(1500));
    assert!(s.buffered() <= 4000);
}

#[test]
fn stream_flow_limit_and_blocked_once() {
    let mut s = SendStream::new(1000, 1 << 20);
    s.write(&data(3000), false).unwrap();
    assert_eq!(s.next_chunk(5000, u64::MAX).unwrap().len, 1000);
    assert!(s.next_chunk(5000, u64::MAX).is_none());
    assert!(s.is_flow_blocked());
    assert_eq!(s.take_blocked(), Some(1000));
    assert_eq!(s.take_blocked(), None);
    assert!(s.on_max_stream_data(2500));
    assert!(!s.on_max_stream_data(2000));
    assert_eq!(s.next_chunk(5000, 700).unwrap().len, 700, "conn credit bounds it");
    assert_eq!(s.next_chunk(5000, u64::MAX).unwrap().len, 800);
    assert_eq!(s.take_blocked(), Some(2500));
}

#[test]
fn reset_and_stop_sending() {
    let mut s = SendStream::new(1 << 20, 1 << 20);
    s.write(&data(3000), false).unwrap();
    s.next_chunk(1000, u64::MAX).unwrap();
    let r = s.on_stop_sending(42).unwrap();
    assert_eq!((r.code, r.final_size, r.acked), (42, 1000, false));
    assert_eq!(s.write(b"x", false), Err(StreamError::StopSending(42)));
    assert!(s.next_chunk(1000, u64::MAX).is_none());
    assert!(!s.on_lost(0, 1000, false), "no retransmission after reset");
    assert!(s.reset(1).is_none(), "reset only once");
    assert!(!s.is_finished());
    s.on_reset_acked();
    assert!(s.is_finished());
    assert_eq!(s.buffered(), 0);
}

#[test]
fn app_reset_blocks_writes() {
    let mut s = SendStream::new(1 << 20, 1 << 20);
    s.write(b"abc", false).unwrap();
    assert_eq!(s.reset(9).unwrap().final_size, 0);
    assert_eq!(s.write(b"x", false), Err(StreamError::InvalidState));
    let mut b = [0u8; 3];
    assert!(!s.copy_data(0, &mut b));
}

#[test]
fn sending_ahead_holds_the_skipped_bytes_for_later() {
    let d = data(10_000);
    let mut s = SendStream::new(1 << 20, 1 << 20);
    s.write(&d, true).unwrap();
    // Skip 3000 bytes: the chunk starts at 3000; the credit charged covers the gap.
    let c = s.peek_unsent(1000, u64::MAX, 3000).unwrap();
    assert_eq!((c.offset, c.len, c.fin, c.is_retransmit), (3000, 1000, false, false));
    assert_eq!(s.commit_chunk(&c), 4000);
    assert_eq!(s.send_offset(), 4000);
    assert_eq!(s.held_bytes(), 3000);
    assert_eq!(s.sendable_new(), 3000 + 6000);
    // Positions count only unsent bytes: 3500 is 500 into the data after 4000.
    let c2 = s.peek_unsent(1000, u64::MAX, 3500).unwrap();
    assert_eq!(c2.offset, 4500);
    // A copy never duplicates data that was not sent.
    let u = s.unacked_range(0, 10_000).unwrap();
    assert_eq!((u.offset, u.len), (3000, 1000));
    // Normal sending fills the hole first, charging nothing more.
    let mut got = Vec::new();
    for _ in 0..3 {
        let c = s.next_chunk(1000, 0).unwrap();
        assert!(!c.is_retransmit && !c.fin);
        assert_eq!(s.held_bytes() as usize, 3000 - 1000 * (got.len() + 1));
        got.push(c.offset);
    }
    assert_eq!(got, [0, 1000, 2000]);
    assert_eq!(s.held_bytes(), 0);
    // Then new data from 4000 on, ending with FIN.
    let mut last = None;
    while let Some(c) = s.next_chunk(1500, u64::MAX) {
        assert!(c.offset >= 4000);
        last = Some(c);
    }
    assert!(last.unwrap().fin);
    // Everything acknowledged out of order completes the stream.
    for (o, l) in [(3000, 1000), (0, 3000), (4000, 6000)] {
        s.on_acked(o, l, o + l as u64 == 10_000);
    }
    assert!(s.is_complete());
}

#[test]
fn sending_ahead_respects_the_limits() {
    let d = data(5000);
    let mut s = SendStream::new(4000, 1 << 20);
    s.write(&d, false).unwrap();
    // The peer's stream limit (4000) caps the chunk; beyond it there is none.
    assert_eq!(s.peek_unsent(2000, u64::MAX, 3000).unwrap().len, 1000);
    assert!(s.peek_unsent(2000, u64::MAX, 4000).is_none());
    // The connection credit must cover the skipped bytes as well.
    assert_eq!(s.peek_unsent(2000, 3500, 3000).unwrap().len, 500);
    assert!(s.peek_unsent(2000, 3000, 3000).is_none());
    // A held range is sendable even when the stream limit is reached.
    let c = s.peek_unsent(2000, u64::MAX, 1000).unwrap();
    s.commit_chunk(&c);
    assert_eq!(s.send_offset(), 3000);
    // Skip the held 1000 bytes: new data from 3000 up to the limit.
    let c = s.peek_unsent(2000, u64::MAX, 1000).unwrap();
    assert_eq!((c.offset, c.len), (3000, 1000));
    s.commit_chunk(&c);
    assert_eq!(s.send_offset(), 4000);
    assert!(!s.is_flow_blocked());
    assert_eq!(s.next_chunk(5000, 0).map(|c| (c.offset, c.len)), Some((0, 1000)));
    assert!(s.is_flow_blocked());
    // A lost held-then-sent range is retransmitted like any other.
    assert!(s.on_lost(0, 1000, false));
    assert!(s.next_chunk(5000, 0).unwrap().is_retransmit);
}

/// Random interleavings of sending (ahead or not), acknowledgement, loss and
/// credit updates: every byte sent is the right byte, flow credit is charged
/// exactly once per offset, copies only cover sent data, and the stream
/// completes with everything delivered.
#[test]
fn random_send_ahead_loss_and_acks_deliver_every_byte_once() {
    use rand::{Rng, SeedableRng};
    const N: usize = 60_000;
    let d = data(N);
    for seed in 0..40u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut s = SendStream::new(20_000, 1 << 20);
        assert_eq!(s.write(&d, true), Ok(N));
        let mut charged = 0u64;
        let mut sent = crate::ranges::RangeSet::new();
        let mut got = crate::ranges::RangeSet::new();
        let mut in_flight: Vec<Chunk> = Vec::new();
        let mut steps = 0;
        while !s.is_complete() {
            steps += 1;
            assert!(steps < 100_000, "seed {seed}: stuck");
            match rng.gen_range(0..10) {
                0..=4 => {
                    let max_len = rng.gen_range(1..1500);
                    let ahead = s.sendable_new().saturating_sub(1);
                    let skip = if !s.has_lost() && ahead > 0 && rng.gen_bool(0.5) {
                        rng.gen_range(0..=ahead)
                    } else {
                        0
                    };
                    let c = if skip > 0 {
                        s.peek_unsent(max_len, u64::MAX, skip)
                    } else {
                        s.peek_chunk(max_len, u64::MAX)
                    };
                    let Some(c) = c else { continue };
                    let mut b = vec![0u8; c.len];
                    assert!(s.copy_data(c.offset, &mut b));
                    assert_eq!(b, d[c.offset as usize..c.offset as usize + c.len], "seed {seed}");
                    charged += s.commit_chunk(&c);
                    assert_eq!(charged, s.send_offset(), "seed {seed}: credit charged once per offset");
                    if c.len > 0 {
                        sent.insert(c.offset..c.offset + c.len as u64);
                    }
                    in_flight.push(c);
                }
                5..=7 if !in_flight.is_empty() => {
                    let c = in_flight.swap_remove(rng.gen_range(0..in_flight.len()));
                    s.on_acked(c.offset, c.len, c.fin);
                    if c.len > 0 {
                        got.insert(c.offset..c.offset + c.len as u64);
                    }
                }
                8 if !in_flight.is_empty() => {
                    // Declared lost; half the time the packet still arrives
                    // (spurious loss) and its acknowledgement comes later.
                    let i = rng.gen_range(0..in_flight.len());
                    let c = in_flight[i];
                    s.on_lost(c.offset, c.len, c.fin);
                    if rng.gen_bool(0.5) {
                        in_flight.swap_remove(i);
                    }
                }
                _ => {
                    let more = s.max_data() + rng.gen_range(0..5000);
                    s.on_max_stream_data(more);
                }
            }
            // A copy never covers bytes that were never sent.
            if let Some(u) = s.unacked_range(rng.gen_range(0..N as u64), 4000) {
                let end = u.offset + u.len as u64;
                assert!(
                    (u.offset..end).all(|o| sent.contains(o)),
                    "seed {seed}: copy of unsent data {}..{end}",
                    u.offset
                );
            }
        }
        assert_eq!(got.iter().cloned().collect::<Vec<_>>(), vec![0..N as u64], "seed {seed}");
        assert_eq!(s.held_bytes(), 0);
    }
}

#[test]
fn shared_buffers_are_held_without_a_copy() {
    let d = Bytes::from(data(30_000));
    let mut s = SendStream::new(1 << 20, 4000);
    s.write(&d[..100], false).unwrap();
    let mut rest = d.slice(100..);
    assert_eq!(s.write_bytes(&rest, true), Ok(3900), "partial, FIN not applied");
    assert_eq!(s.buf.segs.back().map(|(_, v)| v.bytes().as_ptr()), Some(rest.as_ptr()), "no copy");
    rest = rest.slice(3900..);
    assert_eq!(s.write_bytes(&rest, true), Err(StreamError::Done));
    let mut out = Vec::new();
    while let Some((c, b)) = emit(&mut s, 1200) {
        assert_eq!(c.offset as usize, out.len());
        out.extend_from_slice(&b);
        s.on_acked(c.offset, c.len, c.fin);
        if !rest.is_empty() {
            let n = s.write_bytes(&rest, true).unwrap();
            rest = rest.slice(n..);
        }
        if c.fin {
            break;
        }
    }
    assert_eq!(out, &d[..]);
    assert!(s.is_complete());
    assert!(s.buf.segs.is_empty());
    assert_eq!(s.write_bytes(&Bytes::from_static(b"x"), false), Err(StreamError::FinalSize));
}
