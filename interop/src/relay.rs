//! A UDP relay between client and server that sends every datagram through
//! the project's link model (`emu::Link`: delay, loss, corruption), one link
//! per direction and flow, and acts as a NAT: each client address seen on a
//! front socket gets its own back socket towards the server, so the server
//! sees one address per client path, and a rebinding is a new back socket.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use emu::impair::Impairments;
use emu::loss::LossModel;
use emu::{Link, LinkConfig, Packet, Stage, Trace};

/// A NAT rebinding of the first flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rebind {
    /// New source port.
    Port,
    /// New source address (and port).
    Addr,
}

/// What the relay does to the traffic.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// One-way delay of each direction.
    pub delay: Duration,
    /// Random loss per datagram, both directions.
    pub loss: f64,
    /// Probability of one flipped bit per datagram, both directions.
    pub corrupt: f64,
    /// Once the server sent this many bytes, drop everything for this long.
    pub blackhole: Option<(u64, Duration)>,
    /// Once the server sent this many bytes, rebind the first flow.
    pub rebind: Option<(u64, Rebind)>,
    /// Once the server sent this many bytes, drop the second flow for good.
    pub kill_second_flow: Option<u64>,
    /// Forward only the client's first flight, then nothing from it for a
    /// second, counting what the server sends (the anti-amplification limit).
    pub amplification: bool,
}

/// Bytes of one flow (client address on one front socket).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowBytes {
    /// Client to server.
    pub up: u64,
    /// Server to client.
    pub down: u64,
}

/// What the relay saw.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// Per flow, in order of appearance.
    pub flows: Vec<FlowBytes>,
    /// The server sent a Retry.
    pub retry: bool,
    /// (client's first flight, server bytes until the client's cut ended).
    pub amplification: Option<(u64, u64)>,
    /// Rebindings done.
    pub rebinds: u32,
    /// Server bytes that reached a rebound flow's new address (the server
    /// followed the client; the old mapping lingers, so it need not).
    pub rebound_down: u64,
    /// 0-RTT packets the clients sent.
    pub zero_rtt: u64,
    /// QUIC versions of the client's long headers, in order of appearance.
    pub up_versions: Vec<u32>,
    /// QUIC versions of the server's long headers, in order of appearance.
    pub down_versions: Vec<u32>,
    /// Datagrams per ECN codepoint (index: the TOS bits, 0 Not-ECT, 1
    /// ECT(1), 2 ECT(0), 3 CE), client to server.
    pub up_ecn: [u64; 4],
    /// The same, server to client.
    pub down_ecn: [u64; 4],
}

/// Note the version of a long-header datagram (Version Negotiation aside).
fn note_version(seen: &mut Vec<u32>, dgram: &[u8]) {
    let v = mpquic::packet::invariant_header(dgram).map_or(0, |h| h.version);
    if v != 0 && !seen.contains(&v) {
        seen.push(v);
    }
}

struct Flow {
    front: usize,
    client: SocketAddr,
    back: UdpSocket,
    /// Back sockets before rebindings: a NAT's old mapping lingers, so what
    /// the server still sends there arrives (only new packets use `back`).
    old: Vec<UdpSocket>,
    up: Link,
    down: Link,
    dead: bool,
    bytes: FlowBytes,
}

/// A running relay.
pub struct Relay {
    /// Where clients send: front socket i forwards to server address i.
    pub fronts: Vec<SocketAddr>,
    stop: Arc<AtomicBool>,
    join: Option<JoinHandle<Seen>>,
}

impl Relay {
    /// Starts a relay with one front socket per server address.
    pub fn start(servers: &[SocketAddr], plan: Plan, seed: u64) -> std::io::Result<Relay> {
        let mut fronts = Vec::new();
        for s in servers {
            fronts.push(bind(loopback(s.ip()))?);
        }
        let addrs = fronts.iter().map(|s| s.local_addr()).collect::<Result<Vec<_>, _>>()?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut state = State {
            fronts,
            servers: servers.to_vec(),
            flows: Vec::new(),
            by_client: HashMap::new(),
            plan,
            seed,
            start: Instant::now(),
            seen: Seen::default(),
            down_total: 0,
            blackhole_until: None,
            amp: None,
            buf: vec![0u8; 65536],
            out: Vec::new(),
            tx: mpquic_apps::batch::Gso::without_gso(),
        };
        let s = stop.clone();
        let join = std::thread::Builder::new().name("relay".into()).spawn(move || {
            while !s.load(Ordering::Relaxed) {
                state.turn();
            }
            state.seen.flows = state.flows.iter().map(|f| f.bytes).collect();
            state.seen
        })?;
        Ok(Relay { fronts: addrs, stop, join: Some(join) })
    }

    /// Stops the relay and returns what it saw.
    pub fn finish(mut self) -> Seen {
        self.stop.store(true, Ordering::Relaxed);
        self.join.take().and_then(|j| j.join().ok()).unwrap_or_default()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The loopback address of `ip`'s family.
pub fn loopback(ip: IpAddr) -> IpAddr {
    if ip.is_ipv6() {
        IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)
    } else {
        IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
    }
}

/// A non-blocking UDP socket on `ip`, any port, that reports each
/// datagram's ECN bits.
pub fn bind(ip: IpAddr) -> std::io::Result<UdpSocket> {
    let s = UdpSocket::bind(SocketAddr::new(ip, 0))?;
    s.set_nonblocking(true)?;
    mpquic_apps::batch::enable_ecn_recv(&s, ip.is_ipv6());
    Ok(s)
}

/// One datagram from `sock` into `buf`: its length, sender and ECN bits.
fn recv(sock: &UdpSocket, buf: &mut [u8]) -> Option<(usize, SocketAddr, u8)> {
    let r = mpquic_apps::batch::recv(sock, buf).ok()?;
    Some((r.len, r.from, r.ecn.tos_bits()))
}

/// Waits until one of `socks` is readable or `timeout` passed.
pub fn wait(socks: &[&UdpSocket], timeout: Duration) {
    let mut fds: Vec<libc::pollfd> =
        socks.iter().map(|s| libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let ms = timeout.as_millis().clamp(0, 50) as libc::c_int;
    // SAFETY: `fds` is a valid array of `fds.len()` pollfd structures.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}

struct State {
    fronts: Vec<UdpSocket>,
    servers: Vec<SocketAddr>,
    flows: Vec<Flow>,
    by_client: HashMap<(usize, SocketAddr), usize>,
    plan: Plan,
    seed: u64,
    start: Instant,
    seen: Seen,
    down_total: u64,
    blackhole_until: Option<Duration>,
    /// (client bytes let through, when the cut began, server bytes since
    /// the start).
    amp: Option<(u64, Option<Duration>, u64)>,
    buf: Vec<u8>,
    out: Vec<Packet>,
    /// Sends with each datagram's ECN bits (one datagram per call).
    tx: mpquic_apps::batch::Gso,
}

/// A relayed datagram's ECN codepoint, as it arrived.
fn ecn(p: &Packet) -> mpquic::Ecn {
    mpquic::Ecn::from_tos(p.ecn)
}

impl State {
    fn link(&self, salt: u64) -> Link {
        let mut cfg = LinkConfig::new(Arc::new(Trace::constant(50)));
        cfg.delay = self.plan.delay;
        if self.plan.loss > 0.0 {
            cfg.loss = LossModel::Bernoulli { p: self.plan.loss };
        }
        cfg.impair = Impairments { corrupt: self.plan.corrupt, ..Impairments::default() };
        cfg.seed = self.seed ^ salt.wrapping_mul(0x9e37_79b9);
        Link::new(&cfg)
    }

    fn flow(&mut self, front: usize, client: SocketAddr) -> Option<usize> {
        if let Some(&i) = self.by_client.get(&(front, client)) {
            return Some(i);
        }
        let back = bind(loopback(client.ip())).ok()?;
        let n = self.flows.len() as u64;
        let (up, down) = (self.link(2 * n), self.link(2 * n + 1));
        self.flows.push(Flow {
            front,
            client,
            back,
            old: Vec::new(),
            up,
            down,
            dead: false,
            bytes: FlowBytes::default(),
        });
        self.by_client.insert((front, client), self.flows.len() - 1);
        Some(self.flows.len() - 1)
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn dropping(&self, now: Duration) -> bool {
        self.blackhole_until.is_some_and(|t| now < t)
    }

    fn turn(&mut self) {
        self.read_fronts();
        self.read_backs();
        self.deliver();
        self.triggers();
        let now = self.now();
        let next = self.flows.iter().flat_map(|f| [f.up.next_wakeup(), f.down.next_wakeup()]).flatten().min();
        let timeout =
            next.map_or(Duration::from_millis(5), |t| t.saturating_sub(now)).min(Duration::from_millis(5));
        if !timeout.is_zero() {
            let mut socks: Vec<&UdpSocket> = self.fronts.iter().collect();
            socks.extend(self.flows.iter().flat_map(|f| std::iter::once(&f.back).chain(&f.old)));
            wait(&socks, timeout);
        }
    }

    fn read_fronts(&mut self) {
        for fi in 0..self.fronts.len() {
            while let Some((n, from, ecn)) = recv(&self.fronts[fi], &mut self.buf) {
                let now = self.now();
                let Some(i) = self.flow(fi, from) else { continue };
                note_version(&mut self.seen.up_versions, &self.buf[..n]);
                if self.cut_client(n as u64, now) || self.dropping(now) || self.flows[i].dead {
                    continue;
                }
                self.seen.zero_rtt += zero_rtt_packets(&self.buf[..n]);
                self.seen.up_ecn[usize::from(ecn & 3)] += 1;
                let pkt = Packet { ecn, ..Packet::new(self.buf[..n].to_vec()) };
                let f = &mut self.flows[i];
                f.bytes.up += n as u64;
                f.up.enqueue(now, pkt);
            }
        }
    }

    /// The amplification case: the client's first flight passes (everything
    /// it sends before the server answers; a ClientHello with a large key
    /// share spans two datagrams), then nothing from the client for a second.
    fn cut_client(&mut self, len: u64, now: Duration) -> bool {
        if !self.plan.amplification {
            return false;
        }
        match &mut self.amp {
            None => {
                self.amp = Some((len, None, 0));
                false
            }
            Some((credit, None, _)) => {
                *credit += len;
                false
            }
            Some((_, Some(cut), _)) => now < *cut + Duration::from_secs(1),
        }
    }

    /// Counts what the server sends until the client's second is over.
    fn count_server(&mut self, len: u64, now: Duration) {
        if let Some((credit, cut, sent)) = &mut self.amp {
            if cut.is_none_or(|c| now < c + Duration::from_secs(1)) {
                *sent += len;
                cut.get_or_insert(now);
                self.seen.amplification = Some((*credit, *sent));
            }
        }
    }

    fn read_backs(&mut self) {
        for i in 0..self.flows.len() {
            loop {
                let f = &self.flows[i];
                let (current, rebound) = (recv(&f.back, &mut self.buf), !f.old.is_empty());
                let got = current.or_else(|| f.old.iter().find_map(|s| recv(s, &mut self.buf)));
                let Some((n, _, ecn)) = got else { break };
                if current.is_some() && rebound {
                    self.seen.rebound_down += n as u64;
                }
                let now = self.now();
                // The Retry's type bits depend on the version.
                let hdr = mpquic::packet::parse_header(&self.buf[..n], 0);
                self.seen.retry |= hdr.is_ok_and(|h| h.ty == mpquic::packet::PacketType::Retry);
                note_version(&mut self.seen.down_versions, &self.buf[..n]);
                self.count_server(n as u64, now);
                if self.dropping(now) || self.flows[i].dead {
                    continue;
                }
                self.down_total += n as u64;
                self.seen.down_ecn[usize::from(ecn & 3)] += 1;
                let pkt = Packet { ecn, ..Packet::new(self.buf[..n].to_vec()) };
                let f = &mut self.flows[i];
                f.bytes.down += n as u64;
                f.down.enqueue(now, pkt);
            }
        }
    }

    fn deliver(&mut self) {
        let now = self.now();
        for f in &mut self.flows {
            f.up.dequeue_ready(now, &mut self.out);
            for p in self.out.drain(..) {
                let _ = self.tx.send(&f.back, &p.data, p.data.len().max(1), self.servers[f.front], ecn(&p));
            }
            f.down.dequeue_ready(now, &mut self.out);
            for p in self.out.drain(..) {
                let _ = self.tx.send(&self.fronts[f.front], &p.data, p.data.len().max(1), f.client, ecn(&p));
            }
        }
    }

    fn triggers(&mut self) {
        let (now, down) = (self.now(), self.down_total);
        if let Some((_, d)) = self.plan.blackhole.filter(|(at, _)| down >= *at) {
            self.blackhole_until = Some(now + d);
            self.plan.blackhole = None;
        }
        if let Some((_, how)) = self.plan.rebind.filter(|(at, _)| down >= *at) {
            self.plan.rebind = None;
            if let Some(f) = self.flows.first_mut() {
                let ip = match (how, f.client.ip()) {
                    (Rebind::Addr, IpAddr::V4(_)) => IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2)),
                    (_, ip) => loopback(ip),
                };
                if let Ok(s) = bind(ip) {
                    f.old.push(std::mem::replace(&mut f.back, s));
                    self.seen.rebinds += 1;
                }
            }
        }
        if self.plan.kill_second_flow.is_some_and(|at| down >= at) && self.flows.len() > 1 {
            self.plan.kill_second_flow = None;
            self.flows[1].dead = true;
        }
    }
}

/// The 0-RTT packets among a datagram's coalesced packets.
fn zero_rtt_packets(mut dgram: &[u8]) -> u64 {
    use mpquic::packet::{parse_header, PacketType};
    let mut n = 0;
    while let Ok(h) = parse_header(dgram, 0) {
        n += u64::from(h.ty == PacketType::ZeroRtt);
        if !h.is_long() || h.packet_len == 0 || h.packet_len >= dgram.len() {
            break;
        }
        dgram = &dgram[h.packet_len..];
    }
    n
}
