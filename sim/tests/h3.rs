//! The default workload: an HTTP/3 download over two emulated paths, with the body
//! checked byte by byte on the client. Run with `--release`.

use std::time::Duration;

use sim::net::PathParams;
use sim::{FlowSpec, FlowSummary, Report, Sim, SimConfig, Workload};

fn two_paths(flow: FlowSpec, secs: u64, seed: u64) -> Report {
    let mut lte = PathParams::new("lte", 12, Duration::from_millis(40));
    lte.loss = 0.002;
    let wifi = PathParams::new("wifi", 20, Duration::from_millis(20));
    let links = vec![lte.build(seed).unwrap(), wifi.build(seed + 1).unwrap()];
    let mut cfg = SimConfig::new("h3-two-paths", 2, Duration::from_secs(secs));
    cfg.seed = seed;
    cfg.flows = vec![flow];
    Sim::new(links, cfg).unwrap().run(&mut |_, _| {})
}

fn assert_complete(f: &FlowSummary, bytes: u64) {
    assert_eq!(f.error, None);
    assert!(f.established && f.multipath, "established {} multipath {}", f.established, f.multipath);
    assert_eq!(f.app_bytes, bytes, "body size");
    assert_eq!(f.body_mismatches, 0, "body content");
    assert!(f.completion.is_some(), "download did not finish");
    for p in &f.paths {
        assert!(p.bytes > 500_000, "path {} carried only {} B", p.name, p.bytes);
    }
}

#[test]
fn default_workload_is_h3() {
    assert_eq!(FlowSpec::new(vec![0]).workload, Workload::H3);
    assert_eq!(Workload::parse("h3"), Ok(Workload::H3));
    assert_eq!(Workload::parse("stream"), Ok(Workload::Download));
    let e = Workload::parse("ftp").unwrap_err().to_string();
    assert!(e.contains("unknown workload") && e.contains("h3, stream"), "{e}");
}

#[test]
fn h3_download_over_two_paths_is_complete_and_intact() {
    let bytes = 12_000_000;
    let r = two_paths(FlowSpec::new(vec![0, 1]).cc("lia").bytes(bytes), 60, 3);
    let f = &r.flows[0];
    println!(
        "h3 12 MB over lte 12 + wifi 20 Mbit/s: {:.3} s, goodput {:.2} Mbit/s, shares {:.2}/{:.2}, retrans {} B",
        f.completion.unwrap_or_default().as_secs_f64(),
        f.goodput_bps / 1e6,
        f.paths[0].share,
        f.paths[1].share,
        f.retrans_bytes
    );
    assert_eq!(f.workload, "h3");
    assert_eq!(f.status, Some(200));
    assert_complete(f, bytes);
    // The run stops once the response finished, well before the limit.
    assert!(r.duration < Duration::from_secs(30), "{:?}", r.duration);
}

#[test]
fn plain_stream_workload_still_works() {
    let bytes = 6_000_000;
    let r = two_paths(FlowSpec::new(vec![0, 1]).workload(Workload::Download).bytes(bytes), 60, 4);
    let f = &r.flows[0];
    assert_eq!(f.workload, "stream");
    assert_eq!(f.status, None);
    assert_complete(f, bytes);
}

#[test]
fn upload_body_is_checked_on_the_server() {
    let bytes = 3_000_000;
    let r = two_paths(FlowSpec::new(vec![0, 1]).workload(Workload::Upload).bytes(bytes), 60, 5);
    let f = &r.flows[0];
    assert_eq!(f.workload, "upload");
    assert_complete(f, bytes);
}

#[test]
fn unbounded_h3_download_keeps_going() {
    let r = two_paths(FlowSpec::new(vec![0, 1]), 5, 6);
    let f = &r.flows[0];
    assert_eq!(f.error, None);
    assert_eq!(f.status, Some(200));
    assert_eq!(f.completion, None);
    assert_eq!(f.body_mismatches, 0);
    // 5 s of a 32 Mbit/s aggregate: far more than one path's worth.
    assert!(f.app_bytes > 8_000_000, "{} B", f.app_bytes);
    assert_eq!(r.duration, Duration::from_secs(5));
}

#[test]
fn h3_same_seed_same_report() {
    let run = |seed| two_paths(FlowSpec::new(vec![0, 1]).bytes(4_000_000), 30, seed);
    let (a, b) = (run(9), run(9));
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.samples, b.samples);
    assert_ne!(a.flows, run(10).flows);
}

#[test]
fn empty_body_completes() {
    // content-length 0: the response headers end the stream.
    let mut f = FlowSpec::new(vec![0]);
    f.bytes = Some(0);
    let links = vec![PathParams::new("p", 10, Duration::from_millis(5)).build(1).unwrap()];
    let mut cfg = SimConfig::new("empty", 1, Duration::from_secs(5));
    cfg.flows = vec![f];
    let r = Sim::new(links, cfg).unwrap().run(&mut |_, _| {});
    let f = &r.flows[0];
    assert_eq!((f.error.as_deref(), f.status, f.app_bytes), (None, Some(200), 0));
    assert!(f.completion.is_some());
}
