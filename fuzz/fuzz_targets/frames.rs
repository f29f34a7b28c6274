//! Decode a whole packet payload frame after frame; every decoded frame must
//! re-encode to exactly `encoded_len()` bytes and decode back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpquic::codec::{Reader, Writer};
use mpquic::frame::Frame;
use mpquic::packet::PacketType;

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let mut out = vec![0u8; data.len() + 64];
    while !r.is_empty() {
        let before = r.pos();
        let Ok(f) = Frame::decode(&mut r) else { break };
        assert!(r.pos() > before, "decode made no progress");
        // Classification never panics.
        let _ = (
            f.ty(),
            f.is_ack_eliciting(),
            f.is_probing(),
            f.is_allowed_in(PacketType::ZeroRtt),
        );
        if let Frame::Ack { ranges, .. } = &f {
            let mut prev: Option<u64> = None;
            for rg in ranges.iter() {
                assert!(rg.start < rg.end);
                if let Some(p) = prev {
                    assert!(rg.end < p, "ranges not descending with a gap");
                }
                prev = Some(rg.start);
            }
        }
        let len = f.encoded_len();
        let mut w = Writer::new(&mut out);
        f.encode(&mut w).expect("re-encode fits");
        assert_eq!(w.pos(), len);
        let mut r2 = Reader::new(&out[..len]);
        let g = Frame::decode(&mut r2).expect("re-encoded frame decodes");
        assert!(r2.is_empty());
        assert_eq!(f, g);
    }
});
