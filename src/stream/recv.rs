//! The receiving half of a stream (RFC 9000 §3.2): reassembly of
//! out-of-order STREAM data, final-size rules (§4.5), stream flow control,
//! RESET_STREAM receipt and STOP_SENDING.

use std::collections::BTreeMap;

use super::flow::RecvWindow;
use super::StreamError;
use crate::error::{ErrorCode, TransportError};

/// Segments of in-order data grow to this size (by
/// [`segment_capacity`](super::segment_capacity)) so that the packets that
/// follow are appended in place (one copy, no reallocation).
const SEGMENT: usize = 64 * 1024;

/// What a received frame changed in connection-level flow control.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowDelta {
    /// Increase of the highest received offset (charged against MAX_DATA).
    pub received: u64,
    /// Bytes released without the application reading them (reset or
    /// stopped stream): connection credit that can be returned at once.
    pub released: u64,
}

/// The receiving half of a stream.
#[derive(Debug)]
pub struct RecvStream {
    /// Non-overlapping segments keyed by stream offset. The first one may
    /// start below `read_off` (partly read).
    segs: BTreeMap<u64, Vec<u8>>,
    /// Next offset the application reads.
    read_off: u64,
    /// End of the data contiguous from `read_off`.
    contig_end: u64,
    /// Bytes held in `segs` at or above `read_off`.
    buffered: u64,
    /// Highest offset received (end of the furthest frame).
    max_recv: u64,
    final_size: Option<u64>,
    window: RecvWindow,
    reset: Option<u64>,
    reset_read: bool,
    fin_read: bool,
    stop_code: Option<u64>,
    spare: Option<Vec<u8>>,
}

fn final_size_err(frame: u64, reason: &'static str) -> TransportError {
    TransportError::new(ErrorCode::FINAL_SIZE_ERROR, reason).with_frame(frame)
}

impl RecvStream {
    /// A receiving half advertising `window` initially, growing to at most
    /// `max_window` by auto-tuning.
    pub fn new(window: u64, max_window: u64) -> Self {
        RecvStream {
            segs: BTreeMap::new(),
            read_off: 0,
            contig_end: 0,
            buffered: 0,
            max_recv: 0,
            final_size: None,
            window: RecvWindow::new(window, max_window),
            reset: None,
            reset_read: false,
            fin_read: false,
            stop_code: None,
            spare: None,
        }
    }

    /// Apply final-size and flow-control rules for data ending at `end`.
    fn check_limits(&mut self, end: u64, fin: bool, frame: u64) -> Result<u64, TransportError> {
        if end > super::id::StreamId::MAX {
            return Err(TransportError::encoding("stream offset beyond 2^62-1").with_frame(frame));
        }
        if let Some(fs) = self.final_size {
            if end > fs {
                return Err(final_size_err(frame, "data beyond final size"));
            }
            if fin && end != fs {
                return Err(final_size_err(frame, "final size changed"));
            }
        } else if fin && end < self.max_recv {
            return Err(final_size_err(frame, "final size below received data"));
        }
        if end > self.window.max() {
            return Err(TransportError::new(ErrorCode::FLOW_CONTROL_ERROR, "stream data limit exceeded")
                .with_frame(frame));
        }
        if fin {
            self.final_size = Some(end);
        }
        let grew = end.saturating_sub(self.max_recv);
        self.max_recv = self.max_recv.max(end);
        Ok(grew)
    }

    /// A STREAM frame arrived. Data is copied once into the reassembly
    /// buffer; bytes already held (duplicates, overlaps) keep their first copy.
    pub fn on_data(&mut self, offset: u64, data: &[u8], fin: bool) -> Result<FlowDelta, TransportError> {
        let end = offset.saturating_add(data.len() as u64);
        let received = self.check_limits(end, fin, 0x08)?;
        if self.reset.is_some() || self.stop_code.is_some() {
            // Discarded: its credit goes straight back to the connection.
            return Ok(FlowDelta { received, released: received });
        }
        if end > self.read_off {
            self.insert(offset, data);
        }
        Ok(FlowDelta { received, released: 0 })
    }

    /// Store the parts of `offset..offset+data.len()` not yet held.
    fn insert(&mut self, offset: u64, data: &[u8]) {
        let (offset, data) = match self.append_in_order(offset, data) {
            Some(rest) => rest,
            None => return,
        };
        let end = offset + data.len() as u64;
        let mut cur = offset.max(self.read_off);
        while cur < end {
            // A held segment covering `cur`?
            if let Some((&k, v)) = self.segs.range(..=cur).next_back() {
                let vend = k + v.len() as u64;
                if vend > cur {
                    cur = vend;
                    continue;
                }
            }
            // Gap from `cur` up to the next held segment (or `end`).
            let gap_end = match self.segs.range(cur..end).next() {
                Some((&k, _)) => k,
                None => end,
            };
            let lo = (cur - offset) as usize;
            let hi = (gap_end - offset) as usize;
            if let Some(piece) = data.get(lo..hi) {
                self.store(cur, piece);
            }
            cur = gap_end;
        }
        self.extend_contig();
    }

    /// The common case without a tree walk: data continuing the last held
    /// segment, which ends at `contig_end`, goes into its spare room. Returns
    /// what is left for the general path (`None`: nothing).
    fn append_in_order<'d>(&mut self, offset: u64, data: &'d [u8]) -> Option<(u64, &'d [u8])> {
        let end = offset + data.len() as u64;
        let at = self.contig_end;
        if offset > at || end <= at || at < self.read_off {
            return Some((offset, data));
        }
        let Some((&k, v)) = self.segs.iter_mut().next_back() else {
            return Some((offset, data));
        };
        if k + v.len() as u64 != at {
            return Some((offset, data));
        }
        let piece = &data[(at - offset) as usize..];
        let n = (v.capacity() - v.len()).min(piece.len());
        v.extend_from_slice(&piece[..n]);
        self.buffered += n as u64;
        self.contig_end += n as u64;
        (n < piece.len()).then(|| (at + n as u64, &piece[n..]))
    }

    /// Advance `contig_end` over held segments (keys are segment starts; a
    /// segment may start below `contig_end` when partly read or appended to).
    fn extend_contig(&mut self) {
        while let Some((&k, v)) = self.segs.range(..=self.contig_end).next_back() {
            let vend = k + v.len() as u64;
            if vend > self.contig_end {
                self.contig_end = vend;
            } else {
                break;
            }
        }
    }

    /// Store a piece lying in a gap: append to the segment ending exactly at
    /// `at` if it has room, else start a segment.
    fn store(&mut self, mut at: u64, mut piece: &[u8]) {
        self.buffered += piece.len() as u64;
        let mut filled = false;
        if let Some((&k, v)) = self.segs.range_mut(..at).next_back() {
            if k + v.len() as u64 == at {
                // Fill the spare room of the segment we continue.
                let n = (v.capacity() - v.len()).min(piece.len());
                v.extend_from_slice(&piece[..n]);
                at += n as u64;
                piece = &piece[n..];
                filled = n > 0;
                if piece.is_empty() {
                    return;
                }
            }
        }
        // Large capacity only for data at the contiguous end, overflowing a
        // segment that had room (only such segments have any) or continuing a
        // well-filled one: the bytes before each such allocation are real
        // data, so a peer sending scattered tiny frames cannot inflate memory.
        // Out-of-order islands get exact-size pieces, and so does a piece
        // that fills a gap up to one (data after it is held already: with
        // two paths reordering every other packet, each such piece took a
        // 64 KiB segment of its own).
        let end = at + piece.len() as u64;
        let sandwiched = self.segs.range(at..).next().is_some_and(|(&k, _)| k == end);
        let in_order = !sandwiched
            && (at == self.contig_end
                || filled
                || self
                    .segs
                    .range(..at)
                    .next_back()
                    .is_some_and(|(&k, v)| k + v.len() as u64 == at && v.len() >= SEGMENT / 2));
        let cap = super::segment_capacity(at, SEGMENT);
        let mut v = if in_order && piece.len() < cap {
            let mut v = self.spare.take().unwrap_or_default();
            v.clear();
            v.reserve_exact(cap);
            v
        } else {
            Vec::with_capacity(piece.len())
        };
        v.extend_from_slice(piece);
        self.segs.insert(at, v);
    }

    /// Copy readable data into `buf`. Returns bytes read and whether the
    /// end of the stream was reached. `Err(Done)` when nothing is readable,
    /// `Err(Reset(code))` once the peer reset the stream.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<(usize, bool), StreamError> {
        self.check_readable()?;
        let mut n = 0;
        while n < buf.len() {
            let src = self.head();
            if src.is_empty() {
                break;
            }
            let take = src.len().min(buf.len() - n);
            buf[n..n + take].copy_from_slice(&src[..take]);
            n += take;
            self.advance(take);
        }
        self.finish_read(n)
    }

    /// The readable bytes at the read offset without copying them (the
    /// first contiguous segment: up to 64 KiB), and whether they end the
    /// stream. [`consume`](Self::consume) then releases them. Errors as
    /// [`read`](Self::read).
    pub fn peek(&mut self) -> Result<(&[u8], bool), StreamError> {
        self.check_readable()?;
        let end = self.read_off + self.head().len() as u64;
        let fin = self.final_size == Some(end);
        let head = self.head();
        if head.is_empty() && !fin {
            return Err(StreamError::Done);
        }
        Ok((head, fin))
    }

    /// Release up to `n` readable bytes as if read (after
    /// [`peek`](Self::peek)): returns how many and whether the end of the
    /// stream was reached.
    pub fn consume(&mut self, n: usize) -> Result<(usize, bool), StreamError> {
        self.check_readable()?;
        let mut done = 0;
        while done < n {
            let take = self.head().len().min(n - done);
            if take == 0 {
                break;
            }
            self.advance(take);
            done += take;
        }
        self.finish_read(done)
    }

    pub(super) fn check_readable(&mut self) -> Result<(), StreamError> {
        if let Some(code) = self.reset {
            self.reset_read = true;
            return Err(StreamError::Reset(code));
        }
        if self.stop_code.is_some() {
            return Err(StreamError::InvalidState);
        }
        if self.fin_read {
            return Err(StreamError::Done);
        }
        Ok(())
    }

    /// The held bytes from `read_off` to the end of their segment.
    fn head(&self) -> &[u8] {
        match self.segs.first_key_value() {
            Some((&k, v)) if k <= self.read_off => v.get((self.read_off - k) as usize..).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Move `read_off` by `n` bytes within the head segment, dropping the
    /// segment once it is wholly read.
    fn advance(&mut self, n: usize) {
        self.read_off += n as u64;
        let Some(entry) = self.segs.first_entry() else {
            return;
        };
        if *entry.key() + entry.get().len() as u64 <= self.read_off {
            let v = entry.remove();
            if v.capacity() >= SEGMENT {
                self.spare = Some(v);
            }
        }
    }

    /// Account for `n` bytes handed to the application.
    fn finish_read(&mut self, n: usize) -> Result<(usize, bool), StreamError> {
        self.buffered -= n as u64;
        self.window.add_consumed(n as u64);
        let fin = self.final_size == Some(self.read_off);
        if fin {
            self.fin_read = true;
        }
        if n == 0 && !fin {
            return Err(StreamError::Done);
        }
        Ok((n, fin))
    }

    /// RESET_STREAM received (§3.2, §4.5). Returns the flow-control delta.
    pub fn on_reset(&mut self, code: u64, final_size: u64) -> Result<FlowDelta, TransportError> {
        let received = self.check_limits(final_size, true, 0x04)?;
        if self.reset.is_some() || self.fin_read {
            // "Reset Recvd"/"Data Read" are terminal: nothing changes.
            return Ok(FlowDelta { received, released: received });
        }
        let released = if self.stop_code.is_some() {
            received
        } else {
            // Everything unread is released, including what never arrived.
            final_size - self.read_off
        };
        self.reset = Some(code);
        self.drop_data();
        Ok(FlowDelta { received, released })
    }

    /// The application asks the peer to stop sending (STOP_SENDING with
    /// `code`). Buffered data is discarded; returns the connection credit
    /// released, or None if the stream already ended (no frame needed).
    pub fn stop_sending(&mut self, code: u64) -> Option<u64> {
        if self.stop_code.is_some() || self.reset.is_some() || self.fin_read || self.is_all_received() {
            return None;
        }
        self.stop_code = Some(code);
        let released = self.max_recv - self.read_off;
        self.drop_data();
        Some(released)
    }

    fn drop_data(&mut self) {
        self.segs.clear();
        self.spare = None;
        self.buffered = 0;
        self.read_off = self.max_recv;
        self.contig_end = self.max_recv;
    }

    /// Whether `read` would return data, FIN or an error.
    pub fn is_readable(&self) -> bool {
        if self.stop_code.is_some() || self.fin_read {
            return false;
        }
        if self.reset.is_some() {
            return !self.reset_read;
        }
        self.contig_end > self.read_off || self.final_size == Some(self.read_off)
    }

    /// Whether the final size is known and every byte up to it arrived.
    pub fn is_all_received(&self) -> bool {
        self.final_size.is_some_and(|f| self.contig_end >= f)
    }

    /// Whether the receiving half reached a terminal state: FIN read, reset
    /// reported to the application, or stopped and ended by the peer.
    pub fn is_finished(&self) -> bool {
        if self.fin_read || self.reset_read {
            return true;
        }
        self.stop_code.is_some()
            && (self.reset.is_some() || self.final_size.is_some_and(|f| self.max_recv >= f))
    }

    /// Whether MAX_STREAM_DATA updates are still useful.
    pub fn wants_updates(&self) -> bool {
        self.final_size.is_none() && self.reset.is_none() && self.stop_code.is_none()
    }

    /// The stream's receive window.
    pub fn window(&self) -> &RecvWindow {
        &self.window
    }

    /// Mutable access to the receive window (to commit updates).
    pub fn window_mut(&mut self) -> &mut RecvWindow {
        &mut self.window
    }

    /// Bytes held beyond the contiguous readable point (waiting for a gap
    /// to fill).
    pub fn out_of_order_bytes(&self) -> u64 {
        self.buffered - (self.contig_end - self.read_off)
    }

    /// Data arriving now is dropped (reset or STOP_SENDING).
    pub fn is_discarding(&self) -> bool {
        self.reset.is_some() || self.stop_code.is_some()
    }

    /// Bytes held in the reassembly buffer.
    pub fn buffered(&self) -> u64 {
        self.buffered
    }

    /// Next offset the application reads.
    pub fn read_offset(&self) -> u64 {
        self.read_off
    }

    /// Highest offset received.
    pub fn max_received(&self) -> u64 {
        self.max_recv
    }

    /// Final size, once known.
    pub fn final_size(&self) -> Option<u64> {
        self.final_size
    }

    /// Error code of a received RESET_STREAM.
    pub fn reset_code(&self) -> Option<u64> {
        self.reset
    }

    /// Code of the STOP_SENDING the application requested.
    pub fn stop_code(&self) -> Option<u64> {
        self.stop_code
    }
}

#[cfg(test)]
#[path = "recv_tests.rs"]
mod tests;
