//! `mm-link UPLINK_TRACE DOWNLINK_TRACE [OPTION]... [command...]`: a shell whose
//! packets leave only at the delivery opportunities of Mahimahi traces.

use std::sync::Arc;
use std::time::Duration;

use emu::queue::TraceStage;
use emu::Trace;
use shells::args::parse_link;
use shells::shell::{loss_seed, main_with, PathStages, ShellConfig};

const USAGE: &str = "Usage: mm-link UPLINK_TRACE DOWNLINK_TRACE [OPTION]... [command...]

Options = --once
          --uplink-queue=QUEUE_TYPE --downlink-queue=QUEUE_TYPE
          --uplink-queue-args=QUEUE_ARGS --downlink-queue-args=QUEUE_ARGS

          QUEUE_TYPE = infinite | droptail | drophead | codel | pie
          QUEUE_ARGS = \"NAME=NUMBER[, NAME2=NUMBER2, ...]\"
              (with NAME = bytes | packets; codel: target | interval;
               pie: qdelay_ref | max_burst; times in ms;
               codel and pie: ecn=0|1, 1 marks ECN-capable packets CE
               instead of dropping them)";

fn load(path: &std::path::Path) -> Arc<Trace> {
    match Trace::load(path) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            eprintln!("mm-link: {e}");
            std::process::exit(1);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a = match parse_link(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mm-link: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let up = load(&a.uplink_trace);
    let down = load(&a.downlink_trace);
    // --once: the shell ends when both traces have played through.
    let stop_after = a.once.then(|| Duration::from_millis(up.period_ms().max(down.period_ms())));
    let mut up_stage = TraceStage::new(up, a.uplink_queue);
    let mut down_stage = TraceStage::new(down, a.downlink_queue);
    // PIE's random drops: a fresh seed per run (MPQUIC_SHELL_SEED fixes it).
    let seed = loss_seed();
    up_stage.set_seed(seed);
    down_stage.set_seed(seed ^ 1);
    let cfg = ShellConfig {
        kind: "link",
        paths: vec![PathStages { up: Box::new(up_stage), down: Box::new(down_stage) }],
        stop_after,
        command: a.command,
        announce: false,
        names: Vec::new(),
    };
    std::process::exit(main_with("mm-link", cfg));
}
