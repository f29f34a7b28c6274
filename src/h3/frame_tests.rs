use super::*;

fn sample_frames() -> Vec<Frame> {
    vec![
        Frame::Settings(Settings {
            qpack_max_table_capacity: Some(0),
            max_field_section_size: Some(16384),
            qpack_blocked_streams: Some(0),
            other: vec![(0x21, 7), (0x1f * 3 + 0x21, 1 << 40)],
        }),
        Frame::Headers { field_section: vec![0, 0, 0xd1, 0xd7] },
        Frame::Data { payload: (0..200u8).collect() },
        Frame::Data { payload: vec![] },
        Frame::CancelPush { push_id: 3 },
        Frame::PushPromise { push_id: 1 << 20, field_section: vec![0, 0, 0xc1] },
        Frame::GoAway { id: 1 << 33 },
        Frame::MaxPushId { push_id: 63 },
        Frame::Unknown { frame_type: 0x21 },
        Frame::Headers { field_section: vec![] },
    ]
}

fn encode_all(frames: &[Frame]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in frames {
        f.encode(&mut out);
    }
    out
}

#[test]
fn known_encodings() {
    let mut out = Vec::new();
    Frame::GoAway { id: 4 }.encode(&mut out);
    assert_eq!(out, [0x07, 0x01, 0x04]);
    out.clear();
    Frame::Settings(Settings { qpack_max_table_capacity: Some(0), ..Default::default() }).encode(&mut out);
    assert_eq!(out, [0x04, 0x02, 0x01, 0x00]);
    out.clear();
    encode_data_header(300, &mut out);
    assert_eq!(out, [0x00, 0x41, 0x2c]);
    for len in [0, 63, 64, 300, 16_383, 16_384, 1 << 30, (1 << 62) - 1] {
        let mut heap = Vec::new();
        encode_data_header(len, &mut heap);
        let (stack, n) = data_header(len);
        assert_eq!(&stack[..n], &heap[..], "{len}");
    }
    out.clear();
    Frame::MaxPushId { push_id: 16384 }.encode(&mut out);
    assert_eq!(out, [0x0d, 0x04, 0x80, 0x00, 0x40, 0x00]);
}

#[test]
fn round_trip() {
    let frames = sample_frames();
    let wire = encode_all(&frames);
    let (got, boundary) = decode_all(&wire, 1 << 20).unwrap();
    assert!(boundary);
    assert_eq!(got, frames);
}

/// Feed the decoder in two pieces split at every offset, then one byte at a
/// time; the frames must come out the same.
#[test]
fn split_at_every_byte() {
    let frames = sample_frames();
    let wire = encode_all(&frames);
    let run = |pieces: &[&[u8]]| {
        let mut d = FrameDecoder::new(1 << 20);
        let mut out: Vec<Frame> = Vec::new();
        for piece in pieces {
            let mut pos = 0;
            while pos < piece.len() {
                let (n, item) = d.decode(&piece[pos..]).unwrap();
                match item {
                    Some(Item::Frame(f)) => out.push(f),
                    Some(Item::DataHeader { .. }) => out.push(Frame::Data { payload: vec![] }),
                    Some(Item::DataPayload(k)) => {
                        assert_eq!(k, n);
                        if let Some(Frame::Data { payload }) = out.last_mut() {
                            payload.extend_from_slice(&piece[pos..pos + k]);
                        }
                    }
                    None => assert_eq!(n, piece.len() - pos),
                }
                pos += n;
            }
        }
        assert!(d.at_boundary());
        out
    };
    for cut in 0..=wire.len() {
        assert_eq!(run(&[&wire[..cut], &wire[cut..]]), frames, "cut {cut}");
    }
    let bytes: Vec<&[u8]> = wire.chunks(1).collect();
    assert_eq!(run(&bytes), frames);
}

#[test]
fn data_is_streamed_not_buffered() {
    let mut wire = Vec::new();
    encode_data_header(10, &mut wire);
    wire.extend_from_slice(b"0123456789");
    let mut d = FrameDecoder::default();
    assert_eq!(d.decode(&wire[..3]).unwrap(), (2, Some(Item::DataHeader { len: 10 })));
    assert_eq!(d.data_remaining(), 10);
    assert_eq!(d.decode(&wire[2..5]).unwrap(), (3, Some(Item::DataPayload(3))));
    // The caller may also take payload directly.
    d.consume_data(7);
    assert!(d.at_boundary());
    // A DATA frame larger than the buffered-frame limit is fine.
    let mut big = Vec::new();
    encode_data_header(1 << 30, &mut big);
    let mut d = FrameDecoder::new(16);
    assert_eq!(d.decode(&big).unwrap().1, Some(Item::DataHeader { len: 1 << 30 }));
}

#[test]
fn truncated_stream_is_not_at_boundary() {
    let mut wire = Vec::new();
    Frame::GoAway { id: 1 << 20 }.encode(&mut wire);
    for cut in 1..wire.len() {
        let (frames, boundary) = decode_all(&wire[..cut], 1024).unwrap();
        assert!(frames.is_empty());
        assert!(!boundary, "cut {cut}");
    }
}

#[test]
fn frame_errors() {
    let code = |wire: &[u8]| decode_all(wire, 1024).map(|_| ()).map_err(|e| e.code);
    // HTTP/2 frame types.
    for ty in [0x02u8, 0x06, 0x08, 0x09] {
        assert_eq!(code(&[ty, 0x00]), Err(H3Code::FRAME_UNEXPECTED));
    }
    // GOAWAY with trailing bytes, empty, or truncated varint.
    assert_eq!(code(&[0x07, 0x02, 0x04, 0x00]), Err(H3Code::FRAME_ERROR));
    assert_eq!(code(&[0x07, 0x00]), Err(H3Code::FRAME_ERROR));
    assert_eq!(code(&[0x07, 0x01, 0x40]), Err(H3Code::FRAME_ERROR));
    assert_eq!(code(&[0x0d, 0x09]), Err(H3Code::FRAME_ERROR));
    assert_eq!(code(&[0x03, 0x02, 0x80, 0x00]), Err(H3Code::FRAME_ERROR));
    // PUSH_PROMISE without a push ID.
    assert_eq!(code(&[0x05, 0x00]), Err(H3Code::FRAME_ERROR));
    // A HEADERS frame above the limit.
    assert_eq!(code(&[0x01, 0x44, 0x01]), Err(H3Code::EXCESSIVE_LOAD));
    // Unknown frames are skipped whatever their size.
    let mut wire = vec![0x21, 0x44, 0x01];
    wire.extend_from_slice(&[0xaa; 0x401]);
    let (frames, boundary) = decode_all(&wire, 16).unwrap();
    assert_eq!(frames, vec![Frame::Unknown { frame_type: 0x21 }]);
    assert!(boundary);
}

#[test]
fn settings_errors() {
    let code = |payload: &[u8]| parse_settings(payload).map(|_| ()).map_err(|e| e.code);
    for id in 2u8..=5 {
        assert_eq!(code(&[id, 0x00]), Err(H3Code::SETTINGS_ERROR), "id {id}");
    }
    assert_eq!(code(&[0x01, 0x00, 0x01, 0x00]), Err(H3Code::SETTINGS_ERROR));
    assert_eq!(code(&[0x21, 0x00, 0x21, 0x01]), Err(H3Code::SETTINGS_ERROR));
    assert_eq!(code(&[0x06]), Err(H3Code::FRAME_ERROR));
    assert_eq!(code(&[0x06, 0x40]), Err(H3Code::FRAME_ERROR));
    let s = parse_settings(&[0x01, 0x00, 0x06, 0x44, 0x00, 0x07, 0x05, 0x21, 0x01]).unwrap();
    assert_eq!(s.qpack_max_table_capacity, Some(0));
    assert_eq!(s.max_field_section_size, Some(0x400));
    assert_eq!(s.qpack_blocked_streams, Some(5));
    assert_eq!(s.other, vec![(0x21, 1)]);
    assert!(code(&[]).is_ok());
}

#[test]
fn grease_values() {
    assert!(is_grease(0x21));
    assert!(is_grease(0x40));
    assert!(is_grease(0x1f * 1000 + 0x21));
    assert!(!is_grease(0x20));
    assert!(!is_grease(0x00));
}
