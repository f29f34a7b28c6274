//! [`Transport`] for mpquic's own [`crate::Connection`].
//!
//! The engine never reads a clock, but closing a connection needs the time
//! (it starts the closing timer), so the adapter is a borrowed connection
//! paired with the caller's `now`: `h3.poll(&mut Quic::new(&mut conn, now))`.

use std::time::Instant;

use super::{StreamError, Transport};
use crate::stream::StreamError as QuicStreamError;
use crate::Connection;

/// A QUIC connection borrowed for one HTTP/3 call at time `now`.
pub struct Quic<'a> {
    /// The connection.
    pub conn: &'a mut Connection,
    /// The caller's current time (used if HTTP/3 closes the connection).
    pub now: Instant,
}

impl<'a> Quic<'a> {
    /// Borrow `conn` for HTTP/3 calls made at `now`.
    pub fn new(conn: &'a mut Connection, now: Instant) -> Self {
        Quic { conn, now }
    }

    fn map(&self, e: QuicStreamError) -> StreamError {
        if self.conn.is_closed() || self.conn.is_draining() {
            return StreamError::Closed;
        }
        match e {
            QuicStreamError::Done => StreamError::Blocked,
            QuicStreamError::StreamLimit => StreamError::StreamLimit,
            QuicStreamError::Reset(c) => StreamError::Reset(c),
            QuicStreamError::StopSending(c) => StreamError::Stopped(c),
            QuicStreamError::InvalidState | QuicStreamError::UnknownStream | QuicStreamError::FinalSize => {
                StreamError::InvalidStream
            }
        }
    }

    fn open(&mut self, bidi: bool) -> Result<u64, StreamError> {
        if self.conn.peer_streams_left(bidi) == 0 {
            return Err(StreamError::StreamLimit);
        }
        let id = self.conn.next_stream_id(bidi);
        // An empty write creates the stream, so the next open gets a new ID.
        self.conn.stream_send(id, &[], false).map_err(|e| self.map(e))?;
        Ok(id)
    }
}

impl Transport for Quic<'_> {
    fn is_server(&self) -> bool {
        self.conn.is_server()
    }
    fn open_bidi_stream(&mut self) -> Result<u64, StreamError> {
        self.open(true)
    }
    fn open_uni_stream(&mut self) -> Result<u64, StreamError> {
        self.open(false)
    }
    fn stream_send(&mut self, id: u64, data: &[u8], fin: bool) -> Result<usize, StreamError> {
        self.conn.stream_send(id, data, fin).map_err(|e| self.map(e))
    }
    fn stream_send_bytes(&mut self, id: u64, data: &crate::Bytes, fin: bool) -> Result<usize, StreamError> {
        self.conn.stream_send_bytes(id, data, fin).map_err(|e| self.map(e))
    }
    fn stream_capacity(&self, id: u64) -> Result<usize, StreamError> {
        self.conn.stream_capacity(id).map_err(|e| self.map(e))
    }
    fn stream_recv(&mut self, id: u64, buf: &mut [u8]) -> Result<(usize, bool), StreamError> {
        self.conn.stream_recv(id, buf).map_err(|e| self.map(e))
    }
    fn readable(&self) -> Vec<u64> {
        self.conn.readable()
    }
    fn stop_sending(&mut self, id: u64, code: u64) {
        // The stream may already be finished or reset: nothing left to stop.
        let _ = self.conn.stream_shutdown(id, true, false, code);
    }
    fn reset_stream(&mut self, id: u64, code: u64) {
        let _ = self.conn.stream_shutdown(id, false, true, code);
    }
    fn close(&mut self, code: u64, reason: &[u8]) {
        self.conn.close(true, code, reason, self.now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h3;
    use crate::testing::{config, Pair};
    use std::time::Duration;

    fn pair() -> Pair {
        let mut p = Pair::new(&config(false, b"h3"), &config(true, b"h3"));
        p.handshake();
        p
    }

    /// Lets every datagram in flight arrive (and be answered).
    fn settle(p: &mut Pair) {
        p.run_for(Duration::from_millis(100));
    }

    #[test]
    fn request_and_response_over_mpquic() {
        let mut p = pair();
        let cfg = h3::Config::default();
        let mut hc = h3::Connection::with_transport(&mut Quic::new(&mut p.c, p.clock.now()), &cfg).unwrap();
        let mut hs = h3::Connection::with_transport(&mut Quic::new(&mut p.s, p.clock.now()), &cfg).unwrap();
        let req = [
            h3::Header::new(":method", "GET"),
            h3::Header::new(":scheme", "https"),
            h3::Header::new(":authority", "localhost"),
            h3::Header::new(":path", "/x"),
        ];
        let id = hc.send_request(&mut Quic::new(&mut p.c, p.clock.now()), &req, true).unwrap();
        assert_eq!(id, 0);
        settle(&mut p);
        let mut got = None;
        while let Some(ev) = hs.poll(&mut Quic::new(&mut p.s, p.clock.now())).unwrap() {
            if let h3::Event::Headers { stream, headers, .. } = ev {
                got = Some((stream, headers));
            }
        }
        let (stream, headers) = got.expect("request headers");
        assert_eq!(stream, 0);
        assert!(headers.iter().any(|h| h.name == b":path" && h.value == b"/x"));
        let resp = [h3::Header::new(":status", "200")];
        hs.send_response(&mut Quic::new(&mut p.s, p.clock.now()), stream, &resp, false).unwrap();
        let body: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let shared = crate::Bytes::from(body.clone());
        let mut off = 0;
        let mut turn = 0;
        while off < body.len() {
            // Copied and shared pieces of 1000 bytes in turn, through the
            // real engine.
            let end = (off + 1000).min(body.len());
            let fin = end == body.len();
            let q = &mut Quic::new(&mut p.s, p.clock.now());
            off += if turn % 2 == 0 {
                hs.send_body(q, stream, &body[off..end], fin).unwrap()
            } else {
                hs.send_body_bytes(q, stream, &shared.slice(off..end), fin).unwrap()
            };
            turn += 1;
            settle(&mut p);
        }
        assert!(turn >= 5, "both calls were used");
        settle(&mut p);
        let now = p.clock.now();
        let mut recvd = Vec::new();
        let mut finished = false;
        let mut status = None;
        for _ in 0..100 {
            let Some(ev) = hc.poll(&mut Quic::new(&mut p.c, now)).unwrap() else { break };
            match ev {
                h3::Event::Headers { headers, .. } => {
                    status = headers.iter().find(|h| h.name == b":status").map(|h| h.value.clone())
                }
                h3::Event::Data { stream } => {
                    let mut b = [0u8; 1024];
                    loop {
                        let n = hc.recv_body(&mut Quic::new(&mut p.c, now), stream, &mut b).unwrap();
                        if n == 0 {
                            break;
                        }
                        recvd.extend_from_slice(&b[..n]);
                    }
                }
                h3::Event::Finished { .. } => finished = true,
                _ => {}
            }
        }
        assert_eq!(status.as_deref(), Some(&b"200"[..]));
        assert_eq!(recvd, body);
        assert!(finished);
    }

    #[test]
    fn stream_ids_advance_and_close_reaches_engine() {
        let mut p = pair();
        let now = p.now();
        let c = &mut p.c;
        let mut q = Quic::new(&mut *c, now);
        assert_eq!(q.open_uni_stream().unwrap(), 2);
        assert_eq!(q.open_uni_stream().unwrap(), 6);
        assert_eq!(q.open_bidi_stream().unwrap(), 0);
        assert_eq!(q.open_bidi_stream().unwrap(), 4);
        // Reading a stream we never got anything on is not an error the
        // h3 layer must treat as fatal.
        assert_ne!(q.stream_recv(1, &mut [0u8; 8]), Ok((1, false)));
        q.close(0x100, b"bye");
        assert!(c.is_draining());
        assert_eq!(c.local_error().map(|e| (e.is_app, e.code)), Some((true, 0x100)));
        assert_eq!(Quic::new(c, now).stream_send(0, b"x", false), Err(StreamError::Closed));
    }
}
