//! Mapping request paths to files under the served root, never outside it.

use std::path::{Component, Path, PathBuf};

/// Why a request path does not name a servable file.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Malformed (bad percent-encoding, NUL, not absolute).
    BadRequest,
    /// No such file, or it lies outside the root.
    NotFound,
}

/// Decode `%XX` escapes; `None` on malformed escapes or NUL bytes.
pub fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    (!out.contains(&0)).then_some(out)
}

/// The file `req_path` (the `:path` pseudo-header, query ignored) names
/// under `root`. `root` must be canonical. Directories map to their
/// `index.html`. Symlinks are followed only if they stay inside `root`.
pub fn resolve(root: &Path, req_path: &str) -> Result<PathBuf, Refused> {
    let path = req_path.split(['?', '#']).next().unwrap_or_default();
    if !path.starts_with('/') {
        return Err(Refused::BadRequest);
    }
    let decoded = percent_decode(path).ok_or(Refused::BadRequest)?;
    let decoded = String::from_utf8(decoded).map_err(|_| Refused::BadRequest)?;
    let mut rel = PathBuf::new();
    for c in Path::new(&decoded).components() {
        match c {
            Component::Normal(p) => rel.push(p),
            Component::RootDir | Component::CurDir => {}
            // `..` could climb out of the root: refuse rather than normalise.
            Component::ParentDir | Component::Prefix(_) => return Err(Refused::NotFound),
        }
    }
    let mut full = root.join(rel);
    if full.is_dir() {
        full.push("index.html");
    }
    let canon = full.canonicalize().map_err(|_| Refused::NotFound)?;
    if !canon.starts_with(root) || !canon.is_file() {
        return Err(Refused::NotFound);
    }
    Ok(canon)
}

/// A Content-Type for a file name.
pub fn content_type(p: &Path) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or_default() {
        "html" | "htm" => "text/html; charset=utf-8",
        "txt" => "text/plain; charset=utf-8",
        "json" => "application/json",
        "css" => "text/css",
        "js" => "text/javascript",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Built once per test process: parallel tests rewriting the same files
    /// could read them while truncated.
    fn tree() -> (PathBuf, PathBuf) {
        static TREE: std::sync::OnceLock<(PathBuf, PathBuf)> = std::sync::OnceLock::new();
        TREE.get_or_init(make_tree).clone()
    }

    fn make_tree() -> (PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("mpquic-files-{}", std::process::id()));
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.txt"), b"a").unwrap();
        std::fs::write(root.join("sub/index.html"), b"i").unwrap();
        std::fs::write(root.join("with space"), b"s").unwrap();
        std::fs::write(base.join("secret"), b"x").unwrap();
        #[cfg(unix)]
        let _ = std::os::unix::fs::symlink(base.join("secret"), root.join("link"));
        (base, root.canonicalize().unwrap())
    }

    #[test]
    fn serves_inside_root_only() {
        let (base, root) = tree();
        assert_eq!(resolve(&root, "/a.txt"), Ok(root.join("a.txt")));
        assert_eq!(resolve(&root, "/a.txt?x=1"), Ok(root.join("a.txt")));
        assert_eq!(resolve(&root, "/sub/"), Ok(root.join("sub/index.html")));
        assert_eq!(resolve(&root, "/with%20space"), Ok(root.join("with space")));
        assert_eq!(resolve(&root, "/missing"), Err(Refused::NotFound));
        assert_eq!(resolve(&root, "/"), Err(Refused::NotFound));
        assert_eq!(resolve(&root, "/../secret"), Err(Refused::NotFound));
        assert_eq!(resolve(&root, "/%2e%2e/secret"), Err(Refused::NotFound));
        assert_eq!(resolve(&root, "/sub/%2E%2E/%2E%2E/secret"), Err(Refused::NotFound));
        assert_eq!(resolve(&root, "/link"), Err(Refused::NotFound));
        assert_eq!(resolve(&root, "a.txt"), Err(Refused::BadRequest));
        assert_eq!(resolve(&root, "/a%00.txt"), Err(Refused::BadRequest));
        assert_eq!(resolve(&root, "/a%zz"), Err(Refused::BadRequest));
        assert_eq!(resolve(&root, "/a%2"), Err(Refused::BadRequest));
        let _ = std::fs::remove_dir_all(base);
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%41%62c").as_deref(), Some(&b"aAbc"[..]));
        assert_eq!(percent_decode("%"), None);
    }
}
