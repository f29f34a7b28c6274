//! Batched UDP I/O. Sends with GSO (Linux `UDP_SEGMENT`): consecutive
//! datagrams of one path, all due now, leave in one `sendmsg` that the kernel
//! cuts into equal segments (the last may be shorter). Where the kernel or
//! socket refuses GSO, the batch leaves in one `sendmmsg` (one message per
//! datagram), and where that is refused too, one `sendmsg` per datagram; each
//! refusal holds for good on that socket. Receives with GRO (`UDP_GRO`, one
//! flow's datagrams coalesced) and `recvmmsg` (several flows' in one call,
//! [`RecvBatch`]), each falling back to one datagram per call.

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

/// What a socket still takes: GSO, `sendmmsg`, and the ECN codepoint per
/// datagram (a `cmsg` on each message). Each turns off for good the first
/// time the kernel refuses it, and the datagrams go out without it.
pub struct Gso {
    gso: Cell<bool>,
    mmsg: Cell<bool>,
    ecn: Cell<bool>,
}

impl Default for Gso {
    fn default() -> Self {
        let linux = cfg!(target_os = "linux");
        Gso { gso: Cell::new(linux), mmsg: Cell::new(linux), ecn: Cell::new(linux) }
    }
}

/// Errors that mean "this option is not supported here" (old kernel, no
/// checksum offload on the device, an option the socket refuses).
fn unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT))
}

/// Errors that mean "no `sendmmsg` / `recvmmsg` here" (an old kernel or
/// libc, a sandbox that filters the call).
fn mmsg_refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EOPNOTSUPP))
}

impl Gso {
    /// Without GSO (a batch's datagrams in one `sendmmsg`, one message each).
    pub fn without_gso() -> Gso {
        Gso { gso: Cell::new(false), ..Gso::default() }
    }

    /// Send `buf` as `segment`-byte datagrams to `to` from `sock`, each with
    /// the ECN codepoint `ecn`; with GSO when it works, else `sendmmsg`,
    /// else one `sendmsg` per datagram.
    pub fn send(
        &self,
        sock: &impl AsRawFd,
        buf: &[u8],
        segment: usize,
        to: SocketAddr,
        ecn: Ecn,
    ) -> io::Result<()> {
        // A zero segment size would never consume `buf`: one byte each.
        let segment = segment.max(1);
        let fd = sock.as_raw_fd();
        if self.gso.get() && buf.len() > segment {
            match self.send_msg(fd, buf, Some(segment), to, ecn) {
                Ok(()) => return Ok(()),
                Err(e) if unsupported(&e) => self.gso.set(false),
                Err(e) => return Err(e),
            }
        }
        if self.mmsg.get() && buf.len() > segment {
            return self.send_mmsg(fd, buf, segment, to, ecn);
        }
        self.send_each(fd, buf, segment, to, ecn)
    }

    /// The datagrams of `buf` in `sendmmsg` calls until all went. A partial
    /// send (the kernel says how many went) continues with the rest, which
    /// reports the error that stopped it, e.g. a full buffer.
    fn send_mmsg(&self, fd: i32, mut buf: &[u8], segment: usize, to: SocketAddr, ecn: Ecn) -> io::Result<()> {
        while !buf.is_empty() {
            let tos = if self.ecn.get() { ecn.tos_bits() } else { 0 };
            match send_mmsg(fd, buf, segment, to, tos) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => buf = buf.get(n.saturating_mul(segment)..).unwrap_or_default(),
                Err(e) if mmsg_refused(&e) => {
                    self.mmsg.set(false);
                    return self.send_each(fd, buf, segment, to, ecn);
                }
                // The ECN mark is refused: drop it (once), as `send_msg` does.
                Err(e) if tos != 0 && unsupported(&e) => self.ecn.set(false),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One `sendmsg` per `segment`-byte datagram of `buf`.
    fn send_each(&self, fd: i32, buf: &[u8], segment: usize, to: SocketAddr, ecn: Ecn) -> io::Result<()> {
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

/// Room for two cmsgs (a u16 and a c_int), aligned as cmsghdr wants.
type Control = [u64; 8];

/// A `msghdr` to `sa` carrying, in `control`, the cmsgs for `segment`
/// (`UDP_SEGMENT`) when given and the TOS / Traffic Class ECN bits `tos`
/// when not zero; the caller points it at the data. It points into `sa` and
/// `control`, so they must stay put while it is used.
fn header(
    sa: &mut (libc::sockaddr_storage, libc::socklen_t),
    control: &mut Control,
    segment: Option<usize>,
    tos: u8,
    v6: bool,
) -> libc::msghdr {
    const UDP_SEGMENT: libc::c_int = 103;
    let int = std::mem::size_of::<libc::c_int>() as u32;
    // SAFETY: a zeroed msghdr is valid; the cmsgs written fit `control`
    // (CMSG_SPACE of a u16 and of a c_int are 16 bytes each on 64-bit), and
    // msg_controllen is their total, so CMSG_NXTHDR finds the second where
    // it is written.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_name = (&mut sa.0 as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = sa.1;
        let seg_space = segment.map_or(0, |_| libc::CMSG_SPACE(2));
        let tos_space = if tos != 0 { libc::CMSG_SPACE(int) } else { 0 };
        if seg_space + tos_space == 0 {
            return msg;
        }
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
            let (level, ty) =
                if v6 { (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) } else { (libc::IPPROTO_IP, libc::IP_TOS) };
            (*cmsg).cmsg_level = level;
            (*cmsg).cmsg_type = ty;
            (*cmsg).cmsg_len = libc::CMSG_LEN(int) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), libc::c_int::from(tos));
        }
        msg
    }
}

/// `sendmsg` of `buf` to `to`, cut into `segment`-byte datagrams by the
/// kernel (`UDP_SEGMENT`) when given, with the TOS / Traffic Class ECN
/// bits `tos` when not zero.
fn send_msg(fd: i32, buf: &[u8], segment: Option<usize>, to: SocketAddr, tos: u8) -> io::Result<()> {
    #[cfg(not(target_os = "linux"))]
    if segment.is_some() {
        return Err(io::Error::from_raw_os_error(libc::ENOPROTOOPT));
    }
    let mut sa = sockaddr(to);
    let mut control = Control::default();
    let mut iov = libc::iovec { iov_base: buf.as_ptr() as *mut libc::c_void, iov_len: buf.len() };
    let mut msg = header(&mut sa, &mut control, segment, tos, to.is_ipv6());
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    // SAFETY: msg points at `sa`, `control` and `iov`, all alive and
    // unmoved for the call; the kernel only reads them.
    if unsafe { libc::sendmsg(fd, &msg, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One `sendmmsg` of the `segment`-byte datagrams of `buf` (the first
/// [`MAX_SEGMENTS`]) to `to`, each message with the ECN bits `tos` when not
/// zero. Returns how many went (the kernel may stop early).
fn send_mmsg(fd: i32, buf: &[u8], segment: usize, to: SocketAddr, tos: u8) -> io::Result<usize> {
    let mut sa = sockaddr(to);
    // One control block serves every message: the kernel only reads it.
    let mut control = Control::default();
    let msg = header(&mut sa, &mut control, None, tos, to.is_ipv6());
    let mut iovs = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; MAX_SEGMENTS];
    // SAFETY: a zeroed mmsghdr is valid (null pointers, zero lengths).
    let mut msgs: [libc::mmsghdr; MAX_SEGMENTS] = unsafe { std::mem::zeroed() };
    let mut n = 0;
    for ((d, iov), m) in buf.chunks(segment.max(1)).zip(&mut iovs).zip(&mut msgs) {
        *iov = libc::iovec { iov_base: d.as_ptr() as *mut libc::c_void, iov_len: d.len() };
        m.msg_hdr = msg;
        m.msg_hdr.msg_iov = iov;
        m.msg_hdr.msg_iovlen = 1;
        n += 1;
    }
    // SAFETY: the first `n` messages point at `sa`, `control`, `iovs` and
    // `buf`, all alive and unmoved for the call; the kernel reads them and
    // writes only each message's msg_len.
    let sent = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), n as _, 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sent as usize)
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

/// The GRO segment size and the TOS / Traffic Class byte among the cmsgs
/// of a `msghdr` the kernel filled.
///
/// # Safety
///
/// `msg.msg_control` must point at `msg.msg_controllen` readable bytes.
unsafe fn cmsgs(msg: &libc::msghdr) -> (Option<usize>, u8) {
    let (mut segment, mut tos) = (None, 0u8);
    // SAFETY: the caller vouches for the control block; CMSG_FIRSTHDR and
    // CMSG_NXTHDR only return headers inside msg_controllen.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            let (level, ty) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
            #[cfg(target_os = "linux")]
            if level == libc::SOL_UDP && ty == 104 {
                segment =
                    Some(std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>()) as usize);
            }
            // IPv4 reports the TOS byte as one byte, IPv6 the Traffic Class
            // as an int.
            if level == libc::IPPROTO_IP && ty == libc::IP_TOS {
                tos = *libc::CMSG_DATA(cmsg);
            }
            if level == libc::IPPROTO_IPV6 && ty == libc::IPV6_TCLASS {
                tos = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>()) as u8;
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    (segment, tos)
}

/// What was read: `n` bytes from `from`, with the cmsgs' values.
fn received(n: usize, from: Option<SocketAddr>, (segment, tos): (Option<usize>, u8)) -> io::Result<Received> {
    let from = from.ok_or_else(|| io::Error::other("not an IP sender"))?;
    // Never zero: the caller cuts the bytes into segment-sized datagrams.
    let segment = segment.filter(|&s| s > 0).unwrap_or(n.max(1));
    Ok(Received { len: n, from, segment, ecn: Ecn::from_tos(tos) })
}

/// Receive into `buf`.
pub fn recv(sock: &impl AsRawFd, buf: &mut [u8]) -> io::Result<Received> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut control = Control::default();
    let mut found = (None, 0);
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
            found = cmsgs(&msg);
            Ok(n as usize)
        })?
    };
    received(n, addr.as_socket(), found)
}

/// Messages one `recvmmsg` returns at most.
pub const RECV_MESSAGES: usize = 32;

/// Room for one `recvmmsg` of up to [`RECV_MESSAGES`] messages: a buffer
/// slot, a sender address and a control block each, allocated at the first
/// call and reused (the `mmsghdr`s pointing at them are rebuilt on the
/// stack per call, so this holds no pointers and can move between threads).
pub struct RecvBatch {
    slot: usize,
    buf: Vec<u8>,
    addrs: Vec<libc::sockaddr_storage>,
    control: Vec<Control>,
    on: bool,
}

impl Default for RecvBatch {
    /// Slots of 64 KiB: a GRO read may hold that much.
    fn default() -> Self {
        RecvBatch::with_slot(crate::net::MAX_DATAGRAM)
    }
}

impl RecvBatch {
    /// Slots of `slot` bytes each; a longer message is dropped.
    pub fn with_slot(slot: usize) -> RecvBatch {
        RecvBatch { slot: slot.max(1), buf: Vec::new(), addrs: Vec::new(), control: Vec::new(), on: true }
    }

    /// Whether `recvmmsg` still works here (else use [`recv`]).
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Turn `recvmmsg` off or on, to test the fallback.
    #[cfg(test)]
    pub(crate) fn set_on(&mut self, on: bool) {
        self.on = on;
    }

    /// One `recvmmsg` on `sock`: hands each message's bytes and what
    /// [`recv`] would report to `f`, and returns how many messages came. A
    /// truncated message (longer than a slot) or one from a non-IP sender is
    /// dropped. When the kernel refuses `recvmmsg`, returns `Ok(0)` and is off
    /// for good ([`RecvBatch::is_on`]).
    pub fn recv(&mut self, sock: &impl AsRawFd, mut f: impl FnMut(&mut [u8], Received)) -> io::Result<usize> {
        if self.buf.is_empty() {
            self.buf = vec![0; self.slot * RECV_MESSAGES];
            // SAFETY: an all-zero sockaddr_storage is valid (AF_UNSPEC).
            self.addrs = vec![unsafe { std::mem::zeroed() }; RECV_MESSAGES];
            self.control = vec![Control::default(); RECV_MESSAGES];
        }
        let mut iovs = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; RECV_MESSAGES];
        // SAFETY: a zeroed mmsghdr is valid (null pointers, zero lengths).
        let mut msgs: [libc::mmsghdr; RECV_MESSAGES] = unsafe { std::mem::zeroed() };
        let slots = self.buf.chunks_exact_mut(self.slot);
        let per_msg = slots.zip(&mut self.addrs).zip(&mut self.control).zip(&mut iovs).zip(&mut msgs);
        for ((((slot, addr), control), iov), m) in per_msg {
            *iov = libc::iovec { iov_base: slot.as_mut_ptr().cast(), iov_len: slot.len() };
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_name = (addr as *mut libc::sockaddr_storage).cast();
            m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as _;
            m.msg_hdr.msg_control = control.as_mut_ptr().cast();
            m.msg_hdr.msg_controllen = std::mem::size_of::<Control>() as _;
        }
        // SAFETY: each of the RECV_MESSAGES headers points at its own slot
        // of `buf`, address and control block, sized as stated, all alive
        // and unmoved for the call (nothing else borrows them meanwhile).
        let n = unsafe {
            libc::recvmmsg(sock.as_raw_fd(), msgs.as_mut_ptr(), RECV_MESSAGES as _, 0, std::ptr::null_mut())
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if mmsg_refused(&e) || e.raw_os_error() == Some(libc::EPERM) {
                self.on = false;
                return Ok(0);
            }
            return Err(e);
        }
        let n = (n as usize).min(RECV_MESSAGES);
        for (i, m) in msgs.iter().take(n).enumerate() {
            if let Some((range, r)) = self.message(i, &m.msg_hdr, m.msg_len as usize) {
                f(self.buf.get_mut(range).unwrap_or_default(), r);
            }
        }
        Ok(n)
    }

    /// Where the `i`-th message of `len` bytes lies in `buf`, and what came
    /// with it; `None` for a message to drop.
    fn message(
        &self,
        i: usize,
        hdr: &libc::msghdr,
        len: usize,
    ) -> Option<(std::ops::Range<usize>, Received)> {
        if hdr.msg_flags & libc::MSG_TRUNC != 0 || len > self.slot {
            return None;
        }
        let mut storage = socket2::SockAddrStorage::zeroed();
        // SAFETY: sockaddr_storage is one of the platform's sockaddr types,
        // and the kernel wrote msg_namelen bytes of it (at most its size).
        let from = unsafe {
            *storage.view_as::<libc::sockaddr_storage>() = *self.addrs.get(i)?;
            let max = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            socket2::SockAddr::new(storage, hdr.msg_namelen.min(max))
        };
        // SAFETY: the kernel set msg_controllen within the control block
        // msg_control points at, which is alive in `self.control`.
        let found = unsafe { cmsgs(hdr) };
        let r = received(len, from.as_socket(), found).ok()?;
        Some((i * self.slot..i * self.slot + len, r))
    }
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
        let no_mmsg = Gso { mmsg: Cell::new(false), ..Gso::without_gso() };
        for gso in [Gso::default(), Gso::without_gso(), no_mmsg] {
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

    /// Without GSO a batch leaves in one `sendmmsg` (it reports all six
    /// sent) and arrives whole and in order; `sendmmsg` stays on.
    #[test]
    fn batch_without_gso_leaves_in_one_sendmmsg() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = rx.local_addr().unwrap();
        let batch = |first: u8| -> Vec<u8> {
            let mut v: Vec<u8> = (0..5).flat_map(|i| [first + i; 1200]).collect();
            v.extend_from_slice(&[first + 5; 300]);
            v
        };
        assert_eq!(send_mmsg(tx.as_raw_fd(), &batch(0), 1200, to, 0).unwrap(), 6, "one call, six messages");
        let gso = Gso::without_gso();
        gso.send(&tx, &batch(10), 1200, to, Ecn::NotEct).unwrap();
        assert!(gso.mmsg.get(), "sendmmsg still on");
        let mut buf = [0u8; 2000];
        let mut got = Vec::new();
        for _ in 0..12 {
            let (n, from) = rx.recv_from(&mut buf).unwrap();
            assert_eq!(from, tx.local_addr().unwrap());
            assert!(buf[..n].iter().all(|&b| b == buf[0]), "datagram intact");
            got.push((n, buf[0]));
        }
        let want: Vec<(usize, u8)> = [0u8, 10]
            .iter()
            .flat_map(|&f| (0..6).map(move |i| (if i < 5 { 1200 } else { 300 }, f + i)))
            .collect();
        assert_eq!(got, want);
    }

    /// Queues datagrams of `sizes` (each filled with its index + `first`)
    /// from `tx` to `to`, one `sendmsg` each, marked `ecn`.
    fn send_each(tx: &UdpSocket, to: SocketAddr, sizes: &[usize], first: u8, ecn: Ecn) {
        let fd = tx.as_raw_fd();
        for (i, &len) in sizes.iter().enumerate() {
            send_msg(fd, &vec![first + i as u8; len], None, to, ecn.tos_bits()).unwrap();
        }
    }

    /// One `recvmmsg` returns the datagrams of two senders (no GRO here:
    /// one message each), intact, in order per sender, with their sources
    /// and ECN marks.
    #[test]
    fn recvmmsg_reads_several_senders_in_one_call() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(enable_ecn_recv(&rx, false));
        rx.set_nonblocking(true).unwrap();
        let to = rx.local_addr().unwrap();
        let (a, b) = (UdpSocket::bind("127.0.0.1:0").unwrap(), UdpSocket::bind("127.0.0.1:0").unwrap());
        send_each(&a, to, &[100, 1300, 5000], 1, Ecn::Ect0);
        send_each(&b, to, &[2000, 1], 11, Ecn::Ce);
        send_each(&a, to, &[40000], 4, Ecn::Ect0);
        // Loopback delivers within the send; the pause is for a busy machine.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut batch = RecvBatch::default();
        let mut got = Vec::new();
        let n = batch
            .recv(&rx, |d, r| {
                assert_eq!(r.len, d.len());
                assert!(d.iter().all(|&x| x == d[0]), "datagram intact");
                got.push((r.from, d.len(), d[0], r.ecn));
            })
            .unwrap();
        assert_eq!(n, 6, "all six in one call");
        let (a, b) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        let from = |s| got.iter().filter(|g| g.0 == s).map(|g| (g.1, g.2, g.3)).collect::<Vec<_>>();
        assert_eq!(
            from(a),
            [(100, 1, Ecn::Ect0), (1300, 2, Ecn::Ect0), (5000, 3, Ecn::Ect0), (40000, 4, Ecn::Ect0)]
        );
        assert_eq!(from(b), [(2000, 11, Ecn::Ce), (1, 12, Ecn::Ce)]);
        let e = batch.recv(&rx, |_, _| panic!("nothing left")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert!(batch.is_on());
    }

    /// A message longer than its slot (MSG_TRUNC) is dropped, not handed
    /// on cut short; the next one still arrives.
    #[test]
    fn recvmmsg_drops_truncated_messages() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        send_each(&tx, rx.local_addr().unwrap(), &[1500, 1000, 999], 1, Ecn::NotEct);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut batch = RecvBatch::with_slot(1000);
        let mut got = Vec::new();
        let n = batch.recv(&rx, |d, _| got.push((d.len(), d[0]))).unwrap();
        assert_eq!(n, 3);
        assert_eq!(got, [(1000, 2), (999, 3)]);
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
