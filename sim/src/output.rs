//! Writing reports: CSV time series, JSON, and a text summary table.

use std::fmt::Write as _;
use std::time::Duration;

use emu::link::LinkStats;
use serde::{Serialize, Serializer};

use crate::report::{FlowSummary, LinkSummary, PathSummary, Report};

/// The time series as CSV, one row per (time, flow, path):
/// `t_s,flow,path,throughput_bps,srtt_ms,cwnd,bytes_in_flight,pacing_bps,goodput_bps,ooo_bytes`
/// (the last two are per flow, repeated on each of its paths).
pub fn csv(report: &Report) -> String {
    let mut s = String::from(
        "t_s,flow,path,throughput_bps,srtt_ms,cwnd,bytes_in_flight,pacing_bps,goodput_bps,ooo_bytes,group\n",
    );
    for smp in &report.samples {
        let names = report.flows.get(smp.flow).map(|f| &f.paths);
        for (k, p) in smp.paths.iter().enumerate() {
            let name = names.and_then(|n| n.get(k)).map(|p| p.name.as_str()).unwrap_or("?");
            let _ = writeln!(
                s,
                "{:.3},{},{},{:.0},{:.3},{},{},{:.0},{:.0},{},{}",
                smp.t.as_secs_f64(),
                smp.flow,
                name,
                p.throughput_bps,
                p.srtt_ms,
                p.cwnd,
                p.bytes_in_flight,
                p.pacing_bps,
                smp.goodput_bps,
                smp.ooo_bytes,
                p.group
            );
        }
    }
    s
}

/// A number as the summaries print it: rounded to 3 decimals, `null` if not finite.
fn num3<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        // Through the decimal text, so that the value is exactly the 3-decimal one.
        s.serialize_f64(format!("{v:.3}").parse().unwrap_or(0.0))
    } else {
        s.serialize_none()
    }
}

fn secs3<S: Serializer>(v: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(d) => num3(&d.as_secs_f64(), s),
        None => s.serialize_none(),
    }
}

#[derive(Serialize)]
struct SummaryJson<'a> {
    name: &'a str,
    seed: u64,
    #[serde(serialize_with = "num3")]
    duration_s: f64,
    datagrams: u64,
    stalls: u64,
    flows: Vec<FlowJson<'a>>,
    links: Vec<LinkJson<'a>>,
}

#[derive(Serialize)]
struct FlowJson<'a> {
    flow: usize,
    workload: &'a str,
    status: Option<u16>,
    body_mismatches: u64,
    video: Option<crate::VideoStats>,
    cc: &'a str,
    scheduler: &'a str,
    established: bool,
    multipath: bool,
    app_bytes: u64,
    #[serde(serialize_with = "num3")]
    goodput_bps: f64,
    #[serde(serialize_with = "secs3")]
    completion_s: Option<Duration>,
    retrans_bytes: u64,
    redundant_bytes: u64,
    copy_bytes: u64,
    sent_ahead_bytes: u64,
    #[serde(serialize_with = "num3")]
    ooo_mean: f64,
    ooo_p95: u64,
    ooo_max: u64,
    error: Option<&'a str>,
    closed: Option<&'a str>,
    paths: Vec<PathJson<'a>>,
    background: bool,
}

#[derive(Serialize)]
struct PathJson<'a> {
    name: &'a str,
    bytes: u64,
    #[serde(serialize_with = "num3")]
    throughput_bps: f64,
    #[serde(serialize_with = "num3")]
    share: f64,
    #[serde(serialize_with = "num3")]
    srtt_mean_ms: f64,
    #[serde(serialize_with = "num3")]
    min_rtt_ms: f64,
    lost_packets: u64,
    retrans_bytes: u64,
    copy_bytes: u64,
    link_drops: u64,
    /// The sender's shared-bottleneck group: equal for paths judged shared.
    group: u32,
    /// CE marks reported for the sender's packets.
    ecn_ce: u64,
    /// The sender's datagram size at the end.
    mtu: usize,
}

#[derive(Serialize)]
struct LinkJson<'a> {
    name: &'a str,
    up: DirectionJson,
    down: DirectionJson,
    failure_drops: u64,
}

/// One direction of a link; bytes are charged sizes (UDP payload + headers).
#[derive(Serialize)]
struct DirectionJson {
    delivered_packets: u64,
    delivered_bytes: u64,
    dropped_loss: u64,
    dropped_queue: u64,
    dropped_mtu: u64,
}

impl From<&LinkStats> for DirectionJson {
    fn from(s: &LinkStats) -> DirectionJson {
        DirectionJson {
            delivered_packets: s.delivered_packets,
            delivered_bytes: s.delivered_bytes,
            dropped_loss: s.dropped_loss,
            dropped_queue: s.dropped_queue,
            dropped_mtu: s.dropped_mtu,
        }
    }
}

fn path_json(p: &PathSummary) -> PathJson<'_> {
    PathJson {
        name: &p.name,
        bytes: p.bytes,
        throughput_bps: p.throughput_bps,
        share: p.share,
        srtt_mean_ms: p.srtt_mean_ms,
        min_rtt_ms: p.min_rtt_ms,
        lost_packets: p.lost_packets,
        retrans_bytes: p.retrans_bytes,
        copy_bytes: p.copy_bytes,
        link_drops: p.link_drops,
        group: p.group,
        ecn_ce: p.ecn_ce,
        mtu: p.mtu,
    }
}

fn flow_json(f: &FlowSummary) -> FlowJson<'_> {
    FlowJson {
        flow: f.flow,
        workload: &f.workload,
        status: f.status,
        body_mismatches: f.body_mismatches,
        video: f.video,
        cc: &f.cc,
        scheduler: &f.scheduler,
        established: f.established,
        multipath: f.multipath,
        app_bytes: f.app_bytes,
        goodput_bps: f.goodput_bps,
        completion_s: f.completion,
        retrans_bytes: f.retrans_bytes,
        redundant_bytes: f.redundant_bytes,
        copy_bytes: f.copy_bytes,
        sent_ahead_bytes: f.sent_ahead_bytes,
        ooo_mean: f.ooo_mean,
        ooo_p95: f.ooo_p95,
        ooo_max: f.ooo_max,
        error: f.error.as_deref(),
        closed: f.closed.as_deref(),
        paths: f.paths.iter().map(path_json).collect(),
        background: f.background,
    }
}

fn link_json(l: &LinkSummary) -> LinkJson<'_> {
    LinkJson { name: &l.name, up: (&l.up).into(), down: (&l.down).into(), failure_drops: l.failure_drops }
}

/// The summary (without the time series) as one JSON object: the run, then one
/// object per flow (the flow under test first, background flows after it, each with
/// `"background": true`), then one per link.
pub fn summary_json(report: &Report) -> String {
    let s = SummaryJson {
        name: &report.name,
        seed: report.seed,
        duration_s: report.duration.as_secs_f64(),
        datagrams: report.datagrams,
        stalls: report.stalls,
        flows: report.flows.iter().map(flow_json).collect(),
        links: report.links.iter().map(link_json).collect(),
    };
    serde_json::to_string(&s).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

#[derive(Serialize)]
struct SampleJson {
    #[serde(serialize_with = "num3")]
    t_s: f64,
    flow: usize,
    #[serde(serialize_with = "num3")]
    goodput_bps: f64,
    ooo_bytes: u64,
    paths: Vec<PathSampleJson>,
}

#[derive(Serialize)]
struct PathSampleJson {
    #[serde(serialize_with = "num3")]
    throughput_bps: f64,
    #[serde(serialize_with = "num3")]
    srtt_ms: f64,
    cwnd: u64,
    bytes_in_flight: u64,
    #[serde(serialize_with = "num3")]
    pacing_bps: f64,
}

/// The time series as a JSON array of samples.
pub fn series_json(report: &Report) -> String {
    let v: Vec<SampleJson> = report
        .samples
        .iter()
        .map(|smp| SampleJson {
            t_s: smp.t.as_secs_f64(),
            flow: smp.flow,
            goodput_bps: smp.goodput_bps,
            ooo_bytes: smp.ooo_bytes,
            paths: smp
                .paths
                .iter()
                .map(|p| PathSampleJson {
                    throughput_bps: p.throughput_bps,
                    srtt_ms: p.srtt_ms,
                    cwnd: p.cwnd,
                    bytes_in_flight: p.bytes_in_flight,
                    pacing_bps: p.pacing_bps,
                })
                .collect(),
        })
        .collect();
    serde_json::to_string(&v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

fn mbps(bps: f64) -> f64 {
    bps / 1e6
}

/// A human-readable summary table.
pub fn table(report: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} (seed {}), {:.1} s simulated, {} datagrams",
        report.name,
        report.seed,
        report.duration.as_secs_f64(),
        report.datagrams
    );
    for f in &report.flows {
        let _ = writeln!(
            s,
            "flow {}{} [{} / {} / {}{}]: goodput {:.2} Mbit/s, {} bytes{}{}, completion {}, retrans {} B, redundant {} B, out-of-order mean {:.0} / p95 {} / max {} B",
            f.flow,
            if f.background { " (background)" } else { "" },
            f.workload,
            f.cc,
            f.scheduler,
            if f.multipath { ", multipath" } else { "" },
            mbps(f.goodput_bps),
            f.app_bytes,
            if f.body_mismatches == 0 { " (body check ok)" } else { " (body check FAILED)" },
            f.status.map(|c| format!(", HTTP {c}")).unwrap_or_default(),
            f.completion.map(|c| format!("{:.3} s", c.as_secs_f64())).unwrap_or_else(|| "-".into()),
            f.retrans_bytes,
            f.redundant_bytes,
            f.ooo_mean,
            f.ooo_p95,
            f.ooo_max
        );
        if f.copy_bytes + f.sent_ahead_bytes > 0 {
            let _ = writeln!(
                s,
                "  scheduler: copies {} B, sent ahead of older data {} B",
                f.copy_bytes, f.sent_ahead_bytes
            );
        }
        if let Some(v) = &f.video {
            let _ = writeln!(
                s,
                "  video: {} pictures, {} played in time, {} discarded, {} buffer underflows",
                v.frames, v.played, v.discarded, v.underflows
            );
        }
        if f.body_mismatches > 0 {
            let _ = writeln!(
                s,
                "  body check FAILED: {} bytes differ from the generated body",
                f.body_mismatches
            );
        }
        if let Some(e) = &f.error {
            let _ = writeln!(s, "  error: {e}");
        }
        if let Some(c) = f.closed.as_ref().filter(|_| f.completion.is_none()) {
            let _ = writeln!(s, "  connection ended before the transfer: {c}");
        }
        let _ = writeln!(
            s,
            "  {:<10} {:>12} {:>7} {:>10} {:>10} {:>8} {:>12} {:>12} {:>10} {:>6}",
            "path",
            "Mbit/s",
            "share",
            "srtt ms",
            "minrtt ms",
            "lost",
            "retrans B",
            "copies B",
            "link drops",
            "group"
        );
        for p in &f.paths {
            let _ = writeln!(
                s,
                "  {:<10} {:>12.2} {:>6.1}% {:>10.1} {:>10.1} {:>8} {:>12} {:>12} {:>10} {:>6}",
                p.name,
                mbps(p.throughput_bps),
                p.share * 100.0,
                p.srtt_mean_ms,
                p.min_rtt_ms,
                p.lost_packets,
                p.retrans_bytes,
                p.copy_bytes,
                p.link_drops,
                p.group
            );
        }
    }
    links_table(&mut s, report);
    if report.stalls > 0 {
        let _ = writeln!(s, "warning: {} clock stalls", report.stalls);
    }
    s
}

/// The links' delivered rates and drops, when the scenario has shared links (links
/// that are not a path of some flow).
fn links_table(s: &mut String, report: &Report) {
    let is_path = |name: &str| report.flows.iter().any(|f| f.paths.iter().any(|p| p.name == name));
    if report.links.iter().all(|l| is_path(&l.name)) {
        return;
    }
    let secs = report.duration.as_secs_f64().max(1e-9);
    let _ = writeln!(
        s,
        "links {:<12} {:>12} {:>12} {:>10} {:>10}",
        "", "up Mbit/s", "down Mbit/s", "up drops", "down drops"
    );
    for l in &report.links {
        let _ = writeln!(
            s,
            "      {:<12} {:>12.2} {:>12.2} {:>10} {:>10}",
            l.name,
            mbps(l.up.delivered_bytes as f64 * 8.0 / secs),
            mbps(l.down.delivered_bytes as f64 * 8.0 / secs),
            l.up.dropped_loss + l.up.dropped_queue + l.up.dropped_mtu,
            l.down.dropped_loss + l.down.dropped_queue + l.down.dropped_mtu
        );
    }
}
