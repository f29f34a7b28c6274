//! AEAD packet protection (RFC 9001 §5.3) with the multipath nonce
//! (draft-ietf-quic-multipath-21 §2.4).
//!
//! Each [`PacketKey`] owns one `EVP_AEAD_CTX`, initialised once when the key
//! is installed, so sealing and opening a packet is a single BoringSSL call
//! working in place, with no allocation and no copy.

use std::ptr::NonNull;

use super::{Algorithm, CryptoError};

/// Length of the authentication tag of every QUIC v1 AEAD.
pub const TAG_LEN: usize = 16;

/// An owned `EVP_AEAD_CTX` (heap-allocated by BoringSSL so that its
/// internal state keeps the alignment BoringSSL wants).
struct AeadCtx(NonNull<boring_sys::EVP_AEAD_CTX>);

impl Drop for AeadCtx {
    fn drop(&mut self) {
        // SAFETY: the pointer came from EVP_AEAD_CTX_new and is freed once.
        unsafe { boring_sys::EVP_AEAD_CTX_free(self.0.as_ptr()) }
    }
}

// SAFETY: after initialisation BoringSSL only reads the context (seal/open
// take a const pointer), so it may be shared and sent between threads.
unsafe impl Send for AeadCtx {}
// SAFETY: see above.
unsafe impl Sync for AeadCtx {}

/// The nonce for packet number `pn` on path `path_id`: the IV XORed with the
/// 96-bit path-and-packet-number (path ID in bytes 0..4, packet number in
/// bytes 4..12), draft-ietf-quic-multipath-21 §2.4. For path 0 this is the
/// RFC 9001 §5.3 nonce; callers pass 0 for every packet that is not a 1-RTT
/// packet of a multipath connection.
#[inline]
pub fn nonce_for(iv: &[u8; 12], pn: u64, path_id: u32) -> [u8; 12] {
    let mut nonce = *iv;
    // The packet number is at most 2^62-1, so its two top bits stay zero as
    // the draft's PPN layout requires.
    for (n, p) in nonce[4..].iter_mut().zip(pn.to_be_bytes()) {
        *n ^= p;
    }
    for (n, p) in nonce[..4].iter_mut().zip(path_id.to_be_bytes()) {
        *n ^= p;
    }
    nonce
}

/// One direction's packet-protection key and IV for one key phase.
pub struct PacketKey {
    imp: Imp,
    iv: [u8; 12],
    alg: Algorithm,
}

/// BoringSSL's AEAD, or the simulator's checksum (see `sim_aead`).
enum Imp {
    Boring(AeadCtx),
    #[cfg(feature = "sim-aead")]
    Sim(super::sim_aead::SimAead),
}

impl std::fmt::Debug for PacketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.debug_struct("PacketKey").field("alg", &self.alg).finish_non_exhaustive()
    }
}

impl PacketKey {
    /// A key for `alg` from raw key and IV bytes (lengths must match the
    /// algorithm: `alg.key_len()` and 12).
    pub fn new(alg: Algorithm, key: &[u8], iv: &[u8]) -> Result<PacketKey, CryptoError> {
        if key.len() != alg.key_len() {
            return Err(CryptoError::BadKey);
        }
        let iv: [u8; 12] = iv.try_into().map_err(|_| CryptoError::BadKey)?;
        // SAFETY: key is valid for key.len() bytes; the AEAD table is static.
        let raw = unsafe { boring_sys::EVP_AEAD_CTX_new(alg.evp(), key.as_ptr(), key.len(), TAG_LEN) };
        let ctx = NonNull::new(raw).ok_or(CryptoError::BadKey)?;
        Ok(PacketKey { imp: Imp::Boring(AeadCtx(ctx)), iv, alg })
    }

    /// The simulator's key for `alg`: same lengths and tag size, payload
    /// left in clear, tag a keyed checksum (see `sim_aead`).
    #[cfg(feature = "sim-aead")]
    pub(super) fn sim(alg: Algorithm, key: &[u8], iv: &[u8]) -> Result<PacketKey, CryptoError> {
        if key.len() != alg.key_len() {
            return Err(CryptoError::BadKey);
        }
        let iv: [u8; 12] = iv.try_into().map_err(|_| CryptoError::BadKey)?;
        Ok(PacketKey { imp: Imp::Sim(super::sim_aead::SimAead::new(key)), iv, alg })
    }

    /// Whether this is the simulator's AEAD.
    pub fn is_sim(&self) -> bool {
        match self.imp {
            Imp::Boring(_) => false,
            #[cfg(feature = "sim-aead")]
            Imp::Sim(_) => true,
        }
    }

    /// The AEAD this key uses.
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// The raw context, for the token code that brings its own nonces
    /// (a BoringSSL key only).
    pub(super) fn ctx_ptr(&self) -> Result<*const boring_sys::EVP_AEAD_CTX, CryptoError> {
        match &self.imp {
            Imp::Boring(ctx) => Ok(ctx.0.as_ptr()),
            #[cfg(feature = "sim-aead")]
            Imp::Sim(_) => Err(CryptoError::Internal),
        }
    }

    /// The IV (needed by tests and diagnostics only).
    pub fn iv(&self) -> &[u8; 12] {
        &self.iv
    }

    /// Encrypts `payload` in place and writes the tag to `tag_out`, with
    /// `header` as associated data.
    pub fn seal_in_place(
        &self,
        pn: u64,
        path_id: u32,
        header: &[u8],
        payload: &mut [u8],
        tag_out: &mut [u8; TAG_LEN],
    ) -> Result<(), CryptoError> {
        let nonce = nonce_for(&self.iv, pn, path_id);
        let ctx = match &self.imp {
            Imp::Boring(ctx) => ctx.0.as_ptr(),
            #[cfg(feature = "sim-aead")]
            Imp::Sim(k) => {
                *tag_out = k.tag(&nonce, header, payload);
                return Ok(());
            }
        };
        let mut tag_len = 0usize;
        // SAFETY: all pointers are valid for the lengths given; BoringSSL
        // allows `out` to alias `in` exactly, which is how we encrypt in place.
        let ok = unsafe {
            boring_sys::EVP_AEAD_CTX_seal_scatter(
                ctx,
                payload.as_mut_ptr(),
                tag_out.as_mut_ptr(),
                &mut tag_len,
                TAG_LEN,
                nonce.as_ptr(),
                nonce.len(),
                payload.as_ptr(),
                payload.len(),
                std::ptr::null(),
                0,
                header.as_ptr(),
                header.len(),
            )
        };
        if ok != 1 || tag_len != TAG_LEN {
            return Err(CryptoError::Internal);
        }
        Ok(())
    }

    /// Seals a whole packet laid out in one buffer:
    /// `packet = header (header_len bytes) | plaintext | TAG_LEN spare bytes`.
    /// The plaintext is encrypted in place and the tag fills the last
    /// `TAG_LEN` bytes. This is the copy-free way for a packet builder that
    /// reserves room for the tag while writing frames.
    pub fn seal_packet(
        &self,
        pn: u64,
        path_id: u32,
        packet: &mut [u8],
        header_len: usize,
    ) -> Result<(), CryptoError> {
        if packet.len() < header_len.saturating_add(TAG_LEN) {
            return Err(CryptoError::BufferTooShort);
        }
        let (header, rest) = packet.split_at_mut(header_len);
        let (payload, tag) = rest.split_at_mut(rest.len() - TAG_LEN);
        let tag: &mut [u8; TAG_LEN] = tag.try_into().map_err(|_| CryptoError::BufferTooShort)?;
        self.seal_in_place(pn, path_id, header, payload, tag)
    }

    /// Decrypts `payload_and_tag` (ciphertext followed by the tag) in place,
    /// with `header` as associated data. Returns the plaintext length: the
    /// plaintext is `payload_and_tag[..len]`. On failure the buffer's
    /// contents are unspecified (BoringSSL may have decrypted into it), so a
    /// caller that wants to retry with another key must keep a copy.
    pub fn open_in_place(
        &self,
        pn: u64,
        path_id: u32,
        header: &[u8],
        payload_and_tag: &mut [u8],
    ) -> Result<usize, CryptoError> {
        if payload_and_tag.len() < TAG_LEN {
            return Err(CryptoError::BufferTooShort);
        }
        let nonce = nonce_for(&self.iv, pn, path_id);
        let ctx = match &self.imp {
            Imp::Boring(ctx) => ctx.0.as_ptr(),
            #[cfg(feature = "sim-aead")]
            Imp::Sim(k) => {
                let (payload, tag) = payload_and_tag.split_at(payload_and_tag.len() - TAG_LEN);
                return if k.tag(&nonce, header, payload) == *tag {
                    Ok(payload.len())
                } else {
                    Err(CryptoError::DecryptFailed)
                };
            }
        };
        let mut out_len = 0usize;
        // SAFETY: pointers valid for the given lengths; `out` aliases `in`
        // exactly, which BoringSSL permits.
        let ok = unsafe {
            boring_sys::EVP_AEAD_CTX_open(
                ctx,
                payload_and_tag.as_mut_ptr(),
                &mut out_len,
                payload_and_tag.len(),
                nonce.as_ptr(),
                nonce.len(),
                payload_and_tag.as_ptr(),
                payload_and_tag.len(),
                header.as_ptr(),
                header.len(),
            )
        };
        if ok != 1 {
            // Authentication failures leave an error on BoringSSL's
            // thread-local queue; drop it so it is not blamed on TLS later.
            // SAFETY: plain call.
            unsafe { boring_sys::ERR_clear_error() };
            return Err(CryptoError::DecryptFailed);
        }
        Ok(out_len)
    }

    /// Opens a whole packet `header (header_len bytes) | ciphertext | tag` in
    /// place; returns the plaintext length, the plaintext being
    /// `packet[header_len..header_len + len]`.
    pub fn open_packet(
        &self,
        pn: u64,
        path_id: u32,
        packet: &mut [u8],
        header_len: usize,
    ) -> Result<usize, CryptoError> {
        if packet.len() < header_len.saturating_add(TAG_LEN) {
            return Err(CryptoError::BufferTooShort);
        }
        let (header, rest) = packet.split_at_mut(header_len);
        self.open_in_place(pn, path_id, header, rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::test_util::hex;

    #[test]
    fn multipath_nonce_example() {
        // draft-ietf-quic-multipath-21 §2.4 example.
        let iv: [u8; 12] = hex("6b26114b9cba2b63a9e8dd4f").try_into().unwrap();
        assert_eq!(nonce_for(&iv, 54321, 3).to_vec(), hex("6b2611489cba2b63a9e8097e"));
        // Path 0 is the RFC 9001 nonce: IV XOR left-padded packet number.
        assert_eq!(nonce_for(&iv, 0xd431, 0).to_vec(), hex("6b26114b9cba2b63a9e8097e"));
    }

    #[test]
    fn chacha_short_header_payload() {
        // RFC 9001 A.5 (payload part; header protection is tested in hp.rs).
        let key = hex("c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8");
        let iv = hex("e0459b3474bdd0e44a41c144");
        let k = PacketKey::new(Algorithm::ChaCha20Poly1305, &key, &iv).unwrap();
        assert_eq!(nonce_for(k.iv(), 654360564, 0).to_vec(), hex("e0459b3474bdd0e46d417eb0"));
        let mut pkt = hex("4200bff4 01 00000000000000000000000000000000");
        k.seal_packet(654360564, 0, &mut pkt, 4).unwrap();
        assert_eq!(pkt[4..].to_vec(), hex("655e5cd55c41f69080575d7999c25a5bfb"));
        let n = k.open_packet(654360564, 0, &mut pkt, 4).unwrap();
        assert_eq!(n, 1);
        assert_eq!(pkt[4], 0x01);
    }

    #[test]
    fn path_id_changes_ciphertext_and_is_authenticated() {
        let k = PacketKey::new(Algorithm::Aes128Gcm, &[7u8; 16], &[9u8; 12]).unwrap();
        let header = [0x40u8, 1, 2, 3];
        let mut a = *b"hello multipath world";
        let mut b = a;
        let mut ta = [0u8; 16];
        let mut tb = [0u8; 16];
        k.seal_in_place(5, 0, &header, &mut a, &mut ta).unwrap();
        k.seal_in_place(5, 1, &header, &mut b, &mut tb).unwrap();
        assert_ne!(a, b);
        // Opening with the wrong path ID fails, the right one succeeds.
        let mut buf = [a.as_slice(), ta.as_slice()].concat();
        let mut copy = buf.clone();
        assert_eq!(k.open_in_place(5, 1, &header, &mut copy), Err(CryptoError::DecryptFailed));
        let n = k.open_in_place(5, 0, &header, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello multipath world");
    }

    #[test]
    fn tampering_fails() {
        for alg in [Algorithm::Aes128Gcm, Algorithm::Aes256Gcm, Algorithm::ChaCha20Poly1305] {
            let k = PacketKey::new(alg, &vec![3u8; alg.key_len()], &[1u8; 12]).unwrap();
            let mut pkt = vec![0u8; 3 + 10 + TAG_LEN];
            pkt[..3].copy_from_slice(&[0x41, 0, 1]);
            pkt[3..13].copy_from_slice(b"0123456789");
            k.seal_packet(1, 0, &mut pkt, 3).unwrap();
            for i in 0..pkt.len() {
                let mut bad = pkt.clone();
                bad[i] ^= 0x20;
                assert_eq!(k.open_packet(1, 0, &mut bad, 3), Err(CryptoError::DecryptFailed));
            }
            assert_eq!(k.open_packet(2, 0, &mut pkt.clone(), 3), Err(CryptoError::DecryptFailed));
            assert_eq!(k.open_packet(1, 0, &mut pkt, 3), Ok(10));
        }
    }

    #[cfg(feature = "sim-aead")]
    #[test]
    fn sim_aead_keeps_sizes_and_refuses_tampering() {
        let real = PacketKey::new(Algorithm::Aes128Gcm, &[3u8; 16], &[1u8; 12]).unwrap();
        let k = PacketKey::sim(Algorithm::Aes128Gcm, &[3u8; 16], &[1u8; 12]).unwrap();
        assert!(k.is_sim() && !real.is_sim());
        assert!(k.ctx_ptr().is_err(), "no token may be sealed with it");
        for len in [0, 1, 10, 63, 64, 65, 1200] {
            let mut pkt = vec![0u8; 3 + len + TAG_LEN];
            pkt[..3].copy_from_slice(&[0x41, 0, 1]);
            for (i, b) in pkt[3..3 + len].iter_mut().enumerate() {
                *b = i as u8;
            }
            let plain = pkt.clone();
            k.seal_packet(1, 0, &mut pkt, 3).unwrap();
            // Payload left in clear; only the tag is written.
            assert_eq!(pkt[..3 + len], plain[..3 + len]);
            for i in 0..pkt.len() {
                let mut bad = pkt.clone();
                bad[i] ^= 0x20;
                assert_eq!(
                    k.open_packet(1, 0, &mut bad, 3),
                    Err(CryptoError::DecryptFailed),
                    "len {len} byte {i}"
                );
            }
            assert_eq!(k.open_packet(2, 0, &mut pkt.clone(), 3), Err(CryptoError::DecryptFailed));
            assert_eq!(k.open_packet(1, 1, &mut pkt.clone(), 3), Err(CryptoError::DecryptFailed));
            let other = PacketKey::sim(Algorithm::Aes128Gcm, &[4u8; 16], &[1u8; 12]).unwrap();
            assert_eq!(other.open_packet(1, 0, &mut pkt.clone(), 3), Err(CryptoError::DecryptFailed));
            assert_eq!(real.open_packet(1, 0, &mut pkt.clone(), 3), Err(CryptoError::DecryptFailed));
            assert_eq!(k.open_packet(1, 0, &mut pkt, 3), Ok(len));
        }
    }

    #[test]
    fn bad_lengths() {
        assert_eq!(PacketKey::new(Algorithm::Aes128Gcm, &[0; 15], &[0; 12]).err(), Some(CryptoError::BadKey));
        assert_eq!(PacketKey::new(Algorithm::Aes128Gcm, &[0; 16], &[0; 11]).err(), Some(CryptoError::BadKey));
        let k = PacketKey::new(Algorithm::Aes128Gcm, &[0; 16], &[0; 12]).unwrap();
        assert_eq!(k.open_in_place(0, 0, &[], &mut [0u8; 15]), Err(CryptoError::BufferTooShort));
        assert_eq!(k.seal_packet(0, 0, &mut [0u8; 18], 3), Err(CryptoError::BufferTooShort));
        // Empty payload is fine.
        let mut pkt = [0u8; 3 + TAG_LEN];
        k.seal_packet(0, 0, &mut pkt, 3).unwrap();
        assert_eq!(k.open_packet(0, 0, &mut pkt, 3), Ok(0));
    }
}
