//! The committed scenario set loads, and its effective capacities match the calibration.

use std::time::Duration;

use emu::scenario::Scenario;
use emu::{Packet, Stage};

const ALL: &[&str] = &[
    "testbed-2x100",
    "testbed-2x100-loss0.01",
    "testbed-2x100-loss0.1",
    "testbed-2x100-loss1",
    "testbed-2x100-bg",
    "testbed-2x100-bg-loss0.01",
    "testbed-2x100-bg-loss0.1",
    "shared-bottleneck",
    "shared-and-disjoint",
    "lte-wifi-A1",
    "lte-wifi-A2",
    "lte-wifi-B1",
    "lte-wifi-B2",
    "dual-lte-stationary",
    "dual-lte-walking",
    "dual-lte-driving",
    "hetero-3path",
    "break",
    "break-loss",
    "degrade",
];

#[test]
fn every_scenario_loads_by_name() {
    for name in ALL {
        let s = Scenario::find(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&s.name, name);
        assert!(s.paths.len() >= 2);
        assert_eq!(s.build().len(), s.paths.len());
        assert_eq!(s.build_network().links.len(), s.paths.len() + s.links.len());
    }
}

#[test]
fn shared_scenarios_have_their_topology() {
    let s = Scenario::find("shared-bottleneck").unwrap();
    assert_eq!(s.links.len(), 1);
    assert_eq!(s.links[0].down.queue.bytes, Some(625_000));
    assert_eq!(s.links[0].down.delay, Duration::from_millis(25));
    assert!(s.paths.iter().all(|p| p.via == [0] && p.up.delay.is_zero()));
    assert_eq!(s.test_paths, [0, 1]);
    assert_eq!(s.flows.len(), 1);
    assert_eq!((s.flows[0].paths.as_slice(), s.flows[0].cc.as_deref()), ([2usize].as_slice(), Some("bbr")));
    let d = Scenario::find("shared-and-disjoint").unwrap();
    assert_eq!(d.test_paths, [0, 1, 3]);
    assert!(d.paths[3].via.is_empty());
    assert_eq!(d.paths[3].down.delay, Duration::from_millis(15));
    for name in ["testbed-2x100-bg", "testbed-2x100-bg-loss0.01", "testbed-2x100-bg-loss0.1"] {
        let s = Scenario::find(name).unwrap();
        let per_path: Vec<Vec<usize>> = s.flows.iter().map(|f| f.paths.clone()).collect();
        assert_eq!(per_path, [[0], [0], [1], [1]], "{name}");
        assert!(s.flows.iter().all(|f| f.cc.is_none()), "{name}");
    }
}

/// Saturates a link for `secs` and returns delivered Mbit/s (1500-byte packets).
fn saturated_mbps(link: &mut emu::Link, secs: u64) -> f64 {
    let mut out = Vec::new();
    let mut bytes = 0u64;
    let mut now = Duration::ZERO;
    let end = Duration::from_secs(secs);
    while now < end {
        link.dequeue_ready(now, &mut out);
        bytes += out.drain(..).map(|p| u64::from(p.size)).sum::<u64>();
        while link.bottleneck().queued_packets() < 50 {
            link.enqueue(now, Packet::sized(1500, 0));
        }
        let step = now + Duration::from_millis(1);
        now = link.next_wakeup().map_or(step, |w| w.min(step));
    }
    bytes as f64 * 8.0 / secs as f64 / 1e6
}

#[test]
fn dual_lte_effective_capacity_matches_target() {
    for (name, target) in [("dual-lte-walking", 34.8), ("dual-lte-driving", 31.7)] {
        let s = Scenario::find(name).unwrap();
        let mut paths = s.build();
        for p in &mut paths {
            let got = saturated_mbps(&mut p.down, 300);
            assert!((got / target - 1.0).abs() < 0.03, "{name} {}: {got} vs {target}", p.name);
        }
    }
}

#[test]
fn break_scenario_stops_path_b_at_15s() {
    let s = Scenario::find("break").unwrap();
    let mut paths = s.build();
    let b = &mut paths[1].down;
    let mut out = Vec::new();
    for ms in 0..20_000u64 {
        let now = Duration::from_millis(ms);
        b.enqueue(now, Packet::sized(1000, ms));
        b.dequeue_ready(now, &mut out);
    }
    assert!(out.iter().all(|p| p.tag < 15_000));
    assert!(out.len() > 14_000);
}
