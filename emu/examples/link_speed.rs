//! How fast the link model pushes packets (not a test): saturates a 100 Mbit/s link
//! (trace + 25 ms delay + 1 % loss + droptail queue) for 60 s of virtual time.
//!
//! `cargo run --release -p mpquic-emu --example link_speed`

use std::sync::Arc;
use std::time::{Duration, Instant};

use emu::loss::LossModel;
use emu::queue::{QueueConfig, QueueKind};
use emu::{Link, LinkConfig, Packet, Stage, Trace};

fn main() {
    let trace = Trace::from_times("100mbps", (1..=25).map(|i| (i * 3u64).div_ceil(25)).collect())
        .expect("valid trace");
    let mut cfg = LinkConfig::new(Arc::new(trace));
    cfg.delay = Duration::from_millis(25);
    cfg.loss = LossModel::Bernoulli { p: 0.01 };
    cfg.queue = QueueConfig { kind: QueueKind::DropTail, packets: Some(1000), bytes: None };
    let mut link = Link::new(&cfg);
    let mut out = Vec::new();
    let virtual_run = Duration::from_secs(60);
    // A benchmark measures wall time; the link model itself never reads a clock.
    #[allow(clippy::disallowed_methods)]
    let wall = Instant::now();
    let mut now = Duration::ZERO;
    let mut sent = 0u64;
    let mut delivered = 0u64;
    while now < virtual_run {
        link.dequeue_ready(now, &mut out);
        delivered += out.len() as u64;
        out.clear();
        while link.bottleneck().queued_packets() < 100 {
            link.enqueue(now, Packet::sized(1500, sent));
            sent += 1;
        }
        let step = now + Duration::from_millis(1);
        now = link.next_wakeup().map_or(step, |w| w.min(step));
    }
    let secs = wall.elapsed().as_secs_f64();
    println!(
        "{delivered} packets delivered ({sent} offered) for {:.0} s of virtual time in {secs:.3} s: {:.2} Mpkt/s, {:.0}x real time",
        virtual_run.as_secs_f64(),
        (sent + delivered) as f64 / secs / 1e6,
        virtual_run.as_secs_f64() / secs
    );
}
