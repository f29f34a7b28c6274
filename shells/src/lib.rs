//! Mahimahi-style packet shells over Linux network namespaces and TUN devices, driven
//! by the sans-IO link model of `mpquic-emu` with the real clock.
//!
//! - [`shell`]: the packet-shell template every binary uses ([`shell::run`]).
//! - [`args`]: Mahimahi-compatible command-line parsing.
//! - [`mahimahi`]: `mpquic-mpshell --backend mahimahi`, one real Mahimahi shell per path.
//! - [`netns`]: namespaces, `ip`, address allocation (IPv4 and IPv6 twins).
//! - [`ip`]: the ECN bits of the IP headers crossing a shell.
//! - [`tun`]: TUN devices.
//!
//! Binaries: `mm-delay`, `mm-loss`, `mm-link`, `mpquic-mpshell` (see the crate README).
#![warn(missing_docs, unreachable_pub)]

pub mod args;
pub mod ip;
pub mod mahimahi;
pub mod netns;
mod setup;
pub mod shell;
pub mod tun;
