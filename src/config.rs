//! Connection configuration, shared by clients and servers (quiche-style).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cc::UnknownAlgorithm;
use crate::crypto::{TlsConfig, TlsError};
use crate::version::Version;

/// Why a configuration call failed.
#[derive(Debug)]
pub enum ConfigError {
    /// A certificate, key or CA file could not be loaded.
    Tls(String),
    /// A congestion controller or scheduler name is unknown.
    UnknownAlgorithm(UnknownAlgorithm),
    /// A value is out of its allowed range.
    InvalidValue(&'static str),
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Tls(s) => write!(f, "TLS configuration: {s}"),
            ConfigError::UnknownAlgorithm(u) => u.fmt(f),
            ConfigError::InvalidValue(s) => write!(f, "invalid value: {s}"),
        }
    }
}
impl std::error::Error for ConfigError {}

impl From<TlsError> for ConfigError {
    fn from(e: TlsError) -> Self {
        ConfigError::Tls(format!("{e:?}"))
    }
}

/// Packets one AES-GCM key may protect (RFC 9001 §6.6: 2^23).
pub const AEAD_CONFIDENTIALITY_LIMIT: u64 = 1 << 23;
/// Default packets between our key updates.
pub const DEFAULT_KEY_UPDATE_INTERVAL: u64 = 1 << 22;

/// Settings of a connection. Build one, adjust it, and pass it to
/// [`crate::connect`] or [`crate::accept`]; one `Config` may serve many
/// connections (and be cloned, e.g. for an [`crate::Endpoint`]).
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) alpn: Vec<Vec<u8>>,
    pub(crate) cert_chain: Option<PathBuf>,
    pub(crate) priv_key: Option<PathBuf>,
    pub(crate) ca_file: Option<PathBuf>,
    /// `None`: verify on clients, not on servers.
    pub(crate) verify_peer: Option<bool>,
    pub(crate) keylog: Option<PathBuf>,
    pub(crate) max_idle_timeout: Duration,
    pub(crate) max_udp_payload: usize,
    pub(crate) initial_max_data: u64,
    pub(crate) initial_max_stream_data_bidi_local: u64,
    pub(crate) initial_max_stream_data_bidi_remote: u64,
    pub(crate) initial_max_stream_data_uni: u64,
    pub(crate) initial_max_streams_bidi: u64,
    pub(crate) initial_max_streams_uni: u64,
    pub(crate) max_connection_window: u64,
    pub(crate) max_stream_window: u64,
    pub(crate) ack_delay_exponent: u64,
    pub(crate) max_ack_delay: Duration,
    pub(crate) active_cid_limit: u64,
    pub(crate) disable_active_migration: bool,
    /// Server: the addresses offered as preferred_address (RFC 9000 §9.6).
    pub(crate) preferred_address: (Option<std::net::SocketAddrV4>, Option<std::net::SocketAddrV6>),
    pub(crate) initial_max_path_id: Option<u32>,
    pub(crate) reset_key: Option<crate::server::StatelessResetKey>,
    pub(crate) cid_prefix: Option<u8>,
    pub(crate) cc: String,
    pub(crate) scheduler: String,
    pub(crate) scheduler_factory: Option<Arc<dyn crate::sched::SchedulerFactory>>,
    pub(crate) cc_factory: Option<Arc<dyn crate::cc::CcFactory>>,
    pub(crate) initial_rtt: Duration,
    pub(crate) send_buffer_limit: usize,
    pub(crate) send_unsent_limit: usize,
    pub(crate) pacing: bool,
    pub(crate) timestamps: bool,
    pub(crate) ecn: bool,
    pub(crate) pmtud: bool,
    pub(crate) max_mtu: usize,
    pub(crate) max_recv_udp_payload: usize,
    pub(crate) key_update_interval: u64,
    pub(crate) qlog: bool,
    /// QUIC versions accepted, most preferred first (RFC 9368).
    pub(crate) versions: Vec<Version>,
    /// Client: the version of its first Initial (default: `versions[0]`).
    pub(crate) initial_version: Option<Version>,
    session_tickets: bool,
    pub(crate) early_data: bool,
    /// DATAGRAM frames: (receive, send) queue lengths when enabled.
    pub(crate) dgram: Option<(usize, usize)>,
    /// Packet keys after Initial use the simulator's AEAD.
    #[cfg(feature = "sim-aead")]
    sim_aead: bool,
    tls_cache: TlsCache,
}

/// The TLS context built from the settings (for the last role asked),
/// shared with clones until one of them changes a TLS setting.
#[derive(Debug, Default)]
struct TlsCache(Mutex<Option<(bool, Arc<TlsConfig>)>>);

impl Clone for TlsCache {
    fn clone(&self) -> Self {
        TlsCache(Mutex::new(self.0.lock().ok().and_then(|c| c.clone())))
    }
}

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}

impl Config {
    /// Defaults: CUBIC, minRTT scheduler, peer verification on, 30 s idle
    /// timeout, 1350-byte datagrams, multipath off.
    pub fn new() -> Self {
        Config {
            alpn: Vec::new(),
            cert_chain: None,
            priv_key: None,
            ca_file: None,
            verify_peer: None,
            keylog: None,
            max_idle_timeout: Duration::from_secs(30),
            max_udp_payload: 1350,
            initial_max_data: 10 << 20,
            initial_max_stream_data_bidi_local: 1 << 20,
            initial_max_stream_data_bidi_remote: 1 << 20,
            initial_max_stream_data_uni: 1 << 20,
            initial_max_streams_bidi: 100,
            initial_max_streams_uni: 100,
            max_connection_window: 24 << 20,
            max_stream_window: 16 << 20,
            ack_delay_exponent: 3,
            max_ack_delay: Duration::from_millis(25),
            active_cid_limit: 4,
            disable_active_migration: false,
            preferred_address: (None, None),
            initial_max_path_id: None,
            reset_key: None,
            cid_prefix: None,
            cc: "cubic".into(),
            scheduler: "minrtt".into(),
            scheduler_factory: None,
            cc_factory: None,
            initial_rtt: crate::rtt::INITIAL_RTT,
            send_buffer_limit: 4 << 20,
            send_unsent_limit: usize::MAX,
            pacing: true,
            timestamps: true,
            ecn: true,
            pmtud: true,
            max_mtu: 1500,
            max_recv_udp_payload: 65527,
            key_update_interval: DEFAULT_KEY_UPDATE_INTERVAL,
            qlog: false,
            versions: vec![Version::V1],
            initial_version: None,
            session_tickets: false,
            early_data: false,
            dgram: None,
            #[cfg(feature = "sim-aead")]
            sim_aead: false,
            tls_cache: TlsCache::default(),
        }
    }

    fn tls_changed(&mut self) {
        if let Ok(mut c) = self.tls_cache.0.lock() {
            *c = None;
        }
    }

    /// ALPN protocols, most preferred first.
    pub fn set_application_protos(&mut self, protos: &[&[u8]]) -> Result<(), ConfigError> {
        if protos.iter().any(|p| p.is_empty() || p.len() > 255) {
            return Err(ConfigError::InvalidValue("ALPN protocol must be 1..=255 bytes"));
        }
        self.alpn = protos.iter().map(|p| p.to_vec()).collect();
        self.tls_changed();
        Ok(())
    }
    /// Certificate chain (PEM) presented to the peer.
    pub fn load_cert_chain_from_pem_file(&mut self, path: &str) -> Result<(), ConfigError> {
        check_readable(path)?;
        self.cert_chain = Some(path.into());
        self.tls_changed();
        Ok(())
    }
    /// Private key (PEM) of the certificate.
    pub fn load_priv_key_from_pem_file(&mut self, path: &str) -> Result<(), ConfigError> {
        check_readable(path)?;
        self.priv_key = Some(path.into());
        self.tls_changed();
        Ok(())
    }
    /// Trusted CA certificates (PEM) used to verify the peer.
    pub fn load_verify_locations_from_file(&mut self, path: &str) -> Result<(), ConfigError> {
        check_readable(path)?;
        self.ca_file = Some(path.into());
        self.tls_changed();
        Ok(())
    }
    /// Verify the peer's certificate (default: on for clients; a server that
    /// turns it on requires client certificates).
    pub fn verify_peer(&mut self, v: bool) {
        self.verify_peer = Some(v);
        self.tls_changed();
    }
    /// Append TLS secrets in NSS key log format to `path` (what SSLKEYLOGFILE
    /// points at), so Wireshark can decrypt captures.
    pub fn log_keys_to(&mut self, path: &str) {
        self.keylog = Some(path.into());
        self.tls_changed();
    }
    /// TLS session resumption (off by default): a server sends session
    /// tickets after the handshake; a client keeps the last one
    /// ([`Connection::session`](crate::Connection::session)) and resumes
    /// with [`connect_with_session`](crate::connect_with_session). Resumption
    /// skips the certificate; without [`enable_early_data`](Self::enable_early_data)
    /// it opens no replay risk.
    pub fn enable_session_tickets(&mut self, v: bool) {
        self.session_tickets = v;
        self.tls_changed();
    }
    /// 0-RTT (off by default; needs [`enable_session_tickets`](Self::enable_session_tickets)).
    /// A client resuming a session that allows it sends stream data written
    /// before the handshake ends in 0-RTT packets, under the limits the
    /// server had when it issued the ticket; if the server rejects it, the
    /// data is sent again in 1-RTT
    /// ([`Connection::is_early_data_accepted`](crate::Connection::is_early_data_accepted)
    /// says which). A server accepts 0-RTT from tickets it issued under
    /// the same flow-control limits.
    ///
    /// **Replay risk** (RFC 9001 §9.2, RFC 8446 §8): an attacker who
    /// captured a client's 0-RTT packets can send them to the server again,
    /// which then acts on the same early request more than once; mpquic
    /// keeps no anti-replay state. Enable it on a server only for requests
    /// that are safe to repeat (idempotent, like HTTP GET of static files).
    pub fn enable_early_data(&mut self, v: bool) {
        self.early_data = v;
        self.tls_changed();
    }
    /// DATAGRAM frames (RFC 9221, off by default): advertise
    /// max_datagram_frame_size and keep up to `recv_queue_len` datagrams
    /// received for the application (the oldest pushed out beyond) and up
    /// to `send_queue_len` waiting to be sent
    /// ([`Connection::dgram_send`](crate::Connection::dgram_send)).
    pub fn enable_dgram(&mut self, enabled: bool, recv_queue_len: usize, send_queue_len: usize) {
        self.dgram = enabled.then_some((recv_queue_len, send_queue_len));
    }
    /// Idle timeout (0 disables it).
    pub fn set_max_idle_timeout(&mut self, ms: u64) {
        self.max_idle_timeout = Duration::from_millis(ms);
    }
    /// Largest UDP payload we send (at least 1200).
    pub fn set_max_send_udp_payload_size(&mut self, v: usize) {
        self.max_udp_payload = v.clamp(1200, 65527);
    }
    /// Largest UDP payload we take (the max_udp_payload_size transport
    /// parameter, default 65527, at least 1200): the peer sends nothing
    /// larger, path MTU discovery included.
    pub fn set_max_recv_udp_payload_size(&mut self, v: usize) {
        self.max_recv_udp_payload = v.clamp(1200, 65527);
    }
    /// Connection-level flow-control window offered at first.
    pub fn set_initial_max_data(&mut self, v: u64) {
        self.initial_max_data = v;
    }
    /// Stream window for bidirectional streams we open.
    pub fn set_initial_max_stream_data_bidi_local(&mut self, v: u64) {
        self.initial_max_stream_data_bidi_local = v;
    }
    /// Stream window for bidirectional streams the peer opens.
    pub fn set_initial_max_stream_data_bidi_remote(&mut self, v: u64) {
        self.initial_max_stream_data_bidi_remote = v;
    }
    /// Stream window for unidirectional streams the peer opens.
    pub fn set_initial_max_stream_data_uni(&mut self, v: u64) {
        self.initial_max_stream_data_uni = v;
    }
    /// How many bidirectional streams the peer may open.
    pub fn set_initial_max_streams_bidi(&mut self, v: u64) {
        self.initial_max_streams_bidi = v;
    }
    /// How many unidirectional streams the peer may open.
    pub fn set_initial_max_streams_uni(&mut self, v: u64) {
        self.initial_max_streams_uni = v;
    }
    /// Upper bound of connection window auto-tuning.
    pub fn set_max_connection_window(&mut self, v: u64) {
        self.max_connection_window = v;
    }
    /// Upper bound of stream window auto-tuning.
    pub fn set_max_stream_window(&mut self, v: u64) {
        self.max_stream_window = v;
    }
    /// ACK delay exponent we advertise (0..=20).
    pub fn set_ack_delay_exponent(&mut self, v: u64) -> Result<(), ConfigError> {
        if v > 20 {
            return Err(ConfigError::InvalidValue("ack_delay_exponent must be <= 20"));
        }
        self.ack_delay_exponent = v;
        Ok(())
    }
    /// Max ACK delay we advertise, in ms (< 2^14).
    pub fn set_max_ack_delay(&mut self, ms: u64) -> Result<(), ConfigError> {
        if ms >= 1 << 14 {
            return Err(ConfigError::InvalidValue("max_ack_delay must be < 16384 ms"));
        }
        self.max_ack_delay = Duration::from_millis(ms);
        Ok(())
    }
    /// How many connection IDs per path we accept from the peer (>= 2).
    pub fn set_active_connection_id_limit(&mut self, v: u64) -> Result<(), ConfigError> {
        if v < 2 {
            return Err(ConfigError::InvalidValue("active_connection_id_limit must be >= 2"));
        }
        self.active_cid_limit = v;
        Ok(())
    }
    /// Derive the stateless reset tokens of our connection IDs from `key`
    /// (servers: the same key for every connection and for
    /// [`crate::server::stateless_reset`], so a connection whose state is lost
    /// can still be reset). Without it each connection uses a random key.
    pub fn set_stateless_reset_key(&mut self, key: crate::server::StatelessResetKey) {
        self.reset_key = Some(key);
    }
    /// Make every connection ID we issue start with `byte` (none: fully
    /// random). Servers that share one address — worker threads behind
    /// SO_REUSEPORT, or machines behind a load balancer — use it to steer
    /// each datagram to the one holding its connection, as QUIC-LB does;
    /// the other bytes stay random.
    pub fn set_cid_prefix(&mut self, byte: Option<u8>) {
        self.cid_prefix = byte;
    }
    /// Start a 1-RTT key update after this many packets with the same keys
    /// (at least 1000). The default, 2^22, is half AES-GCM's confidentiality
    /// limit (RFC 9001 §6.6); a connection that cannot update by the limit
    /// closes with AEAD_LIMIT_REACHED.
    pub fn set_key_update_interval(&mut self, packets: u64) {
        self.key_update_interval = packets.clamp(1000, AEAD_CONFIDENTIALITY_LIMIT);
    }
    /// The QUIC versions this endpoint accepts, most preferred first
    /// (default: v1 only). With more than v1 both sides send them in
    /// version_information (RFC 9368; a v1-only endpoint sends none, so its
    /// handshake is as it was before v2); a server switches a client to the first of them the
    /// client lists as available (compatible version negotiation), and
    /// answers a version it does not accept with Version Negotiation. A
    /// client starts with the first unless
    /// [`set_initial_version`](Self::set_initial_version) says otherwise.
    pub fn set_versions(&mut self, versions: &[Version]) -> Result<(), ConfigError> {
        let dup = versions.iter().enumerate().any(|(i, v)| versions[..i].contains(v));
        if versions.is_empty() || dup {
            return Err(ConfigError::InvalidValue("versions: empty or repeated"));
        }
        if self.initial_version.is_some_and(|v| !versions.contains(&v)) {
            return Err(ConfigError::InvalidValue("versions: must include the initial version"));
        }
        self.versions = versions.to_vec();
        Ok(())
    }
    /// Client: the version of its first Initial, one of
    /// [`set_versions`](Self::set_versions)'. Starting with v1 while
    /// preferring v2 lets a server upgrade the connection.
    pub fn set_initial_version(&mut self, version: Version) -> Result<(), ConfigError> {
        if !self.versions.contains(&version) {
            return Err(ConfigError::InvalidValue("initial version not among the accepted versions"));
        }
        self.initial_version = Some(version);
        Ok(())
    }
    /// The accepted versions, most preferred first.
    pub fn versions(&self) -> &[Version] {
        &self.versions
    }
    pub(crate) fn first_version(&self) -> Version {
        self.initial_version.or(self.versions.first().copied()).unwrap_or_default()
    }
    /// Server: offer `addr` as the preferred address (RFC 9000 §9.6; one
    /// IPv4 and one IPv6 address may be set). Clients move their first path
    /// there once the handshake is confirmed, after validating it; the
    /// server must receive on `addr` and hand those datagrams to the same
    /// connection (an [`Endpoint`](crate::Endpoint) routes them by
    /// connection ID like any other). Needs non-empty connection IDs.
    pub fn set_preferred_address(&mut self, addr: std::net::SocketAddr) {
        match addr {
            std::net::SocketAddr::V4(a) => self.preferred_address.0 = Some(a),
            std::net::SocketAddr::V6(a) => self.preferred_address.1 = Some(a),
        }
    }
    /// Advertise disable_active_migration.
    pub fn set_disable_active_migration(&mut self, v: bool) {
        self.disable_active_migration = v;
    }
    /// Enable multipath (draft-ietf-quic-multipath-21) by advertising
    /// `initial_max_path_id`; `None` disables it.
    pub fn set_initial_max_path_id(&mut self, v: Option<u32>) {
        self.initial_max_path_id = v;
    }
    /// Congestion controller by name (see [`crate::cc::names`]).
    pub fn set_cc(&mut self, name: &str) -> Result<(), ConfigError> {
        let Some(c) = crate::cc::canonical(name) else {
            return Err(ConfigError::UnknownAlgorithm(UnknownAlgorithm(name.into())));
        };
        self.cc = c.into();
        self.cc_factory = None;
        Ok(())
    }
    /// A congestion controller implemented outside the crate: every new
    /// path gets one from `factory` (replaces [`set_cc`](Self::set_cc));
    /// example in the [`crate::cc`] docs.
    pub fn set_cc_factory(&mut self, factory: Arc<dyn crate::cc::CcFactory>) {
        self.cc = factory.name().to_owned();
        self.cc_factory = Some(factory);
    }
    /// Path scheduler by name.
    pub fn set_scheduler(&mut self, name: &str) -> Result<(), ConfigError> {
        crate::sched::build(name, &crate::sched::SchedParams::default())
            .map_err(|e| ConfigError::UnknownAlgorithm(UnknownAlgorithm(e.to_string())))?;
        self.scheduler = name.into();
        self.scheduler_factory = None;
        Ok(())
    }
    /// A scheduler implemented outside the crate: every new connection
    /// gets one from `factory` (replaces [`set_scheduler`](Self::set_scheduler)).
    pub fn set_scheduler_factory(&mut self, factory: Arc<dyn crate::sched::SchedulerFactory>) {
        self.scheduler = factory.name().to_owned();
        self.scheduler_factory = Some(factory);
    }
    /// RTT assumed before the first sample.
    pub fn set_initial_rtt(&mut self, rtt: Duration) {
        self.initial_rtt = rtt;
    }
    /// Bytes an application may buffer per stream before `stream_send`
    /// accepts only part of a write.
    pub fn set_stream_send_buffer(&mut self, bytes: usize) {
        self.send_buffer_limit = bytes.max(1);
    }
    /// Bytes an application may have written to a stream and not yet sent
    /// before `stream_send` accepts only part of a write (default: only the
    /// send buffer limits it). With it, a stream buffers what is in flight
    /// plus this, not a whole response: memory by need on a busy server.
    pub fn set_stream_send_unsent(&mut self, bytes: usize) {
        self.send_unsent_limit = bytes.max(1);
    }
    /// Whether `SendInfo::at` carries pacing release times.
    pub fn enable_pacing(&mut self, v: bool) {
        self.pacing = v;
    }
    /// Whether paths mark their packets ECT(0) (`SendInfo::ecn`) and
    /// validate ECN (RFC 9000 §13.4.2; default on). Received codepoints
    /// (`RecvInfo::ecn`) are counted in ACK frames either way. An application
    /// whose sockets cannot set or read the codepoint loses nothing: the
    /// peer's ACKs then carry no counts and the path stops marking.
    pub fn enable_ecn(&mut self, v: bool) {
        self.ecn = v;
    }
    /// Path MTU discovery (DPLPMTUD, RFC 9000 §14.3; default on): each path
    /// starts at [`set_max_send_udp_payload_size`](Self::set_max_send_udp_payload_size)
    /// and probes for larger datagrams up to the link MTU of
    /// [`set_max_mtu`](Self::set_max_mtu), within the peer's
    /// max_udp_payload_size; a path that loses its large packets while
    /// small ones pass (a black hole) falls back to 1200 bytes and searches
    /// again. `PathStats::mtu` says where a path is. Off, every datagram
    /// stays at the starting size.
    pub fn enable_pmtud(&mut self, v: bool) {
        self.pmtud = v;
    }
    /// The largest IP packet path MTU discovery tries (default 1500, an
    /// Ethernet MTU: UDP payloads of 1472 bytes over IPv4, 1452 over IPv6);
    /// at least 1280.
    pub fn set_max_mtu(&mut self, bytes: usize) {
        self.max_mtu = bytes.clamp(1280, 65535);
    }
    /// Offer the timestamp extension ([`crate::frame::timestamp`]) when
    /// multipath is offered (default on): with a peer that offers it too,
    /// ACKs carry the peer's send time, and shared-bottleneck detection
    /// reads one-way delays instead of RTT samples (which carry the return
    /// path's queues). Other peers ignore the offer.
    pub fn enable_timestamps(&mut self, v: bool) {
        self.timestamps = v;
    }
    /// Queue qlog-style events in each connection (see [`crate::qlog`]);
    /// drain them with [`Connection::qlog_next`](crate::Connection::qlog_next).
    pub fn enable_qlog(&mut self, v: bool) {
        self.qlog = v;
    }

    /// Simulations only (feature `sim-aead`, which `mpquic-sim` turns on):
    /// packet keys after the Initial ones leave the payload in clear and
    /// carry a keyed checksum as their 16-byte tag. Packets keep their
    /// sizes, corrupted or misdirected packets are still refused, but
    /// nothing is secret or authenticated against an attacker. Both ends
    /// must agree; socket endpoints refuse such a config
    /// ([`uses_sim_aead`](Self::uses_sim_aead)).
    #[cfg(feature = "sim-aead")]
    #[doc(hidden)]
    pub fn use_sim_aead(&mut self, on: bool) {
        self.sim_aead = on;
        self.tls_changed();
    }

    /// Whether [`use_sim_aead`](Self::use_sim_aead) is on (always false
    /// without the `sim-aead` feature): what socket endpoints check before
    /// using a config on a real network.
    #[doc(hidden)]
    pub fn uses_sim_aead(&self) -> bool {
        #[cfg(feature = "sim-aead")]
        return self.sim_aead;
        #[cfg(not(feature = "sim-aead"))]
        false
    }

    /// The TLS context for one role, built once and shared.
    pub(crate) fn tls(&self, is_server: bool) -> Result<Arc<TlsConfig>, ConfigError> {
        let mut cache = self.tls_cache.0.lock().map_err(|_| ConfigError::Tls("poisoned".into()))?;
        if let Some((s, c)) = cache.as_ref() {
            if *s == is_server {
                return Ok(c.clone());
            }
        }
        let mut b = if is_server { TlsConfig::server() } else { TlsConfig::client() };
        let verify = self.verify_peer.unwrap_or(!is_server);
        b = b.alpn(&self.alpn).verify_peer(verify);
        if let Some(p) = &self.cert_chain {
            b = b.cert_chain_file(p);
        }
        if let Some(p) = &self.priv_key {
            b = b.private_key_file(p);
        }
        // The system's CA bundle costs ~140 M instructions to load: only a
        // context that verifies and has no CA file of its own needs it.
        if let Some(p) = &self.ca_file {
            b = b.ca_file(p);
        } else if verify {
            b = b.default_verify_paths();
        }
        if let Some(p) = &self.keylog {
            b = b.keylog_file(p);
        }
        b = b.session_tickets(self.session_tickets).early_data(self.early_data);
        #[cfg(feature = "sim-aead")]
        {
            b = b.sim_aead(self.sim_aead);
        }
        let c = Arc::new(b.build()?);
        *cache = Some((is_server, c.clone()));
        Ok(c)
    }
}

fn check_readable(path: &str) -> Result<(), ConfigError> {
    std::fs::metadata(path).map(|_| ()).map_err(|e| ConfigError::Tls(format!("{path}: {e}")))
}
