//! A client's HTTP/3 GETs as a sans-IO state machine: send the requests, then
//! collect each response's status, headers and body, and say when each is done
//! or why the exchange failed.
//!
//! It owns no socket and reads no clock: the caller drives it with
//! [`Fetch::poll`] after feeding its connection datagrams, as the apps client,
//! the Python download, the simulator and the C API all do, each with its own
//! I/O and its own use of the body bytes.

use super::{Connection, Error, Event, H3Error, Header, Transport};

/// One request and what came back for it.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The request's header section.
    pub headers: Vec<Header>,
    /// Its stream, once sent.
    pub stream: Option<u64>,
    /// Status of the final response (interim 1xx responses are skipped).
    pub status: Option<u16>,
    /// The final response's header section.
    pub response: Vec<Header>,
    /// The response's content-length, if it gave one.
    pub content_length: Option<u64>,
    /// Body bytes received so far.
    pub bytes: u64,
    /// The response is complete.
    pub done: bool,
}

/// What one [`Fetch::poll`] produced for request number `request`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchEvent {
    /// The final response's headers arrived ([`Request::status`] and
    /// [`Request::response`] are set).
    Response {
        /// Index of the request.
        request: usize,
    },
    /// Body bytes: the first `len` bytes of the buffer given to `poll`.
    Body {
        /// Index of the request.
        request: usize,
        /// Bytes read into the buffer.
        len: usize,
    },
    /// The response is complete.
    Done {
        /// Index of the request.
        request: usize,
    },
}

/// Why the exchange failed.
#[derive(Debug, Clone, PartialEq)]
pub enum FetchError {
    /// Opening HTTP/3, or the HTTP/3 connection, failed.
    H3(Error),
    /// Sending request `request` failed.
    Request(usize, Error),
    /// Reading the body of request `request` failed.
    Body(usize, Error),
    /// The server reset the stream of request `request` with this code.
    Reset(usize, u64),
    /// A malformed message on `stream` (HTTP/3 reset it with `error`).
    Stream(u64, H3Error),
    /// The final response of request `request` had no valid `:status`.
    NoStatus(usize),
    /// A body ended short of (or past) its content-length.
    Length {
        /// Index of the request.
        request: usize,
        /// Body bytes received.
        got: u64,
        /// The content-length.
        want: u64,
    },
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::H3(e) => write!(f, "HTTP/3 error: {e}"),
            FetchError::Request(_, e) => write!(f, "HTTP/3 request: {e}"),
            FetchError::Body(_, e) => write!(f, "HTTP/3 body: {e}"),
            FetchError::Reset(_, code) => write!(f, "response stream reset (code {code:#x})"),
            FetchError::Stream(_, e) => write!(f, "HTTP/3 stream error: {e:?}"),
            FetchError::NoStatus(_) => write!(f, "response without a :status"),
            FetchError::Length { got, want, .. } => {
                write!(f, "body ended after {got} bytes, content-length {want}")
            }
        }
    }
}

impl std::error::Error for FetchError {}

/// The GETs of one connection (see the module docs).
#[derive(Debug, Default)]
pub struct Fetch {
    h3: Option<Connection>,
    requests: Vec<Request>,
    /// Request whose body `poll` is draining (after a Data event).
    reading: Option<usize>,
    /// A response without a body: its Done follows its Response.
    done_next: Option<usize>,
}

impl Fetch {
    /// GET requests for `paths` on `authority`, with a `user-agent` if given.
    pub fn get<S: AsRef<str>>(authority: &str, paths: &[S], user_agent: Option<&str>) -> Fetch {
        let request = |path: &str| {
            let mut h = vec![
                Header::new(":method", "GET"),
                Header::new(":scheme", "https"),
                Header::new(":authority", authority),
                Header::new(":path", path),
            ];
            h.extend(user_agent.map(|ua| Header::new("user-agent", ua)));
            h
        };
        Fetch::new(paths.iter().map(|p| request(p.as_ref())).collect())
    }

    /// Requests with these header sections, sent in order by the first `poll`.
    pub fn new(requests: Vec<Vec<Header>>) -> Fetch {
        let requests =
            requests.into_iter().map(|headers| Request { headers, ..Default::default() }).collect();
        Fetch { requests, ..Default::default() }
    }

    /// The requests and their responses so far.
    pub fn requests(&self) -> &[Request] {
        &self.requests
    }

    /// Every response is complete.
    pub fn is_done(&self) -> bool {
        self.requests.iter().all(|r| r.done)
    }

    /// The HTTP/3 connection, once the first `poll` opened it (e.g. for GOAWAY).
    pub fn h3(&mut self) -> Option<&mut Connection> {
        self.h3.as_mut()
    }

    /// Advances the exchange over transport `t` (call once the QUIC handshake is
    /// complete, and again after each batch of datagrams): opens HTTP/3 and sends
    /// the requests the first time, then returns the next event, `None` when
    /// nothing more can happen until more data arrives. Body bytes are read into
    /// `buf`.
    pub fn poll<T: Transport>(
        &mut self,
        t: &mut T,
        buf: &mut [u8],
    ) -> Result<Option<FetchEvent>, FetchError> {
        if self.h3.is_none() {
            self.start(t)?;
        }
        if let Some(request) = self.done_next.take() {
            return Ok(Some(FetchEvent::Done { request }));
        }
        loop {
            if let Some(i) = self.reading {
                if let Some(ev) = self.read(t, i, buf)? {
                    return Ok(Some(ev));
                }
            }
            let h = self.h3.as_mut().expect("opened by start");
            let Some(ev) = h.poll(t).map_err(FetchError::H3)? else { return Ok(None) };
            if let Some(ev) = self.on_event(ev)? {
                return Ok(Some(ev));
            }
        }
    }

    fn start<T: Transport>(&mut self, t: &mut T) -> Result<(), FetchError> {
        let h = self.h3.insert(Connection::with_transport(t, &Default::default()).map_err(FetchError::H3)?);
        for (i, r) in self.requests.iter_mut().enumerate() {
            r.stream = Some(h.send_request(t, &r.headers, true).map_err(|e| FetchError::Request(i, e))?);
        }
        Ok(())
    }

    /// One read of request `i`'s body; stops reading once it gives nothing.
    fn read<T: Transport>(
        &mut self,
        t: &mut T,
        i: usize,
        buf: &mut [u8],
    ) -> Result<Option<FetchEvent>, FetchError> {
        let h = self.h3.as_mut().expect("opened by start");
        let stream = self.requests[i].stream.expect("sent by start");
        let len = h.recv_body(t, stream, buf).map_err(|e| FetchError::Body(i, e))?;
        if len == 0 {
            self.reading = None;
            return Ok(None);
        }
        self.requests[i].bytes += len as u64;
        Ok(Some(FetchEvent::Body { request: i, len }))
    }

    fn on_event(&mut self, ev: Event) -> Result<Option<FetchEvent>, FetchError> {
        let of = |s: u64| self.requests.iter().position(|r| r.stream == Some(s));
        match ev {
            Event::Headers { stream, headers, has_body } => match of(stream) {
                Some(i) => self.on_headers(i, headers, has_body),
                None => Ok(None),
            },
            Event::Data { stream } => {
                self.reading = of(stream);
                Ok(None)
            }
            Event::Finished { stream } => match of(stream) {
                Some(i) => self.finish(i),
                None => Ok(None),
            },
            Event::Reset { stream, code } => match of(stream) {
                Some(i) => Err(FetchError::Reset(i, code)),
                None => Ok(None),
            },
            Event::StreamError { stream, error } => Err(FetchError::Stream(stream, error)),
            Event::GoAway { .. } => Ok(None),
        }
    }

    fn on_headers(
        &mut self,
        i: usize,
        headers: Vec<Header>,
        has_body: bool,
    ) -> Result<Option<FetchEvent>, FetchError> {
        let r = &mut self.requests[i];
        let status = number(header(&headers, ":status"));
        if r.status.is_some() || status.is_some_and(|s| s < 200) {
            return Ok(None); // trailers, or an interim response
        }
        let status = status.and_then(|s| u16::try_from(s).ok()).ok_or(FetchError::NoStatus(i))?;
        r.status = Some(status);
        r.content_length = number(header(&headers, "content-length"));
        r.response = headers;
        if !has_body {
            r.done = true;
            self.done_next = Some(i);
        }
        Ok(Some(FetchEvent::Response { request: i }))
    }

    /// The response's stream ended (a response without a body was done at
    /// its headers already).
    fn finish(&mut self, i: usize) -> Result<Option<FetchEvent>, FetchError> {
        let r = &mut self.requests[i];
        if r.done {
            return Ok(None);
        }
        r.done = true;
        if let Some(want) = r.content_length.filter(|&l| l != r.bytes) {
            return Err(FetchError::Length { request: i, got: r.bytes, want });
        }
        Ok(Some(FetchEvent::Done { request: i }))
    }
}

/// The value of the first field called `name`.
pub fn header<'a>(headers: &'a [Header], name: &str) -> Option<&'a [u8]> {
    headers.iter().find(|h| h.name == name.as_bytes()).map(|h| h.value.as_slice())
}

fn number(v: Option<&[u8]>) -> Option<u64> {
    std::str::from_utf8(v?).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h3::quic::Quic;
    use crate::testing::{config, Pair};
    use std::time::Duration;

    /// Server side of the tests: answers request `/n` with status 200 and `n`
    /// bytes (declaring `declared` as content-length when given), `/missing`
    /// with 404, and resets `/reset`.
    fn serve(p: &mut Pair, h: &mut Connection, declared: Option<u64>) {
        let q = &mut Quic::new(&mut p.s, p.clock.now());
        while let Some(ev) = h.poll(q).unwrap() {
            let Event::Headers { stream, headers, .. } = ev else { continue };
            let path = String::from_utf8(header(&headers, ":path").unwrap().to_vec()).unwrap();
            match path.trim_start_matches('/') {
                "missing" => h.send_response(q, stream, &[Header::new(":status", "404")], true).unwrap(),
                "reset" => q.reset_stream(stream, 0x10c),
                n => {
                    let n: usize = n.parse().unwrap();
                    let len = declared.unwrap_or(n as u64).to_string();
                    let resp = [Header::new(":status", "200"), Header::new("content-length", len)];
                    h.send_response(q, stream, &resp, false).unwrap();
                    let body: Vec<u8> = (0..n).map(|i| i as u8).collect();
                    assert_eq!(h.send_body(q, stream, &body, true).unwrap(), n);
                }
            }
        }
    }

    /// Runs `fetch` to completion or failure; returns the events and bodies.
    fn run(
        paths: &[&str],
        declared: Option<u64>,
    ) -> (Fetch, Vec<FetchEvent>, Vec<Vec<u8>>, Option<FetchError>) {
        let mut p = Pair::new(&config(false, b"h3"), &config(true, b"h3"));
        p.handshake();
        let mut hs =
            Connection::with_transport(&mut Quic::new(&mut p.s, p.clock.now()), &Default::default()).unwrap();
        let mut fetch = Fetch::get("localhost", paths, Some("test"));
        let (mut events, mut bodies) = (Vec::new(), vec![Vec::new(); paths.len()]);
        let mut buf = [0u8; 1000];
        for _ in 0..100 {
            loop {
                match fetch.poll(&mut Quic::new(&mut p.c, p.clock.now()), &mut buf) {
                    Ok(Some(ev)) => {
                        if let FetchEvent::Body { request, len } = ev {
                            bodies[request].extend_from_slice(&buf[..len]);
                        }
                        events.push(ev);
                    }
                    Ok(None) => break,
                    Err(e) => return (fetch, events, bodies, Some(e)),
                }
            }
            if fetch.is_done() {
                break;
            }
            serve(&mut p, &mut hs, declared);
            p.run_for(Duration::from_millis(10));
        }
        (fetch, events, bodies, None)
    }

    #[test]
    fn gets_collect_status_headers_and_bodies() {
        let (fetch, events, bodies, err) = run(&["/5000", "/missing", "/0"], None);
        assert_eq!(err, None);
        assert!(fetch.is_done());
        let r = fetch.requests();
        assert_eq!(r.iter().map(|r| r.status).collect::<Vec<_>>(), [Some(200), Some(404), Some(200)]);
        assert_eq!((r[0].bytes, r[0].content_length), (5000, Some(5000)));
        assert_eq!(header(&r[0].headers, "user-agent"), Some(&b"test"[..]));
        assert_eq!(header(&r[0].response, "content-length"), Some(&b"5000"[..]));
        assert_eq!(bodies[0], (0..5000).map(|i| i as u8).collect::<Vec<_>>());
        assert!(bodies[1].is_empty() && bodies[2].is_empty());
        // Every response is announced once and ends once, after its headers.
        for i in 0..3 {
            let at = |want: FetchEvent| events.iter().position(|e| *e == want).unwrap();
            assert!(at(FetchEvent::Response { request: i }) < at(FetchEvent::Done { request: i }));
            assert_eq!(events.iter().filter(|e| **e == FetchEvent::Done { request: i }).count(), 1);
        }
    }

    #[test]
    fn reset_and_short_bodies_fail() {
        let (_, _, _, err) = run(&["/reset"], None);
        assert_eq!(err, Some(FetchError::Reset(0, 0x10c)));
        // HTTP/3 itself catches a body short of its content-length.
        let (_, _, _, err) = run(&["/100"], Some(150));
        assert!(matches!(err, Some(FetchError::Stream(0, e)) if e.code == crate::h3::H3Code::MESSAGE_ERROR));
    }
}
