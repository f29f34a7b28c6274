//! Scenario files: several paths, each with its traces, delay, loss, queue and
//! time-varying schedules, in TOML; optionally shared links the paths cross, and
//! background flows.
//!
//! ```toml
//! name = "break"
//! description = "two 20 Mbit/s paths; path b fails at 15 s"
//! duration = 40.0          # seconds
//! seed = 1
//!
//! [[path]]
//! name = "b"
//! up = "break/b.up"        # relative to this file
//! down = "break/b.down"
//! delay_ms = 25.0          # one-way, each direction (mm-delay)
//! loss = { model = "bernoulli", p = 0.0001 }        # both directions; or loss_up / loss_down
//! queue = { kind = "droptail", packets = 200 }      # or bytes = N; kind = infinite | drophead
//! # impair = { reorder = 0.01, reorder_ms = 10.0, duplicate = 0.001, corrupt = 0.001 }  # both directions
//! # queue = { kind = "codel", packets = 100, target = 5, interval = 100 }        # ms
//! # queue = { kind = "pie", packets = 100, qdelay_ref = 15, max_burst = 150 }    # ms
//!
//! [[path.schedule]]
//! param = "outage"         # loss | delay_ms | rate | outage
//! direction = "both"       # up | down | both (default both)
//! start = 15.0             # outage only; end = ... optional
//!
//! [[path.schedule]]
//! param = "loss"
//! interp = "linear"        # or "step" (default linear)
//! points = [[0.0, 0.0], [10.0, 0.07], [20.0, 0.0]]   # [seconds, value]
//! ```
//!
//! Shared links, background flows and the flow under test's paths (all optional):
//!
//! ```toml
//! test_paths = ["a", "b"]  # paths of the flow under test (default: every path)
//!
//! [[link]]                 # a named link: the same keys as a path, except via
//! name = "bottleneck"
//! up = "data/const-100mbps"
//! down = "data/const-100mbps"
//! delay_ms = 25.0
//! queue = { kind = "droptail", bytes = 625000 }
//!
//! [[path]]
//! name = "a"
//! up = "data/const-1000mbps"
//! down = "data/const-1000mbps"
//! via = ["bottleneck"]     # crossed after the path's own link, towards the server
//!
//! [[flow]]                 # a background flow
//! paths = ["c"]            # path names; the first carries the handshake
//! cc = "bbr"               # default: the flow under test's controller
//! scheduler = "minrtt"     # default minrtt
//! start = 0.0              # seconds, default 0
//! bytes = 10000000         # default: unbounded
//! ```
//!
//! An uplink packet crosses the path's own link, then the `via` links in order; a
//! downlink packet crosses them in reverse. Every path must be used by a flow (the flow
//! under test or a `[[flow]]`) and every link by a path; names are unique across paths
//! and links.
//!
//! Ranges: `duration` in (0, 86400] s; `start` and schedule times in [0, 86400] s;
//! `delay_ms` in [0, 60000]; scheduled `delay_ms` values in [-60000, 60000]; `rate`
//! factors in [0, 1000]; probabilities in [0, 1]; queue `packets` in [1, 10^9], `bytes`
//! in [1, 10^12]; AQM times in ms as [`QueueArgs::build`] says; flow `bytes` in
//! [1, 2^50]. Anything else (NaN, infinities) is an error naming the key.
//!
//! Loss models: `{ model = "none" }`, `{ model = "bernoulli", p = P }`,
//! `{ model = "gilbert", p_good_to_bad = .., p_bad_to_good = .., loss_good = ..,
//! loss_bad = .. }` (`loss_good` defaults to 0, `loss_bad` to 1).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::impair::Impairments;
use crate::link::{Link, LinkConfig, PathLinks, Route};
use crate::loss::LossModel;
use crate::profile::{Interp, Profile};
use crate::queue::{QueueArgs, QueueConfig};
use crate::trace::{Trace, TraceError};

/// An error loading a scenario.
#[derive(Debug)]
pub enum ScenarioError {
    /// The scenario file could not be read (or found, for a name).
    Io {
        /// File or name.
        path: PathBuf,
        /// Underlying error.
        error: std::io::Error,
    },
    /// TOML syntax error, wrong type or unknown key.
    Syntax {
        /// Scenario file.
        path: PathBuf,
        /// Parser message (includes line and column).
        message: String,
    },
    /// A value is out of range or inconsistent.
    Invalid {
        /// Scenario file.
        path: PathBuf,
        /// Where in the file, e.g. `path "wifi" schedule 2`.
        context: String,
        /// What is wrong.
        message: String,
    },
    /// A trace file is missing or malformed.
    Trace(TraceError),
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioError::Io { path, error } => {
                write!(f, "cannot read scenario {}: {}", path.display(), error)
            }
            ScenarioError::Syntax { path, message } => {
                write!(f, "{}: {}", path.display(), message.trim_end())
            }
            ScenarioError::Invalid { path, context, message } => {
                write!(f, "{}: {}: {}", path.display(), context, message)
            }
            ScenarioError::Trace(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ScenarioError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ScenarioError::Io { error, .. } => Some(error),
            ScenarioError::Trace(e) => Some(e),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    description: Option<String>,
    duration: f64,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    path: Vec<RawLink>,
    #[serde(default)]
    link: Vec<RawLink>,
    #[serde(default)]
    flow: Vec<RawFlow>,
    test_paths: Option<Vec<String>>,
}

/// A `[[path]]` or a `[[link]]`: the same fields (`via` only on a path).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    name: String,
    up: String,
    down: String,
    #[serde(default)]
    delay_ms: f64,
    loss: Option<RawLoss>,
    loss_up: Option<RawLoss>,
    loss_down: Option<RawLoss>,
    queue: Option<RawQueue>,
    #[serde(default)]
    schedule: Vec<RawSchedule>,
    via: Option<Vec<String>>,
    impair: Option<RawImpair>,
    /// Path MTU in bytes (IP packet size), both directions.
    mtu: Option<u32>,
}

/// Reordering, duplication and corruption (probabilities per packet).
#[derive(Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct RawImpair {
    #[serde(default)]
    reorder: f64,
    #[serde(default)]
    reorder_ms: f64,
    #[serde(default)]
    duplicate: f64,
    #[serde(default)]
    corrupt: f64,
}

impl RawImpair {
    fn parse(self) -> Result<Impairments, String> {
        in_range("reorder_ms", self.reorder_ms, 0.0, 10_000.0)?;
        let imp = Impairments {
            reorder: self.reorder,
            reorder_delay: Duration::from_secs_f64(self.reorder_ms / 1000.0),
            duplicate: self.duplicate,
            corrupt: self.corrupt,
        };
        imp.validate()?;
        Ok(imp)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    paths: Vec<String>,
    cc: Option<String>,
    scheduler: Option<String>,
    #[serde(default)]
    start: f64,
    bytes: Option<u64>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct RawLoss {
    model: String,
    p: Option<f64>,
    p_good_to_bad: Option<f64>,
    p_bad_to_good: Option<f64>,
    loss_good: Option<f64>,
    loss_bad: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQueue {
    kind: String,
    packets: Option<u64>,
    bytes: Option<u64>,
    target: Option<u64>,
    interval: Option<u64>,
    qdelay_ref: Option<u64>,
    max_burst: Option<u64>,
    ecn: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSchedule {
    param: String,
    direction: Option<String>,
    interp: Option<String>,
    points: Option<Vec<(f64, f64)>>,
    start: Option<f64>,
    end: Option<f64>,
}

/// One path of a scenario, resolved (traces loaded).
#[derive(Debug, Clone)]
pub struct PathSpec {
    /// Path name.
    pub name: String,
    /// Uplink (client -> server) configuration of the path's own link.
    pub up: LinkConfig,
    /// Downlink (server -> client) configuration of the path's own link.
    pub down: LinkConfig,
    /// Shared links ([`Scenario::links`] indices) the path crosses after its own link,
    /// towards the server.
    pub via: Vec<usize>,
}

/// A named link of a scenario (`[[link]]`), which paths cross with `via`.
#[derive(Debug, Clone)]
pub struct LinkSpec {
    /// Link name.
    pub name: String,
    /// Client -> server direction.
    pub up: LinkConfig,
    /// Server -> client direction.
    pub down: LinkConfig,
}

/// A background flow (`[[flow]]`): a connection besides the flow under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundFlow {
    /// Paths ([`Scenario::paths`] indices) it uses; the first carries the handshake.
    pub paths: Vec<usize>,
    /// Congestion controller; `None`: the flow under test's.
    pub cc: Option<String>,
    /// Path scheduler (default `minrtt`).
    pub scheduler: String,
    /// When it connects.
    pub start: Duration,
    /// Bytes to transfer; `None`: unbounded.
    pub bytes: Option<u64>,
}

/// A loaded, validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Scenario name (defaults to the file stem).
    pub name: String,
    /// Free text.
    pub description: String,
    /// How long an experiment runs.
    pub duration: Duration,
    /// Base seed; each link's loss RNG is derived from it.
    pub seed: u64,
    /// The paths, in file order.
    pub paths: Vec<PathSpec>,
    /// The named (shared) links, in file order.
    pub links: Vec<LinkSpec>,
    /// Background flows, in file order.
    pub flows: Vec<BackgroundFlow>,
    /// Paths ([`Scenario::paths`] indices) the flow under test uses (default: all).
    pub test_paths: Vec<usize>,
    /// File it was loaded from.
    pub file: PathBuf,
}

/// The links of a scenario and the route of each path over them, as
/// [`Scenario::build_network`] makes them.
#[derive(Debug, Clone)]
pub struct Network {
    /// Every path's own link (index = path index), then the named links.
    pub links: Vec<PathLinks>,
    /// Per path, in path order.
    pub routes: Vec<Route>,
}

/// SplitMix64 step: derives independent per-link seeds from one scenario seed.
fn mix(seed: u64, salt: u64) -> u64 {
    let mut z =
        seed.wrapping_add(salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Salt of named link `j`'s seeds: far from the paths' (`2 i + direction`), so that
/// adding a path does not re-seed the links.
fn link_salt(j: usize) -> u64 {
    (1 << 32) + (j as u64) * 2
}

fn secs(v: f64) -> Duration {
    Duration::try_from_secs_f64(v.max(0.0)).unwrap_or(Duration::MAX)
}

/// Longest duration, start time or schedule time a scenario may give: one day.
pub const MAX_SECONDS: f64 = 86_400.0;
/// Largest one-way delay (and scheduled extra delay, in absolute value), ms.
pub const MAX_DELAY_MS: f64 = 60_000.0;
/// Largest `rate` schedule factor.
pub const MAX_RATE_SCALE: f64 = 1_000.0;
/// Largest `bytes` of a background flow (1 PiB).
pub const MAX_FLOW_BYTES: u64 = 1 << 50;
/// Largest queue limits.
pub const MAX_QUEUE_PACKETS: u64 = 1_000_000_000;
/// Largest queue limit in bytes (1 TB).
pub const MAX_QUEUE_BYTES: u64 = 1_000_000_000_000;

/// Checks that `v` is a number in `[lo, hi]` (NaN fails).
fn in_range(name: &str, v: f64, lo: f64, hi: f64) -> Result<f64, String> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{name} must be in [{lo}, {hi}], got {v:?}"))
    }
}

impl Scenario {
    /// Loads a scenario by file path, or by name from the `traces/` directory (the
    /// current directory's `traces/`, then the repository's).
    pub fn find(name_or_path: &str) -> Result<Scenario, ScenarioError> {
        let p = Path::new(name_or_path);
        if p.is_file() {
            return Scenario::load(p);
        }
        let file = format!("{name_or_path}.toml");
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("traces");
        for dir in [PathBuf::from("traces"), repo] {
            let candidate = dir.join(&file);
            if candidate.is_file() {
                return Scenario::load(&candidate);
            }
        }
        Err(ScenarioError::Io {
            path: p.to_path_buf(),
            error: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such file, and no scenario of that name in traces/",
            ),
        })
    }

    /// Loads and validates a scenario file; trace paths are relative to its directory.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|error| ScenarioError::Io { path: path.to_path_buf(), error })?;
        Scenario::parse(path, &text)
    }

    /// Parses scenario text as if read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let raw: RawScenario = toml::from_str(text)
            .map_err(|e| ScenarioError::Syntax { path: path.to_path_buf(), message: e.to_string() })?;
        let bad = |(context, message): (String, String)| invalid(path, &context, message);
        in_range("duration", raw.duration, f64::MIN_POSITIVE, MAX_SECONDS)
            .map_err(|m| bad(("duration".into(), m)))?;
        if raw.path.is_empty() {
            return Err(bad(("path".into(), "a scenario needs at least one [[path]]".into())));
        }
        topology::check_names(&raw).map_err(bad)?;
        let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let mut traces = TraceCache { file: path.to_path_buf(), base, loaded: HashMap::new() };
        let mut paths = Vec::new();
        for (i, rp) in raw.path.iter().enumerate() {
            let ctx = format!("path {:?}", rp.name);
            let (up, down) = link_configs(rp, raw.seed, (i as u64) * 2, &mut traces, &ctx)?;
            let via = topology::resolve_via(rp, &raw.link).map_err(|m| bad((ctx.clone(), m)))?;
            paths.push(PathSpec { name: rp.name.clone(), up, down, via });
        }
        let mut links = Vec::new();
        for (j, rl) in raw.link.iter().enumerate() {
            let ctx = format!("link {:?}", rl.name);
            if rl.via.is_some() {
                return Err(bad((ctx, "via only applies to a [[path]]".into())));
            }
            let (up, down) = link_configs(rl, raw.seed, link_salt(j), &mut traces, &ctx)?;
            links.push(LinkSpec { name: rl.name.clone(), up, down });
        }
        let test_paths = topology::test_paths(&raw).map_err(bad)?;
        let flows = topology::flows(&raw).map_err(bad)?;
        topology::check_used(&raw, &paths, &test_paths, &flows).map_err(bad)?;
        let name = raw.name.unwrap_or_else(|| {
            path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        });
        Ok(Scenario {
            name,
            description: raw.description.unwrap_or_default(),
            duration: secs(raw.duration),
            seed: raw.seed,
            paths,
            links,
            flows,
            test_paths,
            file: path.to_path_buf(),
        })
    }

    /// The same scenario with another base seed (per-link seeds are re-derived).
    pub fn with_seed(mut self, seed: u64) -> Scenario {
        self.seed = seed;
        for (i, p) in self.paths.iter_mut().enumerate() {
            p.up.seed = mix(seed, (i as u64) * 2);
            p.down.seed = mix(seed, (i as u64) * 2 + 1);
        }
        for (j, l) in self.links.iter_mut().enumerate() {
            l.up.seed = mix(seed, link_salt(j));
            l.down.seed = mix(seed, link_salt(j) + 1);
        }
        self
    }

    /// Replaces the queue of the path or named link `name`, both directions (e.g. to
    /// try several bottleneck buffers on one scenario file).
    pub fn set_queue(&mut self, name: &str, queue: QueueConfig) -> Result<(), ScenarioError> {
        let pair = if let Some(p) = self.paths.iter_mut().find(|p| p.name == name) {
            (&mut p.up, &mut p.down)
        } else if let Some(l) = self.links.iter_mut().find(|l| l.name == name) {
            (&mut l.up, &mut l.down)
        } else {
            return Err(ScenarioError::Invalid {
                path: self.file.clone(),
                context: format!("set_queue {name:?}"),
                message: "no path or link of that name".into(),
            });
        };
        pair.0.queue = queue;
        pair.1.queue = queue;
        Ok(())
    }

    /// Builds fresh links for every path's own link, clocks starting at zero (named
    /// links are left out: see [`Scenario::build_network`]).
    pub fn build(&self) -> Vec<PathLinks> {
        self.paths
            .iter()
            .map(|p| PathLinks { name: p.name.clone(), up: Link::new(&p.up), down: Link::new(&p.down) })
            .collect()
    }

    /// Builds every link (the paths' own, then the named ones) and each path's route.
    pub fn build_network(&self) -> Network {
        let n = self.paths.len();
        let mut links = self.build();
        links.extend(self.links.iter().map(|l| PathLinks {
            name: l.name.clone(),
            up: Link::new(&l.up),
            down: Link::new(&l.down),
        }));
        let routes = self
            .paths
            .iter()
            .enumerate()
            .map(|(i, p)| Route {
                name: p.name.clone(),
                links: std::iter::once(i).chain(p.via.iter().map(|&j| n + j)).collect(),
            })
            .collect();
        Network { links, routes }
    }
}

/// Trace files loaded once per scenario (several links may name the same file).
struct TraceCache {
    /// The scenario file (for error messages).
    file: PathBuf,
    base: PathBuf,
    loaded: HashMap<PathBuf, Arc<Trace>>,
}

impl TraceCache {
    fn get(&mut self, rel: &str) -> Result<Arc<Trace>, ScenarioError> {
        let full = self.base.join(rel);
        if let Some(t) = self.loaded.get(&full) {
            return Ok(t.clone());
        }
        let t = Arc::new(Trace::load(&full).map_err(ScenarioError::Trace)?);
        self.loaded.insert(full, t.clone());
        Ok(t)
    }
}

/// Builds a [`ScenarioError::Invalid`].
fn invalid(file: &Path, context: &str, message: String) -> ScenarioError {
    ScenarioError::Invalid { path: file.to_path_buf(), context: context.to_string(), message }
}

/// Both directions of a `[[path]]`'s or `[[link]]`'s link; `salt` and `salt + 1`
/// seed the up and down loss RNGs. `ctx` names it in errors.
fn link_configs(
    r: &RawLink,
    seed: u64,
    salt: u64,
    traces: &mut TraceCache,
    ctx: &str,
) -> Result<(LinkConfig, LinkConfig), ScenarioError> {
    let file = traces.file.clone();
    let bad = |m: String| invalid(&file, ctx, m);
    in_range("delay_ms", r.delay_ms, 0.0, MAX_DELAY_MS).map_err(bad)?;
    if r.loss.is_some() && (r.loss_up.is_some() || r.loss_down.is_some()) {
        return Err(bad("give either loss or loss_up/loss_down, not both".into()));
    }
    let loss_ctx = |m: String| invalid(&file, &format!("{ctx} loss"), m);
    let loss_up = parse_loss(r.loss_up.as_ref().or(r.loss.as_ref())).map_err(loss_ctx)?;
    let loss_down = parse_loss(r.loss_down.as_ref().or(r.loss.as_ref())).map_err(loss_ctx)?;
    let queue = parse_queue(r.queue.as_ref()).map_err(|m| invalid(&file, &format!("{ctx} queue"), m))?;
    let impair = r
        .impair
        .map(RawImpair::parse)
        .transpose()
        .map_err(|m| invalid(&file, &format!("{ctx} impair"), m))?;
    let mut up = LinkConfig::new(traces.get(&r.up)?);
    let mut down = LinkConfig::new(traces.get(&r.down)?);
    for (cfg, loss, dir) in [(&mut up, loss_up, 0u64), (&mut down, loss_down, 1)] {
        cfg.delay = Duration::from_secs_f64(r.delay_ms / 1000.0);
        cfg.loss = loss;
        cfg.queue = queue;
        cfg.impair = impair.unwrap_or_default();
        cfg.seed = mix(seed, salt + dir);
        if let Some(m) = r.mtu {
            check_mtu(m as f64).map_err(|m| invalid(&file, &format!("{ctx} mtu"), m))?;
            cfg.mtu.push((Duration::ZERO, m));
        }
    }
    for (j, s) in r.schedule.iter().enumerate() {
        apply_schedule(s, &mut up, &mut down)
            .map_err(|m| invalid(&file, &format!("{ctx} schedule {}", j + 1), m))?;
    }
    Ok((up, down))
}

/// A link MTU: from IPv4's minimum (68) to the largest IP packet.
fn check_mtu(v: f64) -> Result<(), String> {
    if v.fract() != 0.0 || !(68.0..=65535.0).contains(&v) {
        return Err(format!("mtu must be a whole number of bytes in [68, 65535], got {v}"));
    }
    Ok(())
}

fn prob(name: &str, v: Option<f64>, default: Option<f64>) -> Result<f64, String> {
    let v = v.or(default).ok_or_else(|| format!("missing {name}"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{name} must be in [0, 1], got {v}"));
    }
    Ok(v)
}

fn parse_loss(raw: Option<&RawLoss>) -> Result<LossModel, String> {
    let Some(r) = raw else {
        return Ok(LossModel::None);
    };
    let extra = |allowed: &[&str]| -> Result<(), String> {
        let given = [
            ("p", r.p.is_some()),
            ("p_good_to_bad", r.p_good_to_bad.is_some()),
            ("p_bad_to_good", r.p_bad_to_good.is_some()),
            ("loss_good", r.loss_good.is_some()),
            ("loss_bad", r.loss_bad.is_some()),
        ];
        match given.iter().find(|(k, set)| *set && !allowed.contains(k)) {
            Some((k, _)) => Err(format!("key {k} does not apply to model {:?}", r.model)),
            None => Ok(()),
        }
    };
    match r.model.as_str() {
        "none" => {
            extra(&[])?;
            Ok(LossModel::None)
        }
        "bernoulli" => {
            extra(&["p"])?;
            Ok(LossModel::Bernoulli { p: prob("p", r.p, None)? })
        }
        "gilbert" | "gilbert-elliott" => {
            extra(&["p_good_to_bad", "p_bad_to_good", "loss_good", "loss_bad"])?;
            Ok(LossModel::GilbertElliott {
                p_good_to_bad: prob("p_good_to_bad", r.p_good_to_bad, None)?,
                p_bad_to_good: prob("p_bad_to_good", r.p_bad_to_good, None)?,
                loss_good: prob("loss_good", r.loss_good, Some(0.0))?,
                loss_bad: prob("loss_bad", r.loss_bad, Some(1.0))?,
            })
        }
        other => Err(format!("unknown loss model {other:?} (expected none, bernoulli or gilbert)")),
    }
}

fn parse_queue(raw: Option<&RawQueue>) -> Result<QueueConfig, String> {
    let Some(r) = raw else {
        return Ok(QueueConfig::default());
    };
    if r.packets.is_some_and(|v| v > MAX_QUEUE_PACKETS) {
        return Err(format!("packets must be at most {MAX_QUEUE_PACKETS}"));
    }
    if r.bytes.is_some_and(|v| v > MAX_QUEUE_BYTES) {
        return Err(format!("bytes must be at most {MAX_QUEUE_BYTES}"));
    }
    let args = QueueArgs {
        packets: r.packets,
        bytes: r.bytes,
        target: r.target,
        interval: r.interval,
        qdelay_ref: r.qdelay_ref,
        max_burst: r.max_burst,
        ecn: r.ecn.map(u64::from),
    };
    args.build(&r.kind)
}

fn apply_schedule(s: &RawSchedule, up: &mut LinkConfig, down: &mut LinkConfig) -> Result<(), String> {
    let (to_up, to_down) = match s.direction.as_deref().unwrap_or("both") {
        "up" => (true, false),
        "down" => (false, true),
        "both" => (true, true),
        other => return Err(format!("unknown direction {other:?} (up, down or both)")),
    };
    let targets = [(to_up, up), (to_down, down)];
    if s.param == "outage" {
        if s.points.is_some() || s.interp.is_some() {
            return Err("an outage takes start (and optional end), not points".into());
        }
        let start = in_range("start", s.start.ok_or("outage needs start")?, 0.0, MAX_SECONDS)?;
        let end = match s.end {
            Some(e) => in_range("end", e, 0.0, MAX_SECONDS)?,
            None => f64::INFINITY,
        };
        if end <= start {
            return Err(format!("outage needs start < end, got {start}..{end}"));
        }
        for (on, cfg) in targets {
            if on {
                cfg.outages.push((secs(start), secs(end)));
            }
        }
        return Ok(());
    }
    if s.start.is_some() || s.end.is_some() {
        return Err("start/end only apply to param = \"outage\"".into());
    }
    let interp = match s.interp.as_deref().unwrap_or("linear") {
        "linear" => Interp::Linear,
        "step" => Interp::Step,
        other => return Err(format!("unknown interp {other:?} (linear or step)")),
    };
    let points = s.points.as_ref().ok_or("missing points")?;
    if points.is_empty() {
        return Err("points is empty".into());
    }
    let mut targets = targets;
    if s.param == "mtu" {
        if s.interp.as_deref().is_some_and(|i| i != "step") {
            return Err("an mtu schedule is a step function (interp = \"step\")".into());
        }
        let points = s.points.as_ref().ok_or("missing points")?;
        for &(t, v) in points {
            in_range("time", t, 0.0, MAX_SECONDS)?;
            check_mtu(v)?;
            for (on, cfg) in targets.iter_mut() {
                if *on {
                    cfg.mtu.push((secs(t), v as u32));
                }
            }
        }
        return Ok(());
    }
    let (lo, hi) = match s.param.as_str() {
        "loss" => (0.0, 1.0),
        "rate" => (0.0, MAX_RATE_SCALE),
        "delay_ms" => (-MAX_DELAY_MS, MAX_DELAY_MS),
        other => return Err(format!("unknown param {other:?} (loss, delay_ms, rate, mtu or outage)")),
    };
    let mut prev = f64::NEG_INFINITY;
    for &(t, v) in points {
        if !(t.is_finite() && (0.0..=MAX_SECONDS).contains(&t)) || t < prev {
            return Err(format!("point times must be in [0, {MAX_SECONDS}] s and non-decreasing, got {t:?}"));
        }
        prev = t;
        if !v.is_finite() || v < lo || v > hi {
            return Err(format!("{} value {v:?} out of range [{lo}, {hi}]", s.param));
        }
    }
    let profile = Profile::new(points.iter().map(|&(t, v)| (secs(t), v)).collect(), interp);
    for (on, cfg) in targets {
        if on {
            match s.param.as_str() {
                "loss" => cfg.loss_profiles.push(profile.clone()),
                "rate" => cfg.rate_scale.push(profile.clone()),
                _ => cfg.delay_extra_ms.push(profile.clone()),
            }
        }
    }
    Ok(())
}

mod topology;

#[cfg(test)]
mod tests;
