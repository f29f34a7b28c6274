//! UDP sockets for the event loop (mio), datagram routing helpers, and a
//! paced sender that honours [`mpquic::SendInfo::at`].

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};
use mpquic::{Connection, RecvInfo, SendInfo};

use crate::batch::{Batch, Gso, Received, RecvBatch};

/// Largest datagram we read.
pub const MAX_DATAGRAM: usize = 65535;

/// A datagram whose pacing release time is this close is sent at once: the
/// loop cannot sleep with finer resolution anyway.
const PACING_SLACK: Duration = Duration::from_millis(1);

/// The poll token of the one non-socket descriptor ([`Sockets::watch_other`]).
const OTHER: Token = Token(usize::MAX - 1);

/// Bound UDP sockets and the poller watching them.
pub struct Sockets {
    poll: Poll,
    events: Events,
    socks: Vec<UdpSocket>,
    addrs: Vec<SocketAddr>,
    /// Per socket: whether GSO still works there.
    gso: Vec<Gso>,
    /// Due datagrams, one batch per path (a scheduler that alternates
    /// paths still gets full batches), sent by [`Sockets::flush`].
    batches: RefCell<Vec<Batch>>,
    /// Room for one `recvmmsg` ([`Sockets::recv_all`]).
    recv: RefCell<RecvBatch>,
}

fn grow_buffers(sock: &UdpSocket) {
    use std::os::fd::AsRawFd;
    // Loopback bursts overflow the default ~200 kB buffers; ask for more
    // (the kernel caps it at net.core.[rw]mem_max).
    let size: libc::c_int = 8 << 20;
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: a valid fd and a pointer to a live c_int of the stated size.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

/// Whether `MPQUIC_NO_GSO` is set (to anything but empty or `0`): the
/// sockets then neither send with GSO nor receive with GRO, to measure or
/// debug without the kernel's offloads.
fn no_offload() -> bool {
    std::env::var_os("MPQUIC_NO_GSO").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Binds a UDP socket to `addr` inside the network namespace `netns` (a file such as
/// `/proc/PID/ns/net`). A socket stays in the namespace it was created in, so one
/// process can hold sockets in several namespaces: the thread enters `netns`, binds,
/// and returns to its own namespace. Needs CAP_SYS_ADMIN.
pub fn bind_in_netns(addr: SocketAddr, netns: &Path) -> io::Result<std::net::UdpSocket> {
    use std::os::fd::AsRawFd;
    let ctx = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
    let home = File::open("/proc/thread-self/ns/net").map_err(|e| ctx("own network namespace", e))?;
    let target = File::open(netns).map_err(|e| ctx(&format!("network namespace {}", netns.display()), e))?;
    // SAFETY: setns on valid, open namespace file descriptors.
    if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        let e = io::Error::last_os_error();
        return Err(ctx(&format!("entering network namespace {} (needs root)", netns.display()), e));
    }
    let sock = std::net::UdpSocket::bind(addr);
    // SAFETY: as above; returning home must not fail silently, or every later socket
    // and DNS lookup of this thread would happen in the wrong namespace.
    if unsafe { libc::setns(home.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        let e = io::Error::last_os_error();
        eprintln!("cannot return to the original network namespace: {e}");
        std::process::abort();
    }
    sock.map_err(|e| ctx(&format!("bind {addr} in {}", netns.display()), e))
}

/// Where one path's socket is bound: an address, optionally inside another network
/// namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalSpec {
    /// Local address (port 0: any free port).
    pub addr: SocketAddr,
    /// Network namespace file to bind in (`None`: the process's own).
    pub netns: Option<PathBuf>,
}

impl Sockets {
    /// Bind one socket per address (port 0 picks a free port).
    pub fn bind(addrs: &[SocketAddr]) -> io::Result<Sockets> {
        let specs: Vec<LocalSpec> = addrs.iter().map(|&addr| LocalSpec { addr, netns: None }).collect();
        Sockets::bind_specs(&specs)
    }

    /// Bind one socket per spec, each in its own network namespace if it names one.
    pub fn bind_specs(specs: &[LocalSpec]) -> io::Result<Sockets> {
        let mut socks = Vec::new();
        for spec in specs {
            let a = spec.addr;
            socks.push(match &spec.netns {
                None => std::net::UdpSocket::bind(a)
                    .map_err(|e| io::Error::new(e.kind(), format!("bind {a}: {e}")))?,
                Some(ns) => bind_in_netns(a, ns)?,
            });
        }
        Sockets::adopt(socks)
    }

    /// Take bound sockets over (e.g. a worker's share of an SO_REUSEPORT
    /// group): non-blocking, larger buffers, GRO where the kernel has it.
    pub fn adopt(std_socks: Vec<std::net::UdpSocket>) -> io::Result<Sockets> {
        let mut s = Sockets {
            poll: Poll::new()?,
            events: Events::with_capacity(64),
            socks: Vec::new(),
            addrs: Vec::new(),
            gso: Vec::new(),
            batches: RefCell::default(),
            recv: RefCell::default(),
        };
        for std_sock in std_socks {
            s.watch(std_sock)?;
        }
        Ok(s)
    }

    /// Make `std_sock` non-blocking with larger buffers, GRO and ECN
    /// reception where the kernel has them, and poll it. Returns its address.
    fn watch(&mut self, std_sock: std::net::UdpSocket) -> io::Result<SocketAddr> {
        std_sock.set_nonblocking(true)?;
        let mut s = UdpSocket::from_std(std_sock);
        grow_buffers(&s);
        let offload = !no_offload();
        if offload {
            crate::batch::enable_gro(&s);
        }
        let bound = s.local_addr()?;
        crate::batch::enable_ecn_recv(&s, bound.is_ipv6());
        self.poll.registry().register(&mut s, Token(self.socks.len()), Interest::READABLE)?;
        self.socks.push(s);
        self.addrs.push(bound);
        self.gso.push(if offload { Gso::default() } else { Gso::without_gso() });
        Ok(bound)
    }

    /// The bound addresses, in the order given to [`Sockets::bind`].
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Bind one more socket at `addr` (port 0: any free port) and watch it
    /// too, e.g. the new local address of a migrating client. Returns the
    /// bound address.
    pub fn add(&mut self, addr: SocketAddr) -> io::Result<SocketAddr> {
        let std_sock = std::net::UdpSocket::bind(addr)
            .map_err(|e| io::Error::new(e.kind(), format!("bind {addr}: {e}")))?;
        self.watch(std_sock)
    }

    /// Poll `fd` too (e.g. [`crate::ifwatch::IfWatch`]'s netlink socket):
    /// [`Sockets::wait`] returns when it is readable, and
    /// [`Sockets::other_ready`] says so.
    pub fn watch_other(&mut self, fd: std::os::fd::RawFd) -> io::Result<()> {
        self.poll.registry().register(&mut mio::unix::SourceFd(&fd), OTHER, Interest::READABLE)
    }

    /// Whether the last [`Sockets::wait`] returned for the descriptor of
    /// [`Sockets::watch_other`].
    pub fn other_ready(&self) -> bool {
        self.events.iter().any(|e| e.token() == OTHER)
    }

    /// Wait until a socket may be readable or `timeout` passes.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        match self.poll.poll(&mut self.events, timeout) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            r => r,
        }
    }

    /// Read every queued datagram on every socket and hand each to `f`.
    /// (The poller is edge-triggered, so sockets are drained completely.)
    /// One `recvmmsg` reads up to [`crate::batch::RECV_MESSAGES`] messages,
    /// of any senders, and with GRO a message may hold several datagrams of
    /// one sender; they are split here. Where the kernel refuses
    /// `recvmmsg`, one message per call is read into `buf`.
    pub fn recv_all(&self, buf: &mut [u8], mut f: impl FnMut(&mut [u8], RecvInfo)) -> io::Result<()> {
        // Taken for the whole drain; a callback reentering (none does)
        // would find it taken and read one message per call instead.
        let mut batch = self.recv.try_borrow_mut().ok();
        for (s, local) in self.socks.iter().zip(&self.addrs) {
            let mut deliver = |d: &mut [u8], r: Received| {
                let info = RecvInfo { ecn: r.ecn, ..RecvInfo::new(r.from, *local) };
                for d in d.chunks_mut(r.segment) {
                    f(d, info);
                }
            };
            loop {
                let r = match batch.as_deref_mut().filter(|b| b.is_on()) {
                    Some(b) => b.recv(s, &mut deliver).map(drop),
                    None => crate::batch::recv(s, buf)
                        .map(|r| deliver(buf.get_mut(..r.len).unwrap_or_default(), r)),
                };
                match r {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    // ICMP errors reported on the socket: the peer will time out.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// Send `data` from the socket bound to `info.from`.
    pub fn send(&self, data: &[u8], info: &SendInfo) -> io::Result<()> {
        self.send_segments(data, data.len().max(1), info)
    }

    /// Queue a datagram that is due now; it leaves with the next ones of
    /// the same path in one GSO send (at the latest at [`Sockets::flush`]).
    pub fn send_batched(&self, data: &[u8], info: &SendInfo) -> io::Result<()> {
        let mut batches = self.batches.borrow_mut();
        let i = match batches
            .iter()
            .position(|b| b.is_for(info))
            .or_else(|| batches.iter().position(Batch::is_empty))
        {
            Some(i) => i,
            None => {
                batches.push(Batch::default());
                batches.len() - 1
            }
        };
        let b = &mut batches[i];
        let mut r = Ok(());
        if !b.fits(data.len(), info) {
            b.take(|buf, segment, info| r = self.send_segments(buf, segment, info));
        }
        b.push(data, info);
        r
    }

    /// Send every queued batch.
    pub fn flush(&self) -> io::Result<()> {
        let mut r = Ok(());
        for b in self.batches.borrow_mut().iter_mut() {
            b.take(|buf, segment, info| {
                if let Err(e) = self.send_segments(buf, segment, info) {
                    r = Err(e);
                }
            });
        }
        r
    }

    fn send_segments(&self, data: &[u8], segment: usize, info: &SendInfo) -> io::Result<()> {
        let i = self.addrs.iter().position(|a| *a == info.from).unwrap_or(0);
        let s = self.socks.get(i).ok_or_else(|| io::Error::other("no socket"))?;
        let gso = self.gso.get(i).ok_or_else(|| io::Error::other("no socket"))?;
        match gso.send(s, data, segment, info.to, info.ecn) {
            Ok(_) => Ok(()),
            // A full socket buffer is congestion loss; recovery handles it.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Datagrams of one connection, held back until their pacing time.
///
/// With several paths, a datagram held for one path's pacer must not hold
/// up the others: the engine keeps giving packets for paths that may send
/// now (it shows a path whose pacer runs more than a millisecond ahead as
/// full), and held datagrams leave in order when due. A single path stops
/// at its first held datagram, as the engine does not gate it.
#[derive(Default)]
pub struct Outbox {
    held: Vec<(Vec<u8>, SendInfo)>,
}

/// Bound on datagrams held at once (a few per path).
const MAX_HELD: usize = 32;

impl Outbox {
    /// Send what `conn` has to send now. Returns when to call again if a
    /// datagram is held for pacing, or the connection's error.
    pub fn flush(
        &mut self,
        conn: &mut Connection,
        socks: &Sockets,
        buf: &mut [u8],
        now: Instant,
    ) -> Result<Option<Instant>, mpquic::Error> {
        let wake = self.queue(conn, socks, buf, now, usize::MAX).map(|(w, _)| w);
        let _ = socks.flush();
        wake
    }

    /// As [`flush`](Self::flush), but at most `max` datagrams come from the
    /// connection, and what is due may stay in the sockets' batches until
    /// the caller flushes them (full batches go at once). A caller that tops
    /// the connection's streams up between calls keeps its packets full: a
    /// stream that runs dry ends on a short packet, which closes a GSO batch.
    /// Returns the wake-up time and the number of datagrams taken.
    pub fn queue(
        &mut self,
        conn: &mut Connection,
        socks: &Sockets,
        buf: &mut [u8],
        now: Instant,
        max: usize,
    ) -> Result<(Option<Instant>, usize), mpquic::Error> {
        // Due datagrams, oldest first (a path's datagrams keep their order).
        self.held.retain(|(d, info)| {
            if info.at > now + PACING_SLACK {
                return true;
            }
            // Socket errors other than a full buffer mean the local
            // address went away; the path will fail on its own.
            let _ = socks.send_batched(d, info);
            false
        });
        let one_path = conn.paths().count() <= 1;
        // A due timer (an ACK owed) is met only by `send`, even behind a
        // held datagram: else the connection stays due and a loop that
        // serves due connections (the server's) never ends.
        let due = |c: &Connection| c.timeout().is_some_and(|t| t <= now);
        let mut taken = 0;
        while taken < max && self.held.len() < MAX_HELD && (!one_path || self.held.is_empty() || due(conn)) {
            let Some((n, info)) = conn.send(buf, now)? else { break };
            taken += 1;
            let d = buf.get(..n).unwrap_or_default();
            if info.at > now + PACING_SLACK {
                self.held.push((d.to_vec(), info));
            } else {
                let _ = socks.send_batched(d, &info);
            }
        }
        Ok((self.held.iter().map(|(_, i)| i.at).min(), taken))
    }
}

/// The destination connection ID of a QUIC datagram, given the length of the
/// IDs we issue (short headers do not carry it).
pub fn dcid(dgram: &[u8], local_cid_len: usize) -> Option<&[u8]> {
    let first = *dgram.first()?;
    if first & 0x80 != 0 {
        let len = usize::from(*dgram.get(5)?);
        dgram.get(6..6 + len)
    } else {
        dgram.get(1..1 + local_cid_len)
    }
}

/// Open one path from each of `pending` local addresses to `peer` once the
/// engine can (draft-ietf-quic-multipath-21: it needs a connection ID of the
/// server's for each path first, so those stay pending); other refusals go
/// to `refused` and drop the address.
pub fn open_paths(
    conn: &mut Connection,
    pending: &mut Vec<SocketAddr>,
    peer: SocketAddr,
    now: Instant,
    mut refused: impl FnMut(SocketAddr, mpquic::PathError),
) {
    pending.retain(|&local| match conn.probe_path(local, peer, now) {
        Ok(_) => false,
        Err(mpquic::PathError::NoConnectionId) => true,
        Err(e) => {
            refused(local, e);
            false
        }
    });
}

/// A local address to bind: `IP:PORT`, or an IP (any free port). As a clap
/// value parser its error names the forms accepted.
pub fn parse_local_addr(spec: &str) -> Result<SocketAddr, String> {
    spec.parse::<SocketAddr>()
        .or_else(|_| spec.parse::<std::net::IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
        .map_err(|_| format!("bad local address {spec:?}: expected an IP address or IP:PORT"))
}

/// The earliest of two optional deadlines.
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Through `recvmmsg` (GRO on) and through the per-message fallback,
    /// `recv_all` hands on the datagrams of two senders intact, in order
    /// per sender, with their source addresses and ECN marks: a GSO batch
    /// of one and single datagrams of various sizes of the other.
    #[test]
    #[allow(clippy::disallowed_methods)]
    fn recv_all_splits_and_keeps_senders_apart() {
        use mpquic::Ecn;
        for mmsg in [true, false] {
            let mut socks = Sockets::bind(&["127.0.0.1:0".parse().unwrap()]).unwrap();
            socks.recv.borrow_mut().set_on(mmsg);
            let to = socks.local_addrs()[0];
            let (a, b) = (
                std::net::UdpSocket::bind("127.0.0.1:0").unwrap(),
                std::net::UdpSocket::bind("127.0.0.1:0").unwrap(),
            );
            let mut gso_batch: Vec<u8> = (1..=3).flat_map(|i| [i; 1200]).collect();
            gso_batch.extend_from_slice(&[4; 700]);
            Gso::default().send(&a, &gso_batch, 1200, to, Ecn::Ect0).unwrap();
            for (i, len) in [300usize, 1400, 9000].into_iter().enumerate() {
                Gso::without_gso().send(&b, &vec![11 + i as u8; len], len, to, Ecn::NotEct).unwrap();
            }
            let mut got = Vec::new();
            let mut buf = vec![0u8; MAX_DATAGRAM];
            let deadline = Instant::now() + Duration::from_secs(5);
            while got.len() < 7 && Instant::now() < deadline {
                socks.wait(Some(Duration::from_millis(100))).unwrap();
                socks
                    .recv_all(&mut buf, |d, info| {
                        assert!(d.iter().all(|&x| x == d[0]), "datagram intact");
                        assert_eq!(info.to, to);
                        got.push((info.from, d.len(), d[0], info.ecn));
                    })
                    .unwrap();
            }
            let from =
                |s: SocketAddr| got.iter().filter(|g| g.0 == s).map(|g| (g.1, g.2, g.3)).collect::<Vec<_>>();
            let (a, b) = (a.local_addr().unwrap(), b.local_addr().unwrap());
            let e = Ecn::Ect0;
            assert_eq!(from(a), [(1200, 1, e), (1200, 2, e), (1200, 3, e), (700, 4, e)], "recvmmsg: {mmsg}");
            let n = Ecn::NotEct;
            assert_eq!(from(b), [(300, 11, n), (1400, 12, n), (9000, 13, n)], "recvmmsg: {mmsg}");
            assert_eq!(got.len(), 7);
            assert_eq!(socks.recv.borrow().is_on(), mmsg);
        }
    }

    #[test]
    fn dcid_of_long_and_short_headers() {
        let long = [0xc0, 0, 0, 0, 1, 3, 0xaa, 0xbb, 0xcc, 0];
        assert_eq!(dcid(&long, 16), Some(&[0xaa, 0xbb, 0xcc][..]));
        let short = [0x40, 1, 2, 3, 4, 9];
        assert_eq!(dcid(&short, 4), Some(&[1, 2, 3, 4][..]));
        assert_eq!(dcid(&short, 16), None);
        assert_eq!(dcid(&[0xc0, 0, 0, 0, 1, 20, 1], 16), None);
        assert_eq!(dcid(&[], 16), None);
    }

    #[test]
    #[allow(clippy::disallowed_methods)]
    fn earliest_deadline() {
        let t = Instant::now();
        let u = t + Duration::from_secs(1);
        assert_eq!(earliest(Some(u), Some(t)), Some(t));
        assert_eq!(earliest(None, Some(u)), Some(u));
        assert_eq!(earliest(None, None), None);
    }
}
