//! Shared-bottleneck detection (SBD): which of a connection's paths cross the
//! same bottleneck, so that a coupled controller couples only those.
//!
//! After RFC 8382 (Hayes et al.) and MPTCP-SBD (Ferlin et al., INFOCOM 2016):
//! one-way delay (OWD) samples are summarised per base interval `T`, and over
//! the last `N` intervals each path gets the RFC's summary statistics — mean,
//! variability (mean absolute deviation, `var_est`), skewness (`skew_est`, the
//! share of intervals below the mean minus those above) and key frequency
//! (`freq_est`, significant crossings of the mean per interval).
//!
//! A path is *bottlenecked* when its delay varies (`var_est` above a floor:
//! a queue comes and goes). The RFC also requires `skew_est < c_s` (with
//! hysteresis `c_h`), which describes the queue of loss-based flows; a queue
//! that BBR controls is drained most of the time and spikes when a flow
//! probes, i.e. right-skewed, so that test would miss every BBR bottleneck.
//! `skew_est` is reported, not used. Two bottlenecked paths are *shared* when their
//! interval-mean series move together — Pearson correlation ≥ `rho_min` at a
//! lag of at most `max_lag` intervals, in half-interval steps (the paths' ACKs
//! reach the sender at different times) — and their variabilities are alike (`var_est` ratio
//! ≤ `mad_ratio`, the RFC's `p_mad` test made relative). A pair of which
//! one path shows no queue now keeps its last verdict: flows drain a shared
//! queue between probes. Groups are the
//! connected components of "shared". A path with fewer than `min_intervals`
//! intervals of samples is not judged yet and stays alone. (Assuming
//! "shared" until judged was tried: a coupled controller then probes the
//! paths in step, which correlates the delays of disjoint paths too, and 6%
//! of disjoint pairs stayed wrongly grouped.)
//!
//! Where this departs from RFC 8382, and why: the RFC's grouping compares
//! the statistics of flows one by one (`freq_est`, then `var_est`, then
//! `skew_est`), which needs long windows (`T` = 350 ms, `N` = 50: 17.5 s) to
//! separate independent flows with similar statistics; a multipath sender
//! sees every path's series at once, so correlating them directly decides in
//! a few seconds (`T` = 100 ms, decisions after 20 intervals). Loss is not
//! used (random loss on wireless paths says nothing about sharing).
//!
//! The OWD source is the caller's: with a peer that sends timestamps
//! ([`crate::frame::timestamp`]), its receive time less our send time; with
//! any other peer, the RTT sample less the peer's ACK delay (queueing on the
//! return path adds noise). The detector only needs relative delays, so
//! clock offsets do not matter.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::PathId;

/// Tunables of the detector (defaults in [`SbdConfig::default`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SbdConfig {
    /// Base interval `T`.
    pub interval: Duration,
    /// Intervals `N` in the statistics window.
    pub window: usize,
    /// Intervals with samples a path needs before it is judged.
    pub min_intervals: usize,
    /// `var_est` floor, ms: below it the path shows no queue.
    pub min_var_ms: f64,
    /// Correlation needed to call two paths shared. 0.8: judged at 5 s in
    /// the randomized tests (sim/tests/sbd.rs), 95% of shared pairs
    /// correlate at ≥ 0.95 and no disjoint pair reached 0.8, from timestamps
    /// and RTT samples alike (0.7 called 3 of 202 pairs shared wrongly);
    /// 0.85 missed shared paths that see the queue 30-60 ms apart.
    pub rho_min: f64,
    /// Largest lag, in intervals, at which series are compared.
    pub max_lag: usize,
    /// Largest ratio between two shared paths' `var_est`.
    pub mad_ratio: f64,
}

impl Default for SbdConfig {
    fn default() -> Self {
        SbdConfig {
            interval: Duration::from_millis(100),
            window: 50,
            min_intervals: 20,
            min_var_ms: 0.5,
            rho_min: 0.8,
            max_lag: 2,
            mad_ratio: 3.0,
        }
    }
}

/// RFC 8382's summary statistics of one path over the window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PathSummary {
    /// Intervals with samples in the window.
    pub intervals: usize,
    /// Mean of the interval means, ms.
    pub mean_ms: f64,
    /// Mean absolute deviation of the interval means, ms (`var_est`).
    pub var_ms: f64,
    /// (intervals below the mean − intervals above) / intervals (`skew_est`).
    pub skew: f64,
    /// Crossings of the mean by more than half `var_est`, per interval (`freq_est`).
    pub freq: f64,
    /// The path is judged to be behind a bottleneck.
    pub bottlenecked: bool,
}

#[derive(Clone, Debug)]
struct Series {
    id: PathId,
    sum_ms: f64,
    n: u32,
    /// Interval means, oldest first; NaN where an interval had no sample.
    means: VecDeque<f64>,
    summary: PathSummary,
}

/// The detector of one connection.
#[derive(Clone, Debug)]
pub struct Sbd {
    cfg: SbdConfig,
    paths: Vec<Series>,
    next_close: Option<Instant>,
    /// (path, group): the group is the smallest path ID of its component.
    groups: Vec<(PathId, u32)>,
}

impl Default for Sbd {
    fn default() -> Self {
        Sbd::new(SbdConfig::default())
    }
}

impl Sbd {
    /// A detector with `cfg`.
    pub fn new(cfg: SbdConfig) -> Sbd {
        let cfg = SbdConfig {
            interval: cfg.interval.max(Duration::from_millis(1)),
            window: cfg.window.max(2),
            ..cfg
        };
        Sbd { cfg, paths: Vec::new(), next_close: None, groups: Vec::new() }
    }

    /// One one-way delay sample of `path` at `now`, in ms; any constant
    /// offset (the two clocks') is fine, so it may be negative.
    pub fn on_sample(&mut self, path: PathId, now: Instant, owd_ms: f64) {
        self.advance(now);
        let i = match self.paths.iter().position(|s| s.id == path) {
            Some(i) => i,
            None => {
                self.paths.push(Series {
                    id: path,
                    sum_ms: 0.0,
                    n: 0,
                    means: VecDeque::with_capacity(self.cfg.window),
                    summary: PathSummary::default(),
                });
                self.paths.len() - 1
            }
        };
        if let Some(s) = self.paths.get_mut(i) {
            s.sum_ms += owd_ms;
            s.n += 1;
        }
    }

    /// Forget a path (abandoned or closed).
    pub fn remove_path(&mut self, path: PathId) {
        self.paths.retain(|s| s.id != path);
        self.regroup();
    }

    /// The group of `path`: equal for paths judged to share a bottleneck;
    /// a path alone (or not yet judged) gets its own ID.
    pub fn group(&self, path: PathId) -> u32 {
        self.groups.iter().find(|(p, _)| *p == path).map_or(path.0, |&(_, g)| g)
    }

    /// The statistics of `path` as of the last closed interval.
    pub fn summary(&self, path: PathId) -> Option<PathSummary> {
        self.paths.iter().find(|s| s.id == path).map(|s| s.summary)
    }

    /// Close every base interval that ended by `now`.
    fn advance(&mut self, now: Instant) {
        let Some(mut close) = self.next_close else {
            self.next_close = Some(now.checked_add(self.cfg.interval).unwrap_or(now));
            return;
        };
        if now < close {
            return;
        }
        let step = self.cfg.interval.as_nanos();
        let elapsed = now.saturating_duration_since(close).as_nanos() / step + 1;
        // A long silence closes at most a window's worth of intervals.
        for _ in 0..elapsed.min(self.cfg.window as u128) {
            self.close_interval();
        }
        let skip = Duration::from_nanos(u64::try_from(elapsed * step).unwrap_or(u64::MAX));
        close = close.checked_add(skip).or_else(|| now.checked_add(self.cfg.interval)).unwrap_or(now);
        self.regroup();
        self.next_close = Some(close);
    }

    fn close_interval(&mut self) {
        let (window, cfg) = (self.cfg.window, self.cfg);
        for s in &mut self.paths {
            let mean = if s.n > 0 { s.sum_ms / f64::from(s.n) } else { f64::NAN };
            (s.sum_ms, s.n) = (0.0, 0);
            if s.means.len() == window {
                s.means.pop_front();
            }
            s.means.push_back(mean);
            s.summary = summarise(&s.means, &cfg);
        }
    }

    fn regroup(&mut self) {
        let n = self.paths.len();
        let mut parent: Vec<usize> = (0..n).collect();
        for a in 0..n {
            for b in a + 1..n {
                let (pa, pb) = (&self.paths[a], &self.paths[b]);
                let verdict = match shared(pa, pb, &self.cfg) {
                    Some(v) => v,
                    // No queue to judge by: keep the last verdict.
                    None => self.group(pa.id) == self.group(pb.id),
                };
                if verdict {
                    let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
                    parent[ra.max(rb)] = ra.min(rb);
                }
            }
        }
        self.groups.clear();
        for i in 0..n {
            let root = find(&mut parent, i);
            let group = (0..n).filter(|&j| find(&mut parent, j) == root).map(|j| self.paths[j].id.0).min();
            self.groups.push((self.paths[i].id, group.unwrap_or(self.paths[i].id.0)));
        }
    }
}

fn find(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

/// RFC 8382 §3's statistics over the window's interval means.
fn summarise(means: &VecDeque<f64>, cfg: &SbdConfig) -> PathSummary {
    let vals = || means.iter().copied().filter(|v| v.is_finite());
    let k = vals().count();
    if k < cfg.min_intervals.max(2) {
        return PathSummary { intervals: k, ..PathSummary::default() };
    }
    let mean = vals().sum::<f64>() / k as f64;
    let var = vals().map(|v| (v - mean).abs()).sum::<f64>() / k as f64;
    let below = vals().filter(|&v| v < mean).count() as f64;
    let above = vals().filter(|&v| v > mean).count() as f64;
    let skew = (below - above) / k as f64;
    let freq = crossings(vals(), mean, var / 2.0) as f64 / k as f64;
    let bottlenecked = var >= cfg.min_var_ms;
    PathSummary { intervals: k, mean_ms: mean, var_ms: var, skew, freq, bottlenecked }
}

/// Crossings of `mean` by more than `margin` (a sample within the margin
/// keeps the side it was on).
fn crossings(vals: impl Iterator<Item = f64>, mean: f64, margin: f64) -> usize {
    let mut side = 0i8;
    let mut count = 0;
    for v in vals {
        let now = if v > mean + margin {
            1
        } else if v < mean - margin {
            -1
        } else {
            continue;
        };
        if side != 0 && now != side {
            count += 1;
        }
        side = now;
    }
    count
}

/// Whether `a` and `b` share a bottleneck; `None` when either shows no
/// queue now. A path that was judged shared goes quiet whenever the flows
/// drain the queue they share (BBR between probes, at short RTTs: interval
/// means vary by less than `min_var_ms` for seconds), which is no evidence
/// that it left: splitting the group then would uncouple the paths until the
/// next probe (at 20 ms RTT, about half of the time).
fn shared(a: &Series, b: &Series, cfg: &SbdConfig) -> Option<bool> {
    let (sa, sb) = (a.summary, b.summary);
    if sa.intervals < cfg.min_intervals.max(2) || sb.intervals < cfg.min_intervals.max(2) {
        return Some(false);
    }
    if !sa.bottlenecked || !sb.bottlenecked {
        return None;
    }
    let ratio = sa.var_ms.max(sb.var_ms) / sa.var_ms.min(sb.var_ms).max(1e-9);
    if ratio > cfg.mad_ratio {
        return Some(false);
    }
    Some((0..=2 * cfg.max_lag).any(|half_lag| {
        correlation(&a.means, &b.means, half_lag) >= cfg.rho_min
            || correlation(&b.means, &a.means, half_lag) >= cfg.rho_min
    }))
}

/// Pearson correlation of the changes `x[t + 1] − x[t]` with y's changes
/// `half_lag` half-intervals later, where the intervals involved have
/// samples (−1 when fewer than ten such pairs). A half-interval shift takes
/// the mean of two consecutive changes of y: a queue that one path sees half
/// an interval after the other (its ACKs come back later) smears each change
/// over two intervals, which whole-interval lags alone would miss. Changes,
/// not levels: paths that start together fill and drain their own queues
/// together in Startup, a common trend that is not a common queue.
fn correlation(x: &VecDeque<f64>, y: &VecDeque<f64>, half_lag: usize) -> f64 {
    let (k, half) = (half_lag / 2, half_lag % 2 == 1);
    let dx = |t: usize| x[t + 1] - x[t];
    let dy = |t: usize| y[t + 1] - y[t];
    let shifted = |t: usize| if half { (dy(t + k) + dy(t + k + 1)) / 2.0 } else { dy(t + k) };
    let len = x.len().saturating_sub(1).min(y.len().saturating_sub(k + 1 + usize::from(half)));
    let pairs = || (0..len).map(|t| (dx(t), shifted(t))).filter(|(a, b)| a.is_finite() && b.is_finite());
    let n = pairs().count();
    if n < 10 {
        return -1.0;
    }
    let (mx, my) = pairs().fold((0.0, 0.0), |(sx, sy), (a, b)| (sx + a, sy + b));
    let (mx, my) = (mx / n as f64, my / n as f64);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in pairs() {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return -1.0;
    }
    sxy / (sxx * syy).sqrt()
}

#[cfg(test)]
mod tests;
