//! Field section encoding with the static table and literals only
//! (RFC 9204 §4.5). We never insert into the dynamic table, so every field
//! section starts with Required Insert Count 0 and Base 0, and the encoder
//! needs no state.

use super::static_table::STATIC_TABLE;
use super::{encode_int, encode_string, huffman};
use crate::h3::message::Header;

/// When string literals are Huffman-coded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HuffmanPolicy {
    /// Only when the Huffman form is strictly shorter (the normal choice).
    Shorter,
    /// Always (used by tests to exercise the peer's Huffman decoder).
    Always,
    /// Never.
    Never,
}

/// Look `h` up in the static table: `(index, value matches too)`, preferring
/// an exact match over a name-only match.
pub fn static_lookup(name: &[u8], value: &[u8]) -> Option<(usize, bool)> {
    let mut name_match = None;
    for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
        if *n == name {
            if *v == value {
                return Some((i, true));
            }
            name_match.get_or_insert(i);
        }
    }
    name_match.map(|i| (i, false))
}

fn put_string(s: &[u8], prefix: u8, flags: u8, policy: HuffmanPolicy, out: &mut Vec<u8>) {
    let h = 1u8 << prefix;
    match policy {
        HuffmanPolicy::Shorter => encode_string(s, prefix, flags, out),
        HuffmanPolicy::Always => {
            encode_int(huffman::encoded_len(s) as u64, prefix, flags | h, out);
            huffman::encode(s, out);
        }
        HuffmanPolicy::Never => {
            encode_int(s.len() as u64, prefix, flags, out);
            out.extend_from_slice(s);
        }
    }
}

/// Append the encoded field section for `headers` to `out`, Huffman-coding
/// literals when that is shorter.
pub fn encode_field_section(headers: &[Header], out: &mut Vec<u8>) {
    encode_field_section_with(headers, HuffmanPolicy::Shorter, out)
}

/// [`encode_field_section`] with an explicit Huffman policy.
pub fn encode_field_section_with(headers: &[Header], policy: HuffmanPolicy, out: &mut Vec<u8>) {
    // Encoded Required Insert Count = 0, then Sign = 0 and Delta Base = 0.
    out.extend_from_slice(&[0x00, 0x00]);
    for h in headers {
        match static_lookup(&h.name, &h.value) {
            // Indexed Field Line, T=1 (static): 11xxxxxx.
            Some((i, true)) => encode_int(i as u64, 6, 0xc0, out),
            // Literal Field Line with Name Reference, N=0, T=1: 0101xxxx.
            Some((i, false)) => {
                encode_int(i as u64, 4, 0x50, out);
                put_string(&h.value, 7, 0x00, policy, out);
            }
            // Literal Field Line with Literal Name, N=0: 001Hxxx.
            None => {
                put_string(&h.name, 3, 0x20, policy, out);
                put_string(&h.value, 7, 0x00, policy, out);
            }
        }
    }
}
