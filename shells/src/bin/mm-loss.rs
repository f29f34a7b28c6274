//! `mm-loss uplink|downlink RATE [command...]`: a shell that drops each packet in one
//! direction independently with probability RATE.

use emu::loss::{LossModel, LossStage};
use shells::args::{parse_loss, Direction};
use shells::shell::{loss_seed, main_with, passthrough, PathStages, ShellConfig};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a = match parse_loss(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mm-loss: {e}\nUsage: mm-loss uplink|downlink RATE [command...]");
            std::process::exit(2);
        }
    };
    let lossy = Box::new(LossStage::new(LossModel::Bernoulli { p: a.rate }, loss_seed()));
    let (up, down): (Box<dyn emu::Stage>, Box<dyn emu::Stage>) = match a.direction {
        Direction::Uplink => (lossy, passthrough()),
        Direction::Downlink => (passthrough(), lossy),
    };
    let cfg = ShellConfig {
        kind: "loss",
        paths: vec![PathStages { up, down }],
        stop_after: None,
        command: a.command,
        announce: false,
        names: Vec::new(),
    };
    std::process::exit(main_with("mm-loss", cfg));
}
