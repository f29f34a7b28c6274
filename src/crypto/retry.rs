//! Retry integrity (RFC 9001 §5.8), address-validation tokens (RFC 9000
//! §8.1) and stateless reset tokens (RFC 9000 §10.3.2).

use std::sync::OnceLock;

use super::{constant_time_eq, fill_random, Algorithm, CryptoError, PacketKey, TAG_LEN};
use crate::version::Version;

/// Length of a stateless reset token.
pub const RESET_TOKEN_LEN: usize = 16;

fn retry_key(version: Version) -> Result<&'static PacketKey, CryptoError> {
    static KEYS: [OnceLock<Option<PacketKey>>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = &KEYS[usize::from(version == Version::V2)];
    slot.get_or_init(|| {
        let (key, nonce) = version.retry_key_nonce();
        PacketKey::new(Algorithm::Aes128Gcm, key, nonce).ok()
    })
    .as_ref()
    .ok_or(CryptoError::Internal)
}

/// The Retry Integrity Tag over a Retry pseudo-packet (RFC 9001 §5.8,
/// RFC 9369 §3.3.3): AES-128-GCM with the version's fixed key and nonce,
/// empty plaintext and the pseudo-packet (ODCID length, ODCID, Retry packet
/// without tag) as associated data.
pub fn retry_integrity_tag(version: Version, pseudo_packet: &[u8]) -> Result<[u8; TAG_LEN], CryptoError> {
    let mut tag = [0u8; TAG_LEN];
    // The fixed nonce is the IV, so packet number 0 on path 0 leaves it as is.
    retry_key(version)?.seal_in_place(0, 0, pseudo_packet, &mut [], &mut tag)?;
    Ok(tag)
}

/// The Retry Integrity Tag for a Retry packet of `version`
/// (`retry_without_tag`: every byte of the packet before the tag)
/// answering a client Initial whose Destination Connection ID was `odcid`.
pub fn retry_tag_for(
    version: Version,
    odcid: &[u8],
    retry_without_tag: &[u8],
) -> Result<[u8; TAG_LEN], CryptoError> {
    let odcid_len = u8::try_from(odcid.len()).map_err(|_| CryptoError::BufferTooShort)?;
    let mut pseudo = Vec::with_capacity(1 + odcid.len() + retry_without_tag.len());
    pseudo.push(odcid_len);
    pseudo.extend_from_slice(odcid);
    pseudo.extend_from_slice(retry_without_tag);
    retry_integrity_tag(version, &pseudo)
}

/// Whether a received Retry packet of `version` (whole datagram payload,
/// tag last) carries a valid integrity tag for the `odcid` the client sent.
pub fn verify_retry(version: Version, odcid: &[u8], retry_packet: &[u8]) -> bool {
    let Some(split) = retry_packet.len().checked_sub(TAG_LEN) else {
        return false;
    };
    let (body, tag) = retry_packet.split_at(split);
    match retry_tag_for(version, odcid, body) {
        Ok(expected) => constant_time_eq(&expected, tag),
        Err(_) => false,
    }
}

/// A stateless reset token for a connection ID (RFC 9000 §10.3.2):
/// HMAC-SHA256(static_key, cid) truncated to 16 bytes, so a server can
/// recompute it after losing state.
pub fn reset_token(static_key: &[u8; 32], cid: &[u8]) -> [u8; RESET_TOKEN_LEN] {
    let mut mac = [0u8; 32];
    let mut mac_len: std::os::raw::c_uint = 0;
    // SAFETY: all buffers valid for the lengths passed; mac holds a SHA-256
    // output.
    unsafe {
        boring_sys::HMAC(
            boring_sys::EVP_sha256(),
            static_key.as_ptr().cast(),
            static_key.len(),
            cid.as_ptr(),
            cid.len(),
            mac.as_mut_ptr(),
            &mut mac_len,
        );
    }
    let mut out = [0u8; RESET_TOKEN_LEN];
    out.copy_from_slice(&mac[..RESET_TOKEN_LEN]);
    out
}

/// Layout: version (1) | nonce (12) | AEAD(odcid_len (1) | odcid | issued_at (8)) | tag (16).
const TOKEN_VERSION: u8 = 1;
const TOKEN_NONCE_LEN: usize = 12;
const MAX_CID_LEN: usize = 20;

/// A server's secret for address-validation tokens (Retry and NEW_TOKEN).
/// Tokens are AES-256-GCM sealed with a random nonce and bound to the client
/// address as associated data, so forged, altered or replayed-elsewhere
/// tokens fail to open.
pub struct TokenKey {
    key: PacketKey,
}

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKey")
    }
}

impl TokenKey {
    /// A fresh random key (tokens do not survive a restart).
    pub fn new() -> Result<TokenKey, CryptoError> {
        let mut raw = [0u8; 32];
        fill_random(&mut raw);
        Self::from_bytes(&raw)
    }

    /// A key from stored bytes, for servers that share tokens across
    /// restarts or instances.
    pub fn from_bytes(raw: &[u8; 32]) -> Result<TokenKey, CryptoError> {
        // The IV is unused: each token carries its own random nonce.
        Ok(TokenKey { key: PacketKey::new(Algorithm::Aes256Gcm, raw, &[0; 12])? })
    }

    /// A token for the client at `addr` (any stable byte encoding of its IP
    /// and port), recording the original Destination CID (empty for
    /// NEW_TOKEN tokens) and the caller's notion of the issue time.
    pub fn seal(&self, addr: &[u8], odcid: &[u8], issued_at: u64) -> Vec<u8> {
        let odcid = &odcid[..odcid.len().min(MAX_CID_LEN)];
        let mut nonce = [0u8; TOKEN_NONCE_LEN];
        fill_random(&mut nonce);
        let mut tok = Vec::with_capacity(1 + TOKEN_NONCE_LEN + 1 + odcid.len() + 8 + TAG_LEN);
        tok.push(TOKEN_VERSION);
        tok.extend_from_slice(&nonce);
        let body = tok.len();
        tok.push(odcid.len() as u8);
        tok.extend_from_slice(odcid);
        tok.extend_from_slice(&issued_at.to_be_bytes());
        tok.resize(tok.len() + TAG_LEN, 0);
        let (head, rest) = tok.split_at_mut(body);
        let (plain, tag) = rest.split_at_mut(rest.len() - TAG_LEN);
        if let Ok(tag) = <&mut [u8; TAG_LEN]>::try_from(tag) {
            if self.seal_raw(&nonce, addr, head, plain, tag).is_ok() {
                return tok;
            }
        }
        // Sealing cannot fail for valid lengths; an unusable token is the
        // safe fallback (it will simply fail to open).
        Vec::new()
    }

    fn seal_raw(
        &self,
        nonce: &[u8; TOKEN_NONCE_LEN],
        addr: &[u8],
        head: &[u8],
        plain: &mut [u8],
        tag: &mut [u8; TAG_LEN],
    ) -> Result<(), CryptoError> {
        // The AD binds the version/nonce prefix and the address.
        let ad = [head, addr].concat();
        let ctx = self.key.ctx_ptr()?;
        let mut out_tag_len = 0usize;
        // SAFETY: pointers valid for the given lengths; in-place sealing.
        let ok = unsafe {
            boring_sys::EVP_AEAD_CTX_seal_scatter(
                ctx,
                plain.as_mut_ptr(),
                tag.as_mut_ptr(),
                &mut out_tag_len,
                TAG_LEN,
                nonce.as_ptr(),
                nonce.len(),
                plain.as_ptr(),
                plain.len(),
                std::ptr::null(),
                0,
                ad.as_ptr(),
                ad.len(),
            )
        };
        if ok != 1 {
            return Err(CryptoError::Internal);
        }
        Ok(())
    }

    /// Opens a token presented by the client at `addr`. Returns the
    /// original Destination CID (empty for NEW_TOKEN tokens) and the issue
    /// time, or `None` if the token is malformed, forged, or was issued to
    /// another address. The caller checks the age.
    pub fn open(&self, token: &[u8], addr: &[u8]) -> Option<(Vec<u8>, u64)> {
        let (&version, rest) = token.split_first()?;
        if version != TOKEN_VERSION || rest.len() < TOKEN_NONCE_LEN + 1 + 8 + TAG_LEN {
            return None;
        }
        let nonce: [u8; TOKEN_NONCE_LEN] = rest.get(..TOKEN_NONCE_LEN)?.try_into().ok()?;
        let head = token.get(..1 + TOKEN_NONCE_LEN)?;
        let ad = [head, addr].concat();
        let mut body = rest.get(TOKEN_NONCE_LEN..)?.to_vec();
        let ctx = self.key.ctx_ptr().ok()?;
        let mut out_len = 0usize;
        // SAFETY: pointers valid for the given lengths; in-place opening.
        let ok = unsafe {
            boring_sys::EVP_AEAD_CTX_open(
                ctx,
                body.as_mut_ptr(),
                &mut out_len,
                body.len(),
                nonce.as_ptr(),
                nonce.len(),
                body.as_ptr(),
                body.len(),
                ad.as_ptr(),
                ad.len(),
            )
        };
        if ok != 1 {
            // SAFETY: plain call; drops the authentication failure record.
            unsafe { boring_sys::ERR_clear_error() };
            return None;
        }
        let plain = body.get(..out_len)?;
        let (&cid_len, rest) = plain.split_first()?;
        let cid_len = usize::from(cid_len);
        if cid_len > MAX_CID_LEN || rest.len() != cid_len + 8 {
            return None;
        }
        let (odcid, time) = rest.split_at(cid_len);
        let issued_at = u64::from_be_bytes(time.try_into().ok()?);
        Some((odcid.to_vec(), issued_at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::test_util::hex;

    #[test]
    fn retry_rfc9001_a4() {
        let packet = hex("ff000000010008f067a5502a4262b574 6f6b656e04a265ba2eff4d829058fb3f
             0f2496ba");
        let odcid = hex("8394c8f03e515708");
        let (body, tag) = packet.split_at(packet.len() - 16);
        assert_eq!(retry_tag_for(Version::V1, &odcid, body).unwrap().to_vec(), tag.to_vec());
        let mut pseudo = vec![8u8];
        pseudo.extend_from_slice(&odcid);
        pseudo.extend_from_slice(body);
        assert_eq!(retry_integrity_tag(Version::V1, &pseudo).unwrap().to_vec(), tag.to_vec());
        assert!(verify_retry(Version::V1, &odcid, &packet));
        assert!(!verify_retry(Version::V1, &hex("8394c8f03e515709"), &packet));
        // The v2 key gives another tag.
        assert!(!verify_retry(Version::V2, &odcid, &packet));
        let mut bad = packet.clone();
        bad[10] ^= 1;
        assert!(!verify_retry(Version::V1, &odcid, &bad));
        assert!(!verify_retry(Version::V1, &odcid, &packet[..10]));
    }

    #[test]
    fn retry_rfc9369_a4() {
        let packet = hex("cf6b3343cf0008f067a5502a4262b574 6f6b656ec8646ce8bfe33952d9555436 65dcc7b6");
        let odcid = hex("8394c8f03e515708");
        assert!(verify_retry(Version::V2, &odcid, &packet));
        assert!(!verify_retry(Version::V1, &odcid, &packet));
        let (body, tag) = packet.split_at(packet.len() - 16);
        assert_eq!(retry_tag_for(Version::V2, &odcid, body).unwrap().to_vec(), tag.to_vec());
    }

    #[test]
    fn reset_token_is_hmac_sha256_prefix() {
        use sha2::Digest;
        // Check against an independent HMAC-SHA256 built from sha2.
        let key = [0x42u8; 32];
        let cid = hex("0102030405060708");
        let mut ipad = [0x36u8; 64];
        let mut opad = [0x5cu8; 64];
        for i in 0..32 {
            ipad[i] ^= key[i];
            opad[i] ^= key[i];
        }
        let inner = sha2::Sha256::new().chain_update(ipad).chain_update(&cid).finalize();
        let outer = sha2::Sha256::new().chain_update(opad).chain_update(inner).finalize();
        assert_eq!(reset_token(&key, &cid).to_vec(), outer[..16].to_vec());
        assert_ne!(reset_token(&key, &cid), reset_token(&key, &hex("0102030405060709")));
        assert_ne!(reset_token(&key, &cid), reset_token(&[0x43; 32], &cid));
    }

    #[test]
    fn tokens_round_trip_and_reject_forgeries() {
        let k = TokenKey::new().unwrap();
        let addr = b"\x7f\x00\x00\x01\x11\x51";
        let odcid = hex("8394c8f03e515708");
        let tok = k.seal(addr, &odcid, 123_456);
        assert_eq!(k.open(&tok, addr), Some((odcid.clone(), 123_456)));
        // Two tokens for the same inputs differ (random nonce).
        assert_ne!(k.seal(addr, &odcid, 123_456), tok);
        // NEW_TOKEN style: empty odcid.
        let t2 = k.seal(addr, &[], 9);
        assert_eq!(k.open(&t2, addr), Some((vec![], 9)));
        // Other address, other key, any flipped bit, truncation: rejected.
        assert_eq!(k.open(&tok, b"\x7f\x00\x00\x02\x11\x51"), None);
        assert_eq!(TokenKey::new().unwrap().open(&tok, addr), None);
        for i in 0..tok.len() {
            let mut bad = tok.clone();
            bad[i] ^= 0x01;
            assert_eq!(k.open(&bad, addr), None, "bit flip at {i}");
        }
        for n in 0..tok.len() {
            assert_eq!(k.open(&tok[..n], addr), None);
        }
        // A same-key token from stored bytes opens.
        let raw = [5u8; 32];
        let a = TokenKey::from_bytes(&raw).unwrap();
        let b = TokenKey::from_bytes(&raw).unwrap();
        assert_eq!(b.open(&a.seal(addr, &odcid, 1), addr), Some((odcid, 1)));
    }
}
