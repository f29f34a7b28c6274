//! Single-path behaviour and determinism (run with `--release`: each test simulates
//! tens of seconds at 100 Mbit/s).

use std::time::Duration;

use sim::net::PathParams;
use sim::{FlowSpec, Report, Sim, SimConfig};

fn lossy_path_run(cc: &str, secs: u64, seed: u64) -> Report {
    let mut p = PathParams::new("p", 100, Duration::from_millis(25));
    p.loss = 0.01;
    let links = vec![p.build(seed).unwrap()];
    let mut cfg = SimConfig::new("lossy-100", 1, Duration::from_secs(secs));
    cfg.seed = seed;
    cfg.flows = vec![FlowSpec::new(vec![0]).cc(cc)];
    Sim::new(links, cfg).unwrap().run(&mut |_, _| {})
}

#[test]
fn bbr_keeps_90_percent_under_1_percent_loss() {
    let bbr = lossy_path_run("bbr", 30, 1);
    let cubic = lossy_path_run("cubic", 30, 1);
    let g = |r: &Report| r.flows[0].goodput_bps / 1e6;
    println!(
        "100 Mbit/s, 50 ms RTT, 1% loss, 30 s: bbr {:.2} Mbit/s (retrans {} B), cubic {:.2} Mbit/s (retrans {} B)",
        g(&bbr),
        bbr.flows[0].retrans_bytes,
        g(&cubic),
        cubic.flows[0].retrans_bytes
    );
    assert!(bbr.flows[0].established);
    assert!(g(&bbr) >= 90.0, "bbr goodput {:.2} Mbit/s < 90", g(&bbr));
}

#[test]
fn same_seed_same_report() {
    let a = lossy_path_run("cubic", 5, 7);
    let b = lossy_path_run("cubic", 5, 7);
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.samples, b.samples);
    assert_eq!(a.datagrams, b.datagrams);
    // And the seed matters: another loss pattern gives another run.
    let c = lossy_path_run("cubic", 5, 8);
    assert_ne!(a.flows, c.flows);
}

#[test]
fn bounded_download_completes() {
    let links = vec![PathParams::new("p", 20, Duration::from_millis(10)).build(1).unwrap()];
    let mut cfg = SimConfig::new("small", 1, Duration::from_secs(30));
    let mut f = FlowSpec::new(vec![0]).cc("newreno");
    f.bytes = Some(5_000_000);
    cfg.flows = vec![f];
    let r = Sim::new(links, cfg).unwrap().run(&mut |_, _| {});
    let fl = &r.flows[0];
    assert_eq!(fl.app_bytes, 5_000_000);
    let done = fl.completion.expect("download finished");
    // 5 MB at 20 Mbit/s is 2 s plus handshake and slow start; well under 30 s.
    assert!(done > Duration::from_secs(2) && done < Duration::from_secs(6), "{done:?}");
    // The run stops at completion, not at the 30 s limit.
    assert!(r.duration < Duration::from_secs(7));
}
