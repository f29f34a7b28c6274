//! HTTP/3 frame decoding: never panics; decoding in two pieces split at a
//! fuzzer-chosen offset gives the same result as in one piece; decoded
//! frames re-encode to bytes that decode to the same frames.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpquic::h3::frame::{decode_all, Frame, FrameDecoder, Item};

const MAX: u64 = 4096;

fn decode_split(data: &[u8], cut: usize) -> Result<Vec<Frame>, u64> {
    let mut d = FrameDecoder::new(MAX);
    let mut out = Vec::new();
    for piece in [&data[..cut], &data[cut..]] {
        let mut pos = 0;
        while pos < piece.len() {
            let (n, item) = d.decode(&piece[pos..]).map_err(|e| e.code.0)?;
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
            assert!(n > 0);
            pos += n;
        }
    }
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, data)) = data.split_first() else {
        return;
    };
    let cut = if data.is_empty() {
        0
    } else {
        seed as usize % (data.len() + 1)
    };
    let whole = decode_all(data, MAX).map_err(|e| e.code.0);
    let split = decode_split(data, cut);
    match (&whole, &split) {
        (Ok((a, _)), Ok(b)) => assert_eq!(a, b),
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("whole {whole:?} vs split {split:?}"),
    }
    if let Ok((frames, _)) = whole {
        let mut wire = Vec::new();
        for f in &frames {
            f.encode(&mut wire);
        }
        let (again, boundary) = decode_all(&wire, u64::MAX).expect("re-encoded frames decode");
        assert!(boundary);
        assert_eq!(again, frames);
    }
});
