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

/// A bulk CUBIC download through a deep drop-tail buffer (1000 packets on 20 Mbit/s:
/// 600 ms) against the same buffer managed by CoDel or PIE.
fn deep_buffer_run(aqm: Option<emu::queue::QueueKind>) -> Report {
    deep_buffer_flow(aqm, FlowSpec::new(vec![0]).cc("cubic"))
}

fn deep_buffer_flow(aqm: Option<emu::queue::QueueKind>, flow: FlowSpec) -> Report {
    let mut p = PathParams::new("p", 20, Duration::from_millis(20));
    p.queue_bytes = None;
    p.queue_packets = Some(1000);
    p.aqm = aqm;
    let mut cfg = SimConfig::new("deep-buffer", 1, Duration::from_secs(20));
    cfg.flows = vec![flow];
    Sim::new(vec![p.build(3).unwrap()], cfg).unwrap().run(&mut |_, _| {})
}

/// CoDel with ECN marks an ECN-capable CUBIC flow instead of dropping its
/// packets: the flow backs off on CE marks alone (no link drops, no
/// retransmissions), keeps the queue as short as with drops, and its goodput
/// holds. PIE marks only while its drop probability is at most 10% (RFC 8033
/// §5.1): slow start's overshoot still costs drops, the marks come after.
/// Without ECN at the endpoints the same queues drop.
#[test]
fn ecn_marking_aqm_signals_congestion_without_loss() {
    use emu::aqm::{CodelParams, PieParams};
    use emu::queue::QueueKind;
    let codel = QueueKind::CoDel(CodelParams { ecn: true, ..CodelParams::default() });
    let pie = QueueKind::Pie(PieParams { ecn: true, ..PieParams::default() });
    for (name, q) in [("codel", codel), ("pie", pie)] {
        let marked = deep_buffer_flow(Some(q), FlowSpec::new(vec![0]).cc("cubic").ecn());
        let plain = deep_buffer_flow(Some(q), FlowSpec::new(vec![0]).cc("cubic"));
        let (m, d) = (&marked.flows[0], &plain.flows[0]);
        println!(
            "{name} ecn=1: ECN flow {:.2} Mbit/s, srtt {:.1} ms, CE {}, drops {}, retrans {} B; \
             without ECN {:.2} Mbit/s, srtt {:.1} ms, drops {}",
            m.goodput_bps / 1e6,
            m.paths[0].srtt_mean_ms,
            m.paths[0].ecn_ce,
            m.paths[0].link_drops,
            m.retrans_bytes,
            d.goodput_bps / 1e6,
            d.paths[0].srtt_mean_ms,
            d.paths[0].link_drops
        );
        assert!(m.paths[0].ecn_ce > 0, "{name}: no CE marks reached the sender");
        if name == "codel" {
            assert_eq!(m.paths[0].link_drops, 0, "{name}: marked instead of dropped");
            assert_eq!(m.retrans_bytes, 0, "{name}: nothing lost");
        } else {
            assert!(m.paths[0].link_drops < d.paths[0].link_drops, "{name}: some drops became marks");
        }
        assert!(d.paths[0].link_drops > 0 && d.paths[0].ecn_ce == 0, "{name}: Not-ECT packets are dropped");
        assert!(
            m.paths[0].srtt_mean_ms < 100.0,
            "{name}: the queue stays short: {:.1} ms",
            m.paths[0].srtt_mean_ms
        );
        assert!(m.goodput_bps > 0.9 * d.goodput_bps, "{name}: ECN costs no goodput");
    }
}

#[test]
fn codel_and_pie_remove_the_standing_queue_of_a_cubic_flow() {
    use emu::aqm::{CodelParams, PieParams};
    use emu::queue::QueueKind;
    let tail = deep_buffer_run(None);
    let codel = deep_buffer_run(Some(QueueKind::CoDel(CodelParams::default())));
    let pie = deep_buffer_run(Some(QueueKind::Pie(PieParams::default())));
    let show = |name: &str, r: &Report| {
        let f = &r.flows[0];
        println!(
            "{name:>8}: goodput {:.2} Mbit/s, mean srtt {:.1} ms (base 40), link drops {}",
            f.goodput_bps / 1e6,
            f.paths[0].srtt_mean_ms,
            f.paths[0].link_drops
        );
    };
    show("droptail", &tail);
    show("codel", &codel);
    show("pie", &pie);
    let srtt = |r: &Report| r.flows[0].paths[0].srtt_mean_ms;
    assert!(srtt(&tail) > 150.0, "drop-tail should bloat: {:.1} ms", srtt(&tail));
    for (name, r) in [("codel", &codel), ("pie", &pie)] {
        assert!(
            srtt(r) < srtt(&tail) / 2.0,
            "{name}: srtt {:.1} ms vs drop-tail {:.1}",
            srtt(r),
            srtt(&tail)
        );
        assert!(r.flows[0].paths[0].link_drops > 0, "{name} never dropped");
        assert!(r.flows[0].goodput_bps > 0.8 * tail.flows[0].goodput_bps, "{name} starves the link");
    }
}

/// A bulk BBR download with path MTU discovery over a 20 Mbit/s path whose
/// links carry IP packets up to the given MTU steps.
fn pmtud_run(mtu: Vec<(Duration, u32)>, pmtud: bool) -> Report {
    let mut p = PathParams::new("p", 20, Duration::from_millis(20));
    p.mtu = mtu;
    let mut cfg = SimConfig::new("pmtud", 1, Duration::from_secs(20));
    let mut f = FlowSpec::new(vec![0]).cc("bbr");
    f.pmtud = pmtud;
    f.bytes = Some(20_000_000);
    cfg.flows = vec![f];
    Sim::new(vec![p.build(5).unwrap()], cfg).unwrap().run(&mut |_, _| {})
}

/// Prints a pmtud run's outcome; returns its flow.
fn show_pmtud<'a>(name: &str, r: &'a Report) -> &'a sim::FlowSummary {
    let f = &r.flows[0];
    println!(
        "{name}: mtu {} B, {:.2} Mbit/s, done {:?}, drops {} (over the MTU {})",
        f.paths[0].mtu,
        f.goodput_bps / 1e6,
        f.completion,
        f.paths[0].link_drops,
        r.links[0].down.dropped_mtu
    );
    f
}

/// Path MTU discovery grows the datagrams from 1350 bytes to what the path
/// carries: the top (1472 B of UDP payload in a 1500-byte IP packet) at once
/// where the path takes it, within 20 bytes of a 1400-byte MTU where it does
/// not; off, the size stays.
#[test]
fn pmtud_finds_the_path_mtu() {
    let open = pmtud_run(Vec::new(), true);
    let narrow = pmtud_run(vec![(Duration::ZERO, 1400)], true);
    let off = pmtud_run(vec![(Duration::ZERO, 1400)], false);
    for (name, r) in [("open", &open), ("1400", &narrow), ("off", &off)] {
        let f = show_pmtud(name, r);
        assert_eq!(f.app_bytes, 20_000_000, "{name}: every byte arrived");
        assert_eq!(f.body_mismatches, 0, "{name}");
    }
    assert_eq!(open.flows[0].paths[0].mtu, 1472);
    let m = narrow.flows[0].paths[0].mtu;
    assert!(m <= 1400 - 28 && m > 1400 - 28 - 20, "mtu {m}");
    // Three probes of each size above the MTU were dropped, nothing else.
    let over = narrow.links[0].down.dropped_mtu;
    assert!(over >= 3 && over % 3 == 0, "{over}");
    assert_eq!(off.flows[0].paths[0].mtu, 1350);
    assert_eq!(off.links[0].down.dropped_mtu, 0);
}

/// The path's MTU falls below the datagram size in the middle of the
/// download (a route change into a tunnel): every large packet is dropped
/// from then on while small ones pass. The sender falls back to 1200 bytes,
/// searches again, settles under the new MTU, and the download completes
/// intact.
#[test]
fn pmtud_recovers_from_a_black_hole() {
    let r = pmtud_run(vec![(Duration::ZERO, 1500), (Duration::from_secs(3), 1300)], true);
    let f = show_pmtud("black hole at 3 s", &r);
    assert_eq!(f.app_bytes, 20_000_000);
    assert_eq!(f.body_mismatches, 0);
    let m = f.paths[0].mtu;
    assert!(m <= 1300 - 28 && m > 1300 - 28 - 20, "mtu {m}");
    let done = f.completion.expect("download finished");
    // 20 MB at 20 Mbit/s is 8 s; the fall back costs a few round trips.
    assert!(done < Duration::from_secs(12), "{done:?}");
}
