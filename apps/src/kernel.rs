//! Kernel TCP and MPTCP bulk transfers, the baseline beside mpquic
//! (`mpquic-tcp`): the same generated body and byte-exact check as the
//! simulator, congestion control by name, and a summary in the shape of
//! `mpquic-client --json` from what the kernel reports per subflow.

pub mod bulk;
pub mod pattern;
pub mod pm;
pub mod report;
pub mod sockopt;

use std::io;
use std::net::SocketAddr;

use socket2::{Domain, Protocol, Socket, Type};

/// A stream socket for `addr`'s family: MPTCP (`IPPROTO_MPTCP`) or TCP,
/// with congestion controller `cc` if given. The error is a sentence
/// naming what to change (the sysctl, the module).
pub fn stream_socket(addr: &SocketAddr, mptcp: bool, cc: Option<&str>) -> Result<Socket, String> {
    let proto = if mptcp { Protocol::MPTCP } else { Protocol::TCP };
    let sock = Socket::new(Domain::for_address(*addr), Type::STREAM, Some(proto)).map_err(|e| {
        if mptcp && matches!(e.raw_os_error(), Some(libc::ENOPROTOOPT | libc::EPROTONOSUPPORT | libc::EINVAL)) {
            format!("MPTCP is not available ({e}): enable it with `sysctl -w net.mptcp.enabled=1` (kernel 5.6+ built with CONFIG_MPTCP)")
        } else {
            format!("cannot open a socket: {e}")
        }
    })?;
    if let Some(cc) = cc {
        sockopt::set_congestion(&sock, cc)?;
    }
    Ok(sock)
}

/// The MPTCP packet scheduler in use (`net.mptcp.scheduler`; kernels
/// before 6.6 have only the default one and no sysctl).
pub fn mptcp_scheduler() -> String {
    std::fs::read_to_string("/proc/sys/net/mptcp/scheduler")
        .map_or_else(|_| "default".into(), |s| s.trim().into())
}

/// Whether `e` means the peer went away (not a local failure).
pub fn is_disconnect(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::UnexpectedEof
    )
}
