//! HTTP/3 for the `http3` cell (quic-interop-runner's: the client GETs
//! its files over parallel requests, ALPN `h3`), each engine over its own
//! HTTP/3 stack behind [`H3`]: mpquic's `mpquic::h3`, quiche's
//! `quiche::h3` (aioquic's `H3Connection` is in `aioquic_peer.py`). The
//! path is `/<id>-<size>`; the bodies and their checks are hq-interop's
//! (`content`).

use std::collections::HashMap;
use std::time::Instant;

use mpquic::h3::quic::Quic;

use crate::content::{Body, Check, File};
use crate::sansio::{ClientApp, ServerApp};

/// A type holding the QUIC connection `C` an HTTP/3 stack runs on (a
/// driver's engine, or the connection itself).
pub trait Holds<C> {
    /// The connection.
    fn conn(&mut self) -> &mut C;
}

/// An HTTP/3 event, as either stack reports it.
#[derive(Debug)]
pub enum Event {
    /// A request (server) or response (client) header section.
    Headers {
        /// Request stream.
        stream: u64,
        /// The fields, as (name, value).
        headers: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// Body bytes to read with [`H3::recv_body`] until it returns 0.
    Data(u64),
    /// The peer ended the stream.
    Finished(u64),
    /// The peer reset the stream, or its message was malformed.
    Aborted {
        /// Request stream.
        stream: u64,
        /// What happened.
        why: String,
    },
    /// Nothing the cell uses (GOAWAY, PRIORITY_UPDATE).
    Other,
}

/// The calls the cell makes of an HTTP/3 stack running on the QUIC
/// connection `Conn`. Errors are fatal to the connection's HTTP/3.
pub trait H3: Sized {
    /// The QUIC connection.
    type Conn;
    /// Starts HTTP/3 (control and QPACK streams) once 1-RTT (or 0-RTT)
    /// keys are there.
    fn start(c: &mut Self::Conn) -> Result<Self, String>;
    /// Client: sends a request without body; `None` when the peer's stream
    /// limit or flow control leaves no room now.
    fn request(&mut self, c: &mut Self::Conn, headers: &[(&[u8], &[u8])]) -> Result<Option<u64>, String>;
    /// Server: sends the response header section (more follows); `false`
    /// when it must be retried later.
    fn respond(
        &mut self,
        c: &mut Self::Conn,
        stream: u64,
        headers: &[(&[u8], &[u8])],
    ) -> Result<bool, String>;
    /// Body bytes taken (0: blocked); `fin` once all of `data` is taken.
    fn send_body(&mut self, c: &mut Self::Conn, stream: u64, data: &[u8], fin: bool)
        -> Result<usize, String>;
    /// Body bytes read (0: none now).
    fn recv_body(&mut self, c: &mut Self::Conn, stream: u64, buf: &mut [u8]) -> Result<usize, String>;
    /// The next event (`None`: nothing now).
    fn poll(&mut self, c: &mut Self::Conn) -> Result<Option<Event>, String>;
}

fn field<'a>(headers: &'a [(Vec<u8>, Vec<u8>)], name: &str) -> Option<&'a [u8]> {
    headers.iter().find(|(n, _)| n == name.as_bytes()).map(|(_, v)| v.as_slice())
}

/// Drains a stream's readable body into `into` (`Err`: the stack failed).
fn drain<H: H3>(
    h: &mut H,
    c: &mut H::Conn,
    stream: u64,
    buf: &mut [u8],
    mut into: impl FnMut(&[u8]),
) -> Result<(), String> {
    loop {
        match h.recv_body(c, stream, buf)? {
            0 => return Ok(()),
            n => into(&buf[..n]),
        }
    }
}

/// The client side of one connection: every request sent as soon as the
/// stream limit allows, each response checked (status 200, then the body).
pub struct Client<H> {
    h3: Option<H>,
    files: Vec<File>,
    next: usize,
    open: HashMap<u64, Check>,
    ok: usize,
    errors: Vec<String>,
    received: u64,
    /// HTTP/3 failed: nothing more will come.
    failed: bool,
    buf: Vec<u8>,
}

impl<H: H3> Client<H> {
    /// A client that will fetch `files`.
    pub fn new(files: Vec<File>) -> Client<H> {
        Client {
            h3: None,
            files,
            next: 0,
            open: HashMap::new(),
            ok: 0,
            errors: Vec::new(),
            received: 0,
            failed: false,
            buf: vec![0u8; 64 * 1024],
        }
    }

    fn run(&mut self, c: &mut H::Conn) -> Result<(), String> {
        let h = match &mut self.h3 {
            Some(h) => h,
            None => self.h3.insert(H::start(c)?),
        };
        while let Some(f) = self.files.get(self.next) {
            let path = f.path();
            let req: [(&[u8], &[u8]); 5] = [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", b"localhost"),
                (b":path", path.as_bytes()),
                (b"user-agent", b"mpquic-interop"),
            ];
            let Some(id) = h.request(c, &req)? else { break };
            self.open.insert(id, Check::new(*f));
            self.next += 1;
        }
        while let Some(ev) = h.poll(c)? {
            match ev {
                Event::Headers { stream, headers } => {
                    let status = field(&headers, ":status").unwrap_or_default();
                    if status != b"200" && self.open.contains_key(&stream) {
                        self.open.remove(&stream);
                        self.errors
                            .push(format!("stream {stream}: status {:?}", String::from_utf8_lossy(status)));
                    }
                }
                Event::Data(stream) => {
                    let (mut check, received) = (self.open.get_mut(&stream), &mut self.received);
                    drain(h, c, stream, &mut self.buf, |d| {
                        *received += d.len() as u64;
                        if let Some(check) = check.as_mut() {
                            check.push(d);
                        }
                    })?;
                }
                Event::Finished(stream) => match self.open.remove(&stream).and_then(|c| c.verdict()) {
                    Some(e) => self.errors.push(e),
                    None => self.ok += 1,
                },
                Event::Aborted { stream, why } => {
                    if self.open.remove(&stream).is_some() {
                        self.errors.push(format!("stream {stream}: {why}"));
                    }
                }
                Event::Other => {}
            }
        }
        Ok(())
    }
}

impl<E: Holds<H::Conn>, H: H3> ClientApp<E> for Client<H> {
    fn step(&mut self, e: &mut E) {
        if !self.failed {
            let r = self.run(e.conn());
            self.failed = record(r, &mut self.errors);
        }
    }
    fn done(&self) -> bool {
        self.failed || (self.next == self.files.len() && self.open.is_empty())
    }
    fn received(&self) -> u64 {
        self.received
    }
    fn total(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
    fn ok(&self) -> usize {
        self.ok
    }
    fn take_errors(&mut self) -> Vec<String> {
        std::mem::take(&mut self.errors)
    }
}

/// A response being sent.
struct Response {
    /// The header section went.
    headed: bool,
    size: u64,
    body: Body,
}

/// The server side of one connection: answers every GET of `/<id>-<size>`
/// with status 200 and the body.
pub struct Server<H> {
    h3: Option<H>,
    responses: HashMap<u64, Response>,
    served: usize,
    errors: Vec<String>,
    failed: bool,
    scratch: Vec<u8>,
}

impl<H> Default for Server<H> {
    fn default() -> Self {
        Server {
            h3: None,
            responses: HashMap::new(),
            served: 0,
            errors: Vec::new(),
            failed: false,
            scratch: vec![0u8; 64 * 1024],
        }
    }
}

impl<H: H3> Server<H> {
    fn run(&mut self, c: &mut H::Conn) -> Result<(), String> {
        let h = match &mut self.h3 {
            Some(h) => h,
            None => self.h3.insert(H::start(c)?),
        };
        while let Some(ev) = h.poll(c)? {
            match ev {
                Event::Headers { stream, headers } => {
                    let method = field(&headers, ":method").unwrap_or_default();
                    let path = field(&headers, ":path").unwrap_or_default();
                    match File::from_path(path).filter(|_| method == b"GET") {
                        Some(f) => {
                            let r = Response { headed: false, size: f.size, body: Body::new(f) };
                            self.responses.insert(stream, r);
                        }
                        None => self.errors.push(format!(
                            "bad request {} {}",
                            String::from_utf8_lossy(method),
                            String::from_utf8_lossy(path)
                        )),
                    }
                }
                // GETs have no body: whatever comes is dropped.
                Event::Data(stream) => drain(h, c, stream, &mut self.scratch, |_| {})?,
                Event::Aborted { stream, why } => {
                    if self.responses.remove(&stream).is_some() {
                        self.errors.push(format!("stream {stream}: {why}"));
                    }
                }
                Event::Finished(_) | Event::Other => {}
            }
        }
        let mut failed = None;
        let scratch = &mut self.scratch;
        let mut finished = 0;
        self.responses.retain(|&id, r| {
            if failed.is_some() {
                return true;
            }
            if !r.headed {
                let len = r.size.to_string();
                let resp: [(&[u8], &[u8]); 2] = [(b":status", b"200"), (b"content-length", len.as_bytes())];
                match h.respond(c, id, &resp) {
                    Ok(sent) => r.headed = sent,
                    Err(e) => failed = Some(e),
                }
                if !r.headed {
                    return true;
                }
            }
            let done = r.body.pump(scratch, |d, fin| match h.send_body(c, id, d, fin) {
                Ok(n) => Some(n),
                Err(e) => {
                    failed = Some(e);
                    None
                }
            });
            finished += usize::from(done);
            !done
        });
        self.served += finished;
        failed.map_or(Ok(()), Err)
    }
}

impl<C: Holds<H::Conn>, H: H3> ServerApp<C> for Server<H> {
    fn step(&mut self, c: &mut C) {
        if !self.failed {
            let r = self.run(c.conn());
            self.failed = record(r, &mut self.errors);
        }
    }
    fn served(&self) -> usize {
        self.served
    }
    fn take_errors(&mut self) -> Vec<String> {
        std::mem::take(&mut self.errors)
    }
}

impl Holds<mpquic::Connection> for mpquic::Connection {
    fn conn(&mut self) -> &mut mpquic::Connection {
        self
    }
}

/// mpquic's HTTP/3, each call on the connection at the current time.
impl H3 for mpquic::h3::Connection {
    type Conn = mpquic::Connection;

    fn start(c: &mut Self::Conn) -> Result<Self, String> {
        let config = mpquic::h3::Config::default();
        mpquic::h3::Connection::with_transport(&mut Quic::new(c, Instant::now()), &config)
            .map_err(|e| format!("start: {e}"))
    }

    fn request(&mut self, c: &mut Self::Conn, headers: &[(&[u8], &[u8])]) -> Result<Option<u64>, String> {
        use mpquic::h3::{Error, StreamError};
        let hs: Vec<_> = headers.iter().map(|(n, v)| mpquic::h3::Header::new(n, v)).collect();
        match self.send_request(&mut Quic::new(c, Instant::now()), &hs, true) {
            Ok(id) => Ok(Some(id)),
            Err(Error::Transport(StreamError::StreamLimit | StreamError::Blocked)) => Ok(None),
            Err(e) => Err(format!("send_request: {e}")),
        }
    }

    fn respond(
        &mut self,
        c: &mut Self::Conn,
        stream: u64,
        headers: &[(&[u8], &[u8])],
    ) -> Result<bool, String> {
        let hs: Vec<_> = headers.iter().map(|(n, v)| mpquic::h3::Header::new(n, v)).collect();
        // What the stream cannot take now is queued by the stack.
        self.send_response(&mut Quic::new(c, Instant::now()), stream, &hs, false)
            .map(|()| true)
            .map_err(|e| format!("send_response: {e}"))
    }

    fn send_body(
        &mut self,
        c: &mut Self::Conn,
        stream: u64,
        data: &[u8],
        fin: bool,
    ) -> Result<usize, String> {
        mpquic::h3::Connection::send_body(self, &mut Quic::new(c, Instant::now()), stream, data, fin)
            .map_err(|e| format!("send_body: {e}"))
    }

    fn recv_body(&mut self, c: &mut Self::Conn, stream: u64, buf: &mut [u8]) -> Result<usize, String> {
        mpquic::h3::Connection::recv_body(self, &mut Quic::new(c, Instant::now()), stream, buf)
            .map_err(|e| format!("recv_body: {e}"))
    }

    fn poll(&mut self, c: &mut Self::Conn) -> Result<Option<Event>, String> {
        use mpquic::h3::Event as E;
        let ev = mpquic::h3::Connection::poll(self, &mut Quic::new(c, Instant::now()))
            .map_err(|e| format!("poll: {e}"))?;
        Ok(ev.map(|ev| match ev {
            E::Headers { stream, headers, .. } => {
                Event::Headers { stream, headers: headers.into_iter().map(|h| (h.name, h.value)).collect() }
            }
            E::Data { stream } => Event::Data(stream),
            E::Finished { stream } => Event::Finished(stream),
            E::Reset { stream, code } => Event::Aborted { stream, why: format!("reset with {code:#x}") },
            E::StreamError { stream, error } => Event::Aborted { stream, why: error.to_string() },
            E::GoAway { .. } => Event::Other,
        }))
    }
}

/// quiche's HTTP/3.
impl H3 for quiche::h3::Connection {
    type Conn = quiche::Connection;

    fn start(c: &mut Self::Conn) -> Result<Self, String> {
        let config = quiche::h3::Config::new().map_err(|e| format!("config: {e}"))?;
        quiche::h3::Connection::with_transport(c, &config).map_err(|e| format!("start: {e}"))
    }

    fn request(&mut self, c: &mut Self::Conn, headers: &[(&[u8], &[u8])]) -> Result<Option<u64>, String> {
        use quiche::h3::Error;
        let hs: Vec<_> = headers.iter().map(|(n, v)| quiche::h3::Header::new(n, v)).collect();
        match self.send_request(c, &hs, true) {
            Ok(id) => Ok(Some(id)),
            Err(Error::StreamBlocked | Error::TransportError(quiche::Error::StreamLimit)) => Ok(None),
            Err(e) => Err(format!("send_request: {e}")),
        }
    }

    fn respond(
        &mut self,
        c: &mut Self::Conn,
        stream: u64,
        headers: &[(&[u8], &[u8])],
    ) -> Result<bool, String> {
        let hs: Vec<_> = headers.iter().map(|(n, v)| quiche::h3::Header::new(n, v)).collect();
        match self.send_response(c, stream, &hs, false) {
            Ok(()) => Ok(true),
            Err(quiche::h3::Error::StreamBlocked) => Ok(false),
            Err(e) => Err(format!("send_response: {e}")),
        }
    }

    fn send_body(
        &mut self,
        c: &mut Self::Conn,
        stream: u64,
        data: &[u8],
        fin: bool,
    ) -> Result<usize, String> {
        match quiche::h3::Connection::send_body(self, c, stream, data, fin) {
            Ok(n) => Ok(n),
            Err(quiche::h3::Error::Done) => Ok(0),
            Err(e) => Err(format!("send_body: {e}")),
        }
    }

    fn recv_body(&mut self, c: &mut Self::Conn, stream: u64, buf: &mut [u8]) -> Result<usize, String> {
        match quiche::h3::Connection::recv_body(self, c, stream, buf) {
            Ok(n) => Ok(n),
            Err(quiche::h3::Error::Done) => Ok(0),
            Err(e) => Err(format!("recv_body: {e}")),
        }
    }

    fn poll(&mut self, c: &mut Self::Conn) -> Result<Option<Event>, String> {
        use quiche::h3::{Event as E, NameValue};
        match quiche::h3::Connection::poll(self, c) {
            Ok((stream, E::Headers { list, .. })) => Ok(Some(Event::Headers {
                stream,
                headers: list.iter().map(|h| (h.name().to_vec(), h.value().to_vec())).collect(),
            })),
            Ok((stream, E::Data)) => Ok(Some(Event::Data(stream))),
            Ok((stream, E::Finished)) => Ok(Some(Event::Finished(stream))),
            Ok((stream, E::Reset(code))) => {
                Ok(Some(Event::Aborted { stream, why: format!("reset with {code:#x}") }))
            }
            Ok((_, E::PriorityUpdate | E::GoAway)) => Ok(Some(Event::Other)),
            Err(quiche::h3::Error::Done) => Ok(None),
            Err(e) => Err(format!("poll: {e}")),
        }
    }
}

/// Keeps an HTTP/3 failure of one step; whether there was one (the app
/// stops then: the connection's HTTP/3 state is gone).
fn record(r: Result<(), String>, errors: &mut Vec<String>) -> bool {
    r.map_err(|e| errors.push(format!("HTTP/3: {e}"))).is_err()
}
