//! A server endpoint, sans-IO: routes each datagram to its connection by the
//! destination connection ID, does the stateless duties for datagrams that
//! match none (Version Negotiation, Retry and tokens, Stateless Reset) and
//! hands out new connections only once a client's Initial decrypts.
//!
//! ```text
//! loop {
//!     for each datagram: match ep.recv(&mut d, info, now, &mut out) {
//!         Incoming::Reply(n) => send out[..n] to info.from,
//!         _ => {}
//!     }
//!     while let Some(h) = ep.poll(now) {   // received something, or its timer fired
//!         let (conn, data) = ep.get(h).unwrap();
//!         /* application work, conn.send(..) */
//!         if let Some((conn, data)) = ep.rearm(h, app_wake) { /* closed */ }
//!     }
//!     sleep until ep.timeout() or a socket is readable
//! }
//! ```
//!
//! Every connection ID a connection issues, on every path, routes to it
//! (re-read only when [`Connection::local_cids_generation`] changes), so a
//! multipath connection's new paths need no search. Deadlines live in a
//! binary heap with lazy invalidation: no event costs O(connections).

mod initial;
mod slab;
#[cfg(test)]
mod tests;
mod timers;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::Instant;

use crate::packet::{self, ConnectionId};
use crate::server::{stateless_reset, Accept, StatelessResetKey, Validator};
use crate::{Config, Connection, RecvInfo};

pub use slab::Handle;
use slab::Slab;
use timers::Timers;

/// How an [`Endpoint`] treats datagrams that match no connection.
#[derive(Clone, Debug)]
pub struct EndpointConfig {
    /// Length of the connection IDs we issue (short headers do not carry it).
    pub cid_len: usize,
    /// Answer token-less Initials with Retry (address validation first).
    pub retry: bool,
    /// Connections whose handshake has not completed; past this, Retry is
    /// forced even when `retry` is off (RFC 9000 §8.1).
    pub max_half_open: usize,
    /// Stateless Resets sent per second at most.
    pub resets_per_sec: u32,
    /// Give every new connection a NEW_TOKEN token (with `retry` on), so the
    /// client's next connection skips the Retry.
    pub new_tokens: bool,
    /// Refuse new connections (e.g. while shutting down).
    pub accept: bool,
    /// Keys for address-validation tokens and Stateless Resets; endpoints
    /// that share an address (workers behind SO_REUSEPORT) share them, so
    /// each accepts the others' tokens. `None`: random keys.
    pub secret: Option<EndpointSecret>,
}

/// The keys an [`Endpoint`] needs beyond TLS: sealing address-validation
/// tokens and deriving Stateless Reset tokens.
#[derive(Clone)]
pub struct EndpointSecret {
    token_key: [u8; 32],
    reset_key: [u8; 32],
}

impl EndpointSecret {
    /// Fresh random keys.
    pub fn random() -> EndpointSecret {
        let (mut token_key, mut reset_key) = ([0u8; 32], [0u8; 32]);
        crate::crypto::fill_random(&mut token_key);
        crate::crypto::fill_random(&mut reset_key);
        EndpointSecret { token_key, reset_key }
    }
}

impl std::fmt::Debug for EndpointSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EndpointSecret(..)")
    }
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            cid_len: 16,
            retry: true,
            max_half_open: 256,
            resets_per_sec: 1000,
            new_tokens: true,
            accept: true,
            secret: None,
        }
    }
}

/// What became of one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incoming {
    /// Given to an existing connection; [`Endpoint::poll`] will return it.
    Routed(Handle),
    /// A new connection was created for it (its Initial decrypted).
    Accepted(Handle),
    /// Send the first `n` bytes of the output buffer back to the sender
    /// (Version Negotiation, Retry or Stateless Reset).
    Reply(usize),
    /// Dropped; nothing is kept.
    Dropped,
}

/// Counters of an [`Endpoint`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Datagrams given to existing connections.
    pub routed: u64,
    /// Connections created.
    pub accepted: u64,
    /// Initials refused because they did not decrypt (no state kept).
    pub undecryptable: u64,
    /// Short-header datagrams for connection IDs we do not know.
    pub unknown_cid: u64,
    /// Version Negotiation packets sent.
    pub version_negotiations: u64,
    /// Retry packets sent (including forced ones).
    pub retries: u64,
    /// Retries sent only because of the half-open bound.
    pub forced_retries: u64,
    /// Stateless Resets sent.
    pub stateless_resets: u64,
    /// Other datagrams dropped (malformed, too small, not Initial, rate limit).
    pub dropped: u64,
}

struct Entry<T> {
    conn: Connection,
    data: T,
    /// Connection IDs routed to this entry, as of `cid_generation`.
    cids: Vec<ConnectionId>,
    cid_generation: u64,
    /// The client's original DCID and address: its further Initials and
    /// 0-RTT packets carry that DCID. Bound to the address too, so a copy of
    /// the Initial replayed from elsewhere gets a connection of its own
    /// instead of taking over this one.
    initial_route: (ConnectionId, SocketAddr),
    half_open: bool,
    /// Queued for [`Endpoint::poll`].
    ready: bool,
    app_wake: Option<Instant>,
    /// The instant [`Endpoint::poll`] last returned it for its timer.
    timer_polled: Option<Instant>,
}

/// Whether `dgram`'s first packet is a client Initial that decrypts with the
/// Initial keys of its DCID: for servers built without an [`Endpoint`] (the
/// C API's validator), to keep no state for garbage behind a long header.
pub fn client_initial_decrypts(dgram: &[u8]) -> bool {
    initial::decrypts(dgram, &mut Vec::with_capacity(dgram.len()))
}

/// Routes datagrams to connections of type-`T` user data; see the module docs.
pub struct Endpoint<T = ()> {
    config: Config,
    ep: EndpointConfig,
    validator: Validator,
    reset_key: StatelessResetKey,
    conns: Slab<Entry<T>>,
    by_cid: HashMap<ConnectionId, Handle>,
    by_initial: HashMap<(ConnectionId, SocketAddr), Handle>,
    timers: Timers,
    ready: VecDeque<Handle>,
    half_open: usize,
    epoch: Instant,
    reset_second: u64,
    resets_this_second: u32,
    stats: EndpointStats,
    /// Scratch for trial decryption of Initials.
    scratch: Vec<u8>,
}

/// Why an [`Endpoint`] could not be made.
#[derive(Debug)]
pub struct EndpointError(String);

impl std::fmt::Display for EndpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for EndpointError {}

/// Why an endpoint refuses a config with the simulator's AEAD.
pub const SIM_AEAD_REFUSED: &str =
    "the simulator's AEAD (Config::use_sim_aead) protects nothing: not on a network";

impl<T: Default> Endpoint<T> {
    /// An endpoint accepting connections with `config` (its stateless reset
    /// key is replaced by the endpoint's, so resets match issued IDs).
    /// Refuses a config with the simulator's AEAD (`Config::use_sim_aead`):
    /// an endpoint serves a real network.
    pub fn new(mut config: Config, ep: EndpointConfig, now: Instant) -> Result<Endpoint<T>, EndpointError> {
        if config.uses_sim_aead() {
            return Err(EndpointError(SIM_AEAD_REFUSED.into()));
        }
        if !(4..=packet::MAX_CID_LEN).contains(&ep.cid_len) {
            return Err(EndpointError(format!("connection ID length {} not in 4..=20", ep.cid_len)));
        }
        let secret = ep.secret.clone().unwrap_or_else(EndpointSecret::random);
        let reset_key = StatelessResetKey::from_bytes(secret.reset_key);
        config.set_stateless_reset_key(reset_key.clone());
        let mut validator = Validator::with_key(ep.retry, &secret.token_key)
            .map_err(|e| EndpointError(format!("token key: {e:?}")))?;
        validator.set_cid_format(ep.cid_len, config.cid_prefix);
        validator.set_versions(config.versions());
        Ok(Endpoint {
            config,
            ep,
            validator,
            reset_key,
            conns: Slab::default(),
            by_cid: HashMap::new(),
            by_initial: HashMap::new(),
            timers: Timers::default(),
            ready: VecDeque::new(),
            half_open: 0,
            epoch: now,
            reset_second: 0,
            resets_this_second: 0,
            stats: EndpointStats::default(),
            scratch: vec![0; 2048],
        })
    }

    /// Take one datagram that arrived at `info.to` from `info.from`. Replies
    /// (VN, Retry, Stateless Reset) are written to `out`.
    pub fn recv(&mut self, dgram: &mut [u8], info: RecvInfo, now: Instant, out: &mut [u8]) -> Incoming {
        let Some(&first) = dgram.first() else {
            self.stats.dropped += 1;
            return Incoming::Dropped;
        };
        if let Some(h) = self.route(dgram, first, &info.from) {
            self.stats.routed += 1;
            if let Some(e) = self.conns.get_mut(h) {
                // Errors close the connection; `poll` hands it back for its end.
                let _ = e.conn.recv(dgram, info, now);
            }
            self.mark_ready(h);
            return Incoming::Routed(h);
        }
        if first & 0x80 == 0 {
            self.stats.unknown_cid += 1;
            return self.reset(dgram, now, out);
        }
        self.accept(dgram, info, now, out)
    }

    /// The connection a datagram belongs to: by our connection IDs, or for
    /// a client's first flights by its original DCID and address.
    fn route(&self, dgram: &[u8], first: u8, from: &SocketAddr) -> Option<Handle> {
        if first & 0x80 == 0 {
            let cid = ConnectionId::from_slice(dgram.get(1..1 + self.ep.cid_len)?)?;
            return self.by_cid.get(&cid).copied();
        }
        let inv = packet::invariant_header(dgram)?;
        let cid = ConnectionId::from_slice(inv.dcid)?;
        self.by_cid.get(&cid).or_else(|| self.by_initial.get(&(cid, *from))).copied()
    }

    fn reset(&mut self, dgram: &[u8], now: Instant, out: &mut [u8]) -> Incoming {
        let second = self.secs(now);
        if second != self.reset_second {
            self.reset_second = second;
            self.resets_this_second = 0;
        }
        if self.resets_this_second >= self.ep.resets_per_sec {
            self.stats.dropped += 1;
            return Incoming::Dropped;
        }
        match stateless_reset(&self.reset_key, dgram, self.ep.cid_len, out) {
            Some(n) => {
                self.resets_this_second += 1;
                self.stats.stateless_resets += 1;
                Incoming::Reply(n)
            }
            None => {
                self.stats.dropped += 1;
                Incoming::Dropped
            }
        }
    }

    fn secs(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.epoch).as_secs()
    }

    fn accept(&mut self, dgram: &mut [u8], info: RecvInfo, now: Instant, out: &mut [u8]) -> Incoming {
        if !self.ep.accept {
            self.stats.dropped += 1;
            return Incoming::Dropped;
        }
        let secs = self.secs(now);
        let forced = !self.ep.retry && self.half_open >= self.ep.max_half_open;
        let retry = self.ep.retry || forced;
        match self.validator.handle_retrying(dgram, &info.from, secs, out, retry) {
            Accept::Reply(n) => {
                if packet::invariant_header(dgram).is_some_and(|h| !self.validator.accepts(h.version)) {
                    self.stats.version_negotiations += 1;
                } else {
                    self.stats.retries += 1;
                    self.stats.forced_retries += u64::from(forced);
                }
                Incoming::Reply(n)
            }
            Accept::Drop => {
                self.stats.dropped += 1;
                Incoming::Dropped
            }
            Accept::New { odcid, retry_scid } => {
                if !initial::decrypts(dgram, &mut self.scratch) {
                    self.stats.undecryptable += 1;
                    return Incoming::Dropped;
                }
                self.create(dgram, info, now, odcid, retry_scid)
            }
        }
    }

    fn create(
        &mut self,
        dgram: &mut [u8],
        info: RecvInfo,
        now: Instant,
        odcid: ConnectionId,
        retry_scid: Option<ConnectionId>,
    ) -> Incoming {
        let scid = retry_scid
            .unwrap_or_else(|| crate::conn::random_cid_with_prefix(self.ep.cid_len, self.config.cid_prefix));
        let Ok(mut conn) =
            crate::accept(&scid, &odcid, retry_scid.as_ref(), info.to, info.from, &self.config, now)
        else {
            self.stats.dropped += 1;
            return Incoming::Dropped;
        };
        if self.ep.retry && self.ep.new_tokens {
            conn.send_new_token(&self.validator.new_token(&info.from, self.secs(now)));
        }
        // The DCID this datagram carries: the original one, or our Retry's SCID.
        let dcid =
            packet::invariant_header(dgram).and_then(|h| ConnectionId::from_slice(h.dcid)).unwrap_or(odcid);
        let _ = conn.recv(dgram, info, now);
        let entry = Entry {
            conn,
            data: T::default(),
            cids: Vec::new(),
            cid_generation: u64::MAX,
            initial_route: (dcid, info.from),
            half_open: true,
            ready: false,
            app_wake: None,
            timer_polled: None,
        };
        let h = self.conns.insert(entry);
        self.half_open += 1;
        self.by_initial.insert((dcid, info.from), h);
        self.sync_cids(h);
        self.mark_ready(h);
        self.stats.accepted += 1;
        Incoming::Accepted(h)
    }

    fn mark_ready(&mut self, h: Handle) {
        if let Some(e) = self.conns.get_mut(h) {
            if !e.ready {
                e.ready = true;
                self.ready.push_back(h);
            }
        }
    }

    /// Re-read a connection's issued IDs if they changed.
    fn sync_cids(&mut self, h: Handle) {
        let Some(e) = self.conns.get_mut(h) else { return };
        let generation = e.conn.local_cids_generation();
        if generation == e.cid_generation {
            return;
        }
        e.cid_generation = generation;
        let now: Vec<ConnectionId> = e.conn.local_cids().collect();
        for old in e.cids.iter().filter(|c| !now.contains(c)) {
            self.by_cid.remove(old);
        }
        for new in now.iter().filter(|c| !e.cids.contains(c)) {
            self.by_cid.insert(*new, h);
        }
        e.cids = now;
    }

    /// The next connection that needs the application: one that received
    /// datagrams, or whose timer is due (its `on_timeout` has been called).
    /// Give each back with [`Endpoint::rearm`] after serving it.
    pub fn poll(&mut self, now: Instant) -> Option<Handle> {
        while let Some(h) = self.ready.pop_front() {
            if let Some(e) = self.conns.get_mut(h) {
                e.ready = false;
                return Some(h);
            }
        }
        let mut later = Vec::new();
        let mut found = None;
        while let Some((h, at)) = self.timers.pop_due(now) {
            let Some(e) = self.conns.get_mut(h) else { continue };
            // Served for its timer at this instant already: a deadline that
            // serving left due (an ACK owed while the application holds
            // the path's next datagram) waits for a later `now` instead of
            // spinning a caller that polls in a loop at one instant.
            if e.timer_polled == Some(now) {
                later.push((h, at));
                continue;
            }
            e.timer_polled = Some(now);
            if e.conn.timeout().is_some_and(|t| t <= now) {
                e.conn.on_timeout(now);
            }
            found = Some(h);
            break;
        }
        for (h, at) in later {
            self.timers.set(h, Some(at));
        }
        found
    }

    /// A connection and its data.
    pub fn get(&mut self, h: Handle) -> Option<(&mut Connection, &mut T)> {
        self.conns.get_mut(h).map(|e| (&mut e.conn, &mut e.data))
    }

    /// A connection, read-only.
    pub fn conn(&self, h: Handle) -> Option<&Connection> {
        self.conns.get(h).map(|e| &e.conn)
    }

    /// After serving `h`: update its routes and its deadline (the earlier of
    /// the connection's timer and `app_wake`, e.g. a datagram held for
    /// pacing). A closed connection is removed and returned.
    pub fn rearm(&mut self, h: Handle, app_wake: Option<Instant>) -> Option<(Connection, T)> {
        self.sync_cids(h);
        let e = self.conns.get_mut(h)?;
        if e.half_open && (e.conn.is_established() || e.conn.is_closed()) {
            e.half_open = false;
            self.half_open -= 1;
        }
        if e.conn.is_closed() {
            return self.remove(h);
        }
        e.app_wake = app_wake;
        let deadline = match (e.conn.timeout(), app_wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.timers.set(h, deadline);
        None
    }

    /// Drop a connection now (its routes go; later packets for it get a
    /// Stateless Reset).
    pub fn remove(&mut self, h: Handle) -> Option<(Connection, T)> {
        let e = self.conns.remove(h)?;
        for c in &e.cids {
            self.by_cid.remove(c);
        }
        if self.by_initial.get(&e.initial_route) == Some(&h) {
            self.by_initial.remove(&e.initial_route);
        }
        if e.half_open {
            self.half_open -= 1;
        }
        self.timers.set(h, None);
        Some((e.conn, e.data))
    }

    /// When [`Endpoint::poll`] next has work, if nothing arrives before.
    pub fn timeout(&mut self) -> Option<Instant> {
        if !self.ready.is_empty() {
            // Already due: any instant in the past will do.
            return Some(self.epoch);
        }
        self.timers.next()
    }

    /// Handles of every connection (e.g. to close them all).
    pub fn handles(&self) -> Vec<Handle> {
        self.conns.handles()
    }

    /// Number of connections.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// No connections.
    pub fn is_empty(&self) -> bool {
        self.conns.len() == 0
    }

    /// Connections whose handshake has not completed.
    pub fn half_open(&self) -> usize {
        self.half_open
    }

    /// Counters.
    pub fn stats(&self) -> EndpointStats {
        self.stats
    }

    /// Connection IDs currently routed (all paths of all connections).
    pub fn routes(&self) -> usize {
        self.by_cid.len()
    }

    /// Stop (or resume) accepting new connections.
    pub fn set_accept(&mut self, on: bool) {
        self.ep.accept = on;
    }

    /// A NEW_TOKEN token for `peer` (valid a day from its IP address).
    pub fn new_token(&self, peer: &SocketAddr, now: Instant) -> Vec<u8> {
        self.validator.new_token(peer, self.secs(now))
    }

    /// The length of the connection IDs this endpoint issues.
    pub fn cid_len(&self) -> usize {
        self.ep.cid_len
    }
}
