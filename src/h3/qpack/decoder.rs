//! Field section decoding (RFC 9204 §4.5) and the parsers for the peer's
//! encoder and decoder streams (§4.3, §4.4), for an endpoint whose dynamic
//! table capacity is 0. Anything that needs a dynamic table is an error with
//! the code RFC 9204 §2.2 and §6 assign; nothing is guessed.

use super::static_table::STATIC_TABLE;
use super::{decode_int, decode_string, PrimitiveError};
use crate::h3::error::{H3Code, H3Error};
use crate::h3::message::Header;

/// Per-field overhead counted toward the field section size (RFC 9114 §4.2.2).
const FIELD_OVERHEAD: u64 = 32;

fn fail(reason: &'static str) -> H3Error {
    H3Error::qpack(reason)
}

fn prim(e: PrimitiveError) -> H3Error {
    match e {
        PrimitiveError::Incomplete => fail("field section truncated"),
        PrimitiveError::Invalid => fail("invalid integer or string literal"),
    }
}

fn static_entry(index: u64) -> Result<&'static (&'static [u8], &'static [u8]), H3Error> {
    usize::try_from(index)
        .ok()
        .and_then(|i| STATIC_TABLE.get(i))
        .ok_or(fail("static table index out of range"))
}

/// Decode a complete encoded field section (the payload of a HEADERS or
/// PUSH_PROMISE frame). `max_size` bounds the decoded size as computed by
/// RFC 9114 §4.2.2; exceeding it is H3_EXCESSIVE_LOAD.
pub fn decode_field_section(buf: &[u8], max_size: u64) -> Result<Vec<Header>, H3Error> {
    let (ric, n) = decode_int(buf, 8).map_err(prim)?;
    if ric != 0 {
        return Err(fail("dynamic table reference (Required Insert Count > 0)"));
    }
    let rest = buf.get(n..).unwrap_or_default();
    let sign = rest.first().is_some_and(|b| b & 0x80 != 0);
    let (_delta, m) = decode_int(rest, 7).map_err(prim)?;
    if sign {
        // Base = RequiredInsertCount - DeltaBase - 1 would be negative.
        return Err(fail("negative Base"));
    }
    let mut pos = n + m;
    let mut size: u64 = 0;
    let mut out = Vec::new();
    while let Some(rest) = buf.get(pos..).filter(|r| !r.is_empty()) {
        let b = rest[0];
        let (header, used) = if b & 0x80 != 0 {
            // Indexed Field Line: 1Txxxxxx.
            if b & 0x40 == 0 {
                return Err(fail("dynamic table reference (indexed field line)"));
            }
            let (idx, used) = decode_int(rest, 6).map_err(prim)?;
            let (name, value) = static_entry(idx)?;
            (Header::new(name, value), used)
        } else if b & 0x40 != 0 {
            // Literal Field Line with Name Reference: 01NTxxxx.
            if b & 0x10 == 0 {
                return Err(fail("dynamic table reference (name reference)"));
            }
            let (idx, used) = decode_int(rest, 4).map_err(prim)?;
            let (name, _) = static_entry(idx)?;
            let tail = rest.get(used..).unwrap_or_default();
            let (value, vused) = decode_string(tail, 7, buf.len() * 2).map_err(prim)?;
            (Header { name: name.to_vec(), value }, used + vused)
        } else if b & 0x20 != 0 {
            // Literal Field Line with Literal Name: 001NHxxx.
            let (name, used) = decode_string(rest, 3, buf.len() * 2).map_err(prim)?;
            let tail = rest.get(used..).unwrap_or_default();
            let (value, vused) = decode_string(tail, 7, buf.len() * 2).map_err(prim)?;
            (Header { name, value }, used + vused)
        } else if b & 0x10 != 0 {
            return Err(fail("dynamic table reference (post-base index)"));
        } else {
            return Err(fail("dynamic table reference (post-base name reference)"));
        };
        size = size
            .saturating_add(header.name.len() as u64)
            .saturating_add(header.value.len() as u64)
            .saturating_add(FIELD_OVERHEAD);
        if size > max_size {
            return Err(H3Error::new(H3Code::EXCESSIVE_LOAD, "field section too large"));
        }
        out.push(header);
        pos += used;
    }
    Ok(out)
}

/// Parses the peer's QPACK encoder stream for a table of capacity 0: only
/// "Set Dynamic Table Capacity 0" is acceptable.
#[derive(Debug, Default)]
pub struct EncoderStreamParser {
    /// Bytes of an instruction that has not fully arrived (at most a
    /// prefixed integer, so a handful of bytes).
    pending: Vec<u8>,
}

impl EncoderStreamParser {
    /// Consume encoder-stream bytes. Errors are QPACK_ENCODER_STREAM_ERROR.
    pub fn feed(&mut self, data: &[u8]) -> Result<(), H3Error> {
        let err = |r| H3Error::new(H3Code::QPACK_ENCODER_STREAM_ERROR, r);
        self.pending.extend_from_slice(data);
        let mut pos = 0;
        while let Some(rest) = self.pending.get(pos..).filter(|r| !r.is_empty()) {
            let b = rest[0];
            if b & 0xc0 != 0 {
                return Err(err("insert into a zero-capacity dynamic table"));
            }
            if b & 0x20 == 0 {
                return Err(err("duplicate of a nonexistent entry"));
            }
            match decode_int(rest, 5) {
                Ok((0, used)) => pos += used,
                Ok(_) => return Err(err("dynamic table capacity above our maximum of 0")),
                Err(PrimitiveError::Incomplete) => break,
                Err(PrimitiveError::Invalid) => return Err(err("invalid integer")),
            }
        }
        self.pending.drain(..pos);
        Ok(())
    }
}

/// Parses the peer's QPACK decoder stream. Since we never reference the
/// dynamic table, Section Acknowledgment and Insert Count Increment are
/// always errors; Stream Cancellation is accepted and ignored.
#[derive(Debug, Default)]
pub struct DecoderStreamParser {
    pub(crate) pending: Vec<u8>,
}

impl DecoderStreamParser {
    /// Consume decoder-stream bytes. Errors are QPACK_DECODER_STREAM_ERROR.
    pub fn feed(&mut self, data: &[u8]) -> Result<(), H3Error> {
        let err = |r| H3Error::new(H3Code::QPACK_DECODER_STREAM_ERROR, r);
        self.pending.extend_from_slice(data);
        let mut pos = 0;
        while let Some(rest) = self.pending.get(pos..).filter(|r| !r.is_empty()) {
            let b = rest[0];
            if b & 0x80 != 0 {
                return Err(err("section acknowledgment without dynamic references"));
            }
            if b & 0x40 == 0 {
                return Err(err("insert count increment beyond inserts sent"));
            }
            match decode_int(rest, 6) {
                Ok((_stream, used)) => pos += used,
                Err(PrimitiveError::Incomplete) => break,
                Err(PrimitiveError::Invalid) => return Err(err("invalid integer")),
            }
        }
        self.pending.drain(..pos);
        Ok(())
    }
}
