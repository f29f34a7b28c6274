//! The applications at the two ends of a flow: what the client asks for, what the
//! server answers with, and the receiver's check of every body byte.
//!
//! Bodies are generated, never stored: byte `i` is `i mod 251`. The period is prime
//! and not a divisor of any frame or packet size, so data delivered at a wrong offset,
//! duplicated or dropped shows up as mismatching bytes.

use std::time::Instant;

use mpquic::h3::{self, quic::Quic, Header};
use mpquic::Connection;

/// Period of the generated body.
const PERIOD: usize = 251;
/// Largest slice written or checked at once.
pub(crate) const CHUNK: usize = 256 * 1024;
/// The stream of the plain-stream workloads (the client's first bidirectional one).
const STREAM: u64 = 0;

/// Generated body bytes: `slice(offset, n)` is the body from `offset` on.
pub(crate) struct Body {
    buf: Vec<u8>,
}

impl Body {
    pub(crate) fn new() -> Body {
        Body { buf: (0..CHUNK + PERIOD).map(|i| (i % PERIOD) as u8).collect() }
    }

    /// The body at `offset`, at most `min(n, CHUNK)` bytes.
    pub(crate) fn slice(&self, offset: u64, n: usize) -> &[u8] {
        let start = (offset % PERIOD as u64) as usize;
        &self.buf[start..start + n.min(CHUNK)]
    }

    /// Bytes of `data` (received at body offset `offset`) that differ from the body.
    pub(crate) fn mismatches(&self, offset: u64, data: &[u8]) -> u64 {
        let mut bad = 0u64;
        let mut off = offset;
        for part in data.chunks(CHUNK) {
            let want = self.slice(off, part.len());
            // The common case is a match: one memcmp, no per-byte loop.
            if want != part {
                bad += want.iter().zip(part).filter(|(a, b)| a != b).count() as u64;
            }
            off += part.len() as u64;
        }
        bad
    }
}

/// What one application step delivered to the receiving side.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Delivered {
    /// Body bytes handed to the receiving application, in order.
    pub(crate) bytes: u64,
    /// The body ended (FIN of the stream, or the HTTP/3 response finished).
    pub(crate) finished: bool,
}

/// The receiving side's running check of the body.
#[derive(Debug, Default)]
struct Receiver {
    offset: u64,
    mismatches: u64,
}

impl Receiver {
    fn take(&mut self, body: &Body, data: &[u8]) -> u64 {
        self.mismatches += body.mismatches(self.offset, data);
        self.offset += data.len() as u64;
        data.len() as u64
    }
}

/// Plain-stream workloads: a 3-byte request then the body on stream 0, or (upload)
/// the body from the client on stream 0.
#[derive(Debug)]
pub(crate) struct StreamApp {
    upload: bool,
    request_sent: bool,
    sending: bool,
    sent: u64,
    rx: Receiver,
}

/// HTTP/3: the client GETs `/bytes/N` (or `/bytes/unbounded`), the server answers 200
/// with a generated body of N bytes and a content-length.
#[derive(Debug, Default)]
pub(crate) struct H3App {
    client: Option<h3::Connection>,
    server: Option<h3::Connection>,
    request: Option<u64>,
    /// Responses the server is writing.
    responses: Vec<Response>,
    status: Option<u16>,
    content_length: Option<u64>,
    rx: Receiver,
}

/// A response body in progress on the server.
#[derive(Debug)]
struct Response {
    stream: u64,
    size: Option<u64>,
    sent: u64,
}

/// One flow's applications.
#[derive(Debug)]
pub(crate) enum App {
    Stream(StreamApp),
    H3(Box<H3App>),
}

impl App {
    pub(crate) fn stream(upload: bool) -> App {
        App::Stream(StreamApp {
            upload,
            request_sent: false,
            sending: false,
            sent: 0,
            rx: Receiver::default(),
        })
    }

    pub(crate) fn h3() -> App {
        App::H3(Box::default())
    }

    /// Bytes of received body that differed from the generated one.
    pub(crate) fn mismatches(&self) -> u64 {
        match self {
            App::Stream(s) => s.rx.mismatches,
            App::H3(h) => h.rx.mismatches,
        }
    }

    /// HTTP/3 response status the client got, if any.
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            App::Stream(_) => None,
            App::H3(h) => h.status,
        }
    }

    /// Runs both ends for one step. `size` is the transfer size (`None`: unbounded);
    /// `sink` is scratch space for reads. Errors are fatal for the flow's application.
    pub(crate) fn step(
        &mut self,
        client: Option<&mut Connection>,
        server: Option<&mut Connection>,
        size: Option<u64>,
        body: &Body,
        sink: &mut [u8],
        now: Instant,
    ) -> Result<Delivered, String> {
        match self {
            App::Stream(s) => Ok(s.step(client, server, size, body, sink)),
            App::H3(h) => h.step(client, server, size, body, sink, now),
        }
    }
}

impl StreamApp {
    fn step(
        &mut self,
        mut client: Option<&mut Connection>,
        mut server: Option<&mut Connection>,
        size: Option<u64>,
        body: &Body,
        sink: &mut [u8],
    ) -> Delivered {
        if let Some(c) = client.as_deref_mut().filter(|c| c.is_established()) {
            if !self.request_sent {
                self.request_sent = true;
                if self.upload {
                    // An empty write opens the stream: until then it has no capacity.
                    let _ = c.stream_send(STREAM, &[], false);
                    self.sending = true;
                } else {
                    let _ = c.stream_send(STREAM, b"GET", true);
                }
            }
        }
        if !self.upload && !self.sending {
            if let Some(s) = server.as_deref_mut().filter(|s| s.stream_readable(STREAM)) {
                // The request's content does not matter: any request starts the body.
                while let Ok((n, fin)) = s.stream_recv(STREAM, sink) {
                    if n == 0 || fin {
                        break;
                    }
                }
                self.sending = true;
            }
        }
        let (sender, receiver) = if self.upload { (client, server) } else { (server, client) };
        if self.sending {
            if let Some(tx) = sender {
                write_body(tx, &mut self.sent, size, body);
            }
        }
        let mut out = Delivered::default();
        if let Some(rx) = receiver {
            // Before the body starts, the server of a download reads nothing here (the
            // request was consumed above); the client reads only the body.
            while let Ok((n, fin)) = rx.stream_recv(STREAM, sink) {
                out.bytes += self.rx.take(body, &sink[..n]);
                out.finished |= fin;
                if n == 0 || fin {
                    break;
                }
            }
        }
        out
    }
}

/// Writes the body on stream 0 as far as flow control allows.
fn write_body(tx: &mut Connection, sent: &mut u64, size: Option<u64>, body: &Body) {
    loop {
        let left = size.map_or(u64::MAX, |s| s - *sent);
        if left == 0 {
            return;
        }
        let cap = tx.stream_capacity(STREAM).unwrap_or(0);
        if cap == 0 {
            return;
        }
        let n = (cap.min(CHUNK) as u64).min(left) as usize;
        let fin = size.is_some() && n as u64 == left;
        match tx.stream_send(STREAM, body.slice(*sent, n), fin) {
            Ok(w) if w > 0 => *sent += w as u64,
            _ => return,
        }
    }
}

fn h3_err(what: &str) -> impl Fn(h3::Error) -> String + '_ {
    move |e| format!("HTTP/3 {what}: {e}")
}

/// The requested size from a `:path` of `/bytes/N` or `/bytes/unbounded`.
fn parse_size(path: &[u8]) -> Result<Option<u64>, String> {
    let p = std::str::from_utf8(path).map_err(|_| "request path is not UTF-8".to_string())?;
    let rest = p.strip_prefix("/bytes/").ok_or_else(|| format!("unknown request path {p:?}"))?;
    if rest == "unbounded" {
        return Ok(None);
    }
    rest.parse::<u64>().map(Some).map_err(|_| format!("bad size in request path {p:?}"))
}

fn header<'a>(headers: &'a [Header], name: &str) -> Option<&'a [u8]> {
    headers.iter().find(|h| h.name == name.as_bytes()).map(|h| h.value.as_slice())
}

fn number(v: &[u8]) -> Option<u64> {
    std::str::from_utf8(v).ok()?.parse().ok()
}

impl H3App {
    fn step(
        &mut self,
        client: Option<&mut Connection>,
        server: Option<&mut Connection>,
        size: Option<u64>,
        body: &Body,
        sink: &mut [u8],
        now: Instant,
    ) -> Result<Delivered, String> {
        if let Some(s) = server.filter(|s| s.is_established()) {
            self.serve(s, body, now)?;
        }
        match client.filter(|c| c.is_established()) {
            Some(c) => self.fetch(c, size, body, sink, now),
            None => Ok(Delivered::default()),
        }
    }

    fn serve(&mut self, conn: &mut Connection, body: &Body, now: Instant) -> Result<(), String> {
        let cfg = h3::Config::default();
        let h = match &mut self.server {
            Some(h) => h,
            None => self.server.insert(
                h3::Connection::with_transport(&mut Quic::new(conn, now), &cfg).map_err(h3_err("server"))?,
            ),
        };
        while let Some(ev) = h.poll(&mut Quic::new(conn, now)).map_err(h3_err("server"))? {
            let h3::Event::Headers { stream, headers, .. } = ev else { continue };
            let size = match parse_size(header(&headers, ":path").unwrap_or_default()) {
                Ok(s) => s,
                Err(e) => {
                    let resp = [Header::new(":status", "400")];
                    let _ = h.send_response(&mut Quic::new(conn, now), stream, &resp, true);
                    return Err(format!("server: {e}"));
                }
            };
            let mut resp = vec![Header::new(":status", "200")];
            if let Some(n) = size {
                resp.push(Header::new("content-length", n.to_string()));
            }
            h.send_response(&mut Quic::new(conn, now), stream, &resp, size == Some(0))
                .map_err(h3_err("response"))?;
            if size != Some(0) {
                self.responses.push(Response { stream, size, sent: 0 });
            }
        }
        for r in &mut self.responses {
            loop {
                let left = r.size.map_or(u64::MAX, |s| s - r.sent);
                let n = left.min(CHUNK as u64) as usize;
                let fin = r.size.is_some() && n as u64 == left;
                let w = h
                    .send_body(&mut Quic::new(conn, now), r.stream, body.slice(r.sent, n), fin)
                    .map_err(h3_err("body"))?;
                r.sent += w as u64;
                if w == 0 || r.size == Some(r.sent) {
                    break;
                }
            }
        }
        self.responses.retain(|r| r.size != Some(r.sent));
        Ok(())
    }

    fn fetch(
        &mut self,
        conn: &mut Connection,
        size: Option<u64>,
        body: &Body,
        sink: &mut [u8],
        now: Instant,
    ) -> Result<Delivered, String> {
        let cfg = h3::Config::default();
        let h = match &mut self.client {
            Some(h) => h,
            None => self.client.insert(
                h3::Connection::with_transport(&mut Quic::new(conn, now), &cfg).map_err(h3_err("client"))?,
            ),
        };
        if self.request.is_none() {
            let path = size.map_or_else(|| "/bytes/unbounded".to_string(), |n| format!("/bytes/{n}"));
            let req = [
                Header::new(":method", "GET"),
                Header::new(":scheme", "https"),
                Header::new(":authority", "localhost"),
                Header::new(":path", path),
            ];
            self.request =
                Some(h.send_request(&mut Quic::new(conn, now), &req, true).map_err(h3_err("request"))?);
        }
        let mut out = Delivered::default();
        while let Some(ev) = h.poll(&mut Quic::new(conn, now)).map_err(h3_err("client"))? {
            match ev {
                h3::Event::Headers { stream, headers, has_body } if Some(stream) == self.request => {
                    let status = header(&headers, ":status").and_then(number);
                    if self.status.is_some() || status.is_some_and(|s| s < 200) {
                        continue; // trailers, or an interim response
                    }
                    let status = status.ok_or("response without a :status")?;
                    self.status = Some(status as u16);
                    if status != 200 {
                        return Err(format!("response status {status}"));
                    }
                    self.content_length = header(&headers, "content-length").and_then(number);
                    if let (Some(want), Some(got)) = (size, self.content_length) {
                        if want != got {
                            return Err(format!("asked for {want} bytes, content-length is {got}"));
                        }
                    }
                    out.finished |= !has_body;
                }
                h3::Event::Data { stream } if Some(stream) == self.request => loop {
                    let n = h.recv_body(&mut Quic::new(conn, now), stream, sink).map_err(h3_err("body"))?;
                    if n == 0 {
                        break;
                    }
                    out.bytes += self.rx.take(body, &sink[..n]);
                },
                h3::Event::Finished { stream } if Some(stream) == self.request => {
                    if let Some(l) = self.content_length.filter(|&l| l != self.rx.offset) {
                        return Err(format!("body ended after {} bytes, content-length {l}", self.rx.offset));
                    }
                    out.finished = true;
                }
                h3::Event::Reset { stream, code } if Some(stream) == self.request => {
                    return Err(format!("response stream reset (code {code:#x})"));
                }
                h3::Event::StreamError { error, .. } => {
                    return Err(format!("HTTP/3 stream error: {error:?}"))
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_is_periodic_and_sliceable_anywhere() {
        let b = Body::new();
        assert_eq!(b.slice(0, 3), &[0, 1, 2]);
        assert_eq!(b.slice(250, 3), &[250, 0, 1]);
        assert_eq!(b.slice(251 * 1000 + 5, 2), &[5, 6]);
        assert_eq!(b.slice(7, CHUNK * 2).len(), CHUNK);
    }

    #[test]
    fn mismatches_catch_shifted_duplicated_and_corrupted_data() {
        let b = Body::new();
        let good: Vec<u8> = (1000u64..1000 + 600_000).map(|i| (i % 251) as u8).collect();
        assert_eq!(b.mismatches(1000, &good), 0);
        // The same bytes checked one byte off (a segment placed at the wrong offset).
        assert_eq!(b.mismatches(1001, &good), 600_000);
        let mut bad = good.clone();
        bad[300_000] ^= 0xff;
        bad[599_999] = bad[599_999].wrapping_add(1);
        assert_eq!(b.mismatches(1000, &bad), 2);
    }

    #[test]
    fn receiver_tracks_offset_across_reads() {
        let b = Body::new();
        let mut r = Receiver::default();
        let all: Vec<u8> = (0u64..1000).map(|i| (i % 251) as u8).collect();
        for part in all.chunks(77) {
            r.take(&b, part);
        }
        assert_eq!((r.offset, r.mismatches), (1000, 0));
        // A repeated chunk is caught.
        r.take(&b, &all[..77]);
        assert!(r.mismatches > 0);
    }

    #[test]
    fn request_paths() {
        assert_eq!(parse_size(b"/bytes/123"), Ok(Some(123)));
        assert_eq!(parse_size(b"/bytes/unbounded"), Ok(None));
        assert!(parse_size(b"/bytes/-1").unwrap_err().contains("bad size"));
        assert!(parse_size(b"/index.html").unwrap_err().contains("unknown request path"));
        assert!(parse_size(&[0xff, 0xfe]).unwrap_err().contains("UTF-8"));
    }
}
