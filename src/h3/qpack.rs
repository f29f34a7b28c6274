//! QPACK field compression (RFC 9204), restricted to what an endpoint that
//! advertises `SETTINGS_QPACK_MAX_TABLE_CAPACITY = 0` needs: the static table,
//! literals and Huffman coding. Every dynamic-table reference is refused with
//! the right error code rather than misread.

pub mod decoder;
pub mod encoder;
pub mod huffman;
pub mod static_table;

pub use decoder::{decode_field_section, DecoderStreamParser, EncoderStreamParser};
pub use encoder::{encode_field_section, encode_field_section_with};

/// Why a prefixed integer or string literal could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrimitiveError {
    /// The input ended inside the value: wait for more bytes (on a stream)
    /// or fail (inside a complete field section).
    Incomplete,
    /// The value is malformed: over 62 bits, or bad Huffman coding.
    Invalid,
}

/// Decode a prefixed integer (RFC 7541 §5.1) whose prefix is the low
/// `prefix` bits of `buf[0]`. Returns the value and the bytes consumed.
/// Values above 2^62-1 are rejected: nothing in QPACK needs more.
pub fn decode_int(buf: &[u8], prefix: u8) -> Result<(u64, usize), PrimitiveError> {
    let mask: u8 = if prefix >= 8 { 0xff } else { (1u8 << prefix) - 1 };
    let first = *buf.first().ok_or(PrimitiveError::Incomplete)?;
    let mut v = (first & mask) as u64;
    if v < mask as u64 {
        return Ok((v, 1));
    }
    let mut shift = 0u32;
    for (i, &b) in buf.iter().enumerate().skip(1) {
        if shift > 56 {
            return Err(PrimitiveError::Invalid);
        }
        v = v.checked_add(((b & 0x7f) as u64) << shift).ok_or(PrimitiveError::Invalid)?;
        if v > crate::codec::VARINT_MAX {
            return Err(PrimitiveError::Invalid);
        }
        shift += 7;
        if b & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    Err(PrimitiveError::Incomplete)
}

/// Append a prefixed integer: `flags` supplies the bits above the prefix in
/// the first byte.
pub fn encode_int(v: u64, prefix: u8, flags: u8, out: &mut Vec<u8>) {
    let mask: u64 = if prefix >= 8 { 0xff } else { (1u64 << prefix) - 1 };
    if v < mask {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | mask as u8);
    let mut rest = v - mask;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Decode a string literal whose Huffman flag is bit `prefix` of `buf[0]`
/// and whose length is a `prefix`-bit prefixed integer (RFC 9204 §4.1.2).
/// `max_len` bounds the decoded length. Returns the bytes and bytes consumed.
pub fn decode_string(buf: &[u8], prefix: u8, max_len: usize) -> Result<(Vec<u8>, usize), PrimitiveError> {
    let first = *buf.first().ok_or(PrimitiveError::Incomplete)?;
    let huffman = first & (1 << prefix) != 0;
    let (len, n) = decode_int(buf, prefix)?;
    let len = usize::try_from(len).map_err(|_| PrimitiveError::Invalid)?;
    // Huffman never shrinks below 5 bits a symbol, so a literal longer than
    // this can never fit the limit: refuse it before waiting for the bytes.
    let raw_limit = if huffman { max_len.saturating_mul(30).div_ceil(8) } else { max_len };
    if len > raw_limit {
        return Err(PrimitiveError::Invalid);
    }
    let end = n.checked_add(len).ok_or(PrimitiveError::Invalid)?;
    let raw = buf.get(n..end).ok_or(PrimitiveError::Incomplete)?;
    let s = if huffman {
        let mut out = Vec::with_capacity(len * 8 / 5 + 1);
        huffman::decode(raw, &mut out).map_err(|_| PrimitiveError::Invalid)?;
        if out.len() > max_len {
            return Err(PrimitiveError::Invalid);
        }
        out
    } else {
        raw.to_vec()
    };
    Ok((s, end))
}

/// Append a string literal, Huffman-coded when that is shorter. `flags`
/// supplies the bits above the H bit, which sits at bit `prefix`.
pub fn encode_string(s: &[u8], prefix: u8, flags: u8, out: &mut Vec<u8>) {
    let hlen = huffman::encoded_len(s);
    if hlen < s.len() {
        encode_int(hlen as u64, prefix, flags | (1 << prefix), out);
        huffman::encode(s, out);
    } else {
        encode_int(s.len() as u64, prefix, flags, out);
        out.extend_from_slice(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7541_c1_integers() {
        // C.1.1: 10 with a 5-bit prefix.
        let mut out = Vec::new();
        encode_int(10, 5, 0, &mut out);
        assert_eq!(out, [0x0a]);
        // C.1.2: 1337 with a 5-bit prefix.
        out.clear();
        encode_int(1337, 5, 0, &mut out);
        assert_eq!(out, [0x1f, 0x9a, 0x0a]);
        assert_eq!(decode_int(&out, 5), Ok((1337, 3)));
        // C.1.3: 42 at an octet boundary.
        out.clear();
        encode_int(42, 8, 0, &mut out);
        assert_eq!(out, [0x2a]);
        assert_eq!(decode_int(&out, 8), Ok((42, 1)));
    }

    #[test]
    fn int_round_trip_and_limits() {
        for prefix in 1..=8u8 {
            for v in [0u64, 1, 30, 31, 32, 126, 127, 128, 255, 256, 16383, 1 << 40, (1 << 62) - 1] {
                let mut out = Vec::new();
                encode_int(v, prefix, 0, &mut out);
                assert_eq!(decode_int(&out, prefix), Ok((v, out.len())), "{v} {prefix}");
                for cut in 0..out.len() {
                    assert_eq!(decode_int(&out[..cut], prefix), Err(PrimitiveError::Incomplete));
                }
            }
        }
        let mut out = Vec::new();
        encode_int(1 << 62, 5, 0, &mut out);
        assert_eq!(decode_int(&out, 5), Err(PrimitiveError::Invalid));
        // Endless continuation bytes are refused once past 62 bits.
        let long = [0xffu8; 20];
        assert_eq!(decode_int(&long, 5), Err(PrimitiveError::Invalid));
    }

    #[test]
    fn string_round_trip() {
        for s in [&b""[..], b"custom-key", b"\x00\x01\xff", b"www.example.com"] {
            let mut out = Vec::new();
            encode_string(s, 7, 0, &mut out);
            assert_eq!(decode_string(&out, 7, 100), Ok((s.to_vec(), out.len())));
            assert_eq!(decode_string(&out, 7, s.len().saturating_sub(1)).is_err(), !s.is_empty());
        }
        // H bit set means Huffman: "www.example.com" (RFC 7541 C.4.1).
        let enc = [0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff];
        assert_eq!(decode_string(&enc, 7, 100), Ok((b"www.example.com".to_vec(), 13)));
        assert_eq!(decode_string(&enc[..5], 7, 100), Err(PrimitiveError::Incomplete));
    }
}

#[cfg(test)]
mod section_tests;
