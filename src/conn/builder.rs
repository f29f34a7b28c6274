//! Building one protected packet: header, frames, padding, length patch,
//! AEAD seal and header protection — the same steps for every packet,
//! CONNECTION_CLOSE included.

use crate::codec::Writer;
use crate::crypto::{self, Keys, Level};
use crate::packet::{self, ConnectionId, LongHeaderOffsets, PacketType};
use crate::version::Version;

use super::Error;

/// AEAD tag length of every QUIC v1 cipher suite.
pub(super) const TAG_LEN: usize = 16;

/// What the header of a packet says.
pub(super) struct Header<'a> {
    pub(super) level: Level,
    /// Long headers only.
    pub(super) version: Version,
    pub(super) dcid: ConnectionId,
    /// Long headers only.
    pub(super) scid: ConnectionId,
    /// Initial packets only (a client's address-validation token).
    pub(super) token: &'a [u8],
    pub(super) pn: u64,
    /// 1..=4 bytes.
    pub(super) pn_len: usize,
    /// 1-RTT only.
    pub(super) key_phase: bool,
}

/// A packet being written into a datagram buffer: frames go through
/// [`PacketBuilder::w`], [`PacketBuilder::finish`] protects it.
pub(super) struct PacketBuilder<'a> {
    w: Writer<'a>,
    pn: u64,
    pn_len: usize,
    pn_offset: usize,
    hdr_len: usize,
    long: Option<LongHeaderOffsets>,
}

impl<'a> PacketBuilder<'a> {
    /// Write the header into `buf`.
    #[inline]
    pub(super) fn new(buf: &'a mut [u8], h: &Header<'_>) -> Result<Self, Error> {
        let mut w = Writer::new(buf);
        let too_short = |_| Error::BufferTooShort;
        let (pn_offset, long) = match h.level {
            Level::Initial | Level::ZeroRtt | Level::Handshake => {
                let ty = packet_type(h.level);
                let o = packet::write_long_header(
                    &mut w, ty, h.version, &h.dcid, &h.scid, h.token, h.pn, h.pn_len,
                )
                .map_err(too_short)?;
                (o.pn_offset, Some(o))
            }
            _ => {
                let o = packet::write_short_header(&mut w, &h.dcid, h.pn, h.pn_len, h.key_phase, false)
                    .map_err(too_short)?;
                (o, None)
            }
        };
        let hdr_len = w.pos();
        Ok(Self { w, pn: h.pn, pn_len: h.pn_len, pn_offset, hdr_len, long })
    }

    /// Where frames are written.
    pub(super) fn w(&mut self) -> &mut Writer<'a> {
        &mut self.w
    }

    /// End of the room for frames: the AEAD tag follows.
    pub(super) fn payload_end(&self) -> usize {
        (self.w.pos() + self.w.remaining()).saturating_sub(TAG_LEN)
    }

    /// Length of the header.
    pub(super) fn header_len(&self) -> usize {
        self.hdr_len
    }

    /// Nothing was written after the header.
    pub(super) fn is_empty(&self) -> bool {
        self.w.pos() == self.hdr_len
    }

    /// Where [`PacketBuilder::finish`] ends the plaintext.
    fn plain_end(&self, min_plain: usize) -> usize {
        self.w.pos().max(self.pn_offset + 4).max(min_plain).min(self.payload_end())
    }

    /// The packet as [`PacketBuilder::finish`] will seal it, for qlog: the
    /// frames written, the padding added, the sealed length.
    pub(super) fn plain(&self, min_plain: usize) -> crate::qlog::Plain<'_> {
        let frames_end = self.w.pos();
        let plain_end = self.plain_end(min_plain).max(frames_end);
        crate::qlog::Plain {
            frames: &self.w.written()[self.hdr_len..],
            padding: plain_end - frames_end,
            len: plain_end + TAG_LEN,
            mtu_probe: false,
        }
    }

    /// Pad the plaintext to `min_plain` bytes (PADDING frames are zeros;
    /// never beyond the room left for the tag) and at least to what the
    /// header-protection sample needs (4 bytes after the packet number's
    /// start, RFC 9001 §5.4.2); patch the length, seal, protect the header.
    /// Returns the packet's length.
    #[inline]
    pub(super) fn finish(mut self, min_plain: usize, keys: &Keys, nonce_path: u32) -> Result<usize, Error> {
        let frames_end = self.w.pos();
        let plain_end = self.plain_end(min_plain);
        if plain_end < frames_end {
            return Err(Error::BufferTooShort);
        }
        let buf = self.w.buf_mut();
        buf[frames_end..plain_end].fill(0);
        let pkt_len = plain_end + TAG_LEN;
        if let Some(o) = &self.long {
            packet::patch_length(buf, o, pkt_len - self.pn_offset).map_err(|_| Error::BufferTooShort)?;
        }
        let pkt = &mut buf[..pkt_len];
        keys.packet.seal_packet(self.pn, nonce_path, pkt, self.hdr_len).map_err(|_| Error::Closed)?;
        crypto::apply_header_protection(pkt, self.pn_offset, self.pn_len, &keys.header)
            .map_err(|_| Error::Closed)?;
        Ok(pkt_len)
    }
}

/// The packet type that carries `level`'s packets (the one place levels and
/// long-header types meet, both ways: see [`level_of`]).
pub(super) fn packet_type(level: Level) -> PacketType {
    match level {
        Level::Initial => PacketType::Initial,
        Level::ZeroRtt => PacketType::ZeroRtt,
        Level::Handshake => PacketType::Handshake,
        Level::OneRtt => PacketType::Short,
    }
}

/// The encryption level of a packet type (`None`: Retry and Version
/// Negotiation, which are not protected).
pub(super) fn level_of(ty: PacketType) -> Option<Level> {
    match ty {
        PacketType::Initial => Some(Level::Initial),
        PacketType::ZeroRtt => Some(Level::ZeroRtt),
        PacketType::Handshake => Some(Level::Handshake),
        PacketType::Short => Some(Level::OneRtt),
        PacketType::Retry | PacketType::VersionNegotiation => None,
    }
}
