//! The HTTP/3 connection (RFC 9114 §6, §7): critical streams, SETTINGS,
//! request/response streams, GOAWAY, over a borrowed [`Transport`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::error::{H3Code, H3Error};
use super::frame::{self, Frame, Item, Settings};
use super::message::{self, Header, MessageKind};
use super::qpack;
use super::stream::{
    Phase, RequestRecv, SendPhase, UniKind, UNI_CONTROL, UNI_PUSH, UNI_QPACK_DECODER, UNI_QPACK_ENCODER,
};
use super::{StreamError, Transport};
use crate::codec::varint_len;

/// How much is read from the transport at a time into stream buffers.
const READ_CHUNK: usize = 4096;
/// Read for a frame header inside a body: two varints of at most 8 bytes.
/// The DATA payload after it goes straight into the caller's buffer
/// (recv_body), not through the stream's decode buffer.
const HEADER_READ: usize = 16;

/// Local HTTP/3 settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Largest decoded field section we accept (RFC 9114 §4.2.2), also
    /// advertised as SETTINGS_MAX_FIELD_SECTION_SIZE.
    pub max_field_section_size: u64,
    /// Largest non-DATA frame payload we buffer (H3_EXCESSIVE_LOAD above).
    pub max_frame_payload: u64,
    /// Send a grease setting, frame and stream type (RFC 9114 §7.2.8, §9).
    pub grease: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self { max_field_section_size: 64 * 1024, max_frame_payload: 64 * 1024, grease: true }
    }
}

/// Something that happened on the connection, from [`Connection::poll`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A header section arrived: the request (server), the response or an
    /// interim response (client), or trailers (either).
    Headers {
        /// Request stream.
        stream: u64,
        /// Decoded, validated fields.
        headers: Vec<Header>,
        /// Whether more may follow (the stream did not end here).
        has_body: bool,
    },
    /// Body data can be read with [`Connection::recv_body`]. Not repeated
    /// until `recv_body` has drained what was available.
    Data {
        /// Request stream.
        stream: u64,
    },
    /// The peer finished the stream cleanly; nothing more will arrive.
    Finished {
        /// Request stream.
        stream: u64,
    },
    /// The peer reset the stream with this application error code.
    Reset {
        /// Request stream.
        stream: u64,
        /// The peer's code.
        code: u64,
    },
    /// The peer's message on this stream was malformed: we sent
    /// STOP_SENDING and RESET_STREAM with `error.code` and dropped it.
    StreamError {
        /// Request stream.
        stream: u64,
        /// What was wrong.
        error: H3Error,
    },
    /// The peer sent GOAWAY with this stream ID (from a server) or push ID.
    GoAway {
        /// The ID from the frame.
        id: u64,
    },
}

/// Errors from the [`Connection`] API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The connection failed with this error and has been closed (by us,
    /// with this code, if the peer broke the protocol).
    Closed(H3Error),
    /// The transport refused a stream operation.
    Transport(StreamError),
    /// Headers we were asked to send do not form a valid message.
    InvalidHeaders(H3Error),
    /// The call does not fit the role or the stream's state.
    InvalidState(&'static str),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Error {}

/// An error from processing a stream: does it end the connection, or only
/// the stream?
enum Fail {
    Conn(H3Error),
    Stream(H3Error),
}

impl From<H3Error> for Fail {
    fn from(e: H3Error) -> Self {
        Fail::Conn(e)
    }
}

/// Bytes waiting for flow-control credit on one stream.
#[derive(Debug, Default)]
struct Pending {
    data: Vec<u8>,
    fin: bool,
}

/// An HTTP/3 connection over a transport it borrows on each call.
#[derive(Debug)]
pub struct Connection {
    is_server: bool,
    config: Config,
    control: u64,
    peer_control: Option<u64>,
    peer_encoder: Option<u64>,
    peer_decoder: Option<u64>,
    peer_settings: Option<Settings>,
    uni: BTreeMap<u64, UniKind>,
    recv: BTreeMap<u64, RequestRecv>,
    send: BTreeMap<u64, SendPhase>,
    /// Peer-initiated request streams we finished with, so a late
    /// readability report does not recreate them.
    done: BTreeSet<u64>,
    out: BTreeMap<u64, Pending>,
    events: VecDeque<Event>,
    /// Streams to look at on the next poll even if not reported readable.
    revisit: BTreeSet<u64>,
    goaway_recv: Option<u64>,
    goaway_sent: Option<u64>,
    max_push_id_recv: Option<u64>,
    /// Server: one past the highest client request stream accepted.
    next_request_id: u64,
    error: Option<H3Error>,
}

impl Connection {
    /// Start HTTP/3 on an established QUIC connection: opens our control
    /// stream (SETTINGS first) and QPACK encoder and decoder streams.
    pub fn with_transport<T: Transport>(t: &mut T, config: &Config) -> Result<Self, Error> {
        let control = t.open_uni_stream().map_err(Error::Transport)?;
        let encoder = t.open_uni_stream().map_err(Error::Transport)?;
        let decoder = t.open_uni_stream().map_err(Error::Transport)?;
        let mut c = Connection {
            is_server: t.is_server(),
            config: config.clone(),
            control,
            peer_control: None,
            peer_encoder: None,
            peer_decoder: None,
            peer_settings: None,
            uni: BTreeMap::new(),
            recv: BTreeMap::new(),
            send: BTreeMap::new(),
            done: BTreeSet::new(),
            out: BTreeMap::new(),
            events: VecDeque::new(),
            revisit: BTreeSet::new(),
            goaway_recv: None,
            goaway_sent: None,
            max_push_id_recv: None,
            next_request_id: 0,
            error: None,
        };
        let mut buf = Vec::new();
        frame::encode_varint(UNI_CONTROL, &mut buf);
        let mut settings = Settings {
            qpack_max_table_capacity: Some(0),
            max_field_section_size: Some(config.max_field_section_size),
            qpack_blocked_streams: Some(0),
            other: Vec::new(),
        };
        if config.grease {
            settings.other.push((0x1f * 7 + 0x21, 0x68));
        }
        Frame::Settings(settings).encode(&mut buf);
        if config.grease {
            Frame::Unknown { frame_type: 0x1f * 3 + 0x21 }.encode(&mut buf);
        }
        c.send_all(t, control, &buf, false)?;
        buf.clear();
        frame::encode_varint(UNI_QPACK_ENCODER, &mut buf);
        c.send_all(t, encoder, &buf, false)?;
        buf.clear();
        frame::encode_varint(UNI_QPACK_DECODER, &mut buf);
        c.send_all(t, decoder, &buf, false)?;
        if config.grease {
            // A grease stream type the peer must ignore (RFC 9114 §6.2.3).
            if let Ok(id) = t.open_uni_stream() {
                buf.clear();
                frame::encode_varint(0x1f * 5 + 0x21, &mut buf);
                c.send_all(t, id, &buf, true)?;
            }
        }
        Ok(c)
    }

    /// The peer's SETTINGS, once received.
    pub fn peer_settings(&self) -> Option<&Settings> {
        self.peer_settings.as_ref()
    }

    /// The ID of the last GOAWAY received, if any.
    pub fn goaway_received(&self) -> Option<u64> {
        self.goaway_recv
    }

    fn check_open(&self) -> Result<(), Error> {
        match self.error {
            Some(e) => Err(Error::Closed(e)),
            None => Ok(()),
        }
    }

    /// Close the connection with `e` (a peer protocol violation).
    fn fail<T: Transport>(&mut self, t: &mut T, e: H3Error) -> Error {
        if self.error.is_none() {
            log::debug!("h3 connection error: {e}");
            t.close(e.code.0, e.reason.as_bytes());
            self.error = Some(e);
        }
        Error::Closed(self.error.unwrap_or(e))
    }

    /// Write everything, queueing what the transport does not take now.
    fn send_all<T: Transport>(&mut self, t: &mut T, id: u64, data: &[u8], fin: bool) -> Result<(), Error> {
        self.send_all_with(t, id, data, fin, |t| t.stream_send(id, data, fin))
    }

    /// As [`send_all`](Self::send_all), `send` handing `data` to the
    /// transport when nothing is queued before it (bytes not taken are
    /// queued as a copy).
    fn send_all_with<T: Transport>(
        &mut self,
        t: &mut T,
        id: u64,
        data: &[u8],
        fin: bool,
        send: impl FnOnce(&mut T) -> Result<usize, StreamError>,
    ) -> Result<(), Error> {
        if let Some(p) = self.out.get_mut(&id) {
            p.data.extend_from_slice(data);
            p.fin |= fin;
            return self.flush_stream(t, id);
        }
        let (n, blocked) = match send(t) {
            Ok(n) => (n, false),
            Err(StreamError::Blocked) => (0, true),
            Err(e) => return Err(self.send_failed(t, id, e)),
        };
        // Transport contract: FIN is applied only when every byte was taken.
        if n < data.len() || (fin && blocked) {
            let rest = data.get(n..).unwrap_or_default().to_vec();
            self.out.insert(id, Pending { data: rest, fin });
        }
        Ok(())
    }

    fn send_failed<T: Transport>(&mut self, t: &mut T, id: u64, e: StreamError) -> Error {
        self.out.remove(&id);
        if id == self.control {
            return self.fail(t, H3Error::new(H3Code::CLOSED_CRITICAL_STREAM, "control stream stopped"));
        }
        Error::Transport(e)
    }

    fn flush_stream<T: Transport>(&mut self, t: &mut T, id: u64) -> Result<(), Error> {
        let Some(p) = self.out.get_mut(&id) else {
            return Ok(());
        };
        let len = p.data.len();
        match t.stream_send(id, &p.data, p.fin) {
            Ok(n) if n >= len => {
                self.out.remove(&id);
            }
            Ok(n) => {
                p.data.drain(..n);
            }
            Err(StreamError::Blocked) => {}
            Err(e) => return Err(self.send_failed(t, id, e)),
        }
        Ok(())
    }

    fn flush_all<T: Transport>(&mut self, t: &mut T) -> Result<(), Error> {
        let ids: Vec<u64> = self.out.keys().copied().collect();
        for id in ids {
            match self.flush_stream(t, id) {
                Ok(()) | Err(Error::Transport(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn encode_headers(&self, headers: &[Header], kind: MessageKind) -> Result<Vec<u8>, Error> {
        message::validate(headers, kind).map_err(Error::InvalidHeaders)?;
        let mut section = Vec::new();
        qpack::encode_field_section(headers, &mut section);
        if let Some(limit) = self.peer_settings.as_ref().and_then(|s| s.max_field_section_size) {
            let size: u64 = headers.iter().map(|h| (h.name.len() + h.value.len() + 32) as u64).sum();
            if size > limit {
                return Err(Error::InvalidHeaders(H3Error::new(
                    H3Code::EXCESSIVE_LOAD,
                    "above the peer's SETTINGS_MAX_FIELD_SECTION_SIZE",
                )));
            }
        }
        let mut out = Vec::new();
        Frame::Headers { field_section: section }.encode(&mut out);
        Ok(out)
    }

    /// Client: send a request on a new stream; returns the stream ID.
    /// With `fin` the request has no body; otherwise follow with
    /// [`send_body`](Self::send_body).
    pub fn send_request<T: Transport>(
        &mut self,
        t: &mut T,
        headers: &[Header],
        fin: bool,
    ) -> Result<u64, Error> {
        self.check_open()?;
        if self.is_server {
            return Err(Error::InvalidState("only clients send requests"));
        }
        if self.goaway_recv.is_some() {
            return Err(Error::InvalidState("server sent GOAWAY"));
        }
        let bytes = self.encode_headers(headers, MessageKind::Request)?;
        let id = t.open_bidi_stream().map_err(Error::Transport)?;
        self.send_all(t, id, &bytes, fin)?;
        self.send.insert(id, if fin { SendPhase::Done } else { SendPhase::Body });
        self.recv.insert(id, RequestRecv::new(self.config.max_frame_payload));
        Ok(id)
    }

    /// Server: send a response header section (an interim 1xx one may come
    /// first) on request stream `stream`.
    pub fn send_response<T: Transport>(
        &mut self,
        t: &mut T,
        stream: u64,
        headers: &[Header],
        fin: bool,
    ) -> Result<(), Error> {
        self.check_open()?;
        if !self.is_server {
            return Err(Error::InvalidState("only servers send responses"));
        }
        let phase = *self.send.get(&stream).ok_or(Error::InvalidState("unknown stream"))?;
        if !matches!(phase, SendPhase::Idle | SendPhase::Interim) {
            return Err(Error::InvalidState("response already sent"));
        }
        let bytes = self.encode_headers(headers, MessageKind::Response)?;
        let interim = message::validate(headers, MessageKind::Response)
            .ok()
            .and_then(|p| p.status)
            .is_some_and(|s| s < 200);
        if interim && fin {
            return Err(Error::InvalidState("an interim response cannot end the stream"));
        }
        self.send_all(t, stream, &bytes, fin)?;
        let next = match (interim, fin) {
            (true, _) => SendPhase::Interim,
            (false, true) => SendPhase::Done,
            (false, false) => SendPhase::Body,
        };
        self.send.insert(stream, next);
        Ok(())
    }

    /// Send trailers, ending the stream.
    pub fn send_trailers<T: Transport>(
        &mut self,
        t: &mut T,
        stream: u64,
        headers: &[Header],
    ) -> Result<(), Error> {
        self.check_open()?;
        if self.send.get(&stream) != Some(&SendPhase::Body) {
            return Err(Error::InvalidState("trailers need a sent header section"));
        }
        let bytes = self.encode_headers(headers, MessageKind::Trailers)?;
        self.send_all(t, stream, &bytes, true)?;
        self.send.insert(stream, SendPhase::Done);
        Ok(())
    }

    /// Send body bytes in one DATA frame sized to the transport's current
    /// capacity; returns how many bytes of `data` were taken (0 when
    /// blocked). `fin` ends the stream once all of `data` is taken.
    pub fn send_body<T: Transport>(
        &mut self,
        t: &mut T,
        stream: u64,
        data: &[u8],
        fin: bool,
    ) -> Result<usize, Error> {
        let Some(n) = self.start_body(t, stream, data.len(), fin)? else {
            return Ok(0);
        };
        // Body straight into the stream (the room is there): no
        // intermediate copy.
        let fin_now = fin && n == data.len();
        self.send_all(t, stream, data.get(..n).unwrap_or_default(), fin_now)?;
        self.end_body(stream, fin_now);
        Ok(n)
    }

    /// As [`send_body`](Self::send_body), the transport holding a slice of
    /// `data` instead of a copy (a server's file chunks, a cached body).
    pub fn send_body_bytes<T: Transport>(
        &mut self,
        t: &mut T,
        stream: u64,
        data: &crate::Bytes,
        fin: bool,
    ) -> Result<usize, Error> {
        let Some(n) = self.start_body(t, stream, data.len(), fin)? else {
            return Ok(0);
        };
        let fin_now = fin && n == data.len();
        let part = data.slice(..n);
        self.send_all_with(t, stream, &part, fin_now, |t| t.stream_send_bytes(stream, &part, fin_now))?;
        self.end_body(stream, fin_now);
        Ok(n)
    }

    /// Checks for a body write of `len` bytes and its DATA frame header:
    /// `Some(n)` bytes of body to send now (the header is queued), `None`
    /// when nothing can go (or only the FIN of an empty body, sent here).
    fn start_body<T: Transport>(
        &mut self,
        t: &mut T,
        stream: u64,
        len: usize,
        fin: bool,
    ) -> Result<Option<usize>, Error> {
        self.check_open()?;
        if self.send.get(&stream) != Some(&SendPhase::Body) {
            return Err(Error::InvalidState("body needs a sent header section"));
        }
        self.flush_stream(t, stream)?;
        if self.out.contains_key(&stream) {
            return Ok(None);
        }
        if len == 0 {
            if fin {
                self.send_all(t, stream, &[], true)?;
                self.send.insert(stream, SendPhase::Done);
            }
            return Ok(None);
        }
        let cap = t.stream_capacity(stream).map_err(Error::Transport)?;
        // Frame header: type (1 byte) + length varint.
        let room = cap.saturating_sub(1 + varint_len(cap as u64));
        let n = len.min(room);
        if n == 0 {
            return Ok(None);
        }
        let (head, hlen) = frame::data_header(n as u64);
        self.send_all(t, stream, head.get(..hlen).unwrap_or_default(), false)?;
        Ok(Some(n))
    }

    fn end_body(&mut self, stream: u64, fin: bool) {
        if fin {
            self.send.insert(stream, SendPhase::Done);
        }
    }

    /// Send GOAWAY (RFC 9114 §5.2). A server names the first request stream
    /// it will not process (one past the highest it accepted); a client
    /// names push ID 0, since it never allows pushes. Can be repeated;
    /// the ID never grows.
    pub fn send_goaway<T: Transport>(&mut self, t: &mut T) -> Result<(), Error> {
        self.check_open()?;
        let id = if self.is_server { self.next_request_id } else { 0 };
        let id = self.goaway_sent.map_or(id, |old| old.min(id));
        self.goaway_sent = Some(id);
        let mut buf = Vec::new();
        Frame::GoAway { id }.encode(&mut buf);
        self.send_all(t, self.control, &buf, false)
    }

    /// Read body bytes of `stream` into `buf`; 0 means none available now
    /// (a later Data event will say when there are more).
    pub fn recv_body<T: Transport>(
        &mut self,
        t: &mut T,
        stream: u64,
        buf: &mut [u8],
    ) -> Result<usize, Error> {
        self.check_open()?;
        if !self.recv.contains_key(&stream) {
            // A stream that already ended simply has nothing more to read.
            if self.send.contains_key(&stream) || self.done.contains(&stream) {
                return Ok(0);
            }
            return Err(Error::InvalidState("unknown stream"));
        }
        let mut written = 0;
        while written < buf.len() {
            let Some(st) = self.recv.get_mut(&stream) else {
                break;
            };
            let remaining = st.frames.data_remaining();
            if remaining == 0 {
                // Between frames: decode what follows (further DATA headers,
                // trailers, the end), as poll would.
                st.data_event_sent = true;
                match self.process_request(t, stream, false) {
                    Ok(()) => {}
                    Err(Fail::Conn(e)) => return Err(self.fail(t, e)),
                    Err(Fail::Stream(e)) => {
                        self.abort_stream(t, stream, e);
                        return Ok(written);
                    }
                }
                match self.recv.get(&stream) {
                    Some(st) if st.frames.data_remaining() > 0 => continue,
                    _ => break,
                }
            }
            let want = (remaining.min((buf.len() - written) as u64)) as usize;
            let dst = buf.get_mut(written..written + want).unwrap_or_default();
            let n = if st.buffered() > 0 {
                let k = want.min(st.buffered());
                let src = st.buf.get(st.pos..st.pos + k).unwrap_or_default();
                dst.get_mut(..k).unwrap_or_default().copy_from_slice(src);
                st.pos += k;
                st.compact();
                k
            } else if st.fin {
                return Err(self.fail(t, H3Error::frame("stream ended inside a DATA frame")));
            } else {
                match t.stream_recv(stream, dst) {
                    Ok((n, fin)) => {
                        st.fin |= fin;
                        if n == 0 && !fin {
                            break;
                        }
                        n
                    }
                    Err(StreamError::Blocked) => break,
                    Err(StreamError::Reset(code)) => {
                        self.recv.remove(&stream);
                        self.events.push_back(Event::Reset { stream, code });
                        return Ok(written);
                    }
                    Err(e) => return Err(Error::Transport(e)),
                }
            };
            st.frames.consume_data(n as u64);
            written += n;
        }
        if let Some(st) = self.recv.get_mut(&stream) {
            if written < buf.len() {
                // Drained: the next arrival deserves a new Data event.
                st.data_event_sent = false;
            }
            self.revisit.insert(stream);
        }
        Ok(written)
    }

    /// Process what the peer sent and return the next event, if any.
    /// Also retries writes that were waiting for flow-control credit.
    pub fn poll<T: Transport>(&mut self, t: &mut T) -> Result<Option<Event>, Error> {
        self.check_open()?;
        self.flush_all(t)?;
        if let Some(ev) = self.events.pop_front() {
            return Ok(Some(ev));
        }
        let mut ids = t.readable();
        ids.extend(std::mem::take(&mut self.revisit));
        ids.sort_unstable();
        ids.dedup();
        let readable: BTreeSet<u64> = t.readable().into_iter().collect();
        for id in ids {
            let r = if id & 0x2 != 0 {
                self.process_uni(t, id)
            } else {
                self.process_bidi(t, id, readable.contains(&id))
            };
            match r {
                Ok(()) => {}
                Err(Fail::Conn(e)) => return Err(self.fail(t, e)),
                Err(Fail::Stream(e)) => self.abort_stream(t, id, e),
            }
        }
        Ok(self.events.pop_front())
    }

    /// End a request stream whose message was malformed.
    fn abort_stream<T: Transport>(&mut self, t: &mut T, id: u64, e: H3Error) {
        t.stop_sending(id, e.code.0);
        t.reset_stream(id, e.code.0);
        self.recv.remove(&id);
        self.send.remove(&id);
        self.out.remove(&id);
        self.done.insert(id);
        self.events.push_back(Event::StreamError { stream: id, error: e });
    }

    fn is_local(&self, id: u64) -> bool {
        (id & 1 == 1) == self.is_server
    }

    fn process_bidi<T: Transport>(&mut self, t: &mut T, id: u64, readable: bool) -> Result<(), Fail> {
        if !self.recv.contains_key(&id) {
            if self.is_local(id) || self.done.contains(&id) {
                // Finished with it (or a stray report): nothing to do.
                return Ok(());
            }
            if !self.is_server {
                return Err(H3Error::new(
                    H3Code::STREAM_CREATION_ERROR,
                    "server-initiated bidirectional stream",
                )
                .into());
            }
            if self.goaway_sent.is_some_and(|g| id >= g) {
                t.stop_sending(id, H3Code::REQUEST_REJECTED.0);
                t.reset_stream(id, H3Code::REQUEST_REJECTED.0);
                self.done.insert(id);
                return Ok(());
            }
            self.next_request_id = self.next_request_id.max(id + 4);
            self.recv.insert(id, RequestRecv::new(self.config.max_frame_payload));
            self.send.insert(id, SendPhase::Idle);
        }
        self.process_request(t, id, readable)
    }

    /// Decode frames on a request stream until it needs the application
    /// (DATA to read) or runs out of bytes. `readable`: the transport said
    /// it holds bytes for this stream.
    fn process_request<T: Transport>(&mut self, t: &mut T, id: u64, mut readable: bool) -> Result<(), Fail> {
        loop {
            let Some(st) = self.recv.get_mut(&id) else {
                return Ok(());
            };
            if st.frames.data_remaining() > 0 {
                // Announce DATA only when some payload can be read now.
                if !st.data_event_sent && (readable || st.buffered() > 0) {
                    st.data_event_sent = true;
                    self.events.push_back(Event::Data { stream: id });
                }
                return Ok(());
            }
            if st.buffered() == 0 && !st.fin {
                let want =
                    if st.phase == Phase::Body && st.frames.in_header() { HEADER_READ } else { READ_CHUNK };
                st.buf.resize(want, 0);
                st.pos = 0;
                let r = t.stream_recv(id, &mut st.buf);
                let (n, fin) = match r {
                    Ok(v) => v,
                    Err(StreamError::Reset(code)) => {
                        self.recv.remove(&id);
                        self.done.insert(id);
                        self.events.push_back(Event::Reset { stream: id, code });
                        return Ok(());
                    }
                    Err(_) => (0, false),
                };
                st.buf.truncate(n);
                st.fin |= fin;
                // Unless the chunk was filled, what the transport had is
                // all in our buffer now.
                readable = n == want;
                if n == 0 && !fin {
                    return Ok(());
                }
            }
            if st.buffered() == 0 && st.fin {
                return self.finish_request(id);
            }
            let input = st.buf.get(st.pos..).unwrap_or_default();
            let (n, item) = st.frames.decode(input)?;
            st.pos += n;
            st.compact();
            let Some(item) = item else { continue };
            let more = st.buffered() > 0 || !st.fin;
            match item {
                Item::DataHeader { len } => {
                    if st.phase != Phase::Body {
                        return Err(H3Error::unexpected("DATA outside a message body").into());
                    }
                    st.data_len = st.data_len.saturating_add(len);
                    if st.content_length.is_some_and(|cl| st.data_len > cl) {
                        return Err(Fail::Stream(H3Error::message("body exceeds content-length")));
                    }
                }
                Item::DataPayload(_) => {
                    // Payload is taken by recv_body before decoding resumes.
                    return Err(H3Error::new(H3Code::INTERNAL_ERROR, "unexpected payload").into());
                }
                Item::Frame(Frame::Headers { field_section }) => {
                    self.on_headers(id, &field_section, more)?;
                }
                Item::Frame(Frame::PushPromise { .. }) => {
                    return Err(if self.is_server {
                        H3Error::unexpected("PUSH_PROMISE from a client")
                    } else {
                        H3Error::new(H3Code::ID_ERROR, "push without MAX_PUSH_ID")
                    }
                    .into());
                }
                Item::Frame(Frame::Unknown { .. }) => {}
                Item::Frame(_) => {
                    return Err(H3Error::unexpected("control frame on a request stream").into());
                }
            }
        }
    }

    fn on_headers(&mut self, id: u64, section: &[u8], more: bool) -> Result<(), Fail> {
        let headers = qpack::decode_field_section(section, self.config.max_field_section_size)?;
        let Some(st) = self.recv.get_mut(&id) else {
            return Ok(());
        };
        let kind = match st.phase {
            Phase::Headers if self.is_server => MessageKind::Request,
            Phase::Headers => MessageKind::Response,
            Phase::Body => MessageKind::Trailers,
            Phase::Trailers => return Err(H3Error::unexpected("HEADERS after trailers").into()),
        };
        let pseudo = message::validate(&headers, kind).map_err(Fail::Stream)?;
        st.phase = match kind {
            // Interim responses leave us waiting for the final one.
            MessageKind::Response if pseudo.status.is_some_and(|s| s < 200) => Phase::Headers,
            MessageKind::Trailers => Phase::Trailers,
            _ => Phase::Body,
        };
        if kind != MessageKind::Trailers {
            st.content_length = pseudo.content_length;
        }
        self.events.push_back(Event::Headers { stream: id, headers, has_body: more });
        Ok(())
    }

    /// The stream ended with every byte decoded.
    fn finish_request(&mut self, id: u64) -> Result<(), Fail> {
        let Some(st) = self.recv.remove(&id) else {
            return Ok(());
        };
        if !self.is_local(id) {
            self.done.insert(id);
        }
        if !st.frames.at_boundary() {
            return Err(H3Error::frame("stream ended inside a frame").into());
        }
        if st.phase == Phase::Headers {
            let code = if self.is_server { H3Code::REQUEST_INCOMPLETE } else { H3Code::MESSAGE_ERROR };
            return Err(Fail::Stream(H3Error::new(code, "stream ended before its header section")));
        }
        if st.content_length.is_some_and(|cl| cl != st.data_len) {
            return Err(Fail::Stream(H3Error::message("body shorter than content-length")));
        }
        self.events.push_back(Event::Finished { stream: id });
        Ok(())
    }

    fn process_uni<T: Transport>(&mut self, t: &mut T, id: u64) -> Result<(), Fail> {
        if self.is_local(id) {
            return Ok(());
        }
        let mut buf = [0u8; READ_CHUNK];
        loop {
            let kind = self.uni.entry(id).or_insert_with(|| UniKind::Pending(Default::default()));
            if matches!(kind, UniKind::Ignored) {
                // Drain and drop; we asked the peer to stop.
                while let Ok((n, fin)) = t.stream_recv(id, &mut buf) {
                    if fin {
                        self.uni.remove(&id);
                        break;
                    }
                    if n == 0 {
                        break;
                    }
                }
                return Ok(());
            }
            let (n, fin) = match t.stream_recv(id, &mut buf) {
                Ok(v) => v,
                Err(StreamError::Reset(_)) => (0, true),
                Err(_) => (0, false),
            };
            let data = buf.get(..n).unwrap_or_default();
            self.on_uni_bytes(t, id, data)?;
            if fin {
                let critical = self.uni.get(&id).is_some_and(UniKind::is_critical);
                if critical {
                    return Err(H3Error::new(H3Code::CLOSED_CRITICAL_STREAM, "critical stream closed").into());
                }
                self.uni.remove(&id);
                return Ok(());
            }
            if n == 0 {
                return Ok(());
            }
        }
    }

    fn on_uni_bytes<T: Transport>(&mut self, t: &mut T, id: u64, mut data: &[u8]) -> Result<(), Fail> {
        while !data.is_empty() {
            let Some(kind) = self.uni.get_mut(&id) else {
                return Ok(());
            };
            match kind {
                UniKind::Pending(acc) => {
                    let (b, rest) = match data.split_first() {
                        Some(v) => v,
                        None => return Ok(()),
                    };
                    data = rest;
                    if let Some(ty) = acc.push(*b) {
                        let k = self.classify_uni(t, id, ty)?;
                        self.uni.insert(id, k);
                    }
                }
                UniKind::Control { .. } => {
                    let (n, item) = match self.uni.get_mut(&id) {
                        Some(UniKind::Control { frames, .. }) => frames.decode(data)?,
                        _ => return Ok(()),
                    };
                    data = data.get(n..).unwrap_or_default();
                    if let Some(item) = item {
                        self.on_control_item(item, id)?;
                    }
                }
                UniKind::Encoder(p) => {
                    p.feed(data)?;
                    return Ok(());
                }
                UniKind::Decoder(p) => {
                    p.feed(data)?;
                    return Ok(());
                }
                UniKind::Ignored => return Ok(()),
            }
        }
        Ok(())
    }

    fn classify_uni<T: Transport>(&mut self, t: &mut T, id: u64, ty: u64) -> Result<UniKind, H3Error> {
        let dup = |slot: &mut Option<u64>| {
            if slot.is_some() {
                return Err(H3Error::new(
                    H3Code::STREAM_CREATION_ERROR,
                    "second critical stream of one type",
                ));
            }
            *slot = Some(id);
            Ok(())
        };
        Ok(match ty {
            UNI_CONTROL => {
                dup(&mut self.peer_control)?;
                UniKind::Control {
                    frames: Box::new(frame::FrameDecoder::new(self.config.max_frame_payload)),
                    settings_seen: false,
                }
            }
            UNI_QPACK_ENCODER => {
                dup(&mut self.peer_encoder)?;
                UniKind::Encoder(Default::default())
            }
            UNI_QPACK_DECODER => {
                dup(&mut self.peer_decoder)?;
                UniKind::Decoder(Default::default())
            }
            UNI_PUSH if self.is_server => {
                return Err(H3Error::new(H3Code::STREAM_CREATION_ERROR, "push stream from a client"))
            }
            UNI_PUSH => return Err(H3Error::new(H3Code::ID_ERROR, "push stream without MAX_PUSH_ID")),
            _ => {
                // Unknown and grease types are ignored (RFC 9114 §6.2).
                t.stop_sending(id, H3Code::STREAM_CREATION_ERROR.0);
                UniKind::Ignored
            }
        })
    }

    fn on_control_item(&mut self, item: Item, id: u64) -> Result<(), H3Error> {
        let Some(UniKind::Control { settings_seen, .. }) = self.uni.get_mut(&id) else {
            return Ok(());
        };
        let first = !*settings_seen;
        *settings_seen = true;
        let frame = match item {
            Item::Frame(f) => f,
            Item::DataHeader { .. } | Item::DataPayload(_) if first => {
                return Err(H3Error::new(H3Code::MISSING_SETTINGS, "control stream must start with SETTINGS"))
            }
            Item::DataHeader { .. } | Item::DataPayload(_) => {
                return Err(H3Error::unexpected("DATA on the control stream"))
            }
        };
        if first {
            return match frame {
                Frame::Settings(s) => {
                    self.peer_settings = Some(s);
                    Ok(())
                }
                _ => Err(H3Error::new(H3Code::MISSING_SETTINGS, "control stream must start with SETTINGS")),
            };
        }
        match frame {
            Frame::Settings(_) => Err(H3Error::unexpected("second SETTINGS")),
            Frame::GoAway { id: gid } => {
                if !self.is_server && gid % 4 != 0 {
                    return Err(H3Error::new(H3Code::ID_ERROR, "GOAWAY names a non-request stream"));
                }
                if self.goaway_recv.is_some_and(|old| gid > old) {
                    return Err(H3Error::new(H3Code::ID_ERROR, "GOAWAY ID increased"));
                }
                self.goaway_recv = Some(gid);
                self.events.push_back(Event::GoAway { id: gid });
                Ok(())
            }
            Frame::MaxPushId { push_id } => {
                if !self.is_server {
                    return Err(H3Error::unexpected("MAX_PUSH_ID from a server"));
                }
                if self.max_push_id_recv.is_some_and(|old| push_id < old) {
                    return Err(H3Error::new(H3Code::ID_ERROR, "MAX_PUSH_ID decreased"));
                }
                self.max_push_id_recv = Some(push_id);
                Ok(())
            }
            Frame::CancelPush { push_id } => {
                // A client never allowed pushes; a server only up to its limit.
                if !self.is_server || self.max_push_id_recv.is_none_or(|m| push_id > m) {
                    return Err(H3Error::new(H3Code::ID_ERROR, "CANCEL_PUSH for an impossible push"));
                }
                Ok(())
            }
            Frame::Unknown { .. } => Ok(()),
            Frame::Data { .. } | Frame::Headers { .. } | Frame::PushPromise { .. } => {
                Err(H3Error::unexpected("message frame on the control stream"))
            }
        }
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
