//! The sending half of a stream (RFC 9000 §3.1): a bounded buffer of
//! application data, new-data and retransmission cursors, acknowledgement
//! bookkeeping, FIN and RESET_STREAM state.

use std::collections::VecDeque;
use std::ops::Range;

use bytes::Bytes;

use super::flow::SendCredit;
use super::StreamError;
use crate::ranges::RangeSet;

/// Largest capacity a segment is given beyond its first write: small
/// writes are appended into a segment's spare capacity so each byte is
/// copied once.
const MAX_SPARE_SEGMENT: usize = 16 * 1024;

/// What to put in the next STREAM frame. The caller copies `len` bytes from
/// `offset` with [`SendStream::copy_data`] straight into its packet buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Stream offset of the first byte.
    pub offset: u64,
    /// Number of bytes (0 for a FIN-only frame).
    pub len: usize,
    /// Whether the frame carries FIN.
    pub fin: bool,
    /// Whether this is data sent before and declared lost.
    pub is_retransmit: bool,
}

/// A segment of the send buffer: bytes copied from the application (small
/// writes fill its spare capacity) or a buffer shared with it.
#[derive(Debug)]
enum Seg {
    Copied(Vec<u8>),
    Shared(Bytes),
}

impl Seg {
    fn bytes(&self) -> &[u8] {
        match self {
            Seg::Copied(v) => v,
            Seg::Shared(b) => b,
        }
    }

    fn len(&self) -> usize {
        self.bytes().len()
    }

    /// Bytes of memory held (a shared buffer counts at its length).
    #[cfg(test)]
    fn capacity(&self) -> usize {
        match self {
            Seg::Copied(v) => v.capacity(),
            Seg::Shared(b) => b.len(),
        }
    }
}

/// Application bytes not yet acknowledged, as a deque of segments so that
/// acknowledged prefixes are dropped without moving the rest.
#[derive(Debug, Default)]
struct SendBuf {
    /// (stream offset of the segment's first byte, bytes).
    segs: VecDeque<(u64, Seg)>,
    /// Offset one past the last byte written by the application.
    end: u64,
}

impl SendBuf {
    fn append(&mut self, mut data: &[u8]) {
        if let Some((_, Seg::Copied(last))) = self.segs.back_mut() {
            let spare = last.capacity() - last.len();
            let n = spare.min(data.len());
            last.extend_from_slice(&data[..n]);
            data = &data[n..];
            self.end += n as u64;
        }
        if !data.is_empty() {
            let cap = super::segment_capacity(self.end, MAX_SPARE_SEGMENT);
            let mut v = Vec::with_capacity(data.len().max(cap));
            v.extend_from_slice(data);
            self.segs.push_back((self.end, Seg::Copied(v)));
            self.end += data.len() as u64;
        }
    }

    /// Hold `data` as a segment of its own (no copy).
    fn push(&mut self, data: Bytes) {
        if !data.is_empty() {
            let len = data.len() as u64;
            self.segs.push_back((self.end, Seg::Shared(data)));
            self.end += len;
        }
    }

    /// Copy `dst.len()` bytes from `offset`; false if any of them is not held.
    fn copy(&self, offset: u64, dst: &mut [u8]) -> bool {
        let Some(&(base, _)) = self.segs.front() else {
            return dst.is_empty();
        };
        if offset < base || offset.saturating_add(dst.len() as u64) > self.end {
            return false;
        }
        let mut i = self.segs.partition_point(|(s, v)| s + v.len() as u64 <= offset);
        let mut pos = offset;
        let mut done = 0;
        while done < dst.len() {
            let Some((s, v)) = self.segs.get(i) else {
                return false;
            };
            let from = (pos - s) as usize;
            let n = (v.len() - from).min(dst.len() - done);
            dst[done..done + n].copy_from_slice(&v.bytes()[from..from + n]);
            done += n;
            pos += n as u64;
            i += 1;
        }
        true
    }

    /// Free segments that lie wholly below `offset`.
    fn drop_below(&mut self, offset: u64) {
        while let Some((s, v)) = self.segs.front() {
            if s + v.len() as u64 <= offset {
                self.segs.pop_front();
            } else {
                break;
            }
        }
    }

    fn clear(&mut self) {
        self.segs.clear();
    }
}

/// RESET_STREAM state of the sending half.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResetState {
    /// Application error code sent in RESET_STREAM.
    pub code: u64,
    /// Final size sent in RESET_STREAM.
    pub final_size: u64,
    /// Whether the peer acknowledged the RESET_STREAM.
    pub acked: bool,
}

/// The sending half of a stream.
#[derive(Debug)]
pub struct SendStream {
    buf: SendBuf,
    /// Next never-sent offset (also the highest offset sent so far).
    send_off: u64,
    /// Everything below this is acknowledged.
    acked_prefix: u64,
    /// Acknowledged ranges above `acked_prefix`.
    acked: RangeSet,
    /// Sent ranges declared lost and not since acknowledged.
    lost: RangeSet,
    /// Never-sent ranges below `send_off`: skipped by data sent ahead of them
    /// (a scheduler's planned position); they go out before `send_off`.
    held: RangeSet,
    fin_off: Option<u64>,
    fin_sent: bool,
    fin_acked: bool,
    fin_lost: bool,
    credit: SendCredit,
    cap: usize,
    /// At most this many written bytes not yet sent (see `set_unsent_cap`).
    unsent_cap: usize,
    reset: Option<ResetState>,
    stop_code: Option<u64>,
}

impl SendStream {
    /// A sending half whose peer limit is `max_data` and whose buffer holds
    /// at most `cap` unacknowledged bytes.
    pub fn new(max_data: u64, cap: usize) -> Self {
        SendStream {
            buf: SendBuf::default(),
            send_off: 0,
            acked_prefix: 0,
            acked: RangeSet::new(),
            lost: RangeSet::new(),
            held: RangeSet::new(),
            fin_off: None,
            fin_sent: false,
            fin_acked: false,
            fin_lost: false,
            credit: SendCredit::new(max_data),
            cap,
            unsent_cap: usize::MAX,
            reset: None,
            stop_code: None,
        }
    }

    /// Free space in the send buffer for [`write`](Self::write).
    pub fn capacity(&self) -> usize {
        let held = self.buf.end - self.acked_prefix;
        let unsent = self.buf.end.saturating_sub(self.send_off);
        let room = (self.cap as u64).saturating_sub(held);
        room.min((self.unsent_cap as u64).saturating_sub(unsent)) as usize
    }

    /// Accept writes only while fewer than `cap` written bytes wait to be
    /// sent (as TCP_NOTSENT_LOWAT does): the buffer then holds what is in
    /// flight plus `cap`, sized by the path rather than by the buffer cap.
    pub fn set_unsent_cap(&mut self, cap: usize) {
        self.unsent_cap = cap.max(1);
    }

    /// Append application data; returns how much was taken (partial when
    /// the buffer cap is reached; FIN applies only if everything was taken).
    pub fn write(&mut self, data: &[u8], fin: bool) -> Result<usize, StreamError> {
        self.write_with(data.len(), fin, |buf, n| buf.append(data.get(..n).unwrap_or_default()))
    }

    /// As [`write`](Self::write), holding (a slice of) `data` instead of
    /// copying it: the taken prefix shares `data`'s buffer.
    pub fn write_bytes(&mut self, data: &Bytes, fin: bool) -> Result<usize, StreamError> {
        self.write_with(data.len(), fin, |buf, n| buf.push(data.slice(..n)))
    }

    /// A write of `len` bytes: the state checks and how much fits, then
    /// `put(buf, n)` stores the first `n`.
    fn write_with(
        &mut self,
        len: usize,
        fin: bool,
        put: impl FnOnce(&mut SendBuf, usize),
    ) -> Result<usize, StreamError> {
        if let Some(code) = self.stop_code {
            return Err(StreamError::StopSending(code));
        }
        if self.reset.is_some() {
            return Err(StreamError::InvalidState);
        }
        if let Some(f) = self.fin_off {
            return if len == 0 && (fin || f == self.buf.end) { Ok(0) } else { Err(StreamError::FinalSize) };
        }
        if self.buf.end.saturating_add(len as u64) > super::id::StreamId::MAX {
            return Err(StreamError::FinalSize);
        }
        let n = self.capacity().min(len);
        if n == 0 && len > 0 {
            return Err(StreamError::Done);
        }
        put(&mut self.buf, n);
        if fin && n == len {
            self.fin_off = Some(self.buf.end);
        }
        Ok(n)
    }

    /// Reduce or raise the buffer cap.
    pub fn set_cap(&mut self, cap: usize) {
        self.cap = cap;
    }

    /// The next chunk to send, without changing state: lost data first (it
    /// needs no flow credit), then new data within the peer's stream limit,
    /// `conn_credit` and `max_len`, then a lone FIN.
    pub fn peek_chunk(&self, max_len: usize, conn_credit: u64) -> Option<Chunk> {
        if self.reset.is_some() {
            return None;
        }
        if let Some(r) = self.lost.iter().next() {
            let len = (r.end - r.start).min(max_len as u64);
            if len > 0 {
                let end = r.start + len;
                return Some(Chunk {
                    offset: r.start,
                    len: len as usize,
                    fin: self.fin_off == Some(end) && !self.fin_acked,
                    is_retransmit: true,
                });
            }
            return None;
        }
        if self.fin_lost && !self.fin_acked && self.fin_sent {
            if let Some(f) = self.fin_off {
                return Some(Chunk { offset: f, len: 0, fin: true, is_retransmit: true });
            }
        }
        self.peek_unsent(max_len, conn_credit, 0)
    }

    /// The never-sent chunk that starts `skip` bytes into the data waiting to
    /// be sent (held ranges first, then from `send_off`), within the peer's
    /// limits; lost data is not considered. `skip > 0` sends ahead, leaving
    /// the skipped bytes held for later packets; that charges them to the
    /// flow credit now, so `conn_credit` must cover them too.
    pub fn peek_unsent(&self, max_len: usize, conn_credit: u64, mut skip: u64) -> Option<Chunk> {
        if self.reset.is_some() {
            return None;
        }
        for r in self.held.iter() {
            let n = r.end - r.start;
            if skip < n {
                let len = (n - skip).min(max_len as u64);
                return (len > 0).then_some(Chunk {
                    offset: r.start + skip,
                    len: len as usize,
                    fin: false,
                    is_retransmit: false,
                });
            }
            skip -= n;
        }
        let limit = self.buf.end.min(self.credit.max());
        let start = self.send_off.saturating_add(skip);
        let len = limit.saturating_sub(start).min(max_len as u64).min(conn_credit.saturating_sub(skip));
        if len > 0 {
            let end = start + len;
            return Some(Chunk {
                offset: start,
                len: len as usize,
                fin: self.fin_off == Some(end),
                is_retransmit: false,
            });
        }
        if skip == 0 && self.fin_off == Some(self.send_off) && !self.fin_sent {
            return Some(Chunk { offset: self.send_off, len: 0, fin: true, is_retransmit: false });
        }
        None
    }

    /// Record that `chunk` (from [`peek_chunk`](Self::peek_chunk)) was put in a
    /// packet. Returns the number of new bytes (to charge to MAX_DATA).
    pub fn commit_chunk(&mut self, chunk: &Chunk) -> u64 {
        let end = chunk.offset + chunk.len as u64;
        if chunk.fin {
            self.fin_sent = true;
            self.fin_lost = false;
        }
        if chunk.is_retransmit {
            self.lost.remove(chunk.offset..end);
            0
        } else if chunk.offset < self.send_off {
            // A held range: its credit was charged when it was skipped.
            self.held.remove(chunk.offset..end);
            0
        } else {
            if chunk.offset > self.send_off {
                self.held.insert(self.send_off..chunk.offset);
            }
            let new = end.saturating_sub(self.send_off);
            self.send_off = self.send_off.max(end);
            self.credit.consume(new);
            new
        }
    }

    /// [`peek_chunk`](Self::peek_chunk) + [`commit_chunk`](Self::commit_chunk).
    pub fn next_chunk(&mut self, max_len: usize, conn_credit: u64) -> Option<Chunk> {
        let c = self.peek_chunk(max_len, conn_credit)?;
        self.commit_chunk(&c);
        Some(c)
    }

    /// Copy stream bytes at `offset` into `dst` (the packet buffer). Returns
    /// false if those bytes are not buffered (acknowledged or never written).
    pub fn copy_data(&self, offset: u64, dst: &mut [u8]) -> bool {
        self.buf.copy(offset, dst)
    }

    /// A STREAM frame carrying `offset..offset+len` (and FIN if `fin`) was
    /// acknowledged.
    pub fn on_acked(&mut self, offset: u64, len: usize, fin: bool) {
        if self.reset.is_some() {
            return;
        }
        let end = offset.saturating_add(len as u64).min(self.send_off);
        if fin {
            self.fin_acked = true;
            self.fin_lost = false;
        }
        if end <= self.acked_prefix || offset >= end {
            return;
        }
        self.lost.remove(offset..end);
        if offset <= self.acked_prefix {
            self.acked_prefix = end;
            // Absorb acknowledged ranges now contiguous with the prefix.
            while let Some(r) = self.acked.iter().next().cloned() {
                if r.start <= self.acked_prefix {
                    self.acked_prefix = self.acked_prefix.max(r.end);
                    self.acked.remove(r);
                } else {
                    break;
                }
            }
            self.acked.remove_below(self.acked_prefix);
            self.buf.drop_below(self.acked_prefix);
        } else {
            self.acked.insert(offset..end);
        }
    }

    /// A STREAM frame carrying `offset..offset+len` (and FIN if `fin`) was
    /// declared lost. Returns whether anything now needs retransmission.
    pub fn on_lost(&mut self, offset: u64, len: usize, fin: bool) -> bool {
        if self.reset.is_some() {
            return false;
        }
        if fin && !self.fin_acked && self.fin_sent {
            self.fin_lost = true;
        }
        let start = offset.max(self.acked_prefix);
        let end = offset.saturating_add(len as u64).min(self.send_off);
        if start < end {
            self.lost.insert(start..end);
            // Only the acknowledged ranges overlapping the loss matter; find
            // them by binary search so heavy loss stays cheap.
            let acked = self.acked.iter().as_slice();
            let lo = acked.partition_point(|r| r.end <= start);
            let hi = acked.partition_point(|r| r.start < end);
            let overlap: Vec<Range<u64>> = acked.get(lo..hi).unwrap_or_default().to_vec();
            for r in overlap {
                self.lost.remove(r);
            }
        }
        self.has_lost()
    }

    /// Bytes waiting for retransmission.
    pub fn lost_bytes(&self) -> u64 {
        if self.reset.is_some() {
            return 0;
        }
        self.lost.iter().map(|r| r.end - r.start).sum()
    }

    /// Never-sent bytes the peer's stream limit allows now (held ones too).
    pub fn sendable_new(&self) -> u64 {
        if self.reset.is_some() {
            return 0;
        }
        self.held_bytes() + self.buf.end.min(self.credit.max()).saturating_sub(self.send_off)
    }

    /// Never-sent bytes skipped by data sent ahead of them.
    pub fn held_bytes(&self) -> u64 {
        self.held.iter().map(|r| r.end - r.start).sum()
    }

    /// The first sent, unacknowledged range at or after `from`, at most
    /// `max_len` bytes: what a redundant copy duplicates. The FIN flag is
    /// set when the range ends at a FIN already sent.
    pub fn unacked_range(&self, from: u64, max_len: usize) -> Option<Chunk> {
        if self.reset.is_some() || max_len == 0 {
            return None;
        }
        // Sent and unacknowledged: skip acknowledged and held (never sent)
        // ranges at `start`, stop at the next one. The two sets are disjoint,
        // so each pass either settles or moves past one range.
        let mut start = from.max(self.acked_prefix);
        let mut end_limit;
        loop {
            end_limit = self.send_off;
            let mut moved = false;
            for set in [&self.acked, &self.held] {
                let rs = set.iter().as_slice();
                let i = rs.partition_point(|r| r.end <= start);
                if let Some(r) = rs.get(i) {
                    if r.start <= start {
                        start = r.end;
                        moved = true;
                    } else {
                        end_limit = end_limit.min(r.start);
                    }
                }
            }
            if !moved {
                break;
            }
        }
        if start >= end_limit {
            return None;
        }
        let end = end_limit.min(start.saturating_add(max_len as u64));
        Some(Chunk {
            offset: start,
            len: (end - start) as usize,
            fin: self.fin_sent && self.fin_off == Some(end),
            is_retransmit: true,
        })
    }

    /// Whether lost data or a lost FIN waits for retransmission.
    pub fn has_lost(&self) -> bool {
        self.reset.is_none() && (!self.lost.is_empty() || (self.fin_lost && !self.fin_acked))
    }

    /// Whether never-sent data (or a never-sent FIN) is buffered.
    pub fn has_new(&self) -> bool {
        self.reset.is_none()
            && (self.send_off < self.buf.end
                || !self.held.is_empty()
                || (self.fin_off.is_some() && !self.fin_sent))
    }

    /// Whether new data waits only because of the peer's stream limit.
    pub fn is_flow_blocked(&self) -> bool {
        self.reset.is_none()
            && self.held.is_empty()
            && self.send_off < self.buf.end
            && self.send_off >= self.credit.max()
    }

    /// The limit to report in STREAM_DATA_BLOCKED, once per limit value.
    pub fn take_blocked(&mut self) -> Option<u64> {
        if self.is_flow_blocked() {
            self.credit.blocked()
        } else {
            None
        }
    }

    /// Whether we are still blocked at exactly `limit`.
    pub fn is_blocked_at(&self, limit: u64) -> bool {
        self.is_flow_blocked() && self.credit.is_blocked_at(limit)
    }

    /// Apply MAX_STREAM_DATA; returns whether the limit grew.
    pub fn on_max_stream_data(&mut self, max: u64) -> bool {
        self.credit.update_max(max)
    }

    /// The peer's current limit for this stream.
    pub fn max_data(&self) -> u64 {
        self.credit.max()
    }

    /// Abandon the stream with `code` (app's reset or forced by STOP_SENDING).
    /// Returns the RESET_STREAM to send, or None when no reset is needed
    /// (already reset, or every byte and the FIN already acknowledged).
    pub fn reset(&mut self, code: u64) -> Option<ResetState> {
        if self.reset.is_some() || self.is_complete() {
            return None;
        }
        let r = ResetState { code, final_size: self.send_off, acked: false };
        self.reset = Some(r);
        self.buf.clear();
        self.lost.clear();
        self.held.clear();
        self.acked.clear();
        Some(r)
    }

    /// STOP_SENDING received: remember the code for the application and reset
    /// with it (RFC 9000 §3.5). Returns the RESET_STREAM to send, if any.
    pub fn on_stop_sending(&mut self, code: u64) -> Option<ResetState> {
        if self.stop_code.is_none() {
            self.stop_code = Some(code);
        }
        self.reset(code)
    }

    /// The RESET_STREAM state, if the stream was reset.
    pub fn reset_state(&self) -> Option<ResetState> {
        self.reset
    }

    /// The code from the peer's STOP_SENDING, if one arrived.
    pub fn stop_code(&self) -> Option<u64> {
        self.stop_code
    }

    /// RESET_STREAM was acknowledged.
    pub fn on_reset_acked(&mut self) {
        if let Some(r) = &mut self.reset {
            r.acked = true;
        }
    }

    /// Whether every byte and the FIN were acknowledged ("Data Recvd").
    pub fn is_complete(&self) -> bool {
        self.fin_acked && self.fin_off == Some(self.acked_prefix)
    }

    /// Whether the sending half reached a terminal state.
    pub fn is_finished(&self) -> bool {
        match self.reset {
            Some(r) => r.acked,
            None => self.is_complete(),
        }
    }

    /// Whether the application may still write (no FIN, no reset).
    pub fn is_writable(&self) -> bool {
        self.reset.is_none() && self.stop_code.is_none() && self.fin_off.is_none()
    }

    /// Next never-sent offset.
    pub fn send_offset(&self) -> u64 {
        self.send_off
    }

    /// Offset one past the last byte written.
    pub fn write_offset(&self) -> u64 {
        self.buf.end
    }

    /// Everything below this offset is acknowledged.
    pub fn acked_offset(&self) -> u64 {
        self.acked_prefix
    }

    /// Bytes held in the buffer (written and not yet acknowledged).
    pub fn buffered(&self) -> u64 {
        if self.reset.is_some() {
            0
        } else {
            self.buf.end - self.acked_prefix
        }
    }
}

#[cfg(test)]
#[path = "send_tests.rs"]
mod tests;
