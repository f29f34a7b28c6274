//! Writing reports: CSV time series, JSON, and a text summary table.

use std::fmt::Write as _;

use crate::report::Report;

/// The time series as CSV, one row per (time, flow, path):
/// `t_s,flow,path,throughput_bps,srtt_ms,cwnd,bytes_in_flight,pacing_bps,goodput_bps,ooo_bytes`
/// (the last two are per flow, repeated on each of its paths).
pub fn csv(report: &Report) -> String {
    let mut s = String::from(
        "t_s,flow,path,throughput_bps,srtt_ms,cwnd,bytes_in_flight,pacing_bps,goodput_bps,ooo_bytes\n",
    );
    for smp in &report.samples {
        let names = report.flows.get(smp.flow).map(|f| &f.paths);
        for (k, p) in smp.paths.iter().enumerate() {
            let name = names.and_then(|n| n.get(k)).map(|p| p.name.as_str()).unwrap_or("?");
            let _ = writeln!(
                s,
                "{:.3},{},{},{:.0},{:.3},{},{},{:.0},{:.0},{}",
                smp.t.as_secs_f64(),
                smp.flow,
                name,
                p.throughput_bps,
                p.srtt_ms,
                p.cwnd,
                p.bytes_in_flight,
                p.pacing_bps,
                smp.goodput_bps,
                smp.ooo_bytes
            );
        }
    }
    s
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "null".into()
    }
}

/// The summary (without the time series) as one JSON object.
pub fn summary_json(report: &Report) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{{\"name\":{},\"seed\":{},\"duration_s\":{},\"datagrams\":{},\"stalls\":{},\"flows\":[",
        json_str(&report.name),
        report.seed,
        num(report.duration.as_secs_f64()),
        report.datagrams,
        report.stalls
    );
    for (i, f) in report.flows.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"flow\":{},\"workload\":{},\"status\":{},\"body_mismatches\":{},\"cc\":{},\"scheduler\":{},\"established\":{},\"multipath\":{},\"app_bytes\":{},\"goodput_bps\":{},\"completion_s\":{},\"retrans_bytes\":{},\"redundant_bytes\":{},\"copy_bytes\":{},\"sent_ahead_bytes\":{},\"ooo_mean\":{},\"ooo_p95\":{},\"ooo_max\":{},\"error\":{},\"paths\":[",
            f.flow,
            json_str(&f.workload),
            f.status.map(|v| v.to_string()).unwrap_or_else(|| "null".into()),
            f.body_mismatches,
            json_str(&f.cc),
            json_str(&f.scheduler),
            f.established,
            f.multipath,
            f.app_bytes,
            num(f.goodput_bps),
            f.completion.map(|c| num(c.as_secs_f64())).unwrap_or_else(|| "null".into()),
            f.retrans_bytes,
            f.redundant_bytes,
            f.copy_bytes,
            f.sent_ahead_bytes,
            num(f.ooo_mean),
            f.ooo_p95,
            f.ooo_max,
            f.error.as_deref().map(json_str).unwrap_or_else(|| "null".into()),
        );
        for (j, p) in f.paths.iter().enumerate() {
            if j > 0 {
                s.push(',');
            }
            let _ = write!(
                s,
                "{{\"name\":{},\"bytes\":{},\"throughput_bps\":{},\"share\":{},\"srtt_mean_ms\":{},\"min_rtt_ms\":{},\"lost_packets\":{},\"retrans_bytes\":{},\"copy_bytes\":{},\"link_drops\":{}}}",
                json_str(&p.name),
                p.bytes,
                num(p.throughput_bps),
                num(p.share),
                num(p.srtt_mean_ms),
                num(p.min_rtt_ms),
                p.lost_packets,
                p.retrans_bytes,
                p.copy_bytes,
                p.link_drops
            );
        }
        s.push_str("]}");
    }
    s.push_str("]}");
    s
}

/// The time series as a JSON array of samples.
pub fn series_json(report: &Report) -> String {
    let mut s = String::from("[");
    for (i, smp) in report.samples.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"t_s\":{},\"flow\":{},\"goodput_bps\":{},\"ooo_bytes\":{},\"paths\":[",
            num(smp.t.as_secs_f64()),
            smp.flow,
            num(smp.goodput_bps),
            smp.ooo_bytes
        );
        for (j, p) in smp.paths.iter().enumerate() {
            if j > 0 {
                s.push(',');
            }
            let _ = write!(
                s,
                "{{\"throughput_bps\":{},\"srtt_ms\":{},\"cwnd\":{},\"bytes_in_flight\":{},\"pacing_bps\":{}}}",
                num(p.throughput_bps),
                num(p.srtt_ms),
                p.cwnd,
                p.bytes_in_flight,
                num(p.pacing_bps)
            );
        }
        s.push_str("]}");
    }
    s.push(']');
    s
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
            "flow {} [{} / {} / {}{}]: goodput {:.2} Mbit/s, {} bytes{}{}, completion {}, retrans {} B, redundant {} B, out-of-order mean {:.0} / p95 {} / max {} B",
            f.flow,
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
        let _ = writeln!(
            s,
            "  {:<10} {:>12} {:>7} {:>10} {:>10} {:>8} {:>12} {:>12} {:>10}",
            "path", "Mbit/s", "share", "srtt ms", "minrtt ms", "lost", "retrans B", "copies B", "link drops"
        );
        for p in &f.paths {
            let _ = writeln!(
                s,
                "  {:<10} {:>12.2} {:>6.1}% {:>10.1} {:>10.1} {:>8} {:>12} {:>12} {:>10}",
                p.name,
                mbps(p.throughput_bps),
                p.share * 100.0,
                p.srtt_mean_ms,
                p.min_rtt_ms,
                p.lost_packets,
                p.retrans_bytes,
                p.copy_bytes,
                p.link_drops
            );
        }
    }
    if report.stalls > 0 {
        let _ = writeln!(s, "warning: {} clock stalls", report.stalls);
    }
    s
}
