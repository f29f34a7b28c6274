//! rec (seed 003) on its three-path case (Wi-Fi 11 Mbit/s, WiMax 10 Mbit/s, UMTS
//! 384 kbit/s, lossy) with a small receive buffer: the receiver's PATH_DSR feedback
//! lets the sender drop the UMTS path when the buffer is about to block, so fewer
//! bytes wait out of order than with minRTT (mean over 8 seeds). Run with `--release`.

use std::time::Duration;

use emu::scenario::Scenario;
use sim::{FlowSpec, Report, Sim, SimConfig};

const SEEDS: u64 = 8;
const WINDOW: u64 = 256 * 1024;

fn run(sched: &str, seed: u64) -> Report {
    let sc = Scenario::find("hetero-3path").expect("scenario hetero-3path");
    let mut cfg = SimConfig::new("rec", sc.paths.len(), Duration::from_secs(30));
    cfg.seed = seed;
    cfg.flows = vec![FlowSpec::new(vec![0, 1, 2]).scheduler(sched).recv_window(WINDOW)];
    Sim::from_scenario(&sc, seed, cfg).expect("sim").run(&mut |_, _| {})
}

/// Mean over the seeds of (receiver out-of-order mean, goodput in Mbit/s).
fn mean_over_seeds(sched: &str) -> (f64, f64) {
    let (mut ooo, mut gp) = (0.0, 0.0);
    for seed in 1..=SEEDS {
        let r = run(sched, seed);
        let f = &r.flows[0];
        assert!(f.established && f.multipath, "{sched} seed {seed}: {:?}", f.error);
        println!(
            "{sched:>6} seed {seed}: goodput {:.2} Mbit/s, ooo mean {:.0} B, shares {:?}",
            f.goodput_bps / 1e6,
            f.ooo_mean,
            f.paths.iter().map(|p| format!("{:.3}", p.share)).collect::<Vec<_>>()
        );
        ooo += f.ooo_mean;
        gp += f.goodput_bps / 1e6;
    }
    (ooo / SEEDS as f64, gp / SEEDS as f64)
}

#[test]
fn rec_keeps_fewer_bytes_out_of_order_than_minrtt_with_a_small_buffer() {
    let (rec_ooo, rec_gp) = mean_over_seeds("rec");
    let (min_ooo, min_gp) = mean_over_seeds("minrtt");
    println!(
        "hetero-3path, {} KiB receive window, {SEEDS} seeds: rec ooo mean {rec_ooo:.0} B, goodput {rec_gp:.2} Mbit/s; minrtt ooo mean {min_ooo:.0} B, goodput {min_gp:.2} Mbit/s",
        WINDOW / 1024
    );
    assert!(rec_ooo < min_ooo, "rec {rec_ooo:.0} B vs minrtt {min_ooo:.0} B");
}
