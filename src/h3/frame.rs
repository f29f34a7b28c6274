//! HTTP/3 frames (RFC 9114 §7): encoding, and a decoder that takes stream
//! bytes in arbitrary pieces. DATA payloads are handed through as they
//! arrive rather than buffered whole; other frames are buffered up to a
//! size limit and parsed when complete.

use std::collections::BTreeSet;

use super::error::{H3Code, H3Error};
use crate::codec::{encode_varint_into, varint_len, Reader, VARINT_MAX};

/// DATA frame type.
pub const DATA: u64 = 0x00;
/// HEADERS frame type.
pub const HEADERS: u64 = 0x01;
/// CANCEL_PUSH frame type.
pub const CANCEL_PUSH: u64 = 0x03;
/// SETTINGS frame type.
pub const SETTINGS: u64 = 0x04;
/// PUSH_PROMISE frame type.
pub const PUSH_PROMISE: u64 = 0x05;
/// GOAWAY frame type.
pub const GOAWAY: u64 = 0x07;
/// MAX_PUSH_ID frame type.
pub const MAX_PUSH_ID: u64 = 0x0d;

/// SETTINGS_QPACK_MAX_TABLE_CAPACITY (RFC 9204 §5).
pub const SETTING_QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
/// SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114 §7.2.4.1).
pub const SETTING_MAX_FIELD_SECTION_SIZE: u64 = 0x06;
/// SETTINGS_QPACK_BLOCKED_STREAMS (RFC 9204 §5).
pub const SETTING_QPACK_BLOCKED_STREAMS: u64 = 0x07;

/// Default limit on the payload of a buffered (non-DATA) frame.
pub const DEFAULT_MAX_FRAME_PAYLOAD: u64 = 64 * 1024;

/// Frame types of HTTP/2 that are reserved in HTTP/3 (RFC 9114 §7.2.8):
/// PRIORITY, PING, WINDOW_UPDATE, CONTINUATION.
pub fn is_reserved_h2_frame(ty: u64) -> bool {
    matches!(ty, 0x02 | 0x06 | 0x08 | 0x09)
}

/// Setting identifiers from HTTP/2 with no HTTP/3 meaning (RFC 9114
/// §7.2.4.1); receiving one is H3_SETTINGS_ERROR.
pub fn is_reserved_h2_setting(id: u64) -> bool {
    matches!(id, 0x02..=0x05)
}

/// Whether `v` is a reserved "grease" value of the form 0x1f * N + 0x21
/// (RFC 9114 §7.2.8, §7.2.4.1, §6.2.3).
pub fn is_grease(v: u64) -> bool {
    v >= 0x21 && (v - 0x21) % 0x1f == 0
}

/// The peer's (or our) SETTINGS.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY; absent means 0.
    pub qpack_max_table_capacity: Option<u64>,
    /// SETTINGS_MAX_FIELD_SECTION_SIZE; absent means unlimited.
    pub max_field_section_size: Option<u64>,
    /// SETTINGS_QPACK_BLOCKED_STREAMS; absent means 0.
    pub qpack_blocked_streams: Option<u64>,
    /// Other identifiers (extensions, grease), in wire order.
    pub other: Vec<(u64, u64)>,
}

/// One HTTP/3 frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// DATA. The decoder never produces this (it streams DATA payloads as
    /// [`Item::DataPayload`]); it exists for encoding and for tests.
    Data {
        /// Payload bytes.
        payload: Vec<u8>,
    },
    /// HEADERS: an encoded field section.
    Headers {
        /// QPACK-encoded field section.
        field_section: Vec<u8>,
    },
    /// CANCEL_PUSH.
    CancelPush {
        /// Push ID being cancelled.
        push_id: u64,
    },
    /// SETTINGS.
    Settings(Settings),
    /// PUSH_PROMISE.
    PushPromise {
        /// Push ID.
        push_id: u64,
        /// QPACK-encoded request field section.
        field_section: Vec<u8>,
    },
    /// GOAWAY: a stream ID (from a server) or push ID (from a client).
    GoAway {
        /// Stream or push ID.
        id: u64,
    },
    /// MAX_PUSH_ID.
    MaxPushId {
        /// Largest push ID the server may use.
        push_id: u64,
    },
    /// A frame of an unknown or grease type, whose payload was skipped
    /// (RFC 9114 §9: unknown frame types are ignored).
    Unknown {
        /// The frame type.
        frame_type: u64,
    },
}

/// Append a QUIC varint (values above 2^62-1 are clamped).
pub fn encode_varint(v: u64, out: &mut Vec<u8>) {
    push_varint(v, out)
}

fn push_varint(v: u64, out: &mut Vec<u8>) {
    let v = v.min(VARINT_MAX);
    let len = varint_len(v);
    let start = out.len();
    out.resize(start + len, 0);
    if let Some(slot) = out.get_mut(start..) {
        encode_varint_into(v, slot);
    }
}

/// Append a DATA frame header announcing `len` payload bytes.
pub fn encode_data_header(len: u64, out: &mut Vec<u8>) {
    push_varint(DATA, out);
    push_varint(len, out);
}

/// A DATA frame header for `len` body bytes, on the stack: the bytes and
/// how many of them are used (type 0x00 takes one; `len` at most 2^62-1).
pub fn data_header(len: u64) -> ([u8; 9], usize) {
    let mut out = [0u8; 9];
    let n = varint_len(len).min(8);
    encode_varint_into(len, &mut out[1..1 + n]);
    (out, 1 + n)
}

impl Frame {
    /// The frame's wire type.
    pub fn frame_type(&self) -> u64 {
        match self {
            Frame::Data { .. } => DATA,
            Frame::Headers { .. } => HEADERS,
            Frame::CancelPush { .. } => CANCEL_PUSH,
            Frame::Settings(_) => SETTINGS,
            Frame::PushPromise { .. } => PUSH_PROMISE,
            Frame::GoAway { .. } => GOAWAY,
            Frame::MaxPushId { .. } => MAX_PUSH_ID,
            Frame::Unknown { frame_type } => *frame_type,
        }
    }

    /// Append the frame's wire form to `out`. `Unknown` encodes with an
    /// empty payload (useful for grease).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut payload = Vec::new();
        match self {
            Frame::Data { payload: p } | Frame::Headers { field_section: p } => payload.extend_from_slice(p),
            Frame::CancelPush { push_id: v } | Frame::GoAway { id: v } | Frame::MaxPushId { push_id: v } => {
                push_varint(*v, &mut payload)
            }
            Frame::Settings(s) => {
                let known = [
                    (SETTING_QPACK_MAX_TABLE_CAPACITY, s.qpack_max_table_capacity),
                    (SETTING_MAX_FIELD_SECTION_SIZE, s.max_field_section_size),
                    (SETTING_QPACK_BLOCKED_STREAMS, s.qpack_blocked_streams),
                ];
                for (id, v) in known {
                    if let Some(v) = v {
                        push_varint(id, &mut payload);
                        push_varint(v, &mut payload);
                    }
                }
                for &(id, v) in &s.other {
                    push_varint(id, &mut payload);
                    push_varint(v, &mut payload);
                }
            }
            Frame::PushPromise { push_id, field_section } => {
                push_varint(*push_id, &mut payload);
                payload.extend_from_slice(field_section);
            }
            Frame::Unknown { .. } => {}
        }
        push_varint(self.frame_type(), out);
        push_varint(payload.len() as u64, out);
        out.extend_from_slice(&payload);
    }
}

/// Parse a SETTINGS payload (RFC 9114 §7.2.4).
pub fn parse_settings(payload: &[u8]) -> Result<Settings, H3Error> {
    let mut r = Reader::new(payload);
    let mut s = Settings::default();
    let mut seen = BTreeSet::new();
    while !r.is_empty() {
        let (id, v) = match (r.varint(), r.varint()) {
            (Ok(id), Ok(v)) => (id, v),
            _ => return Err(H3Error::frame("truncated SETTINGS")),
        };
        if is_reserved_h2_setting(id) {
            return Err(H3Error::new(H3Code::SETTINGS_ERROR, "HTTP/2 setting in SETTINGS"));
        }
        if !seen.insert(id) {
            return Err(H3Error::new(H3Code::SETTINGS_ERROR, "duplicate setting"));
        }
        match id {
            SETTING_QPACK_MAX_TABLE_CAPACITY => s.qpack_max_table_capacity = Some(v),
            SETTING_MAX_FIELD_SECTION_SIZE => s.max_field_section_size = Some(v),
            SETTING_QPACK_BLOCKED_STREAMS => s.qpack_blocked_streams = Some(v),
            _ => s.other.push((id, v)),
        }
    }
    Ok(s)
}

fn parse_single_varint(payload: &[u8]) -> Result<u64, H3Error> {
    let mut r = Reader::new(payload);
    let v = r.varint().map_err(|_| H3Error::frame("truncated frame"))?;
    if !r.is_empty() {
        return Err(H3Error::frame("trailing bytes in frame"));
    }
    Ok(v)
}

/// Parse a complete non-DATA frame payload of type `ty`.
pub fn parse_payload(ty: u64, payload: &[u8]) -> Result<Frame, H3Error> {
    Ok(match ty {
        HEADERS => Frame::Headers { field_section: payload.to_vec() },
        CANCEL_PUSH => Frame::CancelPush { push_id: parse_single_varint(payload)? },
        SETTINGS => Frame::Settings(parse_settings(payload)?),
        PUSH_PROMISE => {
            let mut r = Reader::new(payload);
            let push_id = r.varint().map_err(|_| H3Error::frame("truncated PUSH_PROMISE"))?;
            Frame::PushPromise { push_id, field_section: r.rest().to_vec() }
        }
        GOAWAY => Frame::GoAway { id: parse_single_varint(payload)? },
        MAX_PUSH_ID => Frame::MaxPushId { push_id: parse_single_varint(payload)? },
        _ => Frame::Unknown { frame_type: ty },
    })
}

/// Accumulates one QUIC varint that may arrive a byte at a time.
#[derive(Clone, Debug, Default)]
pub struct VarintAccumulator {
    value: u64,
    have: usize,
    need: usize,
}

impl VarintAccumulator {
    /// Feed one byte; returns the value once complete (and resets).
    pub fn push(&mut self, b: u8) -> Option<u64> {
        if self.have == 0 {
            self.need = 1 << (b >> 6);
            self.value = (b & 0x3f) as u64;
        } else {
            self.value = (self.value << 8) | b as u64;
        }
        self.have += 1;
        if self.have == self.need {
            self.have = 0;
            Some(self.value)
        } else {
            None
        }
    }
    /// Whether no byte of a varint is pending.
    pub fn is_empty(&self) -> bool {
        self.have == 0
    }
}

/// What the decoder produced from the bytes it was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// A complete non-DATA frame.
    Frame(Frame),
    /// A DATA frame header; its payload follows as `DataPayload` items.
    DataHeader {
        /// Payload length.
        len: u64,
    },
    /// The first `n` bytes of the input passed to this call are DATA payload.
    DataPayload(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Type,
    Length,
    Payload,
    Skip,
    Data,
}

/// Incremental frame decoder for one stream.
#[derive(Clone, Debug)]
pub struct FrameDecoder {
    state: State,
    acc: VarintAccumulator,
    ty: u64,
    remaining: u64,
    payload: Vec<u8>,
    max_payload: u64,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME_PAYLOAD)
    }
}

impl FrameDecoder {
    /// A decoder refusing buffered (non-DATA, known) frames larger than
    /// `max_payload` bytes with H3_EXCESSIVE_LOAD.
    pub fn new(max_payload: u64) -> Self {
        Self {
            state: State::Type,
            acc: VarintAccumulator::default(),
            ty: 0,
            remaining: 0,
            payload: Vec::new(),
            max_payload,
        }
    }

    /// Whether the decoder sits exactly between two frames (a clean place
    /// for the stream to end, RFC 9114 §7.1).
    pub fn at_boundary(&self) -> bool {
        self.state == State::Type && self.acc.is_empty()
    }

    /// Whether the decoder is reading a frame's type or length.
    pub fn in_header(&self) -> bool {
        matches!(self.state, State::Type | State::Length)
    }

    /// DATA payload bytes still to come in the current DATA frame.
    pub fn data_remaining(&self) -> u64 {
        if self.state == State::Data {
            self.remaining
        } else {
            0
        }
    }

    /// Record that `n` DATA payload bytes were taken by the caller directly
    /// (without passing them through [`decode`](Self::decode)).
    pub fn consume_data(&mut self, n: u64) {
        if self.state == State::Data {
            self.remaining = self.remaining.saturating_sub(n);
            if self.remaining == 0 {
                self.state = State::Type;
            }
        }
    }

    /// Decode from `input`, which continues where the last call's consumed
    /// bytes ended. Returns how many bytes were consumed and at most one item;
    /// `(n, None)` with `n == input.len()` means more input is needed.
    pub fn decode(&mut self, input: &[u8]) -> Result<(usize, Option<Item>), H3Error> {
        let mut pos = 0;
        while pos < input.len() {
            match self.state {
                State::Type | State::Length => {
                    let b = input[pos];
                    pos += 1;
                    let Some(v) = self.acc.push(b) else { continue };
                    if self.state == State::Type {
                        self.ty = v;
                        self.state = State::Length;
                        continue;
                    }
                    if let Some(item) = self.start_payload(v)? {
                        return Ok((pos, Some(item)));
                    }
                }
                State::Data => {
                    if pos > 0 {
                        // Payload must start at input[0] of a call.
                        return Ok((pos, None));
                    }
                    let n = self.remaining.min(input.len() as u64) as usize;
                    self.consume_data(n as u64);
                    return Ok((n, Some(Item::DataPayload(n))));
                }
                State::Payload | State::Skip => {
                    let avail = (input.len() - pos) as u64;
                    let n = self.remaining.min(avail) as usize;
                    if self.state == State::Payload {
                        self.payload.extend_from_slice(input.get(pos..pos + n).unwrap_or_default());
                    }
                    pos += n;
                    self.remaining -= n as u64;
                    if self.remaining == 0 {
                        return Ok((pos, Some(self.finish_frame()?)));
                    }
                }
            }
        }
        Ok((pos, None))
    }

    /// The frame length is known: pick the payload state.
    fn start_payload(&mut self, len: u64) -> Result<Option<Item>, H3Error> {
        let ty = self.ty;
        self.remaining = len;
        if is_reserved_h2_frame(ty) {
            return Err(H3Error::unexpected("HTTP/2 frame type"));
        }
        match ty {
            DATA => {
                self.state = if len == 0 { State::Type } else { State::Data };
                Ok(Some(Item::DataHeader { len }))
            }
            CANCEL_PUSH | GOAWAY | MAX_PUSH_ID if !(1..=8).contains(&len) => {
                Err(H3Error::frame("bad length for a single-integer frame"))
            }
            HEADERS | CANCEL_PUSH | SETTINGS | PUSH_PROMISE | GOAWAY | MAX_PUSH_ID => {
                if len > self.max_payload {
                    return Err(H3Error::new(H3Code::EXCESSIVE_LOAD, "frame too large"));
                }
                self.state = State::Payload;
                self.payload.clear();
                if len == 0 {
                    return self.finish_frame().map(Some);
                }
                Ok(None)
            }
            _ => {
                self.state = State::Skip;
                if len == 0 {
                    return self.finish_frame().map(Some);
                }
                Ok(None)
            }
        }
    }

    fn finish_frame(&mut self) -> Result<Item, H3Error> {
        let skipped = self.state == State::Skip;
        self.state = State::Type;
        if skipped {
            return Ok(Item::Frame(Frame::Unknown { frame_type: self.ty }));
        }
        let payload = std::mem::take(&mut self.payload);
        parse_payload(self.ty, &payload).map(Item::Frame)
    }
}

/// Decode every frame in `input`, joining DATA payloads into `Frame::Data`.
/// Returns the frames and whether `input` ended on a frame boundary.
/// Convenience for tests and fuzzing.
pub fn decode_all(input: &[u8], max_payload: u64) -> Result<(Vec<Frame>, bool), H3Error> {
    let mut d = FrameDecoder::new(max_payload);
    let mut frames = Vec::new();
    let mut pos = 0;
    loop {
        let rest = input.get(pos..).unwrap_or_default();
        let (n, item) = d.decode(rest)?;
        let done = n == 0 && item.is_none();
        match item {
            Some(Item::Frame(f)) => frames.push(f),
            Some(Item::DataHeader { .. }) => frames.push(Frame::Data { payload: Vec::new() }),
            Some(Item::DataPayload(k)) => {
                if let Some(Frame::Data { payload }) = frames.last_mut() {
                    payload.extend_from_slice(rest.get(..k).unwrap_or_default());
                }
            }
            None => {}
        }
        pos += n;
        if done {
            break;
        }
    }
    Ok((frames, d.at_boundary()))
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
