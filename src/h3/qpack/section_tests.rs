//! Field-section tests: RFC 9204 Appendix B, the static table, refusal of
//! dynamic-table references, and interop with quiche's QPACK.

use super::encoder::{encode_field_section_with, static_lookup, HuffmanPolicy};
use super::static_table::STATIC_TABLE;
use super::*;
use crate::h3::error::H3Code;
use crate::h3::message::Header;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

const BIG: u64 = 1 << 20;

#[test]
fn rfc9204_b1_literal_with_static_name_reference() {
    let wire = hex("0000 510b 2f69 6e64 6578 2e68 746d 6c");
    let h = decode_field_section(&wire, BIG).unwrap();
    assert_eq!(h, vec![Header::new(":path", "/index.html")]);
    // Our encoder chooses the same representation (Huffman off, as in B.1).
    let mut out = Vec::new();
    encode_field_section_with(&h, HuffmanPolicy::Never, &mut out);
    assert_eq!(out, wire);
}

#[test]
fn rfc9204_b_dynamic_sections_refused() {
    // B.2 stream 4: Required Insert Count = 2 with post-base indices.
    let e = decode_field_section(&hex("0381 10 11"), BIG).unwrap_err();
    assert_eq!(e.code, H3Code::QPACK_DECOMPRESSION_FAILED);
    // B.4 stream 8: Required Insert Count = 4, dynamic indexed lines.
    let e = decode_field_section(&hex("0500 80 c1 81"), BIG).unwrap_err();
    assert_eq!(e.code, H3Code::QPACK_DECOMPRESSION_FAILED);
    // With RIC = 0, each dynamic form alone is still refused, never misread.
    for line in ["80", "10", "5f00", "4100", "0000"] {
        let wire = hex(&format!("0000{line}"));
        let e = decode_field_section(&wire, BIG).unwrap_err();
        assert_eq!(e.code, H3Code::QPACK_DECOMPRESSION_FAILED, "{line}");
    }
    // Negative base (sign bit) with RIC 0.
    let e = decode_field_section(&hex("0080 d1"), BIG).unwrap_err();
    assert_eq!(e.code, H3Code::QPACK_DECOMPRESSION_FAILED);
}

#[test]
fn rfc9204_b_encoder_stream_instructions_refused() {
    let code = |hexs: &str| EncoderStreamParser::default().feed(&hex(hexs)).map_err(|e| e.code);
    // B.2: Set Dynamic Table Capacity=220.
    assert_eq!(code("3fbd01"), Err(H3Code::QPACK_ENCODER_STREAM_ERROR));
    // B.2: Insert With Name Reference.
    assert_eq!(code("c00f 7777 772e"), Err(H3Code::QPACK_ENCODER_STREAM_ERROR));
    // B.3: Insert With Literal Name.
    assert_eq!(code("4a63 7573"), Err(H3Code::QPACK_ENCODER_STREAM_ERROR));
    // B.4: Duplicate.
    assert_eq!(code("02"), Err(H3Code::QPACK_ENCODER_STREAM_ERROR));
    // Capacity 0 is fine, repeatedly, and in pieces.
    assert_eq!(code("20 20 20"), Ok(()));
    let mut p = EncoderStreamParser::default();
    p.feed(&[0x3f]).unwrap(); // capacity needs more bytes: wait
    assert_eq!(p.feed(&[0x01]).map_err(|e| e.code), Err(H3Code::QPACK_ENCODER_STREAM_ERROR));
}

#[test]
fn rfc9204_b_decoder_stream_instructions() {
    let code = |hexs: &str| DecoderStreamParser::default().feed(&hex(hexs)).map_err(|e| e.code);
    // B.2 Section Acknowledgment, B.3 Insert Count Increment: we never
    // referenced or inserted anything, so both are errors.
    assert_eq!(code("84"), Err(H3Code::QPACK_DECODER_STREAM_ERROR));
    assert_eq!(code("01"), Err(H3Code::QPACK_DECODER_STREAM_ERROR));
    assert_eq!(code("00"), Err(H3Code::QPACK_DECODER_STREAM_ERROR));
    // B.4 Stream Cancellation is harmless.
    assert_eq!(code("48 7f"), Ok(()));
    let mut p = DecoderStreamParser::default();
    p.feed(&[0x7f]).unwrap();
    p.feed(&[0x80]).unwrap();
    p.feed(&[0x01]).unwrap();
    assert!(p.pending.is_empty());
}

#[test]
fn every_static_entry_round_trips() {
    assert_eq!(STATIC_TABLE.len(), 99);
    for (i, (name, value)) in STATIC_TABLE.iter().enumerate() {
        let h = vec![Header::new(name, value)];
        let mut out = Vec::new();
        encode_field_section(&h, &mut out);
        // Exact matches are one Indexed Field Line; all our entries are
        // unique, so the index found is the entry's own.
        assert_eq!(static_lookup(name, value), Some((i, true)));
        let mut want = vec![0, 0];
        encode_int(i as u64, 6, 0xc0, &mut want);
        assert_eq!(out, want, "entry {i}");
        assert_eq!(decode_field_section(&out, BIG).unwrap(), h);
        // And with a different value: name reference plus literal.
        let h2 = vec![Header::new(name, b"other-value")];
        out.clear();
        encode_field_section(&h2, &mut out);
        assert_eq!(decode_field_section(&out, BIG).unwrap(), h2);
    }
    // A few entries checked against RFC 9204 Appendix A by hand.
    assert_eq!(STATIC_TABLE[0], (&b":authority"[..], &b""[..]));
    assert_eq!(STATIC_TABLE[17], (&b":method"[..], &b"GET"[..]));
    assert_eq!(STATIC_TABLE[25], (&b":status"[..], &b"200"[..]));
    assert_eq!(STATIC_TABLE[31].1, b"gzip, deflate, br");
    assert_eq!(STATIC_TABLE[85].1, b"script-src 'none'; object-src 'none'; base-uri 'none'");
    assert_eq!(STATIC_TABLE[98], (&b"x-frame-options"[..], &b"sameorigin"[..]));
}

#[test]
fn literal_names_and_huffman_policies() {
    let h = vec![
        Header::new(":method", "GET"),
        Header::new("custom-key", "custom-value"),
        Header::new("x-bin", b"\x00\x7f\xff"),
        Header::new("", ""),
    ];
    for policy in [HuffmanPolicy::Shorter, HuffmanPolicy::Always, HuffmanPolicy::Never] {
        let mut out = Vec::new();
        encode_field_section_with(&h, policy, &mut out);
        assert_eq!(decode_field_section(&out, BIG).unwrap(), h);
        // Every truncation is an error, never a shorter list read silently
        // as complete, except at field-line boundaries.
        for cut in 0..out.len() {
            if let Ok(got) = decode_field_section(&out[..cut], BIG) {
                assert!(got.len() < h.len() && h.starts_with(&got));
            }
        }
    }
}

#[test]
fn field_section_size_limit() {
    let h = vec![Header::new("custom-key", "custom-value")];
    let mut out = Vec::new();
    encode_field_section(&h, &mut out);
    let exact = (10 + 12 + 32) as u64;
    assert!(decode_field_section(&out, exact).is_ok());
    let e = decode_field_section(&out, exact - 1).unwrap_err();
    assert_eq!(e.code, H3Code::EXCESSIVE_LOAD);
}

#[test]
fn bad_huffman_in_section_fails() {
    // Literal with name ref :path, Huffman flag, 1 byte 0x00 (zero padding).
    let e = decode_field_section(&hex("0000 51 81 00"), BIG).unwrap_err();
    assert_eq!(e.code, H3Code::QPACK_DECOMPRESSION_FAILED);
    // Static index 99 does not exist.
    let e = decode_field_section(&hex("0000 ff24"), BIG).unwrap_err();
    assert_eq!(e.code, H3Code::QPACK_DECOMPRESSION_FAILED);
}

#[test]
fn interop_with_quiche_qpack() {
    use quiche::h3::NameValue;
    let ours = vec![
        Header::new(":method", "GET"),
        Header::new(":path", "/index.html"),
        Header::new("user-agent", "mpquic test"),
        Header::new("x-custom", "value with spaces"),
    ];
    // Ours -> quiche, forcing Huffman everywhere.
    let mut out = Vec::new();
    encode_field_section_with(&ours, HuffmanPolicy::Always, &mut out);
    let theirs = quiche::h3::qpack::Decoder::new().decode(&out, BIG).unwrap();
    let got: Vec<Header> = theirs.iter().map(|h| Header::new(h.name(), h.value())).collect();
    assert_eq!(got, ours);
    // quiche -> ours.
    let qh: Vec<quiche::h3::Header> =
        ours.iter().map(|h| quiche::h3::Header::new(&h.name, &h.value)).collect();
    let mut buf = [0u8; 512];
    let n = quiche::h3::qpack::Encoder::new().encode(&qh, &mut buf).unwrap();
    assert_eq!(decode_field_section(&buf[..n], BIG).unwrap(), ours);
}

#[test]
fn huffman_table_matches_quiche_for_every_byte() {
    // quiche's decoder checks our code for each symbol (including the
    // rarely used high bytes) independently of our own decoder.
    use quiche::h3::NameValue;
    for b in 0..=255u8 {
        let value = vec![b'a', b, b'z', b, b];
        let h = vec![Header::new("x", &value)];
        let mut out = Vec::new();
        encode_field_section_with(&h, HuffmanPolicy::Always, &mut out);
        let theirs = quiche::h3::qpack::Decoder::new().decode(&out, BIG).unwrap();
        assert_eq!(theirs[0].value(), &value[..], "byte {b}");
    }
}
