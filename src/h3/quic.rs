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
#[allow(clippy::disallowed_methods)] // tests take one real Instant as a base
mod tests {
    use super::*;
    use crate::h3;
    use crate::{Config, RecvInfo};
    use std::net::SocketAddr;

    fn certs() -> String {
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/certs").to_string()
    }

    fn pair(now: Instant) -> (Connection, Connection) {
        let d = certs();
        let mut cc = Config::new();
        cc.set_application_protos(&[b"h3"]).unwrap();
        cc.load_verify_locations_from_file(&format!("{d}/rootca.pem")).unwrap();
        let mut sc = Config::new();
        sc.set_application_protos(&[b"h3"]).unwrap();
        sc.load_cert_chain_from_pem_file(&format!("{d}/cert.pem")).unwrap();
        sc.load_priv_key_from_pem_file(&format!("{d}/key.pem")).unwrap();
        let ca: SocketAddr = "127.0.0.1:1000".parse().unwrap();
        let sa: SocketAddr = "127.0.0.1:2000".parse().unwrap();
        let mut c = crate::connect(Some("localhost"), &crate::random_cid(16), ca, sa, &cc, now).unwrap();
        let mut buf = [0u8; 1500];
        let (n, _) = c.send(&mut buf, now).unwrap().unwrap();
        // The server's ODCID is the DCID of the client's first Initial.
        let odcid = crate::packet::parse_header(&buf[..n], 0).unwrap().dcid;
        let mut s = crate::accept(&crate::random_cid(16), &odcid, None, sa, ca, &sc, now).unwrap();
        s.recv(&mut buf[..n], RecvInfo { from: ca, to: sa }, now).unwrap();
        (c, s)
    }

    /// Move every datagram each way until both sides are quiet.
    fn pump(c: &mut Connection, s: &mut Connection, now: Instant) {
        let ca: SocketAddr = "127.0.0.1:1000".parse().unwrap();
        let sa: SocketAddr = "127.0.0.1:2000".parse().unwrap();
        let mut buf = [0u8; 1500];
        loop {
            let mut moved = false;
            while let Ok(Some((n, _))) = c.send(&mut buf, now) {
                let _ = s.recv(&mut buf[..n], RecvInfo { from: ca, to: sa }, now);
                moved = true;
            }
            while let Ok(Some((n, _))) = s.send(&mut buf, now) {
                let _ = c.recv(&mut buf[..n], RecvInfo { from: sa, to: ca }, now);
                moved = true;
            }
            if !moved {
                break;
            }
        }
    }

    #[test]
    fn request_and_response_over_mpquic() {
        let now = Instant::now();
        let (mut c, mut s) = pair(now);
        pump(&mut c, &mut s, now);
        assert!(c.is_established() && s.is_established());
        let cfg = h3::Config::default();
        let mut hc = h3::Connection::with_transport(&mut Quic::new(&mut c, now), &cfg).unwrap();
        let mut hs = h3::Connection::with_transport(&mut Quic::new(&mut s, now), &cfg).unwrap();
        let req = [
            h3::Header::new(":method", "GET"),
            h3::Header::new(":scheme", "https"),
            h3::Header::new(":authority", "localhost"),
            h3::Header::new(":path", "/x"),
        ];
        let id = hc.send_request(&mut Quic::new(&mut c, now), &req, true).unwrap();
        assert_eq!(id, 0);
        pump(&mut c, &mut s, now);
        let mut got = None;
        while let Some(ev) = hs.poll(&mut Quic::new(&mut s, now)).unwrap() {
            if let h3::Event::Headers { stream, headers, .. } = ev {
                got = Some((stream, headers));
            }
        }
        let (stream, headers) = got.expect("request headers");
        assert_eq!(stream, 0);
        assert!(headers.iter().any(|h| h.name == b":path" && h.value == b"/x"));
        let resp = [h3::Header::new(":status", "200")];
        hs.send_response(&mut Quic::new(&mut s, now), stream, &resp, false).unwrap();
        let body = vec![7u8; 5000];
        let mut off = 0;
        while off < body.len() {
            off += hs.send_body(&mut Quic::new(&mut s, now), stream, &body[off..], true).unwrap();
            pump(&mut c, &mut s, now);
        }
        pump(&mut c, &mut s, now);
        let mut recvd = Vec::new();
        let mut finished = false;
        let mut status = None;
        for _ in 0..100 {
            let Some(ev) = hc.poll(&mut Quic::new(&mut c, now)).unwrap() else { break };
            match ev {
                h3::Event::Headers { headers, .. } => {
                    status = headers.iter().find(|h| h.name == b":status").map(|h| h.value.clone())
                }
                h3::Event::Data { stream } => {
                    let mut b = [0u8; 1024];
                    loop {
                        let n = hc.recv_body(&mut Quic::new(&mut c, now), stream, &mut b).unwrap();
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
        let now = Instant::now();
        let (mut c, mut s) = pair(now);
        pump(&mut c, &mut s, now);
        let mut q = Quic::new(&mut c, now);
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
        assert_eq!(Quic::new(&mut c, now).stream_send(0, b"x", false), Err(StreamError::Closed));
    }
}
