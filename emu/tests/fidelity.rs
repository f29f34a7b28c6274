//! Fidelity of the link model against the trace and the settings, in virtual time.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use emu::loss::LossModel;
use emu::queue::{QueueConfig, QueueKind};
use emu::trace::OPPORTUNITY_BYTES;
use emu::{Link, LinkConfig, Packet, Stage, Trace};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Keeps at least `backlog` packets of 1500 bytes offered, polling at every wake-up
/// (and at least every millisecond). Returns (delivered packets, link).
fn saturate(cfg: &LinkConfig, run: Duration, backlog: u64) -> (Vec<Packet>, Link) {
    let mut link = Link::new(cfg);
    let mut out = Vec::new();
    let mut delivered = Vec::new();
    let mut sent = 0u64;
    let mut now = Duration::ZERO;
    while now <= run {
        link.dequeue_ready(now, &mut out);
        delivered.append(&mut out);
        while link.in_flight() < backlog {
            link.enqueue(now, Packet::sized(1500, sent));
            sent += 1;
        }
        // After a poll every wake-up is strictly in the future.
        let step = now + ms(1);
        now = link.next_wakeup().map_or(step, |w| w.min(step));
    }
    delivered.retain(|p| p.time <= run);
    (delivered, link)
}

fn capacity_bytes(trace: &Trace, run_ms: u64) -> u64 {
    // Opportunities strictly after 0 (an arrival at time 0 cannot use the one at 0)
    // and at or before the end of the run.
    let n = trace.first_index_after(run_ms) - trace.first_index_after(0);
    n * OPPORTUNITY_BYTES
}

fn check_capacity(trace: Trace) {
    let run = Duration::from_secs(20);
    let cap = capacity_bytes(&trace, 20_000);
    let cfg = LinkConfig::new(Arc::new(trace));
    let (delivered, _) = saturate(&cfg, run, 200);
    let bytes: u64 = delivered.iter().map(|p| u64::from(p.size)).sum();
    let ratio = bytes as f64 / cap as f64;
    assert!((ratio - 1.0).abs() <= 0.03, "delivered/capacity = {ratio}");
    // The byte-exact model wastes at most one partial packet per idle gap; with a
    // permanent backlog it should be within one packet of the capacity.
    assert!(cap - bytes < 1500, "{cap} vs {bytes}");
    // FIFO: tags come out in order.
    assert!(delivered.windows(2).all(|w| w[0].tag < w[1].tag));
}

#[test]
fn constant_12mbps_capacity() {
    let trace = Trace::load(data("const12.trace")).unwrap();
    assert_eq!(trace.mean_rate_bps(), 12e6);
    check_capacity(trace);
}

#[test]
fn lte_trace_capacity() {
    let trace = Trace::load(data("Verizon-LTE-short.down")).unwrap();
    assert_eq!(trace.len(), 58655);
    check_capacity(trace);
}

#[test]
fn delay_matches_setting() {
    let mut cfg = LinkConfig::new(Arc::new(Trace::constant(1)));
    cfg.delay = ms(37);
    let mut link = Link::new(&cfg);
    let mut out = Vec::new();
    let mut sent_at = Vec::new();
    // One packet every 9.7 ms: the link is never busy, so latency = delay + wait for
    // the next opportunity (< 1 ms).
    for i in 0..2000u64 {
        let t = Duration::from_micros(i * 9_700);
        link.dequeue_ready(t, &mut out);
        link.enqueue(t, Packet::sized(1200, i));
        sent_at.push(t);
    }
    link.dequeue_ready(Duration::from_secs(60), &mut out);
    assert_eq!(out.len(), 2000);
    for p in &out {
        let lat = p.time - sent_at[p.tag as usize];
        assert!(lat > ms(37) && lat <= ms(38), "latency {lat:?}");
    }
}

#[test]
fn bernoulli_loss_within_binomial_bound() {
    for (p, seed) in [(0.01, 1u64), (0.1, 2), (0.0001, 3)] {
        let mut cfg = LinkConfig::new(Arc::new(Trace::constant(100)));
        cfg.loss = LossModel::Bernoulli { p };
        cfg.seed = seed;
        let mut link = Link::new(&cfg);
        let n = 200_000u64;
        let mut out = Vec::new();
        for i in 0..n {
            let t = Duration::from_micros(i * 20);
            link.enqueue(t, Packet::sized(100, i));
            link.dequeue_ready(t, &mut out);
        }
        link.dequeue_ready(Duration::from_secs(100), &mut out);
        let s = link.stats();
        assert_eq!(s.delivered_packets + s.dropped_loss, n);
        let mean = n as f64 * p;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        // 4.5 sigma (plus one packet of slack for tiny p).
        assert!(
            (s.dropped_loss as f64 - mean).abs() <= 4.5 * sd + 1.0,
            "p={p}: {} lost, expected {mean}",
            s.dropped_loss
        );
    }
}

#[test]
fn queue_limits_drop_what_they_should() {
    // 1000 packets at once onto a 12 Mbit/s link: nothing is served at time 0.
    for (q, expect_drop, first_tag) in [
        (QueueConfig { kind: QueueKind::DropTail, packets: Some(100), bytes: None }, 900, 0),
        (QueueConfig { kind: QueueKind::DropTail, packets: None, bytes: Some(15_000) }, 990, 0),
        (QueueConfig { kind: QueueKind::DropHead, packets: Some(100), bytes: Some(1_000_000) }, 900, 900),
    ] {
        let mut cfg = LinkConfig::new(Arc::new(Trace::constant(1)));
        cfg.queue = q;
        let mut link = Link::new(&cfg);
        for i in 0..1000 {
            link.enqueue(Duration::ZERO, Packet::sized(1500, i));
        }
        let mut out = Vec::new();
        link.dequeue_ready(Duration::from_secs(2), &mut out);
        let s = link.stats();
        assert_eq!(s.dropped_queue, expect_drop, "{q:?}");
        assert_eq!(s.delivered_packets, 1000 - expect_drop);
        assert_eq!(out.first().map(|p| p.tag), Some(first_tag));
    }
    // Under a steady overload of 2x, a droptail queue keeps the bottleneck busy and
    // drops about half.
    let mut cfg = LinkConfig::new(Arc::new(Trace::constant(1)));
    cfg.queue = QueueConfig { kind: QueueKind::DropTail, packets: Some(50), bytes: None };
    let mut link = Link::new(&cfg);
    let mut out = Vec::new();
    for i in 0..20_000u64 {
        let t = Duration::from_micros(i * 500);
        link.enqueue(t, Packet::sized(1504, i));
        link.dequeue_ready(t, &mut out);
        assert!(link.bottleneck().queued_packets() <= 50);
    }
    let s = link.stats();
    assert!((s.dropped_queue as i64 - 10_000).abs() <= 52, "{s:?}");
}

#[test]
fn trace_errors_name_file_and_line() {
    let dir = std::env::temp_dir().join(format!("emu-fidelity-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("broken.up");
    std::fs::write(&f, "1\n2\n2\n1\n").unwrap();
    let e = Trace::load(&f).unwrap_err().to_string();
    assert!(e.contains("broken.up:4:"), "{e}");
    assert!(e.contains("smaller than previous"), "{e}");
}
