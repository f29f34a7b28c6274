//! Socket addresses between `struct sockaddr` and `SocketAddr`.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use libc::{sockaddr, sockaddr_in, sockaddr_in6, sockaddr_storage, socklen_t, AF_INET, AF_INET6};

/// Read a C socket address (IPv4 or IPv6) of `len` bytes.
pub(crate) unsafe fn from_c(sa: *const sockaddr, len: socklen_t) -> Option<SocketAddr> {
    if sa.is_null() || (len as usize) < std::mem::size_of::<libc::sa_family_t>() {
        return None;
    }
    // SAFETY: `sa` points to at least `len` bytes (caller's contract); we
    // read each variant only when `len` covers it, with unaligned reads
    // since a `struct sockaddr *` may come from a byte buffer.
    unsafe {
        let family = std::ptr::addr_of!((*sa).sa_family).read_unaligned();
        match i32::from(family) {
            AF_INET if len as usize >= std::mem::size_of::<sockaddr_in>() => {
                let a = sa.cast::<sockaddr_in>().read_unaligned();
                let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
                Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(a.sin_port))))
            }
            AF_INET6 if len as usize >= std::mem::size_of::<sockaddr_in6>() => {
                let a = sa.cast::<sockaddr_in6>().read_unaligned();
                let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
                Some(SocketAddr::V6(SocketAddrV6::new(
                    ip,
                    u16::from_be(a.sin6_port),
                    a.sin6_flowinfo,
                    a.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }
}

/// Write `addr` into a `sockaddr_storage`; returns the length to pass to
/// `sendto`.
pub(crate) fn to_c(addr: &SocketAddr, out: &mut sockaddr_storage) -> socklen_t {
    // SAFETY: sockaddr_storage is plain old data; all-zero is valid.
    *out = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            // SAFETY: as above.
            let mut s: sockaddr_in = unsafe { std::mem::zeroed() };
            s.sin_family = AF_INET as libc::sa_family_t;
            s.sin_port = a.port().to_be();
            s.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in.
            unsafe { std::ptr::write((out as *mut sockaddr_storage).cast::<sockaddr_in>(), s) };
            std::mem::size_of::<sockaddr_in>() as socklen_t
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above.
            let mut s: sockaddr_in6 = unsafe { std::mem::zeroed() };
            s.sin6_family = AF_INET6 as libc::sa_family_t;
            s.sin6_port = a.port().to_be();
            s.sin6_addr.s6_addr = a.ip().octets();
            s.sin6_flowinfo = a.flowinfo();
            s.sin6_scope_id = a.scope_id();
            // SAFETY: as for sockaddr_in.
            unsafe { std::ptr::write((out as *mut sockaddr_storage).cast::<sockaddr_in6>(), s) };
            std::mem::size_of::<sockaddr_in6>() as socklen_t
        }
    }
}

/// An all-zero `sockaddr_storage` (family AF_UNSPEC).
pub(crate) fn zeroed_storage() -> sockaddr_storage {
    // SAFETY: plain old data.
    unsafe { std::mem::zeroed() }
}
