//! Batched UDP sends with GSO (Linux `UDP_SEGMENT`): consecutive datagrams of
//! one path, all due now, leave in one `sendmsg` that the kernel cuts into
//! equal segments (the last may be shorter). Where the kernel or socket
//! refuses GSO, the batch goes out one datagram per `sendto`, and GSO stays
//! off for that socket.

use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use mpquic::SendInfo;

/// Most segments in one GSO send (the kernel's limit is 64).
pub const MAX_SEGMENTS: usize = 64;
/// Most bytes in one GSO send (one IP datagram's worth of UDP payload).
const MAX_BYTES: usize = 65000;

/// Datagrams of one path waiting to leave together.
#[derive(Default)]
pub struct Batch {
    buf: Vec<u8>,
    segment: usize,
    count: usize,
    info: Option<SendInfo>,
}

impl Batch {
    /// Whether `len` bytes for `info`'s 4-tuple can join: same path, and
    /// every segment but the last of the batch the same size.
    pub fn fits(&self, len: usize, info: &SendInfo) -> bool {
        let Some(cur) = &self.info else { return true };
        cur.from == info.from
            && cur.to == info.to
            && len <= self.segment
            && self.buf.len() % self.segment == 0
            && self.count < MAX_SEGMENTS
            && self.buf.len() + len <= MAX_BYTES
    }

    /// Append a datagram (call [`Batch::fits`] first).
    pub fn push(&mut self, d: &[u8], info: &SendInfo) {
        if self.info.is_none() {
            self.segment = d.len();
            self.info = Some(*info);
        }
        self.buf.extend_from_slice(d);
        self.count += 1;
    }

    /// Nothing waiting.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether this batch holds datagrams of `info`'s path.
    pub fn is_for(&self, info: &SendInfo) -> bool {
        self.info.as_ref().is_some_and(|i| i.from == info.from && i.to == info.to)
    }

    /// The waiting bytes, segment size and path; empties the batch.
    pub fn take(&mut self, f: impl FnOnce(&[u8], usize, &SendInfo)) {
        if let Some(info) = self.info.take() {
            f(&self.buf, self.segment, &info);
        }
        self.buf.clear();
        self.count = 0;
    }
}

/// Whether GSO is still worth trying on a socket.
pub struct Gso(Cell<bool>);

impl Default for Gso {
    fn default() -> Self {
        Gso(Cell::new(cfg!(target_os = "linux")))
    }
}

impl Gso {
    /// Send `buf` as `segment`-byte datagrams to `to` from `sock`; with GSO
    /// when it works, else one `sendto` per datagram.
    pub fn send(&self, sock: &impl AsRawFd, buf: &[u8], segment: usize, to: SocketAddr) -> io::Result<()> {
        if self.0.get() && buf.len() > segment {
            match send_gso(sock.as_raw_fd(), buf, segment, to) {
                Ok(()) => return Ok(()),
                // Not supported here (old kernel, no checksum offload on
                // the device, an option the socket refuses): fall back.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT)) => {
                    self.0.set(false);
                }
                Err(e) => return Err(e),
            }
        }
        for d in buf.chunks(segment) {
            send_one(sock.as_raw_fd(), d, to)?;
        }
        Ok(())
    }
}

fn sockaddr(to: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    let sa = socket2::SockAddr::from(to);
    // SAFETY: SockAddr holds a valid sockaddr_storage of the stated length.
    (unsafe { *sa.as_ptr().cast::<libc::sockaddr_storage>() }, sa.len())
}

fn send_one(fd: i32, d: &[u8], to: SocketAddr) -> io::Result<()> {
    let (sa, len) = sockaddr(to);
    // SAFETY: valid fd, buffer and address of the stated lengths.
    let n = unsafe {
        libc::sendto(fd, d.as_ptr().cast(), d.len(), 0, (&sa as *const libc::sockaddr_storage).cast(), len)
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn send_gso(fd: i32, buf: &[u8], segment: usize, to: SocketAddr) -> io::Result<()> {
    const UDP_SEGMENT: libc::c_int = 103;
    let (mut sa, sa_len) = sockaddr(to);
    let mut iov = libc::iovec { iov_base: buf.as_ptr() as *mut libc::c_void, iov_len: buf.len() };
    // Room for one cmsg carrying a u16, aligned as cmsghdr wants.
    let mut control = [0u64; 4];
    // SAFETY: a zeroed msghdr is valid; every pointer set below outlives
    // the sendmsg call, and the cmsg written fits `control` (CMSG_SPACE(2)
    // is 24 bytes on 64-bit, 16 on 32-bit).
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_name = (&mut sa as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = sa_len;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_UDP;
        (*cmsg).cmsg_type = UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), segment as u16);
        if libc::sendmsg(fd, &msg, 0) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn send_gso(_: i32, _: &[u8], _: usize, _: SocketAddr) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::ENOPROTOOPT))
}

/// Ask the kernel to coalesce received datagrams of one flow (Linux
/// `UDP_GRO`); returns whether it agreed. Without it, [`recv`] returns one
/// datagram per call as before.
pub fn enable_gro(sock: &impl AsRawFd) -> bool {
    #[cfg(target_os = "linux")]
    {
        const UDP_GRO: libc::c_int = 104;
        let on: libc::c_int = 1;
        // SAFETY: a valid fd and a pointer to a live c_int of the stated size.
        let r = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_UDP,
                UDP_GRO,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        r == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = sock;
        false
    }
}

/// Receive into `buf`: returns the byte count, the sender and the size of
/// each datagram in it (the last may be shorter): with GRO on, several
/// datagrams of one sender arrive in one call.
pub fn recv(sock: &impl AsRawFd, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, usize)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut control = [0u64; 8];
    let mut segment = None;
    // SAFETY: try_init hands valid storage for the address; the msghdr's
    // pointers (iov, control) outlive the recvmsg call, and cmsgs are read
    // only within msg_controllen as the kernel set it.
    let (n, addr) = unsafe {
        socket2::SockAddr::try_init(|storage, len| {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_name = storage.cast();
            msg.msg_namelen = *len;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control) as _;
            let n = libc::recvmsg(sock.as_raw_fd(), &mut msg, 0);
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            *len = msg.msg_namelen;
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                #[cfg(target_os = "linux")]
                if (*cmsg).cmsg_level == libc::SOL_UDP && (*cmsg).cmsg_type == 104 {
                    segment =
                        Some(std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>()) as usize);
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
            Ok(n as usize)
        })?
    };
    let from = addr.as_socket().ok_or_else(|| io::Error::other("not an IP sender"))?;
    Ok((n, from, segment.filter(|&s| s > 0).unwrap_or(n.max(1))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    #[allow(clippy::disallowed_methods)]
    fn batches_split_into_their_datagrams_with_or_without_gso() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let info = SendInfo {
            from: tx.local_addr().unwrap(),
            to: rx.local_addr().unwrap(),
            path_id: mpquic::PathId::ZERO,
            at: std::time::Instant::now(),
            ecn: mpquic::Ecn::NotEct,
        };
        for gso in [Gso::default(), Gso(Cell::new(false))] {
            let mut b = Batch::default();
            for (i, len) in [1200usize, 1200, 1200, 700].into_iter().enumerate() {
                assert!(b.fits(len, &info));
                b.push(&vec![i as u8; len], &info);
            }
            assert!(!b.fits(700, &info), "nothing after a short last segment");
            let other = SendInfo { to: "127.0.0.1:9".parse().unwrap(), ..info };
            assert!(!b.fits(100, &other), "another path waits for the next batch");
            b.take(|buf, seg, i| gso.send(&tx, buf, seg, i.to).unwrap());
            assert!(b.is_empty());
            let mut got = Vec::new();
            let mut buf = [0u8; 2000];
            for _ in 0..4 {
                let (n, _) = rx.recv_from(&mut buf).unwrap();
                got.push((n, buf[0]));
            }
            assert_eq!(got, [(1200, 0), (1200, 1), (1200, 2), (700, 3)]);
        }
    }

    #[test]
    #[allow(clippy::disallowed_methods)]
    fn gro_receive_splits_back_into_datagrams() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let gro = enable_gro(&rx);
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut data = vec![1u8; 1000];
        data.extend_from_slice(&[2u8; 1000]);
        data.extend_from_slice(&[3u8; 300]);
        Gso::default().send(&tx, &data, 1000, rx.local_addr().unwrap()).unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65536];
        while got.len() < 3 {
            let (n, from, seg) = recv(&rx, &mut buf).unwrap();
            assert_eq!(from, tx.local_addr().unwrap());
            got.extend(buf[..n].chunks(seg).map(|d| (d.len(), d[0])));
        }
        assert_eq!(got, [(1000, 1), (1000, 2), (300, 3)], "GRO on: {gro}");
    }
}
