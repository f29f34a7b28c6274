//! Byte-level reading and writing with QUIC variable-length integers
//! (RFC 9000 §16). Readers never panic: every read is bounds-checked and
//! returns `BufferTooShort` on truncated input.

use crate::error::BufferTooShort;

/// Largest value a varint can hold (2^62 - 1).
pub const VARINT_MAX: u64 = (1 << 62) - 1;

/// Encoded length of `v` as a varint. `v` must be <= VARINT_MAX.
#[inline]
pub const fn varint_len(v: u64) -> usize {
    if v < 64 {
        1
    } else if v < 16384 {
        2
    } else if v < 1 << 30 {
        4
    } else {
        8
    }
}

/// A cursor over received bytes.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Wrap `buf`, starting at offset 0.
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }
    /// Bytes consumed so far.
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Bytes left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// The unread bytes.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }
    /// Whether all bytes were consumed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
    /// Read one byte.
    #[inline]
    pub fn u8(&mut self) -> Result<u8, BufferTooShort> {
        let b = *self.buf.get(self.pos).ok_or(BufferTooShort)?;
        self.pos += 1;
        Ok(b)
    }
    /// Look at the next byte without consuming it.
    #[inline]
    pub fn peek_u8(&self) -> Result<u8, BufferTooShort> {
        self.buf.get(self.pos).copied().ok_or(BufferTooShort)
    }
    /// Read a big-endian u16.
    #[inline]
    pub fn u16(&mut self) -> Result<u16, BufferTooShort> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    /// Read a big-endian u32.
    #[inline]
    pub fn u32(&mut self) -> Result<u32, BufferTooShort> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// Read `n` bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], BufferTooShort> {
        if self.remaining() < n {
            return Err(BufferTooShort);
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    /// Skip `n` bytes.
    #[inline]
    pub fn skip(&mut self, n: usize) -> Result<(), BufferTooShort> {
        self.bytes(n).map(|_| ())
    }
    /// Read a QUIC varint.
    #[inline]
    pub fn varint(&mut self) -> Result<u64, BufferTooShort> {
        let first = self.peek_u8()?;
        let len = 1usize << (first >> 6);
        let b = self.bytes(len)?;
        let mut v = (b[0] & 0x3f) as u64;
        for &x in &b[1..] {
            v = (v << 8) | x as u64;
        }
        Ok(v)
    }
    /// Read a varint length followed by that many bytes.
    #[inline]
    pub fn varint_prefixed(&mut self) -> Result<&'a [u8], BufferTooShort> {
        let len = self.varint()?;
        if len > self.remaining() as u64 {
            return Err(BufferTooShort);
        }
        self.bytes(len as usize)
    }
}

/// A cursor writing into a caller-provided buffer. Writers check capacity and
/// return `BufferTooShort` rather than panic.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    /// Write into `buf` from offset 0.
    #[inline]
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0 }
    }
    /// Bytes written so far.
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Room left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// The written bytes.
    #[inline]
    pub fn written(&self) -> &[u8] {
        &self.buf[..self.pos]
    }
    /// Mutable access to the whole underlying buffer (e.g. to patch a length).
    #[inline]
    pub fn buf_mut(&mut self) -> &mut [u8] {
        self.buf
    }
    /// Write one byte.
    #[inline]
    pub fn u8(&mut self, v: u8) -> Result<(), BufferTooShort> {
        self.bytes(&[v])
    }
    /// Write a big-endian u16.
    #[inline]
    pub fn u16(&mut self, v: u16) -> Result<(), BufferTooShort> {
        self.bytes(&v.to_be_bytes())
    }
    /// Write a big-endian u32.
    #[inline]
    pub fn u32(&mut self, v: u32) -> Result<(), BufferTooShort> {
        self.bytes(&v.to_be_bytes())
    }
    /// Write raw bytes.
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) -> Result<(), BufferTooShort> {
        if self.remaining() < b.len() {
            return Err(BufferTooShort);
        }
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
        Ok(())
    }
    /// Reserve `n` bytes and return them for the caller to fill.
    #[inline]
    pub fn reserve(&mut self, n: usize) -> Result<&mut [u8], BufferTooShort> {
        if self.remaining() < n {
            return Err(BufferTooShort);
        }
        let start = self.pos;
        self.pos += n;
        Ok(&mut self.buf[start..start + n])
    }
    /// Write a varint in its shortest form. Values above VARINT_MAX are a bug in
    /// the caller; they are clamped in release builds rather than corrupting output.
    #[inline]
    pub fn varint(&mut self, v: u64) -> Result<(), BufferTooShort> {
        debug_assert!(v <= VARINT_MAX);
        self.varint_with_len(v.min(VARINT_MAX), varint_len(v.min(VARINT_MAX)))
    }
    /// Write a varint using exactly `len` bytes (1, 2, 4 or 8); used where a
    /// length field is patched in after the payload is written.
    #[inline]
    pub fn varint_with_len(&mut self, v: u64, len: usize) -> Result<(), BufferTooShort> {
        debug_assert!(varint_len(v) <= len);
        let out = self.reserve(len)?;
        encode_varint_into(v, out);
        Ok(())
    }
}

/// Encode `v` into exactly `out.len()` bytes (1, 2, 4 or 8).
#[inline]
pub fn encode_varint_into(v: u64, out: &mut [u8]) {
    let tag: u8 = match out.len() {
        1 => 0x00,
        2 => 0x40,
        4 => 0x80,
        _ => 0xc0,
    };
    let n = out.len();
    for (i, b) in out.iter_mut().enumerate() {
        *b = (v >> (8 * (n - 1 - i))) as u8;
    }
    out[0] |= tag;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_rfc_examples() {
        // RFC 9000 Appendix A.1 examples.
        let cases: &[(&[u8], u64)] = &[
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
            (&[0x40, 0x25], 37),
        ];
        for (bytes, v) in cases {
            assert_eq!(Reader::new(bytes).varint().unwrap(), *v);
        }
        let mut buf = [0u8; 8];
        let mut w = Writer::new(&mut buf);
        w.varint(494_878_333).unwrap();
        assert_eq!(w.written(), &[0x9d, 0x7f, 0x3e, 0x7d]);
    }

    #[test]
    fn truncated_reads_fail() {
        assert_eq!(Reader::new(&[0x9d, 0x7f]).varint(), Err(BufferTooShort));
        assert_eq!(Reader::new(&[]).u8(), Err(BufferTooShort));
        assert_eq!(Reader::new(&[0x05, 1, 2]).varint_prefixed(), Err(BufferTooShort));
        let mut buf = [0u8; 1];
        assert_eq!(Writer::new(&mut buf).varint(300), Err(BufferTooShort));
    }
}
