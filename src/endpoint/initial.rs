//! Trial decryption of a client's first Initial, before any connection
//! state exists for it: a datagram of garbage behind a valid-looking long
//! header costs one key derivation and one AEAD open, and leaves nothing.

use crate::crypto::{initial_keys, remove_header_protection};
use crate::packet::{self, PacketType};
use crate::version::Version;

/// Whether the first packet of `dgram` is an Initial that decrypts with the
/// Initial keys of its DCID. `scratch` holds the copy that is unprotected
/// (the datagram itself stays intact for the connection).
pub(super) fn decrypts(dgram: &[u8], scratch: &mut Vec<u8>) -> bool {
    let Ok(hdr) = packet::parse_header(dgram, 0) else { return false };
    if hdr.ty != PacketType::Initial {
        return false;
    }
    let Some(pkt) = dgram.get(..hdr.packet_len) else { return false };
    let Some(version) = Version::from_wire(hdr.version) else { return false };
    let Ok((_, remote)) = initial_keys(version, hdr.dcid.as_slice(), true) else { return false };
    scratch.clear();
    scratch.extend_from_slice(pkt);
    let Ok((pn_len, truncated)) = remove_header_protection(scratch, hdr.pn_offset, &remote.header) else {
        return false;
    };
    let pn = packet::decode_pn(None, truncated, 8 * pn_len as u32);
    remote.packet.open_packet(pn, 0, scratch, hdr.pn_offset + pn_len).is_ok()
}
