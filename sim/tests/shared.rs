//! Shared links and background flows: routes of several links, a shared
//! bottleneck's accounting, background flows from scenario files, determinism
//! (run with `--release`).

use std::time::Duration;

use emu::link::Route;
use emu::scenario::Scenario;
use emu::trace::OPPORTUNITY_BYTES;
use sim::net::PathParams;
use sim::sim::HEADER_BYTES;
use sim::{FlowSpec, Report, Sim, SimConfig, SimError};

fn run_scenario(name: &str, cc: &str, secs: u64, seed: u64) -> Report {
    let sc = Scenario::find(name).expect("scenario");
    let mut cfg = SimConfig::for_scenario(&sc, Duration::from_secs(secs));
    cfg.flows[0].cc = cc.into();
    Sim::from_scenario(&sc, seed, cfg).expect("sim").run(&mut |_, _| {})
}

/// The shared bottleneck carries exactly what the flows' paths across it
/// received (up to the packets still inside the access links), never more than
/// its capacity, and both the flow under test and the background flow get data
/// through it.
#[test]
fn shared_link_carries_the_sum_of_its_paths() {
    let secs = 20;
    let r = run_scenario("shared-bottleneck", "cubic", secs, 1);
    assert_eq!(r.flows.len(), 2);
    let (test, bg) = (&r.flows[0], &r.flows[1]);
    assert!(!test.background && bg.background);
    assert!(test.multipath && test.error.is_none(), "{:?}", test.error);
    assert_eq!(bg.cc, "bbr");
    let names: Vec<&str> = test.paths.iter().chain(&bg.paths).map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    let neck = r.links.iter().find(|l| l.name == "bottleneck").expect("bottleneck link");
    let payload = neck.down.delivered_bytes - u64::from(HEADER_BYTES) * neck.down.delivered_packets;
    let paths: u64 = test.paths.iter().chain(&bg.paths).map(|p| p.bytes).sum();
    let per_packet = neck.down.delivered_bytes / neck.down.delivered_packets;
    println!(
        "bottleneck delivered {payload} payload bytes, paths received {paths}; test {:.1} Mbit/s, bbr {:.1} Mbit/s",
        test.goodput_bps / 1e6,
        bg.goodput_bps / 1e6
    );
    // What left the bottleneck but is still in an access link: a few packets.
    assert!(payload >= paths && payload - paths <= 16 * per_packet, "{payload} vs {paths}");
    let capacity_bps = 100e6 * OPPORTUNITY_BYTES as f64 / 1500.0;
    let rate = neck.down.delivered_bytes as f64 * 8.0 / r.duration.as_secs_f64();
    assert!(rate <= capacity_bps, "bottleneck {rate} bit/s above {capacity_bps}");
    for f in [test, bg] {
        assert!(f.app_bytes > 0 && f.body_mismatches == 0, "flow {}: {:?}", f.flow, f.error);
    }
    // Drops are summed over the route: every path across the bottleneck sees its drops.
    let neck_drops = neck.down.dropped_loss + neck.down.dropped_queue;
    assert!(test.paths.iter().chain(&bg.paths).all(|p| p.link_drops == neck_drops));
}

/// A route of two links adds both links' delays to the RTT.
#[test]
fn two_hop_route_adds_both_delays() {
    let access = PathParams::new("access", 1000, Duration::from_millis(10));
    let core = PathParams::new("core", 100, Duration::from_millis(20));
    let links = vec![access.build(1).unwrap(), core.build(2).unwrap()];
    let routes = vec![
        Route { name: "long".into(), links: vec![0, 1] },
        Route { name: "short".into(), links: vec![1] },
    ];
    let mut cfg = SimConfig::new("two-hop", 0, Duration::from_secs(20));
    cfg.flows = vec![FlowSpec::new(vec![0]).bytes(2_000_000), FlowSpec::new(vec![1]).bytes(2_000_000)];
    let r = Sim::with_routes(links, routes, cfg).unwrap().run(&mut |_, _| {});
    let long = &r.flows[0].paths[0];
    let short = &r.flows[1].paths[0];
    println!("min RTT: long route {:.2} ms, short route {:.2} ms", long.min_rtt_ms, short.min_rtt_ms);
    assert_eq!((long.name.as_str(), short.name.as_str()), ("long", "short"));
    assert!(r.flows.iter().all(|f| f.completion.is_some()));
    // 2 x (10 + 20) ms; each link serves at millisecond opportunities (up to 1 ms
    // each way per link).
    assert!((60.0..=65.0).contains(&long.min_rtt_ms), "{}", long.min_rtt_ms);
    assert!((40.0..=43.0).contains(&short.min_rtt_ms), "{}", short.min_rtt_ms);
}

#[test]
fn same_seed_same_report_with_background_flows() {
    let a = run_scenario("testbed-2x100-bg-loss0.1", "cubic", 4, 5);
    let b = run_scenario("testbed-2x100-bg-loss0.1", "cubic", 4, 5);
    assert_eq!(a, b);
    assert_eq!(sim::output::summary_json(&a), sim::output::summary_json(&b));
    let c = run_scenario("testbed-2x100-bg-loss0.1", "cubic", 4, 6);
    assert_ne!(a.flows, c.flows, "another seed draws other losses");
}

/// Background flows take the test flow's controller when the scenario gives none,
/// and a bounded test flow ends the run although they are unbounded.
#[test]
fn background_flows_follow_the_flow_under_test() {
    let sc = Scenario::find("testbed-2x100-bg").unwrap();
    let mut cfg = SimConfig::for_scenario(&sc, Duration::from_secs(60));
    cfg.flows[0] = cfg.flows[0].clone().cc("bbr").bytes(3_000_000);
    let r = Sim::from_scenario(&sc, 1, cfg).unwrap().run(&mut |_, _| {});
    assert_eq!(r.flows.len(), 5);
    let bg = &r.flows[1..];
    assert!(bg.iter().all(|f| f.background && f.cc == "bbr" && f.scheduler == "minrtt"));
    let paths: Vec<&str> = bg.iter().map(|f| f.paths[0].name.as_str()).collect();
    assert_eq!(paths, ["a", "a", "b", "b"]);
    let done = r.flows[0].completion.expect("test flow completes");
    assert!(r.duration < Duration::from_secs(60), "run went on after {done:?}");
    assert!(bg.iter().all(|f| f.app_bytes > 0));
}

#[test]
fn bad_background_flow_names_are_config_errors() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces");
    let text = std::fs::read_to_string(dir.join("shared-bottleneck.toml")).unwrap();
    let sc = Scenario::parse(&dir.join("x.toml"), &text.replace("cc = \"bbr\"", "cc = \"vegas\"")).unwrap();
    let cfg = SimConfig::for_scenario(&sc, Duration::from_secs(1));
    match Sim::from_scenario(&sc, 1, cfg) {
        Err(SimError::Config(m)) => assert!(m.contains("vegas") && m.contains("coupled-bbr"), "{m}"),
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("accepted an unknown controller"),
    }
}

#[test]
fn routes_are_checked() {
    let links = vec![PathParams::new("p", 10, Duration::from_millis(5)).build(1).unwrap()];
    let bad = |routes: Vec<Route>| {
        let mut cfg = SimConfig::new("bad", 0, Duration::from_secs(1));
        cfg.flows = vec![FlowSpec::new(vec![0])];
        Sim::with_routes(links.clone(), routes, cfg).err().map(|e| e.to_string()).unwrap_or_default()
    };
    assert!(bad(vec![Route { name: "r".into(), links: vec![] }]).contains("has 0 links"));
    assert!(bad(vec![Route { name: "r".into(), links: vec![0, 3] }]).contains("uses link 3"));
    assert!(bad(vec![]).contains("uses path 0"));
}

/// The bottleneck buffer of a loaded scenario can be changed (0.5 to 4 BDP): the
/// RTT the paths across it see is bounded by propagation plus the buffer's drain
/// time, and grows with the buffer.
#[test]
fn bottleneck_buffer_override_bounds_the_rtt() {
    use emu::queue::{QueueConfig, QueueKind};
    const BDP: f64 = 625_000.0;
    let mut srtts = Vec::new();
    for bdps in [0.5, 1.0, 2.0, 4.0] {
        let mut sc = Scenario::find("shared-bottleneck").unwrap();
        let bytes = (BDP * bdps) as u64;
        sc.set_queue(
            "bottleneck",
            QueueConfig { kind: QueueKind::DropTail, packets: None, bytes: Some(bytes) },
        )
        .unwrap();
        let mut cfg = SimConfig::for_scenario(&sc, Duration::from_secs(20));
        cfg.flows[0].cc = "cubic".into();
        let r = Sim::from_scenario(&sc, 1, cfg).unwrap().run(&mut |_, _| {});
        let paths: Vec<_> = r.flows.iter().flat_map(|f| &f.paths).collect();
        let max_srtt = paths.iter().map(|p| p.srtt_mean_ms).fold(0.0, f64::max);
        let mean_srtt = paths.iter().map(|p| p.srtt_mean_ms).sum::<f64>() / paths.len() as f64;
        // Propagation (50 ms), 1 ms per hop each way, then at most a full buffer
        // draining at 100 Mbit/s.
        let bound = 54.0 + bytes as f64 * 8.0 / 100e6 * 1e3;
        println!("{bdps} BDP: mean srtt {mean_srtt:.1} ms, max {max_srtt:.1} ms (bound {bound:.1})");
        assert!(max_srtt <= bound, "{bdps} BDP: srtt {max_srtt} ms above {bound}");
        srtts.push(mean_srtt);
    }
    assert!(srtts[3] > srtts[0], "RTT does not grow with the buffer: {srtts:?}");
}
