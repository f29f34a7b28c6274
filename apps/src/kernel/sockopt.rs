//! What the kernel tells about a TCP or MPTCP connection: `TCP_INFO`, and
//! for MPTCP the `SOL_MPTCP` options of `linux/mptcp.h` (`MPTCP_INFO`,
//! `MPTCP_TCPINFO`, `MPTCP_SUBFLOW_ADDRS`), plus the congestion controller
//! by name (`TCP_CONGESTION`).

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, RawFd};

/// `SOL_MPTCP` (linux/socket.h); libc does not define it.
const SOL_MPTCP: libc::c_int = 284;
/// `MPTCP_INFO`: the connection-level `struct mptcp_info`.
const MPTCP_INFO: libc::c_int = 1;
/// `MPTCP_TCPINFO`: one `struct tcp_info` per subflow.
const MPTCP_TCPINFO: libc::c_int = 2;
/// `MPTCP_SUBFLOW_ADDRS`: local and remote address per subflow.
const MPTCP_SUBFLOW_ADDRS: libc::c_int = 3;
/// Size of `struct mptcp_subflow_addrs`: two `sockaddr_storage` unions.
const SUBFLOW_ADDRS_SIZE: usize = 2 * 128;
/// Subflows asked for at most (the kernel reports how many there are).
const MAX_SUBFLOWS: usize = 16;

/// The head of `struct mptcp_info` (linux/mptcp.h, the fields every kernel
/// since 5.12 has); the kernel fills as much as it is given.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct MptcpInfoHead {
    subflows: u8,
    add_addr_signal: u8,
    add_addr_accepted: u8,
    subflows_max: u8,
    add_addr_signal_max: u8,
    add_addr_accepted_max: u8,
    flags: u32,
    token: u32,
    write_seq: u64,
    snd_una: u64,
    rcv_nxt: u64,
}

/// `struct mptcp_subflow_data`, the header of the array options.
#[repr(C, align(8))]
#[derive(Clone, Copy, Default)]
struct SubflowData {
    size_subflow_data: u32,
    num_subflows: u32,
    size_kernel: u32,
    size_user: u32,
}

/// The connection-level MPTCP state.
#[derive(Clone, Copy, Debug, Default)]
pub struct MptcpInfo {
    /// Extra subflows (beyond the first) the connection has.
    pub subflows: u8,
    /// The limit on extra subflows (`ip mptcp limits`).
    pub subflows_max: u8,
    /// ADD_ADDRs accepted from the peer.
    pub add_addr_accepted: u8,
}

/// One subflow (or the one TCP connection).
#[derive(Clone, Copy)]
pub struct Subflow {
    /// Local address, when the kernel said.
    pub local: Option<SocketAddr>,
    /// Remote address, when the kernel said.
    pub peer: Option<SocketAddr>,
    /// The subflow's `TCP_INFO`.
    pub tcp: libc::tcp_info,
}

fn getsockopt_raw(fd: RawFd, level: libc::c_int, name: libc::c_int, buf: &mut [u8]) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is valid for len bytes, and the kernel writes at most len.
    let r = unsafe { libc::getsockopt(fd, level, name, buf.as_mut_ptr().cast(), &mut len) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(len as usize)
}

/// Reads a plain-old-data struct from the start of `bytes` (zero-padded).
fn read_pod<T: Copy + Default>(bytes: &[u8]) -> T {
    let mut v = T::default();
    let n = bytes.len().min(size_of::<T>());
    // SAFETY: T is a repr(C) struct of integers (any bit pattern is valid) and
    // at most size_of::<T>() bytes are copied into it.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), (&mut v as *mut T).cast::<u8>(), n) };
    v
}

/// `TCP_INFO`: on an MPTCP socket, the first subflow's.
pub fn tcp_info(sock: &impl AsRawFd) -> io::Result<libc::tcp_info> {
    let mut buf = vec![0u8; size_of::<libc::tcp_info>()];
    let n = getsockopt_raw(sock.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, &mut buf)?;
    Ok(tcp_info_from(&buf[..n]))
}

/// A `struct tcp_info` from the kernel's bytes (zero-padded where it gave fewer).
fn tcp_info_from(bytes: &[u8]) -> libc::tcp_info {
    // SAFETY: tcp_info is a repr(C) struct of integers: all zeroes is valid.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let n = bytes.len().min(size_of::<libc::tcp_info>());
    // SAFETY: at most the struct's size is copied into it.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), (&mut info as *mut libc::tcp_info).cast::<u8>(), n)
    };
    info
}

/// `MPTCP_INFO`; `None` when the socket is plain TCP or fell back to it (the
/// peer did not speak MPTCP): the kernel then refuses `SOL_MPTCP` options.
pub fn mptcp_info(sock: &impl AsRawFd) -> Option<MptcpInfo> {
    let mut buf = [0u8; size_of::<MptcpInfoHead>()];
    let n = getsockopt_raw(sock.as_raw_fd(), SOL_MPTCP, MPTCP_INFO, &mut buf).ok()?;
    let h: MptcpInfoHead = read_pod(&buf[..n]);
    Some(MptcpInfo {
        subflows: h.subflows,
        subflows_max: h.subflows_max,
        add_addr_accepted: h.add_addr_accepted,
    })
}

/// One of the array options: the elements' bytes, each `stride` long.
fn subflow_array(fd: RawFd, name: libc::c_int, elem: usize) -> io::Result<Vec<Vec<u8>>> {
    let head = size_of::<SubflowData>();
    let mut buf = vec![0u8; head + MAX_SUBFLOWS * elem];
    let req = SubflowData { size_subflow_data: head as u32, size_user: elem as u32, ..Default::default() };
    // SAFETY: SubflowData is repr(C) integers; buf holds at least `head` bytes.
    let req_bytes = unsafe { std::slice::from_raw_parts((&req as *const SubflowData).cast::<u8>(), head) };
    buf[..head].copy_from_slice(req_bytes);
    let len = getsockopt_raw(fd, SOL_MPTCP, name, &mut buf)?;
    let got: SubflowData = read_pod(&buf[..head.min(len)]);
    let stride = got.size_user as usize;
    let n = (got.num_subflows as usize).min(len.saturating_sub(head) / stride.max(1));
    Ok((0..n).map(|i| buf[head + i * stride..head + (i + 1) * stride].to_vec()).collect())
}

/// A `sockaddr_in` / `sockaddr_in6` in kernel layout.
fn sockaddr(b: &[u8]) -> Option<SocketAddr> {
    let family = u16::from_ne_bytes([*b.first()?, *b.get(1)?]);
    let port = u16::from_be_bytes([*b.get(2)?, *b.get(3)?]);
    match family as libc::c_int {
        libc::AF_INET => {
            let ip: [u8; 4] = b.get(4..8)?.try_into().ok()?;
            Some(SocketAddrV4::new(Ipv4Addr::from(ip), port).into())
        }
        libc::AF_INET6 => {
            let ip: [u8; 16] = b.get(8..24)?.try_into().ok()?;
            Some(SocketAddrV6::new(Ipv6Addr::from(ip), port, 0, 0).into())
        }
        _ => None,
    }
}

/// Every subflow of an MPTCP connection with its `TCP_INFO` and addresses;
/// for plain TCP (or a fallback) the one connection.
pub fn subflows(sock: &socket2::Socket) -> io::Result<Vec<Subflow>> {
    let fd = sock.as_raw_fd();
    let infos = match subflow_array(fd, MPTCP_TCPINFO, size_of::<libc::tcp_info>()) {
        Ok(v) if !v.is_empty() => v,
        _ => {
            let tcp = tcp_info(sock)?;
            let addr = |a: io::Result<socket2::SockAddr>| a.ok().and_then(|a| a.as_socket());
            return Ok(vec![Subflow { local: addr(sock.local_addr()), peer: addr(sock.peer_addr()), tcp }]);
        }
    };
    let addrs = subflow_array(fd, MPTCP_SUBFLOW_ADDRS, SUBFLOW_ADDRS_SIZE).unwrap_or_default();
    Ok(infos
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let a = addrs.get(i);
            Subflow {
                local: a.and_then(|a| sockaddr(&a[..128])),
                peer: a.and_then(|a| sockaddr(&a[128..])),
                tcp: tcp_info_from(b),
            }
        })
        .collect())
}

/// Sets the congestion controller by name; the error says where the
/// available ones are listed and how to load one.
pub fn set_congestion(sock: &impl AsRawFd, name: &str) -> Result<(), String> {
    // SAFETY: name is valid for its length; the kernel copies at most that.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    Err(format!(
        "congestion control {name:?} refused ({e}); available (/proc/sys/net/ipv4/tcp_available_congestion_control): {available}; load it with `modprobe tcp_{name}` (as root)"
    ))
}

/// The congestion controller in use.
pub fn congestion(sock: &impl AsRawFd) -> io::Result<String> {
    let mut buf = [0u8; 16];
    let n = getsockopt_raw(sock.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, &mut buf)?;
    let s = &buf[..n];
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    Ok(String::from_utf8_lossy(&s[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_sockaddrs_parse() {
        let mut b = [0u8; 128];
        b[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        b[2..4].copy_from_slice(&4433u16.to_be_bytes());
        b[4..8].copy_from_slice(&[100, 64, 0, 2]);
        assert_eq!(sockaddr(&b), Some("100.64.0.2:4433".parse().unwrap()));
        b[..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        b[8..24].copy_from_slice(&Ipv6Addr::LOCALHOST.octets());
        assert_eq!(sockaddr(&b), Some("[::1]:4433".parse().unwrap()));
        assert_eq!(sockaddr(&[0u8; 128]), None);
        assert_eq!(sockaddr(&b[..3]), None);
    }

    #[test]
    fn loopback_tcp_reports_one_subflow_and_its_controller() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = socket2::Socket::from(std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap());
        let _accepted = l.accept().unwrap();
        let s = subflows(&c).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].peer, Some(l.local_addr().unwrap()));
        assert!(mptcp_info(&c).is_none(), "plain TCP has no MPTCP info");
        set_congestion(&c, "reno").unwrap();
        assert_eq!(congestion(&c).unwrap(), "reno");
        let e = set_congestion(&c, "no-such-cc").unwrap_err();
        assert!(
            e.contains("tcp_available_congestion_control") && e.contains("modprobe tcp_no-such-cc"),
            "{e}"
        );
    }
}
