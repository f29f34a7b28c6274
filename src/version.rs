//! QUIC versions: v1 (RFC 9000/9001) and v2 (RFC 9369). Everything that
//! differs between them — the wire number, the long-header type bits, the
//! Initial salt, the HKDF labels and the Retry integrity key — is answered
//! here, so the rest of the engine only carries a [`Version`].
//!
//! v1 and v2 are compatible in the sense of RFC 9368 §2.3: a server may
//! switch a connection from one to the other during the handshake.

use std::fmt;

use crate::packet::PacketType;

/// A QUIC version this implementation speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Version {
    /// QUIC version 1 (RFC 9000), 0x00000001.
    #[default]
    V1,
    /// QUIC version 2 (RFC 9369), 0x6b3343cf.
    V2,
}

/// The HKDF-Expand-Label labels of a version (RFC 9001 §5.1, RFC 9369 §3.3.2).
#[derive(Clone, Copy, Debug)]
pub struct Labels {
    /// Packet protection key ("quic key" / "quicv2 key").
    pub key: &'static [u8],
    /// Packet protection IV.
    pub iv: &'static [u8],
    /// Header protection key.
    pub hp: &'static [u8],
    /// Key update ("quic ku" / "quicv2 ku").
    pub ku: &'static [u8],
}

const LABELS_V1: Labels = Labels { key: b"quic key", iv: b"quic iv", hp: b"quic hp", ku: b"quic ku" };
const LABELS_V2: Labels = Labels { key: b"quicv2 key", iv: b"quicv2 iv", hp: b"quicv2 hp", ku: b"quicv2 ku" };

impl Version {
    /// Every version we speak, in our default order of preference.
    pub const ALL: [Version; 2] = [Version::V1, Version::V2];

    /// The version number on the wire.
    pub const fn wire(self) -> u32 {
        match self {
            Version::V1 => 0x0000_0001,
            Version::V2 => 0x6b33_43cf,
        }
    }

    /// The version for a wire number; `None` for versions we do not speak.
    pub const fn from_wire(v: u32) -> Option<Version> {
        match v {
            0x0000_0001 => Some(Version::V1),
            0x6b33_43cf => Some(Version::V2),
            _ => None,
        }
    }

    /// The salt Initial secrets are extracted with (RFC 9001 §5.2, RFC 9369 §3.3.1).
    pub const fn initial_salt(self) -> &'static [u8; 20] {
        match self {
            Version::V1 => &[
                0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c,
                0xad, 0xcc, 0xbb, 0x7f, 0x0a,
            ],
            Version::V2 => &[
                0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d,
                0xcb, 0xf9, 0xbd, 0x2e, 0xd9,
            ],
        }
    }

    /// The key-derivation labels.
    pub const fn labels(self) -> &'static Labels {
        match self {
            Version::V1 => &LABELS_V1,
            Version::V2 => &LABELS_V2,
        }
    }

    /// The Retry Integrity Tag's AES-128-GCM key and nonce (RFC 9001 §5.8,
    /// RFC 9369 §3.3.3).
    pub const fn retry_key_nonce(self) -> (&'static [u8; 16], &'static [u8; 12]) {
        match self {
            Version::V1 => (
                &[
                    0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8,
                    0x4e,
                ],
                &[0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb],
            ),
            Version::V2 => (
                &[
                    0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2, 0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c, 0xcc,
                    0x92,
                ],
                &[0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c, 0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a],
            ),
        }
    }

    /// The 2-bit long packet type (RFC 9000 Table 5, RFC 9369 §3.2); `None`
    /// for Version Negotiation and short headers.
    pub const fn long_type_bits(self, ty: PacketType) -> Option<u8> {
        let v1 = match ty {
            PacketType::Initial => 0,
            PacketType::ZeroRtt => 1,
            PacketType::Handshake => 2,
            PacketType::Retry => 3,
            PacketType::VersionNegotiation | PacketType::Short => return None,
        };
        // v2 shifts every type by one: Initial 0b01 .. Retry 0b00.
        Some(match self {
            Version::V1 => v1,
            Version::V2 => (v1 + 1) & 0x03,
        })
    }

    /// The packet type of the 2-bit long type `bits`.
    pub const fn long_type(self, bits: u8) -> PacketType {
        let v1 = match self {
            Version::V1 => bits & 0x03,
            Version::V2 => bits.wrapping_add(3) & 0x03,
        };
        match v1 {
            0 => PacketType::Initial,
            1 => PacketType::ZeroRtt,
            2 => PacketType::Handshake,
            _ => PacketType::Retry,
        }
    }

    /// Whether a server may switch a connection started in `self` to
    /// `other` (RFC 9368 §2.3; RFC 9369 §4.1: v1 and v2 are compatible).
    pub const fn is_compatible(self, _other: Version) -> bool {
        true
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Version::V1 => "v1",
            Version::V2 => "v2",
        })
    }
}

/// A version name that is not one we speak.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownVersion(pub String);

impl fmt::Display for UnknownVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown QUIC version {:?} (expected v1, v2, 1, 0x6b3343cf)", self.0)
    }
}

impl std::error::Error for UnknownVersion {}

impl std::str::FromStr for Version {
    type Err = UnknownVersion;

    /// `v1`, `v2`, or a wire number (`1`, `0x6b3343cf`).
    fn from_str(s: &str) -> Result<Version, UnknownVersion> {
        let t = s.trim().to_ascii_lowercase();
        let named = match t.as_str() {
            "v1" | "1" => Some(Version::V1),
            "v2" => Some(Version::V2),
            _ => None,
        };
        let wire = || {
            let n = t
                .strip_prefix("0x")
                .map_or_else(|| t.parse::<u32>().ok(), |h| u32::from_str_radix(h, 16).ok());
            n.and_then(Version::from_wire)
        };
        named.or_else(wire).ok_or_else(|| UnknownVersion(s.to_string()))
    }
}

/// A comma-separated list of versions, most preferred first ("v2,v1"),
/// for command lines and the C and Python APIs.
pub fn parse_list(s: &str) -> Result<Vec<Version>, UnknownVersion> {
    s.split(',').map(str::parse).collect()
}

/// The version_information transport parameter (RFC 9368 §3): the version
/// the sender's handshake packets use, and the versions it supports, in
/// its order of preference. Versions we do not speak are kept (a peer may
/// list them), as wire numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionInfo {
    /// Chosen Version.
    pub chosen: u32,
    /// Available Versions.
    pub available: Vec<u32>,
}

/// Whether an endpoint accepting `versions` takes part in compatible version
/// negotiation, so sends version_information (RFC 9368 §3): anything but
/// v1 alone. A v1-only endpoint's handshake stays as it was before v2.
pub(crate) fn negotiates(versions: &[Version]) -> bool {
    versions != [Version::V1]
}

impl VersionInfo {
    /// Ours: `chosen` and the versions we accept.
    pub fn new(chosen: Version, available: &[Version]) -> VersionInfo {
        VersionInfo { chosen: chosen.wire(), available: available.iter().map(|v| v.wire()).collect() }
    }

    /// The first of `ours` (in our order) that the peer lists and that
    /// `from` may switch to (RFC 9368 §2.3, the server's choice).
    pub fn negotiate(&self, from: Version, ours: &[Version]) -> Option<Version> {
        ours.iter().copied().find(|v| from.is_compatible(*v) && self.available.contains(&v.wire()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_types_round_trip_and_v2_shifts() {
        let types = [PacketType::Initial, PacketType::ZeroRtt, PacketType::Handshake, PacketType::Retry];
        for v in Version::ALL {
            for ty in types {
                let bits = v.long_type_bits(ty).unwrap();
                assert_eq!(v.long_type(bits), ty);
            }
        }
        // RFC 9369 §3.2.
        let v2: Vec<u8> = types.iter().map(|t| Version::V2.long_type_bits(*t).unwrap()).collect();
        assert_eq!(v2, [0b01, 0b10, 0b11, 0b00]);
        assert_eq!(Version::V1.long_type_bits(PacketType::Short), None);
    }

    #[test]
    fn names_parse() {
        assert_eq!("v2".parse::<Version>(), Ok(Version::V2));
        assert_eq!("0x6b3343cf".parse::<Version>(), Ok(Version::V2));
        assert_eq!("1".parse::<Version>(), Ok(Version::V1));
        assert!("v3".parse::<Version>().unwrap_err().to_string().contains("v3"));
        assert!("0xff00001d".parse::<Version>().is_err());
        assert_eq!(parse_list("v2, v1"), Ok(vec![Version::V2, Version::V1]));
        assert!(parse_list("v2,,v1").is_err());
        assert_eq!(Version::from_wire(0x6b3343cf), Some(Version::V2));
        assert_eq!(Version::from_wire(0), None);
    }

    #[test]
    fn server_choice_follows_its_own_preference() {
        let client = VersionInfo { chosen: 1, available: vec![1, 0x6b3343cf, 0x0a0a0a0a] };
        assert_eq!(client.negotiate(Version::V1, &[Version::V2, Version::V1]), Some(Version::V2));
        assert_eq!(client.negotiate(Version::V1, &[Version::V1, Version::V2]), Some(Version::V1));
        let v1_only = VersionInfo { chosen: 1, available: vec![1] };
        assert_eq!(v1_only.negotiate(Version::V1, &[Version::V2]), None);
    }
}
