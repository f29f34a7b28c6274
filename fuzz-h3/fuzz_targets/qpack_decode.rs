//! QPACK decoding: never panics; a decoded field section re-encodes to one
//! that decodes to the same fields; the encoder/decoder stream parsers give
//! the same verdict whether fed whole or in two pieces; Huffman decode then
//! encode then decode is stable.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpquic::h3::qpack::{self, huffman, DecoderStreamParser, EncoderStreamParser};

fuzz_target!(|data: &[u8]| {
    let Some((&seed, data)) = data.split_first() else {
        return;
    };
    if let Ok(headers) = qpack::decode_field_section(data, 1 << 16) {
        let mut out = Vec::new();
        qpack::encode_field_section(&headers, &mut out);
        let again = qpack::decode_field_section(&out, u64::MAX).expect("our encoding decodes");
        assert_eq!(again, headers);
    }

    let cut = if data.is_empty() {
        0
    } else {
        seed as usize % (data.len() + 1)
    };
    let whole = EncoderStreamParser::default()
        .feed(data)
        .map_err(|e| e.code);
    let mut p = EncoderStreamParser::default();
    let split = p
        .feed(&data[..cut])
        .and_then(|_| p.feed(&data[cut..]))
        .map_err(|e| e.code);
    assert_eq!(whole, split);
    let whole = DecoderStreamParser::default()
        .feed(data)
        .map_err(|e| e.code);
    let mut p = DecoderStreamParser::default();
    let split = p
        .feed(&data[..cut])
        .and_then(|_| p.feed(&data[cut..]))
        .map_err(|e| e.code);
    assert_eq!(whole, split);

    let mut plain = Vec::new();
    if huffman::decode(data, &mut plain).is_ok() {
        let mut enc = Vec::new();
        huffman::encode(&plain, &mut enc);
        assert_eq!(enc.len(), huffman::encoded_len(&plain));
        let mut back = Vec::new();
        huffman::decode(&enc, &mut back).expect("our encoding decodes");
        assert_eq!(back, plain);
    }
});
