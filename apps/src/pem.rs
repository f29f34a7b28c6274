//! Checks that a `--ca`, `--cert` or `--key` file holds what it should
//! before BoringSSL reads it, so a wrong file gets one clear line that names
//! the option and the file rather than a TLS library error.

/// What a PEM file must contain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// One or more `CERTIFICATE` blocks (`--ca`, `--cert`).
    Certificates,
    /// An unencrypted private key (`PRIVATE KEY`, `RSA PRIVATE KEY`,
    /// `EC PRIVATE KEY`) (`--key`).
    PrivateKey,
}

/// Check the file `path` given with `flag`: readable, PEM, with a block of
/// the wanted kind whose body is base64 of a DER SEQUENCE.
pub fn check(flag: &str, path: &str, want: Want) -> Result<(), String> {
    let text = std::fs::read(path).map_err(|e| format!("{flag} {path}: {e}"))?;
    let what = match want {
        Want::Certificates => "a PEM file of certificates",
        Want::PrivateKey => "a PEM private key",
    };
    let text = String::from_utf8_lossy(&text);
    let labels = blocks(&text).map_err(|e| format!("{flag} {path}: not {what} ({e})"))?;
    let found = match want {
        Want::Certificates => labels.iter().any(|l| l == "CERTIFICATE"),
        Want::PrivateKey => labels.iter().any(|l| l.ends_with("PRIVATE KEY") && !l.starts_with("ENCRYPTED")),
    };
    if found {
        return Ok(());
    }
    let has = if labels.is_empty() { "no PEM block".to_string() } else { labels.join(", ") };
    let hint = if labels.iter().any(|l| l.starts_with("ENCRYPTED")) {
        "; encrypted keys are not supported"
    } else {
        ""
    };
    Err(format!("{flag} {path}: not {what} (found: {has}{hint})"))
}

/// The labels of the well-formed PEM blocks in `text`; an error for a block
/// that is cut short or whose body is not base64 of a DER SEQUENCE.
fn blocks(text: &str) -> Result<Vec<String>, String> {
    let mut labels = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        let Some(label) = line.strip_prefix("-----BEGIN ").and_then(|l| l.strip_suffix("-----")) else {
            continue;
        };
        let end = format!("-----END {label}-----");
        let mut body = String::new();
        let mut closed = false;
        for l in lines.by_ref() {
            if l == end {
                closed = true;
                break;
            }
            // RFC 1421 headers (Proc-Type, DEK-Info) of encrypted keys.
            if !l.contains(':') {
                body.push_str(l);
            }
        }
        if !closed {
            return Err(format!("{label} block without its END line"));
        }
        // DER starts with a SEQUENCE tag (0x30), which base64 writes as 'M'.
        let base64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=');
        if !body.starts_with('M') || !body.chars().all(base64) {
            return Err(format!("the {label} block is not base64 DER"));
        }
        labels.push(label.to_string());
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certs(name: &str) -> String {
        format!("{}/../tests/certs/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    fn write(name: &str, data: &[u8]) -> String {
        let p = std::env::temp_dir().join(format!("mpquic-pem-{}-{name}", std::process::id()));
        std::fs::write(&p, data).unwrap();
        p.to_string_lossy().into_owned()
    }

    #[test]
    fn the_test_certificates_pass() {
        check("--cert", &certs("cert.pem"), Want::Certificates).unwrap();
        check("--ca", &certs("rootca.pem"), Want::Certificates).unwrap();
        check("--key", &certs("key.pem"), Want::PrivateKey).unwrap();
    }

    #[test]
    fn wrong_files_get_one_line_naming_flag_and_file() {
        let key = certs("key.pem");
        let e = check("--cert", &key, Want::Certificates).unwrap_err();
        assert!(e.starts_with(&format!("--cert {key}: not a PEM file of certificates (found: ")), "{e}");
        let e = check("--key", &certs("cert.pem"), Want::PrivateKey).unwrap_err();
        assert!(e.contains("not a PEM private key (found: CERTIFICATE)"), "{e}");
        let garbage = write("garbage", b"garbage\n\x00\xff");
        let e = check("--ca", &garbage, Want::Certificates).unwrap_err();
        assert!(e.ends_with("(found: no PEM block)"), "{e}");
        let cut = write("cut", b"-----BEGIN CERTIFICATE-----\nMIIB\n");
        let e = check("--ca", &cut, Want::Certificates).unwrap_err();
        assert!(e.contains("without its END line"), "{e}");
        let bad = write("bad", b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n");
        assert!(check("--ca", &bad, Want::Certificates).unwrap_err().contains("not base64 DER"));
        let enc = write(
            "enc",
            b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n",
        );
        assert!(check("--key", &enc, Want::PrivateKey)
            .unwrap_err()
            .contains("encrypted keys are not supported"));
        let e = check("--key", "/no/such/file", Want::PrivateKey).unwrap_err();
        assert!(e.starts_with("--key /no/such/file: ") && !e.contains('\n'), "{e}");
        for p in [garbage, cut, bad, enc] {
            let _ = std::fs::remove_file(p);
        }
    }
}
