//! SO_REUSEPORT workers: each worker thread has its own socket on every
//! listening address, and the kernel steers each datagram to the worker
//! named by the first byte of its destination connection ID (a classic BPF
//! program on the socket group), where every worker's connection IDs start
//! with its index. So a multipath client's later paths — new 4-tuples,
//! which the kernel's own hash would scatter — reach the worker that holds
//! their connection. A client's first Initial carries an ID of its own
//! choosing: its first byte spreads new connections over the workers.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use socket2::{Domain, Protocol, Socket, Type};

/// Most workers (the first byte of a connection ID names one).
pub const MAX_WORKERS: usize = 64;

/// `workers` sockets on each address, bound in worker order so that the
/// socket group's index is the worker index, with the steering program
/// attached. Returns each worker's sockets (in address order), or an error
/// if the kernel refuses SO_REUSEPORT or the program (the caller then runs
/// one worker).
pub fn bind(addrs: &[SocketAddr], workers: usize) -> io::Result<Vec<Vec<UdpSocket>>> {
    if !(1..=MAX_WORKERS).contains(&workers) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("workers must be 1 to {MAX_WORKERS}"),
        ));
    }
    let mut per_worker: Vec<Vec<UdpSocket>> = (0..workers).map(|_| Vec::new()).collect();
    for &addr in addrs {
        let mut bound = addr;
        for (w, socks) in per_worker.iter_mut().enumerate() {
            let s = reuseport_socket(bound)
                .map_err(|e| io::Error::new(e.kind(), format!("bind {bound}: {e}")))?;
            if w == 0 {
                // Port 0 resolved by the first bind; the others join it.
                bound = s.local_addr()?.as_socket().unwrap_or(bound);
                steer_by_cid(&s, workers)?;
            }
            socks.push(s.into());
        }
    }
    Ok(per_worker)
}

fn reuseport_socket(addr: SocketAddr) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    setsockopt(&s, libc::SO_REUSEPORT, &1 as *const libc::c_int, std::mem::size_of::<libc::c_int>())
        .map_err(|e| io::Error::new(e.kind(), format!("SO_REUSEPORT: {e}")))?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    Ok(s)
}

/// The classic BPF program: worker = DCID's first byte mod `workers` (the
/// byte at offset 6 of a long header, 1 of a short one; the kernel runs it
/// on the UDP payload).
fn program(workers: usize) -> [libc::sock_filter; 7] {
    let op = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    const LDB: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_ABS) as u16;
    const JSET: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
    const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
    const MOD: u16 = (libc::BPF_ALU | libc::BPF_MOD | libc::BPF_K) as u16;
    const RET_A: u16 = (libc::BPF_RET | libc::BPF_A) as u16;
    [
        op(LDB, 0, 0, 0),
        op(JSET, 0, 2, 0x80),
        op(LDB, 0, 0, 6),
        op(JA, 0, 0, 1),
        op(LDB, 0, 0, 1),
        op(MOD, 0, 0, workers as u32),
        op(RET_A, 0, 0, 0),
    ]
}

fn steer_by_cid(sock: &Socket, workers: usize) -> io::Result<()> {
    let mut code = program(workers);
    let prog = libc::sock_fprog { len: code.len() as u16, filter: code.as_mut_ptr() };
    setsockopt(sock, libc::SO_ATTACH_REUSEPORT_CBPF, &prog, std::mem::size_of::<libc::sock_fprog>())
        .map_err(|e| io::Error::new(e.kind(), format!("SO_ATTACH_REUSEPORT_CBPF: {e}")))
}

/// A SOL_SOCKET option; `value` points to `len` live bytes (the kernel
/// copies them).
fn setsockopt<T>(sock: &Socket, opt: libc::c_int, value: *const T, len: usize) -> io::Result<()> {
    // SAFETY: a valid fd; `value` is live for the call, as the caller promises.
    let rc = unsafe {
        libc::setsockopt(sock.as_raw_fd(), libc::SOL_SOCKET, opt, value.cast(), len as libc::socklen_t)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Datagrams whose DCID starts with byte w reach worker w's socket,
    /// short headers and long headers alike, whatever port they come from.
    #[test]
    fn datagrams_reach_the_worker_their_connection_id_names() {
        let workers = 3;
        let groups = bind(&["127.0.0.1:0".parse().unwrap()], workers).expect("SO_REUSEPORT group");
        let to = groups[0][0].local_addr().unwrap();
        for g in &groups {
            assert_eq!(g[0].local_addr().unwrap(), to);
            g[0].set_nonblocking(false).unwrap();
            g[0].set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        }
        for w in 0..workers as u8 {
            for sender in 0..4 {
                let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
                let short = [0x40 | sender, w, 9, 9, 9];
                let long = [0xc0, 0, 0, 0, 1, 8, w, 7, 7, 7, 7, 7, 7, 7];
                for d in [&short[..], &long[..]] {
                    tx.send_to(d, to).unwrap();
                    let mut buf = [0u8; 64];
                    let (n, _) = groups[w as usize][0].recv_from(&mut buf).expect("steered to its worker");
                    assert_eq!(&buf[..n], d);
                }
            }
        }
        assert!(bind(&["127.0.0.1:0".parse().unwrap()], 0).is_err());
    }
}
