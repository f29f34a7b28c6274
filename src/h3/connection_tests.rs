//! Connection tests over an in-memory loopback transport: two endpoints
//! whose stream writes land in the other's receive queues when `deliver`
//! is called. Test plumbing only; the QUIC engine implements `Transport`
//! for real.

use std::collections::{BTreeMap, VecDeque};

use super::*;
use crate::h3::frame::encode_varint;
use crate::h3::stream::UNI_CONTROL;

#[derive(Debug, Default)]
struct RecvStream {
    data: VecDeque<u8>,
    fin: bool,
    fin_read: bool,
    reset: Option<u64>,
}

#[derive(Debug)]
struct End {
    server: bool,
    recv: BTreeMap<u64, RecvStream>,
    outbox: Vec<(u64, Vec<u8>, bool)>,
    next_bidi: u64,
    next_uni: u64,
    /// Send credit left (shared by all streams), to exercise blocking.
    credit: usize,
    /// Most bytes one stream_recv returns, to exercise split input.
    recv_limit: usize,
    stopped: Vec<(u64, u64)>,
    resets: Vec<(u64, u64)>,
    closed: Option<(u64, Vec<u8>)>,
}

impl End {
    fn new(server: bool) -> Self {
        End {
            server,
            recv: BTreeMap::new(),
            outbox: Vec::new(),
            next_bidi: if server { 1 } else { 0 },
            next_uni: if server { 3 } else { 2 },
            credit: usize::MAX,
            recv_limit: usize::MAX,
            stopped: Vec::new(),
            resets: Vec::new(),
            closed: None,
        }
    }

    /// Pretend the peer wrote `data` on stream `id`.
    fn inject(&mut self, id: u64, data: &[u8], fin: bool) {
        let s = self.recv.entry(id).or_default();
        s.data.extend(data);
        s.fin |= fin;
    }
}

impl Transport for End {
    fn is_server(&self) -> bool {
        self.server
    }
    fn open_bidi_stream(&mut self) -> Result<u64, StreamError> {
        let id = self.next_bidi;
        self.next_bidi += 4;
        Ok(id)
    }
    fn open_uni_stream(&mut self) -> Result<u64, StreamError> {
        let id = self.next_uni;
        self.next_uni += 4;
        Ok(id)
    }
    fn stream_send(&mut self, id: u64, data: &[u8], fin: bool) -> Result<usize, StreamError> {
        if self.closed.is_some() {
            return Err(StreamError::Closed);
        }
        let n = data.len().min(self.credit);
        if n == 0 && !data.is_empty() {
            return Err(StreamError::Blocked);
        }
        self.credit -= n;
        self.outbox.push((id, data[..n].to_vec(), fin && n == data.len()));
        Ok(n)
    }
    fn stream_capacity(&self, _id: u64) -> Result<usize, StreamError> {
        Ok(self.credit)
    }
    fn stream_recv(&mut self, id: u64, buf: &mut [u8]) -> Result<(usize, bool), StreamError> {
        let s = self.recv.get_mut(&id).ok_or(StreamError::InvalidStream)?;
        if let Some(code) = s.reset.take() {
            return Err(StreamError::Reset(code));
        }
        let n = buf.len().min(s.data.len()).min(self.recv_limit);
        for (i, b) in s.data.drain(..n).enumerate() {
            buf[i] = b;
        }
        let fin = s.fin && s.data.is_empty() && !s.fin_read;
        if fin {
            s.fin_read = true;
        }
        if n == 0 && !fin {
            return Err(StreamError::Blocked);
        }
        Ok((n, fin))
    }
    fn readable(&self) -> Vec<u64> {
        self.recv
            .iter()
            .filter(|(_, s)| !s.data.is_empty() || (s.fin && !s.fin_read) || s.reset.is_some())
            .map(|(id, _)| *id)
            .collect()
    }
    fn stop_sending(&mut self, id: u64, code: u64) {
        self.stopped.push((id, code));
    }
    fn reset_stream(&mut self, id: u64, code: u64) {
        self.resets.push((id, code));
    }
    fn close(&mut self, code: u64, reason: &[u8]) {
        self.closed = Some((code, reason.to_vec()));
    }
}

struct Pair {
    client: End,
    server: End,
    c: Connection,
    s: Connection,
}

impl Pair {
    fn new() -> Self {
        let mut client = End::new(false);
        let mut server = End::new(true);
        let c = Connection::with_transport(&mut client, &Config::default()).unwrap();
        let s = Connection::with_transport(&mut server, &Config::default()).unwrap();
        let mut p = Pair { client, server, c, s };
        p.deliver();
        p
    }

    fn deliver(&mut self) {
        for (id, data, fin) in self.client.outbox.drain(..) {
            self.server.inject(id, &data, fin);
        }
        for (id, data, fin) in self.server.outbox.drain(..) {
            self.client.inject(id, &data, fin);
        }
    }

    fn server_events(&mut self) -> Vec<Event> {
        let mut v = Vec::new();
        while let Some(e) = self.s.poll(&mut self.server).unwrap() {
            v.push(e);
        }
        v
    }

    fn client_events(&mut self) -> Vec<Event> {
        let mut v = Vec::new();
        while let Some(e) = self.c.poll(&mut self.client).unwrap() {
            v.push(e);
        }
        v
    }
}

fn hs(list: &[(&str, &str)]) -> Vec<Header> {
    list.iter().map(|(n, v)| Header::new(n, v)).collect()
}

fn get_request() -> Vec<Header> {
    hs(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "example.com"),
        (":path", "/file"),
        ("user-agent", "mpquic"),
    ])
}

fn read_body(conn: &mut Connection, t: &mut End, stream: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 333];
    loop {
        let n = conn.recv_body(t, stream, &mut buf).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n]);
    }
}

#[test]
fn request_response_exchange() {
    let mut p = Pair::new();
    assert!(p.c.peer_settings().is_none());
    let req = get_request();
    let id = p.c.send_request(&mut p.client, &req, true).unwrap();
    assert_eq!(id, 0);
    p.deliver();
    let ev = p.server_events();
    assert_eq!(
        ev,
        vec![
            Event::Headers { stream: 0, headers: req.clone(), has_body: false },
            Event::Finished { stream: 0 }
        ]
    );
    let settings = p.s.peer_settings().unwrap();
    assert_eq!(settings.qpack_max_table_capacity, Some(0));

    let body: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    let resp = hs(&[(":status", "200"), ("content-length", "10000"), ("content-type", "text/plain")]);
    p.s.send_response(&mut p.server, 0, &resp, false).unwrap();
    assert_eq!(p.s.send_body(&mut p.server, 0, &body[..4000], false).unwrap(), 4000);
    assert_eq!(p.s.send_body(&mut p.server, 0, &body[4000..], true).unwrap(), 6000);
    p.deliver();

    let ev = p.client_events();
    assert_eq!(ev[0], Event::Headers { stream: 0, headers: resp, has_body: true });
    assert_eq!(ev[1], Event::Data { stream: 0 });
    assert_eq!(ev.len(), 2);
    assert!(p.c.peer_settings().is_some());
    let got = read_body(&mut p.c, &mut p.client, 0);
    assert_eq!(got, body);
    assert_eq!(p.client_events(), vec![Event::Finished { stream: 0 }]);
    assert!(p.client.closed.is_none() && p.server.closed.is_none());
    // Grease from each side was tolerated: the unknown stream type got
    // STOP_SENDING with H3_STREAM_CREATION_ERROR, nothing else.
    assert_eq!(p.server.stopped, vec![(14, H3Code::STREAM_CREATION_ERROR.0)]);
}

#[test]
fn post_with_body_under_flow_control_and_split_reads() {
    let mut p = Pair::new();
    p.server.recv_limit = 1; // the server reads one byte at a time
    let req =
        hs(&[(":method", "POST"), (":scheme", "https"), (":authority", "example.com"), (":path", "/up")]);
    let body: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    let id = p.c.send_request(&mut p.client, &req, false).unwrap();
    let mut sent = 0;
    let mut received = Vec::new();
    let mut finished = false;
    let mut headers_seen = false;
    for _ in 0..10_000 {
        p.client.credit = 100;
        if sent < body.len() {
            sent += p.c.send_body(&mut p.client, id, &body[sent..], true).unwrap();
        }
        p.c.poll(&mut p.client).unwrap();
        p.deliver();
        while let Some(ev) = p.s.poll(&mut p.server).unwrap() {
            match ev {
                Event::Headers { headers, has_body, .. } => {
                    assert_eq!(headers, req);
                    assert!(has_body);
                    headers_seen = true;
                }
                Event::Data { stream } => received.extend(read_body(&mut p.s, &mut p.server, stream)),
                Event::Finished { .. } => finished = true,
                e => panic!("unexpected {e:?}"),
            }
        }
        if finished {
            break;
        }
    }
    assert!(headers_seen && finished);
    assert_eq!(received, body);
}

#[test]
fn shared_body_bytes_arrive_whole_under_flow_control() {
    let mut p = Pair::new();
    let req =
        hs(&[(":method", "POST"), (":scheme", "https"), (":authority", "example.com"), (":path", "/up")]);
    let body = crate::Bytes::from((0..5000u32).map(|i| (i * 13) as u8).collect::<Vec<u8>>());
    let id = p.c.send_request(&mut p.client, &req, false).unwrap();
    let (mut sent, mut received, mut finished) = (0, Vec::new(), false);
    for i in 0..10_000 {
        p.client.credit = 1 + i % 150; // from too little for any body to plenty
        if sent < body.len() {
            sent += p.c.send_body_bytes(&mut p.client, id, &body.slice(sent..), true).unwrap();
        }
        p.c.poll(&mut p.client).unwrap();
        p.deliver();
        while let Some(ev) = p.s.poll(&mut p.server).unwrap() {
            match ev {
                Event::Data { stream } => received.extend(read_body(&mut p.s, &mut p.server, stream)),
                Event::Finished { .. } => finished = true,
                Event::Headers { .. } => {}
                e => panic!("unexpected {e:?}"),
            }
        }
        if finished {
            break;
        }
    }
    assert!(finished);
    assert_eq!(received, &body[..]);
}

#[test]
fn trailers_and_interim_response() {
    let mut p = Pair::new();
    let id = p.c.send_request(&mut p.client, &get_request(), true).unwrap();
    p.deliver();
    p.server_events();
    p.s.send_response(&mut p.server, id, &hs(&[(":status", "103"), ("link", "</a.css>")]), false).unwrap();
    p.s.send_response(&mut p.server, id, &hs(&[(":status", "200")]), false).unwrap();
    p.s.send_body(&mut p.server, id, b"hello", false).unwrap();
    p.s.send_trailers(&mut p.server, id, &hs(&[("x-checksum", "1234")])).unwrap();
    p.deliver();
    let ev = p.client_events();
    assert!(matches!(&ev[0], Event::Headers { headers, .. } if headers[0].value == b"103"));
    assert!(matches!(&ev[1], Event::Headers { headers, .. } if headers[0].value == b"200"));
    assert_eq!(ev[2], Event::Data { stream: id });
    assert_eq!(read_body(&mut p.c, &mut p.client, id), b"hello");
    let ev = p.client_events();
    assert_eq!(
        ev,
        vec![
            Event::Headers { stream: id, headers: hs(&[("x-checksum", "1234")]), has_body: false },
            Event::Finished { stream: id }
        ]
    );
}

#[test]
fn goaway_exchange() {
    let mut p = Pair::new();
    p.c.send_request(&mut p.client, &get_request(), true).unwrap();
    p.c.send_request(&mut p.client, &get_request(), true).unwrap();
    p.deliver();
    assert_eq!(p.server_events().len(), 4);
    p.s.send_goaway(&mut p.server).unwrap();
    p.deliver();
    assert_eq!(p.client_events(), vec![Event::GoAway { id: 8 }]);
    assert_eq!(p.c.goaway_received(), Some(8));
    assert!(matches!(p.c.send_request(&mut p.client, &get_request(), true), Err(Error::InvalidState(_))));
    // A request the server never accepted is rejected, not processed.
    let mut raw = Vec::new();
    Frame::Headers { field_section: vec![0, 0, 0xd1] }.encode(&mut raw);
    p.server.inject(8, &raw, true);
    assert!(p.server_events().is_empty());
    assert_eq!(p.server.resets, vec![(8, H3Code::REQUEST_REJECTED.0)]);
    // An increasing GOAWAY ID is an error.
    let mut raw = Vec::new();
    Frame::GoAway { id: 12 }.encode(&mut raw);
    p.client.inject(3, &raw, false);
    assert_eq!(
        p.c.poll(&mut p.client).unwrap_err(),
        Error::Closed(H3Error::new(H3Code::ID_ERROR, "GOAWAY ID increased"))
    );
}

#[test]
fn peer_reset_is_reported() {
    let mut p = Pair::new();
    let id = p.c.send_request(&mut p.client, &get_request(), false).unwrap();
    p.deliver();
    p.server_events();
    p.server.recv.get_mut(&id).unwrap().reset = Some(H3Code::REQUEST_CANCELLED.0);
    assert_eq!(p.server_events(), vec![Event::Reset { stream: id, code: H3Code::REQUEST_CANCELLED.0 }]);
}

/// A server connection plus raw bytes for the client side: the client's
/// control stream (2) is opened with `control` as its content.
fn raw_server(control: &[u8]) -> (End, Connection) {
    let mut t = End::new(true);
    let c = Connection::with_transport(&mut t, &Config { grease: false, ..Default::default() }).unwrap();
    let mut buf = Vec::new();
    encode_varint(UNI_CONTROL, &mut buf);
    buf.extend_from_slice(control);
    t.inject(2, &buf, false);
    (t, c)
}

fn settings_bytes() -> Vec<u8> {
    let mut v = Vec::new();
    Frame::Settings(Settings::default()).encode(&mut v);
    v
}

fn conn_error(t: &mut End, c: &mut Connection) -> H3Code {
    let mut last = Ok(None);
    for _ in 0..4 {
        last = c.poll(t);
        if last.is_err() {
            break;
        }
    }
    match last {
        Err(Error::Closed(e)) => {
            assert_eq!(t.closed.as_ref().map(|c| c.0), Some(e.code.0));
            e.code
        }
        other => panic!("expected a connection error, got {other:?}"),
    }
}

#[test]
fn control_stream_errors() {
    // First frame is not SETTINGS.
    let mut goaway = Vec::new();
    Frame::GoAway { id: 0 }.encode(&mut goaway);
    let (mut t, mut c) = raw_server(&goaway);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::MISSING_SETTINGS);
    // Even an unknown frame may not come before SETTINGS.
    let (mut t, mut c) = raw_server(&[0x21, 0x00]);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::MISSING_SETTINGS);
    // A second SETTINGS.
    let mut two = settings_bytes();
    two.extend(settings_bytes());
    let (mut t, mut c) = raw_server(&two);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::FRAME_UNEXPECTED);
    // A reserved HTTP/2 setting, and a duplicate one.
    let (mut t, mut c) = raw_server(&[0x04, 0x02, 0x03, 0x14]);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::SETTINGS_ERROR);
    let (mut t, mut c) = raw_server(&[0x04, 0x04, 0x06, 0x01, 0x06, 0x02]);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::SETTINGS_ERROR);
    // DATA and HEADERS on the control stream.
    let mut v = settings_bytes();
    v.extend([0x00, 0x01, 0xaa]);
    let (mut t, mut c) = raw_server(&v);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::FRAME_UNEXPECTED);
    let mut v = settings_bytes();
    v.extend([0x01, 0x00]);
    let (mut t, mut c) = raw_server(&v);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::FRAME_UNEXPECTED);
    // Closing the control stream.
    let (mut t, mut c) = raw_server(&settings_bytes());
    t.inject(2, &[], true);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::CLOSED_CRITICAL_STREAM);
    // A second control stream.
    let (mut t, mut c) = raw_server(&settings_bytes());
    t.inject(6, &[0x00], false);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::STREAM_CREATION_ERROR);
    // A push stream from a client.
    let (mut t, mut c) = raw_server(&settings_bytes());
    t.inject(6, &[0x01], false);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::STREAM_CREATION_ERROR);
    // CANCEL_PUSH without MAX_PUSH_ID.
    let mut v = settings_bytes();
    v.extend([0x03, 0x01, 0x00]);
    let (mut t, mut c) = raw_server(&v);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::ID_ERROR);
    // MAX_PUSH_ID decreasing.
    let mut v = settings_bytes();
    v.extend([0x0d, 0x01, 0x05, 0x0d, 0x01, 0x04]);
    let (mut t, mut c) = raw_server(&v);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::ID_ERROR);
}

#[test]
fn settings_and_grease_in_pieces_are_fine() {
    let mut v = Vec::new();
    Frame::Settings(Settings {
        max_field_section_size: Some(1000),
        other: vec![(0x21 + 0x1f, 5)],
        ..Default::default()
    })
    .encode(&mut v);
    Frame::Unknown { frame_type: 0x21 }.encode(&mut v);
    v.extend([0x21 + 0x1f * 2, 0x03, 1, 2, 3]);
    let (mut t, mut c) = raw_server(&v);
    t.recv_limit = 1;
    // An unknown stream type and a QPACK encoder stream setting capacity 0.
    t.inject(6, &[0x21, 0xff, 0xff], false);
    t.inject(10, &[0x02, 0x20], false);
    t.inject(14, &[0x03, 0x40], false);
    for _ in 0..100 {
        assert_eq!(c.poll(&mut t).unwrap(), None);
    }
    assert_eq!(c.peer_settings().unwrap().max_field_section_size, Some(1000));
    assert_eq!(t.stopped, vec![(6, H3Code::STREAM_CREATION_ERROR.0)]);
    assert!(t.closed.is_none());
}

#[test]
fn qpack_stream_errors() {
    let (mut t, mut c) = raw_server(&settings_bytes());
    t.inject(6, &[0x02, 0x3f, 0xbd, 0x01], false);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::QPACK_ENCODER_STREAM_ERROR);
    let (mut t, mut c) = raw_server(&settings_bytes());
    t.inject(6, &[0x03, 0x84], false);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::QPACK_DECODER_STREAM_ERROR);
    let (mut t, mut c) = raw_server(&settings_bytes());
    t.inject(6, &[0x02], false);
    t.inject(10, &[0x02], false);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::STREAM_CREATION_ERROR);
    let (mut t, mut c) = raw_server(&settings_bytes());
    t.inject(6, &[0x03], true);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::CLOSED_CRITICAL_STREAM);
}

fn headers_frame(section: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    Frame::Headers { field_section: section.to_vec() }.encode(&mut v);
    v
}

fn encoded(headers: &[Header]) -> Vec<u8> {
    let mut s = Vec::new();
    qpack::encode_field_section(headers, &mut s);
    s
}

#[test]
fn request_stream_errors() {
    // A dynamic-table reference closes the connection.
    let (mut t, mut c) = raw_server(&settings_bytes());
    t.inject(0, &headers_frame(&[0x03, 0x81, 0x10, 0x11]), true);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::QPACK_DECOMPRESSION_FAILED);
    // DATA before HEADERS.
    let (mut t, mut c) = raw_server(&settings_bytes());
    t.inject(0, &[0x00, 0x01, 0x61], true);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::FRAME_UNEXPECTED);
    // A control frame on a request stream.
    let (mut t, mut c) = raw_server(&settings_bytes());
    let mut v = headers_frame(&encoded(&get_request()));
    v.extend([0x07, 0x01, 0x00]);
    t.inject(0, &v, true);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::FRAME_UNEXPECTED);
    // A stream ending inside a frame.
    let (mut t, mut c) = raw_server(&settings_bytes());
    let v = headers_frame(&encoded(&get_request()));
    t.inject(0, &v[..v.len() - 1], true);
    assert_eq!(conn_error(&mut t, &mut c), H3Code::FRAME_ERROR);
    // A client-initiated... server-initiated bidi stream at a client.
    let mut ct = End::new(false);
    let mut cc = Connection::with_transport(&mut ct, &Config::default()).unwrap();
    ct.inject(1, &[0x01, 0x00], false);
    assert_eq!(conn_error(&mut ct, &mut cc), H3Code::STREAM_CREATION_ERROR);
}

#[test]
fn malformed_messages_are_stream_errors() {
    let (mut t, mut c) = raw_server(&settings_bytes());
    let bad = hs(&[(":method", "GET"), (":scheme", "https"), (":path", "/"), ("Upper", "x")]);
    t.inject(0, &headers_frame(&encoded(&bad)), true);
    let missing = hs(&[(":method", "GET"), (":path", "/")]);
    t.inject(4, &headers_frame(&encoded(&missing)), true);
    // content-length mismatch.
    let cl = hs(&[(":method", "POST"), (":scheme", "https"), (":path", "/"), ("content-length", "5")]);
    let mut v = headers_frame(&encoded(&cl));
    v.extend([0x00, 0x02, b'h', b'i']);
    t.inject(8, &v, true);
    // No HEADERS at all.
    t.inject(12, &[], true);
    let mut ev = Vec::new();
    while let Some(e) = c.poll(&mut t).unwrap() {
        ev.push(e);
    }
    let errs: Vec<(u64, H3Code)> = ev
        .iter()
        .filter_map(|e| match e {
            Event::StreamError { stream, error } => Some((*stream, error.code)),
            _ => None,
        })
        .collect();
    assert_eq!(
        errs,
        vec![(0, H3Code::MESSAGE_ERROR), (4, H3Code::MESSAGE_ERROR), (12, H3Code::REQUEST_INCOMPLETE)]
    );
    // Stream 8's header section was fine; its body is short.
    assert!(ev.contains(&Event::Data { stream: 8 }));
    let mut buf = [0u8; 10];
    assert_eq!(c.recv_body(&mut t, 8, &mut buf).unwrap(), 2);
    assert_eq!(
        c.poll(&mut t).unwrap(),
        Some(Event::StreamError { stream: 8, error: H3Error::message("body shorter than content-length") })
    );
    assert!(t.resets.contains(&(0, H3Code::MESSAGE_ERROR.0)));
    assert!(t.stopped.contains(&(4, H3Code::MESSAGE_ERROR.0)));
    assert!(t.closed.is_none());
}

#[test]
fn api_misuse() {
    let mut p = Pair::new();
    assert!(matches!(p.s.send_request(&mut p.server, &get_request(), true), Err(Error::InvalidState(_))));
    assert!(matches!(
        p.c.send_response(&mut p.client, 0, &hs(&[(":status", "200")]), true),
        Err(Error::InvalidState(_))
    ));
    assert!(matches!(
        p.c.send_request(&mut p.client, &hs(&[(":method", "GET")]), true),
        Err(Error::InvalidHeaders(_))
    ));
    let id = p.c.send_request(&mut p.client, &get_request(), true).unwrap();
    assert!(matches!(p.c.send_body(&mut p.client, id, b"x", false), Err(Error::InvalidState(_))));
    let mut buf = [0u8; 4];
    assert!(matches!(p.c.recv_body(&mut p.client, 99, &mut buf), Err(Error::InvalidState(_))));
}

#[test]
fn data_event_only_when_payload_is_readable() {
    let mut p = Pair::new();
    let id = p.c.send_request(&mut p.client, &get_request(), true).unwrap();
    p.deliver();
    p.server_events();
    p.s.send_response(&mut p.server, id, &hs(&[(":status", "200")]), false).unwrap();
    p.s.send_body(&mut p.server, id, b"0123456789", true).unwrap();
    // Deliver the header section and half the DATA frame.
    let mut bytes: Vec<u8> = Vec::new();
    for (_, d, _) in p.server.outbox.iter().filter(|(s, _, _)| *s == id) {
        bytes.extend(d);
    }
    p.server.outbox.retain(|(s, _, _)| *s != id);
    p.deliver();
    let half = bytes.len() - 5;
    p.client.inject(id, &bytes[..half], false);
    let ev = p.client_events();
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert_eq!(ev[1], Event::Data { stream: id });
    assert_eq!(read_body(&mut p.c, &mut p.client, id), b"01234");
    // Nothing more arrived: no spurious Data events.
    assert_eq!(p.client_events(), vec![]);
    p.client.inject(id, &bytes[half..], true);
    assert_eq!(p.client_events(), vec![Event::Data { stream: id }]);
    assert_eq!(read_body(&mut p.c, &mut p.client, id), b"56789");
    assert_eq!(p.client_events(), vec![Event::Finished { stream: id }]);
    assert_eq!(p.c.recv_body(&mut p.client, id, &mut [0u8; 8]).unwrap(), 0);
}
