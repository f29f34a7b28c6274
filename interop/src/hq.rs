//! hq-interop over any engine with quiche-style stream calls: the client
//! asks for its files (as many at once as the peer's stream limit allows)
//! and checks each body; the server answers every request it parses.

use std::collections::HashMap;

use crate::content::{Body, Check, File};
use crate::sansio::{ClientApp, ServerApp};

/// The stream calls hq-interop needs from an engine.
pub trait Streams {
    /// Bytes written (`None`: the stream cannot take data now, e.g. over the
    /// peer's stream limit).
    fn stream_send(&mut self, id: u64, data: &[u8], fin: bool) -> Option<usize>;
    /// (bytes read, fin) or `None` when nothing is readable.
    fn stream_recv(&mut self, id: u64, buf: &mut [u8]) -> Option<(usize, bool)>;
    /// Streams with data (or FIN) to read.
    fn readable(&mut self) -> Vec<u64>;
}

/// The client side of one connection.
pub struct Client {
    files: Vec<File>,
    next: usize,
    next_id: u64,
    open: HashMap<u64, Check>,
    /// Files received intact.
    pub ok: usize,
    /// What went wrong with the others.
    pub errors: Vec<String>,
    /// Body bytes received.
    pub received: u64,
    buf: Vec<u8>,
}

impl Client {
    /// A client that will fetch `files`.
    pub fn new(files: Vec<File>) -> Client {
        Client {
            files,
            next: 0,
            next_id: 0,
            open: HashMap::new(),
            ok: 0,
            errors: Vec::new(),
            received: 0,
            buf: vec![0u8; 64 * 1024],
        }
    }

    /// Every file answered (intact or not).
    pub fn done(&self) -> bool {
        self.next == self.files.len() && self.open.is_empty()
    }

    /// Total body bytes expected.
    pub fn total(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// Sends the requests the peer has room for and reads what arrived.
    pub fn step(&mut self, s: &mut dyn Streams) {
        while let Some(f) = self.files.get(self.next) {
            let req = f.request();
            if s.stream_send(self.next_id, req.as_bytes(), true) != Some(req.len()) {
                break;
            }
            self.open.insert(self.next_id, Check::new(*f));
            self.next_id += 4;
            self.next += 1;
        }
        for id in s.readable() {
            let Some(check) = self.open.get_mut(&id) else { continue };
            let mut fin = false;
            while let Some((n, f)) = s.stream_recv(id, &mut self.buf) {
                check.push(&self.buf[..n]);
                self.received += n as u64;
                fin |= f;
                if f || n == 0 {
                    break;
                }
            }
            if fin {
                match self.open.remove(&id).and_then(|c| c.verdict()) {
                    Some(e) => self.errors.push(e),
                    None => self.ok += 1,
                }
            }
        }
    }
}

impl<E: Streams> ClientApp<E> for Client {
    fn step(&mut self, e: &mut E) {
        Client::step(self, e)
    }
    fn done(&self) -> bool {
        Client::done(self)
    }
    fn received(&self) -> u64 {
        self.received
    }
    fn total(&self) -> u64 {
        Client::total(self)
    }
    fn ok(&self) -> usize {
        self.ok
    }
    fn take_errors(&mut self) -> Vec<String> {
        std::mem::take(&mut self.errors)
    }
}

/// The server side of one connection.
#[derive(Default)]
pub struct Server {
    requests: HashMap<u64, Vec<u8>>,
    bodies: HashMap<u64, Body>,
    /// Files served to the end.
    pub served: usize,
    /// Requests that did not parse.
    pub errors: Vec<String>,
    scratch: Vec<u8>,
}

impl Server {
    /// Reads requests, starts their bodies and sends what flow control allows.
    pub fn step(&mut self, s: &mut dyn Streams) {
        self.scratch.resize(64 * 1024, 0);
        for id in s.readable() {
            let mut fin = false;
            while let Some((n, f)) = s.stream_recv(id, &mut self.scratch) {
                let req = self.requests.entry(id).or_default();
                if req.len() < 4096 {
                    req.extend_from_slice(&self.scratch[..n]);
                }
                fin |= f;
                if f || n == 0 {
                    break;
                }
            }
            if fin {
                let req = self.requests.remove(&id).unwrap_or_default();
                match File::parse(&req) {
                    Some(file) => {
                        self.bodies.insert(id, Body::new(file));
                    }
                    None => self.errors.push(format!("bad request {:?}", String::from_utf8_lossy(&req))),
                }
            }
        }
        let scratch = &mut self.scratch;
        let mut finished = 0;
        self.bodies.retain(|&id, body| {
            let done = body.pump(scratch, |d, fin| s.stream_send(id, d, fin));
            finished += usize::from(done);
            !done
        });
        self.served += finished;
    }
}

impl<C: Streams> ServerApp<C> for Server {
    fn step(&mut self, c: &mut C) {
        Server::step(self, c)
    }
    fn served(&self) -> usize {
        self.served
    }
    fn take_errors(&mut self) -> Vec<String> {
        std::mem::take(&mut self.errors)
    }
}
