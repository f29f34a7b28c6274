//! ACK and PATH_ACK ranges (RFC 9000 §19.3, draft-ietf-quic-multipath-21
//! §4.1): a validated, allocation-free view of received ranges, and the
//! allocation-free encoders the send path uses.

use std::fmt;
use std::ops::Range;

use super::ty;
use crate::codec::{varint_len, Reader, Writer};
use crate::error::{BufferTooShort, TransportError};
use crate::ranges::RangeSet;

/// ECN counts carried by ACK (0x03) and PATH_ACK (0x3f) frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnCounts {
    /// Packets received with ECT(0).
    pub ect0: u64,
    /// Packets received with ECT(1).
    pub ect1: u64,
    /// Packets received with ECN-CE.
    pub ce: u64,
}

impl EcnCounts {
    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Self, BufferTooShort> {
        Ok(Self { ect0: r.varint()?, ect1: r.varint()?, ce: r.varint()? })
    }

    pub(crate) fn encode(&self, w: &mut Writer<'_>) -> Result<(), BufferTooShort> {
        w.varint(self.ect0)?;
        w.varint(self.ect1)?;
        w.varint(self.ce)
    }

    pub(crate) fn encoded_len(&self) -> usize {
        varint_len(self.ect0) + varint_len(self.ect1) + varint_len(self.ce)
    }
}

/// The acknowledged ranges of a received ACK/PATH_ACK frame. Validated at
/// decode time (no range reaches below packet number 0), iterated from the
/// highest range to the lowest straight from the frame bytes.
#[derive(Clone, Copy)]
pub struct AckRanges<'a> {
    largest: u64,
    first_range: u64,
    /// Number of (Gap, ACK Range Length) pairs in `pairs`.
    count: u64,
    pairs: &'a [u8],
}

impl<'a> AckRanges<'a> {
    /// Read Largest Acknowledged, ACK Delay, ACK Range Count, First ACK
    /// Range and the range pairs; returns the ranges and the ACK Delay.
    pub(crate) fn decode(r: &mut Reader<'a>) -> Result<(Self, u64), TransportError> {
        let largest = r.varint()?;
        let ack_delay = r.varint()?;
        let count = r.varint()?;
        let first_range = r.varint()?;
        let mut smallest =
            largest.checked_sub(first_range).ok_or(TransportError::encoding("ACK range below zero"))?;
        let start = r.pos();
        let all = r.rest();
        // Each pair takes at least two bytes, so `count` cannot make this
        // loop run longer than the frame is.
        for _ in 0..count {
            let gap = r.varint()?;
            let len = r.varint()?;
            let next_largest = smallest
                .checked_sub(gap)
                .and_then(|v| v.checked_sub(2))
                .ok_or(TransportError::encoding("ACK gap below zero"))?;
            smallest =
                next_largest.checked_sub(len).ok_or(TransportError::encoding("ACK range below zero"))?;
        }
        let pairs = all.get(..r.pos() - start).unwrap_or(&[]);
        Ok((Self { largest, first_range, count, pairs }, ack_delay))
    }

    /// Largest acknowledged packet number.
    #[inline]
    pub fn largest(&self) -> u64 {
        self.largest
    }

    /// Smallest acknowledged packet number (walks the ranges).
    pub fn smallest(&self) -> u64 {
        self.iter().last().map_or(self.largest, |r| r.start)
    }

    /// Number of disjoint ranges (at least one).
    #[inline]
    pub fn len(&self) -> u64 {
        self.count + 1
    }

    /// Always false: an ACK acknowledges at least one packet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The acknowledged ranges, highest first, as half-open ranges.
    pub fn iter(&self) -> AckRangeIter<'a> {
        AckRangeIter {
            next: Some(self.largest - self.first_range..self.largest + 1),
            reader: Reader::new(self.pairs),
            left: self.count,
        }
    }
}

impl PartialEq for AckRanges<'_> {
    /// Equal when they acknowledge the same packets, whatever the encoding.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for AckRanges<'_> {}

impl fmt::Debug for AckRanges<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &AckRanges<'a> {
    type Item = Range<u64>;
    type IntoIter = AckRangeIter<'a>;
    fn into_iter(self) -> AckRangeIter<'a> {
        self.iter()
    }
}

/// Iterator over [`AckRanges`], highest range first.
#[derive(Clone, Debug)]
pub struct AckRangeIter<'a> {
    next: Option<Range<u64>>,
    reader: Reader<'a>,
    left: u64,
}

impl Iterator for AckRangeIter<'_> {
    type Item = Range<u64>;

    fn next(&mut self) -> Option<Range<u64>> {
        let cur = self.next.take()?;
        if self.left > 0 {
            self.left -= 1;
            // Validated at decode; checked arithmetic only as a backstop.
            let gap = self.reader.varint().ok();
            let len = self.reader.varint().ok();
            if let (Some(gap), Some(len)) = (gap, len) {
                let largest = cur.start.checked_sub(gap).and_then(|v| v.checked_sub(2));
                if let Some(largest) = largest {
                    if let Some(smallest) = largest.checked_sub(len) {
                        self.next = Some(smallest..largest + 1);
                    }
                }
            }
        }
        Some(cur)
    }
}

fn ack_type(path_id: Option<u64>, ecn: bool) -> u64 {
    match (path_id.is_some(), ecn) {
        (false, false) => ty::ACK,
        (false, true) => ty::ACK_ECN,
        (true, false) => ty::PATH_ACK,
        (true, true) => ty::PATH_ACK_ECN,
    }
}

/// Gap and ACK Range Length of `cur` following the lower end of `prev`.
fn pair(prev_start: u64, cur: &Range<u64>) -> (u64, u64) {
    let cur_largest = cur.end - 1;
    (prev_start - cur_largest - 2, cur_largest - cur.start)
}

/// Bytes of every field except ACK Range Count and the (Gap, Length) pairs.
fn ack_fixed_len(path_id: Option<u64>, top: &Range<u64>, ack_delay: u64, ecn: Option<&EcnCounts>) -> usize {
    let largest = top.end - 1;
    varint_len(ack_type(path_id, ecn.is_some()))
        + path_id.map_or(0, varint_len)
        + varint_len(largest)
        + varint_len(ack_delay)
        + varint_len(largest - top.start)
        + ecn.map_or(0, EcnCounts::encoded_len)
}

/// How many of the newest ranges fit in `max_len` bytes, and the frame
/// length with that many; `None` if not even the newest range fits or the
/// set is empty.
pub fn ack_fit(
    path_id: Option<u64>,
    ranges: &RangeSet,
    ack_delay: u64,
    ecn: Option<&EcnCounts>,
    max_len: usize,
) -> Option<(usize, usize)> {
    let mut it = ranges.iter().rev();
    let top = it.next()?;
    let fixed = ack_fixed_len(path_id, top, ack_delay, ecn);
    let mut best = None;
    let mut pairs_len = 0usize;
    let mut n = 1usize;
    let mut prev_start = top.start;
    loop {
        let total = fixed + varint_len(n as u64 - 1) + pairs_len;
        if total > max_len {
            // The length only grows with more ranges.
            break;
        }
        best = Some((n, total));
        let Some(r) = it.next() else { break };
        let (gap, len) = pair(prev_start, r);
        pairs_len += varint_len(gap) + varint_len(len);
        prev_start = r.start;
        n += 1;
    }
    best
}

/// Encoded length of an ACK (or, with `path_id`, PATH_ACK) frame carrying
/// every range of `ranges`; 0 for an empty set.
pub fn ack_encoded_len(
    path_id: Option<u64>,
    ranges: &RangeSet,
    ack_delay: u64,
    ecn: Option<&EcnCounts>,
) -> usize {
    ack_fit(path_id, ranges, ack_delay, ecn, usize::MAX).map_or(0, |(_, len)| len)
}

fn write_ack_ranges(
    w: &mut Writer<'_>,
    path_id: Option<u64>,
    ranges: &RangeSet,
    n: usize,
    ack_delay: u64,
    ecn: Option<&EcnCounts>,
) -> Result<(), BufferTooShort> {
    let mut it = ranges.iter().rev().take(n);
    let Some(top) = it.next() else { return Ok(()) };
    w.varint(ack_type(path_id, ecn.is_some()))?;
    if let Some(p) = path_id {
        w.varint(p)?;
    }
    w.varint(top.end - 1)?;
    w.varint(ack_delay)?;
    w.varint(n as u64 - 1)?;
    w.varint(top.end - 1 - top.start)?;
    let mut prev_start = top.start;
    for r in it {
        let (gap, len) = pair(prev_start, r);
        w.varint(gap)?;
        w.varint(len)?;
        prev_start = r.start;
    }
    if let Some(e) = ecn {
        e.encode(w)?;
    }
    Ok(())
}

/// Write an ACK frame (or PATH_ACK when `path_id` is set) for all of
/// `ranges`, newest first. `ack_delay` is the already-scaled wire value
/// (microseconds >> ack_delay_exponent). An empty set writes nothing.
pub fn encode_ack(
    w: &mut Writer<'_>,
    path_id: Option<u64>,
    ranges: &RangeSet,
    ack_delay: u64,
    ecn: Option<&EcnCounts>,
) -> Result<(), BufferTooShort> {
    debug_assert!(!ranges.is_empty(), "encode_ack with no ranges");
    if ack_encoded_len(path_id, ranges, ack_delay, ecn) > w.remaining() {
        return Err(BufferTooShort);
    }
    write_ack_ranges(w, path_id, ranges, ranges.len(), ack_delay, ecn)
}

/// Like [`encode_ack`] but using at most `max_len` bytes (and no more than
/// the writer has room for): the oldest ranges are left out as needed.
/// Returns how many ranges were written; fails, writing nothing, if not even
/// the newest range fits or the set is empty.
pub fn encode_ack_max(
    w: &mut Writer<'_>,
    path_id: Option<u64>,
    ranges: &RangeSet,
    ack_delay: u64,
    ecn: Option<&EcnCounts>,
    max_len: usize,
) -> Result<usize, BufferTooShort> {
    let room = max_len.min(w.remaining());
    let (n, _) = ack_fit(path_id, ranges, ack_delay, ecn, room).ok_or(BufferTooShort)?;
    write_ack_ranges(w, path_id, ranges, n, ack_delay, ecn)?;
    Ok(n)
}

/// Re-encode decoded ranges (used by `Frame::encode`).
pub(crate) fn encode_ranges(w: &mut Writer<'_>, ranges: &AckRanges<'_>) -> Result<(), BufferTooShort> {
    let mut it = ranges.iter();
    let Some(top) = it.next() else { return Ok(()) };
    w.varint(ranges.count)?;
    w.varint(top.end - 1 - top.start)?;
    let mut prev_start = top.start;
    for r in it {
        let (gap, len) = pair(prev_start, &r);
        w.varint(gap)?;
        w.varint(len)?;
        prev_start = r.start;
    }
    Ok(())
}

/// Encoded length of what [`encode_ranges`] writes.
pub(crate) fn ranges_len(ranges: &AckRanges<'_>) -> usize {
    let mut it = ranges.iter();
    let Some(top) = it.next() else { return 0 };
    let mut n = varint_len(ranges.count) + varint_len(top.end - 1 - top.start);
    let mut prev_start = top.start;
    for r in it {
        let (gap, len) = pair(prev_start, &r);
        n += varint_len(gap) + varint_len(len);
        prev_start = r.start;
    }
    n
}
