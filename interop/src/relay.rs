//! A UDP relay between client and server that sends every datagram through
//! the project's link model (`emu::Link`: delay, loss, corruption, MTU), one
//! link per direction and flow, and acts as a NAT: each client address seen
//! on a front socket gets its own back socket towards the server, so the
//! server sees one address per client path, and a rebinding is a new back
//! socket. Front socket i stands for server address i (a multipath server's
//! second address, or a server's preferred address).

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use emu::impair::Impairments;
use emu::loss::LossModel;
use emu::queue::{QueueConfig, QueueKind};
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
    /// Drop-tail queue limit of each link, in packets (default: unlimited).
    pub queue_packets: Option<u64>,
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
    /// The largest IP packet the links carry (UDP payload plus IP and UDP
    /// headers), both directions, from the start.
    pub mtu: Option<u32>,
    /// Once the server sent this many bytes, the links carry IP packets up
    /// to this size only (a step in `LinkConfig::mtu`).
    pub mtu_step: Option<(u64, u32)>,
    /// The server offers the second front as its preferred address (RFC
    /// 9000 §9.6): the fronts are bound before the server starts
    /// ([`Relay::fronts`]).
    pub preferred_address: bool,
}

/// Bytes of one flow (client address on one front socket).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowBytes {
    /// The front socket (server address) the flow goes to.
    pub front: usize,
    /// Client to server.
    pub up: u64,
    /// Server to client.
    pub down: u64,
}

/// Sizes of the datagrams (UDP payloads) one side sent.
#[derive(Clone, Debug, Default)]
pub struct Sizes {
    /// The largest one.
    pub largest: usize,
    /// The largest within the MTU in force when it arrived.
    pub largest_passed: usize,
    /// The largest within the MTU after the MTU step.
    pub largest_after_step: usize,
    /// Datagrams over the MTU in force (the link dropped them), by size.
    pub over_mtu: BTreeMap<usize, u64>,
    /// Of those, the ones sent after the MTU step.
    pub over_mtu_after_step: u64,
}

impl Sizes {
    fn note(&mut self, len: usize, over: bool, stepped: bool) {
        self.largest = self.largest.max(len);
        match (over, stepped) {
            (true, _) => {
                *self.over_mtu.entry(len).or_default() += 1;
                self.over_mtu_after_step += u64::from(stepped);
            }
            (false, true) => {
                self.largest_passed = self.largest_passed.max(len);
                self.largest_after_step = self.largest_after_step.max(len);
            }
            (false, false) => self.largest_passed = self.largest_passed.max(len),
        }
    }

    /// Datagrams over the MTU.
    pub fn over_mtu_count(&self) -> u64 {
        self.over_mtu.values().sum()
    }
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
    /// Version Negotiation packets the server sent.
    pub down_vn: u64,
    /// Datagrams per ECN codepoint (index: the TOS bits, 0 Not-ECT, 1
    /// ECT(1), 2 ECT(0), 3 CE), client to server.
    pub up_ecn: [u64; 4],
    /// The same, server to client.
    pub down_ecn: [u64; 4],
    /// Datagram sizes, client to server.
    pub up_sizes: Sizes,
    /// Datagram sizes, server to client.
    pub down_sizes: Sizes,
    /// The MTU step happened.
    pub mtu_stepped: bool,
    /// Server datagrams that reached a flow's back socket from another
    /// server address than the one its front stands for.
    pub down_wrong_source: u64,
    /// Client datagrams sent to front 0 after the first one sent to another
    /// front (a client that moved to the server's preferred address).
    pub up_old_after_move: u64,
}

/// A Version Negotiation packet: a long header with version 0.
fn is_version_negotiation(dgram: &[u8]) -> bool {
    mpquic::packet::invariant_header(dgram).is_some_and(|h| h.version == 0)
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
    /// Links (up, down) replaced at the MTU step, delivering what they
    /// still hold.
    retired: Vec<(Link, Link)>,
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
        let fronts = servers.iter().map(|s| bind(loopback(s.ip()))).collect::<Result<Vec<_>, _>>()?;
        Relay::start_on(fronts, servers, plan, seed)
    }

    /// `n` front sockets on `ip`'s loopback, bound before the server starts
    /// so that it can offer one as its preferred address.
    pub fn fronts(n: usize, ip: IpAddr) -> std::io::Result<Vec<UdpSocket>> {
        (0..n).map(|_| bind(loopback(ip))).collect()
    }

    /// Starts a relay on front sockets bound beforehand (so that a server
    /// can offer one of them as its preferred address): `fronts[i]` stands
    /// for `servers[i]`.
    pub fn start_on(
        fronts: Vec<UdpSocket>,
        servers: &[SocketAddr],
        plan: Plan,
        seed: u64,
    ) -> std::io::Result<Relay> {
        if fronts.len() != servers.len() {
            let e = format!("{} front sockets for {} server addresses", fronts.len(), servers.len());
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, e));
        }
        let addrs = fronts.iter().map(|s| s.local_addr()).collect::<Result<Vec<_>, _>>()?;
        let mtu = plan.mtu.map(|m| vec![(Duration::ZERO, m)]).unwrap_or_default();
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
            mtu,
            moved: false,
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
    /// The links' MTU schedule so far (`LinkConfig::mtu`).
    mtu: Vec<(Duration, u32)>,
    /// The client sent to a front other than the first.
    moved: bool,
    buf: Vec<u8>,
    out: Vec<Packet>,
    /// Sends with each datagram's ECN bits (one datagram per call).
    tx: mpquic_apps::batch::Gso,
}

/// A relayed datagram's ECN codepoint, as it arrived.
fn ecn(p: &Packet) -> mpquic::Ecn {
    mpquic::Ecn::from_tos(p.ecn)
}

/// A datagram as the links see it: charged its IP and UDP headers too (as
/// the simulator charges them), so that the MTU applies to the IP packet.
fn packet(data: &[u8], ecn: u8, to: SocketAddr) -> Packet {
    let headers = if to.is_ipv4() { 20 + 8 } else { 40 + 8 };
    let size = u32::try_from(data.len() + headers).unwrap_or(u32::MAX);
    Packet { ecn, size, ..Packet::new(data.to_vec()) }
}

impl State {
    fn link(&self, salt: u64) -> Link {
        let mut cfg = LinkConfig::new(Arc::new(Trace::constant(50)));
        cfg.delay = self.plan.delay;
        if let Some(n) = self.plan.queue_packets {
            cfg.queue = QueueConfig { kind: QueueKind::DropTail, packets: Some(n), bytes: None };
        }
        if self.plan.loss > 0.0 {
            cfg.loss = LossModel::Bernoulli { p: self.plan.loss };
        }
        cfg.impair = Impairments { corrupt: self.plan.corrupt, ..Impairments::default() };
        cfg.mtu = self.mtu.clone();
        cfg.seed = self.seed ^ salt.wrapping_mul(0x9e37_79b9);
        Link::new(&cfg)
    }

    /// The MTU step: from now on the links carry packets up to `mtu`. A
    /// link's MTU schedule is fixed when it is built, so every flow gets
    /// new links with the step in theirs; the old ones deliver what they
    /// hold.
    fn step_mtu(&mut self, mtu: u32) {
        self.mtu.push((self.now(), mtu));
        for i in 0..self.flows.len() {
            let salt = 2 * (self.flows.len() + i) as u64;
            let (up, down) = (self.link(salt), self.link(salt + 1));
            let f = &mut self.flows[i];
            f.retired.push((std::mem::replace(&mut f.up, up), std::mem::replace(&mut f.down, down)));
        }
        self.seen.mtu_stepped = true;
    }

    /// Whether a `size`-byte packet (headers charged) is over `link`'s MTU now.
    fn over_mtu(link: &Link, now: Duration, size: u32) -> bool {
        link.mtu(now).is_some_and(|m| size > m)
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
            retired: Vec::new(),
            dead: false,
            bytes: FlowBytes { front, ..FlowBytes::default() },
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
        let next = self
            .flows
            .iter()
            .flat_map(|f| [&f.up, &f.down].into_iter().chain(f.retired.iter().flat_map(|(u, d)| [u, d])))
            .filter_map(|l| l.next_wakeup())
            .min();
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
                self.moved |= fi > 0;
                self.seen.up_old_after_move += u64::from(fi == 0 && self.moved);
                let pkt = packet(&self.buf[..n], ecn, self.servers[fi]);
                let f = &mut self.flows[i];
                let over = State::over_mtu(&f.up, now, pkt.size);
                self.seen.up_sizes.note(n, over, self.seen.mtu_stepped);
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
                let Some((n, from, ecn)) = got else { break };
                if from != self.servers[f.front] {
                    self.seen.down_wrong_source += 1;
                }
                if current.is_some() && rebound {
                    self.seen.rebound_down += n as u64;
                }
                let now = self.now();
                // The Retry's type bits depend on the version.
                let hdr = mpquic::packet::parse_header(&self.buf[..n], 0);
                self.seen.retry |= hdr.is_ok_and(|h| h.ty == mpquic::packet::PacketType::Retry);
                note_version(&mut self.seen.down_versions, &self.buf[..n]);
                self.seen.down_vn += u64::from(is_version_negotiation(&self.buf[..n]));
                self.count_server(n as u64, now);
                if self.dropping(now) || self.flows[i].dead {
                    continue;
                }
                self.down_total += n as u64;
                self.seen.down_ecn[usize::from(ecn & 3)] += 1;
                let f = &mut self.flows[i];
                let pkt = packet(&self.buf[..n], ecn, f.client);
                let over = State::over_mtu(&f.down, now, pkt.size);
                self.seen.down_sizes.note(n, over, self.seen.mtu_stepped);
                f.bytes.down += n as u64;
                f.down.enqueue(now, pkt);
            }
        }
    }

    fn deliver(&mut self) {
        let now = self.now();
        for f in &mut self.flows {
            // Retired links first: they hold the older packets.
            let ups = f.retired.iter_mut().map(|(u, _)| u).chain(std::iter::once(&mut f.up));
            for link in ups {
                link.dequeue_ready(now, &mut self.out);
            }
            for p in self.out.drain(..) {
                let _ = self.tx.send(&f.back, &p.data, p.data.len().max(1), self.servers[f.front], ecn(&p));
            }
            let downs = f.retired.iter_mut().map(|(_, d)| d).chain(std::iter::once(&mut f.down));
            for link in downs {
                link.dequeue_ready(now, &mut self.out);
            }
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
        if let Some((_, mtu)) = self.plan.mtu_step.filter(|(at, _)| down >= *at) {
            self.plan.mtu_step = None;
            self.step_mtu(mtu);
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
