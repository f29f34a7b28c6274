//! `mpquic.simulate`: one run of the virtual-time simulator (`sim` crate), returned
//! as plain columns that the Python side turns into DataFrames.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use sim::{FlowSummary, Report, Sim, SimConfig, SimError, Workload};

use crate::{check_cc, check_scheduler, scenario, ConfigError, SimulationError};

fn seconds(name: &str, v: f64) -> PyResult<Duration> {
    if !(v.is_finite() && v > 0.0) {
        return Err(PyValueError::new_err(format!("{name} must be a positive number of seconds, got {v}")));
    }
    Duration::try_from_secs_f64(v).map_err(|_| PyValueError::new_err(format!("{name} is too large: {v}")))
}

fn flow_dict<'py>(py: Python<'py>, f: &FlowSummary, report: &Report) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("scenario", &report.name)?;
    d.set_item("seed", report.seed)?;
    d.set_item("duration", report.duration.as_secs_f64())?;
    d.set_item("flow", f.flow)?;
    d.set_item("cc", &f.cc)?;
    d.set_item("scheduler", &f.scheduler)?;
    d.set_item("established", f.established)?;
    d.set_item("multipath", f.multipath)?;
    d.set_item("app_bytes", f.app_bytes)?;
    d.set_item("goodput_bps", f.goodput_bps)?;
    d.set_item("completion_s", f.completion.map(|c| c.as_secs_f64()))?;
    d.set_item("retrans_bytes", f.retrans_bytes)?;
    d.set_item("redundant_bytes", f.redundant_bytes)?;
    d.set_item("copy_bytes", f.copy_bytes)?;
    d.set_item("sent_ahead_bytes", f.sent_ahead_bytes)?;
    d.set_item("ooo_mean", f.ooo_mean)?;
    d.set_item("ooo_p95", f.ooo_p95)?;
    d.set_item("ooo_max", f.ooo_max)?;
    d.set_item("error", f.error.as_deref())?;
    d.set_item("background", f.background)?;
    d.set_item("workload", &f.workload)?;
    if let Some(v) = &f.video {
        d.set_item("video_frames", v.frames)?;
        d.set_item("video_played", v.played)?;
        d.set_item("video_discarded", v.discarded)?;
        d.set_item("video_underflows", v.underflows)?;
    }
    d.set_item("datagrams", report.datagrams)?;
    d.set_item("stalls", report.stalls)?;
    let paths = PyList::empty(py);
    for p in &f.paths {
        let pd = PyDict::new(py);
        pd.set_item("path", &p.name)?;
        pd.set_item("bytes", p.bytes)?;
        pd.set_item("throughput_bps", p.throughput_bps)?;
        pd.set_item("share", p.share)?;
        pd.set_item("srtt_mean_ms", p.srtt_mean_ms)?;
        pd.set_item("min_rtt_ms", p.min_rtt_ms)?;
        pd.set_item("lost_packets", p.lost_packets)?;
        pd.set_item("retrans_bytes", p.retrans_bytes)?;
        pd.set_item("copy_bytes", p.copy_bytes)?;
        pd.set_item("link_drops", p.link_drops)?;
        pd.set_item("group", p.group)?;
        pd.set_item("ecn_ce", p.ecn_ce)?;
        pd.set_item("mtu", p.mtu)?;
        paths.append(pd)?;
    }
    d.set_item("paths", paths)?;
    Ok(d)
}

/// One dict per network link: bytes delivered and packets dropped each way.
fn links_list<'py>(py: Python<'py>, report: &Report) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for l in &report.links {
        let d = PyDict::new(py);
        d.set_item("link", &l.name)?;
        for (dir, s) in [("up", &l.up), ("down", &l.down)] {
            d.set_item(format!("{dir}_delivered_bytes"), s.delivered_bytes)?;
            d.set_item(format!("{dir}_delivered_packets"), s.delivered_packets)?;
            d.set_item(format!("{dir}_dropped"), s.dropped_loss + s.dropped_queue + s.dropped_mtu)?;
        }
        d.set_item("failure_drops", l.failure_drops)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Runs one simulation; the Python wrapper `mpquic.simulate` documents the arguments.
/// Returns `{"summary": dict, "flows": [dict], "links": [dict], "series": {col: list},
/// "path_series": {col: list}}`; `flows` holds the flow under test, then the
/// scenario's background flows.
#[pyfunction]
#[pyo3(signature = (scenario, cc, scheduler, seed=None, duration=None, sample_interval=0.1, bytes=None, base_dir=None, workload="h3", recv_window=None, ecn=false, pmtud=false, qlog_dir=None, timestamps=true))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn simulate<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyAny>,
    cc: &str,
    scheduler: &str,
    seed: Option<u64>,
    duration: Option<f64>,
    sample_interval: f64,
    bytes: Option<u64>,
    base_dir: Option<PathBuf>,
    workload: &str,
    recv_window: Option<u64>,
    ecn: bool,
    pmtud: bool,
    qlog_dir: Option<PathBuf>,
    timestamps: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = scenario::resolve(scenario, base_dir)?;
    let workload = Workload::parse(workload).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let cc = check_cc(cc)?;
    check_scheduler(scheduler)?;
    let duration = match duration {
        Some(d) => seconds("duration", d)?,
        None => sc.duration,
    };
    // The flow under test over the scenario's test paths; its background flows follow.
    let mut cfg = SimConfig::for_scenario(&sc, duration);
    cfg.sample_interval = seconds("sample_interval", sample_interval)?;
    cfg.qlog_dir = qlog_dir;
    for f in &mut cfg.flows {
        f.cc = cc.clone();
        f.scheduler = scheduler.to_owned();
        f.bytes = bytes;
        f.workload = workload;
        f.recv_window = recv_window;
        f.ecn = ecn;
        f.pmtud = pmtud;
        f.timestamps = timestamps;
    }
    if recv_window == Some(0) {
        return Err(PyValueError::new_err("recv_window must be > 0 (or None: never limiting)"));
    }
    if bytes == Some(0) {
        return Err(PyValueError::new_err("bytes must be > 0 (or None for an unbounded download)"));
    }
    let seed = seed.unwrap_or(sc.seed);
    let mut sim = Sim::from_scenario(&sc, seed, cfg).map_err(|e| match e {
        SimError::Config(m) => ConfigError::new_err(m),
        other => SimulationError::new_err(other.to_string()),
    })?;
    let (report, qlog_error) = py.detach(move || {
        let report = sim.run(&mut |_, _| {});
        (report, sim.qlog_error().map(str::to_owned))
    });
    if let Some(e) = qlog_error {
        return Err(SimulationError::new_err(e));
    }

    let out = PyDict::new(py);
    let flows = PyList::empty(py);
    for f in &report.flows {
        flows.append(flow_dict(py, f, &report)?)?;
    }
    let summary = match report.flows.first() {
        Some(f) => flow_dict(py, f, &report)?,
        None => PyDict::new(py),
    };
    out.set_item("summary", summary)?;
    out.set_item("flows", flows)?;
    out.set_item("links", links_list(py, &report)?)?;

    let n = report.samples.len();
    let (mut t, mut flow, mut goodput, mut ooo) =
        (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut pt, mut pflow, mut pname, mut thr, mut srtt, mut cwnd, mut infl, mut pacing) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut group = Vec::new();
    for s in &report.samples {
        let ts = s.t.as_secs_f64();
        t.push(ts);
        flow.push(s.flow);
        goodput.push(s.goodput_bps);
        ooo.push(s.ooo_bytes);
        for (k, p) in s.paths.iter().enumerate() {
            // Path names as the flow's summary gives them (its own path order).
            let name = report.flows.get(s.flow).and_then(|f| f.paths.get(k)).map(|p| p.name.clone());
            pt.push(ts);
            pflow.push(s.flow);
            pname.push(name.unwrap_or_else(|| format!("path{k}")));
            thr.push(p.throughput_bps);
            srtt.push(p.srtt_ms);
            cwnd.push(p.cwnd);
            infl.push(p.bytes_in_flight);
            pacing.push(p.pacing_bps);
            group.push(p.group);
        }
    }
    let series = PyDict::new(py);
    series.set_item("t", t)?;
    series.set_item("flow", flow)?;
    series.set_item("goodput_bps", goodput)?;
    series.set_item("ooo_bytes", ooo)?;
    out.set_item("series", series)?;
    let ps = PyDict::new(py);
    ps.set_item("t", pt)?;
    ps.set_item("flow", pflow)?;
    ps.set_item("path", pname)?;
    ps.set_item("throughput_bps", thr)?;
    ps.set_item("srtt_ms", srtt)?;
    ps.set_item("cwnd", cwnd)?;
    ps.set_item("bytes_in_flight", infl)?;
    ps.set_item("pacing_bps", pacing)?;
    ps.set_item("group", group)?;
    out.set_item("path_series", ps)?;
    Ok(out)
}
