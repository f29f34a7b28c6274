//! Shared by the C example tests: where the repository and the build are,
//! and building libmpquic plus the apps those tests run.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// target/<profile>, from this test binary's path (target/<profile>/deps/x).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().and_then(Path::parent).expect("target/<profile>").to_path_buf()
}

/// Build libmpquic (static and shared) and the given apps binaries with the
/// profile this test runs under, into the same target directory; the
/// profile's directory.
pub fn build_lib_and_apps(bins: &[&str]) -> PathBuf {
    let dir = profile_dir();
    let profile = match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".to_string(),
        Some(p) => p.to_string(),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root()).args(["build", "-p", "mpquic-ffi", "-p", "mpquic-apps", "--lib"]);
    for b in bins {
        cmd.args(["--bin", b]);
    }
    let st = cmd
        .args(["--profile", &profile])
        .env("CARGO_TARGET_DIR", dir.parent().expect("target dir"))
        .status()
        .expect("run cargo build");
    assert!(st.success(), "cargo build of libmpquic / {bins:?} failed");
    assert!(dir.join("libmpquic.a").exists(), "{}/libmpquic.a missing", dir.display());
    dir
}
