//! Header protection (RFC 9001 §5.4).
//!
//! The AES variant keeps a pre-expanded `AES_KEY` and encrypts one block;
//! the ChaCha20 variant runs `CRYPTO_chacha_20` over five zero bytes. Neither
//! allocates. Header keys do not change on key update (RFC 9001 §6).

use super::{Algorithm, CryptoError};

/// Bytes of ciphertext sampled for the header-protection mask.
pub const SAMPLE_LEN: usize = 16;

/// A header-protection key.
#[derive(Clone)]
pub enum HeaderKey {
    /// AES-128 or AES-256 in ECB mode on the sample.
    Aes(Box<boring_sys::AES_KEY>),
    /// ChaCha20 with counter and nonce taken from the sample.
    ChaCha([u8; 32]),
}

impl std::fmt::Debug for HeaderKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HeaderKey::Aes(_) => "HeaderKey::Aes",
            HeaderKey::ChaCha(_) => "HeaderKey::ChaCha",
        })
    }
}

impl HeaderKey {
    /// A header key for `alg` from `key` (of `alg.key_len()` bytes).
    pub fn new(alg: Algorithm, key: &[u8]) -> Result<HeaderKey, CryptoError> {
        if key.len() != alg.key_len() {
            return Err(CryptoError::BadKey);
        }
        match alg {
            Algorithm::Aes128Gcm | Algorithm::Aes256Gcm => {
                let mut ks = Box::new(boring_sys::AES_KEY { rd_key: [0; 60], rounds: 0 });
                // SAFETY: key is valid for key.len() bytes and ks is writable.
                let rc = unsafe {
                    boring_sys::AES_set_encrypt_key(key.as_ptr(), (key.len() * 8) as u32, &mut *ks)
                };
                if rc != 0 {
                    return Err(CryptoError::BadKey);
                }
                Ok(HeaderKey::Aes(ks))
            }
            Algorithm::ChaCha20Poly1305 => {
                let k: [u8; 32] = key.try_into().map_err(|_| CryptoError::BadKey)?;
                Ok(HeaderKey::ChaCha(k))
            }
        }
    }

    /// The 5-byte mask for `sample` (at least [`SAMPLE_LEN`] bytes; only the
    /// first 16 are used).
    #[inline]
    pub fn mask(&self, sample: &[u8]) -> Result<[u8; 5], CryptoError> {
        let sample: &[u8; SAMPLE_LEN] =
            sample.get(..SAMPLE_LEN).and_then(|s| s.try_into().ok()).ok_or(CryptoError::BufferTooShort)?;
        let mut out = [0u8; 5];
        match self {
            HeaderKey::Aes(ks) => {
                let mut block = [0u8; 16];
                // SAFETY: sample and block are 16-byte buffers; ks is an
                // expanded encryption key.
                unsafe { boring_sys::AES_encrypt(sample.as_ptr(), block.as_mut_ptr(), &**ks) };
                out.copy_from_slice(&block[..5]);
            }
            HeaderKey::ChaCha(key) => {
                let counter = u32::from_le_bytes([sample[0], sample[1], sample[2], sample[3]]);
                let zeros = [0u8; 5];
                // SAFETY: out/zeros are 5 bytes, key 32, nonce 12.
                unsafe {
                    boring_sys::CRYPTO_chacha_20(
                        out.as_mut_ptr(),
                        zeros.as_ptr(),
                        zeros.len(),
                        key.as_ptr(),
                        sample[4..].as_ptr(),
                        counter,
                    )
                };
            }
        }
        Ok(out)
    }
}

/// Which bits of the first byte are protected: 4 for long headers, 5 for
/// short headers.
#[inline]
fn first_byte_mask(first: u8) -> u8 {
    if first & 0x80 != 0 {
        0x0f
    } else {
        0x1f
    }
}

/// Removes header protection from a received packet in place (RFC 9001
/// §5.4.2): `buf` starts at the packet's first byte and `pn_offset` is where
/// the Packet Number field starts. The sample is taken at `pn_offset + 4`.
/// Returns the packet-number length (1..=4) and the truncated packet number.
/// Fails with `BufferTooShort` (packet must be dropped) when the packet is too
/// short to hold a sample; `buf` is then left unchanged.
pub fn remove_header_protection(
    buf: &mut [u8],
    pn_offset: usize,
    key: &HeaderKey,
) -> Result<(usize, u64), CryptoError> {
    let sample_at = pn_offset.checked_add(4).ok_or(CryptoError::BufferTooShort)?;
    let sample_end = sample_at.checked_add(SAMPLE_LEN).ok_or(CryptoError::BufferTooShort)?;
    let sample = buf.get(sample_at..sample_end).ok_or(CryptoError::BufferTooShort)?;
    let mask = key.mask(sample)?;
    let first = buf.first_mut().ok_or(CryptoError::BufferTooShort)?;
    *first ^= mask[0] & first_byte_mask(*first);
    let pn_len = usize::from(*first & 0x03) + 1;
    // The sample lies after pn_offset + 4, so these bytes exist.
    let pn_bytes = buf.get_mut(pn_offset..pn_offset + pn_len).ok_or(CryptoError::BufferTooShort)?;
    let mut pn = 0u64;
    for (b, m) in pn_bytes.iter_mut().zip(&mask[1..]) {
        *b ^= m;
        pn = (pn << 8) | u64::from(*b);
    }
    Ok((pn_len, pn))
}

/// Applies header protection to a sealed packet in place (RFC 9001 §5.4.1):
/// `buf` holds the whole packet (header, ciphertext and tag), the Packet
/// Number field starts at `pn_offset` and is `pn_len` (1..=4) bytes long.
pub fn apply_header_protection(
    buf: &mut [u8],
    pn_offset: usize,
    pn_len: usize,
    key: &HeaderKey,
) -> Result<(), CryptoError> {
    if !(1..=4).contains(&pn_len) {
        return Err(CryptoError::BufferTooShort);
    }
    let sample_at = pn_offset.checked_add(4).ok_or(CryptoError::BufferTooShort)?;
    let sample_end = sample_at.checked_add(SAMPLE_LEN).ok_or(CryptoError::BufferTooShort)?;
    let sample = buf.get(sample_at..sample_end).ok_or(CryptoError::BufferTooShort)?;
    let mask = key.mask(sample)?;
    let first = buf.first_mut().ok_or(CryptoError::BufferTooShort)?;
    *first ^= mask[0] & first_byte_mask(*first);
    let pn_bytes = buf.get_mut(pn_offset..pn_offset + pn_len).ok_or(CryptoError::BufferTooShort)?;
    for (b, m) in pn_bytes.iter_mut().zip(&mask[1..]) {
        *b ^= m;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::test_util::hex;

    #[test]
    fn aes_mask_client_initial() {
        // RFC 9001 A.2.
        let hp = HeaderKey::new(Algorithm::Aes128Gcm, &hex("9f50449e04a0e810283a1e9933adedd2")).unwrap();
        let mask = hp.mask(&hex("d1b1c98dd7689fb8ec11d242b123dc9b")).unwrap();
        assert_eq!(mask.to_vec(), hex("437b9aec36"));
    }

    #[test]
    fn aes_mask_server_initial() {
        // RFC 9001 A.3.
        let hp = HeaderKey::new(Algorithm::Aes128Gcm, &hex("c206b8d9b9f0f37644430b490eeaa314")).unwrap();
        let mask = hp.mask(&hex("2cd0991cd25b0aac406a5816b6394100")).unwrap();
        assert_eq!(mask.to_vec(), hex("2ec0d8356a"));
    }

    #[test]
    fn chacha_short_header() {
        // RFC 9001 A.5.
        let hp = HeaderKey::new(
            Algorithm::ChaCha20Poly1305,
            &hex("25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4"),
        )
        .unwrap();
        assert_eq!(hp.mask(&hex("5e5cd55c41f69080575d7999c25a5bfb")).unwrap().to_vec(), hex("aefefe7d03"));
        let mut pkt = hex("4200bff4655e5cd55c41f69080575d7999c25a5bfb");
        apply_header_protection(&mut pkt, 1, 3, &hp).unwrap();
        assert_eq!(pkt, hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb"));
        assert_eq!(remove_header_protection(&mut pkt, 1, &hp), Ok((3, 49140)));
        assert_eq!(pkt, hex("4200bff4655e5cd55c41f69080575d7999c25a5bfb"));
    }

    #[test]
    fn too_short_is_an_error_not_a_panic() {
        let hp = HeaderKey::new(Algorithm::Aes128Gcm, &[1; 16]).unwrap();
        let mut pkt = vec![0x40u8; 20];
        let orig = pkt.clone();
        assert_eq!(remove_header_protection(&mut pkt, 1, &hp), Err(CryptoError::BufferTooShort));
        assert_eq!(remove_header_protection(&mut pkt, usize::MAX, &hp), Err(CryptoError::BufferTooShort));
        assert_eq!(apply_header_protection(&mut pkt, 1, 5, &hp), Err(CryptoError::BufferTooShort));
        assert_eq!(pkt, orig);
        assert_eq!(hp.mask(&[0; 15]), Err(CryptoError::BufferTooShort));
        assert!(HeaderKey::new(Algorithm::Aes256Gcm, &[1; 16]).is_err());
    }
}
