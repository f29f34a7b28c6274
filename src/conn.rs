//! The QUIC connection: a sans-IO state machine fed with datagrams and time.
//!
//! The public surface follows quiche (`recv`, `send`, `timeout`,
//! `on_timeout`, `stream_send`, `stream_recv`, ...) with one difference: every
//! call that depends on time takes `now`. The work is split into
//! `recv` (datagram → frames), `send` (frames → datagrams), `paths`
//! (per-path state, connection IDs, multipath) and `spaces` (keys and
//! packet-number spaces).

mod builder;
mod dgram;
#[cfg(test)]
mod dgram_tests;
mod dispatch;
mod early;
#[cfg(test)]
mod ecn_tests;
mod handshake;
mod migration;
#[cfg(test)]
mod migration_tests;
mod multipath;
mod pmtud;
#[cfg(test)]
mod pmtud_tests;
mod recv;
mod send;
pub(crate) mod sent;
mod spaces;
#[cfg(test)]
pub(crate) mod tests;
mod timers;
mod timestamps;
#[cfg(test)]
mod version_tests;
mod versions;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use crate::config::{Config, ConfigError};
use crate::crypto::{self, Level, TlsConfig, TlsSession};
use crate::error::{ErrorCode, TransportError};
use crate::packet::{ConnectionId, QUIC_V1};
use crate::recovery::SpaceKind;
use crate::stream::{Side, StreamDir, StreamError, StreamId, Streams, StreamsConfig};
use crate::transport_params::TransportParams;
use crate::version::{Version, VersionInfo};
use crate::PathId;

use crate::path::{CidState, MpState, Path, PathConfig};
pub use crate::path::{PathError, PathEvent, PathStats, PathStatus};
pub use crate::recovery::Ecn;
pub use dgram::DgramError;
use spaces::{CryptoLevels, HsSpace};

/// Where a datagram came from and went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvInfo {
    /// The peer's address.
    pub from: SocketAddr,
    /// Our local address it arrived on.
    pub to: SocketAddr,
    /// The ECN codepoint of its IP header ([`Ecn::from_tos`]; `NotEct`
    /// where the socket does not report it).
    pub ecn: Ecn,
}

impl RecvInfo {
    /// A datagram from `from` to `to`, without ECN information.
    pub fn new(from: SocketAddr, to: SocketAddr) -> RecvInfo {
        RecvInfo { from, to, ecn: Ecn::NotEct }
    }
}

/// How to send a datagram produced by [`Connection::send`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendInfo {
    /// Our local address to send from.
    pub from: SocketAddr,
    /// The peer's address.
    pub to: SocketAddr,
    /// The path the datagram belongs to.
    pub path_id: PathId,
    /// Pacing: do not put the datagram on the wire before this time.
    pub at: Instant,
    /// The ECN codepoint to put in its IP header ([`Ecn::tos_bits`]):
    /// ECT(0) while the path tests or has validated ECN (RFC 9000 §13.4.2).
    pub ecn: Ecn,
}

/// Connection-level errors returned by the API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The connection failed with a transport error (sent to the peer).
    Transport(TransportError),
    /// The peer closed the connection with this code.
    PeerClosed {
        /// Application (true) or transport close.
        app: bool,
        /// The peer's error code.
        code: u64,
    },
    /// The output buffer cannot hold a minimal packet.
    BufferTooShort,
    /// The connection is closed.
    Closed,
    /// TLS or configuration setup failed.
    Config(String),
    /// The server does not support our version (Version Negotiation).
    UnsupportedVersion,
    /// No path is available for the operation.
    InvalidPath,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Transport(e) => write!(f, "transport error: {e}"),
            Error::PeerClosed { app, code } => {
                write!(
                    f,
                    "closed by peer ({} error {code:#x})",
                    if *app { "application" } else { "transport" }
                )
            }
            Error::BufferTooShort => f.write_str("output buffer too short"),
            Error::Closed => f.write_str("connection closed"),
            Error::Config(s) => write!(f, "configuration: {s}"),
            Error::UnsupportedVersion => f.write_str("no common QUIC version"),
            Error::InvalidPath => f.write_str("no such path"),
        }
    }
}
impl std::error::Error for Error {}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Error::Config(e.to_string())
    }
}

/// Connection-wide counters.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Datagrams received.
    pub recv: u64,
    /// Datagrams sent.
    pub sent: u64,
    /// Packets declared lost.
    pub lost: u64,
    /// Bytes sent in UDP payloads.
    pub sent_bytes: u64,
    /// Bytes received in UDP payloads.
    pub recv_bytes: u64,
    /// Stream bytes retransmitted.
    pub retrans_bytes: u64,
    /// Packets dropped because they could not be decrypted or parsed.
    pub dropped: u64,
    /// Paths opened over the connection's life.
    pub paths: u64,
    /// Stream bytes received that had already been received (redundant
    /// copies, spurious retransmissions).
    pub dup_stream_bytes: u64,
    /// 1-RTT key updates (ours and the peer's).
    pub key_updates: u64,
    /// Of those, the ones we started.
    pub key_updates_initiated: u64,
    /// New stream bytes sent ahead of older data still waiting to be sent
    /// (`Decision::SendAhead`: a slow path carrying data the fast paths will
    /// not reach before it arrives).
    pub sent_ahead_bytes: u64,
    /// DATAGRAM frames sent (RFC 9221).
    pub dgram_sent: u64,
    /// DATAGRAM frames received (those dropped included).
    pub dgram_recv: u64,
    /// Datagrams received and dropped unread: the oldest, pushed out of a
    /// full receive queue.
    pub dgram_dropped: u64,
    /// Datagrams queued and dropped unsent: a path's MTU fell below them.
    pub dgram_send_dropped: u64,
}

/// Who closed the connection and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloseInfo {
    /// Application (0x1d) or transport (0x1c) close.
    pub is_app: bool,
    /// The error code.
    pub code: u64,
    /// The frame type that caused a transport error, if any.
    pub frame_type: Option<u64>,
    /// The reason phrase.
    pub reason: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Handshaking,
    Established,
    /// We sent CONNECTION_CLOSE and answer further packets with it.
    Closing {
        until: Instant,
    },
    /// The peer closed; we stay silent until `until`.
    Draining {
        until: Instant,
    },
    Closed,
}

/// A QUIC connection (client or server).
pub struct Connection {
    is_server: bool,
    state: State,
    tls: Box<TlsSession>,
    levels: CryptoLevels,
    /// Initial and Handshake packet-number spaces (on the first path only).
    hs: [HsSpace; 2],
    paths: Vec<Path>,
    cids: CidState,
    streams: Streams,
    local_params: TransportParams,
    peer_params: Option<TransportParams>,
    /// The DCID of the client's first Initial (validated against the peer's
    /// original_destination_connection_id).
    odcid: ConnectionId,
    /// Client: the SCID of the Retry we followed; server: the one we sent.
    retry_scid: Option<ConnectionId>,
    /// Client: token to echo in Initials (from Retry, or a NEW_TOKEN of an
    /// earlier connection).
    token: Vec<u8>,
    /// Server: NEW_TOKEN frames to send. Client: tokens received, for the
    /// application to use on its next connection to this server.
    new_tokens: std::collections::VecDeque<Vec<u8>>,
    /// Client: any packet from the server processed (no Retry/VN after it).
    got_peer_packet: bool,
    /// The version long headers carry now (after compatible version
    /// negotiation, the negotiated one).
    version: Version,
    /// The version of the client's first Initial (RFC 9368's Original
    /// Version; a server learns it from that packet).
    original_version: Version,
    /// The versions we accept, most preferred first.
    versions: Vec<Version>,
    /// Client: incompatible version negotiation (RFC 9368 §2.1, §4).
    vn: versions::Incompatible,
    /// Server: TLS holds our parameters for each version it may pick.
    tls_versions_offered: bool,
    multipath: bool,
    handshake_confirmed: bool,
    handshake_done_pending: bool,
    /// Server: the client's address is validated (Handshake packet received
    /// or a valid token): the anti-amplification limit no longer applies.
    peer_validated: bool,
    /// The idle timeout (RFC 9000 §10.1).
    idle: timers::IdleTimer,
    max_udp_payload: usize,
    local_close: Option<CloseInfo>,
    peer_close: Option<CloseInfo>,
    /// A CONNECTION_CLOSE is due (on entering Closing, and once per packet
    /// received while Closing).
    close_pending: bool,
    events: VecDeque<PathEvent>,
    stats: Stats,
    pacing: bool,
    key_update_interval: u64,
    /// Reused buffers so ACK processing does not allocate.
    scratch_acked: Vec<crate::recovery::SentPacket<sent::SentFrames>>,
    scratch_lost: Vec<crate::recovery::SentPacket<sent::SentFrames>>,
    scratch_views: Vec<crate::cc::PathView>,
    /// Multipath bookkeeping (path ID limits, pending path frames).
    mp: MpState,
    /// What new paths are built from.
    path_config: PathConfig,
    /// The path scheduler and what its decisions leave to do.
    dispatch: dispatch::Dispatcher,
    /// Which paths share a bottleneck, from their delays (coupled-bbr).
    sbd: crate::sbd::Sbd,
    /// Our configured initial_max_path_id (the base of `mp.local_max`).
    config_max_path_id: Option<u32>,
    /// qlog-style events, when enabled.
    qlog: Option<crate::qlog::Qlog>,
    /// We offered the rec extension: PATH_DSR frames are welcome.
    accept_dsr: bool,
    /// The peer offered it (and multipath is on): we send PATH_DSR.
    send_dsr: bool,
    /// The timestamp extension (one-way delays for `sbd`).
    ts: timestamps::Timestamps,
    /// The time of the latest call that gave one (for events raised where
    /// no `now` is at hand).
    last_now: Instant,
    /// 0-RTT: configured (send as a client, accept as a server).
    early_data_enabled: bool,
    /// 0-RTT state (remembered limits, rejection, buffered packets).
    early: early::EarlyData,
    /// DATAGRAM frames: queues and whether we take them.
    dgrams: dgram::Dgrams,
    /// Tests and fuzzing: raw frames to put in the next 1-RTT packets
    /// (last first), on `test_path` only if set.
    #[cfg(any(test, feature = "fuzzing"))]
    test_frames: Vec<Vec<u8>>,
    #[cfg(any(test, feature = "fuzzing"))]
    test_path: Option<crate::PathId>,
}

/// Open a client connection to `peer`. `server_name` is used for SNI and
/// certificate verification.
pub fn connect(
    server_name: Option<&str>,
    scid: &ConnectionId,
    local: SocketAddr,
    peer: SocketAddr,
    config: &Config,
    now: Instant,
) -> Result<Connection, Error> {
    connect_with_session(server_name, scid, local, peer, config, None, now)
}

/// [`connect`], resuming a TLS session (RFC 8446 §4.6.1) that
/// [`Connection::session`] gave on an earlier connection to the same server
/// (with [`Config::enable_session_tickets`] on). A session the server no
/// longer accepts just means a full handshake ([`Connection::is_resumed`]
/// says which); bytes that are not a session are an error.
pub fn connect_with_session(
    server_name: Option<&str>,
    scid: &ConnectionId,
    local: SocketAddr,
    peer: SocketAddr,
    config: &Config,
    session: Option<&[u8]>,
    now: Instant,
) -> Result<Connection, Error> {
    let tls = config.tls(false)?;
    let mut dcid_bytes = [0u8; 16];
    crypto::fill_random(&mut dcid_bytes);
    let dcid = ConnectionId::from_slice(&dcid_bytes).ok_or(Error::BufferTooShort)?;
    Connection::new(false, &tls, server_name, session, scid, dcid, None, local, peer, config, now)
}

/// Accept a client's connection. `odcid` is the DCID of the client's first
/// Initial (for a connection that went through Retry, the DCID before the
/// Retry, and `retry_scid` the SCID the Retry carried — which is then also
/// `scid`). Call `recv` with the client's Initial next.
#[allow(clippy::too_many_arguments)]
pub fn accept(
    scid: &ConnectionId,
    odcid: &ConnectionId,
    retry_scid: Option<&ConnectionId>,
    local: SocketAddr,
    peer: SocketAddr,
    config: &Config,
    now: Instant,
) -> Result<Connection, Error> {
    let tls = config.tls(true)?;
    Connection::new(true, &tls, None, None, scid, *odcid, retry_scid.copied(), local, peer, config, now)
}

impl Connection {
    #[allow(clippy::too_many_arguments)]
    fn new(
        is_server: bool,
        tls_config: &Arc<TlsConfig>,
        server_name: Option<&str>,
        session: Option<&[u8]>,
        scid: &ConnectionId,
        dcid: ConnectionId,
        retry_scid: Option<ConnectionId>,
        local: SocketAddr,
        peer: SocketAddr,
        config: &Config,
        now: Instant,
    ) -> Result<Connection, Error> {
        let reset_key = config.reset_key.as_ref().map(|k| *k.bytes());
        let mut cids = CidState::new(*scid, config.active_cid_limit, reset_key, config.cid_prefix);
        let version = config.first_version();
        let mut params = local_params(config, scid, &cids, is_server.then_some((dcid, retry_scid)));
        if is_server {
            params.preferred_address = preferred_address(config, &mut cids);
        }
        if crate::version::negotiates(&config.versions) {
            params.version_information = Some(VersionInfo::new(version, &config.versions));
        }
        let mut encoded = Vec::with_capacity(128);
        params.encode(&mut encoded);
        let mut tls = TlsSession::new(tls_config, server_name, &encoded)
            .map_err(|e| Error::Config(format!("{e:?}")))?;
        tls.set_version(version);
        let cfg_err = |e| Error::Config(format!("{e:?}"));
        let early_params = match session {
            Some(bytes) => tls.set_session(bytes).map_err(cfg_err)?,
            None => None,
        };
        if is_server && config.early_data {
            tls.set_early_data_context(&early::early_data_context(&params)).map_err(cfg_err)?;
        }

        // The Initial keys come from the DCID of the client's Initial (RFC
        // 9001 §5.2): after a Retry, the SCID the Retry carried.
        let key_dcid = if is_server { retry_scid.unwrap_or(dcid) } else { dcid };
        let levels = CryptoLevels::new(version, key_dcid.as_slice(), is_server)
            .map_err(|e| Error::Config(format!("{e:?}")))?;
        let side = if is_server { Side::Server } else { Side::Client };
        let streams = Streams::new(side, streams_config(config));
        let mut path0 = Path::new(PathId::ZERO, local, peer, config, now);
        // The first path is validated by the handshake itself.
        path0.validated = true;
        cids.set_initial_peer_cid(if is_server { ConnectionId::EMPTY } else { dcid });
        let mut conn = Connection {
            is_server,
            state: State::Handshaking,
            tls: Box::new(tls),
            levels,
            hs: [HsSpace::new(SpaceKind::Initial), HsSpace::new(SpaceKind::Handshake)],
            paths: vec![path0],
            cids,
            streams,
            local_params: params,
            peer_params: None,
            odcid: dcid,
            retry_scid,
            token: Vec::new(),
            new_tokens: std::collections::VecDeque::new(),
            got_peer_packet: false,
            version,
            original_version: version,
            versions: config.versions.clone(),
            vn: versions::Incompatible::default(),
            tls_versions_offered: false,
            multipath: false,
            handshake_confirmed: false,
            handshake_done_pending: false,
            peer_validated: !is_server || retry_scid.is_some(),
            idle: timers::IdleTimer { timeout: config.max_idle_timeout, deadline: None },
            max_udp_payload: config.max_udp_payload,
            local_close: None,
            peer_close: None,
            close_pending: false,
            events: VecDeque::new(),
            stats: Stats { paths: 1, ..Default::default() },
            pacing: config.pacing,
            key_update_interval: config.key_update_interval,
            scratch_acked: Vec::new(),
            scratch_lost: Vec::new(),
            scratch_views: Vec::new(),
            mp: MpState { local_max: config.initial_max_path_id.unwrap_or(0), ..Default::default() },
            path_config: PathConfig::from_config(config),
            sbd: crate::sbd::Sbd::default(),
            dispatch: dispatch::Dispatcher::new(match &config.scheduler_factory {
                Some(f) => f.build(),
                None => crate::sched::build(&config.scheduler, &crate::sched::SchedParams::default())
                    .or_else(|_| crate::sched::build("minrtt", &crate::sched::SchedParams::default()))
                    .map_err(|e| Error::Config(e.to_string()))?,
            }),
            config_max_path_id: config.initial_max_path_id,
            qlog: config.qlog.then(|| {
                let vantage =
                    if is_server { crate::qlog::Vantage::Server } else { crate::qlog::Vantage::Client };
                crate::qlog::Qlog::new(now, vantage, dcid.as_slice())
            }),
            accept_dsr: wants_dsr(config),
            send_dsr: false,
            ts: timestamps::Timestamps::new(timestamps::offer(config), now),
            last_now: now,
            early_data_enabled: config.early_data,
            early: early::EarlyData::default(),
            dgrams: dgram::Dgrams::new(config.dgram),
            #[cfg(any(test, feature = "fuzzing"))]
            test_frames: Vec::new(),
            #[cfg(any(test, feature = "fuzzing"))]
            test_path: None,
        };
        if let Some(q) = &mut conn.qlog {
            conn.streams.record_changes();
            q.state(now, crate::qlog::ConnState::Attempted);
            q.parameters_set(now, false, &conn.local_params);
            q.tuple_assigned(now, PathId::ZERO, local, peer);
        }
        if let Some(p) = early_params {
            conn.start_early_data(&p)?;
        }
        if !is_server {
            // Produce the ClientHello.
            conn.advance_tls(now)?;
        }
        conn.reset_idle(now);
        Ok(conn)
    }

    /// Whether this is the server side.
    pub fn is_server(&self) -> bool {
        self.is_server
    }
    /// The handshake completed (1-RTT keys available both ways).
    pub fn is_established(&self) -> bool {
        !matches!(self.state, State::Handshaking) && self.tls.is_handshake_complete()
    }
    /// The connection is closing or draining.
    pub fn is_draining(&self) -> bool {
        matches!(self.state, State::Draining { .. } | State::Closing { .. })
    }
    /// Nothing more will happen on this connection.
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }
    /// Multipath was negotiated.
    pub fn is_multipath(&self) -> bool {
        self.multipath
    }
    /// How the peer closed the connection, if it did.
    pub fn peer_error(&self) -> Option<&CloseInfo> {
        self.peer_close.as_ref()
    }
    /// How we closed the connection, if we did.
    pub fn local_error(&self) -> Option<&CloseInfo> {
        self.local_close.as_ref()
    }
    /// The negotiated ALPN protocol.
    pub fn application_proto(&self) -> &[u8] {
        self.tls.alpn().unwrap_or(&[])
    }
    /// The server name (SNI) of the connection.
    pub fn server_name(&self) -> Option<&str> {
        self.tls.server_name()
    }
    /// Our current source connection ID on the first path.
    pub fn source_id(&self) -> ConnectionId {
        self.cids.initial_scid()
    }
    /// Every connection ID we issued that the peer may still use, on every
    /// path (what a server routes to this connection).
    pub fn local_cids(&self) -> impl Iterator<Item = ConnectionId> + '_ {
        self.cids.local.iter().map(|c| c.cid)
    }
    /// Changes whenever [`Connection::local_cids`] does (an ID issued or
    /// retired), so a router re-reads the list only then.
    pub fn local_cids_generation(&self) -> u64 {
        self.cids.local_generation
    }
    /// The peer's transport parameters, once known.
    pub fn peer_transport_params(&self) -> Option<&TransportParams> {
        self.peer_params.as_ref()
    }
    /// Connection counters.
    pub fn stats(&self) -> Stats {
        Stats {
            dup_stream_bytes: self.streams.duplicate_bytes(),
            key_updates: self.levels.ku.updates,
            key_updates_initiated: self.levels.ku.initiated,
            ..self.stats.clone()
        }
    }
    /// Per-path statistics (paths still known, including abandoned ones
    /// whose state is kept for 3 PTO).
    pub fn path_stats(&self) -> impl Iterator<Item = PathStats> + '_ {
        self.paths.iter().map(|p| PathStats {
            group: self.sbd.group(p.id),
            sched: self.dispatch.counts(p.id),
            ..p.stats()
        })
    }
    /// Open paths: (ID, local address, peer address), abandoned ones left out.
    pub fn paths(&self) -> impl Iterator<Item = (PathId, SocketAddr, SocketAddr)> + '_ {
        self.paths.iter().filter(|p| !p.abandoned).map(|p| (p.id, p.local, p.peer))
    }
    /// The first record of this connection's qlog file (vantage point,
    /// original destination connection ID as `group_id`), if qlog is
    /// enabled ([`Config::enable_qlog`]); write it with
    /// [`crate::qlog::write_record`] before the events.
    pub fn qlog_header(&self) -> Option<crate::qlog::Header> {
        self.qlog.as_ref().map(|q| q.header())
    }
    /// The next queued qlog event (one JSON object, see [`crate::qlog`]),
    /// if qlog is enabled ([`Config::enable_qlog`]).
    pub fn qlog_next(&mut self) -> Option<String> {
        self.qlog_streams();
        self.qlog.as_mut()?.next()
    }
    /// Move the streams' openings and discards into the qlog, stamped with
    /// the time of the last call into the connection (application calls
    /// carry no time).
    pub(crate) fn qlog_streams(&mut self) {
        let Some(q) = &mut self.qlog else { return };
        for (id, change) in self.streams.take_changes() {
            q.stream_state(self.last_now, id.0, change);
        }
    }
    /// qlog events dropped because nobody drained them (the queue is bounded).
    pub fn qlog_dropped(&self) -> u64 {
        self.qlog.as_ref().map_or(0, |q| q.dropped)
    }
    /// Record a path event for the application (and the qlog).
    pub(crate) fn push_event(&mut self, e: PathEvent) {
        if let Some(q) = &mut self.qlog {
            let (id, kind) = match e {
                PathEvent::New(id, local, peer) => {
                    q.tuple_assigned(self.last_now, id, local, peer);
                    (id, "new")
                }
                PathEvent::Validated(id) => (id, "validated"),
                PathEvent::FailedValidation(id) => (id, "failed_validation"),
                PathEvent::Abandoned(id) => (id, "abandoned"),
                PathEvent::StatusChanged(id, PathStatus::Backup) => (id, "status_backup"),
                PathEvent::StatusChanged(id, _) => (id, "status_available"),
                PathEvent::Migrated(id, ..) => (id, "migrated"),
            };
            q.path_event(self.last_now, id, kind);
        }
        self.events.push_back(e);
    }
    /// Log a path's recovery metrics if they changed (qlog enabled only).
    pub(crate) fn qlog_metrics(&mut self, pi: usize, now: Instant) {
        let Some(q) = &mut self.qlog else { return };
        let Some(p) = self.paths.get(pi) else { return };
        let r = &p.recovery;
        let cm = r.cc().metrics();
        if !q.metrics_due(p.id, now, r.cwnd(), cm.state, r.rtt().smoothed()) {
            return;
        }
        let role =
            self.dispatch.sched.metrics().paths.iter().find(|x| x.id == p.id).and_then(|x| x.role).map(|r| {
                match r {
                    crate::sched::PathRole::NonRedundant => "non_redundant",
                    crate::sched::PathRole::Redundant => "redundant",
                    crate::sched::PathRole::Unused => "unused",
                }
            });
        let m = crate::qlog::Metrics {
            cwnd: r.cwnd(),
            bytes_in_flight: r.bytes_in_flight(),
            smoothed_rtt: r.rtt().smoothed(),
            min_rtt: r.rtt().min(),
            latest_rtt: r.rtt().latest(),
            pacing_rate: r.pacing_rate(),
            bandwidth: cm.bandwidth.unwrap_or(0),
            cc_state: cm.state,
            pacing_gain: cm.pacing_gain,
            group: self.sbd.group(p.id),
            sent_bytes: p.st.sent_bytes,
            acked_bytes: p.st.acked_bytes,
            lost_bytes: r.lost_bytes(),
            redundant_bytes: p.st.redundant_bytes,
            role,
        };
        q.metrics_updated(now, p.id, &m);
    }
    /// Log `quic:connection_state_updated` (qlog enabled only).
    pub(crate) fn qlog_state(&mut self, now: Instant, s: crate::qlog::ConnState) {
        if let Some(q) = &mut self.qlog {
            q.state(now, s);
        }
    }

    /// Log `quic:packet_dropped` (qlog enabled only).
    pub(crate) fn qlog_drop(&mut self, level: Option<Level>, len: usize, why: crate::qlog::DropTrigger) {
        if let Some(q) = &mut self.qlog {
            q.packet_dropped(self.last_now, level, len, why);
        }
    }

    /// Log `quic:connection_closed` from the close we sent or received.
    pub(crate) fn qlog_closed(&mut self, now: Instant, remote: bool, trigger: &'static str) {
        let Some(q) = &mut self.qlog else { return };
        let info = if remote { self.peer_close.as_ref() } else { self.local_close.as_ref() };
        let reason = info.map_or(&[][..], |i| i.reason.as_slice());
        q.connection_closed(
            now,
            &crate::qlog::Closed { remote, code: info.map(|i| i.code), reason, trigger },
        );
    }

    /// Replace the path scheduler, e.g. with one implemented outside the
    /// crate (see [`crate::sched`]). Takes effect from the next packet.
    pub fn set_scheduler(&mut self, sched: Box<dyn crate::sched::Scheduler>) {
        self.dispatch.set_scheduler(sched);
    }
    /// Statistics of the path scheduler.
    pub fn scheduler_metrics(&self) -> crate::sched::SchedMetrics {
        self.dispatch.metrics()
    }
    /// Next path event (new, validated, failed, abandoned, status changed).
    pub fn path_event_next(&mut self) -> Option<PathEvent> {
        self.events.pop_front()
    }

    // ---- streams ---------------------------------------------------------

    /// Write to a stream, opening it if needed. Returns how many bytes were
    /// accepted (fewer than `data.len()` when buffers are full); `fin` only
    /// takes effect if all of `data` was accepted.
    pub fn stream_send(&mut self, id: u64, data: &[u8], fin: bool) -> Result<usize, StreamError> {
        if self.local_close.is_some() || self.peer_close.is_some() || self.state == State::Closed {
            return Err(StreamError::InvalidState);
        }
        self.streams.stream_send(StreamId(id), data, fin)
    }
    /// As [`stream_send`](Self::stream_send) without copying: the stream
    /// holds a slice of `data` (a reference count, not the bytes) until
    /// they are acknowledged. `Bytes::from(vec)` hands over a `Vec`.
    pub fn stream_send_bytes(&mut self, id: u64, data: &Bytes, fin: bool) -> Result<usize, StreamError> {
        if self.local_close.is_some() || self.peer_close.is_some() || self.state == State::Closed {
            return Err(StreamError::InvalidState);
        }
        self.streams.stream_send_bytes(StreamId(id), data, fin)
    }
    /// Read from a stream: (bytes read, fin reached).
    pub fn stream_recv(&mut self, id: u64, out: &mut [u8]) -> Result<(usize, bool), StreamError> {
        self.streams.stream_recv(StreamId(id), out)
    }
    /// The stream's next readable bytes without copying them (up to one
    /// 64 KiB reassembly segment) and whether they end the stream. Nothing
    /// is released until [`stream_consume`](Self::stream_consume); errors as
    /// [`stream_recv`](Self::stream_recv).
    pub fn stream_peek(&mut self, id: u64) -> Result<(&[u8], bool), StreamError> {
        self.streams.stream_peek(StreamId(id))
    }
    /// Release up to `n` readable bytes (typically what
    /// [`stream_peek`](Self::stream_peek) showed) as read: (bytes released,
    /// fin reached).
    pub fn stream_consume(&mut self, id: u64, n: usize) -> Result<(usize, bool), StreamError> {
        self.streams.stream_consume(StreamId(id), n)
    }
    /// Stop sending (RESET_STREAM) and/or receiving (STOP_SENDING) on a stream.
    pub fn stream_shutdown(
        &mut self,
        id: u64,
        read: bool,
        write: bool,
        code: u64,
    ) -> Result<(), StreamError> {
        if read {
            self.streams.stream_stop_sending(StreamId(id), code)?;
        }
        if write {
            self.streams.stream_reset(StreamId(id), code)?;
        }
        Ok(())
    }
    /// Streams with data (or a fin / reset) to read.
    pub fn readable(&self) -> Vec<u64> {
        self.streams.readable().map(|s| s.0).collect()
    }
    /// Streams that can accept more data.
    pub fn writable(&self) -> Vec<u64> {
        self.streams.writable().map(|s| s.0).collect()
    }
    /// Bytes `stream_send` would accept now on this stream.
    pub fn stream_capacity(&self, id: u64) -> Result<usize, StreamError> {
        self.streams.stream_capacity(StreamId(id))
    }
    /// This stream's cap on written-but-unsent bytes (the stream-level
    /// [`Config::set_stream_send_unsent`]), changeable at any time: a server
    /// can give one busy download more room than a thousand concurrent ones.
    /// A cap below what is already waiting only stops further writes.
    pub fn set_stream_send_unsent(&mut self, id: u64, bytes: usize) -> Result<(), StreamError> {
        self.streams.set_send_unsent(StreamId(id), bytes)
    }
    /// Whether all data of the stream was read, including the fin.
    pub fn stream_finished(&self, id: u64) -> bool {
        self.streams.is_finished(StreamId(id))
    }
    /// The ID the next locally opened stream of this kind will get (opened
    /// by the first `stream_send` on it).
    pub fn next_stream_id(&self, bidi: bool) -> u64 {
        self.streams.next_stream_id(if bidi { StreamDir::Bidi } else { StreamDir::Uni }).0
    }
    /// How many more streams of this kind the peer lets us open now.
    pub fn peer_streams_left(&self, bidi: bool) -> u64 {
        self.streams.peer_streams_left(if bidi { StreamDir::Bidi } else { StreamDir::Uni })
    }
    /// Whether the stream has data, a fin or a reset to read.
    pub fn stream_readable(&self, id: u64) -> bool {
        self.streams.is_readable(StreamId(id))
    }
    /// Receive-side out-of-order bytes held in reassembly buffers.
    pub fn out_of_order_bytes(&self) -> u64 {
        self.streams.out_of_order_bytes()
    }

    // ---- closing ---------------------------------------------------------

    /// Close the connection with an application (`app`) or transport error
    /// code. Idempotent.
    pub fn close(&mut self, app: bool, code: u64, reason: &[u8], now: Instant) {
        if matches!(self.state, State::Closed | State::Draining { .. } | State::Closing { .. }) {
            return;
        }
        // An application close before 1-RTT keys exist must be sent as a
        // transport APPLICATION_ERROR (RFC 9000 §10.2.3).
        let (app, code) = if app && !self.levels.has_send_keys(Level::OneRtt) {
            (false, ErrorCode::APPLICATION_ERROR.0)
        } else {
            (app, code)
        };
        self.local_close = Some(CloseInfo { is_app: app, code, frame_type: None, reason: reason.to_vec() });
        self.qlog_closed(now, false, "application");
        self.enter_closing(now);
    }

    /// Start a 1-RTT key update (RFC 9001 §6) if allowed now: handshake
    /// confirmed, our previous update answered, and a packet sent with the
    /// current keys acknowledged at least three times the largest PTO ago
    /// (draft-ietf-quic-multipath-21 §4.7). Returns whether it started.
    /// Updates also start by themselves (`Config::set_key_update_interval`).
    pub fn update_keys(&mut self, now: Instant) -> bool {
        let ku = &self.levels.ku;
        let wait = self.max_pto() * 3;
        let ready =
            self.handshake_confirmed && !ku.awaiting_peer && ku.phase_acked.is_some_and(|t| now >= t + wait);
        let updated = ready && self.levels.initiate_update();
        if let (true, Some(q)) = (updated, &mut self.qlog) {
            q.local_key_update(now, self.levels.ku.updates);
        }
        updated
    }

    /// Server: send `token` (from [`crate::server::Validator::new_token`]) in
    /// a NEW_TOKEN frame, for the client's next connection (RFC 9000 §8.1.3).
    /// Clients cannot send tokens; empty or oversized tokens are refused.
    pub fn send_new_token(&mut self, token: &[u8]) -> bool {
        if !self.is_server || token.is_empty() || token.len() > 512 || self.new_tokens.len() >= 4 {
            return false;
        }
        self.new_tokens.push_back(token.to_vec());
        true
    }

    /// Client: the next token the server sent in NEW_TOKEN, to pass to
    /// [`Connection::set_token`] on a later connection to the same server.
    pub fn new_token_next(&mut self) -> Option<Vec<u8>> {
        if self.is_server {
            return None;
        }
        self.new_tokens.pop_front()
    }

    /// Client: echo `token` (a NEW_TOKEN of an earlier connection) in our
    /// Initials, so the server may skip its Retry. Only before the first
    /// packet is sent; returns whether it was taken.
    pub fn set_token(&mut self, token: &[u8]) -> bool {
        if self.is_server || self.stats.sent > 0 || !self.token.is_empty() {
            return false;
        }
        self.token = token.to_vec();
        true
    }

    /// Whether the handshake went through a Retry (client: the server sent
    /// one; server: the client answered ours).
    pub fn retried(&self) -> bool {
        self.retry_scid.is_some()
    }

    /// Client: the last TLS session ticket the server sent, serialized with
    /// the server's transport parameters (which 0-RTT is sent under, RFC
    /// 9000 §7.4.1), to resume with [`connect_with_session`] later (store it
    /// like a NEW_TOKEN token). `None` until one arrived (after the
    /// handshake).
    pub fn session(&self) -> Option<&[u8]> {
        self.tls.session()
    }

    /// The handshake resumed an earlier TLS session.
    pub fn is_resumed(&self) -> bool {
        self.tls.is_resumed()
    }

    /// Keep within the AEAD limits: update keys when due; close if the
    /// confidentiality limit is reached without an update.
    fn check_key_limits(&mut self, now: Instant) {
        let used = self.levels.ku.packets_in_phase;
        if used >= self.key_update_interval && self.update_keys(now) {
            return;
        }
        if used >= crate::config::AEAD_CONFIDENTIALITY_LIMIT {
            self.close_on_error(
                TransportError::new(
                    ErrorCode::AEAD_LIMIT_REACHED,
                    "key update not possible before the AEAD limit",
                ),
                now,
            );
        }
    }

    /// Close because of a protocol error we detected.
    fn close_on_error(&mut self, err: TransportError, now: Instant) {
        if matches!(self.state, State::Closed | State::Draining { .. } | State::Closing { .. }) {
            return;
        }
        log::debug!("closing on error: {err}");
        self.local_close = Some(CloseInfo {
            is_app: false,
            code: err.code.0,
            frame_type: Some(err.frame_type.unwrap_or(0)),
            reason: err.reason.as_bytes().to_vec(),
        });
        self.qlog_closed(now, false, "error");
        self.enter_closing(now);
    }

    fn enter_closing(&mut self, now: Instant) {
        let pto = self.max_pto();
        self.state = State::Closing { until: now + pto * 3 };
        self.qlog_state(now, crate::qlog::ConnState::Closing);
        self.close_pending = true;
    }

    fn enter_draining(&mut self, now: Instant) {
        let pto = self.max_pto();
        self.state = State::Draining { until: now + pto * 3 };
        self.qlog_state(now, crate::qlog::ConnState::Draining);
        self.close_pending = false;
    }
}

/// Our transport parameters; `server` holds the client's original DCID and
/// the Retry SCID we sent, if any.
fn local_params(
    config: &Config,
    scid: &ConnectionId,
    cids: &CidState,
    server: Option<(ConnectionId, Option<ConnectionId>)>,
) -> TransportParams {
    let mut params = TransportParams {
        max_idle_timeout: config.max_idle_timeout.as_millis() as u64,
        max_udp_payload_size: config.max_recv_udp_payload as u64,
        initial_max_data: config.initial_max_data,
        initial_max_stream_data_bidi_local: config.initial_max_stream_data_bidi_local,
        initial_max_stream_data_bidi_remote: config.initial_max_stream_data_bidi_remote,
        initial_max_stream_data_uni: config.initial_max_stream_data_uni,
        initial_max_streams_bidi: config.initial_max_streams_bidi,
        initial_max_streams_uni: config.initial_max_streams_uni,
        ack_delay_exponent: config.ack_delay_exponent,
        max_ack_delay: config.max_ack_delay.as_millis() as u64,
        active_connection_id_limit: config.active_cid_limit,
        disable_active_migration: config.disable_active_migration,
        initial_source_connection_id: Some(*scid),
        initial_max_path_id: config.initial_max_path_id.map(u64::from),
        max_datagram_frame_size: config.dgram.map(|_| dgram::MAX_DGRAM_FRAME_SIZE),
        ..TransportParams::default()
    };
    if wants_dsr(config) {
        params.extra.push((crate::frame::path_dsr::REC_TRANSPORT_PARAM_ID, Vec::new()));
    }
    if let Some(p) = timestamps::offer(config) {
        params.extra.push((crate::frame::timestamp::TIMESTAMP_TRANSPORT_PARAM_ID, p.encode()));
    }
    if let Some((odcid, retry_scid)) = server {
        params.original_destination_connection_id = Some(odcid);
        params.retry_source_connection_id = retry_scid;
        params.stateless_reset_token = Some(cids.reset_token_for(scid));
    }
    params
}

/// A server's preferred_address parameter, if one is configured (its
/// connection ID is issued here).
fn preferred_address(
    config: &Config,
    cids: &mut CidState,
) -> Option<crate::transport_params::PreferredAddress> {
    let (ipv4, ipv6) = config.preferred_address;
    if ipv4.is_none() && ipv6.is_none() {
        return None;
    }
    let (cid, reset_token) = cids.issue_preferred()?;
    Some(crate::transport_params::PreferredAddress { ipv4, ipv6, cid, reset_token })
}

/// The rec scheduler asks the peer for per-path desired sending rates.
fn wants_dsr(config: &Config) -> bool {
    config.scheduler_factory.is_none() && config.scheduler.starts_with("rec")
}

/// Stream limits and windows from the configuration.
fn streams_config(config: &Config) -> StreamsConfig {
    StreamsConfig {
        initial_max_data: config.initial_max_data,
        max_data_window: config.max_connection_window,
        initial_max_stream_data_bidi_local: config.initial_max_stream_data_bidi_local,
        initial_max_stream_data_bidi_remote: config.initial_max_stream_data_bidi_remote,
        initial_max_stream_data_uni: config.initial_max_stream_data_uni,
        max_stream_window: config.max_stream_window,
        initial_max_streams_bidi: config.initial_max_streams_bidi,
        initial_max_streams_uni: config.initial_max_streams_uni,
        send_buffer_cap: config.send_buffer_limit,
        send_unsent_cap: config.send_unsent_limit,
    }
}

/// Generate a random connection ID of `len` bytes (for apps and tests).
pub fn random_cid(len: usize) -> ConnectionId {
    random_cid_with_prefix(len, None)
}

/// A random connection ID of `len` bytes whose first byte is `prefix` when
/// given (see [`Config::set_cid_prefix`]).
pub fn random_cid_with_prefix(len: usize, prefix: Option<u8>) -> ConnectionId {
    let mut b = [0u8; 20];
    let len = len.min(20);
    crypto::fill_random(&mut b[..len]);
    if let (Some(p), Some(first)) = (prefix, b[..len].first_mut()) {
        *first = p;
    }
    ConnectionId::from_slice(&b[..len]).unwrap_or(ConnectionId::EMPTY)
}

/// The only version we speak.
pub const PROTOCOL_VERSION: u32 = QUIC_V1;
