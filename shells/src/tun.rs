//! TUN devices (layer-3, no packet-info header), opened non-blocking.
//!
//! This is the only module with `unsafe`: the `TUNSETIFF` ioctl has no safe wrapper in
//! `nix` or `std`.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;

/// Longest interface name Linux accepts (IFNAMSIZ - 1).
pub const MAX_IFNAME: usize = 15;

/// `struct ifreq` as `TUNSETIFF` reads it: the name, then the flags in the union
/// (padded to the union's 24 bytes so the kernel never reads past our buffer).
#[repr(C)]
struct IfReqFlags {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// An open TUN device in the network namespace that was current when it was created.
/// The device disappears when this is dropped (it is not persistent).
#[derive(Debug)]
pub struct Tun {
    file: File,
    name: String,
}

impl Tun {
    /// Creates TUN device `name` in the calling thread's network namespace.
    pub fn create(name: &str) -> io::Result<Tun> {
        if name.is_empty() || name.len() > MAX_IFNAME || name.contains(['/', ' ', '\0']) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad interface name {name:?}")));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")?;
        let mut req = IfReqFlags {
            name: [0; 16],
            // Both flags fit in a c_short (0x0001 | 0x1000).
            flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
            _pad: [0; 22],
        };
        for (dst, src) in req.name.iter_mut().zip(name.bytes()) {
            *dst = src;
        }
        // SAFETY: `file` is an open /dev/net/tun descriptor and `req` is a live,
        // correctly sized `struct ifreq` that the kernel only reads and writes within.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Tun { file, name: name.to_string() })
    }

    /// Interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one IP packet; `Ok(None)` when none is waiting.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self.file.read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes one IP packet. A packet the kernel refuses (malformed, no buffer space) is
    /// dropped, as a real link would, and reported as `Ok(false)`.
    pub fn send(&mut self, pkt: &[u8]) -> io::Result<bool> {
        match self.file.write(pkt) {
            Ok(_) => Ok(true),
            Err(e)
                if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::InvalidInput)
                    || e.raw_os_error() == Some(libc::ENOBUFS)
                    || e.raw_os_error() == Some(libc::EIO) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}

impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}
