//! Stateless packet functions: header parsing, Version Negotiation, Retry.

use std::ffi::c_int;

use engine::codec::Writer;
use engine::packet::{self, ConnectionId, PacketType, QUIC_V1};
use engine::Version;
use libc::ssize_t;

use super::{QUICHE_ERR_BUFFER_TOO_SHORT, QUICHE_ERR_INVALID_PACKET, QUICHE_ERR_INVALID_STATE};
use crate::{guard, slice, slice_mut};

/// quiche's packet type numbers (its `Type` enum as seen from C).
fn type_number(ty: PacketType) -> u8 {
    match ty {
        PacketType::Initial => 1,
        PacketType::Retry => 2,
        PacketType::Handshake => 3,
        PacketType::ZeroRtt => 4,
        PacketType::VersionNegotiation => 5,
        PacketType::Short => 6,
    }
}

/// The type of a long header of any version, from its type bits (QUIC v1's
/// numbering, as quiche does for versions it does not know).
fn long_type(first: u8, version: u32) -> PacketType {
    if version == 0 {
        return PacketType::VersionNegotiation;
    }
    match (first >> 4) & 0x3 {
        0 => PacketType::Initial,
        1 => PacketType::ZeroRtt,
        2 => PacketType::Handshake,
        _ => PacketType::Retry,
    }
}

/// Copy `src` into the caller's buffer `dst` of `*len` bytes and set `*len`.
unsafe fn put(src: &[u8], dst: *mut u8, len: *mut usize) -> Result<(), ()> {
    // SAFETY: `len` is a valid pointer (checked by the caller).
    let cap = unsafe { *len };
    if src.len() > cap {
        return Err(());
    }
    // SAFETY: `dst` holds `cap` writable bytes.
    let out = unsafe { slice_mut(dst, cap) }.ok_or(())?;
    out[..src.len()].copy_from_slice(src);
    // SAFETY: as above.
    unsafe { *len = src.len() };
    Ok(())
}

/// Parsed header fields: (type, version, dcid, scid, token).
type Fields<'a> = (PacketType, u32, &'a [u8], &'a [u8], &'a [u8]);

fn parse(buf: &[u8], dcil: usize) -> Option<Fields<'_>> {
    let first = *buf.first()?;
    if first & 0x80 == 0 {
        let dcid = buf.get(1..1 + dcil)?;
        return Some((PacketType::Short, 0, dcid, &[], &[]));
    }
    let inv = packet::invariant_header(buf)?;
    let ty = long_type(first, inv.version);
    // Only QUIC v1 headers are parsed beyond the invariant fields (token).
    let token = match packet::parse_header(buf, dcil) {
        Ok(h) if inv.version == QUIC_V1 => h.token,
        _ => &[],
    };
    Some((ty, inv.version, inv.dcid, inv.scid, token))
}

/// Parse the header of the datagram in `buf` (`dcil`: the length of our
/// connection IDs, for short headers) and copy out its version, type (1
/// Initial, 2 Retry, 3 Handshake, 4 0-RTT, 5 Version Negotiation, 6
/// short), connection IDs and token; each `*_len` holds the buffer's size
/// on entry and the field's length on return. Returns 0,
/// QUICHE_ERR_INVALID_PACKET, or QUICHE_ERR_BUFFER_TOO_SHORT.
#[no_mangle]
pub unsafe extern "C" fn quiche_header_info(
    buf: *const u8,
    buf_len: usize,
    dcil: usize,
    version: *mut u32,
    ty: *mut u8,
    scid: *mut u8,
    scid_len: *mut usize,
    dcid: *mut u8,
    dcid_len: *mut usize,
    token: *mut u8,
    token_len: *mut usize,
) -> c_int {
    guard(QUICHE_ERR_INVALID_STATE.c(), || {
        if version.is_null()
            || ty.is_null()
            || scid_len.is_null()
            || dcid_len.is_null()
            || token_len.is_null()
        {
            return QUICHE_ERR_INVALID_STATE.c();
        }
        // SAFETY: `buf` holds `buf_len` bytes.
        let Some(b) = (unsafe { slice(buf, buf_len) }) else { return QUICHE_ERR_INVALID_STATE.c() };
        let Some((t, v, d, s, tok)) = parse(b, dcil) else { return QUICHE_ERR_INVALID_PACKET.c() };
        // SAFETY: the out pointers are valid (checked above) and each
        // buffer holds its `*_len` bytes.
        unsafe {
            *version = v;
            *ty = type_number(t);
            if put(s, scid, scid_len).is_err()
                || put(d, dcid, dcid_len).is_err()
                || put(tok, token, token_len).is_err()
            {
                return QUICHE_ERR_BUFFER_TOO_SHORT.c();
            }
        }
        0
    })
}

/// Whether this library speaks QUIC `version` (only QUIC v1).
#[no_mangle]
pub extern "C" fn quiche_version_is_supported(version: u32) -> bool {
    crate::guard(false, || version == QUIC_V1)
}

/// Write into `out` a Version Negotiation packet answering a client whose
/// packet had source ID `scid` and destination ID `dcid`. Returns its
/// length or QUICHE_ERR_BUFFER_TOO_SHORT.
#[no_mangle]
pub unsafe extern "C" fn quiche_negotiate_version(
    scid: *const u8,
    scid_len: usize,
    dcid: *const u8,
    dcid_len: usize,
    out: *mut u8,
    out_len: usize,
) -> ssize_t {
    guard(QUICHE_ERR_INVALID_STATE.ss(), || {
        // SAFETY: each pointer holds its length in bytes.
        let (Some(s), Some(d), Some(o)) =
            (unsafe { (slice(scid, scid_len), slice(dcid, dcid_len), slice_mut(out, out_len)) })
        else {
            return QUICHE_ERR_INVALID_STATE.ss();
        };
        let mut w = Writer::new(o);
        // The reply goes to the client: its source ID becomes our destination.
        match packet::write_version_negotiation(&mut w, s, d, &[QUIC_V1]) {
            Ok(()) => w.pos() as ssize_t,
            Err(_) => QUICHE_ERR_BUFFER_TOO_SHORT.ss(),
        }
    })
}

/// Write into `out` a Retry packet answering a client whose Initial had
/// source ID `scid` and destination ID `dcid`: the client is to come back
/// to `new_scid` with `token`. Returns its length or a negative error.
#[no_mangle]
pub unsafe extern "C" fn quiche_retry(
    scid: *const u8,
    scid_len: usize,
    dcid: *const u8,
    dcid_len: usize,
    new_scid: *const u8,
    new_scid_len: usize,
    token: *const u8,
    token_len: usize,
    version: u32,
    out: *mut u8,
    out_len: usize,
) -> ssize_t {
    guard(QUICHE_ERR_INVALID_STATE.ss(), || {
        // SAFETY: each pointer holds its length in bytes.
        let ids = unsafe { (slice(scid, scid_len), slice(dcid, dcid_len), slice(new_scid, new_scid_len)) };
        // SAFETY: as above.
        let (tok, o) = unsafe { (slice(token, token_len), slice_mut(out, out_len)) };
        let (Some(s), Some(d), Some(n), Some(tok), Some(o)) = (ids.0, ids.1, ids.2, tok, o) else {
            return QUICHE_ERR_INVALID_STATE.ss();
        };
        if version != QUIC_V1 {
            return super::QUICHE_ERR_UNKNOWN_VERSION.ss();
        }
        let (Some(s), Some(n)) = (ConnectionId::from_slice(s), ConnectionId::from_slice(n)) else {
            return QUICHE_ERR_INVALID_STATE.ss();
        };
        write_retry(o, &s, &n, d, tok).map_or(QUICHE_ERR_BUFFER_TOO_SHORT.ss(), |n| n as ssize_t)
    })
}

/// A Retry to `client_scid` from `new_scid`, with its integrity tag over
/// the client's original destination ID `odcid` (RFC 9001 §5.8).
fn write_retry(
    out: &mut [u8],
    client_scid: &ConnectionId,
    new_scid: &ConnectionId,
    odcid: &[u8],
    token: &[u8],
) -> Option<usize> {
    let mut w = Writer::new(out);
    packet::write_retry(&mut w, Version::V1, client_scid, new_scid, token).ok()?;
    let len = w.pos();
    let tag = engine::crypto::retry_tag_for(Version::V1, odcid, &out[..len]).ok()?;
    out.get_mut(len..len + tag.len())?.copy_from_slice(&tag);
    Some(len + tag.len())
}
