//! The applications at the two ends of a flow: what the client asks for, what the
//! server answers with, and the receiver's check of every body byte.
//!
//! Bodies are generated, never stored: byte `i` is `i mod 251`. The period is prime
//! and not a divisor of any frame or packet size, so data delivered at a wrong offset,
//! duplicated or dropped shows up as mismatching bytes.

use std::ops::Range;
use std::time::Instant;

use mpquic::h3::{self, quic::Quic, Header};
use mpquic::{Bytes, Connection};

/// Period of the generated body.
const PERIOD: usize = 251;
/// Largest slice written or checked at once.
pub(crate) const CHUNK: usize = 256 * 1024;
/// The stream of the plain-stream workloads (the client's first bidirectional one).
const STREAM: u64 = 0;

/// Generated body bytes: `slice(offset, n)` is the body from `offset` on.
pub(crate) struct Body {
    buf: Bytes,
}

impl Body {
    pub(crate) fn new() -> Body {
        Body { buf: (0..CHUNK + PERIOD).map(|i| (i % PERIOD) as u8).collect::<Vec<u8>>().into() }
    }

    /// The body at `offset`, at most `min(n, CHUNK)` bytes.
    pub(crate) fn slice(&self, offset: u64, n: usize) -> &[u8] {
        &self.buf[Self::range(offset, n)]
    }

    /// The same bytes as [`Body::slice`], shared: a stream given them holds a
    /// reference to this buffer, not a copy (senders write whole bodies, and
    /// copying them into the send buffer was a sixth of a simulation's time).
    pub(crate) fn shared(&self, offset: u64, n: usize) -> Bytes {
        self.buf.slice(Self::range(offset, n))
    }

    fn range(offset: u64, n: usize) -> Range<usize> {
        let start = (offset % PERIOD as u64) as usize;
        start..start + n.min(CHUNK)
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
    /// Video streaming: the body is released frame by frame.
    video: Option<Video>,
}

/// Constant-bitrate video, as seed 002 streams it: 5.24 Mbit/s for 3 minutes, 25
/// pictures a second. The server writes picture `i` when it is produced, `i / FPS`
/// after the request reached it; the client plays picture `i` at a fixed time,
/// `PLAYOUT_DELAY` (its playout buffer) after the first picture arrived plus `i / FPS`.
pub mod video {
    use std::time::Duration;

    /// Bit rate of the stream.
    pub const RATE_BPS: u64 = 5_240_000;
    /// Pictures per second.
    pub const FPS: u64 = 25;
    /// Length of the stream.
    pub const LENGTH_S: u64 = 180;
    /// Bytes of one picture.
    pub const FRAME_BYTES: u64 = RATE_BPS / 8 / FPS;
    /// Pictures in the stream.
    pub const FRAMES: u64 = LENGTH_S * FPS;
    /// Bytes of the whole stream (117.9 MB; the paper's file is 113 MB).
    pub const BYTES: u64 = FRAMES * FRAME_BYTES;
    /// Playout buffer: how long the player buffers after the first picture (VLC's
    /// default network caching is 1 s).
    pub const PLAYOUT_DELAY: Duration = Duration::from_secs(1);
    /// Time between pictures.
    pub const FRAME_INTERVAL: Duration = Duration::from_millis(1000 / FPS);
}

/// Video quality of experience, from the pictures' arrival times.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct VideoStats {
    /// Pictures in the stream.
    pub frames: u64,
    /// Pictures complete by their playout time.
    pub played: u64,
    /// Pictures the decoder discards: complete after their playout time, or not by
    /// the end of the run (missing pictures whose time had not come are not counted;
    /// the run stops when the last picture arrived).
    pub discarded: u64,
    /// Buffer underflow events: runs of consecutive playout times at which the
    /// playout buffer was empty (the due picture had not arrived).
    pub underflows: u64,
}

/// The video schedule of one flow: when the server started, when each picture arrived.
#[derive(Debug, Default)]
struct Video {
    server_start: Option<std::time::Instant>,
    arrivals: Vec<std::time::Instant>,
}

impl Video {
    /// Body bytes the server may have written by `now`.
    fn released(&self, now: std::time::Instant) -> u64 {
        let Some(t0) = self.server_start else { return 0 };
        let n = (now.saturating_duration_since(t0).as_nanos() / video::FRAME_INTERVAL.as_nanos()) as u64 + 1;
        n.min(video::FRAMES) * video::FRAME_BYTES
    }

    /// When the server releases its next picture after `now`, if it has written all
    /// released ones (`sent` bytes); a picture already due waits for flow control,
    /// which the connection's own events wake.
    fn next_release(&self, sent: u64, now: std::time::Instant) -> Option<std::time::Instant> {
        let t0 = self.server_start?;
        let next = sent / video::FRAME_BYTES;
        let at = t0 + video::FRAME_INTERVAL * next as u32;
        (sent % video::FRAME_BYTES == 0 && next < video::FRAMES && at > now).then_some(at)
    }

    /// Records the pictures completed once `offset` body bytes arrived at `now`.
    fn received(&mut self, offset: u64, now: std::time::Instant) {
        let complete = (offset / video::FRAME_BYTES).min(video::FRAMES) as usize;
        while self.arrivals.len() < complete {
            self.arrivals.push(now);
        }
    }

    /// Playout of every picture whose time came by `end`.
    fn stats(&self, end: std::time::Instant) -> VideoStats {
        let mut st = VideoStats { frames: video::FRAMES, ..Default::default() };
        let Some(&first) = self.arrivals.first() else { return st };
        let mut dry = false;
        for i in 0..video::FRAMES {
            let due = first + video::PLAYOUT_DELAY + video::FRAME_INTERVAL * i as u32;
            let arrived = self.arrivals.get(i as usize);
            if arrived.is_none() && due > end {
                break; // the run ended before this picture was due
            }
            match arrived {
                Some(&at) if at <= due => {
                    st.played += 1;
                    dry = false;
                }
                _ => {
                    st.discarded += 1;
                    st.underflows += u64::from(!dry);
                    dry = true;
                }
            }
        }
        st
    }
}

/// HTTP/3: the client GETs `/bytes/N` (or `/bytes/unbounded`), the server answers 200
/// with a generated body of N bytes and a content-length.
#[derive(Debug, Default)]
pub(crate) struct H3App {
    client: Option<h3::Fetch>,
    server: Option<h3::Connection>,
    /// Responses the server is writing.
    responses: Vec<Response>,
    status: Option<u16>,
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
            video: None,
        })
    }

    /// A constant-bitrate video stream ([`video`]) on a plain stream.
    pub(crate) fn video() -> App {
        let mut app = App::stream(false);
        if let App::Stream(s) = &mut app {
            s.video = Some(Video::default());
        }
        app
    }

    /// The video's playout statistics at `end` (video workload only).
    pub(crate) fn video_stats(&self, end: Instant) -> Option<VideoStats> {
        match self {
            App::Stream(s) => s.video.as_ref().map(|v| v.stats(end)),
            App::H3(_) => None,
        }
    }

    /// When, after `now`, the application next has data to release by itself (a
    /// video picture).
    pub(crate) fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        match self {
            App::Stream(s) => s.video.as_ref().and_then(|v| v.next_release(s.sent, now)),
            App::H3(_) => None,
        }
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
            App::Stream(s) => Ok(s.step(client, server, size, body, sink, now)),
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
        now: Instant,
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
                if let Some(v) = &mut self.video {
                    v.server_start = Some(now);
                }
            }
        }
        let (sender, receiver) = if self.upload { (client, server) } else { (server, client) };
        // A video's pictures leave as they are produced; the stream ends with the last.
        let (limit, size) = match &self.video {
            Some(v) => (v.released(now), Some(video::BYTES)),
            None => (u64::MAX, size),
        };
        if self.sending {
            if let Some(tx) = sender {
                write_body(tx, &mut self.sent, size, limit, body);
            }
        }
        let mut out = Delivered::default();
        if let Some(rx) = receiver {
            // Before the body starts, the server of a download reads nothing here (the
            // request was consumed above); the client reads only the body. It is
            // checked where it lies in the reassembly buffer (stream_peek/consume): no
            // faster measurably, but every simulated plain-stream transfer then proves
            // the in-place read byte by byte under loss and reordering.
            while let Ok((data, _)) = rx.stream_peek(STREAM) {
                let n = data.len();
                out.bytes += self.rx.take(body, data);
                let Ok((_, fin)) = rx.stream_consume(STREAM, n) else {
                    break;
                };
                out.finished |= fin;
                if n == 0 || fin {
                    break;
                }
            }
            if let Some(v) = &mut self.video {
                v.received(self.rx.offset, now);
            }
        }
        out
    }
}

/// Writes the body on stream 0 as far as flow control and `limit` (bytes released
/// so far) allow.
fn write_body(tx: &mut Connection, sent: &mut u64, size: Option<u64>, limit: u64, body: &Body) {
    loop {
        let left = size.map_or(u64::MAX, |s| s - *sent).min(limit.saturating_sub(*sent));
        if left == 0 {
            return;
        }
        let cap = tx.stream_capacity(STREAM).unwrap_or(0);
        if cap == 0 {
            return;
        }
        let n = (cap.min(CHUNK) as u64).min(left) as usize;
        let fin = size.is_some_and(|s| *sent + n as u64 == s);
        match tx.stream_send_bytes(STREAM, &body.shared(*sent, n), fin) {
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
            let size = match parse_size(h3::fetch::header(&headers, ":path").unwrap_or_default()) {
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
                    .send_body_bytes(&mut Quic::new(conn, now), r.stream, &body.shared(r.sent, n), fin)
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
        let fetch = self.client.get_or_insert_with(|| {
            let path = size.map_or_else(|| "/bytes/unbounded".to_string(), |n| format!("/bytes/{n}"));
            h3::Fetch::get("localhost", &[path], None)
        });
        let mut out = Delivered::default();
        let q = &mut Quic::new(conn, now);
        while let Some(ev) = fetch.poll(q, sink).map_err(|e| e.to_string())? {
            match ev {
                h3::FetchEvent::Response { request } => {
                    let r = &fetch.requests()[request];
                    let status = r.status.unwrap_or_default();
                    self.status = Some(status);
                    if status != 200 {
                        return Err(format!("response status {status}"));
                    }
                    if let (Some(want), Some(got)) = (size, r.content_length) {
                        if want != got {
                            return Err(format!("asked for {want} bytes, content-length is {got}"));
                        }
                    }
                }
                h3::FetchEvent::Body { len, .. } => out.bytes += self.rx.take(body, &sink[..len]),
                h3::FetchEvent::Done { .. } => out.finished = true,
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn body_is_periodic_and_sliceable_anywhere() {
        let b = Body::new();
        assert_eq!(b.slice(0, 3), &[0, 1, 2]);
        assert_eq!(b.slice(250, 3), &[250, 0, 1]);
        assert_eq!(b.slice(251 * 1000 + 5, 2), &[5, 6]);
        assert_eq!(b.slice(7, CHUNK * 2).len(), CHUNK);
        for (off, n) in [(0, 3), (250, 3), (251 * 1000 + 5, 2), (7, CHUNK * 2)] {
            assert_eq!(&b.shared(off, n)[..], b.slice(off, n), "shared({off}, {n})");
        }
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
    fn video_counts_late_pictures_and_dry_spells() {
        // Any base instant will do: the test only adds durations to it.
        #[allow(clippy::disallowed_methods)]
        let t0 = Instant::now();
        let mut v = Video { server_start: Some(t0), ..Default::default() };
        // Released one picture per interval from the server's start.
        assert_eq!(v.released(t0), video::FRAME_BYTES);
        assert_eq!(v.released(t0 + video::FRAME_INTERVAL * 3), 4 * video::FRAME_BYTES);
        assert_eq!(v.released(t0 + Duration::from_secs(10_000)), video::BYTES);
        assert_eq!(v.next_release(video::FRAME_BYTES, t0), Some(t0 + video::FRAME_INTERVAL));
        // Due already (waiting for flow control), or mid-picture: no wake-up of its own.
        assert_eq!(v.next_release(video::FRAME_BYTES, t0 + video::FRAME_INTERVAL), None);
        assert_eq!(v.next_release(video::FRAME_BYTES + 1, t0), None);
        // Pictures 0-9 on time; 10-13 arrive together, 1 ms after 12's playout time
        // (10-12 late, 13 in time); 14 late; 15 on never arrive.
        let iv = video::FRAME_INTERVAL;
        let pd = video::PLAYOUT_DELAY;
        for i in 0..10u32 {
            v.received(video::FRAME_BYTES * (i as u64 + 1), t0 + iv * i);
        }
        v.received(video::FRAME_BYTES * 14, t0 + pd + iv * 12 + Duration::from_millis(1));
        v.received(video::FRAME_BYTES * 15 + 7, t0 + pd + iv * 15);
        let end = t0 + video::PLAYOUT_DELAY + iv * 19;
        let st = v.stats(end);
        assert_eq!(st.frames, video::FRAMES);
        // Due times 0..=19 came: 0-9 and 13 played; 10-12, 14 late; 15-19 never came.
        assert_eq!((st.played, st.discarded, st.underflows), (11, 9, 2));
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
