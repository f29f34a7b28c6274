//! `https://` URLs as the client accepts them.

/// A parsed download URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Host name or IP literal (without IPv6 brackets).
    pub host: String,
    /// UDP port (443 by default).
    pub port: u16,
    /// `:authority` to send (host and explicit port, as written).
    pub authority: String,
    /// `:path` to send (path and query), at least `/`.
    pub path: String,
}

/// Parse an `https://host[:port][/path][?query]` URL.
pub fn parse(url: &str) -> Result<Target, String> {
    let bad = |why: &str| format!("bad URL {url:?}: {why}");
    let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("expected https://host/path"))?;
    if !scheme.eq_ignore_ascii_case("https") {
        return Err(bad("only https:// URLs can be fetched over HTTP/3"));
    }
    let rest = rest.split('#').next().unwrap_or_default();
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (rest.get(..i).unwrap_or_default(), rest.get(i..).unwrap_or_default()),
        None => (rest, ""),
    };
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    if authority.contains('@') {
        return Err(bad("user information is not supported"));
    }
    if path.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err(bad("the path contains spaces or control characters (percent-encode them)"));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(|| bad("unterminated IPv6 literal"))?;
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(bad("invalid IPv6 literal"));
        }
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or_else(|| bad("junk after IPv6 literal"))?),
        };
        (h.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(bad("missing host"));
    }
    if !host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._:".contains(&b)) {
        return Err(bad("invalid host name"));
    }
    let port = match port {
        None => 443,
        Some(p) => match p.parse::<u16>() {
            Ok(p) if p != 0 => p,
            _ => return Err(bad("invalid port")),
        },
    };
    Ok(Target { host, port, authority: authority.to_string(), path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_urls() {
        let t = parse("https://localhost:4433/big.bin").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("localhost", 4433, "/big.bin"));
        assert_eq!(t.authority, "localhost:4433");
        let t = parse("https://example.org").unwrap();
        assert_eq!((t.port, t.path.as_str()), (443, "/"));
        let t = parse("HTTPS://[::1]:8443/a?b=c#frag").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("::1", 8443, "/a?b=c"));
        assert_eq!(parse("https://h?q").unwrap().path, "/?q");
    }

    #[test]
    fn bad_urls() {
        for u in [
            "localhost:4433/x",
            "http://localhost/x",
            "https:///x",
            "https://h:0/",
            "https://h:99999/",
            "https://h:port/",
            "https://[::1/",
            "https://[zz]/",
            "https://u@h/",
            "https://h/a b",
            "https://h!/",
        ] {
            let e = parse(u).unwrap_err();
            assert!(e.starts_with("bad URL"), "{u}: {e}");
        }
    }
}
