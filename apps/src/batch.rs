//! Batched UDP sends with GSO (Linux `UDP_SEGMENT`): consecutive datagrams of
//! one path, all due now, leave in one `sendmsg` that the kernel cuts into
//! equal segments (the last may be shorter). Where the kernel or socket
//! refuses GSO, the batch goes out one datagram per `sendto`, and GSO stays
//! off for that socket.

use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use mpquic::{Ecn, SendInfo};

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
            && cur.ecn == info.ecn
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

/// What a socket still takes: GSO, and the ECN codepoint per datagram (a
/// `cmsg` on `sendmsg`). Each turns off for good the first time the kernel
/// refuses it, and the datagrams go out without it.
pub struct Gso {
    gso: Cell<bool>,
    ecn: Cell<bool>,
}

impl Default for Gso {
    fn default() -> Self {
        Gso { gso: Cell::new(cfg!(target_os = "linux")), ecn: Cell::new(cfg!(target_os = "linux")) }
    }
}

/// Errors that mean "this option is not supported here" (old kernel, no
/// checksum offload on the device, an option the socket refuses).
fn unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT))
}

impl Gso {
    /// Without GSO (each datagram in its own `sendmsg`).
    pub fn without_gso() -> Gso {
        Gso { gso: Cell::new(false), ..Gso::default() }
    }

    /// Send `buf` as `segment`-byte datagrams to `to` from `sock`, each with
    /// the ECN codepoint `ecn`; with GSO when it works, else one `sendmsg`
    /// per datagram.
    pub fn send(
        &self,
        sock: &impl AsRawFd,
        buf: &[u8],
        segment: usize,
        to: SocketAddr,
        ecn: Ecn,
    ) -> io::Result<()> {
        let fd = sock.as_raw_fd();
        if self.gso.get() && buf.len() > segment {
            match self.send_msg(fd, buf, Some(segment), to, ecn) {
                Ok(()) => return Ok(()),
                Err(e) if unsupported(&e) => self.gso.set(false),
                Err(e) => return Err(e),
            }
        }
        for d in buf.chunks(segment) {
            self.send_msg(fd, d, None, to, ecn)?;
        }
        Ok(())
    }

    /// One `sendmsg`; an ECN mark the kernel refuses is dropped, and not
    /// tried again on this socket.
    fn send_msg(
        &self,
        fd: i32,
        buf: &[u8],
        segment: Option<usize>,
        to: SocketAddr,
        ecn: Ecn,
    ) -> io::Result<()> {
        let tos = if self.ecn.get() { ecn.tos_bits() } else { 0 };
        match send_msg(fd, buf, segment, to, tos) {
            Err(e) if tos != 0 && unsupported(&e) && segment.is_none() => {
                self.ecn.set(false);
                send_msg(fd, buf, None, to, 0)
            }
            r => r,
        }
    }
}

fn sockaddr(to: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    let sa = socket2::SockAddr::from(to);
    // SAFETY: SockAddr holds a valid sockaddr_storage of the stated length.
    (unsafe { *sa.as_ptr().cast::<libc::sockaddr_storage>() }, sa.len())
}

/// `sendmsg` of `buf` to `to`, cut into `segment`-byte datagrams by the
/// kernel (`UDP_SEGMENT`) when given, with the TOS / Traffic Class ECN
/// bits `tos` when not zero.
fn send_msg(fd: i32, buf: &[u8], segment: Option<usize>, to: SocketAddr, tos: u8) -> io::Result<()> {
    const UDP_SEGMENT: libc::c_int = 103;
    #[cfg(not(target_os = "linux"))]
    if segment.is_some() {
        return Err(io::Error::from_raw_os_error(libc::ENOPROTOOPT));
    }
    let (mut sa, sa_len) = sockaddr(to);
    let mut iov = libc::iovec { iov_base: buf.as_ptr() as *mut libc::c_void, iov_len: buf.len() };
    // Room for two cmsgs (a u16 and a c_int), aligned as cmsghdr wants.
    let mut control = [0u64; 8];
    let int = std::mem::size_of::<libc::c_int>() as u32;
    // SAFETY: a zeroed msghdr is valid; every pointer set below outlives
    // the sendmsg call; the cmsgs written fit `control` (CMSG_SPACE of a
    // u16 and of a c_int are 16 bytes each on 64-bit), and msg_controllen
    // is their total, so CMSG_NXTHDR finds the second where it is written.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_name = (&mut sa as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = sa_len;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        let seg_space = segment.map_or(0, |_| libc::CMSG_SPACE(2));
        let tos_space = if tos != 0 { libc::CMSG_SPACE(int) } else { 0 };
        if seg_space + tos_space > 0 {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = (seg_space + tos_space) as _;
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            if let Some(seg) = segment {
                (*cmsg).cmsg_level = libc::SOL_UDP;
                (*cmsg).cmsg_type = UDP_SEGMENT;
                (*cmsg).cmsg_len = libc::CMSG_LEN(2) as _;
                std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), seg as u16);
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
            if tos != 0 {
                let (level, ty) = if to.is_ipv6() {
                    (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
                } else {
                    (libc::IPPROTO_IP, libc::IP_TOS)
                };
                (*cmsg).cmsg_level = level;
                (*cmsg).cmsg_type = ty;
                (*cmsg).cmsg_len = libc::CMSG_LEN(int) as _;
                std::ptr::write_unaligned(
                    libc::CMSG_DATA(cmsg).cast::<libc::c_int>(),
                    libc::c_int::from(tos),
                );
            }
        }
        if libc::sendmsg(fd, &msg, 0) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Ask the kernel to report each received datagram's TOS / Traffic Class
/// byte (its ECN bits); returns whether it agreed.
pub fn enable_ecn_recv(sock: &impl AsRawFd, v6: bool) -> bool {
    let on: libc::c_int = 1;
    let set = |level, opt| {
        // SAFETY: a valid fd and a pointer to a live c_int of the stated size.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                level,
                opt,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ) == 0
        }
    };
    // An IPv6 socket may also receive IPv4 datagrams (mapped addresses).
    let v4 = set(libc::IPPROTO_IP, libc::IP_RECVTOS);
    if v6 {
        set(libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS)
    } else {
        v4
    }
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

/// What one [`recv`] call read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// Bytes read.
    pub len: usize,
    /// The sender.
    pub from: SocketAddr,
    /// The size of each datagram in them (the last may be shorter): with
    /// GRO on, several datagrams of one sender arrive in one call.
    pub segment: usize,
    /// Their ECN codepoint (`NotEct` unless [`enable_ecn_recv`] is on).
    pub ecn: Ecn,
}

/// Receive into `buf`.
pub fn recv(sock: &impl AsRawFd, buf: &mut [u8]) -> io::Result<Received> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut control = [0u64; 8];
    let mut segment = None;
    let mut tos = 0u8;
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
                let (level, ty) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
                #[cfg(target_os = "linux")]
                if level == libc::SOL_UDP && ty == 104 {
                    segment =
                        Some(std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>()) as usize);
                }
                // IPv4 reports the TOS byte as one byte, IPv6 the Traffic
                // Class as an int.
                if level == libc::IPPROTO_IP && ty == libc::IP_TOS {
                    tos = *libc::CMSG_DATA(cmsg);
                }
                if level == libc::IPPROTO_IPV6 && ty == libc::IPV6_TCLASS {
                    tos = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>()) as u8;
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
            Ok(n as usize)
        })?
    };
    let from = addr.as_socket().ok_or_else(|| io::Error::other("not an IP sender"))?;
    let segment = segment.filter(|&s| s > 0).unwrap_or(n.max(1));
    Ok(Received { len: n, from, segment, ecn: Ecn::from_tos(tos) })
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
        for gso in [Gso::default(), Gso::without_gso()] {
            let mut b = Batch::default();
            for (i, len) in [1200usize, 1200, 1200, 700].into_iter().enumerate() {
                assert!(b.fits(len, &info));
                b.push(&vec![i as u8; len], &info);
            }
            assert!(!b.fits(700, &info), "nothing after a short last segment");
            let other = SendInfo { to: "127.0.0.1:9".parse().unwrap(), ..info };
            assert!(!b.fits(100, &other), "another path waits for the next batch");
            let marked = SendInfo { ecn: Ecn::Ect0, ..info };
            assert!(!b.fits(100, &marked), "another ECN codepoint waits for the next batch");
            b.take(|buf, seg, i| gso.send(&tx, buf, seg, i.to, i.ecn).unwrap());
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
        Gso::default().send(&tx, &data, 1000, rx.local_addr().unwrap(), Ecn::NotEct).unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65536];
        while got.len() < 3 {
            let r = recv(&rx, &mut buf).unwrap();
            assert_eq!(r.from, tx.local_addr().unwrap());
            got.extend(buf[..r.len].chunks(r.segment).map(|d| (d.len(), d[0])));
        }
        assert_eq!(got, [(1000, 1), (1000, 2), (300, 3)], "GRO on: {gro}");
    }

    /// The ECN codepoint set per datagram arrives as sent, with GSO and
    /// without, over IPv4 and IPv6 loopback (where the machine has ::1).
    #[test]
    fn ecn_codepoints_cross_the_socket() {
        for local in ["127.0.0.1:0", "[::1]:0"] {
            let Ok(rx) = UdpSocket::bind(local) else {
                eprintln!("skipped {local}: cannot bind (no IPv6 loopback?)");
                continue;
            };
            let v6 = local.starts_with('[');
            assert!(enable_ecn_recv(&rx, v6), "{local}: the kernel refused to report TOS");
            rx.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
            let tx = UdpSocket::bind(local).unwrap();
            let to = rx.local_addr().unwrap();
            let mut buf = vec![0u8; 65536];
            for (gso, ecn) in
                [(Gso::default(), Ecn::Ect0), (Gso::without_gso(), Ecn::Ce), (Gso::default(), Ecn::NotEct)]
            {
                gso.send(&tx, &[7u8; 2400], 1200, to, ecn).unwrap();
                let mut n = 0;
                while n < 2400 {
                    let r = recv(&rx, &mut buf).unwrap();
                    assert_eq!(r.ecn, ecn, "{local}");
                    n += r.len;
                }
                assert!(gso.ecn.get(), "{local}: ECN marks still on");
            }
        }
    }
}
