//! The simulator's stand-in for AES-GCM and ChaCha20-Poly1305 (feature
//! `sim-aead`; only `mpquic-sim` turns it on, through
//! `Config::use_sim_aead`).
//!
//! A simulation never looks at the bytes on its virtual wire, so encrypting
//! them is wasted work (a quarter of the simulator's instructions). This
//! AEAD leaves the payload in clear and appends a 16-byte keyed checksum of
//! key, nonce, associated data and payload: every packet keeps its size, so
//! a simulation's results are the same bytes with either AEAD, and a packet
//! opened with the wrong key, nonce or path, or altered in flight, is still
//! refused. The checksum is a multiply-xor hash, not a MAC: it offers no
//! protection against anyone, which is why a socket build never uses it.

/// An odd 64-bit multiplier (2^64 / golden ratio).
const M0: u64 = 0x9e37_79b9_7f4a_7c15;
/// A second odd multiplier, for the lanes and the final mix.
const M1: u64 = 0xd6e8_feb8_6659_fd93;

/// One key: two 64-bit words folded from the derived key bytes.
#[derive(Clone, Copy)]
pub(super) struct SimAead {
    k0: u64,
    k1: u64,
}

impl SimAead {
    /// A key from the derived key bytes (any length).
    pub(super) fn new(key: &[u8]) -> SimAead {
        let mut h = Lanes::new(0x5151_aead_0000_0001, 0x5151_aead_0000_0002);
        h.absorb(key);
        let (k0, k1) = h.finish(key.len());
        SimAead { k0, k1 }
    }

    /// The tag of `header` and `payload` under `nonce`.
    #[inline]
    pub(super) fn tag(&self, nonce: &[u8; 12], header: &[u8], payload: &[u8]) -> [u8; 16] {
        let mut n = [0u8; 16];
        n[..12].copy_from_slice(nonce);
        let n0 = u64::from_le_bytes(n[..8].try_into().unwrap_or_default());
        let n1 = u64::from_le_bytes(n[8..].try_into().unwrap_or_default());
        let mut h = Lanes::new(self.k0 ^ n0, self.k1 ^ n1);
        // Header and payload are absorbed apart (the header's tail block
        // padded), the header's length separating them.
        h.absorb(header);
        h.mix_word(header.len() as u64);
        h.absorb(payload);
        let (a, b) = h.finish(payload.len());
        let mut tag = [0u8; 16];
        tag[..8].copy_from_slice(&(a ^ self.k1).to_le_bytes());
        tag[8..].copy_from_slice(&(b ^ self.k0).to_le_bytes());
        tag
    }
}

/// Four lanes of 16 bytes each over 64-byte blocks (so their multiplications
/// overlap), then 16-byte pieces, one 8-byte word and the last bytes with
/// their count. Each step is `lane = fold(lane ^ w0, w1 ^ M1)`, the 128-bit
/// product of the two words folded to 64 bits (as wyhash does): any change
/// of either word changes the lane except with probability about 2^-64.
struct Lanes {
    l: [u64; 4],
}

/// The 128-bit product of `a` and `b`, its halves XORed.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

#[inline(always)]
fn word(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

#[inline(always)]
fn step(h: u64, w0: u64, w1: u64) -> u64 {
    fold(h ^ w0, w1 ^ M1)
}

impl Lanes {
    fn new(a: u64, b: u64) -> Lanes {
        Lanes { l: [a, b, a.rotate_left(32) ^ M1, b.rotate_left(32) ^ M0] }
    }

    #[inline(always)]
    fn mix_word(&mut self, w: u64) {
        self.l[0] = step(self.l[0], w, M0);
    }

    #[inline]
    fn absorb(&mut self, data: &[u8]) {
        let mut blocks = data.chunks_exact(64);
        // Four scalar chains in locals: kept in an array, LLVM's SLP
        // vectorizer shuffled them between vector and general registers
        // around each multiplication (twice the instructions).
        let [mut l0, mut l1, mut l2, mut l3] = self.l;
        for b in &mut blocks {
            l0 = step(l0, word(b, 0), word(b, 8));
            l1 = step(l1, word(b, 16), word(b, 24));
            l2 = step(l2, word(b, 32), word(b, 40));
            l3 = step(l3, word(b, 48), word(b, 56));
        }
        self.l = [l0, l1, l2, l3];
        let rest = blocks.remainder();
        let mut pieces = rest.chunks_exact(16);
        for (i, p) in (&mut pieces).enumerate() {
            self.l[i] = step(self.l[i], word(p, 0), word(p, 8));
        }
        let tail = pieces.remainder();
        let mut w = [0u8; 16];
        w[..tail.len()].copy_from_slice(tail);
        // The tail's length keeps "ab" and "ab\0" apart.
        self.l[3] = step(self.l[3], word(&w, 0), word(&w, 8) ^ ((tail.len() as u64) << 56));
    }

    /// Two words from the four lanes and the total length.
    fn finish(&self, len: usize) -> (u64, u64) {
        let [a, b, c, d] = self.l;
        let x = fold(a ^ M0, c ^ len as u64 ^ M1);
        let y = fold(b ^ M1, d ^ x);
        (fold(x ^ M1, y ^ M0), fold(y ^ M0, x ^ d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_input_changes_the_tag() {
        let k = SimAead::new(&[7; 16]);
        let nonce = [3u8; 12];
        let header = [0x41u8, 1, 2, 3, 4];
        let payload: Vec<u8> = (0..1200u32).map(|i| i as u8).collect();
        let tag = k.tag(&nonce, &header, &payload);
        assert_ne!(SimAead::new(&[8; 16]).tag(&nonce, &header, &payload), tag);
        for i in 0..12 {
            let mut n = nonce;
            n[i] ^= 1;
            assert_ne!(k.tag(&n, &header, &payload), tag, "nonce byte {i}");
        }
        for i in 0..header.len() {
            let mut h = header;
            h[i] ^= 0x80;
            assert_ne!(k.tag(&nonce, &h, &payload), tag, "header byte {i}");
        }
        for i in 0..payload.len() {
            for bit in [0x01, 0x80] {
                let mut p = payload.clone();
                p[i] ^= bit;
                assert_ne!(k.tag(&nonce, &header, &p), tag, "payload byte {i}");
            }
        }
        // Lengths: a trailing zero byte, and bytes moved between AAD and payload.
        for n in 0..payload.len() {
            let (mut p, q) = (payload[..n].to_vec(), payload[..n].to_vec());
            p.push(0);
            assert_ne!(k.tag(&nonce, &header, &p), k.tag(&nonce, &header, &q), "length {n}");
        }
        let moved = [&[4u8], &payload[..]].concat();
        assert_ne!(k.tag(&nonce, &header[..4], &moved), tag);
    }
}
