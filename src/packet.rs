//! QUIC packet headers (RFC 9000 §17): connection IDs, header parsing before
//! header protection is removed, packet-number encoding and decoding
//! (RFC 9000 §17.1, Appendix A.2/A.3), header writers, Retry pseudo-packets
//! (RFC 9001 §5.8) and stateless-reset detection (RFC 9000 §10.3).
//!
//! Parsing never panics: every field is bounds-checked. Malformed headers are
//! reported as a [`HeaderError`] and the packet is dropped without a
//! connection error (RFC 9000 §12.2, §17.2).

use std::fmt;

use crate::codec::{encode_varint_into, varint_len, Reader, Writer};
use crate::error::BufferTooShort;
use crate::version::Version;

/// QUIC version 1 (RFC 9000) on the wire; see [`Version`] for v2.
pub const QUIC_V1: u32 = 0x0000_0001;

/// Longest connection ID in QUIC v1 (RFC 9000 §17.2).
pub const MAX_CID_LEN: usize = 20;

/// Length of the Retry Integrity Tag (RFC 9001 §5.8).
pub const RETRY_TAG_LEN: usize = 16;

/// Length of a stateless reset token (RFC 9000 §10.3).
pub const RESET_TOKEN_LEN: usize = 16;

/// Smallest datagram that can be a stateless reset or a valid short-header
/// packet (RFC 9000 §10.3): 1 + 4 (unpredictable bits) + 16 (token).
pub const MIN_STATELESS_RESET_LEN: usize = 21;

/// Header protection samples 16 bytes starting 4 bytes after the start of
/// the packet number field (RFC 9001 §5.4.2); shorter packets cannot be
/// unprotected and are dropped at parse time.
const HP_SAMPLE_OFFSET: usize = 4;
const HP_SAMPLE_LEN: usize = 16;

/// A connection ID of 0 to 20 bytes, stored inline so it is `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ConnectionId {
    len: u8,
    bytes: [u8; MAX_CID_LEN],
}

impl ConnectionId {
    /// The zero-length connection ID.
    pub const EMPTY: ConnectionId = ConnectionId { len: 0, bytes: [0; MAX_CID_LEN] };

    /// Copy `s` into a connection ID; `None` if it is longer than 20 bytes.
    pub fn from_slice(s: &[u8]) -> Option<Self> {
        if s.len() > MAX_CID_LEN {
            return None;
        }
        let mut bytes = [0u8; MAX_CID_LEN];
        bytes[..s.len()].copy_from_slice(s);
        Some(Self { len: s.len() as u8, bytes })
    }

    /// The ID's bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Length in bytes (0..=20).
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether this is the zero-length connection ID.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Debug for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.as_slice() {
            write!(f, "{b:02x}")?;
        }
        if self.is_empty() {
            f.write_str("<empty>")?;
        }
        Ok(())
    }
}

impl fmt::Display for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The kind of a QUIC packet (RFC 9000 §17). The long-header type bits
/// depend on the version ([`Version::long_type_bits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// Long header Initial.
    Initial,
    /// Long header 0-RTT.
    ZeroRtt,
    /// Long header Handshake.
    Handshake,
    /// Long header Retry.
    Retry,
    /// Long header with version 0.
    VersionNegotiation,
    /// Short header (1-RTT).
    Short,
}

/// Why an incoming header was dropped. None of these is a connection error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// The datagram ended inside the header, or a Length field points past
    /// the end of the datagram, or the packet is too short to sample for
    /// header protection.
    Truncated,
    /// The fixed bit (0x40) is zero (RFC 9000 §17.2, §17.3.1).
    FixedBitZero,
    /// A v1 connection ID longer than 20 bytes, a VN packet whose version
    /// list is empty or not a multiple of 4, or a Retry with an empty token.
    Malformed,
    /// A long header with a version this endpoint does not implement; a
    /// server answers with Version Negotiation using [`invariant_header`].
    UnsupportedVersion(u32),
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::Truncated => f.write_str("truncated packet header"),
            HeaderError::FixedBitZero => f.write_str("fixed bit is zero"),
            HeaderError::Malformed => f.write_str("malformed packet header"),
            HeaderError::UnsupportedVersion(v) => write!(f, "unsupported version {v:#010x}"),
        }
    }
}

impl std::error::Error for HeaderError {}

impl From<BufferTooShort> for HeaderError {
    fn from(_: BufferTooShort) -> Self {
        HeaderError::Truncated
    }
}

/// A packet header as read before header protection is removed: the
/// protected bits (packet number length, key phase, reserved bits) of
/// `first_byte` are not yet meaningful.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// Packet type.
    pub ty: PacketType,
    /// The first byte as received (still protected).
    pub first_byte: u8,
    /// Version field; 0 for Version Negotiation, [`QUIC_V1`] for short headers.
    pub version: u32,
    /// Destination connection ID.
    pub dcid: ConnectionId,
    /// Source connection ID (empty for short headers).
    pub scid: ConnectionId,
    /// Initial: the token (possibly empty). Retry: the Retry token. Else empty.
    pub token: &'a [u8],
    /// Retry only: the Retry Integrity Tag (last 16 bytes); else empty.
    pub retry_tag: &'a [u8],
    /// Version Negotiation only: the Supported Versions field (a multiple of
    /// 4 bytes; see [`Header::supported_versions`]); else empty.
    pub versions: &'a [u8],
    /// Offset of the packet-number field from the start of this packet. For
    /// Retry and Version Negotiation, the end of the parsed fixed fields.
    pub pn_offset: usize,
    /// Length of this packet from its first byte: the end of a long-header
    /// packet inside a coalesced datagram (from its Length field), or the
    /// whole rest of the datagram for short, Retry and VN packets.
    pub packet_len: usize,
}

impl<'a> Header<'a> {
    /// Whether this header is in the long form.
    #[inline]
    pub fn is_long(&self) -> bool {
        self.ty != PacketType::Short
    }

    /// The versions listed in a Version Negotiation packet.
    pub fn supported_versions(&self) -> impl Iterator<Item = u32> + 'a {
        self.versions.chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
    }
}

/// The version-independent fields of a long header (RFC 8999 §5.1), with
/// connection IDs of up to 255 bytes so a server can answer any version
/// with Version Negotiation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvariantHeader<'a> {
    /// Version field.
    pub version: u32,
    /// Destination connection ID.
    pub dcid: &'a [u8],
    /// Source connection ID.
    pub scid: &'a [u8],
}

/// Read the version-independent long-header fields; `None` for a short
/// header or truncated input.
pub fn invariant_header(buf: &[u8]) -> Option<InvariantHeader<'_>> {
    let mut r = Reader::new(buf);
    let first = r.u8().ok()?;
    if first & 0x80 == 0 {
        return None;
    }
    let version = r.u32().ok()?;
    let dcid_len = r.u8().ok()?;
    let dcid = r.bytes(dcid_len as usize).ok()?;
    let scid_len = r.u8().ok()?;
    let scid = r.bytes(scid_len as usize).ok()?;
    Some(InvariantHeader { version, dcid, scid })
}

fn read_cid(r: &mut Reader<'_>) -> Result<ConnectionId, HeaderError> {
    let len = r.u8()? as usize;
    if len > MAX_CID_LEN {
        return Err(HeaderError::Malformed);
    }
    let b = r.bytes(len)?;
    ConnectionId::from_slice(b).ok_or(HeaderError::Malformed)
}

/// Check that a packet of `packet_len` bytes whose packet number starts at
/// `pn_offset` is long enough for the header-protection sample.
fn check_sample(pn_offset: usize, packet_len: usize) -> Result<(), HeaderError> {
    if packet_len < pn_offset + HP_SAMPLE_OFFSET + HP_SAMPLE_LEN {
        return Err(HeaderError::Truncated);
    }
    Ok(())
}

/// Parse the header of the packet starting at `buf[0]` (RFC 9000 §17),
/// before header protection removal. `short_dcid_len` is the length of the
/// connection IDs this endpoint issues (short headers do not carry it).
///
/// For a coalesced datagram call it again on `&buf[h.packet_len..]` while
/// bytes remain. Packets that are too short to carry a header-protection
/// sample (RFC 9001 §5.4.2) are rejected as [`HeaderError::Truncated`].
pub fn parse_header(buf: &[u8], short_dcid_len: usize) -> Result<Header<'_>, HeaderError> {
    let mut r = Reader::new(buf);
    let first = r.u8()?;
    if first & 0x80 == 0 {
        // Short header (RFC 9000 §17.3.1).
        if first & 0x40 == 0 {
            return Err(HeaderError::FixedBitZero);
        }
        let dcid = ConnectionId::from_slice(r.bytes(short_dcid_len)?).ok_or(HeaderError::Malformed)?;
        let pn_offset = r.pos();
        check_sample(pn_offset, buf.len())?;
        return Ok(Header {
            ty: PacketType::Short,
            first_byte: first,
            version: QUIC_V1,
            dcid,
            scid: ConnectionId::EMPTY,
            token: &[],
            retry_tag: &[],
            versions: &[],
            pn_offset,
            packet_len: buf.len(),
        });
    }

    let version = r.u32()?;
    if version == 0 {
        // Version Negotiation (RFC 9000 §17.2.1): the fixed bit is unused.
        let dcid = read_cid(&mut r)?;
        let scid = read_cid(&mut r)?;
        let versions = r.rest();
        if versions.is_empty() || versions.len() % 4 != 0 {
            return Err(HeaderError::Malformed);
        }
        return Ok(Header {
            ty: PacketType::VersionNegotiation,
            first_byte: first,
            version,
            dcid,
            scid,
            token: &[],
            retry_tag: &[],
            versions,
            pn_offset: r.pos(),
            packet_len: buf.len(),
        });
    }
    let Some(v) = Version::from_wire(version) else {
        return Err(HeaderError::UnsupportedVersion(version));
    };
    if first & 0x40 == 0 {
        return Err(HeaderError::FixedBitZero);
    }
    let dcid = read_cid(&mut r)?;
    let scid = read_cid(&mut r)?;
    let ty = v.long_type((first >> 4) & 0x03);
    let mut token: &[u8] = &[];
    match ty {
        PacketType::Retry => {
            // Retry (RFC 9000 §17.2.5): token fills the datagram up to the tag.
            let rest = r.rest();
            let token_len = rest.len().checked_sub(RETRY_TAG_LEN).ok_or(HeaderError::Truncated)?;
            if token_len == 0 {
                return Err(HeaderError::Malformed);
            }
            let (token, tag) = rest.split_at(token_len);
            return Ok(Header {
                ty,
                first_byte: first,
                version,
                dcid,
                scid,
                token,
                retry_tag: tag,
                versions: &[],
                pn_offset: r.pos(),
                packet_len: buf.len(),
            });
        }
        PacketType::Initial => {
            let len = r.varint()?;
            if len > r.remaining() as u64 {
                return Err(HeaderError::Truncated);
            }
            token = r.bytes(len as usize)?;
        }
        _ => {}
    }
    let length = r.varint()?;
    let pn_offset = r.pos();
    if length > r.remaining() as u64 {
        return Err(HeaderError::Truncated);
    }
    let packet_len = pn_offset + length as usize;
    check_sample(pn_offset, packet_len)?;
    Ok(Header {
        ty,
        first_byte: first,
        version,
        dcid,
        scid,
        token,
        retry_tag: &[],
        versions: &[],
        pn_offset,
        packet_len,
    })
}

/// Packet-number length (1..=4) encoded in an unprotected first byte.
#[inline]
pub fn pn_len_from_first_byte(first: u8) -> usize {
    (first & 0x03) as usize + 1
}

/// Whether the reserved bits of an unprotected first byte are zero; a
/// non-zero value after successful decryption is a PROTOCOL_VIOLATION
/// (RFC 9000 §17.2, §17.3.1).
#[inline]
pub fn reserved_bits_clear(first: u8) -> bool {
    if first & 0x80 != 0 {
        first & 0x0c == 0
    } else {
        first & 0x18 == 0
    }
}

/// The key phase bit of an unprotected short-header first byte.
#[inline]
pub fn key_phase(first: u8) -> bool {
    first & 0x04 != 0
}

/// Number of bytes (1..=4) to encode `pn` with, given the largest packet
/// number the peer has acknowledged in this space (RFC 9000 §17.1, A.2).
pub fn pn_len_for(pn: u64, largest_acked: Option<u64>) -> usize {
    let num_unacked = match largest_acked {
        Some(la) => pn.saturating_sub(la),
        None => pn.saturating_add(1),
    }
    .max(1);
    // A.2 computes ceil((log2(num_unacked) + 1) / 8) over the reals; in
    // integers that is floor(log2) + 1 bits for a power of two, + 2 otherwise.
    let floor_log2 = 63 - num_unacked.leading_zeros() as usize;
    let bits = if num_unacked.is_power_of_two() { floor_log2 + 1 } else { floor_log2 + 2 };
    bits.div_ceil(8).clamp(1, 4)
}

/// Recover a full packet number from its truncated `pn_nbits`-bit encoding,
/// given the largest packet number received so far in the space
/// (RFC 9000 Appendix A.3).
pub fn decode_pn(largest_pn: Option<u64>, truncated: u64, pn_nbits: u32) -> u64 {
    let expected = largest_pn.map_or(0, |l| l.saturating_add(1));
    let nbits = pn_nbits.clamp(8, 32);
    let win = 1u64 << nbits;
    let hwin = win / 2;
    let mask = win - 1;
    let candidate = (expected & !mask) | (truncated & mask);
    // Written without subtraction so it cannot underflow near zero.
    if candidate.saturating_add(hwin) <= expected && candidate < (1u64 << 62) - win {
        candidate + win
    } else if candidate > expected.saturating_add(hwin) && candidate >= win {
        candidate - win
    } else {
        candidate
    }
}

/// Where the patchable fields of a long header were written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongHeaderOffsets {
    /// Offset of the 2-byte Length field.
    pub length_offset: usize,
    /// Offset of the packet-number field.
    pub pn_offset: usize,
    /// Packet-number length in bytes.
    pub pn_len: usize,
}

/// Largest value of the 2-byte Length placeholder.
pub const MAX_PATCHABLE_LENGTH: usize = (1 << 14) - 1;

fn write_pn(w: &mut Writer<'_>, pn: u64, pn_len: usize) -> Result<(), BufferTooShort> {
    let out = w.reserve(pn_len)?;
    for (i, b) in out.iter_mut().enumerate() {
        *b = (pn >> (8 * (pn_len - 1 - i))) as u8;
    }
    Ok(())
}

/// Write an Initial, 0-RTT or Handshake header with a 2-byte Length
/// placeholder (RFC 9000 §17.2). `token` is written for Initial only. After
/// writing the payload, call [`patch_length`]; header protection and the
/// AEAD come last. `pn_len` must be 1..=4 (see [`pn_len_for`]).
///
/// Passing another packet type is a caller bug: it fails with
/// `BufferTooShort` (and asserts in debug builds).
#[allow(clippy::too_many_arguments)]
pub fn write_long_header(
    w: &mut Writer<'_>,
    ty: PacketType,
    version: Version,
    dcid: &ConnectionId,
    scid: &ConnectionId,
    token: &[u8],
    pn: u64,
    pn_len: usize,
) -> Result<LongHeaderOffsets, BufferTooShort> {
    let bits = match ty {
        PacketType::Initial | PacketType::ZeroRtt | PacketType::Handshake => version.long_type_bits(ty),
        _ => None,
    };
    let Some(bits) = bits else {
        debug_assert!(false, "write_long_header called for {ty:?}");
        return Err(BufferTooShort);
    };
    debug_assert!((1..=4).contains(&pn_len));
    let pn_len = pn_len.clamp(1, 4);
    w.u8(0xc0 | (bits << 4) | (pn_len as u8 - 1))?;
    w.u32(version.wire())?;
    w.u8(dcid.len() as u8)?;
    w.bytes(dcid.as_slice())?;
    w.u8(scid.len() as u8)?;
    w.bytes(scid.as_slice())?;
    if ty == PacketType::Initial {
        w.varint(token.len() as u64)?;
        w.bytes(token)?;
    }
    let length_offset = w.pos();
    w.varint_with_len(0, 2)?;
    let pn_offset = w.pos();
    write_pn(w, pn, pn_len)?;
    Ok(LongHeaderOffsets { length_offset, pn_offset, pn_len })
}

/// Fill in the Length field written by [`write_long_header`]: `len` counts
/// the packet number, the payload and the AEAD tag. `buf` is the buffer the
/// header was written into. Fails if `len` exceeds [`MAX_PATCHABLE_LENGTH`]
/// or the offsets do not fit `buf`.
pub fn patch_length(buf: &mut [u8], offsets: &LongHeaderOffsets, len: usize) -> Result<(), BufferTooShort> {
    if len > MAX_PATCHABLE_LENGTH {
        return Err(BufferTooShort);
    }
    let field = buf.get_mut(offsets.length_offset..offsets.length_offset + 2).ok_or(BufferTooShort)?;
    encode_varint_into(len as u64, field);
    Ok(())
}

/// Write a short (1-RTT) header (RFC 9000 §17.3.1) and return the offset of
/// the packet-number field. `pn_len` must be 1..=4.
pub fn write_short_header(
    w: &mut Writer<'_>,
    dcid: &ConnectionId,
    pn: u64,
    pn_len: usize,
    key_phase: bool,
    spin: bool,
) -> Result<usize, BufferTooShort> {
    debug_assert!((1..=4).contains(&pn_len));
    let pn_len = pn_len.clamp(1, 4);
    let first = 0x40 | (u8::from(spin) << 5) | (u8::from(key_phase) << 2) | (pn_len as u8 - 1);
    w.u8(first)?;
    w.bytes(dcid.as_slice())?;
    let pn_offset = w.pos();
    write_pn(w, pn, pn_len)?;
    Ok(pn_offset)
}

/// Write a Version Negotiation packet (RFC 9000 §17.2.1) answering a client
/// packet: `dcid` is the client's Source Connection ID and `scid` the
/// client's Destination Connection ID (taken from [`invariant_header`], so
/// up to 255 bytes). The unused bits are set to 0x40 as §17.2.1 recommends.
pub fn write_version_negotiation(
    w: &mut Writer<'_>,
    dcid: &[u8],
    scid: &[u8],
    versions: &[u32],
) -> Result<(), BufferTooShort> {
    if dcid.len() > 255 || scid.len() > 255 {
        return Err(BufferTooShort);
    }
    w.u8(0xc0)?;
    w.u32(0)?;
    w.u8(dcid.len() as u8)?;
    w.bytes(dcid)?;
    w.u8(scid.len() as u8)?;
    w.bytes(scid)?;
    for &v in versions {
        w.u32(v)?;
    }
    Ok(())
}

/// Write a Retry packet without its integrity tag (RFC 9000 §17.2.5). The
/// caller builds the pseudo-packet with [`retry_pseudo_packet`], computes the
/// tag in the crypto module and appends it. Returns the bytes written.
pub fn write_retry(
    w: &mut Writer<'_>,
    version: Version,
    dcid: &ConnectionId,
    scid: &ConnectionId,
    token: &[u8],
) -> Result<usize, BufferTooShort> {
    let start = w.pos();
    let bits = version.long_type_bits(PacketType::Retry).unwrap_or(0);
    // The 4 unused bits are arbitrary; zero keeps output deterministic.
    w.u8(0xc0 | (bits << 4))?;
    w.u32(version.wire())?;
    w.u8(dcid.len() as u8)?;
    w.bytes(dcid.as_slice())?;
    w.u8(scid.len() as u8)?;
    w.bytes(scid.as_slice())?;
    w.bytes(token)?;
    Ok(w.pos() - start)
}

/// Write the Retry Pseudo-Packet (RFC 9001 §5.8): the original destination
/// connection ID with its length byte, then the Retry packet without its tag.
/// For a received Retry of `packet_len` bytes, `retry_without_tag` is
/// `&datagram[..packet_len - RETRY_TAG_LEN]`.
pub fn retry_pseudo_packet(
    w: &mut Writer<'_>,
    odcid: &ConnectionId,
    retry_without_tag: &[u8],
) -> Result<(), BufferTooShort> {
    w.u8(odcid.len() as u8)?;
    w.bytes(odcid.as_slice())?;
    w.bytes(retry_without_tag)
}

/// The bytes of a received Retry packet covered by the integrity tag.
pub fn retry_without_tag<'a>(datagram: &'a [u8], hdr: &Header<'_>) -> Option<&'a [u8]> {
    if hdr.ty != PacketType::Retry {
        return None;
    }
    datagram.get(..hdr.packet_len.checked_sub(RETRY_TAG_LEN)?)
}

/// If `datagram` could be a stateless reset (RFC 9000 §10.3: short-header
/// form, at least 21 bytes), its last 16 bytes — the candidate token to
/// compare with [`reset_token_eq`].
pub fn stateless_reset_token(datagram: &[u8]) -> Option<&[u8; RESET_TOKEN_LEN]> {
    if datagram.len() < MIN_STATELESS_RESET_LEN || datagram.first()? & 0x80 != 0 {
        return None;
    }
    datagram.get(datagram.len() - RESET_TOKEN_LEN..)?.try_into().ok()
}

/// Compare two reset tokens in constant time (RFC 9000 §10.3.1 requires
/// that the comparison not leak the token through timing).
pub fn reset_token_eq(a: &[u8; RESET_TOKEN_LEN], b: &[u8; RESET_TOKEN_LEN]) -> bool {
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b.iter()) {
        diff |= x ^ y;
    }
    // black_box keeps the optimiser from turning the fold into an early exit.
    std::hint::black_box(diff) == 0
}

/// Encoded length of a long header written by [`write_long_header`].
pub fn long_header_len(
    ty: PacketType,
    dcid: &ConnectionId,
    scid: &ConnectionId,
    token_len: usize,
    pn_len: usize,
) -> usize {
    let token = if ty == PacketType::Initial { varint_len(token_len as u64) + token_len } else { 0 };
    1 + 4 + 1 + dcid.len() + 1 + scid.len() + token + 2 + pn_len
}

#[cfg(test)]
mod tests;
