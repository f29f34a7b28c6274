//! Scenario files: several paths, each with its traces, delay, loss, queue and
//! time-varying schedules, in TOML.
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
//! Loss models: `{ model = "none" }`, `{ model = "bernoulli", p = P }`,
//! `{ model = "gilbert", p_good_to_bad = .., p_bad_to_good = .., loss_good = ..,
//! loss_bad = .. }` (`loss_good` defaults to 0, `loss_bad` to 1).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::link::{Link, LinkConfig, PathLinks};
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
    path: Vec<RawPath>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPath {
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
    /// Uplink (client -> server) configuration.
    pub up: LinkConfig,
    /// Downlink (server -> client) configuration.
    pub down: LinkConfig,
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
    /// File it was loaded from.
    pub file: PathBuf,
}

/// SplitMix64 step: derives independent per-link seeds from one scenario seed.
fn mix(seed: u64, salt: u64) -> u64 {
    let mut z =
        seed.wrapping_add(salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn secs(v: f64) -> Duration {
    Duration::try_from_secs_f64(v.max(0.0)).unwrap_or(Duration::MAX)
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
        let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let invalid = |context: &str, message: String| ScenarioError::Invalid {
            path: path.to_path_buf(),
            context: context.to_string(),
            message,
        };
        if !(raw.duration.is_finite() && raw.duration > 0.0) {
            return Err(invalid("duration", format!("must be > 0, got {}", raw.duration)));
        }
        if raw.path.is_empty() {
            return Err(invalid("path", "a scenario needs at least one [[path]]".into()));
        }
        let mut traces: HashMap<PathBuf, Arc<Trace>> = HashMap::new();
        let mut load_trace = |rel: &str| -> Result<Arc<Trace>, ScenarioError> {
            let full = base.join(rel);
            if let Some(t) = traces.get(&full) {
                return Ok(t.clone());
            }
            let t = Arc::new(Trace::load(&full).map_err(ScenarioError::Trace)?);
            traces.insert(full, t.clone());
            Ok(t)
        };
        let mut paths = Vec::new();
        for (i, rp) in raw.path.iter().enumerate() {
            let ctx = format!("path {:?}", rp.name);
            if raw.path.iter().take(i).any(|o| o.name == rp.name) {
                return Err(invalid(&ctx, "duplicate path name".into()));
            }
            if !(rp.delay_ms.is_finite() && rp.delay_ms >= 0.0) {
                return Err(invalid(&ctx, format!("delay_ms must be >= 0, got {}", rp.delay_ms)));
            }
            if rp.loss.is_some() && (rp.loss_up.is_some() || rp.loss_down.is_some()) {
                return Err(invalid(&ctx, "give either loss or loss_up/loss_down, not both".into()));
            }
            let loss_up = parse_loss(rp.loss_up.as_ref().or(rp.loss.as_ref()))
                .map_err(|m| invalid(&format!("{ctx} loss"), m))?;
            let loss_down = parse_loss(rp.loss_down.as_ref().or(rp.loss.as_ref()))
                .map_err(|m| invalid(&format!("{ctx} loss"), m))?;
            let queue = parse_queue(rp.queue.as_ref()).map_err(|m| invalid(&format!("{ctx} queue"), m))?;
            let mut up = LinkConfig::new(load_trace(&rp.up)?);
            let mut down = LinkConfig::new(load_trace(&rp.down)?);
            for (cfg, loss, dir) in [(&mut up, loss_up, 0u64), (&mut down, loss_down, 1)] {
                cfg.delay = Duration::from_secs_f64(rp.delay_ms / 1000.0);
                cfg.loss = loss;
                cfg.queue = queue;
                cfg.seed = mix(raw.seed, (i as u64) * 2 + dir);
            }
            for (j, s) in rp.schedule.iter().enumerate() {
                apply_schedule(s, &mut up, &mut down)
                    .map_err(|m| invalid(&format!("{ctx} schedule {}", j + 1), m))?;
            }
            paths.push(PathSpec { name: rp.name.clone(), up, down });
        }
        let name = raw.name.unwrap_or_else(|| {
            path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        });
        Ok(Scenario {
            name,
            description: raw.description.unwrap_or_default(),
            duration: secs(raw.duration),
            seed: raw.seed,
            paths,
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
        self
    }

    /// Builds fresh links for every path, clocks starting at zero.
    pub fn build(&self) -> Vec<PathLinks> {
        self.paths
            .iter()
            .map(|p| PathLinks { name: p.name.clone(), up: Link::new(&p.up), down: Link::new(&p.down) })
            .collect()
    }
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
    let args = QueueArgs {
        packets: r.packets,
        bytes: r.bytes,
        target: r.target,
        interval: r.interval,
        qdelay_ref: r.qdelay_ref,
        max_burst: r.max_burst,
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
        let start = s.start.ok_or("outage needs start")?;
        let end = s.end.unwrap_or(f64::INFINITY);
        if !(start.is_finite() && start >= 0.0 && end > start) {
            return Err(format!("outage needs 0 <= start < end, got {start}..{end}"));
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
    let (lo, hi) = match s.param.as_str() {
        "loss" => (0.0, 1.0),
        "rate" => (0.0, f64::INFINITY),
        "delay_ms" => (f64::NEG_INFINITY, f64::INFINITY),
        other => return Err(format!("unknown param {other:?} (loss, delay_ms, rate or outage)")),
    };
    let mut prev = f64::NEG_INFINITY;
    for &(t, v) in points {
        if !(t.is_finite() && t >= 0.0) || t < prev {
            return Err(format!("point times must be >= 0 and non-decreasing, got {t}"));
        }
        prev = t;
        if !v.is_finite() || v < lo || v > hi {
            return Err(format!("{} value {v} out of range [{lo}, {hi}]", s.param));
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

#[cfg(test)]
mod tests;
