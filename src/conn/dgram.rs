//! Unreliable DATAGRAM frames (RFC 9221): the application's queues, the
//! frames written into 1-RTT packets, and the frames received.
//!
//! `Config::enable_dgram` advertises max_datagram_frame_size (65536, as
//! quiche does); a peer that did not advertise it is sent nothing
//! ([`DgramError::InvalidState`]), and a DATAGRAM frame we did not ask for,
//! or larger than we allow, closes the connection with PROTOCOL_VIOLATION
//! (§3). Datagrams are ack-eliciting and congestion controlled: the packet
//! that carries one is in flight like any other and waits for window room.
//! They are never sent again (§5): no `SentFrame` records them, so a lost
//! packet leaves nothing of them to retransmit.
//!
//! Several paths: a datagram goes in the next 1-RTT packet that may carry
//! new data, ahead of the stream data in it, so on the path the scheduler
//! picks for that packet (`Decision::Send` / `SendAhead`; queued datagram
//! bytes count as new bytes in `PendingInfo`, so the scheduler is asked
//! while only datagrams wait). Packets the scheduler sends as copies
//! (`also`, `Redundant`) and ACK-only packets on other paths carry no
//! datagram: each datagram is sent once, on one path, and the receiver
//! delivers what arrives.

use std::collections::VecDeque;
use std::fmt;

use bytes::Bytes;

use crate::codec::{varint_len, Writer};
use crate::error::TransportError;
use crate::frame::Frame;

use super::{Connection, State};

/// The max_datagram_frame_size we advertise (quiche's value): any frame
/// that fits a packet.
pub(crate) const MAX_DGRAM_FRAME_SIZE: u64 = 65536;

/// Short header bytes besides the DCID (first byte, longest packet number)
/// and the AEAD tag: what a 1-RTT packet needs beyond its frames.
const SHORT_OVERHEAD: usize = 1 + 4 + 16;

/// Why a datagram call did nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DgramError {
    /// Nothing to do: the receive queue is empty, or the send queue full.
    Done,
    /// The buffer cannot hold the datagram received, or the datagram to
    /// send is larger than [`Connection::dgram_max_writable_len`].
    BufferTooShort,
    /// DATAGRAM frames are not possible: not enabled here, the peer did
    /// not advertise them (or its parameters are not known yet), or the
    /// connection is closing.
    InvalidState,
}

impl fmt::Display for DgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DgramError::Done => "nothing to do",
            DgramError::BufferTooShort => "datagram does not fit",
            DgramError::InvalidState => "datagrams not negotiated",
        })
    }
}
impl std::error::Error for DgramError {}

/// A bounded FIFO of datagrams with its byte count.
#[derive(Debug, Default)]
struct Queue<T> {
    q: VecDeque<T>,
    bytes: usize,
    cap: usize,
}

impl<T: AsRef<[u8]>> Queue<T> {
    fn is_full(&self) -> bool {
        self.q.len() >= self.cap
    }
    fn push(&mut self, d: T) {
        self.bytes += d.as_ref().len();
        self.q.push_back(d);
    }
    fn pop(&mut self) -> Option<T> {
        let d = self.q.pop_front()?;
        self.bytes -= d.as_ref().len();
        Some(d)
    }
    fn front_len(&self) -> Option<usize> {
        self.q.front().map(|d| d.as_ref().len())
    }
}

/// The datagram state of a connection.
#[derive(Debug, Default)]
pub(super) struct Dgrams {
    /// We advertised max_datagram_frame_size.
    enabled: bool,
    recv: Queue<Vec<u8>>,
    send: Queue<Bytes>,
}

impl Dgrams {
    /// From `Config::enable_dgram`'s (receive, send) queue lengths.
    pub(super) fn new(queues: Option<(usize, usize)>) -> Dgrams {
        let (recv, send) = queues.unwrap_or((0, 0));
        Dgrams {
            enabled: queues.is_some(),
            recv: Queue { cap: recv, ..Queue::default() },
            send: Queue { cap: send, ..Queue::default() },
        }
    }
}

/// The largest payload whose DATAGRAM frame (type, length, payload) takes
/// at most `limit` bytes.
fn payload_fit(limit: usize) -> usize {
    let mut n = limit.saturating_sub(2);
    // At most seven steps: the length field grows by at most seven bytes.
    while n > 0 && 1 + varint_len(n as u64) + n > limit {
        n -= 1;
    }
    n
}

impl Connection {
    /// Queue a datagram to send (copied). `Err(Done)` when the send queue
    /// is full, `BufferTooShort` when it is larger than
    /// [`dgram_max_writable_len`](Self::dgram_max_writable_len),
    /// `InvalidState` when the peer does not take datagrams.
    pub fn dgram_send(&mut self, data: &[u8]) -> Result<(), DgramError> {
        self.dgram_check(data.len())?;
        self.dgrams.send.push(Bytes::copy_from_slice(data));
        Ok(())
    }
    /// As [`dgram_send`](Self::dgram_send), keeping `data` without a copy.
    pub fn dgram_send_bytes(&mut self, data: Bytes) -> Result<(), DgramError> {
        self.dgram_check(data.len())?;
        self.dgrams.send.push(data);
        Ok(())
    }
    /// As [`dgram_send`](Self::dgram_send), taking the `Vec` without a copy.
    pub fn dgram_send_vec(&mut self, data: Vec<u8>) -> Result<(), DgramError> {
        self.dgram_send_bytes(Bytes::from(data))
    }

    fn dgram_check(&self, len: usize) -> Result<(), DgramError> {
        if self.local_close.is_some() || self.peer_close.is_some() || self.state == State::Closed {
            return Err(DgramError::InvalidState);
        }
        let max = self.dgram_max_writable_len().ok_or(DgramError::InvalidState)?;
        if len > max {
            return Err(DgramError::BufferTooShort);
        }
        if self.dgrams.send.is_full() {
            return Err(DgramError::Done);
        }
        Ok(())
    }

    /// The largest datagram [`dgram_send`](Self::dgram_send) takes now: what
    /// one 1-RTT packet carries on the path with the smallest MTU and the
    /// peer's max_datagram_frame_size allow. `None` while the peer's
    /// parameters are unknown, if it does not take datagrams, or if they
    /// are not enabled here.
    pub fn dgram_max_writable_len(&self) -> Option<usize> {
        if !self.dgrams.enabled {
            return None;
        }
        let peer = self.peer_params.as_ref()?.max_datagram_frame_size?;
        let room = (0..self.paths.len())
            .filter(|&pi| !self.paths[pi].abandoned)
            .map(|pi| self.dgram_room(pi))
            .min()?;
        let peer = usize::try_from(peer).unwrap_or(usize::MAX);
        Some(payload_fit(room.min(peer)))
    }

    /// Frame bytes a fresh 1-RTT packet on path `pi` has room for.
    fn dgram_room(&self, pi: usize) -> usize {
        let p = &self.paths[pi];
        let dcid = self.cids.dcid_for(p.id).map_or(20, |c| c.len());
        p.mss().saturating_sub(SHORT_OVERHEAD + dcid)
    }

    /// Take the oldest datagram received into `buf`: its length.
    /// `Err(Done)` when none waits; `BufferTooShort` when `buf` cannot hold
    /// it (it stays queued, unlike quiche's, which drops it).
    pub fn dgram_recv(&mut self, buf: &mut [u8]) -> Result<usize, DgramError> {
        let len = self.dgrams.recv.front_len().ok_or(DgramError::Done)?;
        let dst = buf.get_mut(..len).ok_or(DgramError::BufferTooShort)?;
        let d = self.dgrams.recv.pop().ok_or(DgramError::Done)?;
        dst.copy_from_slice(&d);
        Ok(len)
    }
    /// Take the oldest datagram received. `Err(Done)` when none waits.
    pub fn dgram_recv_vec(&mut self) -> Result<Vec<u8>, DgramError> {
        self.dgrams.recv.pop().ok_or(DgramError::Done)
    }
    /// Copy up to `len` bytes of the oldest datagram received into `buf`
    /// without taking it: the bytes copied. `Err(Done)` when none waits.
    pub fn dgram_recv_peek(&self, buf: &mut [u8], len: usize) -> Result<usize, DgramError> {
        let d = self.dgrams.recv.q.front().ok_or(DgramError::Done)?;
        let n = len.min(d.len()).min(buf.len());
        buf[..n].copy_from_slice(&d[..n]);
        Ok(n)
    }
    /// The length of the oldest datagram received, if one waits.
    pub fn dgram_recv_front_len(&self) -> Option<usize> {
        self.dgrams.recv.front_len()
    }
    /// Datagrams received and not yet read.
    pub fn dgram_recv_queue_len(&self) -> usize {
        self.dgrams.recv.q.len()
    }
    /// Bytes of the datagrams received and not yet read.
    pub fn dgram_recv_queue_byte_size(&self) -> usize {
        self.dgrams.recv.bytes
    }
    /// Datagrams queued and not yet sent.
    pub fn dgram_send_queue_len(&self) -> usize {
        self.dgrams.send.q.len()
    }
    /// Bytes of the datagrams queued and not yet sent.
    pub fn dgram_send_queue_byte_size(&self) -> usize {
        self.dgrams.send.bytes
    }
    /// The send queue is full: [`dgram_send`](Self::dgram_send) refuses.
    pub fn is_dgram_send_queue_full(&self) -> bool {
        self.dgrams.send.is_full()
    }
    /// The receive queue is full: the next datagram received pushes out
    /// the oldest (counted in [`Stats::dgram_dropped`](super::Stats)).
    pub fn is_dgram_recv_queue_full(&self) -> bool {
        self.dgrams.recv.is_full()
    }
    /// Drop the queued datagrams for which `f` returns true (e.g. media
    /// past its deadline).
    pub fn dgram_purge_outgoing<F: FnMut(&[u8]) -> bool>(&mut self, mut f: F) {
        let s = &mut self.dgrams.send;
        s.q.retain(|d| !f(d));
        s.bytes = s.q.iter().map(|d| d.len()).sum();
    }

    /// Datagrams wait to be sent.
    pub(super) fn dgram_pending(&self) -> bool {
        !self.dgrams.send.q.is_empty()
    }
    /// Bytes of the datagrams waiting (new data for the scheduler).
    pub(super) fn dgram_pending_bytes(&self) -> u64 {
        self.dgrams.send.bytes as u64
    }

    /// Write the queued datagrams that fit before `end`; whether any was
    /// written. One that no longer fits any packet of this path (its MTU
    /// fell since it was queued) is dropped rather than block the queue.
    pub(super) fn write_dgrams(&mut self, w: &mut Writer<'_>, end: usize, pi: usize) -> bool {
        let fresh = self.dgram_room(pi);
        let mut wrote = false;
        while let Some(d) = self.dgrams.send.q.front() {
            let f = Frame::Datagram { data: d };
            let need = f.encoded_len();
            if need > end.saturating_sub(w.pos()) {
                if need <= fresh {
                    break;
                }
                self.dgrams.send.pop();
                self.stats.dgram_send_dropped += 1;
                continue;
            }
            if f.encode(w).is_err() {
                break;
            }
            self.dgrams.send.pop();
            self.stats.dgram_sent += 1;
            wrote = true;
        }
        wrote
    }

    /// A DATAGRAM frame arrived: queued for the application, the oldest
    /// dropped when the queue is full (as quiche does: newer is better for
    /// the media datagrams carry).
    pub(super) fn on_dgram_frame(&mut self, data: &[u8]) -> Result<(), TransportError> {
        let Some(max) = self.local_params.max_datagram_frame_size else {
            return Err(TransportError::violation("DATAGRAM frames were not negotiated"));
        };
        // The frame took at least its type byte and the payload.
        if data.len() as u64 + 1 > max {
            return Err(TransportError::violation("DATAGRAM frame above max_datagram_frame_size"));
        }
        self.stats.dgram_recv += 1;
        if self.dgrams.recv.is_full() {
            self.stats.dgram_dropped += 1;
            if self.dgrams.recv.pop().is_none() {
                // A queue of length 0 keeps nothing.
                return Ok(());
            }
        }
        self.dgrams.recv.push(data.to_vec());
        Ok(())
    }
}

#[cfg(test)]
mod fit_tests {
    use super::payload_fit;

    #[test]
    fn payload_fit_is_the_largest_frame_within_the_limit() {
        for limit in [0, 1, 2, 3, 65, 66, 67, 1300, 16385, 16386, 16387, 65536] {
            let n = payload_fit(limit);
            let frame = |n: usize| 1 + crate::codec::varint_len(n as u64) + n;
            if limit >= 2 {
                assert!(frame(n) <= limit, "limit {limit}: {n}");
                assert!(frame(n + 1) > limit, "limit {limit}: {n} not the largest");
            } else {
                assert_eq!(n, 0);
            }
        }
    }
}
