//! Tests of the stream map: limits, frame error rules, scheduling, flow
//! control across a client/server pair.

use super::*;
use crate::error::ErrorCode;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

/// A base instant for tests; only differences between instants matter.
#[allow(clippy::disallowed_methods)]
fn epoch() -> Instant {
    Instant::now()
}

fn cfg() -> StreamsConfig {
    StreamsConfig {
        initial_max_data: 10_000,
        max_data_window: 80_000,
        initial_max_stream_data_bidi_local: 4000,
        initial_max_stream_data_bidi_remote: 4000,
        initial_max_stream_data_uni: 4000,
        max_stream_window: 32_000,
        initial_max_streams_bidi: 4,
        initial_max_streams_uni: 2,
        send_buffer_cap: 1 << 20,
        send_unsent_cap: usize::MAX,
    }
}

fn peer_of(c: &StreamsConfig) -> PeerLimits {
    PeerLimits {
        initial_max_data: c.initial_max_data,
        initial_max_stream_data_bidi_local: c.initial_max_stream_data_bidi_local,
        initial_max_stream_data_bidi_remote: c.initial_max_stream_data_bidi_remote,
        initial_max_stream_data_uni: c.initial_max_stream_data_uni,
        initial_max_streams_bidi: c.initial_max_streams_bidi,
        initial_max_streams_uni: c.initial_max_streams_uni,
    }
}

fn pair(c: StreamsConfig, s: StreamsConfig) -> (Streams, Streams) {
    let mut client = Streams::new(Side::Client, c.clone());
    let mut server = Streams::new(Side::Server, s.clone());
    client.set_peer_limits(&peer_of(&s)).unwrap();
    server.set_peer_limits(&peer_of(&c)).unwrap();
    (client, server)
}

/// One "packet" of STREAM frames: (id, chunk, bytes).
type Frames = Vec<(StreamId, Chunk, Vec<u8>)>;

fn emit(s: &mut Streams, budget: usize) -> Frames {
    let mut out = Vec::new();
    let mut left = budget;
    while left > 0 {
        let Some((id, _off)) = s.next_to_send() else {
            break;
        };
        let Some(c) = s.send_chunk(id, left) else {
            break;
        };
        let mut b = vec![0; c.len];
        assert!(s.copy_data(id, c.offset, &mut b));
        left -= c.len;
        out.push((id, c, b));
        if c.len == 0 {
            left = left.saturating_sub(1);
        }
    }
    out
}

fn deliver(to: &mut Streams, frames: &Frames) {
    for (id, c, b) in frames {
        to.on_stream_frame(*id, c.offset, b, c.fin).unwrap();
    }
}

fn ack(from: &mut Streams, frames: &Frames) {
    for (id, c, _) in frames {
        from.on_stream_acked(*id, c.offset, c.len, c.fin);
    }
}

/// Exchange control frames both ways (all delivered).
fn control(a: &mut Streams, b: &mut Streams, now: Instant) {
    control_one(a, b, now);
    control_one(b, a, now);
}

fn control_one(x: &mut Streams, y: &mut Streams, now: Instant) {
    let rtt = Duration::from_millis(100);
    {
        while let Some(f) = x.next_control(now, rtt) {
            match f {
                ControlFrame::MaxData(m) => y.on_max_data(m).unwrap(),
                ControlFrame::MaxStreamData { id, max } => y.on_max_stream_data(id, max).unwrap(),
                ControlFrame::MaxStreams { bidi, max } => y.on_max_streams(bidi, max).unwrap(),
                ControlFrame::DataBlocked(l) => y.on_data_blocked(l).unwrap(),
                ControlFrame::StreamDataBlocked { id, limit } => y.on_stream_data_blocked(id, limit).unwrap(),
                ControlFrame::StreamsBlocked { bidi, limit } => y.on_streams_blocked(bidi, limit).unwrap(),
                ControlFrame::ResetStream { id, code, final_size } => {
                    y.on_reset_stream(id, code, final_size).unwrap();
                    x.on_control_acked(f);
                }
                ControlFrame::StopSending { id, code } => y.on_stop_sending(id, code).unwrap(),
            }
        }
    }
}

fn drain(s: &mut Streams, id: StreamId) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 3000];
    loop {
        match s.stream_recv(id, &mut buf) {
            Ok((n, fin)) => {
                out.extend_from_slice(&buf[..n]);
                if fin {
                    return (out, true);
                }
            }
            Err(StreamError::Done) => return (out, false),
            Err(e) => panic!("{e:?}"),
        }
    }
}

#[test]
fn transfer_with_loss_reordering_and_flow_control() {
    let (mut c, mut s) = pair(cfg(), cfg());
    let mut rng = StdRng::seed_from_u64(7);
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let id = StreamId(0);
    let mut written = 0;
    let mut got = Vec::new();
    let mut fin = false;
    let now = epoch();
    for round in 0..2000 {
        if written < data.len() {
            written += c.stream_send(id, &data[written..], true).unwrap_or(0);
        }
        let mut packets: Vec<Frames> = (0..4).map(|_| emit(&mut c, 1200)).filter(|p| !p.is_empty()).collect();
        packets.shuffle(&mut rng);
        for p in packets {
            if rng.gen_bool(0.2) {
                for (id, ch, _) in &p {
                    c.on_stream_lost(*id, ch.offset, ch.len, ch.fin);
                }
            } else {
                deliver(&mut s, &p);
                ack(&mut c, &p);
            }
        }
        assert!(s.out_of_order_bytes() <= 16_000);
        if s.is_readable(id) {
            let (b, f) = drain(&mut s, id);
            got.extend(b);
            fin |= f;
        }
        control(&mut c, &mut s, now + Duration::from_millis(round * 10));
        if fin {
            break;
        }
    }
    assert!(fin);
    assert_eq!(got, data);
    let send = c.get(id).unwrap().send.as_ref().unwrap();
    assert!(send.is_complete(), "every byte and the FIN acknowledged");
    assert_eq!(send.buffered(), 0);
    // The stream lives on until the server's sending half ends too.
    s.stream_send(id, b"", true).unwrap();
    let p = emit(&mut s, 100);
    deliver(&mut c, &p);
    ack(&mut s, &p);
    assert_eq!(drain(&mut c, id), (vec![], true));
    assert!(c.is_empty() && s.is_empty(), "both sides collected the stream");
}

#[test]
fn local_stream_limit_and_streams_blocked() {
    let (mut c, _s) = pair(cfg(), cfg());
    let now = epoch();
    for i in 0..4 {
        assert_eq!(c.stream_send(StreamId(i * 4), b"x", false), Ok(1));
    }
    assert_eq!(c.stream_send(StreamId(16), b"x", false), Err(StreamError::StreamLimit));
    assert_eq!(c.stream_send(StreamId(20), b"x", false), Err(StreamError::StreamLimit));
    let mut ctrl = Vec::new();
    while let Some(f) = c.next_control(now, Duration::from_millis(10)) {
        ctrl.push(f);
    }
    assert_eq!(ctrl, vec![ControlFrame::StreamsBlocked { bidi: true, limit: 4 }], "once per limit");
    c.on_max_streams(true, 5).unwrap();
    assert_eq!(c.stream_send(StreamId(16), b"x", false), Ok(1));
    assert_eq!(c.peer_streams_left(StreamDir::Bidi), 0);
    assert_eq!(c.stream_send(StreamId(2), b"u", false), Ok(1));
    assert_eq!(c.next_stream_id(StreamDir::Uni), StreamId(6));
    // Not ours to send on / receive from.
    assert_eq!(c.stream_send(StreamId(3), b"x", false), Err(StreamError::InvalidState));
    assert_eq!(c.stream_recv(StreamId(2), &mut [0; 4]), Err(StreamError::InvalidState));
    assert_eq!(c.stream_send(StreamId(1), b"x", false), Err(StreamError::UnknownStream));
    assert_eq!(c.stream_recv(StreamId(1), &mut [0; 4]), Err(StreamError::UnknownStream));
}

#[test]
fn peer_stream_limit_and_implicit_open() {
    let (_c, mut s) = pair(cfg(), cfg());
    // Client bidi streams 0,4,8,12 allowed (limit 4): opening 12 opens all.
    s.on_stream_frame(StreamId(12), 0, b"hi", false).unwrap();
    assert_eq!(s.len(), 4);
    assert!(s.get(StreamId(4)).is_some());
    let e = s.on_stream_frame(StreamId(16), 0, b"x", false).unwrap_err();
    assert_eq!((e.code, e.frame_type), (ErrorCode::STREAM_LIMIT_ERROR, Some(0x08)));
    let e = s.on_stream_data_blocked(StreamId(2 + 4 * 2), 0).unwrap_err();
    assert_eq!(e.code, ErrorCode::STREAM_LIMIT_ERROR, "uni limit is 2");
    s.on_reset_stream(StreamId(6), 0, 0).unwrap();
}

#[test]
fn frame_state_errors() {
    let (mut c, mut s) = pair(cfg(), cfg());
    let st = ErrorCode::STREAM_STATE_ERROR;
    // Server-side view. Stream 3 = server uni (send-only for the server).
    assert_eq!(s.on_stream_frame(StreamId(3), 0, b"x", false).unwrap_err().code, st);
    assert_eq!(s.on_reset_stream(StreamId(3), 0, 0).unwrap_err().code, st);
    assert_eq!(s.on_stream_data_blocked(StreamId(3), 0).unwrap_err().code, st);
    // Stream 2 = client uni (receive-only for the server).
    assert_eq!(s.on_max_stream_data(StreamId(2), 10).unwrap_err().code, st);
    assert_eq!(s.on_stop_sending(StreamId(2), 0).unwrap_err().code, st);
    // Server bidi stream 1 not yet opened by the server.
    assert_eq!(s.on_stream_frame(StreamId(1), 0, b"x", false).unwrap_err().code, st);
    assert_eq!(s.on_max_stream_data(StreamId(1), 10).unwrap_err().code, st);
    assert_eq!(s.on_stop_sending(StreamId(5), 1).unwrap_err().code, st);
    // Once opened, frames on it (and on lower ones) are fine.
    s.stream_send(StreamId(5), b"x", false).unwrap();
    s.on_stop_sending(StreamId(1), 1).unwrap();
    s.on_max_stream_data(StreamId(5), 100_000).unwrap();
    // Frame encoding limits.
    assert_eq!(c.on_max_streams(true, (1 << 60) + 1).unwrap_err().code, ErrorCode::FRAME_ENCODING_ERROR);
    assert_eq!(c.on_streams_blocked(false, (1 << 60) + 1).unwrap_err().frame_type, Some(0x17));
    c.on_max_streams(false, 1 << 60).unwrap();
    let bad = PeerLimits { initial_max_streams_uni: (1 << 60) + 1, ..Default::default() };
    assert_eq!(c.set_peer_limits(&bad).unwrap_err().code, ErrorCode::TRANSPORT_PARAMETER_ERROR);
}

#[test]
fn connection_flow_control_violation() {
    let (_c, mut s) = pair(cfg(), cfg());
    // 3 streams x 4000 bytes (each within its stream limit) > 10_000.
    s.on_stream_frame(StreamId(0), 0, &[0; 4000], false).unwrap();
    s.on_stream_frame(StreamId(4), 0, &[0; 4000], false).unwrap();
    s.on_stream_frame(StreamId(8), 1000, &[0; 1000], false).unwrap();
    let e = s.on_stream_frame(StreamId(8), 0, &[0; 1], false);
    assert!(e.is_ok(), "filling below the highest offset costs nothing");
    let e = s.on_stream_frame(StreamId(12), 0, &[0; 1], false).unwrap_err();
    assert_eq!(e.code, ErrorCode::FLOW_CONTROL_ERROR);
    let (_c, mut s) = pair(cfg(), cfg());
    s.on_stream_frame(StreamId(0), 0, &[0; 4000], false).unwrap();
    s.on_stream_frame(StreamId(4), 0, &[0; 4000], false).unwrap();
    let e = s.on_reset_stream(StreamId(8), 0, 2001).unwrap_err();
    assert_eq!(e.code, ErrorCode::FLOW_CONTROL_ERROR);
    let e = s.on_stream_frame(StreamId(0), 4000, &[0; 1], false).unwrap_err();
    assert_eq!(e.code, ErrorCode::FLOW_CONTROL_ERROR, "stream limit");
}

#[test]
fn data_blocked_once_per_limit_and_unblock() {
    let mut sc = cfg();
    sc.initial_max_stream_data_bidi_remote = 100_000;
    let (mut c, mut s) = pair(cfg(), sc);
    let now = epoch();
    c.stream_send(StreamId(0), &[1; 20_000], false).unwrap();
    let mut sent = 0;
    loop {
        let p = emit(&mut c, 1200);
        if p.is_empty() {
            break;
        }
        sent += p.iter().map(|f| f.1.len).sum::<usize>();
        deliver(&mut s, &p);
    }
    assert_eq!(sent, 10_000, "stopped at MAX_DATA");
    assert!(emit(&mut c, 1200).is_empty());
    let frames: Vec<_> = std::iter::from_fn(|| c.next_control(now, Duration::from_millis(1))).collect();
    assert_eq!(frames, vec![ControlFrame::DataBlocked(10_000)]);
    // Lost DATA_BLOCKED is resent while still blocked at that limit.
    c.on_control_lost(ControlFrame::DataBlocked(10_000));
    assert_eq!(c.next_control(now, Duration::from_millis(1)), Some(ControlFrame::DataBlocked(10_000)));
    c.on_max_data(15_000).unwrap();
    c.on_control_lost(ControlFrame::DataBlocked(10_000));
    assert!(!c.has_pending_control(), "stale blocked frame dropped");
    assert_eq!(emit(&mut c, 100_000).iter().map(|f| f.1.len).sum::<usize>(), 5000);
}

#[test]
fn stream_data_blocked_and_resume() {
    let (mut c, mut s) = pair(cfg(), cfg());
    let now = epoch();
    c.stream_send(StreamId(0), &[1; 6000], false).unwrap();
    let p = emit(&mut c, 100_000);
    assert_eq!(p.iter().map(|f| f.1.len).sum::<usize>(), 4000);
    assert_eq!(
        c.next_control(now, Duration::ZERO),
        Some(ControlFrame::StreamDataBlocked { id: StreamId(0), limit: 4000 })
    );
    assert!(!c.has_pending_data(), "blocked stream parked");
    deliver(&mut s, &p);
    s.on_stream_data_blocked(StreamId(0), 4000).unwrap();
    let (b, _) = drain(&mut s, StreamId(0));
    assert_eq!(b.len(), 4000);
    let f = s.next_control(now, Duration::from_millis(10)).unwrap();
    assert_eq!(f, ControlFrame::MaxStreamData { id: StreamId(0), max: 8000 });
    // A lost MAX_STREAM_DATA is resent with the *current* value.
    s.on_control_lost(ControlFrame::MaxStreamData { id: StreamId(0), max: 1 });
    assert_eq!(
        s.next_control(now, Duration::from_millis(10)),
        Some(ControlFrame::MaxStreamData { id: StreamId(0), max: 8000 })
    );
    c.on_max_stream_data(StreamId(0), 8000).unwrap();
    assert_eq!(emit(&mut c, 100_000).iter().map(|f| f.1.len).sum::<usize>(), 2000);
}

#[test]
fn window_autotuning_grows_with_fast_reads() {
    let (mut c, mut s) = pair(cfg(), cfg());
    let t0 = epoch();
    let rtt = Duration::from_millis(100);
    let id = StreamId(0);
    c.stream_send(id, &vec![7; 200_000], false).unwrap();
    let mut max_seen = Vec::new();
    for i in 0..40u64 {
        let p = emit(&mut c, 100_000);
        deliver(&mut s, &p);
        ack(&mut c, &p);
        drain(&mut s, id);
        // Reads happen every 10 ms, far inside 2 RTTs.
        let now = t0 + Duration::from_millis(10 * i);
        while let Some(f) = s.next_control(now, rtt) {
            if let ControlFrame::MaxStreamData { max, .. } = f {
                max_seen.push(max);
            }
            match f {
                ControlFrame::MaxData(m) => c.on_max_data(m).unwrap(),
                ControlFrame::MaxStreamData { id, max } => c.on_max_stream_data(id, max).unwrap(),
                _ => {}
            }
        }
    }
    let w = s.get(id).unwrap().recv.as_ref().unwrap().window().window();
    assert_eq!(w, 32_000, "stream window doubled up to its maximum");
    assert!(s.conn_recv_window().window() >= 48_000, "connection window kept ahead");
    assert!(max_seen.windows(2).all(|x| x[0] < x[1]));
}

#[test]
fn max_streams_credit_returned_when_peer_streams_finish() {
    let (mut c, mut s) = pair(cfg(), cfg());
    let now = epoch();
    // Client opens and finishes 2 uni streams (limit 2).
    for id in [StreamId(2), StreamId(6)] {
        c.stream_send(id, b"abc", true).unwrap();
    }
    assert_eq!(c.stream_send(StreamId(10), b"x", true), Err(StreamError::StreamLimit));
    let p = emit(&mut c, 10_000);
    deliver(&mut s, &p);
    ack(&mut c, &p);
    assert_eq!(c.len(), 0, "acknowledged uni streams collected on the sender");
    assert_eq!(drain(&mut s, StreamId(2)), (b"abc".to_vec(), true));
    assert_eq!(s.len(), 1);
    let f: Vec<_> = std::iter::from_fn(|| s.next_control(now, Duration::ZERO)).collect();
    assert_eq!(f, vec![ControlFrame::MaxStreams { bidi: false, max: 3 }]);
    // Late duplicate for a collected stream is ignored.
    s.on_stream_frame(StreamId(2), 0, b"abc", true).unwrap();
    assert_eq!(s.stream_recv(StreamId(2), &mut [0; 4]), Err(StreamError::InvalidState));
    c.on_max_streams(false, 3).unwrap();
    assert_eq!(c.stream_send(StreamId(10), b"x", true), Ok(1));
    // Lost MAX_STREAMS is resent with the current value.
    drain(&mut s, StreamId(6));
    s.on_control_lost(ControlFrame::MaxStreams { bidi: false, max: 3 });
    assert_eq!(s.next_control(now, Duration::ZERO), Some(ControlFrame::MaxStreams { bidi: false, max: 4 }));
}

#[test]
fn stop_sending_and_reset_exchange() {
    let (mut c, mut s) = pair(cfg(), cfg());
    let now = epoch();
    let id = StreamId(0);
    c.stream_send(id, &[1; 3000], false).unwrap();
    let p = emit(&mut c, 1200);
    deliver(&mut s, &p);
    // Server app stops reading; client must reset with the server's code.
    s.stream_stop_sending(id, 0x42).unwrap();
    assert_eq!(s.stream_recv(id, &mut [0; 10]), Err(StreamError::InvalidState));
    let f = s.next_control(now, Duration::ZERO).unwrap();
    assert_eq!(f, ControlFrame::StopSending { id, code: 0x42 });
    // Lost once: re-queued while still relevant.
    s.on_control_lost(f);
    assert_eq!(s.next_control(now, Duration::ZERO), Some(f));
    c.on_stop_sending(id, 0x42).unwrap();
    assert_eq!(c.stream_send(id, b"more", false), Err(StreamError::StopSending(0x42)));
    assert_eq!(c.stream_capacity(id), Err(StreamError::StopSending(0x42)));
    assert!(c.writable().any(|x| x == id), "writable so the app sees the error");
    let r = c.next_control(now, Duration::ZERO).unwrap();
    assert_eq!(r, ControlFrame::ResetStream { id, code: 0x42, final_size: 1200 });
    assert!(c.next_to_send().is_none(), "no STREAM frames after reset");
    c.on_control_lost(r);
    assert_eq!(c.next_control(now, Duration::ZERO), Some(r));
    s.on_reset_stream(id, 0x42, 1200).unwrap();
    c.on_control_acked(r);
    // Server's own send half still open: finish it and the stream goes.
    s.stream_send(id, b"", true).unwrap();
    let p = emit(&mut s, 100);
    assert_eq!(p.len(), 1);
    deliver(&mut c, &p);
    ack(&mut s, &p);
    assert!(s.get(id).is_none(), "server collected the stream");
    assert_eq!(drain(&mut c, id), (vec![], true));
    assert!(c.get(id).is_none(), "client collected the stream");
    assert!(c.is_finished(id));
}

#[test]
fn reset_received_is_reported_and_releases_credit() {
    let (mut c, mut s) = pair(cfg(), cfg());
    let id = StreamId(2); // client uni
    c.stream_send(id, &[1; 1000], false).unwrap();
    deliver(&mut s, &emit(&mut c, 500));
    c.stream_reset(id, 9).unwrap();
    let r = c.next_control(epoch(), Duration::ZERO).unwrap();
    assert_eq!(r, ControlFrame::ResetStream { id, code: 9, final_size: 500 });
    s.on_reset_stream(id, 9, 3000).unwrap();
    assert!(s.readable().any(|x| x == id));
    assert_eq!(s.stream_recv(id, &mut [0; 10]), Err(StreamError::Reset(9)));
    assert!(s.get(id).is_none());
    assert_eq!(s.conn_recv_window().consumed(), 3000, "whole final size released");
}

/// A peer granting 1 MiB of connection and stream credit.
fn big_window() -> StreamsConfig {
    let mut big = cfg();
    big.initial_max_data = 1 << 20;
    big.initial_max_stream_data_bidi_remote = 1 << 20;
    big
}

#[test]
fn round_robin_is_fair() {
    let (mut c, _s) = pair(cfg(), big_window());
    for i in 0..3 {
        c.stream_send(StreamId(i * 4), &[0; 10_000], false).unwrap();
    }
    let order: Vec<u64> = (0..9).map(|_| emit_one(&mut c).0).collect();
    assert_eq!(order, vec![0, 4, 8, 0, 4, 8, 0, 4, 8]);
    // Lost data jumps the queue.
    c.on_stream_lost(StreamId(8), 0, 100, false);
    let (id, ch) = emit_one(&mut c);
    assert_eq!((id, ch.offset, ch.len, ch.is_retransmit), (8, 0, 100, true));
    assert_eq!(emit_one(&mut c).0, 0);
}

#[test]
fn sending_ahead_takes_new_data_while_lost_data_waits() {
    let (mut c, _s) = pair(cfg(), big_window());
    c.stream_send(StreamId(0), &[0; 10_000], false).unwrap();
    emit_one(&mut c);
    c.on_stream_lost(StreamId(0), 0, 1000, false);
    // A scheduler that keeps the lost bytes for another path sends new data
    // here: 500 bytes past the next unsent byte (1000), and from it.
    assert_eq!(c.next_to_send_ahead(500), Some((StreamId(0), 1500)));
    let ch = c.send_chunk_at(StreamId(0), 300, 500).unwrap();
    assert_eq!((ch.offset, ch.len, ch.is_retransmit), (1500, 300, false));
    let ch = c.send_chunk_at(StreamId(0), 300, 0).unwrap();
    assert_eq!((ch.offset, ch.len, ch.is_retransmit), (1000, 300, false));
    // The lost bytes still go first in a plain send.
    let (id, ch) = emit_one(&mut c);
    assert_eq!((id, ch.offset, ch.len, ch.is_retransmit), (0, 0, 1000, true));
}

fn emit_one(c: &mut Streams) -> (u64, Chunk) {
    let (id, _) = c.next_to_send().unwrap();
    let ch = c.send_chunk(id, 1000).unwrap();
    (id.0, ch)
}

#[test]
fn app_calls_never_panic() {
    let (mut c, _s) = pair(cfg(), cfg());
    let mut rng = StdRng::seed_from_u64(3);
    let mut buf = [0u8; 64];
    for _ in 0..5000 {
        let id = StreamId(rng.gen_range(0..40));
        match rng.gen_range(0..7) {
            0 => drop(c.stream_send(id, &[1; 100], rng.gen())),
            1 => drop(c.stream_recv(id, &mut buf)),
            2 => drop(c.stream_reset(id, 1)),
            3 => drop(c.stream_stop_sending(id, 2)),
            4 => drop(c.stream_capacity(id)),
            5 => {
                if let Some((id, _)) = c.next_to_send() {
                    c.send_chunk(id, 50);
                }
            }
            _ => drop(c.next_control(epoch(), Duration::ZERO)),
        }
    }
}

#[test]
fn write_on_zero_credit_stream_reports_blocked() {
    let mut sc = cfg();
    sc.initial_max_stream_data_bidi_remote = 0;
    let (mut c, _s) = pair(cfg(), sc);
    c.stream_send(StreamId(0), b"abc", false).unwrap();
    assert!(c.next_to_send().is_none());
    assert_eq!(
        c.next_control(epoch(), Duration::ZERO),
        Some(ControlFrame::StreamDataBlocked { id: StreamId(0), limit: 0 })
    );
    c.stream_send(StreamId(0), b"def", false).unwrap();
    assert!(!c.has_pending_control(), "once per limit");
    c.on_max_stream_data(StreamId(0), 4).unwrap();
    let (id, off) = c.next_to_send().unwrap();
    assert_eq!((id, off), (StreamId(0), 0));
    assert_eq!(c.send_chunk(id, 100).unwrap().len, 4);
}

#[test]
fn unsent_cap_bounds_what_waits_to_be_sent_not_what_is_in_flight() {
    let mut s = SendStream::new(1 << 20, 1 << 20);
    s.set_unsent_cap(3000);
    assert_eq!(s.write(&[7; 5000], false), Ok(3000));
    assert_eq!(s.capacity(), 0);
    assert_eq!(s.write(&[7; 10], false), Err(StreamError::Done));
    // Sending 2000 bytes makes room for 2000 more, though none is acked.
    let c = s.next_chunk(2000, u64::MAX).expect("chunk");
    assert_eq!((c.offset, c.len), (0, 2000));
    assert_eq!(s.capacity(), 2000);
    assert_eq!(s.write(&[7; 5000], false), Ok(2000));
    // The buffer cap still bounds the total held.
    let mut t = SendStream::new(1 << 20, 4000);
    t.set_unsent_cap(3000);
    t.write(&[1; 3000], false).unwrap();
    t.next_chunk(3000, u64::MAX).expect("chunk");
    assert_eq!(t.capacity(), 1000);
}

#[test]
fn a_streams_unsent_cap_changes_at_run_time() {
    let (mut client, _) = pair(StreamsConfig { send_unsent_cap: 1000, ..cfg() }, cfg());
    let id = StreamId(0);
    assert_eq!(client.stream_send(id, b"", false), Ok(0));
    assert_eq!(client.stream_capacity(id), Ok(1000));
    client.set_send_unsent(id, 3000).unwrap();
    assert_eq!(client.stream_capacity(id), Ok(3000));
    assert_eq!(client.stream_send(id, &[5; 2500], false), Ok(2500));
    // Lowered below what waits: no more writes, nothing lost.
    client.set_send_unsent(id, 1000).unwrap();
    assert_eq!(client.stream_capacity(id), Ok(0));
    assert_eq!(client.set_send_unsent(StreamId(8), 1000), Err(StreamError::UnknownStream));
}
