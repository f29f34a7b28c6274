//! What the cells transfer: hq-interop requests (`GET /<id>-<size>\r\n` on a
//! client bidirectional stream, answered by the body and FIN), or in the
//! `http3` cell HTTP/3 GETs of `/<id>-<size>`, and bodies every side can
//! generate and check without storing them: the little-endian u64 sequence
//! `salt, salt + 1, ...`, cut to `size` bytes (`aioquic_peer.py` builds the
//! same with `array('Q')`).

/// ALPN of every hq-interop cell.
pub const ALPN: &[u8] = b"hq-interop";

/// ALPN of the `http3` cell (RFC 9114 §3.1).
pub const ALPN_H3: &[u8] = b"h3";

/// The ALPN a cell's connections use.
pub fn alpn(h3: bool) -> &'static [u8] {
    if h3 {
        ALPN_H3
    } else {
        ALPN
    }
}

/// One requested file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct File {
    /// Distinguishes files of equal size.
    pub id: u64,
    /// Body length in bytes.
    pub size: u64,
}

impl File {
    /// The body's first u64 (differs per file, so a body sent on the wrong
    /// stream is caught).
    pub fn salt(&self) -> u64 {
        self.id.wrapping_mul(1_000_003).wrapping_add(self.size)
    }

    /// The request's path (HTTP/3's `:path`).
    pub fn path(&self) -> String {
        format!("/{}-{}", self.id, self.size)
    }

    /// The hq-interop request line.
    pub fn request(&self) -> String {
        format!("GET {}\r\n", self.path())
    }

    /// Parses a request line (`None`: not one of ours).
    pub fn parse(req: &[u8]) -> Option<File> {
        let s = std::str::from_utf8(req).ok()?.trim_end();
        File::from_path(s.strip_prefix("GET ")?.as_bytes())
    }

    /// Parses a path (`None`: not one of ours).
    pub fn from_path(path: &[u8]) -> Option<File> {
        let (id, size) = std::str::from_utf8(path).ok()?.strip_prefix('/')?.split_once('-')?;
        Some(File { id: id.parse().ok()?, size: size.parse().ok()? })
    }
}

/// Writes bytes `offset..offset + buf.len()` of the body with `salt`.
pub fn fill(salt: u64, offset: u64, buf: &mut [u8]) {
    let mut o = offset;
    let mut i = 0;
    while i < buf.len() {
        let word = salt.wrapping_add(o / 8).to_le_bytes();
        let skip = (o % 8) as usize;
        let n = (8 - skip).min(buf.len() - i);
        buf[i..i + n].copy_from_slice(&word[skip..skip + n]);
        i += n;
        o += n as u64;
    }
}

/// Checks a body as it arrives, in order.
#[derive(Debug)]
pub struct Check {
    file: File,
    got: u64,
    bad: bool,
    scratch: Vec<u8>,
}

impl Check {
    /// A check of `file`'s body.
    pub fn new(file: File) -> Check {
        Check { file, got: 0, bad: false, scratch: Vec::new() }
    }

    /// The next bytes of the body.
    pub fn push(&mut self, data: &[u8]) {
        self.scratch.resize(data.len(), 0);
        fill(self.file.salt(), self.got, &mut self.scratch);
        self.bad |= self.scratch != data;
        self.got += data.len() as u64;
    }

    /// `None` when the whole body arrived intact, else what went wrong.
    pub fn verdict(&self) -> Option<String> {
        if self.bad {
            Some(format!("file {} corrupted", self.file.id))
        } else if self.got != self.file.size {
            Some(format!("file {}: {} of {} bytes", self.file.id, self.got, self.file.size))
        } else {
            None
        }
    }
}

/// Sends one body as capacity allows.
#[derive(Debug)]
pub struct Body {
    salt: u64,
    size: u64,
    sent: u64,
}

impl Body {
    /// The body of `file`.
    pub fn new(file: File) -> Body {
        Body { salt: file.salt(), size: file.size, sent: 0 }
    }

    /// Offers the next bytes to `send(data, fin) -> written` until it takes
    /// less than offered. Returns whether the whole body (and FIN) went.
    pub fn pump(&mut self, scratch: &mut [u8], mut send: impl FnMut(&[u8], bool) -> Option<usize>) -> bool {
        loop {
            let n = scratch.len().min((self.size - self.sent) as usize);
            fill(self.salt, self.sent, &mut scratch[..n]);
            let fin = self.sent + n as u64 == self.size;
            let Some(w) = send(&scratch[..n], fin) else { return false };
            self.sent += w as u64;
            if w < n {
                return false;
            }
            if fin {
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_is_offset_independent() {
        let mut whole = vec![0u8; 100];
        fill(7, 0, &mut whole);
        let mut part = vec![0u8; 37];
        fill(7, 13, &mut part);
        assert_eq!(&whole[13..50], &part[..]);
        assert_eq!(&whole[..8], &7u64.to_le_bytes());
    }

    #[test]
    fn request_round_trip() {
        let f = File { id: 3, size: 1000 };
        assert_eq!(File::parse(f.request().as_bytes()), Some(f));
        assert_eq!(File::parse(b"GET /x"), None);
        assert_eq!(File::from_path(f.path().as_bytes()), Some(f));
        assert_eq!(File::from_path(b"3-1000"), None);
    }
}
