//! `mm-delay DELAY_MS [command...]`: a shell whose packets are delayed DELAY_MS
//! milliseconds in each direction.

use emu::stage::DelayStage;
use shells::args::parse_delay;
use shells::shell::{main_with, PathStages, ShellConfig};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a = match parse_delay(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mm-delay: {e}\nUsage: mm-delay DELAY_MS [command...]");
            std::process::exit(2);
        }
    };
    let cfg = ShellConfig {
        kind: "delay",
        paths: vec![PathStages {
            up: Box::new(DelayStage::new(a.delay)),
            down: Box::new(DelayStage::new(a.delay)),
        }],
        stop_after: None,
        command: a.command,
        announce: false,
        names: Vec::new(),
    };
    std::process::exit(main_with("mm-delay", cfg));
}
