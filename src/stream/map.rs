//! The connection's set of streams: limits (RFC 9000 §4.6), opening and
//! accepting streams, frame handlers with their error rules (§19.4-19.14),
//! round-robin scheduling of STREAM data and the control-frame queue.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::flow::{RecvWindow, SendCredit};
use super::id::{Side, StreamDir, StreamId};
use super::recv::{FlowDelta, RecvStream};
use super::send::{Chunk, SendStream};
use super::{ControlFrame, StreamError};
use crate::error::{ErrorCode, TransportError};
use crate::qlog::StreamChange;
use crate::ranges::RangeSet;

/// Frame types, for the `frame_type` of errors.
const F_RESET_STREAM: u64 = 0x04;
const F_STOP_SENDING: u64 = 0x05;
const F_STREAM: u64 = 0x08;
const F_MAX_STREAM_DATA: u64 = 0x11;
const F_MAX_STREAMS_BIDI: u64 = 0x12;
const F_STREAM_DATA_BLOCKED: u64 = 0x15;
const F_STREAMS_BLOCKED_BIDI: u64 = 0x16;

/// Our local limits (sent as transport parameters) and buffer sizes.
#[derive(Clone, Debug)]
pub struct StreamsConfig {
    /// initial_max_data.
    pub initial_max_data: u64,
    /// Largest connection window auto-tuning may reach.
    pub max_data_window: u64,
    /// initial_max_stream_data_bidi_local (bidi streams we open).
    pub initial_max_stream_data_bidi_local: u64,
    /// initial_max_stream_data_bidi_remote (bidi streams the peer opens).
    pub initial_max_stream_data_bidi_remote: u64,
    /// initial_max_stream_data_uni (uni streams the peer opens).
    pub initial_max_stream_data_uni: u64,
    /// Largest stream window auto-tuning may reach.
    pub max_stream_window: u64,
    /// initial_max_streams_bidi.
    pub initial_max_streams_bidi: u64,
    /// initial_max_streams_uni.
    pub initial_max_streams_uni: u64,
    /// Per-stream cap on unacknowledged buffered send data (bytes).
    pub send_buffer_cap: usize,
    /// Per-stream cap on buffered data not sent yet (bytes).
    pub send_unsent_cap: usize,
}

impl Default for StreamsConfig {
    fn default() -> Self {
        StreamsConfig {
            initial_max_data: 1536 * 1024,
            max_data_window: 24 * 1024 * 1024,
            initial_max_stream_data_bidi_local: 1024 * 1024,
            initial_max_stream_data_bidi_remote: 1024 * 1024,
            initial_max_stream_data_uni: 1024 * 1024,
            max_stream_window: 16 * 1024 * 1024,
            initial_max_streams_bidi: 100,
            initial_max_streams_uni: 100,
            send_buffer_cap: 8 * 1024 * 1024,
            send_unsent_cap: usize::MAX,
        }
    }
}

/// The peer's limits, from its transport parameters.
#[derive(Clone, Debug, Default)]
pub struct PeerLimits {
    /// initial_max_data.
    pub initial_max_data: u64,
    /// initial_max_stream_data_bidi_local (bidi streams the peer opens).
    pub initial_max_stream_data_bidi_local: u64,
    /// initial_max_stream_data_bidi_remote (bidi streams we open).
    pub initial_max_stream_data_bidi_remote: u64,
    /// initial_max_stream_data_uni (uni streams we open).
    pub initial_max_stream_data_uni: u64,
    /// initial_max_streams_bidi.
    pub initial_max_streams_bidi: u64,
    /// initial_max_streams_uni.
    pub initial_max_streams_uni: u64,
}

/// One stream: either half is absent on unidirectional streams.
#[derive(Debug)]
pub struct Stream {
    /// Sending half (absent on peer-initiated uni streams).
    pub send: Option<SendStream>,
    /// Receiving half (absent on locally initiated uni streams).
    pub recv: Option<RecvStream>,
    in_send_q: bool,
    in_retx_q: bool,
}

impl Stream {
    fn is_finished(&self) -> bool {
        self.send.as_ref().is_none_or(|s| s.is_finished())
            && self.recv.as_ref().is_none_or(|r| r.is_finished())
    }
}

fn dir_of(bidi: bool) -> StreamDir {
    if bidi {
        StreamDir::Bidi
    } else {
        StreamDir::Uni
    }
}

fn state_err(frame: u64, reason: &'static str) -> TransportError {
    TransportError::new(ErrorCode::STREAM_STATE_ERROR, reason).with_frame(frame)
}

/// All streams of a connection.
#[derive(Debug)]
pub struct Streams {
    side: Side,
    cfg: StreamsConfig,
    peer: PeerLimits,
    map: BTreeMap<StreamId, Stream>,
    /// Collected stream indices, per type (the two low ID bits).
    closed: [RangeSet; 4],
    /// Per direction: one past the highest local index opened.
    next_local: [u64; 2],
    /// Per direction: one past the highest peer index opened.
    next_peer: [u64; 2],
    /// Streams we may open (peer's MAX_STREAMS).
    peer_max_streams: [u64; 2],
    /// Streams the peer may open (our current limit).
    local_max_streams: [u64; 2],
    /// The limit last advertised.
    local_max_streams_sent: [u64; 2],
    streams_blocked_sent: [Option<u64>; 2],
    conn_recv: RecvWindow,
    /// Sum over streams of the highest received offset.
    conn_received: u64,
    conn_send: SendCredit,
    send_q: VecDeque<StreamId>,
    retx_q: VecDeque<StreamId>,
    readable: BTreeSet<StreamId>,
    ctrl: VecDeque<ControlFrame>,
    pending_max_data: bool,
    pending_max_streams: [bool; 2],
    pending_msd: BTreeSet<StreamId>,
    /// Received stream bytes we already had (copies, spurious retransmits).
    dup_bytes: u64,
    /// Streams opened and discarded since the connection's qlog last took
    /// them; `None` (nothing kept) unless qlog is on.
    changes: Option<Vec<(StreamId, StreamChange)>>,
}

impl Streams {
    /// Streams for the endpoint `side`, with our limits `cfg`. The peer's
    /// limits are zero until [`set_peer_limits`](Self::set_peer_limits).
    pub fn new(side: Side, cfg: StreamsConfig) -> Self {
        Streams {
            side,
            conn_recv: RecvWindow::new(cfg.initial_max_data, cfg.max_data_window),
            local_max_streams: [cfg.initial_max_streams_bidi, cfg.initial_max_streams_uni],
            local_max_streams_sent: [cfg.initial_max_streams_bidi, cfg.initial_max_streams_uni],
            cfg,
            peer: PeerLimits::default(),
            map: BTreeMap::new(),
            closed: Default::default(),
            next_local: [0; 2],
            next_peer: [0; 2],
            peer_max_streams: [0; 2],
            streams_blocked_sent: [None; 2],
            conn_received: 0,
            conn_send: SendCredit::new(0),
            send_q: VecDeque::new(),
            retx_q: VecDeque::new(),
            readable: BTreeSet::new(),
            ctrl: VecDeque::new(),
            pending_max_data: false,
            pending_max_streams: [false; 2],
            pending_msd: BTreeSet::new(),
            dup_bytes: 0,
            changes: None,
        }
    }

    /// Keep the streams' openings and discards for the qlog
    /// ([`take_changes`](Self::take_changes)).
    pub(crate) fn record_changes(&mut self) {
        self.changes.get_or_insert_with(Vec::new);
    }

    /// The openings and discards since the last call, oldest first.
    pub(crate) fn take_changes(&mut self) -> impl Iterator<Item = (StreamId, StreamChange)> + '_ {
        self.changes.iter_mut().flat_map(|c| c.drain(..))
    }

    /// Create and insert stream `id`.
    fn open(&mut self, id: StreamId) {
        let s = self.new_stream(id);
        self.map.insert(id, s);
        if let Some(c) = &mut self.changes {
            c.push((id, StreamChange::Opened));
        }
    }

    /// Apply the peer's transport parameters (after the handshake, or the
    /// remembered ones for 0-RTT). Limits only grow.
    pub fn set_peer_limits(&mut self, p: &PeerLimits) -> Result<(), TransportError> {
        if p.initial_max_streams_bidi > StreamId::MAX_COUNT || p.initial_max_streams_uni > StreamId::MAX_COUNT
        {
            return Err(TransportError::new(ErrorCode::TRANSPORT_PARAMETER_ERROR, "max_streams above 2^60"));
        }
        self.peer = p.clone();
        self.peer_max_streams[0] = self.peer_max_streams[0].max(p.initial_max_streams_bidi);
        self.peer_max_streams[1] = self.peer_max_streams[1].max(p.initial_max_streams_uni);
        self.conn_send.update_max(p.initial_max_data);
        let ids: Vec<StreamId> = self.map.keys().copied().collect();
        for id in ids {
            let limit = self.peer_send_limit(id);
            if let Some(s) = self.map.get_mut(&id) {
                if let Some(send) = s.send.as_mut() {
                    send.on_max_stream_data(limit);
                }
            }
            self.enqueue_send(id);
        }
        Ok(())
    }

    /// The peer's initial limit for data we send on `id`.
    fn peer_send_limit(&self, id: StreamId) -> u64 {
        match (id.is_local(self.side), id.dir()) {
            (true, StreamDir::Bidi) => self.peer.initial_max_stream_data_bidi_remote,
            (true, StreamDir::Uni) => self.peer.initial_max_stream_data_uni,
            (false, _) => self.peer.initial_max_stream_data_bidi_local,
        }
    }

    fn new_stream(&self, id: StreamId) -> Stream {
        let window = match (id.is_local(self.side), id.dir()) {
            (true, _) => self.cfg.initial_max_stream_data_bidi_local,
            (false, StreamDir::Bidi) => self.cfg.initial_max_stream_data_bidi_remote,
            (false, StreamDir::Uni) => self.cfg.initial_max_stream_data_uni,
        };
        Stream {
            send: id.can_send(self.side).then(|| {
                let mut s = SendStream::new(self.peer_send_limit(id), self.cfg.send_buffer_cap);
                s.set_unsent_cap(self.cfg.send_unsent_cap);
                s
            }),
            recv: id
                .can_recv(self.side)
                .then(|| RecvStream::new(window, self.cfg.max_stream_window.max(window))),
            in_send_q: false,
            in_retx_q: false,
        }
    }

    fn is_closed(&self, id: StreamId) -> bool {
        self.closed[id.type_bits()].contains(id.index())
    }

    /// Find or open a stream for an application call.
    fn app_stream(&mut self, id: StreamId) -> Result<&mut Stream, StreamError> {
        if !self.map.contains_key(&id) {
            if id.0 > StreamId::MAX || self.is_closed(id) {
                return Err(StreamError::InvalidState);
            }
            if !id.is_local(self.side) {
                return Err(StreamError::UnknownStream);
            }
            let d = id.dir().index();
            if id.index() >= self.peer_max_streams[d] {
                let limit = self.peer_max_streams[d];
                if self.streams_blocked_sent[d] != Some(limit) {
                    self.streams_blocked_sent[d] = Some(limit);
                    self.ctrl.push_back(ControlFrame::StreamsBlocked { bidi: d == 0, limit });
                }
                return Err(StreamError::StreamLimit);
            }
            self.open(id);
            self.next_local[d] = self.next_local[d].max(id.index() + 1);
        }
        self.map.get_mut(&id).ok_or(StreamError::UnknownStream)
    }

    /// Find, or implicitly open, the stream a received frame refers to.
    /// `Ok(None)`: the stream is closed and the frame is ignored.
    fn frame_stream(&mut self, id: StreamId, frame: u64) -> Result<Option<&mut Stream>, TransportError> {
        if id.0 > StreamId::MAX {
            return Err(TransportError::encoding("stream ID above 2^62-1").with_frame(frame));
        }
        if !self.map.contains_key(&id) {
            if self.is_closed(id) {
                return Ok(None);
            }
            let d = id.dir().index();
            let idx = id.index();
            if id.is_local(self.side) {
                if idx >= self.next_local[d] {
                    return Err(state_err(frame, "frame for a local stream not yet opened"));
                }
                // A lower-numbered stream implicitly opened by a higher one.
                self.open(id);
            } else {
                if idx >= self.local_max_streams[d] {
                    return Err(TransportError::new(
                        ErrorCode::STREAM_LIMIT_ERROR,
                        "peer exceeded stream limit",
                    )
                    .with_frame(frame));
                }
                if idx < self.next_peer[d] {
                    // Opened earlier and not present: already collected.
                    return Ok(None);
                }
                // Opening a stream opens every lower one of its type (§3.2).
                for i in self.next_peer[d]..=idx {
                    self.open(StreamId::new(self.side.peer(), id.dir(), i));
                }
                self.next_peer[d] = idx + 1;
            }
        }
        Ok(self.map.get_mut(&id))
    }

    fn check_conn_flow(&mut self, delta: FlowDelta, frame: u64) -> Result<(), TransportError> {
        self.conn_received = self.conn_received.saturating_add(delta.received);
        if self.conn_received > self.conn_recv.max() {
            return Err(TransportError::new(ErrorCode::FLOW_CONTROL_ERROR, "connection data limit exceeded")
                .with_frame(frame));
        }
        self.conn_recv.add_consumed(delta.released);
        Ok(())
    }

    /// Put a stream with new data in the round-robin queue, or, if the
    /// peer's stream limit stops it, queue STREAM_DATA_BLOCKED instead.
    fn enqueue_send(&mut self, id: StreamId) {
        let Some(s) = self.map.get_mut(&id) else {
            return;
        };
        let Some(send) = s.send.as_mut() else {
            return;
        };
        if !send.has_new() {
            return;
        }
        if send.is_flow_blocked() {
            if let Some(limit) = send.take_blocked() {
                self.ctrl.push_back(ControlFrame::StreamDataBlocked { id, limit });
            }
        } else if !s.in_send_q {
            s.in_send_q = true;
            self.send_q.push_back(id);
        }
    }

    fn enqueue_retx(&mut self, id: StreamId) {
        if let Some(s) = self.map.get_mut(&id) {
            if !s.in_retx_q && s.send.as_ref().is_some_and(|x| x.has_lost()) {
                s.in_retx_q = true;
                self.retx_q.push_back(id);
            }
        }
    }

    /// Remove a stream that reached its terminal state; return MAX_STREAMS
    /// credit for peer streams.
    fn maybe_collect(&mut self, id: StreamId) {
        if !self.map.get(&id).is_some_and(|s| s.is_finished()) {
            return;
        }
        self.map.remove(&id);
        if let Some(c) = &mut self.changes {
            c.push((id, StreamChange::Closed));
        }
        self.closed[id.type_bits()].insert(id.index()..id.index() + 1);
        self.readable.remove(&id);
        self.pending_msd.remove(&id);
        if !id.is_local(self.side) {
            let d = id.dir().index();
            self.local_max_streams[d] += 1;
            let initial =
                if d == 0 { self.cfg.initial_max_streams_bidi } else { self.cfg.initial_max_streams_uni };
            if self.local_max_streams[d] - self.local_max_streams_sent[d] >= (initial / 2).max(1) {
                self.pending_max_streams[d] = true;
            }
        }
    }

    // ----- application calls -----

    /// Write to a stream, opening it if it is a new local stream within the
    /// peer's limit. Returns the bytes taken (partial when the buffer is full).
    pub fn stream_send(&mut self, id: StreamId, data: &[u8], fin: bool) -> Result<usize, StreamError> {
        self.write_with(id, |s| s.write(data, fin))
    }

    /// As [`stream_send`](Self::stream_send), sharing `data` instead of
    /// copying it.
    pub fn stream_send_bytes(&mut self, id: StreamId, data: &Bytes, fin: bool) -> Result<usize, StreamError> {
        self.write_with(id, |s| s.write_bytes(data, fin))
    }

    fn write_with(
        &mut self,
        id: StreamId,
        write: impl FnOnce(&mut SendStream) -> Result<usize, StreamError>,
    ) -> Result<usize, StreamError> {
        if !id.can_send(self.side) {
            return Err(StreamError::InvalidState);
        }
        let s = self.app_stream(id)?;
        let n = write(s.send.as_mut().ok_or(StreamError::InvalidState)?)?;
        self.enqueue_send(id);
        Ok(n)
    }

    /// Read from a stream: bytes read and whether FIN was reached.
    pub fn stream_recv(&mut self, id: StreamId, buf: &mut [u8]) -> Result<(usize, bool), StreamError> {
        let res = self.recv_half(id)?.read(buf);
        self.after_read(id, &res);
        res
    }

    /// The readable bytes at a stream's read offset, without copying, and
    /// whether they end the stream; [`stream_consume`](Self::stream_consume)
    /// releases them.
    pub fn stream_peek(&mut self, id: StreamId) -> Result<(&[u8], bool), StreamError> {
        // Checked apart from `peek` because an error must still update
        // readability and collection, and the borrow `peek` returns cannot
        // outlive a call to `after_read`.
        if let Err(e) = self.recv_half(id)?.check_readable() {
            self.after_read(id, &Err(e));
            return Err(e);
        }
        self.recv_half(id)?.peek()
    }

    /// Release up to `n` bytes of a stream as read (after
    /// [`stream_peek`](Self::stream_peek)).
    pub fn stream_consume(&mut self, id: StreamId, n: usize) -> Result<(usize, bool), StreamError> {
        let res = self.recv_half(id)?.consume(n);
        self.after_read(id, &res);
        res
    }

    fn recv_half(&mut self, id: StreamId) -> Result<&mut RecvStream, StreamError> {
        if !id.can_recv(self.side) {
            return Err(StreamError::InvalidState);
        }
        let closed = self.is_closed(id);
        let Some(s) = self.map.get_mut(&id) else {
            return Err(if closed { StreamError::InvalidState } else { StreamError::UnknownStream });
        };
        s.recv.as_mut().ok_or(StreamError::InvalidState)
    }

    /// Flow-control credit and readability after the application read.
    fn after_read(&mut self, id: StreamId, res: &Result<(usize, bool), StreamError>) {
        let Some(r) = self.map.get_mut(&id).and_then(|s| s.recv.as_mut()) else {
            return;
        };
        if let Ok((n, _)) = *res {
            self.conn_recv.add_consumed(n as u64);
            if r.wants_updates() && r.window().needs_update() {
                self.pending_msd.insert(id);
            }
        }
        if !r.is_readable() {
            self.readable.remove(&id);
        }
        self.maybe_collect(id);
    }

    /// Abandon sending on a stream (RESET_STREAM with `code`).
    pub fn stream_reset(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        if !id.can_send(self.side) {
            return Err(StreamError::InvalidState);
        }
        let s = self.map.get_mut(&id).ok_or(StreamError::UnknownStream)?;
        let send = s.send.as_mut().ok_or(StreamError::InvalidState)?;
        if let Some(r) = send.reset(code) {
            self.ctrl.push_back(ControlFrame::ResetStream { id, code: r.code, final_size: r.final_size });
        }
        Ok(())
    }

    /// Ask the peer to stop sending on a stream (STOP_SENDING with `code`);
    /// data received from now on is discarded.
    pub fn stream_stop_sending(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        if !id.can_recv(self.side) {
            return Err(StreamError::InvalidState);
        }
        let s = self.map.get_mut(&id).ok_or(StreamError::UnknownStream)?;
        let r = s.recv.as_mut().ok_or(StreamError::InvalidState)?;
        if let Some(released) = r.stop_sending(code) {
            self.conn_recv.add_consumed(released);
            self.ctrl.push_back(ControlFrame::StopSending { id, code });
        }
        self.readable.remove(&id);
        self.pending_msd.remove(&id);
        self.maybe_collect(id);
        Ok(())
    }

    /// Bytes the application can write now (buffer space).
    pub fn stream_capacity(&self, id: StreamId) -> Result<usize, StreamError> {
        let s = self.map.get(&id).ok_or(StreamError::UnknownStream)?;
        let send = s.send.as_ref().ok_or(StreamError::InvalidState)?;
        if let Some(code) = send.stop_code() {
            return Err(StreamError::StopSending(code));
        }
        if !send.is_writable() {
            return Err(StreamError::InvalidState);
        }
        Ok(send.capacity())
    }

    /// Change one stream's unsent cap (see [`SendStream::set_unsent_cap`]).
    pub fn set_send_unsent(&mut self, id: StreamId, bytes: usize) -> Result<(), StreamError> {
        let s = self.map.get_mut(&id).ok_or(StreamError::UnknownStream)?;
        s.send.as_mut().ok_or(StreamError::InvalidState)?.set_unsent_cap(bytes);
        Ok(())
    }

    /// Streams with data, FIN or a reset to report to the application.
    pub fn readable(&self) -> impl Iterator<Item = StreamId> + '_ {
        self.readable.iter().copied()
    }

    /// Streams the application can write to now (or that have a
    /// STOP_SENDING to report).
    pub fn writable(&self) -> impl Iterator<Item = StreamId> + '_ {
        self.map.iter().filter_map(|(&id, s)| {
            let send = s.send.as_ref()?;
            (send.stop_code().is_some() || (send.is_writable() && send.capacity() > 0)).then_some(id)
        })
    }

    /// Whether `id` has something for `stream_recv`.
    pub fn is_readable(&self, id: StreamId) -> bool {
        self.readable.contains(&id)
    }

    /// Whether the stream is closed (collected) or its receiving half ended.
    pub fn is_finished(&self, id: StreamId) -> bool {
        match self.map.get(&id) {
            Some(s) => s.recv.as_ref().is_some_and(|r| r.is_finished()),
            None => self.is_closed(id),
        }
    }

    /// The ID the next new local stream of `dir` would get.
    pub fn next_stream_id(&self, dir: StreamDir) -> StreamId {
        StreamId::new(self.side, dir, self.next_local[dir.index()])
    }

    /// How many more local streams of `dir` the peer currently allows.
    pub fn peer_streams_left(&self, dir: StreamDir) -> u64 {
        self.peer_max_streams[dir.index()].saturating_sub(self.next_local[dir.index()])
    }

    /// Total bytes held beyond the contiguous readable point, all streams.
    pub fn out_of_order_bytes(&self) -> u64 {
        self.map.values().filter_map(|s| s.recv.as_ref()).map(|r| r.out_of_order_bytes()).sum()
    }

    /// Received stream bytes that were duplicates of bytes already received.
    pub fn duplicate_bytes(&self) -> u64 {
        self.dup_bytes
    }

    /// A stream, for inspection.
    pub fn get(&self, id: StreamId) -> Option<&Stream> {
        self.map.get(&id)
    }

    /// Number of live (not collected) streams.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no stream is live.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The connection receive window (MAX_DATA we advertise).
    pub fn conn_recv_window(&self) -> &RecvWindow {
        &self.conn_recv
    }

    /// The peer's MAX_DATA and how much of it we used.
    pub fn conn_send_credit(&self) -> &SendCredit {
        &self.conn_send
    }

    // ----- received frames -----

    /// STREAM frame (§19.8).
    pub fn on_stream_frame(
        &mut self,
        id: StreamId,
        offset: u64,
        data: &[u8],
        fin: bool,
    ) -> Result<(), TransportError> {
        if !id.can_recv(self.side) {
            return Err(state_err(F_STREAM, "STREAM frame on a send-only stream"));
        }
        let Some(s) = self.frame_stream(id, F_STREAM)? else {
            return Ok(());
        };
        let Some(r) = s.recv.as_mut() else {
            return Ok(());
        };
        let held = r.buffered();
        let delta = r.on_data(offset, data, fin)?;
        // What was not stored was already held or read.
        let dup = if r.is_discarding() { 0 } else { (data.len() as u64).saturating_sub(r.buffered() - held) };
        let readable = r.is_readable();
        self.dup_bytes += dup;
        self.check_conn_flow(delta, F_STREAM)?;
        if readable {
            self.readable.insert(id);
        }
        self.maybe_collect(id);
        Ok(())
    }

    /// RESET_STREAM frame (§19.4).
    pub fn on_reset_stream(
        &mut self,
        id: StreamId,
        code: u64,
        final_size: u64,
    ) -> Result<(), TransportError> {
        if !id.can_recv(self.side) {
            return Err(state_err(F_RESET_STREAM, "RESET_STREAM on a send-only stream"));
        }
        let Some(s) = self.frame_stream(id, F_RESET_STREAM)? else {
            return Ok(());
        };
        let Some(r) = s.recv.as_mut() else {
            return Ok(());
        };
        let delta = r.on_reset(code, final_size)?;
        let readable = r.is_readable();
        self.check_conn_flow(delta, F_RESET_STREAM)?;
        if readable {
            self.readable.insert(id);
        }
        self.pending_msd.remove(&id);
        self.maybe_collect(id);
        Ok(())
    }

    /// STOP_SENDING frame (§19.5): we answer with RESET_STREAM carrying the
    /// peer's code (§3.5).
    pub fn on_stop_sending(&mut self, id: StreamId, code: u64) -> Result<(), TransportError> {
        if !id.can_send(self.side) {
            return Err(state_err(F_STOP_SENDING, "STOP_SENDING on a receive-only stream"));
        }
        let Some(s) = self.frame_stream(id, F_STOP_SENDING)? else {
            return Ok(());
        };
        if let Some(r) = s.send.as_mut().and_then(|x| x.on_stop_sending(code)) {
            self.ctrl.push_back(ControlFrame::ResetStream { id, code: r.code, final_size: r.final_size });
        }
        self.maybe_collect(id);
        Ok(())
    }

    /// MAX_DATA frame (§19.9).
    pub fn on_max_data(&mut self, max: u64) -> Result<(), TransportError> {
        self.conn_send.update_max(max);
        Ok(())
    }

    /// MAX_STREAM_DATA frame (§19.10).
    pub fn on_max_stream_data(&mut self, id: StreamId, max: u64) -> Result<(), TransportError> {
        if !id.can_send(self.side) {
            return Err(state_err(F_MAX_STREAM_DATA, "MAX_STREAM_DATA on a receive-only stream"));
        }
        let Some(s) = self.frame_stream(id, F_MAX_STREAM_DATA)? else {
            return Ok(());
        };
        if s.send.as_mut().is_some_and(|x| x.on_max_stream_data(max)) {
            self.enqueue_send(id);
        }
        Ok(())
    }

    /// MAX_STREAMS frame (§19.11).
    pub fn on_max_streams(&mut self, bidi: bool, max: u64) -> Result<(), TransportError> {
        if max > StreamId::MAX_COUNT {
            return Err(TransportError::encoding("MAX_STREAMS above 2^60")
                .with_frame(F_MAX_STREAMS_BIDI + u64::from(!bidi)));
        }
        let d = dir_of(bidi).index();
        self.peer_max_streams[d] = self.peer_max_streams[d].max(max);
        Ok(())
    }

    /// DATA_BLOCKED frame (§19.12): informational.
    pub fn on_data_blocked(&mut self, _limit: u64) -> Result<(), TransportError> {
        Ok(())
    }

    /// STREAM_DATA_BLOCKED frame (§19.13).
    pub fn on_stream_data_blocked(&mut self, id: StreamId, _limit: u64) -> Result<(), TransportError> {
        if !id.can_recv(self.side) {
            return Err(state_err(F_STREAM_DATA_BLOCKED, "STREAM_DATA_BLOCKED on a send-only stream"));
        }
        self.frame_stream(id, F_STREAM_DATA_BLOCKED)?;
        Ok(())
    }

    /// STREAMS_BLOCKED frame (§19.14).
    pub fn on_streams_blocked(&mut self, bidi: bool, limit: u64) -> Result<(), TransportError> {
        if limit > StreamId::MAX_COUNT {
            return Err(TransportError::encoding("STREAMS_BLOCKED above 2^60")
                .with_frame(F_STREAMS_BLOCKED_BIDI + u64::from(!bidi)));
        }
        Ok(())
    }

    // ----- sending STREAM frames -----

    /// The stream whose data goes in the next STREAM frame, and the offset of
    /// that data (so the caller can size the frame header). Lost data first,
    /// then new data round-robin across streams. Queues DATA_BLOCKED /
    /// STREAM_DATA_BLOCKED when flow control stops a stream.
    pub fn next_to_send(&mut self) -> Option<(StreamId, u64)> {
        while let Some(&id) = self.retx_q.front() {
            if let Some(c) =
                self.map.get(&id).and_then(|s| s.send.as_ref()).and_then(|x| x.peek_chunk(usize::MAX, 0))
            {
                if c.is_retransmit {
                    return Some((id, c.offset));
                }
            }
            self.retx_q.pop_front();
            if let Some(s) = self.map.get_mut(&id) {
                s.in_retx_q = false;
            }
        }
        let credit = self.conn_send.available();
        for _ in 0..self.send_q.len() {
            let id = *self.send_q.front()?;
            let Some(s) = self.map.get_mut(&id) else {
                self.send_q.pop_front();
                continue;
            };
            let Some(send) = s.send.as_mut() else {
                self.send_q.pop_front();
                s.in_send_q = false;
                continue;
            };
            if let Some(c) = send.peek_chunk(usize::MAX, credit) {
                return Some((id, c.offset));
            }
            if send.is_flow_blocked() {
                // Parked until MAX_STREAM_DATA.
                if let Some(limit) = send.take_blocked() {
                    self.ctrl.push_back(ControlFrame::StreamDataBlocked { id, limit });
                }
                self.send_q.pop_front();
                s.in_send_q = false;
            } else if send.has_new() {
                // Connection-blocked: keep its place, try the others (a
                // lone FIN needs no credit).
                if let Some(limit) = self.conn_send.blocked() {
                    self.ctrl.push_back(ControlFrame::DataBlocked(limit));
                }
                self.send_q.rotate_left(1);
            } else {
                self.send_q.pop_front();
                s.in_send_q = false;
            }
        }
        None
    }

    /// Take the next chunk of stream `id` (normally the one
    /// [`next_to_send`](Self::next_to_send) named), at most `max_len` bytes,
    /// charging new bytes to the connection credit. Then copy its bytes with
    /// [`copy_data`](Self::copy_data).
    pub fn send_chunk(&mut self, id: StreamId, max_len: usize) -> Option<Chunk> {
        self.take_chunk(id, |s, credit| s.peek_chunk(max_len, credit))
    }

    /// Where new data `skip` bytes into what waits to be sent would start:
    /// (stream, offset) in the stream next in line, if it has that much.
    /// Lost data is not considered: the scheduler that sends ahead decides
    /// where it goes (a plain [`send_chunk`](Self::send_chunk) takes it
    /// first).
    pub fn next_to_send_ahead(&self, skip: u64) -> Option<(StreamId, u64)> {
        let id = *self.send_q.front()?;
        let send = self.map.get(&id)?.send.as_ref()?;
        let c = send.peek_unsent(usize::MAX, self.conn_send.available(), skip)?;
        Some((id, c.offset))
    }

    /// [`send_chunk`](Self::send_chunk) for new data `skip` bytes into what
    /// waits to be sent (see [`next_to_send_ahead`](Self::next_to_send_ahead));
    /// never lost data.
    pub fn send_chunk_at(&mut self, id: StreamId, max_len: usize, skip: u64) -> Option<Chunk> {
        self.take_chunk(id, |s, credit| s.peek_unsent(max_len, credit, skip))
    }

    /// Commit the chunk `peek` picks of stream `id` (given the connection
    /// credit) and requeue the stream: one map lookup per packet.
    fn take_chunk(
        &mut self,
        id: StreamId,
        peek: impl FnOnce(&SendStream, u64) -> Option<Chunk>,
    ) -> Option<Chunk> {
        let credit = self.conn_send.available();
        let s = self.map.get_mut(&id)?;
        let send = s.send.as_mut()?;
        let c = peek(send, credit)?;
        let new = send.commit_chunk(&c);
        self.conn_send.consume(new);
        // Round-robin: the served stream goes to the back of its queue.
        let (q, flag, more) = if c.is_retransmit {
            (&mut self.retx_q, &mut s.in_retx_q, send.has_lost())
        } else {
            (&mut self.send_q, &mut s.in_send_q, send.has_new())
        };
        if q.front() == Some(&id) {
            q.pop_front();
            if more {
                q.push_back(id);
            } else {
                *flag = false;
            }
        }
        Some(c)
    }

    /// Copy stream bytes into the packet buffer; false if not held.
    pub fn copy_data(&self, id: StreamId, offset: u64, dst: &mut [u8]) -> bool {
        self.map.get(&id).and_then(|s| s.send.as_ref()).is_some_and(|x| x.copy_data(offset, dst))
    }

    /// Whether any stream has lost or new data ready (ignoring flow control).
    pub fn has_pending_data(&self) -> bool {
        !self.retx_q.is_empty() || !self.send_q.is_empty()
    }

    /// New bytes ready to send within flow control, and bytes waiting for
    /// retransmission: what the path scheduler is told is pending.
    pub fn pending_bytes(&self) -> (u64, u64) {
        let send = |id: &StreamId| self.map.get(id).and_then(|s| s.send.as_ref());
        let new: u64 = self.send_q.iter().filter_map(send).map(SendStream::sendable_new).sum();
        let retx: u64 = self.retx_q.iter().filter_map(send).map(SendStream::lost_bytes).sum();
        (new.min(self.conn_send.available()), retx)
    }

    /// The connection-level credit the peer still grants us.
    pub fn send_credit(&self) -> u64 {
        self.conn_send.available()
    }

    /// The first sent, unacknowledged stream range at or after `from`
    /// (stream, offset), in stream-ID order: the source of redundant copies.
    pub fn unacked_chunk(&self, from: (StreamId, u64), max_len: usize) -> Option<(StreamId, Chunk)> {
        self.map.range(from.0..).find_map(|(&id, s)| {
            let start = if id == from.0 { from.1 } else { 0 };
            s.send.as_ref()?.unacked_range(start, max_len).map(|c| (id, c))
        })
    }

    /// Whether a STREAM frame can be sent now: lost data, or new data (or a
    /// FIN) within flow control. Unlike [`has_pending_data`](Self::has_pending_data)
    /// this is false while the connection-level limit blocks everything.
    pub fn has_sendable_data(&self) -> bool {
        if !self.retx_q.is_empty() {
            return true;
        }
        let credit = self.conn_send.available();
        self.send_q.iter().any(|id| {
            self.map.get(id).and_then(|s| s.send.as_ref()).is_some_and(|x| x.peek_chunk(1, credit).is_some())
        })
    }

    /// A STREAM frame we sent was acknowledged.
    pub fn on_stream_acked(&mut self, id: StreamId, offset: u64, len: usize, fin: bool) {
        if let Some(send) = self.map.get_mut(&id).and_then(|s| s.send.as_mut()) {
            send.on_acked(offset, len, fin);
            self.maybe_collect(id);
        }
    }

    /// A STREAM frame we sent was declared lost.
    pub fn on_stream_lost(&mut self, id: StreamId, offset: u64, len: usize, fin: bool) {
        if let Some(send) = self.map.get_mut(&id).and_then(|s| s.send.as_mut()) {
            if send.on_lost(offset, len, fin) {
                self.enqueue_retx(id);
            }
        }
    }

    // ----- control frames -----

    /// Whether [`next_control`](Self::next_control) may return a frame.
    pub fn has_pending_control(&self) -> bool {
        self.pending_max_data
            || self.conn_recv.needs_update()
            || !self.pending_msd.is_empty()
            || self.pending_max_streams.iter().any(|&p| p)
            || !self.ctrl.is_empty()
    }

    /// The next control frame to send. `now` and `rtt` drive window
    /// auto-tuning. A frame that does not fit the packet is given back with
    /// [`on_control_lost`](Self::on_control_lost).
    pub fn next_control(&mut self, now: Instant, rtt: Duration) -> Option<ControlFrame> {
        if let Some(max) = self.conn_recv.should_send_update(now, rtt) {
            self.pending_max_data = false;
            return Some(ControlFrame::MaxData(max));
        }
        if self.pending_max_data {
            self.pending_max_data = false;
            return Some(ControlFrame::MaxData(self.conn_recv.max()));
        }
        while let Some(id) = self.pending_msd.pop_first() {
            let Some(r) = self.map.get_mut(&id).and_then(|s| s.recv.as_mut()) else {
                continue;
            };
            if !r.wants_updates() {
                continue;
            }
            let w = r.window_mut();
            let max = w.should_send_update(now, rtt).unwrap_or(w.max());
            // Keep the connection window ahead of a grown stream window.
            let sw = w.window();
            self.conn_recv.ensure_window(sw.saturating_add(sw / 2));
            return Some(ControlFrame::MaxStreamData { id, max });
        }
        for d in 0..2 {
            if self.pending_max_streams[d] {
                self.pending_max_streams[d] = false;
                self.local_max_streams_sent[d] = self.local_max_streams[d];
                return Some(ControlFrame::MaxStreams { bidi: d == 0, max: self.local_max_streams[d] });
            }
        }
        self.ctrl.pop_front()
    }

    /// A control frame was lost (or did not fit): queue it again if still
    /// relevant, with the current value.
    pub fn on_control_lost(&mut self, f: ControlFrame) {
        match f {
            ControlFrame::MaxData(_) => self.pending_max_data = true,
            ControlFrame::MaxStreamData { id, .. } => {
                if self.map.get(&id).and_then(|s| s.recv.as_ref()).is_some_and(|r| r.wants_updates()) {
                    self.pending_msd.insert(id);
                }
            }
            ControlFrame::MaxStreams { bidi, .. } => self.pending_max_streams[dir_of(bidi).index()] = true,
            ControlFrame::DataBlocked(limit) => {
                if self.conn_send.is_blocked_at(limit) {
                    self.ctrl.push_back(f);
                }
            }
            ControlFrame::StreamDataBlocked { id, limit } => {
                if self.map.get(&id).and_then(|s| s.send.as_ref()).is_some_and(|x| x.is_blocked_at(limit)) {
                    self.ctrl.push_back(f);
                }
            }
            ControlFrame::StreamsBlocked { bidi, limit } => {
                if self.peer_max_streams[dir_of(bidi).index()] == limit {
                    self.ctrl.push_back(f);
                }
            }
            ControlFrame::ResetStream { id, .. } => {
                let r = self.map.get(&id).and_then(|s| s.send.as_ref()).and_then(|x| x.reset_state());
                if let Some(r) = r.filter(|r| !r.acked) {
                    self.ctrl.push_back(ControlFrame::ResetStream {
                        id,
                        code: r.code,
                        final_size: r.final_size,
                    });
                }
            }
            ControlFrame::StopSending { id, code } => {
                let live =
                    self.map.get(&id).and_then(|s| s.recv.as_ref()).is_some_and(|r| {
                        r.stop_code().is_some() && r.reset_code().is_none() && !r.is_finished()
                    });
                if live {
                    self.ctrl.push_back(ControlFrame::StopSending { id, code });
                }
            }
        }
    }

    /// A control frame was acknowledged (completes RESET_STREAM).
    pub fn on_control_acked(&mut self, f: ControlFrame) {
        if let ControlFrame::ResetStream { id, .. } = f {
            if let Some(send) = self.map.get_mut(&id).and_then(|s| s.send.as_mut()) {
                send.on_reset_acked();
                self.maybe_collect(id);
            }
        }
    }
}
