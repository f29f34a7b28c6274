//! Cryptography for QUIC over BoringSSL (RFC 9001): TLS 1.3 through
//! BoringSSL's QUIC API, AEAD packet protection with the multipath nonce
//! (draft-ietf-quic-multipath-21 §2.4), header protection, key derivation and
//! key update, Retry integrity, address-validation and stateless-reset tokens.
//!
//! This is the only module of the engine that uses `unsafe`: every raw
//! BoringSSL object lives in a wrapper with a `Drop`, and the per-packet
//! operations (seal, open, header-protection mask) never allocate.

use std::fmt;

use crate::error::{ErrorCode, TransportError};

mod aead;
mod hp;
mod retry;
mod secrets;
#[cfg(feature = "sim-aead")]
mod sim_aead;
mod tls;

pub use aead::{nonce_for, PacketKey, TAG_LEN};
pub use hp::{apply_header_protection, remove_header_protection, HeaderKey, SAMPLE_LEN};
pub use retry::{reset_token, retry_integrity_tag, retry_tag_for, verify_retry, TokenKey, RESET_TOKEN_LEN};
pub use secrets::{hkdf_expand_label, initial_keys, Keys, Secret, INITIAL_SALT_V1};
pub use tls::{Direction, TlsConfig, TlsConfigBuilder, TlsError, TlsSession};

/// An encryption level (RFC 9001 §4), numbered like BoringSSL's
/// `ssl_encryption_level_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Initial packets (keys derived from the client's Destination CID).
    Initial = 0,
    /// 0-RTT packets (early data, RFC 9001 §4.6).
    ZeroRtt = 1,
    /// Handshake packets.
    Handshake = 2,
    /// 1-RTT (application data) packets.
    OneRtt = 3,
}

impl Level {
    /// All levels, in handshake order.
    pub const ALL: [Level; 4] = [Level::Initial, Level::ZeroRtt, Level::Handshake, Level::OneRtt];

    /// The index of this level (0..4), for per-level arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    fn from_ssl(level: boring_sys::ssl_encryption_level_t) -> Option<Level> {
        Some(match level.0 {
            0 => Level::Initial,
            1 => Level::ZeroRtt,
            2 => Level::Handshake,
            3 => Level::OneRtt,
            _ => return None,
        })
    }

    fn to_ssl(self) -> boring_sys::ssl_encryption_level_t {
        boring_sys::ssl_encryption_level_t(self as u32)
    }
}

/// A packet-protection AEAD, fixed by the negotiated TLS 1.3 cipher suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// TLS_AES_128_GCM_SHA256 (also used for Initial packets).
    Aes128Gcm,
    /// TLS_AES_256_GCM_SHA384.
    Aes256Gcm,
    /// TLS_CHACHA20_POLY1305_SHA256.
    ChaCha20Poly1305,
}

/// The hash function of a cipher suite, used by HKDF.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Hash {
    /// SHA-256 (32-byte secrets).
    Sha256,
    /// SHA-384 (48-byte secrets).
    Sha384,
}

impl Hash {
    /// Output length in bytes.
    pub const fn output_len(self) -> usize {
        match self {
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
        }
    }

    fn md(self) -> *const boring_sys::EVP_MD {
        // SAFETY: these return pointers to static digest tables.
        unsafe {
            match self {
                Hash::Sha256 => boring_sys::EVP_sha256(),
                Hash::Sha384 => boring_sys::EVP_sha384(),
            }
        }
    }
}

impl Algorithm {
    /// The algorithm for a TLS 1.3 cipher suite ID (0x1301..=0x1303).
    pub fn from_suite(id: u16) -> Option<Algorithm> {
        match id {
            0x1301 => Some(Algorithm::Aes128Gcm),
            0x1302 => Some(Algorithm::Aes256Gcm),
            0x1303 => Some(Algorithm::ChaCha20Poly1305),
            _ => None,
        }
    }

    /// The TLS 1.3 cipher suite ID.
    pub const fn suite(self) -> u16 {
        match self {
            Algorithm::Aes128Gcm => 0x1301,
            Algorithm::Aes256Gcm => 0x1302,
            Algorithm::ChaCha20Poly1305 => 0x1303,
        }
    }

    /// Packet-protection key length (also the header-protection key length).
    pub const fn key_len(self) -> usize {
        match self {
            Algorithm::Aes128Gcm => 16,
            Algorithm::Aes256Gcm | Algorithm::ChaCha20Poly1305 => 32,
        }
    }

    /// IV (nonce) length: 12 bytes for every QUIC v1 AEAD.
    pub const fn iv_len(self) -> usize {
        12
    }

    /// The suite's hash.
    pub const fn hash(self) -> Hash {
        match self {
            Algorithm::Aes256Gcm => Hash::Sha384,
            Algorithm::Aes128Gcm | Algorithm::ChaCha20Poly1305 => Hash::Sha256,
        }
    }

    /// How many packets may be sealed with one key (RFC 9001 §6.6).
    pub const fn confidentiality_limit(self) -> u64 {
        match self {
            Algorithm::Aes128Gcm | Algorithm::Aes256Gcm => 1 << 23,
            // Larger than the packet number space.
            Algorithm::ChaCha20Poly1305 => u64::MAX,
        }
    }

    /// How many packets may fail authentication with one key before the
    /// connection must close with AEAD_LIMIT_REACHED (RFC 9001 §6.6).
    pub const fn integrity_limit(self) -> u64 {
        match self {
            Algorithm::Aes128Gcm | Algorithm::Aes256Gcm => 1 << 52,
            Algorithm::ChaCha20Poly1305 => 1 << 36,
        }
    }

    fn evp(self) -> *const boring_sys::EVP_AEAD {
        // SAFETY: these return pointers to static AEAD tables.
        unsafe {
            match self {
                Algorithm::Aes128Gcm => boring_sys::EVP_aead_aes_128_gcm(),
                Algorithm::Aes256Gcm => boring_sys::EVP_aead_aes_256_gcm(),
                Algorithm::ChaCha20Poly1305 => boring_sys::EVP_aead_chacha20_poly1305(),
            }
        }
    }
}

/// A packet-protection failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CryptoError {
    /// AEAD authentication failed: the packet must be discarded (not a
    /// connection error by itself, RFC 9001 §5.5).
    DecryptFailed,
    /// A buffer was too short (missing tag, header-protection sample, ...).
    BufferTooShort,
    /// A key had the wrong length or BoringSSL refused to set it up.
    BadKey,
    /// BoringSSL failed internally (e.g. out of memory).
    Internal,
}

impl fmt::Display for CryptoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CryptoError::DecryptFailed => "packet authentication failed",
            CryptoError::BufferTooShort => "buffer too short for packet protection",
            CryptoError::BadKey => "invalid key",
            CryptoError::Internal => "crypto library failure",
        })
    }
}

impl std::error::Error for CryptoError {}

impl From<CryptoError> for TransportError {
    fn from(e: CryptoError) -> Self {
        match e {
            CryptoError::DecryptFailed | CryptoError::BufferTooShort => {
                TransportError::violation("packet protection failed")
            }
            CryptoError::BadKey | CryptoError::Internal => {
                TransportError::new(ErrorCode::INTERNAL_ERROR, "crypto library failure")
            }
        }
    }
}

/// Fills `buf` with cryptographically secure random bytes (BoringSSL's
/// `RAND_bytes`, which aborts rather than fail).
pub fn fill_random(buf: &mut [u8]) {
    if buf.is_empty() {
        return;
    }
    // SAFETY: buf is a valid writable region of buf.len() bytes.
    unsafe {
        boring_sys::RAND_bytes(buf.as_mut_ptr(), buf.len());
    }
}

/// Constant-time equality of two byte strings (lengths are not secret).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.is_empty() {
        return true;
    }
    // SAFETY: both regions are valid for a.len() bytes.
    unsafe { boring_sys::CRYPTO_memcmp(a.as_ptr().cast(), b.as_ptr().cast(), a.len()) == 0 }
}

#[cfg(test)]
pub(crate) mod test_util {
    /// Decodes hex, ignoring whitespace; panics on bad input (tests only).
    pub(crate) fn hex(s: &str) -> Vec<u8> {
        let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        assert!(digits.len() % 2 == 0, "odd hex length");
        digits.chunks(2).map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap()).collect()
    }
}

#[cfg(test)]
mod v2_vectors;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_is_not_constant() {
        let mut a = [0u8; 32];
        let mut b = [0u8; 32];
        fill_random(&mut a);
        fill_random(&mut b);
        assert_ne!(a, b);
        assert_ne!(a, [0u8; 32]);
    }

    #[test]
    fn suites_round_trip() {
        for alg in [Algorithm::Aes128Gcm, Algorithm::Aes256Gcm, Algorithm::ChaCha20Poly1305] {
            assert_eq!(Algorithm::from_suite(alg.suite()), Some(alg));
        }
        assert_eq!(Algorithm::from_suite(0x1304), None);
        assert_eq!(Algorithm::Aes256Gcm.hash().output_len(), 48);
    }

    #[test]
    fn ct_eq() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
