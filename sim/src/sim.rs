//! The event loop: connections and links on one simulated clock.
//!
//! Each step advances the clock to the earliest pending event — a link delivering a
//! datagram, a connection timer, a paced datagram's release time (`SendInfo::at`), a
//! flow starting, a sample tick — and then, in a fixed order, delivers every datagram
//! due, runs the applications (request, write, read), fires due timers and lets every
//! connection send. Everything is indexed by `Vec` position (no hash-map iteration), and
//! the only randomness is the links' seeded loss RNGs, so a seed fixes the outcome.
//!
//! A flow path is a route of one or more links in series ([`Route`]): a datagram
//! leaving one hop's link enters the next at once (its `Packet::tag` carries the hop).
//!
//! A datagram whose `at` is in the future is held in a per-path FIFO and enters the
//! link at `at`. The connection keeps being asked for datagrams (other paths may be
//! free to send) until some path holds two: then it waits for the next release. So the
//! RTT error from the engine stamping a datagram at `now` is at most two pacing gaps.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use emu::link::{PathLinks, Route};
use emu::scenario::Scenario;
use emu::stage::{Packet, Stage};
use mpquic::{Config, Connection, Ecn, PathError, RecvInfo};

use crate::app::{App, Body, CHUNK};
use crate::qlog::{check_dir, QlogFile};
use crate::report::{quantile, FlowSummary, LinkSummary, PathSample, PathSummary, Report, Sample};
pub use crate::tag::MAX_HOPS;
use crate::tag::{Tag, MAX_FLOW_PATHS};

/// Bytes of IPv4 + UDP headers the links charge on top of each UDP payload.
pub const HEADER_BYTES: u32 = 28;
/// Interval of the out-of-order byte sampler used for the summary statistics.
const OOO_TICK: Duration = Duration::from_millis(10);
/// After this many steps without the clock moving, the loop nudges it forward by 1 µs
/// (a guard against a timer that stays due; counted in [`Report`]'s `stalls`).
const SAME_TIME_LIMIT: u32 = 10_000;

/// What a flow transfers. Every body is generated and checked byte by byte on the
/// receiving side ([`FlowSummary::body_mismatches`](crate::FlowSummary)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Workload {
    /// HTTP/3 download: the client sends `GET /bytes/N`, the server answers 200 with an
    /// N-byte body (unbounded flows: no content-length, the body never ends).
    #[default]
    H3,
    /// Plain-stream download: a 3-byte request, then the body on the same stream.
    Download,
    /// Plain-stream upload: the client sends, the server receives.
    Upload,
    /// Constant-bitrate video on a plain stream (seed 002: 5.24 Mbit/s, 3 minutes,
    /// pictures due at fixed playout times; see [`crate::video`]). The flow's
    /// `bytes` are ignored: the stream is the video.
    Video,
}

impl Workload {
    /// `h3`, `stream` (plain-stream download) or `upload`.
    pub fn parse(name: &str) -> Result<Workload, SimError> {
        match name {
            "h3" => Ok(Workload::H3),
            "stream" => Ok(Workload::Download),
            "upload" => Ok(Workload::Upload),
            "video" => Ok(Workload::Video),
            _ => Err(SimError::Invalid(format!("unknown workload {name:?} (h3, stream, upload, video)"))),
        }
    }

    /// The name [`Workload::parse`] accepts.
    pub fn name(self) -> &'static str {
        match self {
            Workload::H3 => "h3",
            Workload::Download => "stream",
            Workload::Upload => "upload",
            Workload::Video => "video",
        }
    }

    /// Whether the server sends the data.
    pub fn is_download(self) -> bool {
        self != Workload::Upload
    }
}

/// One client/server connection pair.
#[derive(Debug, Clone)]
pub struct FlowSpec {
    /// Congestion controller name (`Config::set_cc`).
    pub cc: String,
    /// Scheduler name (`Config::set_scheduler`).
    pub scheduler: String,
    /// Network paths (indices into the simulator's routes; without routes, its links)
    /// the flow uses; the first carries the handshake. More than one requires multipath.
    pub paths: Vec<usize>,
    /// When the client connects.
    pub start: Duration,
    /// Bytes to transfer; `None`: as much as possible until the end.
    pub bytes: Option<u64>,
    /// Direction of the transfer.
    pub workload: Workload,
    /// Receive window of the receiving endpoint (connection and stream), in
    /// bytes; `None`: large enough never to limit (128 MiB).
    pub recv_window: Option<u64>,
    /// A background flow: reported, but the run does not wait for it to complete.
    pub background: bool,
    /// Both endpoints mark ECT(0) and validate ECN (`Config::enable_ecn`);
    /// off by default, so runs stay what they were before ECN existed.
    pub ecn: bool,
    /// Both endpoints run path MTU discovery (`Config::enable_pmtud`, up to
    /// 1500-byte IP packets); off by default: the seeds' experiments use
    /// one datagram size (`SimConfig::max_udp_payload`).
    pub pmtud: bool,
    /// Both endpoints offer the timestamp extension (`Config::enable_timestamps`,
    /// on by default as in the library): shared-bottleneck detection reads
    /// one-way delays; off, it falls back to RTT samples, as with other peers.
    pub timestamps: bool,
}

impl FlowSpec {
    /// An HTTP/3 download over `paths` with CUBIC and minRTT, starting at 0, unlimited.
    pub fn new(paths: Vec<usize>) -> FlowSpec {
        FlowSpec {
            cc: "cubic".into(),
            scheduler: "minrtt".into(),
            paths,
            start: Duration::ZERO,
            bytes: None,
            workload: Workload::H3,
            recv_window: None,
            background: false,
            ecn: false,
            pmtud: false,
            timestamps: true,
        }
    }

    /// Offers the timestamp extension or not (builder style).
    pub fn timestamps(mut self, on: bool) -> FlowSpec {
        self.timestamps = on;
        self
    }

    /// Sets the start time (builder style).
    pub fn start(mut self, at: Duration) -> FlowSpec {
        self.start = at;
        self
    }

    /// Marks the flow as background traffic (builder style).
    pub fn background(mut self) -> FlowSpec {
        self.background = true;
        self
    }

    /// Sets the receiver's window (builder style).
    pub fn recv_window(mut self, bytes: u64) -> FlowSpec {
        self.recv_window = Some(bytes);
        self
    }

    /// Sets the workload (builder style).
    pub fn workload(mut self, w: Workload) -> FlowSpec {
        self.workload = w;
        self
    }

    /// Sets the transfer size (builder style).
    pub fn bytes(mut self, n: u64) -> FlowSpec {
        self.bytes = Some(n);
        self
    }

    /// Sets the controller (builder style).
    pub fn cc(mut self, cc: &str) -> FlowSpec {
        self.cc = cc.into();
        self
    }

    /// Sets the scheduler (builder style).
    pub fn scheduler(mut self, s: &str) -> FlowSpec {
        self.scheduler = s.into();
        self
    }

    /// Turns ECN on for both endpoints (builder style).
    pub fn ecn(mut self) -> FlowSpec {
        self.ecn = true;
        self
    }
}

/// A network link black-holed from `at` on (both directions, packets inside the link
/// included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// Link index (for a scenario, a path's own link has the path's index and named
    /// links follow the paths).
    pub path: usize,
    /// Time of the failure.
    pub at: Duration,
}

/// A NAT rebinding: from `at` on, the server sees the client's end of flow
/// path `path` of the first flow at a new port, and what it still sends to
/// the old one is lost (the NAT's old mapping is gone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rebinding {
    /// Flow path index of the first flow.
    pub path: usize,
    /// Time of the rebinding.
    pub at: Duration,
}

/// The address a NAT gives a client after rebinding.
fn rebound_addr(a: SocketAddr) -> SocketAddr {
    let mut b = a;
    b.set_port(a.port().wrapping_add(1000));
    b
}

/// Settings of a run.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Name used in reports.
    pub name: String,
    /// Simulated time limit (the run also stops once every bounded flow completed).
    pub duration: Duration,
    /// Time-series sampling interval.
    pub sample_interval: Duration,
    /// Seed recorded in the report (the links carry their own derived seeds).
    pub seed: u64,
    /// The connections.
    pub flows: Vec<FlowSpec>,
    /// Scheduled path failures.
    pub failures: Vec<Failure>,
    /// Scheduled NAT rebindings of the first flow's paths.
    pub rebindings: Vec<Rebinding>,
    /// Maximum UDP payload the endpoints send.
    pub max_udp_payload: usize,
    /// Write every endpoint's qlog here (`flow<i>_client.sqlog`,
    /// `flow<i>_server.sqlog`, in simulated time; see [`crate::qlog`]).
    pub qlog_dir: Option<PathBuf>,
    /// Protect packets with the real AEAD (AES-GCM) instead of the
    /// simulation's (`mpquic::Config::use_sim_aead`: payload in clear, a keyed
    /// checksum as tag, same sizes). Results are identical either way; the
    /// simulation's AEAD only saves time.
    pub real_aead: bool,
}

impl SimConfig {
    /// One download flow over every path of `n_paths`, running `duration`.
    pub fn new(name: &str, n_paths: usize, duration: Duration) -> SimConfig {
        SimConfig {
            name: name.into(),
            duration,
            sample_interval: Duration::from_millis(100),
            seed: 0,
            flows: vec![FlowSpec::new((0..n_paths).collect())],
            failures: Vec::new(),
            rebindings: Vec::new(),
            max_udp_payload: 1350,
            qlog_dir: None,
            real_aead: false,
        }
    }

    /// One download flow over the scenario's `test_paths`, running `duration`
    /// (the background flows are added by [`Sim::from_scenario`]).
    pub fn for_scenario(scenario: &Scenario, duration: Duration) -> SimConfig {
        let mut cfg = SimConfig::new(&scenario.name, 0, duration);
        cfg.flows = vec![FlowSpec::new(scenario.test_paths.clone())];
        cfg
    }
}

/// Why a simulation could not be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// A flow refers to a path that does not exist, or uses none.
    BadPath(String),
    /// Engine configuration failed (unknown controller or scheduler, certificates).
    Config(String),
    /// Invalid run settings.
    Invalid(String),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::BadPath(s) => write!(f, "bad path: {s}"),
            SimError::Config(s) => write!(f, "configuration: {s}"),
            SimError::Invalid(s) => write!(f, "invalid settings: {s}"),
        }
    }
}

impl std::error::Error for SimError {}

/// A datagram a connection produced for a later release time.
struct Held {
    at: Duration,
    pkt: Packet,
}

struct Endpoint {
    conn: Connection,
    /// Per flow path, datagrams waiting for their release time (in order).
    held: Vec<VecDeque<Held>>,
    qlog: Option<QlogFile>,
}

impl Endpoint {
    /// Endpoint `conn` of flow `flow`, logging into `qlog_dir` if set (a
    /// file that cannot be created is reported in `err`).
    fn new(
        conn: Connection,
        n_paths: usize,
        flow: usize,
        qlog_dir: Option<&Path>,
        err: &mut Option<String>,
    ) -> Endpoint {
        let qlog = qlog_dir.and_then(|d| {
            QlogFile::create(d, flow, &conn)
                .map_err(|e| *err = Some(format!("qlog of flow {flow} in {}: {e}", d.display())))
                .ok()
        });
        Endpoint { conn, held: (0..n_paths).map(|_| VecDeque::with_capacity(4)).collect(), qlog }
    }

    /// Copy the connection's queued qlog events into its file (flushed when `last`).
    fn drain_qlog(&mut self, last: bool) -> std::io::Result<()> {
        let Some(q) = &mut self.qlog else { return Ok(()) };
        q.drain(&mut self.conn)?;
        if last {
            q.flush()?;
        }
        Ok(())
    }

    fn next_release(&self) -> Option<Duration> {
        self.held.iter().filter_map(|q| q.front().map(|h| h.at)).min()
    }

    /// How many paced datagrams a path may hold before the endpoint stops
    /// asking for more. One path: the engine does not gate on pacing, so
    /// stop at the second. Several: the engine itself gives no packet to a
    /// path whose pacer runs more than a millisecond ahead, so queues stay
    /// short, and stopping early would let one path's pacer starve the
    /// others.
    fn hold_limit(&self) -> usize {
        if self.held.len() > 1 {
            64
        } else {
            2
        }
    }

    /// Some path holds as many paced datagrams as it may.
    fn blocked(&self) -> bool {
        let limit = self.hold_limit();
        self.held.iter().any(|q| q.len() >= limit)
    }
}

#[derive(Default)]
struct FlowState {
    started: bool,
    app_bytes: u64,
    app_bytes_last: u64,
    done_at: Option<Duration>,
    /// Per flow path: data-direction UDP payload bytes delivered, and at last sample.
    data_bytes: Vec<u64>,
    data_bytes_last: Vec<u64>,
    /// Per flow path: sum and count of srtt samples.
    srtt_sum: Vec<f64>,
    srtt_n: Vec<u64>,
    ooo_samples: Vec<u64>,
    ooo_max: u64,
    /// The sender's latest statistics of each path it had (by path ID, as of
    /// the last sample): the engine drops a path 3 PTO after abandoning it,
    /// and what it carried still belongs in the report.
    path_stats: Vec<mpquic::PathStats>,
    paths_opened: bool,
    /// Next flow path to open (path 0 is the handshake path).
    next_path: usize,
    error: Option<String>,
}

struct Flow {
    spec: FlowSpec,
    ccfg: Config,
    scfg: Config,
    client: Option<Endpoint>,
    server: Option<Endpoint>,
    /// (client, server) address per flow path.
    addrs: Vec<(SocketAddr, SocketAddr)>,
    /// Per flow path, when its NAT mapping changes (see [`Rebinding`]).
    rebind_at: Vec<Option<Duration>>,
    app: App,
    st: FlowState,
}

impl Flow {
    fn receiver(&mut self) -> Option<&mut Connection> {
        if self.spec.workload.is_download() {
            self.client.as_mut().map(|e| &mut e.conn)
        } else {
            self.server.as_mut().map(|e| &mut e.conn)
        }
    }

    fn sender(&self) -> Option<&Connection> {
        if self.spec.workload.is_download() {
            self.server.as_ref().map(|e| &e.conn)
        } else {
            self.client.as_ref().map(|e| &e.conn)
        }
    }

    /// Flow path index of a sender-side path, by its client address
    /// (before or after a rebinding).
    fn path_of_stats(&self, ps: &mpquic::PathStats) -> Option<usize> {
        let client = if self.spec.workload.is_download() { ps.peer } else { ps.local };
        self.addrs.iter().position(|a| a.0 == client || rebound_addr(a.0) == client)
    }
}

/// Updates `known` (by path ID) with `now`'s statistics; paths no longer
/// listed keep their last ones.
fn remember_path_stats(known: &mut Vec<mpquic::PathStats>, now: impl Iterator<Item = mpquic::PathStats>) {
    for ps in now {
        match known.iter_mut().find(|k| k.id == ps.id) {
            Some(k) => *k = ps,
            None => known.push(ps),
        }
    }
}

/// The client address the server sees on flow path `k` at `t`.
fn seen_client(
    addrs: &[(SocketAddr, SocketAddr)],
    rebind_at: &[Option<Duration>],
    k: usize,
    t: Duration,
) -> SocketAddr {
    let a = addrs[k].0;
    if rebind_at.get(k).copied().flatten().is_some_and(|at| t >= at) {
        rebound_addr(a)
    } else {
        a
    }
}

/// The flow path the server reaches by sending to `client` at `t`; none for
/// an address whose NAT mapping is gone.
fn path_to_client(
    addrs: &[(SocketAddr, SocketAddr)],
    rebind_at: &[Option<Duration>],
    client: SocketAddr,
    t: Duration,
) -> Option<usize> {
    (0..addrs.len()).find(|&k| seen_client(addrs, rebind_at, k, t) == client)
}

impl Flow {
    fn finished(&self) -> bool {
        (self.spec.bytes.is_some() || self.spec.workload == Workload::Video) && self.st.done_at.is_some()
    }
}

/// A simulation: links, flows, clock.
pub struct Sim {
    base: Instant,
    now: Duration,
    links: Vec<PathLinks>,
    routes: Vec<Route>,
    flows: Vec<Flow>,
    failures: Vec<Failure>,
    failure_drops: Vec<u64>,
    duration: Duration,
    interval: Duration,
    name: String,
    seed: u64,
    max_udp_payload: usize,
    pool: Vec<Vec<u8>>,
    scratch: Vec<Packet>,
    due: Vec<(usize, Packet)>,
    sink: Vec<u8>,
    body: Body,
    samples: Vec<Sample>,
    datagrams: u64,
    stalls: u64,
    qlog_dir: Option<PathBuf>,
    /// The first error writing a qlog file.
    qlog_error: Option<String>,
}

fn make_config(server: bool, spec: &FlowSpec, cfg: &SimConfig) -> Result<Config, SimError> {
    let err = |e: mpquic::ConfigError| SimError::Config(e.to_string());
    let mut c = Config::new();
    let alpn: &[u8] = if spec.workload == Workload::H3 { b"h3" } else { b"mpquic-sim" };
    c.set_application_protos(&[alpn]).map_err(err)?;
    if server {
        let (cert, key) = crate::certs::files().map_err(SimError::Config)?;
        c.load_cert_chain_from_pem_file(cert).map_err(err)?;
        c.load_priv_key_from_pem_file(key).map_err(err)?;
    } else {
        c.verify_peer(false);
    }
    c.set_cc(&spec.cc).map_err(err)?;
    c.set_scheduler(&spec.scheduler).map_err(err)?;
    c.enable_ecn(spec.ecn);
    c.enable_pmtud(spec.pmtud);
    c.enable_timestamps(spec.timestamps);
    // Windows large enough that flow control never limits 200 Mbit/s at 250 ms RTT.
    c.set_initial_max_data(64 << 20);
    c.set_initial_max_stream_data_bidi_local(32 << 20);
    c.set_initial_max_stream_data_bidi_remote(32 << 20);
    c.set_max_connection_window(128 << 20);
    c.set_max_stream_window(128 << 20);
    c.set_stream_send_buffer(32 << 20);
    if let Some(w) = spec.recv_window {
        // A small receive buffer (seed 003): the window stays fixed.
        c.set_initial_max_data(w);
        c.set_initial_max_stream_data_bidi_local(w);
        c.set_initial_max_stream_data_bidi_remote(w);
        c.set_max_connection_window(w);
        c.set_max_stream_window(w);
    }
    c.set_max_send_udp_payload_size(cfg.max_udp_payload);
    c.use_sim_aead(!cfg.real_aead);
    c.set_max_idle_timeout(60_000);
    if spec.paths.len() > 1 {
        c.set_initial_max_path_id(Some(spec.paths.len() as u32 + 3));
    }
    Ok(c)
}

/// Checks a controller and a scheduler name, listing the known ones if unknown.
fn check_names(cc: &str, scheduler: &str) -> Result<(), String> {
    if mpquic::cc::registry::canonical(cc).is_none() {
        return Err(format!(
            "unknown controller {cc:?} (known: {})",
            mpquic::cc::registry::names().join(", ")
        ));
    }
    mpquic::sched::build(scheduler, &mpquic::sched::SchedParams::default())
        .map(|_| ())
        .map_err(|e| format!("{e} (known: {})", mpquic::sched::names().join(", ")))
}

fn addr(flow: usize, k: usize, host: u8, port: u16) -> SocketAddr {
    // 10.<flow>.<path>.<host>; flows and paths beyond 255 wrap (never in practice).
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, (flow % 256) as u8, (k % 256) as u8, host), port))
}

impl Sim {
    /// A simulation over `links` (network paths, indexed from 0), each path one link.
    pub fn new(links: Vec<PathLinks>, cfg: SimConfig) -> Result<Sim, SimError> {
        let routes =
            links.iter().enumerate().map(|(i, l)| Route { name: l.name.clone(), links: vec![i] }).collect();
        Sim::with_routes(links, routes, cfg)
    }

    /// A simulation whose network paths are `routes` over `links`: the flows'
    /// `paths` index `routes`, failures index `links`.
    pub fn with_routes(links: Vec<PathLinks>, routes: Vec<Route>, cfg: SimConfig) -> Result<Sim, SimError> {
        for r in &routes {
            if r.links.is_empty() || r.links.len() > MAX_HOPS {
                return Err(SimError::BadPath(format!(
                    "route {:?} has {} links (1 to {MAX_HOPS})",
                    r.name,
                    r.links.len()
                )));
            }
            if let Some(&l) = r.links.iter().find(|&&l| l >= links.len()) {
                return Err(SimError::BadPath(format!(
                    "route {:?} uses link {l}, but there are {} links",
                    r.name,
                    links.len()
                )));
            }
        }
        if cfg.flows.is_empty() {
            return Err(SimError::Invalid("no flows".into()));
        }
        if cfg.sample_interval.is_zero() {
            return Err(SimError::Invalid("sample interval must be > 0".into()));
        }
        if !(1200..=1452).contains(&cfg.max_udp_payload) {
            return Err(SimError::Invalid("max UDP payload must be in 1200..=1452".into()));
        }
        for f in &cfg.failures {
            if f.path >= links.len() {
                return Err(SimError::BadPath(format!("failure on path {} of {}", f.path, links.len())));
            }
        }
        if let Some(d) = &cfg.qlog_dir {
            check_dir(d).map_err(|e| SimError::Invalid(format!("qlog directory {}: {e}", d.display())))?;
        }
        let mut flows = Vec::with_capacity(cfg.flows.len());
        for (i, spec) in cfg.flows.iter().enumerate() {
            if spec.paths.is_empty() {
                return Err(SimError::BadPath(format!("flow {i} uses no path")));
            }
            if let Some(&p) = spec.paths.iter().find(|&&p| p >= routes.len()) {
                return Err(SimError::BadPath(format!(
                    "flow {i} uses path {p}, but there are {} paths",
                    routes.len()
                )));
            }
            if spec.paths.len() > MAX_FLOW_PATHS || i > u32::MAX as usize {
                return Err(SimError::BadPath(format!("flow {i}: too many flows or paths")));
            }
            let n = spec.paths.len();
            let (mut ccfg, mut scfg) = (make_config(false, spec, &cfg)?, make_config(true, spec, &cfg)?);
            ccfg.enable_qlog(cfg.qlog_dir.is_some());
            scfg.enable_qlog(cfg.qlog_dir.is_some());
            flows.push(Flow {
                ccfg,
                scfg,
                spec: spec.clone(),
                client: None,
                server: None,
                addrs: (0..n).map(|k| (addr(i, k, 2, 50_000), addr(i, k, 1, 443))).collect(),
                rebind_at: (0..n)
                    .map(|k| cfg.rebindings.iter().filter(|r| i == 0 && r.path == k).map(|r| r.at).min())
                    .collect(),
                app: match spec.workload {
                    Workload::H3 => App::h3(),
                    Workload::Download => App::stream(false),
                    Workload::Upload => App::stream(true),
                    Workload::Video => App::video(),
                },
                st: FlowState {
                    next_path: 1,
                    data_bytes: vec![0; n],
                    data_bytes_last: vec![0; n],
                    srtt_sum: vec![0.0; n],
                    srtt_n: vec![0; n],
                    ..Default::default()
                },
            });
        }
        let n_links = links.len();
        #[allow(clippy::disallowed_methods)]
        // The one clock read: the epoch every simulated time is an offset from.
        let base = Instant::now();
        Ok(Sim {
            base,
            now: Duration::ZERO,
            links,
            routes,
            flows,
            failures: cfg.failures,
            failure_drops: vec![0; n_links],
            duration: cfg.duration,
            interval: cfg.sample_interval,
            name: cfg.name,
            seed: cfg.seed,
            // Room for path MTU probes up to 1500-byte IP packets.
            max_udp_payload: if cfg.flows.iter().any(|f| f.pmtud) { 1472 } else { cfg.max_udp_payload },
            pool: Vec::new(),
            scratch: Vec::new(),
            due: Vec::new(),
            sink: vec![0; CHUNK],
            body: Body::new(),
            samples: Vec::new(),
            datagrams: 0,
            stalls: 0,
            qlog_dir: cfg.qlog_dir,
            qlog_error: None,
        })
    }

    /// A simulation over a scenario's network (re-seeded with `seed`): the flows of
    /// `cfg` (the flow under test: see [`SimConfig::for_scenario`]) over the scenario's
    /// paths, followed by the scenario's background flows. A background flow without a
    /// controller takes the first flow's; every background flow takes its workload.
    pub fn from_scenario(scenario: &Scenario, seed: u64, mut cfg: SimConfig) -> Result<Sim, SimError> {
        let sc = scenario.clone().with_seed(seed);
        cfg.seed = seed;
        let first = cfg.flows.first().cloned().ok_or_else(|| SimError::Invalid("no flows".into()))?;
        for (i, bg) in sc.flows.iter().enumerate() {
            let cc = bg.cc.as_deref().unwrap_or(&first.cc);
            check_names(cc, &bg.scheduler)
                .map_err(|m| SimError::Config(format!("scenario flow {}: {m}", i + 1)))?;
            let mut f = FlowSpec::new(bg.paths.clone())
                .cc(cc)
                .scheduler(&bg.scheduler)
                .workload(first.workload)
                .start(bg.start)
                .background();
            f.bytes = bg.bytes;
            cfg.flows.push(f);
        }
        let net = sc.build_network();
        Sim::with_routes(net.links, net.routes, cfg)
    }

    /// Names of the network paths (routes).
    pub fn path_names(&self) -> Vec<String> {
        self.routes.iter().map(|r| r.name.clone()).collect()
    }

    /// Names of the links.
    pub fn link_names(&self) -> Vec<String> {
        self.links.iter().map(|l| l.name.clone()).collect()
    }

    /// The link a packet of `route` crosses at `hop` (uplink: in route order;
    /// downlink: reversed).
    fn hop_link(&self, route: usize, hop: usize, to_server: bool) -> Option<usize> {
        let links = &self.routes.get(route)?.links;
        let i = if to_server { hop } else { links.len().checked_sub(hop + 1)? };
        links.get(i).copied()
    }

    fn instant(&self, t: Duration) -> Instant {
        self.base + t
    }

    fn offset(&self, t: Instant) -> Duration {
        t.saturating_duration_since(self.base)
    }

    fn failed(&self, net: usize, t: Duration) -> bool {
        self.failures.iter().any(|f| f.path == net && t >= f.at)
    }

    /// Runs to the end; `progress(now, end)` is called at every sample tick.
    pub fn run(&mut self, progress: &mut dyn FnMut(Duration, Duration)) -> Report {
        let end = self.duration;
        let mut next_sample = self.interval;
        let mut next_ooo = OOO_TICK;
        let mut same = 0u32;
        loop {
            let mut t = self.next_event().min(next_sample).min(next_ooo);
            if t <= self.now {
                same += 1;
                if same > SAME_TIME_LIMIT {
                    self.stalls += 1;
                    t = self.now + Duration::from_micros(1);
                    same = 0;
                }
            } else {
                same = 0;
            }
            if t > end {
                break;
            }
            self.now = self.now.max(t);
            self.start_flows();
            self.deliver();
            self.apps();
            self.timers();
            self.send_all();
            self.drain_qlogs(false);
            if self.now >= next_ooo {
                self.sample_ooo();
                next_ooo += OOO_TICK;
            }
            if self.now >= next_sample {
                self.sample();
                next_sample += self.interval;
                progress(self.now, end);
            }
            if self.done() {
                break;
            }
        }
        self.drain_qlogs(true);
        self.report()
    }

    /// The first error writing qlog files (`SimConfig::qlog_dir`), if any:
    /// the run goes on without the file.
    pub fn qlog_error(&self) -> Option<&str> {
        self.qlog_error.as_deref()
    }

    fn drain_qlogs(&mut self, last: bool) {
        if self.qlog_dir.is_none() {
            return;
        }
        for f in &mut self.flows {
            for e in [f.client.as_mut(), f.server.as_mut()].into_iter().flatten() {
                if let Err(err) = e.drain_qlog(last) {
                    self.qlog_error.get_or_insert(format!("writing qlog: {err}"));
                    e.qlog = None;
                }
            }
        }
    }

    /// Every flow the run waits for (every bounded flow but the background ones)
    /// completed.
    fn done(&self) -> bool {
        let mut waited = self.flows.iter().filter(|f| !f.spec.background).peekable();
        waited.peek().is_some() && waited.all(Flow::finished)
    }

    fn next_event(&self) -> Duration {
        let mut t = Duration::MAX;
        for l in &self.links {
            if let Some(w) = l.next_wakeup() {
                t = t.min(w);
            }
        }
        for f in &self.flows {
            if !f.st.started {
                t = t.min(f.spec.start);
            }
            if let Some(x) = f.app.next_wakeup(self.instant(self.now)) {
                t = t.min(self.offset(x));
            }
            for e in [&f.client, &f.server].into_iter().flatten() {
                if let Some(x) = e.next_release() {
                    t = t.min(x);
                }
                if let Some(x) = e.conn.timeout() {
                    // A blocked endpoint cannot send the ACK or probe a due timer asks
                    // for until its next release: do not spin on it.
                    let x = self.offset(x);
                    if !(e.blocked() && x <= self.now) {
                        t = t.min(x);
                    }
                }
            }
        }
        t
    }

    fn start_flows(&mut self) {
        let now = self.instant(self.now);
        let (dir, err) = (self.qlog_dir.as_deref(), &mut self.qlog_error);
        for (fi, f) in self.flows.iter_mut().enumerate() {
            if f.st.started || f.spec.start > self.now {
                continue;
            }
            f.st.started = true;
            let (local, peer) = f.addrs[0];
            match mpquic::connect(Some("localhost"), &mpquic::random_cid(8), local, peer, &f.ccfg, now) {
                Ok(conn) => f.client = Some(Endpoint::new(conn, f.addrs.len(), fi, dir, err)),
                Err(e) => f.st.error = Some(format!("connect: {e}")),
            }
        }
    }

    fn take_buf(&mut self) -> Vec<u8> {
        let mut b = self.pool.pop().unwrap_or_default();
        b.resize(self.max_udp_payload.max(1200), 0);
        b
    }

    fn give_buf(&mut self, mut b: Vec<u8>) {
        b.clear();
        if self.pool.len() < 4096 {
            self.pool.push(b);
        }
    }

    fn deliver(&mut self) {
        let mut scratch = std::mem::take(&mut self.scratch);
        for li in 0..self.links.len() {
            for up in [true, false] {
                scratch.clear();
                let link = &mut self.links[li];
                if up {
                    link.up.dequeue_ready(self.now, &mut scratch);
                } else {
                    link.down.dequeue_ready(self.now, &mut scratch);
                }
                for pkt in scratch.drain(..) {
                    self.arrive(li, pkt);
                }
            }
        }
        self.scratch = scratch;
    }

    fn arrive(&mut self, net: usize, mut pkt: Packet) {
        if self.failed(net, pkt.time) {
            self.failure_drops[net] += 1;
            self.give_buf(pkt.data);
            return;
        }
        let tag = Tag::decode(pkt.tag);
        let route = self.flows.get(tag.flow).and_then(|f| f.spec.paths.get(tag.path).copied());
        let next = Tag { hop: tag.hop + 1, ..tag };
        if let Some(link) = route.and_then(|r| self.hop_link(r, next.hop, tag.to_server)) {
            // The route goes on: into the next hop's link.
            pkt.tag = next.encode();
            self.put_on_link(link, tag.to_server, pkt);
            return;
        }
        self.datagrams += 1;
        let (fi, k, to_server) = (tag.flow, tag.path, tag.to_server);
        let now = self.instant(self.now);
        let Some(f) = self.flows.get_mut(fi) else {
            self.give_buf(pkt.data);
            return;
        };
        let Some(&(caddr, saddr)) = f.addrs.get(k) else {
            self.give_buf(pkt.data);
            return;
        };
        let len = pkt.data.len() as u64;
        if to_server {
            if !f.spec.workload.is_download() {
                f.st.data_bytes[k] += len;
            }
            if f.server.is_none() {
                if let Ok(h) = mpquic::packet::parse_header(&pkt.data, 8) {
                    match mpquic::accept(&mpquic::random_cid(8), &h.dcid, None, saddr, caddr, &f.scfg, now) {
                        Ok(conn) => {
                            let (dir, err) = (self.qlog_dir.as_deref(), &mut self.qlog_error);
                            f.server = Some(Endpoint::new(conn, f.addrs.len(), fi, dir, err));
                        }
                        Err(e) => f.st.error = Some(format!("accept: {e}")),
                    }
                }
            }
            let from = seen_client(&f.addrs, &f.rebind_at, k, self.now);
            if let Some(s) = f.server.as_mut() {
                let info = RecvInfo { ecn: Ecn::from_tos(pkt.ecn), ..RecvInfo::new(from, saddr) };
                let _ = s.conn.recv(&mut pkt.data, info, now);
            }
        } else {
            if f.spec.workload.is_download() {
                f.st.data_bytes[k] += len;
            }
            if let Some(c) = f.client.as_mut() {
                let info = RecvInfo { ecn: Ecn::from_tos(pkt.ecn), ..RecvInfo::new(saddr, caddr) };
                let _ = c.conn.recv(&mut pkt.data, info, now);
            }
        }
        let ooo = f.receiver().map(|c| c.out_of_order_bytes()).unwrap_or(0);
        f.st.ooo_max = f.st.ooo_max.max(ooo);
        self.give_buf(pkt.data);
    }

    fn apps(&mut self) {
        let now = self.now;
        let at = self.base + now;
        let body = &self.body;
        let sink = &mut self.sink;
        for f in &mut self.flows {
            if !f.st.paths_opened && f.client.as_ref().is_some_and(|c| c.conn.is_established()) {
                open_extra_paths(f, at);
            }
            let client = f.client.as_mut().map(|e| &mut e.conn);
            let server = f.server.as_mut().map(|e| &mut e.conn);
            match f.app.step(client, server, f.spec.bytes, body, sink, at) {
                Ok(d) => {
                    f.st.app_bytes += d.bytes;
                    if d.finished && f.st.done_at.is_none() {
                        f.st.done_at = Some(now.saturating_sub(f.spec.start));
                    }
                }
                Err(e) => {
                    f.st.error.get_or_insert(e);
                }
            }
        }
    }

    fn timers(&mut self) {
        let now = self.instant(self.now);
        for f in &mut self.flows {
            for e in [f.client.as_mut(), f.server.as_mut()].into_iter().flatten() {
                if e.conn.timeout().is_some_and(|t| t <= now) {
                    e.conn.on_timeout(now);
                }
            }
        }
    }

    fn send_all(&mut self) {
        for fi in 0..self.flows.len() {
            for client in [true, false] {
                self.send_endpoint(fi, client);
            }
        }
    }

    fn send_endpoint(&mut self, fi: usize, client: bool) {
        let now_i = self.instant(self.now);
        // Release what is due, in order per path.
        let mut due = std::mem::take(&mut self.due);
        {
            let f = &mut self.flows[fi];
            let Some(ep) = (if client { f.client.as_mut() } else { f.server.as_mut() }) else {
                return;
            };
            for (k, q) in ep.held.iter_mut().enumerate() {
                while q.front().is_some_and(|h| h.at <= self.now) {
                    if let Some(h) = q.pop_front() {
                        due.push((f.spec.paths[k], h.pkt));
                    }
                }
            }
        }
        for (route, pkt) in due.drain(..) {
            self.put_on_route(route, client, pkt);
        }
        self.due = due;
        loop {
            let f = &self.flows[fi];
            if (if client { f.client.as_ref() } else { f.server.as_ref() }).is_none_or(Endpoint::blocked) {
                return;
            }
            let mut buf = self.take_buf();
            let f = &mut self.flows[fi];
            let Some(ep) = (if client { f.client.as_mut() } else { f.server.as_mut() }) else {
                return;
            };
            match ep.conn.send(&mut buf, now_i) {
                Ok(Some((len, info))) => {
                    buf.truncate(len);
                    let k = if client {
                        f.addrs.iter().position(|a| a.0 == info.from)
                    } else {
                        path_to_client(&f.addrs, &f.rebind_at, info.to, self.now)
                    };
                    let Some(k) = k else {
                        self.give_buf(buf);
                        continue;
                    };
                    let route = f.spec.paths[k];
                    let tag = Tag { flow: fi, path: k, hop: 0, to_server: client }.encode();
                    let ecn = info.ecn.tos_bits();
                    let pkt = Packet { size: len as u32 + HEADER_BYTES, data: buf, tag, time: self.now, ecn };
                    let at = info.at.saturating_duration_since(self.base);
                    if at > self.now {
                        let limit = ep.hold_limit();
                        if let Some(q) = ep.held.get_mut(k) {
                            q.push_back(Held { at, pkt });
                            if q.len() >= limit {
                                return;
                            }
                        }
                        continue;
                    }
                    self.put_on_route(route, client, pkt);
                }
                Ok(None) => {
                    self.give_buf(buf);
                    return;
                }
                Err(e) => {
                    if f.st.error.is_none() {
                        f.st.error = Some(format!("send: {e}"));
                    }
                    self.give_buf(buf);
                    return;
                }
            }
        }
    }

    /// Puts a packet (tagged with hop 0) on the first link of `route`.
    fn put_on_route(&mut self, route: usize, to_server: bool, pkt: Packet) {
        match self.hop_link(route, 0, to_server) {
            Some(link) => self.put_on_link(link, to_server, pkt),
            None => self.give_buf(pkt.data),
        }
    }

    fn put_on_link(&mut self, net: usize, to_server: bool, mut pkt: Packet) {
        if self.failed(net, self.now) {
            self.failure_drops[net] += 1;
            self.give_buf(pkt.data);
            return;
        }
        pkt.time = self.now;
        let link = &mut self.links[net];
        if to_server {
            link.up.enqueue(self.now, pkt);
        } else {
            link.down.enqueue(self.now, pkt);
        }
    }

    fn sample_ooo(&mut self) {
        for f in &mut self.flows {
            if f.st.started {
                let v = f.receiver().map(|c| c.out_of_order_bytes()).unwrap_or(0);
                f.st.ooo_samples.push(v);
            }
        }
    }

    fn sample(&mut self) {
        let secs = self.interval.as_secs_f64();
        for (fi, f) in self.flows.iter_mut().enumerate() {
            let n = f.addrs.len();
            let mut paths = vec![PathSample::default(); n];
            for (k, p) in paths.iter_mut().enumerate() {
                p.throughput_bps = (f.st.data_bytes[k] - f.st.data_bytes_last[k]) as f64 * 8.0 / secs;
                f.st.data_bytes_last[k] = f.st.data_bytes[k];
            }
            let mut rtts: Vec<(usize, f64)> = Vec::new();
            let mut known = std::mem::take(&mut f.st.path_stats);
            if let Some(s) = f.sender() {
                remember_path_stats(&mut known, s.path_stats());
                for ps in s.path_stats() {
                    if let Some(k) = f.path_of_stats(&ps) {
                        let p = &mut paths[k];
                        p.srtt_ms = ps.srtt.as_secs_f64() * 1e3;
                        p.cwnd = ps.cwnd as u64;
                        p.bytes_in_flight = ps.bytes_in_flight as u64;
                        p.pacing_bps = ps.pacing_rate as f64 * 8.0;
                        p.group = ps.group;
                        if ps.active {
                            rtts.push((k, p.srtt_ms));
                        }
                    }
                }
            }
            f.st.path_stats = known;
            for (k, r) in rtts {
                f.st.srtt_sum[k] += r;
                f.st.srtt_n[k] += 1;
            }
            let goodput = (f.st.app_bytes - f.st.app_bytes_last) as f64 * 8.0 / secs;
            f.st.app_bytes_last = f.st.app_bytes;
            let ooo = f.receiver().map(|c| c.out_of_order_bytes()).unwrap_or(0);
            self.samples.push(Sample { t: self.now, flow: fi, goodput_bps: goodput, ooo_bytes: ooo, paths });
        }
    }

    fn report(&self) -> Report {
        let mut flows = Vec::new();
        for (fi, f) in self.flows.iter().enumerate() {
            let end = f.st.done_at.unwrap_or(self.now.saturating_sub(f.spec.start));
            let active = end.as_secs_f64().max(1e-9);
            let total: u64 = f.st.data_bytes.iter().sum();
            let mut paths: Vec<PathSummary> = (0..f.addrs.len())
                .map(|k| {
                    let route = &self.routes[f.spec.paths[k]];
                    PathSummary {
                        name: route.name.clone(),
                        bytes: f.st.data_bytes[k],
                        throughput_bps: f.st.data_bytes[k] as f64 * 8.0 / active,
                        share: if total > 0 { f.st.data_bytes[k] as f64 / total as f64 } else { 0.0 },
                        srtt_mean_ms: if f.st.srtt_n[k] > 0 {
                            f.st.srtt_sum[k] / f.st.srtt_n[k] as f64
                        } else {
                            0.0
                        },
                        link_drops: self.route_drops(route, f.spec.workload.is_download()),
                        ..Default::default()
                    }
                })
                .collect();
            let (mut retrans, mut stream_sent, mut copies, mut ahead) = (0u64, 0u64, 0u64, 0u64);
            let (mut multipath, mut established) = (false, false);
            if let Some(s) = f.sender() {
                let st = s.stats();
                retrans = st.retrans_bytes;
                ahead = st.sent_ahead_bytes;
                multipath = s.is_multipath();
                established = s.is_established();
                let mut all = f.st.path_stats.clone();
                remember_path_stats(&mut all, s.path_stats());
                for ps in all {
                    stream_sent += ps.stream_bytes + ps.retrans_bytes;
                    copies += ps.redundant_bytes;
                    if let Some(k) = f.path_of_stats(&ps) {
                        let p = &mut paths[k];
                        p.min_rtt_ms = ps.min_rtt.as_secs_f64() * 1e3;
                        p.lost_packets += ps.lost;
                        p.retrans_bytes += ps.retrans_bytes;
                        p.copy_bytes += ps.redundant_bytes;
                        p.group = ps.group;
                        p.ecn_ce += ps.ecn_ce;
                        p.mtu = ps.mtu;
                    }
                }
            }
            let ooo = &f.st.ooo_samples;
            flows.push(FlowSummary {
                flow: fi,
                cc: f.spec.cc.clone(),
                scheduler: f.spec.scheduler.clone(),
                established,
                multipath,
                app_bytes: f.st.app_bytes,
                goodput_bps: f.st.app_bytes as f64 * 8.0 / active,
                completion: f.st.done_at,
                retrans_bytes: retrans,
                redundant_bytes: stream_sent.saturating_sub(f.st.app_bytes),
                copy_bytes: copies,
                sent_ahead_bytes: ahead,
                ooo_mean: if ooo.is_empty() {
                    0.0
                } else {
                    ooo.iter().sum::<u64>() as f64 / ooo.len() as f64
                },
                ooo_p95: quantile(ooo, 0.95),
                ooo_max: f.st.ooo_max,
                workload: f.spec.workload.name().into(),
                body_mismatches: f.app.mismatches(),
                status: f.app.status(),
                video: f.app.video_stats(self.instant(self.now)),
                paths,
                error: f.st.error.clone(),
                closed: closed(f.client.as_ref().map(|e| &e.conn), "client")
                    .or_else(|| closed(f.server.as_ref().map(|e| &e.conn), "server")),
                background: f.spec.background,
            });
        }
        Report {
            name: self.name.clone(),
            seed: self.seed,
            duration: self.now,
            samples: self.samples.clone(),
            flows,
            links: self.link_summaries(),
            datagrams: self.datagrams,
            stalls: self.stalls,
        }
    }
}

impl Sim {
    /// Drops on the links of `route` in the data direction, plus failure drops.
    fn route_drops(&self, route: &Route, download: bool) -> u64 {
        route
            .links
            .iter()
            .map(|&l| {
                let link = &self.links[l];
                let s = if download { link.down.stats() } else { link.up.stats() };
                s.dropped_loss + s.dropped_queue + s.dropped_mtu + self.failure_drops[l]
            })
            .sum()
    }

    fn link_summaries(&self) -> Vec<LinkSummary> {
        self.links
            .iter()
            .zip(&self.failure_drops)
            .map(|(l, &failure_drops)| LinkSummary {
                name: l.name.clone(),
                up: l.up.stats(),
                down: l.down.stats(),
                failure_drops,
            })
            .collect()
    }
}

/// Opens the flow's paths beyond the first on the client once the handshake is done
/// (retried at later steps while the peer has not yet issued connection IDs for them).
fn open_extra_paths(f: &mut Flow, now: Instant) {
    let Some(c) = f.client.as_mut() else { return };
    if f.addrs.len() < 2 || !c.conn.is_multipath() {
        f.st.paths_opened = true;
        return;
    }
    while f.st.next_path < f.addrs.len() {
        let (local, peer) = f.addrs[f.st.next_path];
        match c.conn.probe_path(local, peer, now) {
            Ok(_) | Err(PathError::Exists) => f.st.next_path += 1,
            // The peer has not issued CIDs or path IDs yet: try again later.
            Err(PathError::NoConnectionId | PathError::PathIdLimit) => return,
            Err(e) => {
                f.st.error.get_or_insert_with(|| format!("probe_path {}: {e}", f.st.next_path));
                f.st.next_path += 1;
            }
        }
    }
    f.st.paths_opened = true;
}

/// How `conn` ended, if it has: its own close, the peer's, or the idle timeout.
fn closed(conn: Option<&Connection>, side: &str) -> Option<String> {
    let conn = conn?;
    let describe = |who: &str, c: &mpquic::CloseInfo| {
        let kind = if c.is_app { "application" } else { "transport" };
        format!("{side} {who} {kind} error {:#x} {:?}", c.code, String::from_utf8_lossy(&c.reason))
    };
    if let Some(c) = conn.local_error() {
        return Some(describe("closed with", c));
    }
    if let Some(c) = conn.peer_error() {
        return Some(describe("got", c));
    }
    conn.is_closed().then(|| format!("{side} idle timeout"))
}
