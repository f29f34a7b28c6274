//! What the kernel says about network interfaces: a netlink socket that
//! wakes the event loop when a link or an address changes (Linux), and the
//! state of a named interface read on demand. The messages themselves are
//! not parsed: any change triggers a fresh read of the interfaces
//! (`getifaddrs` through `if_addrs`, flags through `SIOCGIFFLAGS`), which
//! is what the caller compares against.

use std::io;
use std::net::IpAddr;

/// A netlink socket subscribed to link and address changes, to poll for
/// readability next to the UDP sockets.
#[derive(Debug)]
pub struct IfWatch {
    fd: std::os::fd::OwnedFd,
}

impl IfWatch {
    /// Subscribe to link and IPv4/IPv6 address changes (non-blocking).
    #[cfg(target_os = "linux")]
    pub fn open() -> io::Result<IfWatch> {
        use std::os::fd::FromRawFd;
        let flags = libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
        // SAFETY: plain socket(2) call.
        let raw = unsafe { libc::socket(libc::AF_NETLINK, flags, libc::NETLINK_ROUTE) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
        // SAFETY: sockaddr_nl is plain old data; zero is a valid start.
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        sa.nl_groups = (libc::RTMGRP_LINK | libc::RTMGRP_IPV4_IFADDR | libc::RTMGRP_IPV6_IFADDR) as u32;
        let len = std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
        // SAFETY: `sa` is a valid sockaddr_nl of `len` bytes.
        let r = unsafe { libc::bind(raw, (&sa as *const libc::sockaddr_nl).cast(), len) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(IfWatch { fd })
    }

    /// Not available: interfaces are only followed on Linux.
    #[cfg(not(target_os = "linux"))]
    pub fn open() -> io::Result<IfWatch> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "interfaces are followed on Linux only"))
    }

    /// The descriptor to poll.
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }

    /// Read every queued message. Returns whether there was any (or the
    /// kernel dropped some for lack of room, which also means "changed").
    pub fn drain(&self) -> io::Result<bool> {
        let mut buf = [0u8; 8192];
        let mut any = false;
        loop {
            // SAFETY: `buf` is writable for its length.
            let n = unsafe { libc::recv(self.raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n > 0 {
                any = true;
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                _ if n == 0 => return Ok(any),
                Some(libc::EAGAIN) => return Ok(any),
                Some(libc::EINTR) => continue,
                Some(libc::ENOBUFS) => any = true,
                _ => return Err(e),
            }
        }
    }
}

/// Whether interface `name` is administratively up and has carrier
/// (`IFF_UP` and `IFF_RUNNING`); false when there is no such interface.
pub fn is_up(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else { return false };
    if c.as_bytes().len() >= libc::IFNAMSIZ {
        return false;
    }
    // SAFETY: a datagram socket only to ask for flags; closed below.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        return false;
    }
    // SAFETY: ifreq is plain old data; the name fits (checked above).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, b) in req.ifr_name.iter_mut().zip(c.as_bytes()) {
        *d = *b as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS fills `req.ifr_ifru.ifru_flags`.
    let r = unsafe { libc::ioctl(s, libc::SIOCGIFFLAGS as _, &mut req) };
    // SAFETY: `s` is ours.
    unsafe { libc::close(s) };
    // SAFETY: the union's flags member is what SIOCGIFFLAGS set.
    let flags = i32::from(unsafe { req.ifr_ifru.ifru_flags });
    r == 0 && flags & libc::IFF_UP != 0 && flags & libc::IFF_RUNNING != 0
}

/// Whether an interface of that name exists (up or down, with addresses
/// or not).
pub fn exists(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else { return false };
    // SAFETY: a NUL-terminated name.
    unsafe { libc::if_nametoindex(c.as_ptr()) != 0 }
}

/// The address a path on interface `name` uses now: none while the
/// interface is down; else its first address of the family asked for
/// (IPv6: not link-local, which cannot reach a server off the link).
pub fn usable_address(name: &str, v6: bool) -> Option<IpAddr> {
    if !is_up(name) {
        return None;
    }
    let ifaces = if_addrs::get_if_addrs().ok()?;
    ifaces.iter().filter(|i| i.name == name).map(|i| i.ip()).find(|ip| match ip {
        IpAddr::V4(_) => !v6,
        IpAddr::V6(a) => v6 && (a.segments()[0] & 0xffc0) != 0xfe80,
    })
}

/// `--local auto`: the interfaces that are up, not loopback, with an
/// address of the family asked for, in the kernel's order.
pub fn auto_interfaces(v6: bool) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for i in if_addrs::get_if_addrs().unwrap_or_default() {
        if !i.is_loopback() && !names.contains(&i.name) && usable_address(&i.name, v6).is_some() {
            names.push(i.name);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_up_with_its_addresses_and_unknown_names_are_not() {
        assert!(is_up("lo"));
        assert_eq!(usable_address("lo", false), Some(IpAddr::from([127, 0, 0, 1])));
        assert!(!is_up("no-such-if0"));
        assert!(!is_up("a-name-longer-than-ifnamsiz"));
        assert!(!is_up("nul\0byte"));
        assert!(exists("lo") && !exists("no-such-if0") && !exists("nul\0byte"));
        assert_eq!(usable_address("no-such-if0", false), None);
        assert!(!auto_interfaces(false).iter().any(|n| n == "lo"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_watch_opens_and_is_quiet_without_changes() {
        let w = IfWatch::open().expect("netlink socket");
        assert!(w.raw_fd() >= 0);
        // Nothing asked for and (most likely) nothing changing: no error.
        w.drain().expect("drain");
    }
}
