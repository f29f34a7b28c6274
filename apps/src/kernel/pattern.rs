//! The generated body the kernel bulk tool sends and checks: byte `i` is
//! `i mod 251`, the simulator's body (`sim/src/app.rs`), so both tools check
//! downloads the same way. The period is prime and divides no segment or
//! buffer size, so bytes delivered at a wrong offset, twice or not at all
//! show up as mismatches.

/// Period of the body.
const PERIOD: usize = 251;
/// Largest slice handed out at once.
pub const CHUNK: usize = 256 * 1024;

/// The body, from any offset, without storing it.
pub struct Pattern {
    buf: Vec<u8>,
}

impl Default for Pattern {
    fn default() -> Self {
        Pattern { buf: (0..CHUNK + PERIOD).map(|i| (i % PERIOD) as u8).collect() }
    }
}

impl Pattern {
    /// The body from `offset` on, `min(n, CHUNK)` bytes.
    pub fn at(&self, offset: u64, n: usize) -> &[u8] {
        let start = (offset % PERIOD as u64) as usize;
        &self.buf[start..start + n.min(CHUNK)]
    }

    /// Bytes of `data`, received at body offset `offset`, that differ from the body.
    pub fn mismatches(&self, offset: u64, data: &[u8]) -> u64 {
        let mut bad = 0;
        let mut off = offset;
        for part in data.chunks(CHUNK) {
            let want = self.at(off, part.len());
            // Matching is the common case: one comparison, no byte loop.
            if want != part {
                bad += want.iter().zip(part).filter(|(a, b)| a != b).count() as u64;
            }
            off += part.len() as u64;
        }
        bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_is_periodic_from_any_offset() {
        let p = Pattern::default();
        assert_eq!(p.at(0, 3), &[0, 1, 2]);
        assert_eq!(p.at(250, 3), &[250, 0, 1]);
        assert_eq!(p.at(251 * 1000 + 5, 1), &[5]);
        assert_eq!(p.at(7, CHUNK + 10).len(), CHUNK);
    }

    #[test]
    fn mismatches_counts_wrong_bytes_only() {
        let p = Pattern::default();
        let mut data: Vec<u8> = (1000u64..1000 + 3 * CHUNK as u64).map(|i| (i % 251) as u8).collect();
        assert_eq!(p.mismatches(1000, &data), 0);
        data[5] ^= 1;
        data[2 * CHUNK + 1] ^= 0xff;
        assert_eq!(p.mismatches(1000, &data), 2);
        // Shifted by one byte: everything differs.
        assert_eq!(p.mismatches(1001, &data[..251]), 251);
    }
}
