//! Every congestion controller × every path scheduler, end to end: a short
//! HTTP/3 download over two unequal paths (one of them lossy) must complete
//! with the body intact and multipath negotiated, each scheduler using the
//! paths as it means to: TP-STY and TR-STY (seed 002) leave their first path
//! only for one with a higher cwnd/srtt (and, TR-STY, a lower srtt), which the
//! slower second path never is; every other scheduler puts data on both.

use std::time::Duration;

use sim::net::PathParams;
use sim::{FlowSpec, Sim, SimConfig};

const BODY: u64 = 3_000_000;

/// One download: `(completion s, share of the second path)`, or what went wrong.
fn download(cc: &str, sched: &str) -> Result<(f64, f64), String> {
    let mut lossy = PathParams::new("lossy", 20, Duration::from_millis(15));
    lossy.loss = 0.005;
    let paths = [lossy, PathParams::new("slow", 8, Duration::from_millis(40))];
    let links = paths.iter().enumerate().map(|(i, p)| p.build(i as u64 + 1).unwrap()).collect();
    let mut cfg = SimConfig::new("matrix", paths.len(), Duration::from_secs(30));
    cfg.flows = vec![FlowSpec::new(vec![0, 1]).cc(cc).scheduler(sched).bytes(BODY)];
    let r = Sim::new(links, cfg).map_err(|e| e.to_string())?.run(&mut |_, _| {});
    let f = &r.flows[0];
    if !f.established || !f.multipath {
        return Err(format!("established {} multipath {} error {:?}", f.established, f.multipath, f.error));
    }
    if f.body_mismatches != 0 || f.app_bytes != BODY || f.status != Some(200) {
        return Err(format!(
            "body: {} B, {} mismatches, status {:?}",
            f.app_bytes, f.body_mismatches, f.status
        ));
    }
    let done = f.completion.ok_or_else(|| format!("not complete in 30 s ({} B)", f.app_bytes))?;
    Ok((done.as_secs_f64(), f.paths[1].share))
}

#[test]
fn every_controller_with_every_scheduler_downloads_over_both_paths() {
    let mut failures = Vec::new();
    for cc in mpquic::cc::registry::names() {
        for sched in mpquic::sched::names().iter().filter(|s| **s != "lrf") {
            match download(cc, sched) {
                Ok((t, share)) => {
                    println!("{cc:>17} / {sched:<9} {t:6.2} s, second path {:5.1}%", share * 100.0);
                    let sticky = matches!(*sched, "tp-sty" | "tr-sty");
                    if sticky && share > 0.15 {
                        failures.push(format!(
                            "{cc}/{sched}: left its path ({:.1}% on the second)",
                            share * 100.0
                        ));
                    } else if !sticky && share < 0.10 {
                        failures.push(format!("{cc}/{sched}: second path carried {:.1}%", share * 100.0));
                    }
                }
                Err(e) => failures.push(format!("{cc}/{sched}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} of the pairs failed:\n{}", failures.len(), failures.join("\n"));
}
