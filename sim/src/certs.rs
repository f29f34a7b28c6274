//! The simulator's server certificate, compiled in: the binary (and the
//! Python module built on this crate) works wherever it is installed, not
//! only beside the source tree it was built from.
//!
//! `Config` loads certificates from files, so the PEMs are written once to a
//! directory named for their content under the temp dir (shared by every
//! run; written through a rename, so concurrent runs never read half a file).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const CERT: &str = include_str!("../certs/cert.pem");
const KEY: &str = include_str!("../certs/key.pem");

/// Paths of the certificate chain and private key PEM files.
pub(crate) fn files() -> Result<&'static (String, String), String> {
    static FILES: OnceLock<Result<(String, String), String>> = OnceLock::new();
    FILES.get_or_init(write_all).as_ref().map_err(Clone::clone)
}

fn write_all() -> Result<(String, String), String> {
    let tag = fnv1a(CERT.as_bytes()) ^ fnv1a(KEY.as_bytes()).rotate_left(1);
    let shared = std::env::temp_dir().join(format!("mpquic-sim-certs-{tag:016x}"));
    // Another user's directory of the same name may not be writable.
    let own = std::env::temp_dir().join(format!("mpquic-sim-certs-{tag:016x}-{}", std::process::id()));
    write_in(&shared)
        .or_else(|_| write_in(&own))
        .map_err(|e| format!("writing the simulator's certificate: {e}"))
}

fn write_in(dir: &Path) -> std::io::Result<(String, String)> {
    std::fs::create_dir_all(dir)?;
    let cert = write_once(dir.join("cert.pem"), CERT)?;
    let key = write_once(dir.join("key.pem"), KEY)?;
    Ok((cert, key))
}

fn write_once(path: PathBuf, text: &str) -> std::io::Result<String> {
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(path.to_string_lossy().into_owned())
}

/// A stable 64-bit hash of `b` (the directory name must not change
/// between builds, as `DefaultHasher`'s may).
fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_pems_are_written_and_reused() {
        let (cert, key) = super::files().expect("written");
        assert_eq!(std::fs::read_to_string(cert).unwrap(), super::CERT);
        assert_eq!(std::fs::read_to_string(key).unwrap(), super::KEY);
        assert!(super::CERT.contains("BEGIN CERTIFICATE") && super::KEY.contains("PRIVATE KEY"));
    }
}
