//! The HPACK/QPACK Huffman code (RFC 7541 Appendix B, reused by RFC 9204 §4.1.2).
//!
//! The code is canonical: codes are assigned in order of (length, symbol), so
//! the 257 code lengths below determine every code. Both tables are built at
//! compile time from them, which leaves one list to check against the RFC.

/// Symbol 256, the end-of-string code (30 ones). It must never be decoded.
const EOS: usize = 256;

/// Code length in bits of each symbol 0..=256 (RFC 7541 Appendix B).
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28,
    28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6,
    6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7,
    8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7,
    15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24,
    23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23,
    23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26,
    26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20,
    21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27,
    27, 27, 26, 30,
];

/// Longest code, in bits.
const MAX_LEN: usize = 30;

/// Symbols sorted by (code length, symbol): canonical code order.
const SORTED: [u16; 257] = sorted_symbols();
/// First code of each length, and the index in `SORTED` of that code's symbol.
const FIRST: ([u32; MAX_LEN + 1], [u16; MAX_LEN + 1], [u16; MAX_LEN + 1]) = first_codes();
/// (code, length) per symbol, codes right-aligned.
const CODES: [(u32, u8); 257] = codes();

const fn sorted_symbols() -> [u16; 257] {
    let mut out = [0u16; 257];
    let mut n = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        let mut s = 0;
        while s < 257 {
            if LENGTHS[s] as usize == len {
                out[n] = s as u16;
                n += 1;
            }
            s += 1;
        }
        len += 1;
    }
    out
}

/// Returns (first code, first index into SORTED, count) for each length.
const fn first_codes() -> ([u32; MAX_LEN + 1], [u16; MAX_LEN + 1], [u16; MAX_LEN + 1]) {
    let mut count = [0u16; MAX_LEN + 1];
    let mut s = 0;
    while s < 257 {
        count[LENGTHS[s] as usize] += 1;
        s += 1;
    }
    let mut first = [0u32; MAX_LEN + 1];
    let mut index = [0u16; MAX_LEN + 1];
    let mut code = 0u32;
    let mut idx = 0u16;
    let mut len = 1;
    while len <= MAX_LEN {
        first[len] = code;
        index[len] = idx;
        code = (code + count[len] as u32) << 1;
        idx += count[len];
        len += 1;
    }
    (first, index, count)
}

const fn codes() -> [(u32, u8); 257] {
    let mut out = [(0u32, 0u8); 257];
    let mut i = 0;
    while i < 257 {
        let s = SORTED[i] as usize;
        let len = LENGTHS[s] as usize;
        out[s] = (FIRST.0[len] + (i as u32 - FIRST.1[len] as u32), len as u8);
        i += 1;
    }
    out
}

/// Why a Huffman string was rejected (RFC 7541 §5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HuffmanError {
    /// The string contained the EOS symbol.
    Eos,
    /// More than 7 bits of padding, or padding that is not a prefix of EOS.
    BadPadding,
}

/// Number of bytes `src` takes once Huffman-encoded.
pub fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src.iter().map(|&b| CODES[b as usize].1 as usize).sum();
    bits.div_ceil(8)
}

/// Append the Huffman encoding of `src` to `out`, padded with ones.
pub fn encode(src: &[u8], out: &mut Vec<u8>) {
    let mut acc: u64 = 0;
    let mut nbits: u32 = 0;
    for &b in src {
        let (code, len) = CODES[b as usize];
        acc = (acc << len) | code as u64;
        nbits += len as u32;
        while nbits >= 8 {
            nbits -= 8;
            out.push((acc >> nbits) as u8);
        }
        // Keep only the bits not yet written so the shift never overflows.
        acc &= (1u64 << nbits) - 1;
    }
    if nbits > 0 {
        let pad = 8 - nbits;
        out.push(((acc << pad) as u8) | ((1u8 << pad) - 1));
    }
}

/// Decode a Huffman string, appending the bytes to `out`.
pub fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let (first, index, count) = (&FIRST.0, &FIRST.1, &FIRST.2);
    let mut code: u32 = 0;
    let mut len: usize = 0;
    // Whether every bit of the pending partial code is 1 (a prefix of EOS).
    let mut all_ones = true;
    for &byte in src {
        for shift in (0..8).rev() {
            let bit = ((byte >> shift) & 1) as u32;
            code = (code << 1) | bit;
            len += 1;
            all_ones &= bit == 1;
            // Canonical decoding: a code of this length is complete when it
            // falls inside this length's range of codes.
            let c = count.get(len).copied().unwrap_or(0) as u32;
            let f = first.get(len).copied().unwrap_or(0);
            if code >= f && code - f < c {
                let i = index.get(len).copied().unwrap_or(0) as usize + (code - f) as usize;
                let sym = SORTED.get(i).copied().unwrap_or(EOS as u16) as usize;
                if sym == EOS {
                    return Err(HuffmanError::Eos);
                }
                out.push(sym as u8);
                code = 0;
                len = 0;
                all_ones = true;
            } else if len >= MAX_LEN {
                // Cannot happen with a complete code, but never loop on junk.
                return Err(HuffmanError::Eos);
            }
        }
    }
    if len > 7 || !all_ones {
        return Err(HuffmanError::BadPadding);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn known_codes() {
        // Spot checks against RFC 7541 Appendix B.
        assert_eq!(CODES[0], (0x1ff8, 13));
        assert_eq!(CODES[b'0' as usize], (0x0, 5));
        assert_eq!(CODES[b' ' as usize], (0x14, 6));
        assert_eq!(CODES[b':' as usize], (0x5c, 7));
        assert_eq!(CODES[b'&' as usize], (0xf8, 8));
        assert_eq!(CODES[b'\\' as usize], (0x7fff0, 19));
        assert_eq!(CODES[9], (0xffffea, 24));
        assert_eq!(CODES[10], (0x3ffffffc, 30));
        assert_eq!(CODES[127], (0xffffffc, 28));
        assert_eq!(CODES[255], (0x3ffffee, 26));
        assert_eq!(CODES[EOS], (0x3fffffff, 30));
    }

    #[test]
    fn kraft_sum_is_exactly_one() {
        let sum: u64 = LENGTHS.iter().map(|&l| 1u64 << (MAX_LEN - l as usize)).sum();
        assert_eq!(sum, 1u64 << MAX_LEN);
    }

    #[test]
    fn rfc7541_c4_examples() {
        // RFC 7541 C.4.1-C.4.3 Huffman-coded string literals.
        let cases: [(&str, &str); 5] = [
            ("www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"),
            ("no-cache", "a8eb 1064 9cbf"),
            ("custom-key", "25a8 49e9 5ba9 7d7f"),
            ("custom-value", "25a8 49e9 5bb8 e8b4 bf"),
            ("/", "63"),
        ];
        for (plain, enc) in cases {
            let enc = hex(enc);
            let mut out = Vec::new();
            encode(plain.as_bytes(), &mut out);
            assert_eq!(out, enc, "{plain}");
            assert_eq!(encoded_len(plain.as_bytes()), enc.len());
            let mut dec = Vec::new();
            decode(&enc, &mut dec).unwrap();
            assert_eq!(dec, plain.as_bytes());
        }
        // C.6.1 (response with Huffman): a date value.
        let mut out = Vec::new();
        encode(b"Mon, 21 Oct 2013 20:13:21 GMT", &mut out);
        assert_eq!(out, hex("d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff"));
    }

    #[test]
    fn round_trip_all_bytes() {
        let all: Vec<u8> = (0..=255u8).collect();
        for s in [&all[..], b"", b"a", b"\xff\xfe\x00\x01"] {
            let mut enc = Vec::new();
            encode(s, &mut enc);
            assert_eq!(enc.len(), encoded_len(s));
            let mut dec = Vec::new();
            decode(&enc, &mut dec).unwrap();
            assert_eq!(dec, s);
        }
        for b in 0..=255u8 {
            let s = [b, b, b];
            let mut enc = Vec::new();
            encode(&s, &mut enc);
            let mut dec = Vec::new();
            decode(&enc, &mut dec).unwrap();
            assert_eq!(dec, s);
        }
    }

    #[test]
    fn rejects_eos_and_bad_padding() {
        // A full EOS code (30 ones) padded to 32 bits.
        assert_eq!(decode(&[0xff, 0xff, 0xff, 0xff], &mut Vec::new()), Err(HuffmanError::Eos));
        // 'a' (00011) then padding of zeros instead of ones.
        assert_eq!(decode(&[0b0001_1000], &mut Vec::new()), Err(HuffmanError::BadPadding));
        // 'a' then a whole extra byte of ones: 11 bits of padding.
        assert_eq!(decode(&[0b0001_1111, 0xff], &mut Vec::new()), Err(HuffmanError::BadPadding));
        // 'a' with correct 3 bits of padding decodes.
        let mut out = Vec::new();
        decode(&[0b0001_1111], &mut out).unwrap();
        assert_eq!(out, b"a");
        // A lone byte of ones is 8 bits of padding: too long.
        assert_eq!(decode(&[0xff], &mut Vec::new()), Err(HuffmanError::BadPadding));
    }
}
