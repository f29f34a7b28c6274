//! Drives a sans-IO engine (mpquic, or quiche, which reads its clock itself)
//! over UDP sockets: datagrams in, timers, datagrams out, sleep in `poll`;
//! the application on top is hq-interop or HTTP/3 ([`ClientApp`],
//! [`ServerApp`]).

use std::net::{SocketAddr, UdpSocket};

use mpquic::{Ecn, RecvInfo};
use std::time::{Duration, Instant};

use crate::hq::{self, Streams};
use crate::http3::{self, Holds, H3};
use crate::relay::wait;
use crate::{Side, Spec};

/// What a client fetches its files with over an engine `E`.
pub trait ClientApp<E> {
    /// Sends the requests there is room for and reads what arrived.
    fn step(&mut self, e: &mut E);
    /// Every file answered (intact or not), or the application failed.
    fn done(&self) -> bool;
    /// Body bytes received.
    fn received(&self) -> u64;
    /// Body bytes expected.
    fn total(&self) -> u64;
    /// Files received intact.
    fn ok(&self) -> usize;
    /// What went wrong (taken).
    fn take_errors(&mut self) -> Vec<String>;
}

/// What a server runs on one connection `C`.
pub trait ServerApp<C> {
    /// Reads requests and sends what flow control allows.
    fn step(&mut self, c: &mut C);
    /// Files served to the end.
    fn served(&self) -> usize;
    /// What went wrong (taken).
    fn take_errors(&mut self) -> Vec<String>;
}

/// A connection as the drivers see it.
pub trait Engine: Streams {
    /// One datagram received on local address `info.to`, with its ECN bits.
    fn recv(&mut self, buf: &mut [u8], info: RecvInfo);
    /// The next datagram: (length, from, to, ECN codepoint).
    fn send(&mut self, out: &mut [u8]) -> Option<(usize, SocketAddr, SocketAddr, Ecn)>;
    /// When `on_timeout` is due.
    fn timeout(&self) -> Option<Instant>;
    /// Fires due timers.
    fn on_timeout(&mut self);
    /// Handshake complete.
    fn established(&self) -> bool;
    /// Closed or draining to its end.
    fn closed(&self) -> bool;
    /// Why it closed (errors of either side).
    fn why_closed(&self) -> String;
    /// Closes with NO_ERROR.
    fn close(&mut self);
    /// Called every turn with the client's progress (multipath actions).
    fn tick(&mut self, _received: u64, _total: u64) {}
    /// Client: 0-RTT keys are ready, so requests may go before the
    /// handshake completes.
    fn early_data(&self) -> bool {
        false
    }
}

/// The sockets of one endpoint: a datagram goes out of the socket bound to
/// its `from` address (the first one otherwise).
pub struct Sockets {
    socks: Vec<UdpSocket>,
    locals: Vec<SocketAddr>,
    buf: Vec<u8>,
    /// Sends with each datagram's ECN bits.
    tx: mpquic_apps::batch::Gso,
}

impl Sockets {
    /// Wraps bound, non-blocking sockets (and asks them for ECN bits).
    pub fn new(socks: Vec<UdpSocket>) -> std::io::Result<Sockets> {
        let locals: Vec<SocketAddr> = socks.iter().map(|s| s.local_addr()).collect::<Result<_, _>>()?;
        for (s, l) in socks.iter().zip(&locals) {
            mpquic_apps::batch::enable_ecn_recv(s, l.is_ipv6());
        }
        Ok(Sockets { socks, locals, buf: vec![0u8; 65536], tx: mpquic_apps::batch::Gso::without_gso() })
    }

    /// Local addresses, in order.
    pub fn locals(&self) -> &[SocketAddr] {
        &self.locals
    }

    /// Reads everything waiting; hands each datagram to `f(buf, info)`.
    pub fn input(&mut self, mut f: impl FnMut(&mut [u8], RecvInfo)) {
        for (s, &to) in self.socks.iter().zip(&self.locals) {
            for _ in 0..256 {
                let Ok(r) = mpquic_apps::batch::recv(s, &mut self.buf) else { break };
                f(&mut self.buf[..r.len], RecvInfo { ecn: r.ecn, ..RecvInfo::new(r.from, to) });
            }
        }
    }

    /// Sends one datagram with ECN codepoint `ecn` from the socket bound to
    /// `from`.
    pub fn send(&self, data: &[u8], (from, to): (SocketAddr, SocketAddr), ecn: Ecn) {
        let i = self.locals.iter().position(|l| *l == from).unwrap_or(0);
        let _ = self.tx.send(&self.socks[i], data, data.len().max(1), to, ecn);
    }

    /// Sends what `e` has (up to a batch, so that input is not starved).
    pub fn output(&self, e: &mut dyn Engine) {
        let mut out = [0u8; 1500];
        for _ in 0..128 {
            let Some((n, from, to, ecn)) = e.send(&mut out) else { break };
            self.send(&out[..n], (from, to), ecn);
        }
    }

    /// Sleeps until a datagram arrives or `until` (at most 5 ms).
    pub fn wait(&self, until: Option<Instant>) {
        let d = until.map_or(Duration::from_millis(5), |t| t.saturating_duration_since(Instant::now()));
        if !d.is_zero() {
            wait(&self.socks.iter().collect::<Vec<_>>(), d.min(Duration::from_millis(5)));
        }
    }
}

/// Fetches `spec`'s files on one connection, over hq-interop or (`spec.h3`)
/// over HTTP/3 with the engine's own HTTP/3 stack `H`, adding the outcome
/// to `side`.
pub fn fetch<E, H>(
    e: &mut E,
    socks: &mut Sockets,
    spec: &Spec,
    deadline: Instant,
    side: &mut Side,
) -> Result<(), String>
where
    E: Engine + Holds<H::Conn>,
    H: H3,
{
    if spec.h3 {
        run_app(e, socks, &mut http3::Client::<H>::new(spec.files.clone()), deadline, side)
    } else {
        run_app(e, socks, &mut hq::Client::new(spec.files.clone()), deadline, side)
    }
}

fn run_app<E: Engine, A: ClientApp<E>>(
    e: &mut E,
    socks: &mut Sockets,
    app: &mut A,
    deadline: Instant,
    side: &mut Side,
) -> Result<(), String> {
    let res = run_client(e, socks, app, deadline);
    side.files += app.ok();
    side.errors.extend(app.take_errors());
    res
}

/// Runs one client connection until every file is in, it closes, or the deadline.
pub fn run_client<E: Engine, A: ClientApp<E>>(
    e: &mut E,
    socks: &mut Sockets,
    app: &mut A,
    deadline: Instant,
) -> Result<(), String> {
    let total = app.total();
    // With 0-RTT the requests go with the first flight.
    if e.early_data() {
        app.step(e);
    }
    socks.output(e);
    loop {
        socks.input(|buf, info| e.recv(buf, info));
        if e.timeout().is_some_and(|t| t <= Instant::now()) {
            e.on_timeout();
        }
        if e.established() {
            app.step(e);
            e.tick(app.received(), total);
        } else if e.early_data() {
            app.step(e);
        }
        if app.done() {
            e.close();
            socks.output(e);
            return Ok(());
        }
        socks.output(e);
        if e.closed() {
            return Err(format!("closed after {} of {total} bytes: {}", app.received(), e.why_closed()));
        }
        if Instant::now() > deadline {
            return Err(format!("timed out after {} of {total} bytes", app.received()));
        }
        socks.wait(e.timeout());
    }
}
