//! Header fields and HTTP message validation (RFC 9114 §4.1.2, §4.2, §4.3).
//! A malformed message is a stream error of type H3_MESSAGE_ERROR.

use super::error::H3Error;

/// One field line: a name and a value, as raw bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// Field name; lowercase on the wire in HTTP/3.
    pub name: Vec<u8>,
    /// Field value.
    pub value: Vec<u8>,
}

impl Header {
    /// A header from anything byte-like.
    pub fn new(name: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Self {
        Self { name: name.as_ref().to_vec(), value: value.as_ref().to_vec() }
    }
}

/// Which kind of field section is being checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    /// Request header section: :method, :scheme, :authority, :path.
    Request,
    /// Response header section: :status only.
    Response,
    /// Trailer section: no pseudo-headers at all.
    Trailers,
}

/// Connection-specific fields that HTTP/3 forbids (RFC 9114 §4.2).
const CONNECTION_SPECIFIC: [&[u8]; 5] =
    [b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"];

/// RFC 9110 §5.6.2 token characters, lowercase only.
fn is_name_char(c: u8) -> bool {
    matches!(c,
        b'a'..=b'z' | b'0'..=b'9' | b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*'
        | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~')
}

fn check_value(v: &[u8]) -> Result<(), H3Error> {
    if v.iter().any(|&c| c == 0 || c == b'\r' || c == b'\n') {
        return Err(H3Error::message("field value contains NUL, CR or LF"));
    }
    if matches!(v.first(), Some(b' ' | b'\t')) || matches!(v.last(), Some(b' ' | b'\t')) {
        return Err(H3Error::message("field value has surrounding whitespace"));
    }
    Ok(())
}

/// The request pseudo-headers of a valid request, for the caller's use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pseudo {
    /// :method
    pub method: Option<Vec<u8>>,
    /// :scheme
    pub scheme: Option<Vec<u8>>,
    /// :authority
    pub authority: Option<Vec<u8>>,
    /// :path
    pub path: Option<Vec<u8>>,
    /// :status, parsed.
    pub status: Option<u16>,
    /// content-length, if present (and consistent).
    pub content_length: Option<u64>,
}

fn set_once(slot: &mut Option<Vec<u8>>, v: &[u8]) -> Result<(), H3Error> {
    if slot.is_some() {
        return Err(H3Error::message("duplicate pseudo-header"));
    }
    *slot = Some(v.to_vec());
    Ok(())
}

/// Check a field section against RFC 9114 §4.2-§4.3 and return its
/// pseudo-headers. Any violation is H3_MESSAGE_ERROR.
pub fn validate(headers: &[Header], kind: MessageKind) -> Result<Pseudo, H3Error> {
    let mut p = Pseudo::default();
    let mut seen_regular = false;
    let mut host: Option<&[u8]> = None;
    for h in headers {
        let name = &h.name[..];
        check_value(&h.value)?;
        if let Some(pseudo) = name.strip_prefix(b":") {
            if seen_regular {
                return Err(H3Error::message("pseudo-header after regular field"));
            }
            match (kind, pseudo) {
                (MessageKind::Request, b"method") => set_once(&mut p.method, &h.value)?,
                (MessageKind::Request, b"scheme") => set_once(&mut p.scheme, &h.value)?,
                (MessageKind::Request, b"authority") => set_once(&mut p.authority, &h.value)?,
                (MessageKind::Request, b"path") => set_once(&mut p.path, &h.value)?,
                (MessageKind::Response, b"status") => {
                    if p.status.is_some() {
                        return Err(H3Error::message("duplicate :status"));
                    }
                    p.status = Some(parse_status(&h.value)?);
                }
                _ => return Err(H3Error::message("unknown or misplaced pseudo-header")),
            }
            continue;
        }
        seen_regular = true;
        if name.is_empty() || !name.iter().all(|&c| is_name_char(c)) {
            return Err(H3Error::message("field name empty, uppercase or invalid"));
        }
        if CONNECTION_SPECIFIC.contains(&name) {
            return Err(H3Error::message("connection-specific field"));
        }
        if name == b"te" && h.value != b"trailers" {
            return Err(H3Error::message("te other than trailers"));
        }
        if name == b"host" {
            host = Some(&h.value);
        }
        if name == b"content-length" {
            let v = parse_decimal(&h.value).ok_or(H3Error::message("invalid content-length"))?;
            if p.content_length.is_some_and(|old| old != v) {
                return Err(H3Error::message("conflicting content-length"));
            }
            p.content_length = Some(v);
        }
    }
    match kind {
        MessageKind::Request => {
            let method = p.method.as_deref().ok_or(H3Error::message("request without :method"))?;
            if method == b"CONNECT" {
                // RFC 9114 §4.4: CONNECT carries only :method and :authority.
                if p.authority.is_none() || p.scheme.is_some() || p.path.is_some() {
                    return Err(H3Error::message("malformed CONNECT request"));
                }
            } else {
                if p.scheme.is_none() {
                    return Err(H3Error::message("request without :scheme"));
                }
                match p.path.as_deref() {
                    None | Some(b"") => return Err(H3Error::message("request without :path")),
                    _ => {}
                }
            }
            if let (Some(a), Some(h)) = (p.authority.as_deref(), host) {
                if a != h {
                    return Err(H3Error::message(":authority and host differ"));
                }
            }
        }
        MessageKind::Response => {
            if p.status.is_none() {
                return Err(H3Error::message("response without :status"));
            }
        }
        MessageKind::Trailers => {}
    }
    Ok(p)
}

fn parse_decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u64, |acc, &d| acc.checked_mul(10)?.checked_add((d - b'0') as u64))
}

fn parse_status(v: &[u8]) -> Result<u16, H3Error> {
    if v.len() != 3 {
        return Err(H3Error::message(":status is not three digits"));
    }
    match parse_decimal(v) {
        Some(s @ 100..=599) => Ok(s as u16),
        _ => Err(H3Error::message(":status out of range")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h3::error::H3Code;

    fn hs(list: &[(&str, &str)]) -> Vec<Header> {
        list.iter().map(|(n, v)| Header::new(n, v)).collect()
    }

    fn req_ok() -> Vec<Header> {
        hs(&[(":method", "GET"), (":scheme", "https"), (":authority", "a.example"), (":path", "/x")])
    }

    #[test]
    fn valid_messages() {
        let p = validate(&req_ok(), MessageKind::Request).unwrap();
        assert_eq!(p.path.as_deref(), Some(&b"/x"[..]));
        let p = validate(&hs(&[(":status", "200"), ("content-length", "5")]), MessageKind::Response).unwrap();
        assert_eq!((p.status, p.content_length), (Some(200), Some(5)));
        validate(&hs(&[(":method", "CONNECT"), (":authority", "a:443")]), MessageKind::Request).unwrap();
        validate(&hs(&[("x-checksum", "abc")]), MessageKind::Trailers).unwrap();
        validate(
            &hs(&[(":method", "GET"), (":scheme", "https"), (":path", "/"), ("te", "trailers")]),
            MessageKind::Request,
        )
        .unwrap();
    }

    #[test]
    fn malformed_messages() {
        let bad: Vec<(Vec<Header>, MessageKind)> = vec![
            (hs(&[(":method", "GET"), (":path", "/")]), MessageKind::Request),
            (hs(&[(":method", "GET"), (":scheme", "https")]), MessageKind::Request),
            (hs(&[(":method", "GET"), (":scheme", "https"), (":path", "")]), MessageKind::Request),
            (hs(&[(":scheme", "https"), (":path", "/")]), MessageKind::Request),
            (
                hs(&[(":method", "GET"), (":method", "GET"), (":scheme", "https"), (":path", "/")]),
                MessageKind::Request,
            ),
            (
                hs(&[(":method", "GET"), (":scheme", "https"), ("a", "b"), (":path", "/")]),
                MessageKind::Request,
            ),
            (
                hs(&[(":method", "GET"), (":scheme", "https"), (":path", "/"), (":status", "200")]),
                MessageKind::Request,
            ),
            (
                hs(&[(":method", "GET"), (":scheme", "https"), (":path", "/"), ("Upper", "x")]),
                MessageKind::Request,
            ),
            (
                hs(&[(":method", "GET"), (":scheme", "https"), (":path", "/"), ("connection", "close")]),
                MessageKind::Request,
            ),
            (
                hs(&[
                    (":method", "GET"),
                    (":scheme", "https"),
                    (":path", "/"),
                    ("transfer-encoding", "chunked"),
                ]),
                MessageKind::Request,
            ),
            (
                hs(&[(":method", "GET"), (":scheme", "https"), (":path", "/"), ("te", "gzip")]),
                MessageKind::Request,
            ),
            (
                hs(&[(":method", "GET"), (":scheme", "https"), (":path", "/"), ("x", "a\nb")]),
                MessageKind::Request,
            ),
            (hs(&[(":method", "CONNECT"), (":authority", "a"), (":path", "/")]), MessageKind::Request),
            (
                hs(&[
                    (":method", "GET"),
                    (":scheme", "https"),
                    (":path", "/"),
                    (":authority", "a"),
                    ("host", "b"),
                ]),
                MessageKind::Request,
            ),
            (hs(&[(":status", "20")]), MessageKind::Response),
            (hs(&[(":status", "700")]), MessageKind::Response),
            (hs(&[(":status", "200"), (":path", "/")]), MessageKind::Response),
            (hs(&[("server", "x")]), MessageKind::Response),
            (
                hs(&[(":status", "200"), ("content-length", "1"), ("content-length", "2")]),
                MessageKind::Response,
            ),
            (hs(&[(":status", "200"), ("content-length", "-1")]), MessageKind::Response),
            (hs(&[(":status", "200")]), MessageKind::Trailers),
            (hs(&[("", "x")]), MessageKind::Trailers),
        ];
        for (h, kind) in bad {
            assert_eq!(validate(&h, kind).unwrap_err().code, H3Code::MESSAGE_ERROR, "{h:?}");
        }
    }
}
